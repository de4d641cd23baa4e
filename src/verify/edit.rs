//! Edit verification (`--verify edit`): MinHash candidates from the LSH bands, judged by token
//! edit similarity ([`crate::verify::lcs`]) instead of shingle-set Jaccard, so that moved text counts
//! (two documents with swapped halves keep nearly all their shingles but only half of their
//! order).
//!
//! Candidates are taken a batch of candidate components at a time ([`Batches`]), as exact
//! verification takes them, and the token sequences of a batch are loaded, compared and
//! dropped. The cost is quadratic per pair (an LCS, O(n·m/64)): two documents at the cap of
//! [`MAX_EDIT_TOKENS`] take about 6 M word steps. A pair where either document is over the cap
//! is judged by exact Jaccard instead, and counted (`stats.edit_fallbacks`).
//!
//! No signature prefilter applies: the signature estimates Jaccard, which says nothing about
//! order. Only the lengths rule a pair out early: L ≤ min(|a|, |b|), so the similarity is at
//! most min/max.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::candidates::buckets::Buckets;
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError, Messages};
use crate::pairs::UnionFind;

use super::batches::{Batches, Set};
use super::connect::{connect, Verification};
use super::judge::Judge;
use super::reload::{Loaded, Want};

/// What edit verification reads from the rest of the scan.
pub struct EditVerifier<'a> {
    /// Every document's file, by document id.
    pub files: &'a [FileEntry],
    /// How token sequences and sets are derived from files.
    pub engine: &'a Engine,
    /// Decides every pair.
    pub judge: &'a Judge<'a>,
    /// Warnings and progress.
    pub msgs: &'a Messages,
}

impl EditVerifier<'_> {
    /// Verifies every candidate of `tables`, joining passing pairs in `uf`; returns what was
    /// verified and how many checked pairs fell back to Jaccard. Files that cannot be read
    /// again, or changed since the first pass, are added to `errors`; their pairs fail.
    pub fn run(
        &self,
        kept: &mut [Option<Set>],
        tables: &[Buckets],
        uf: &mut UnionFind,
        errors: &mut Vec<InputError>,
    ) -> (Verification, u64) {
        let batches = Batches {
            files: self.files,
            shingle: self.engine.shingle,
            msgs: self.msgs,
        };
        // Each distinct pair is checked at most once (`connect`), so the count does not depend
        // on the thread count.
        let fallbacks = AtomicU64::new(0);
        let v = batches.run(kept, tables, |per_table, _, bar| {
            let loaded = self.load(per_table, errors);
            bar.inc(loaded.1);
            connect(per_table, uf, |lo, hi| {
                let verdict = self.judge.candidate(lo, hi, &loaded.0);
                if verdict.fallback {
                    fallbacks.fetch_add(1, Ordering::Relaxed);
                }
                verdict.score
            })
        });
        (v, fallbacks.into_inner())
    }

    /// The token sequences of every document of the batch, and the sets of the documents that
    /// share a bucket with one over the cap; with the number of documents.
    fn load(&self, per_table: &[Vec<&[u32]>], errors: &mut Vec<InputError>) -> (Loaded, u64) {
        let docs = self.judge.docs;
        let mut ids: Vec<u32> = per_table
            .iter()
            .flatten()
            .flat_map(|b| b.iter())
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let wanted: Vec<(u32, u128)> = ids.iter().map(|&d| (d, docs[d as usize].hash)).collect();
        let partners = |over: &HashSet<u32>| {
            per_table
                .iter()
                .flatten()
                .filter(|b| b.iter().any(|d| over.contains(d)))
                .flat_map(|b| b.iter().copied())
                .collect()
        };
        let want = Want {
            sets: false,
            tokens: true,
        };
        let mut failed = Vec::new();
        let loaded = Loaded::load(
            self.engine,
            self.files,
            &wanted,
            want,
            partners,
            &mut failed,
        );
        for (d, reason) in failed {
            let file = &self.files[d as usize];
            self.msgs
                .warn(&format!("{}: {reason}", display_path(&file.path)));
            errors.push(file.error(None, reason));
        }
        (loaded, ids.len() as u64)
    }
}
