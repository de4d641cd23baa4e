//! Copies: byte-identical documents, grouped by content hash before any bucketing.
//!
//! Each group is represented by its first document, which takes over the signature, fingerprint
//! and cached set of the copy that was sketched (the first worker to claim the hash, whichever
//! it was), so the rest of the pipeline sees one unit per distinct content.

use std::collections::HashMap;

use crate::bottomk::Sketches;
use crate::cluster::Pair;
use crate::doc::{DocResult, Outcome};
use crate::report::Stats;

/// For each document, the document that holds its content's sketches (itself unless it is a
/// byte-identical copy).
pub fn canonical(n: usize, exact_pairs: &[Pair]) -> Vec<u32> {
    let mut canon: Vec<u32> = (0..n as u32).collect();
    for p in exact_pairs {
        canon[p.hi as usize] = p.lo;
    }
    canon
}

/// Groups byte-identical documents. Returns their pairs (each copy to the group's first
/// document) and the ids of the distinct-content documents to bucket, in increasing order.
/// Each group's signature, fingerprint and set are moved to its first document.
pub fn group_exact(
    docs: &mut [DocResult],
    sigs: &mut [u32],
    lanes: usize,
    first_new: u32,
    bottom: &mut Sketches,
    stats: &mut Stats,
) -> (Vec<Pair>, Vec<u32>) {
    let mut groups: HashMap<u128, Vec<u32>> = HashMap::new();
    let mut order: Vec<u128> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        if matches!(d.outcome, Outcome::Sketched | Outcome::Duplicate) {
            let g = groups.entry(d.hash).or_default();
            if g.is_empty() {
                order.push(d.hash);
            }
            g.push(i as u32);
        }
    }
    let mut pairs = Vec::new();
    let mut units = Vec::new();
    for hash in order {
        let members = &groups[&hash];
        let first = members[0] as usize;
        let Some(&sketched) = members
            .iter()
            .find(|&&m| docs[m as usize].outcome == Outcome::Sketched)
        else {
            // The claimer found no token: every copy is empty.
            for &m in members {
                docs[m as usize].outcome = Outcome::Empty;
            }
            continue;
        };
        let sketched = sketched as usize;
        if sketched != first {
            sigs.copy_within(sketched * lanes..(sketched + 1) * lanes, first * lanes);
            if bottom.is_on() {
                bottom.copy(sketched as u32, first as u32);
            }
            docs[first].fingerprint = docs[sketched].fingerprint;
            docs[first].set = docs[sketched].set.take();
            docs[first].shingles = docs[sketched].shingles;
            docs[sketched].outcome = Outcome::Duplicate;
            docs[first].outcome = Outcome::Sketched;
        }
        units.push(first as u32);
        // Copies among indexed documents were reported when they were new.
        let new_members = members.iter().filter(|&&m| m >= first_new).count();
        if members.len() > 1 && new_members > 0 {
            stats.exact_groups += 1;
        }
        for &m in members[1..].iter().filter(|&&m| m >= first_new) {
            pairs.push(Pair {
                lo: first as u32,
                hi: m,
                similarity: 1.0,
                distance: None,
                exact: true,
            });
        }
    }
    // Empty documents (including copies of an empty claimer) never join a cluster.
    for d in &docs[first_new as usize..] {
        match d.outcome {
            Outcome::Sketched | Outcome::Duplicate => {
                stats.documents += 1;
                stats.bytes += d.bytes;
            }
            Outcome::Empty => stats.skipped.empty += 1,
            _ => {}
        }
    }
    units.sort_unstable();
    (pairs, units)
}
