//! Batches of candidate components: the unit in which verification loads material, so its
//! memory stays bounded.
//!
//! Exact Jaccard needs both documents' shingle sets: about 1.6 bytes per byte of text for word
//! shingles (one 64-bit hash per ~5-byte word), up to 8 for character shingles (one per
//! character). Holding the sets of every candidate at once would grow with the corpus (hundreds
//! of MB per 100,000 documents with many near-duplicates), so documents are first split into
//! candidate components: documents linked through shared buckets of any table. No candidate
//! pair crosses two components, so components can be verified separately and give the same
//! result as verifying everything at once. They are taken a batch at a time, in a fixed order:
//! about [`BATCH_BYTES`] of estimated set size, or one component if it alone is larger.

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::input::walk::FileEntry;
use crate::messages::{Messages, Progress};
use crate::pairs::UnionFind;
use crate::sketch::shingle::ShingleKind;

use super::connect::Verification;

/// A sorted (or, kept from the first pass, unsorted) shingle set.
pub type Set = Box<[u64]>;

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
        kept: &mut [Option<Set>],
        tables: &[Buckets],
        mut verify: impl FnMut(&[Vec<&[u32]>], &mut [Option<Set>], &Progress) -> Verification,
    ) -> Verification {
        let n = kept.len();
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
        kept.par_iter_mut().zip(&bucketed).for_each(|(set, &b)| {
            if !b {
                *set = None;
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
        let bar = self.msgs.progress(total, "verifying", "documents");
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
            let v = verify(&per_table, kept, &bar);
            out.checked += v.checked;
            out.passed += v.passed;
            out.pairs.extend(v.pairs);
            out.passing.extend(v.passing);
            out.rehearsed.extend(v.rehearsed);
            start = end;
        }
        bar.finish();
        out
    }
}

/// One bucket: (candidate component, table, bucket index).
type Entry = (u32, u32, u32);
