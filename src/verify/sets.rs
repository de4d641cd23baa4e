//! Exact verification of MinHash candidates, in batches that bound memory.
//! (The measure is Jaccard, or containment with `--containment`; the batching is the same.)
//!
//! Exact Jaccard needs both documents' shingle sets: about 1.6 bytes per byte of text for word
//! shingles (one 64-bit hash per ~5-byte word), up to 8 for character shingles (one per
//! character). Holding the sets of every candidate at once would grow with
//! the corpus (hundreds of MB per 100,000 documents with many near-duplicates), so documents are
//! first split into candidate components: documents linked through shared buckets of any table.
//! No candidate pair crosses two components, so components can be verified separately and give
//! the same result as verifying everything at once. They are taken a batch at a time, in a fixed
//! order: the sets of one batch (about [`BATCH_BYTES`] of estimated set size, or one component
//! if it alone is larger) are loaded in parallel, the batch's buckets are checked with
//! [`connect`], and the sets are dropped.
//!
//! A candidate whose signature estimate is below the prefilter floor (see
//! [`crate::candidates::lsh::estimate_floor`]) is rejected without its sets; a document with no plausible
//! partner in any of its buckets is never loaded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::cluster::UnionFind;
use crate::ingest::worker::{DocResult, DocWorker, Engine};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError, Messages};
use crate::sketch::shingle::{into_set, ShingleKind};
use crate::verify::{connect, Verification};

/// Estimated shingle-set bytes loaded per batch.
pub const BATCH_BYTES: u64 = 32 << 20;

/// Estimated set bytes of a file: one 8-byte hash per ~5 bytes of text for word shingles, at
/// most one per byte for character shingles.
fn set_bytes(file: &FileEntry, shingle: ShingleKind) -> u64 {
    match shingle {
        ShingleKind::Word => file.size.saturating_mul(8) / 5,
        ShingleKind::Char => file.size.saturating_mul(8),
    }
}

/// Candidate components taken a batch at a time (about [`BATCH_BYTES`] of estimated set size),
/// as exact and edit verification ([`crate::verify::edit`]) load documents.
pub struct Batches<'a> {
    /// Every document's file, by document id (for its size).
    pub files: &'a [FileEntry],
    /// What a document's set is made of (for its estimated size).
    pub shingle: ShingleKind,
    /// Progress.
    pub msgs: &'a Messages,
}

impl Batches<'_> {
    /// Calls `verify` on the buckets of each batch, grouped by table (tables in order), with a
    /// progress bar counting the bucketed documents, and sums what it returns.
    pub fn run(
        &self,
        docs: &mut [DocResult],
        tables: &[Buckets],
        mut verify: impl FnMut(
            &[Vec<&[u32]>],
            &mut [DocResult],
            &indicatif::ProgressBar,
        ) -> Verification,
    ) -> Verification {
        let n = docs.len();
        let mut components = UnionFind::new(n);
        let mut bucketed = vec![false; n];
        for t in tables {
            for i in 0..t.len() {
                let b = t.bucket(i);
                for w in b.windows(2) {
                    components.union(w[0], w[1]);
                }
            }
            for &d in t.docs() {
                bucketed[d as usize] = true;
            }
        }
        // Sets kept from the first pass for documents that are no candidates are freed now (by
        // the pool: one free each, 0.6 ms at 10k files on one thread).
        docs.par_iter_mut().zip(&bucketed).for_each(|(doc, &b)| {
            if !b {
                doc.set = None;
            }
        });
        let mut component_bytes = vec![0u64; n];
        for (d, _) in bucketed.iter().enumerate().filter(|(_, &b)| b) {
            let root = components.find(d as u32) as usize;
            component_bytes[root] += set_bytes(&self.files[d], self.shingle);
        }
        let mut entries: Vec<Entry> = Vec::new();
        for (ti, t) in tables.iter().enumerate() {
            for i in 0..t.len() {
                let root = components.find(t.bucket(i)[0]);
                entries.push((root, ti as u32, i as u32));
            }
        }
        // By component, then table, then bucket: within a component the tables keep their order,
        // which is all `connect` needs to be deterministic.
        entries.par_sort_unstable();

        let total = bucketed.iter().filter(|&&b| b).count() as u64;
        let bar = self.msgs.progress_bar(total, "verifying");
        let mut out = Verification::default();
        let mut start = 0;
        while start < entries.len() {
            let mut end = start;
            let mut bytes = 0u64;
            while end < entries.len() && bytes < BATCH_BYTES {
                let root = entries[end].0;
                bytes += component_bytes[root as usize];
                while end < entries.len() && entries[end].0 == root {
                    end += 1;
                }
            }
            let mut per_table: Vec<Vec<&[u32]>> = vec![Vec::new(); tables.len()];
            for &(_, t, i) in &entries[start..end] {
                per_table[t as usize].push(tables[t as usize].bucket(i as usize));
            }
            let v = verify(&per_table, docs, &bar);
            out.checked += v.checked;
            out.passed += v.passed;
            out.pairs.extend(v.pairs);
            start = end;
        }
        bar.finish_and_clear();
        out
    }
}

