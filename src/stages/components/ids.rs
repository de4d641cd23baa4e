//! The candidate documents as one vector of ids, increasing, each once, built from the buckets
//! a bounded batch at a time; a document's place in it is its union-find index.

use anyhow::{bail, Result};
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
    pub fn index(&self, doc: i64) -> Option<u32> {
        // At most u32::MAX ids (checked as they were gathered).
        self.ids.binary_search(&doc).ok().map(|i| i as u32)
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
        check_count(self.ids.len())
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

/// Refuses more candidate documents than `u32` indices can number (the union-find's: 4 bytes
/// where 8 would add 8 bytes per candidate document).
pub fn check_count(n: usize) -> Result<()> {
    if n > u32::MAX as usize {
        bail!(
            "{n} candidate documents: stage components numbers them with 32 bits, so a run can \
             have at most {} (4.29 billion); split the corpus into runs",
            u32::MAX
        );
    }
    Ok(())
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
                prop_assert_eq!(ids.index(d), Some(i as u32));
            }
            prop_assert_eq!(ids.index(50), None);
        }
    }

    #[test]
    fn more_candidates_than_u32_indices_are_refused_by_name() {
        assert!(check_count(u32::MAX as usize).is_ok());
        let e = check_count(u32::MAX as usize + 1).unwrap_err().to_string();
        assert!(e.contains("4294967296 candidate documents"), "{e}");
        assert!(e.contains("at most 4294967295"), "{e}");
    }
}
