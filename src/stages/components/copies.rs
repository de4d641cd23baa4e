//! The byte-identical groups, from the content table's buckets (table −1, first in every group
//! file): documents with the same whole content hash, the first the group's unit and the
//! others its copies. Only (copy, unit) pairs are kept, 16 bytes a copy.

use anyhow::{bail, Result};
use rayon::prelude::*;

use crate::candidates::identical::content_groups;
use crate::sketch::minhash::mix64;
use crate::stages::sign::CONTENT_TABLE;

use super::buckets::{GroupFile, GroupParts};

/// The copies and their units, by copy.
pub struct Copies {
    pairs: Vec<(i64, i64)>,
    /// A bit per hash of a copy, 8 bits or more per copy: most documents of a bucket are no
    /// copy, and a clear bit says so without the binary search, which was a sixth of the
    /// stage's instructions.
    filter: Vec<u64>,
}

impl Copies {
    /// Reads the content table of every group file (stopping at each file's first band
    /// bucket), the files in parallel.
    pub fn read(files: &[GroupParts]) -> Result<Copies> {
        let each: Vec<Vec<(i64, i64)>> = (files.par_iter())
            .map(|f| Copies::of(f.reader(None)))
            .collect::<Result<_>>()?;
        let mut pairs = Vec::with_capacity(each.iter().map(|e| e.len()).sum());
        for p in each {
            pairs.extend_from_slice(&p);
        }
        pairs.par_sort_unstable();
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            bail!(
                "document {} is in two content buckets: a group file of another plan?",
                w[0].0
            );
        }
        Ok(Copies::new(pairs))
    }

    /// The copies of `pairs` (sorted by copy).
    fn new(pairs: Vec<(i64, i64)>) -> Copies {
        let words = (pairs.len() / 8).next_power_of_two();
        let mut c = Copies {
            pairs,
            filter: vec![0; words],
        };
        for &(copy, _) in &c.pairs {
            let (word, bit) = c.slot(copy);
            c.filter[word] |= bit;
        }
        c
    }

    /// The word and bit of `doc` in the filter.
    fn slot(&self, doc: i64) -> (usize, u64) {
        let h = mix64(doc as u64);
        let word = (h >> 6) as usize & (self.filter.len() - 1);
        (word, 1 << (h & 63))
    }

    /// True when `doc` is a copy.
    fn is_copy(&self, doc: i64) -> bool {
        let (word, bit) = self.slot(doc);
        self.filter[word] & bit != 0 && self.pairs.binary_search_by_key(&doc, |c| c.0).is_ok()
    }

    /// The (copy, unit) pairs in the content table of `file`.
    fn of(file: Result<GroupFile>) -> Result<Vec<(i64, i64)>> {
        let mut pairs = Vec::new();
        // (the hash's high half, (document, the hash's low half)), as `scan` groups them.
        let mut keyed: Vec<(u64, (i64, i64))> = Vec::new();
        {
            let mut file = file?;
            while let Some(b) = file.next_bucket()? {
                if b.table > CONTENT_TABLE {
                    break;
                } else if b.table < CONTENT_TABLE {
                    continue;
                }
                let high = b.key as u64;
                keyed.clear();
                keyed.extend(
                    (b.docs.iter().copied())
                        .zip(b.aux.iter().copied())
                        .map(|d| (high, d)),
                );
                keyed.sort_unstable();
                let hash = |(_, low): (i64, i64)| (u128::from(high) << 64) | u128::from(low as u64);
                content_groups(&mut keyed, hash, |run| {
                    if run.len() >= 2 {
                        pairs.extend(run[1..].iter().map(|x| (x.1 .0, run[0].1 .0)));
                    }
                });
            }
        }
        Ok(pairs)
    }

    /// (groups, copies) of the byte-identical documents with a member from `first_new` on, as
    /// `scan` counts them: every group and copy without an index (`first_new` 0); with one,
    /// copies among indexed documents were counted when they were new. A group's unit is its
    /// least document, so a group has a new member when one of its copies is new.
    pub fn counts(&self, first_new: i64) -> (u64, u64) {
        let mut units: Vec<i64> = (self.pairs.iter())
            .filter(|p| p.0 >= first_new)
            .map(|p| p.1)
            .collect();
        let copies = units.len() as u64;
        units.sort_unstable();
        units.dedup();
        (units.len() as u64, copies)
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
            out.extend(docs.iter().filter(|&&d| !self.is_copy(d)));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::buckets::{test_group, test_parts, write_group_file, Row};
    use super::*;

    /// The copies of group files holding `files`, each file one record batch.
    fn copies(files: &[&[Row]]) -> Result<Copies> {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..files.len())
            .map(|f| dir.path().join(format!("part-{f}.parquet")))
            .collect();
        let mut group = test_group();
        for (path, rows) in paths.iter().zip(files) {
            write_group_file(dir.path(), path, &mut group, &[rows]);
        }
        let opened = paths.iter().map(|p| test_parts(dir.path(), p, &group));
        Copies::read(&opened.collect::<Result<Vec<_>>>()?)
    }

    #[test]
    fn each_whole_hash_is_a_group_whose_first_document_is_the_unit() {
        let c = copies(&[
            &[
                // High half 7: low halves 1 (docs 3, 9, 12) and 2 (docs 5, 20); 8 alone.
                (
                    CONTENT_TABLE,
                    7,
                    vec![3, 5, 8, 9, 12, 20],
                    vec![1, 2, 3, 1, 1, 2],
                ),
                (0, 1, vec![3, 9], vec![]),
            ],
            &[],
            &[(CONTENT_TABLE, -4, vec![30, 31], vec![0, 0])],
        ])
        .unwrap();
        assert_eq!(c.counts(0), (3, 4));
        assert_eq!(c.pairs(), &[(9, 3), (12, 3), (20, 5), (31, 30)]);
        // With an index, only groups and copies with a new member (from the first new id on).
        assert_eq!(
            (c.counts(10), c.counts(21), c.counts(32)),
            ((3, 3), (1, 1), (0, 0))
        );
        assert_eq!((c.canon(12), c.canon(3), c.canon(8)), (3, 3, 8));
        let mut units = vec![99];
        c.units_of(&[3, 5, 8, 9, 12, 20, 31], &mut units);
        assert_eq!(units, [3, 5, 8]);
    }

    #[test]
    fn without_copies_every_document_is_a_unit() {
        let c = copies(&[&[(0, 1, vec![3, 9], vec![])], &[]]).unwrap();
        assert_eq!(c.counts(0), (0, 0));
        let mut units = Vec::new();
        c.units_of(&[3, 9], &mut units);
        assert_eq!(units, [3, 9]);
    }

    #[test]
    fn a_document_in_two_content_buckets_is_refused() {
        let e = copies(&[
            &[(CONTENT_TABLE, 1, vec![1, 2], vec![0, 0])],
            &[(CONTENT_TABLE, 2, vec![0, 2], vec![5, 5])],
        ]);
        let e = e.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("document 2 is in two content buckets"), "{e}");
    }
}