/// What exact verification reads from the rest of the scan.
pub struct ExactVerifier<'a, P> {
    /// Every document's file, by document id.
    pub files: &'a [FileEntry],
    /// How sets are derived again from files.
    pub engine: &'a Engine,
    /// Warnings and progress.
    pub msgs: &'a Messages,
    /// The similarity a pair must reach.
    pub threshold: f64,
    /// The exact similarity of two sorted sets when it reaches the threshold:
    /// [`crate::verify::jaccard_at_least`], or [`crate::verify::containment_at_least`] with
    /// `--containment`.
    pub measure: fn(&[u64], &[u64], f64) -> Option<f64>,
    /// False when the signatures rule a pair out (the estimate prefilter).
    pub plausible: P,
}

/// A sorted shingle set.
type Set = Box<[u64]>;

/// One bucket: (candidate component, table, bucket index).
type Entry = (u32, u32, u32);

impl<P: Fn(u32, u32) -> bool + Sync> ExactVerifier<'_, P> {
    /// Verifies every candidate of `tables`, joining passing pairs in `uf`. Files that cannot be
    /// read again, or changed since the first pass, are added to `errors`; their pairs fail.
    pub fn run(
        &self,
        docs: &mut [DocResult],
        tables: &[Buckets],
        uf: &mut UnionFind,
        errors: &mut Vec<InputError>,
    ) -> Verification {
        let batches = Batches {
            files: self.files,
            shingle: self.engine.shingle,
            msgs: self.msgs,
        };
        // Documents found to need their sets. Batches hold disjoint components, so this is never
        // reset.
        let needed: Vec<AtomicBool> = (0..docs.len()).map(|_| AtomicBool::new(false)).collect();
        batches.run(docs, tables, |per_table, docs, bar| {
            let sets = self.load_sets(per_table, docs, &needed, errors, bar);
            connect(per_table, uf, |lo, hi| {
                if !(self.plausible)(lo, hi) {
                    return None;
                }
                let (a, b) = (sets.get(&lo)?, sets.get(&hi)?);
                (self.measure)(a, b, self.threshold).map(|j| (j, None))
            })
        })
    }

    /// The sets of the batch's documents that have a plausible partner in one of their buckets.
    fn load_sets(
        &self,
        per_table: &[Vec<&[u32]>],
        docs: &mut [DocResult],
        needed: &[AtomicBool],
        errors: &mut Vec<InputError>,
        bar: &indicatif::ProgressBar,
    ) -> HashMap<u32, Set> {
        // A document is needed once one pair of it passes in one bucket of any table, so a
        // pair whose documents are both needed already is not tested again (a near-duplicate
        // pair shares about five of 19 bands). Which documents end up needed does not depend
        // on the order buckets are taken in, so they are taken in parallel.
        let mark = |d: u32| !needed[d as usize].swap(true, Ordering::Relaxed);
        let is_needed = |d: u32| needed[d as usize].load(Ordering::Relaxed);
        let mut fresh: Vec<u32> = per_table
            .par_iter()
            .flat_map(|table| table.par_iter())
            .flat_map_iter(|&bucket| {
                let mut fresh = Vec::new();
                // A large bucket (many near-identical documents, nearly all needed) loads every
                // member rather than testing m² pairs.
                if bucket.len() > 64 {
                    fresh.extend(bucket.iter().copied().filter(|&d| mark(d)));
                    return fresh;
                }
                for (j, &a) in bucket.iter().enumerate() {
                    for &b in &bucket[j + 1..] {
                        if is_needed(a) && is_needed(b) {
                            continue;
                        }
                        if (self.plausible)(a.min(b), a.max(b)) {
                            fresh.extend([a, b].into_iter().filter(|&d| mark(d)));
                        }
                    }
                }
                fresh
            })
            .collect();
        // Each document once; in id order, so that errors are too.
        fresh.sort_unstable();
        let kept: Vec<(u32, u128, Option<Set>)> = fresh
            .iter()
            .map(|&d| {
                let doc = &mut docs[d as usize];
                (d, doc.hash, doc.set.take())
            })
            .collect();
        // Only sets derived again from their file are read from its path: not kept ones, nor
        // dump records (read from the spill) or indexed documents.
        let indexed = self.engine.indexed.as_ref().map_or(0, |ix| ix.count());
        let from_file: Vec<bool> = kept
            .iter()
            .map(|(d, _, set)| {
                set.is_none() && *d >= indexed && self.files[*d as usize].record.is_none()
            })
            .collect();
        let path_of = |i: usize| from_file[i].then(|| self.files[fresh[i] as usize].path.as_path());
        let loaded: Vec<(u32, Result<Set, String>)> = kept
            .into_par_iter()
            .enumerate()
            .map_init(
                || DocWorker::new(self.engine),
                |w, (i, (d, hash, kept))| {
                    // Called for kept sets too, so that the worker sees its run in order.
                    w.read_ahead((fresh.as_ptr() as usize, i, fresh.len()), path_of);
                    let r = match kept {
                        Some(raw) => {
                            let mut v = raw.into_vec();
                            into_set(&mut v);
                            Ok(v.into_boxed_slice())
                        }
                        None => w.load_set(d, &self.files[d as usize], hash),
                    };
                    bar.inc(1);
                    (d, r)
                },
            )
            .collect();
        let mut sets = HashMap::with_capacity(loaded.len());
        for (d, r) in loaded {
            match r {
                Ok(set) => {
                    sets.insert(d, set);
                }
                Err(reason) => {
                    let file = &self.files[d as usize];
                    self.msgs
                        .warn(&format!("{}: {reason}", display_path(&file.path)));
                    errors.push(file.error(None, reason));
                }
            }
        }
        sets
    }
}
