//! The candidate documents as one vector of ids, increasing, each once, built from the buckets
//! a bounded batch at a time; a document's place in it is its union-find index (64 bits: ids
//! are `shard << 32 | row`, and a run's candidates may number more than 2³²).

use anyhow::Result;
use rayon::prelude::*;

/// Ids gathered before they are sorted into the vector: at least this many (8 MB), else at
/// most half the vector, so that building it never holds more than twice its final size.
const MIN_PENDING: usize = 1 << 20;

/// The candidate documents, increasing.
pub struct Ids {
    ids: Vec<i64>,
}

impl Ids {
    /// The index of `doc`, if it is a candidate.
    pub fn index(&self, doc: i64) -> Option<u64> {
        self.ids.binary_search(&doc).ok().map(|i| i as u64)
    }

    /// The candidates.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The ids.
    pub fn as_slice(&self) -> &[i64] {
        &self.ids
    }
}

/// Builds [`Ids`] from documents given in any order, with repeats.
#[derive(Default)]
pub struct IdsBuilder {
    ids: Vec<i64>,
    pending: Vec<i64>,
}

impl IdsBuilder {
    /// Adds `docs`.
    pub fn extend(&mut self, docs: &[i64]) -> Result<()> {
        if self.pending.len() + docs.len() > (self.ids.len() / 2).max(MIN_PENDING) {
            self.flush()?;
        }
        self.pending.extend_from_slice(docs);
        Ok(())
    }

    /// The ids added, increasing, each once.
    pub fn finish(mut self) -> Result<Ids> {
        self.flush()?;
        self.ids.shrink_to_fit();
        Ok(Ids { ids: self.ids })
    }

    fn flush(&mut self) -> Result<()> {
        self.pending.par_sort_unstable();
        self.pending.dedup();
        merge_into(&mut self.ids, &self.pending);
        self.pending.clear();
        Ok(())
    }
}

/// Merges increasing `new` into increasing `ids` in place (from the back, into the room made
/// at its end), then drops repeats.
fn merge_into(ids: &mut Vec<i64>, new: &[i64]) {
    let (mut i, mut j) = (ids.len(), new.len());
    ids.reserve_exact(j);
    ids.resize(i + j, 0);
    for k in (0..ids.len()).rev() {
        if j == 0 {
            break; // ids[..i] is already in place
        }
        if i > 0 && ids[i - 1] > new[j - 1] {
            ids[k] = ids[i - 1];
            i -= 1;
        } else {
            ids[k] = new[j - 1];
            j -= 1;
        }
    }
    ids.dedup();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ids_are_the_sorted_distinct_documents_however_they_arrive(
            batches in proptest::collection::vec(
                proptest::collection::vec(-50i64..50, 0..30), 0..40),
        ) {
            let mut b = IdsBuilder::default();
            for docs in &batches {
                b.extend(docs).unwrap();
                // Merge often, as a run far larger than MIN_PENDING does.
                b.flush().unwrap();
            }
            let ids = b.finish().unwrap();
            let mut want: Vec<i64> = batches.concat();
            want.sort_unstable();
            want.dedup();
            prop_assert_eq!(ids.as_slice(), &want[..]);
            for (i, &d) in want.iter().enumerate() {
                prop_assert_eq!(ids.index(d), Some(i as u64));
            }
            prop_assert_eq!(ids.index(50), None);
        }
    }

    /// Ids of shards past 2³¹ and rows near 2³²: ordered by shard, then row, as signed
    /// 64-bit values (a shard's id is `shard << 32 | row`).
    #[test]
    fn ids_of_high_shards_and_sparse_rows_keep_their_order() {
        let id = |shard: i64, row: i64| (shard << 32) | row;
        let docs = [
            id(0x7fff_ffff, 0xffff_ffff),
            id(1, 0xffff_ffff),
            id(0x7fff_ffff, 0),
            id(2, 1),
            id(1, 0xffff_ffff),
            id(0x8000, 7),
        ];
        let mut b = IdsBuilder::default();
        b.extend(&docs).unwrap();
        let ids = b.finish().unwrap();
        assert_eq!(ids.len(), 5);
        let want = [
            id(1, 0xffff_ffff),
            id(2, 1),
            id(0x8000, 7),
            id(0x7fff_ffff, 0),
            id(0x7fff_ffff, 0xffff_ffff),
        ];
        assert_eq!(ids.as_slice(), want);
        assert_eq!(ids.index(id(0x7fff_ffff, 0xffff_ffff)), Some(4));
        assert_eq!(ids.index(id(0x7fff_ffff, 1)), None);
    }
}
