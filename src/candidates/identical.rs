//! Copies: byte-identical documents, grouped by content hash before any bucketing.
//!
//! Each group is represented by its first document, which takes over the signature, fingerprint
//! and cached set of the copy that was sketched (the first worker to claim the hash, whichever
//! it was), so the rest of the pipeline sees one unit per distinct content.

use rayon::prelude::*;

use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{DocResult, Outcome};
use crate::pairs::Pair;

/// The byte-identical groups of a corpus.
#[derive(Debug, Default)]
pub struct Identical {
    /// Each copy paired with its group's first document (`exact: true`), in order of the
    /// groups' first documents; copies among indexed documents are left out.
    pub pairs: Vec<Pair>,
    /// The documents to bucket: one per distinct content (its group's first), in increasing
    /// order.
    pub units: Vec<u32>,
    /// For each document, the document holding its content's sketches.
    pub canon: Vec<u32>,
    /// Groups of two or more byte-identical documents with a new one among them.
    pub groups: u64,
    /// New documents that hold text (sketched, or a copy of one sketched).
    pub documents: u64,
    /// Their bytes.
    pub bytes: u64,
    /// New documents without a token (including copies of one).
    pub empty: u64,
}

/// For each document, the document that holds its content's sketches (itself unless it is a
/// byte-identical copy).
fn canonical(n: usize, exact_pairs: &[Pair]) -> Vec<u32> {
    let mut canon: Vec<u32> = (0..n as u32).collect();
    for p in exact_pairs {
        canon[p.hi as usize] = p.lo;
    }
    canon
}

/// Groups byte-identical documents. Each group's signature, fingerprint and set are moved to
/// its first document, the one that represents the group from then on.
pub fn group(corpus: &mut Corpus) -> Identical {
    let (keyed, spans) = groups(&corpus.docs);
    let mut out = Identical::default();
    let mut members: Vec<u32> = Vec::new();
    for (_, at, len) in spans {
        members.clear();
        let (at, len) = (at as usize, len as usize);
        members.extend(keyed[at..at + len].iter().map(|k| k.1));
        let Some(first) = take_over(corpus, &members) else {
            continue;
        };
        out.units.push(first);
        // Copies among indexed documents were reported when they were new.
        let new_members = members.iter().filter(|&&m| corpus.is_new(m)).count();
        if members.len() > 1 && new_members > 0 {
            out.groups += 1;
        }
        for &m in members[1..].iter().filter(|&&m| corpus.is_new(m)) {
            out.pairs.push(Pair {
                lo: first,
                hi: m,
                similarity: 1.0,
                distance: None,
                exact: true,
            });
        }
    }
    // Empty documents (including copies of an empty claimer) never join a cluster.
    for d in corpus.new_docs() {
        match d.outcome {
            Outcome::Sketched | Outcome::Duplicate => {
                out.documents += 1;
                out.bytes += d.bytes;
            }
            Outcome::Empty => out.empty += 1,
            _ => {}
        }
    }
    out.units.sort_unstable();
    out.canon = canonical(corpus.docs.len(), &out.pairs);
    out
}

/// A document with text, keyed by the high half of its content hash: (key, id).
type Keyed = (u64, u32);
/// A group of one content in the sorted keys: (its first document, start, length).
type Span = (u32, u32, u32);

/// The documents with text, sorted by key, and the groups of one content in them, in order of
/// their first document.
fn groups(docs: &[DocResult]) -> (Vec<Keyed>, Vec<Span>) {
    // Groups from a sort of (high half of the hash, id): 16 B per document and no allocation
    // per group. A map from hash to a vector of ids took about 130 MB at a million documents.
    let mut keyed: Vec<Keyed> = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| matches!(d.outcome, Outcome::Sketched | Outcome::Duplicate))
        .map(|(i, d)| ((d.hash >> 64) as u64, i as u32))
        .collect();
    keyed.par_sort_unstable();
    let mut spans = Vec::new();
    let mut at = 0;
    content_groups(
        &mut keyed,
        |d| docs[d as usize].hash,
        |group| {
            spans.push((group[0].1, at as u32, group.len() as u32));
            at += group.len();
        },
    );
    // In order of each group's first document, as the pairs have always been listed.
    spans.sort_unstable_by_key(|s| s.0);
    (keyed, spans)
}

