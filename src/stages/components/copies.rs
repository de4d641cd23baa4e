//! The byte-identical groups, from the content table's buckets (table −1, first in every group
//! file): documents with the same whole content hash, the first the group's unit and the
//! others its copies. Only (copy, unit) pairs are kept, 16 bytes a copy.

use std::path::Path;

use anyhow::{bail, Result};
use rayon::prelude::*;

use crate::stages::plan::Plan;
use crate::stages::sign::CONTENT_TABLE;

use super::buckets::GroupFile;

/// The copies and their units, by copy.
pub struct Copies {
    pairs: Vec<(i64, i64)>,
    /// Groups of two or more byte-identical documents.
    pub groups: u64,
}

impl Copies {
    /// Reads the content table of every group file (stopping at each file's first band
    /// bucket).
    pub fn read(work: &Path, plan: &Plan) -> Result<Copies> {
        Copies::of((0..plan.parts).map(|part| GroupFile::open(work, plan, part)))
    }

    /// The copies in the content tables of `files`.
    fn of(files: impl Iterator<Item = Result<GroupFile>>) -> Result<Copies> {
        let (mut pairs, mut groups) = (Vec::new(), 0u64);
        let mut by_hash: Vec<(i64, i64)> = Vec::new();
        for file in files {
            let mut file = file?;
            while let Some(b) = file.next_bucket()? {
                if b.table > CONTENT_TABLE {
                    break;
                } else if b.table < CONTENT_TABLE {
                    continue;
                }
                by_hash.clear();
                by_hash.extend(b.aux.iter().copied().zip(b.docs.iter().copied()));
                // Contents that share the hash's high half are told apart by the low half.
                by_hash.sort_unstable();
                for run in by_hash.chunk_by(|x, y| x.0 == y.0) {
                    if run.len() >= 2 {
                        groups += 1;
                        pairs.extend(run[1..].iter().map(|x| (x.1, run[0].1)));
                    }
                }
            }
        }
        pairs.par_sort_unstable();
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            bail!(
                "document {} is in two content buckets: a group file of another plan?",
                w[0].0
            );
        }
        Ok(Copies { pairs, groups })
    }

    /// (copy, unit), by copy.
    pub fn pairs(&self) -> &[(i64, i64)] {
        &self.pairs
    }

    /// The unit `doc` is a copy of, or `doc` itself.
    pub fn canon(&self, doc: i64) -> i64 {
        match self.pairs.binary_search_by_key(&doc, |c| c.0) {
            Ok(i) => self.pairs[i].1,
            Err(_) => doc,
        }
    }

    /// `docs` but the copies, into `out` (a copy is never bucketed: its unit stands for it, as
    /// in `scan`).
    pub fn units_of(&self, docs: &[i64], out: &mut Vec<i64>) {
        out.clear();
        if self.pairs.is_empty() {
            out.extend_from_slice(docs);
        } else {
            let is_copy = |d: &i64| self.pairs.binary_search_by_key(d, |c| c.0).is_ok();
            out.extend(docs.iter().filter(|d| !is_copy(d)));
        }
    }
}
