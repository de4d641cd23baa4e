//! Candidates: signatures → the pairs worth verifying. Byte-identical documents are grouped
//! first ([`identical`]), so only one document per distinct content (a *unit*) is bucketed: by
//! LSH band or SimHash piece ([`keys`]; the banding is chosen in [`crate::config::banding`]),
//! or, with `--containment`, per pair of size classes ([`containment`]). A bucket
//! ([`buckets`]) holds the documents sharing a key in one table.

pub mod buckets;
pub mod containment;
pub mod identical;
pub mod keys;

use rayon::prelude::*;

use crate::config::{Config, MethodConfig};
use crate::ingest::corpus::Corpus;

use buckets::Buckets;
use keys::Keying;

/// The candidates of a scan.
pub struct Candidates {
    /// One table of buckets per band (MinHash) or piece (SimHash); with `--containment`, one
    /// per band of documents of one size class, then the plausible candidate pairs of two
    /// classes as two-document buckets. With an index, only buckets holding a new document are
    /// kept.
    pub tables: Vec<Buckets>,
    /// Candidate pairs the estimate prefilter ruled out on the way (`--containment`'s pairs of
    /// two size classes; 0 otherwise, where verification counts them).
    pub ruled_out: u64,
    /// Documents in the largest bucket.
    pub largest_bucket: u64,
    /// Documents in the largest candidate component (documents linked through shared buckets):
    /// verification loads a component whole, and its checks can grow with its square.
    pub largest_component: u64,
}

impl Candidates {
    /// Every document a candidate or in a byte-identical group with another (`identical`),
    /// unsorted, with repeats: what verification may read again.
    pub fn compared(&self, identical: &identical::Identical) -> Vec<u32> {
        let mut w: Vec<u32> = (self.tables.iter())
            .flat_map(|t| t.docs().iter().copied())
            .collect();
        w.extend(identical.pairs.iter().map(|p| p.lo));
        w
    }
}

/// The sizes of the largest bucket and of the largest candidate component of `tables`, over
/// `n` documents. No cap is put on either (a cap would change the answer); they are reported.
pub fn skew(tables: &[Buckets], n: usize) -> (u64, u64) {
    let mut uf = crate::pairs::UnionFind::new(n);
    let mut largest_bucket = 0u64;
    for t in tables {
        for i in 0..t.len() {
            let b = t.bucket(i);
            largest_bucket = largest_bucket.max(b.len() as u64);
            b.windows(2).for_each(|w| {
                uf.union(w[0], w[1]);
            });
        }
    }
    let largest_component = (tables.iter().flat_map(|t| t.docs().iter()))
        .map(|&d| u64::from(uf.set_size(d)))
        .max()
        .unwrap_or(0);
    (largest_bucket, largest_component)
}

/// Buckets the `units` (one document per distinct content, in increasing order).
pub fn find(cfg: &Config, corpus: &Corpus, units: &[u32]) -> Candidates {
    let (mut tables, ruled_out) = bucket(cfg, corpus, units);
    if corpus.indexed() > 0 {
        let first_new = corpus.new_ids().start;
        tables.iter_mut().for_each(|t| t.keep_from(first_new));
    }
    let (largest_bucket, largest_component) = skew(&tables, corpus.docs.len());
    Candidates {
        tables,
        ruled_out,
        largest_bucket,
        largest_component,
    }
}

fn bucket(cfg: &Config, corpus: &Corpus, units: &[u32]) -> (Vec<Buckets>, u64) {
    let (sigs, lanes, docs) = (&corpus.sigs, corpus.lanes, &corpus.docs);

    let tables = match &cfg.method {
        MethodConfig::MinHash {
            containment: Some(scheme),
            report_threshold,
            ..
        } => {
            let sizes: Vec<u64> = docs.iter().map(|d| d.shingles).collect();
            let c = containment::candidates(scheme, units, sigs, lanes, &sizes, *report_threshold);
            // The pairs of two size classes: those the single-value bands make candidates (pairs
            // of one class come from the buckets of two-value bands, and are not counted).
            // A warning: the run is slow for a reason the user can change.
            if let Some(note) = containment::crowding_note(c.across + c.implausible, units.len()) {
                cfg.messages.warn(&note);
            }
            return (c.tables, c.implausible);
        }
        method => {
            let keying = Keying::of(method);
            let (pieces, rows) = match &keying {
                Keying::Pieces(_) => (true, 0),
                Keying::Bands { rows, .. } => (false, *rows),
            };
            // Tables are keyed and sorted side by side: each table's counting sort is serial.
            (0..keying.tables())
                .into_par_iter()
                .map(|t| {
                    let entries = units
                        .par_iter()
                        .enumerate()
                        .map(|(i, &u)| {
                            let u = u as usize;
                            if pieces {
                                return (keying.key(t, &[], docs[u].fingerprint), u as u32);
                            }
                            if let Some(&ahead) = units.get(i + PREFETCH_AHEAD) {
                                // A band's pass reads 24 bytes of each 512-byte signature, a
                                // stride the hardware prefetchers did not follow.
                                crate::cpu::prefetch(&sigs[ahead as usize * lanes + t * rows]);
                            }
                            (
                                keying.key(t, &sigs[u * lanes..(u + 1) * lanes], 0),
                                u as u32,
                            )
                        })
                        .collect();
                    Buckets::from_keys(entries)
                })
                .collect()
        }
    };
    (tables, 0)
}

/// How many documents ahead a band's pass asks for the signature values it will key.
const PREFETCH_AHEAD: usize = 16;