/// The byte-identical groups among `keyed`: (the high half of a content hash, a document),
/// sorted by both. `group` is given each group of documents of one whole `hash`, in the order
/// of `keyed` (documents in increasing order). `scan` feeds it its corpus, the staged
/// components stage each content bucket of the group files.
pub fn content_groups<D: Copy>(
    keyed: &mut [(u64, D)],
    hash: impl Fn(D) -> u128,
    mut group: impl FnMut(&[(u64, D)]),
) {
    // Runs of one high half hold one content, unless two contents share those 64 bits: then
    // the run is ordered by the whole hash (stably, so ids stay increasing) and split.
    let hash = |k: &(u64, D)| hash(k.1);
    for run in keyed.chunk_by_mut(|x, y| x.0 == y.0) {
        let first = hash(&run[0]);
        if run.iter().any(|k| hash(k) != first) {
            run.sort_by_key(hash);
        }
        for g in run.chunk_by(|x, y| hash(x) == hash(y)) {
            group(g);
        }
    }
}

/// Moves the sketches of the group's sketched copy to its first member, which represents the
/// group from then on, and returns that member; None when the claimer found no token (every
/// copy is then empty).
fn take_over(corpus: &mut Corpus, members: &[u32]) -> Option<u32> {
    let (docs, lanes) = (&mut corpus.docs, corpus.lanes);
    let first = members[0] as usize;
    let Some(&sketched) = members
        .iter()
        .find(|&&m| docs[m as usize].outcome == Outcome::Sketched)
    else {
        for &m in members {
            docs[m as usize].outcome = Outcome::Empty;
        }
        return None;
    };
    let sketched = sketched as usize;
    if sketched != first {
        (corpus.sigs).copy_within(sketched * lanes..(sketched + 1) * lanes, first * lanes);
        if corpus.bottom.is_on() {
            corpus.bottom.copy(sketched as u32, first as u32);
        }
        docs[first].fingerprint = docs[sketched].fingerprint;
        docs[first].set = docs[sketched].set.take();
        docs[first].shingles = docs[sketched].shingles;
        docs[sketched].outcome = Outcome::Duplicate;
        docs[first].outcome = Outcome::Sketched;
    }
    Some(first as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::bottomk::Sketches;

    fn doc(hash: u128, outcome: Outcome) -> DocResult {
        DocResult {
            outcome,
            bytes: 10,
            hash,
            fingerprint: hash as u64,
            set: None,
            shingles: 0,
            links: 0,
            disk: 0,
            json_lines: false,
        }
    }

    #[test]
    fn content_groups_split_a_shared_high_half_by_the_whole_hash_keeping_id_order() {
        // Documents 2, 5, 6, 9 share the high half 7; 2 and 9 have one content, 5 and 6 another.
        let low = |d: u32| if d == 2 || d == 9 { 1 } else { 0 };
        let mut keyed = vec![(3u64, 1u32), (7, 2), (7, 5), (7, 6), (7, 9), (8, 4)];
        let mut seen = Vec::new();
        let hash = |d: u32| (7u128 << 64) | low(d);
        content_groups(&mut keyed, hash, |g| {
            seen.push(g.iter().map(|k| k.1).collect::<Vec<u32>>())
        });
        assert_eq!(seen, [vec![1], vec![5, 6], vec![2, 9], vec![4]]);
    }

    #[test]
    fn copies_are_grouped_by_the_whole_hash_in_order_of_their_first_document() {
        let high = 7u128 << 64;
        let docs = vec![
            doc(high | 2, Outcome::Duplicate), // 0: a copy of 3, read before its claimer
            doc(high | 1, Outcome::Sketched),  // 1: same high half as 0, another content
            doc(5, Outcome::Sketched),         // 2: alone
            doc(high | 2, Outcome::Sketched),  // 3: claimer of 0's content
            doc(high | 1, Outcome::Duplicate), // 4: a copy of 1
            doc(9, Outcome::Duplicate),        // 5: copy of an empty claimer (6)
            doc(9, Outcome::Empty),            // 6
            doc(high | 2, Outcome::Duplicate), // 7: another copy of 3
        ];
        let n = docs.len();
        let sigs = (0..n as u32 * 2).collect();
        let mut corpus = Corpus::new(Vec::new(), docs, sigs, 2, Sketches::default());
        let found = group(&mut corpus);
        let listed: Vec<(u32, u32)> = found.pairs.iter().map(|p| (p.lo, p.hi)).collect();
        assert_eq!(listed, [(0, 3), (0, 7), (1, 4)]);
        assert_eq!(found.units, [0, 1, 2]);
        assert_eq!(found.canon, [0, 1, 2, 0, 1, 5, 6, 0]);
        assert_eq!(found.groups, 2);
        assert_eq!(found.documents, 6);
        assert_eq!(found.empty, 2);
        // The group's first document took over the claimer's signature.
        assert_eq!(&corpus.sigs[0..2], &[6, 7]);
        let docs = &corpus.docs;
        assert_eq!(docs[0].outcome, Outcome::Sketched);
        assert_eq!(docs[3].outcome, Outcome::Duplicate);
        assert_eq!(docs[5].outcome, Outcome::Empty);
    }
}
