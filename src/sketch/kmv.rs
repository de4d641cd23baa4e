//! K-minimum values (Bar-Yossef et al. 2002; Beyer et al. 2007): an estimate of the number of
//! distinct shingles in the whole corpus from a fixed-size, mergeable sketch.
//!
//! Shingle hashes are already full-avalanche hashes (SplitMix64-finalized or xxh3, see
//! [`crate::sketch::shingle`]), uniform on [0, 2^64), so the sketch takes them as they are. It keeps the
//! k smallest distinct values. With n distinct values and the k-th smallest at U·2^64, U ≈ k/n,
//! and the estimate is (k − 1)/U, unbiased, with relative standard error 1/√(k − 2): 1.6 % at
//! the default k = 4096, in 32 KiB. Below k distinct values the count is exact.
//!
//! The state after any sequence of inserts and merges is the k smallest distinct values of
//! everything seen, kept sorted, so per-thread sketches merged in any order equal one sequential
//! sketch, field for field. This module estimates only; it stores no shingles.
//!
//! Speed: once the sketch is full, only hashes below the k-th smallest can matter (about k/n of
//! them). A document's hashes are filtered against it a chunk at a time without branches, and
//! the few that pass, nearly all values the sketch already has (a frequent shingle keeps
//! coming back), are looked up in a small hash table of the kept values rather than
//! binary-searched in them. New values wait in a buffer and enter the sorted values k/4 at a
//! time (one sort and merge), not one by one: an insertion into a sorted vector shifts half of
//! its 32 KiB, and a fresh sketch takes about k·ln(n/k) of them (profiled at `-j2`, where rayon
//! starts a sketch per work split, those shifts were 13 % of the run).

use std::fmt;

use crate::cpu;
use crate::sketch::kmv_filter::{below_mask, CHUNK};
use crate::sketch::kmv_table::Table;
use crate::sketch::sort::merge_sorted;

/// Default number of values kept: relative error about 1/√4094 ≈ 1.6 %.
pub const DEFAULT_KMV_K: usize = 4096;

/// A k-minimum-values sketch of a multiset of 64-bit hashes.
#[derive(Clone)]
pub struct Kmv {
    k: usize,
    /// The k smallest distinct values seen, ascending (fewer while fewer were seen).
    values: Vec<u64>,
    /// Every value of `values` (but `u64::MAX`), built once the sketch is full, empty before.
    /// Evicted values are left in it: an evicted value was the k-th smallest, so it is above
    /// every later k-th smallest and can never be looked up again. The table is rebuilt from
    /// `values` when such leftovers crowd it.
    table: Table,
    /// Values below the k-th smallest (as it was when they came) not yet merged into `values`;
    /// may repeat. Every reading of the sketch sees `values` and `pending` merged.
    pending: Vec<u64>,
}

/// The sketch is its `k` and its values (`values` and `pending` merged); the lookup table is a
/// cache.
impl PartialEq for Kmv {
    fn eq(&self, other: &Self) -> bool {
        self.k == other.k && self.kept() == other.kept()
    }
}

impl Eq for Kmv {}

impl fmt::Debug for Kmv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kmv")
            .field("k", &self.k)
            .field("values", &self.kept())
            .finish()
    }
}

impl Default for Kmv {
    fn default() -> Self {
        Kmv::new(DEFAULT_KMV_K)
    }
}

impl Kmv {
    /// An empty sketch keeping `k` values; `k` below 3 is raised to 3, the least for which the
    /// error 1/√(k − 2) is defined.
    pub fn new(k: usize) -> Self {
        let k = k.max(3);
        Kmv {
            k,
            values: Vec::with_capacity(k),
            table: Table::default(),
            pending: Vec::new(),
        }
    }

    /// The number of values kept.
    pub fn k(&self) -> usize {
        self.k
    }

    #[cfg(test)]
    /// Adds one hash.
    pub fn insert(&mut self, hash: u64) {
        self.insert_set(&[hash]);
    }

    /// Adds every hash of `set` (a document's shingles; repeats and any order are fine). While
    /// the sketch fills, values enter in blocks that are sorted once. After that, each chunk of
    /// 64 hashes is compared with the k-th smallest value into a bit mask ([`below_mask`]), and
    /// only the hashes below it are looked up in the table and, when new, inserted. Character
    /// 5-grams come from a small vocabulary: about 6 % of them fall below the limit, in nearly
    /// every chunk, so the chunks cannot simply be skipped.
    pub fn insert_set(&mut self, set: &[u64]) {
        let mut rest = set;
        while self.values.len() < self.k && !rest.is_empty() {
            let (block, tail) = rest.split_at(rest.len().min(self.k));
            self.values.extend_from_slice(block);
            self.normalize();
            rest = tail;
        }
        if rest.is_empty() {
            return;
        }
        if self.table.is_empty() {
            self.table.rebuild(self.k, &self.values);
        }
        let avx2 = cpu::Avx2::detect();
        for chunk in rest.chunks(CHUNK) {
            let mut below = below_mask(chunk, self.limit(), avx2);
            while below != 0 {
                let h = chunk[below.trailing_zeros() as usize];
                below &= below - 1;
                if !self.table.contains(h) {
                    self.pending.push(h);
                }
            }
            if self.pending.len() >= self.k.div_ceil(4) {
                self.flush();
            }
        }
    }

    /// Merges `pending` into `values` and adds the values that stayed to the table.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable();
        self.pending.dedup();
        let merged = merge_sorted(&self.values, &self.pending, self.k);
        self.values = merged;
        let limit = self.limit();
        let mut new = std::mem::take(&mut self.pending);
        if !self.table.is_empty() {
            // Pending values are not in the table (checked when they came); those still kept
            // go in. Evicted ones may stay in it: see `table`.
            for &v in new.iter().filter(|&&v| v <= limit) {
                self.table.add(v);
            }
            if self.table.is_crowded() {
                self.table.rebuild(self.k, &self.values);
            }
        }
        new.clear();
        self.pending = new;
    }

    /// The kept values, ascending: `values` itself, or merged with `pending` when values wait.
    pub fn kept(&self) -> std::borrow::Cow<'_, [u64]> {
        if self.pending.is_empty() {
            return std::borrow::Cow::Borrowed(&self.values);
        }
        let mut pending = self.pending.clone();
        pending.sort_unstable();
        pending.dedup();
        std::borrow::Cow::Owned(merge_sorted(&self.values, &pending, self.k))
    }

    /// Adds everything `other` has seen. Sketches of different k merge at the smaller k.
    pub fn merge(&mut self, other: &Kmv) {
        self.k = self.k.min(other.k);
        self.values.extend_from_slice(&other.values);
        self.values.append(&mut self.pending);
        self.values.extend_from_slice(&other.pending);
        self.normalize();
    }

    /// Estimated number of distinct hashes seen: (k − 1) / (k-th smallest / 2^64) once k
    /// distinct values were seen, else their exact count.
    pub fn estimate(&self) -> f64 {
        let kept = self.kept();
        if kept.len() < self.k {
            return kept.len() as f64;
        }
        // The k-th smallest of k ≥ 3 distinct values is at least 2, so no division by zero.
        let kth = kept[self.k - 1] as f64 / 2f64.powi(64);
        (self.k - 1) as f64 / kth
    }

    /// Relative standard error of [`Kmv::estimate`]: 1/√(k − 2) (the variance of (k − 1)/U with
    /// U the k-th of n uniform order statistics is about n²/(k − 2)), or 0 while exact.
    pub fn relative_error(&self) -> f64 {
        if self.is_exact() {
            0.0
        } else {
            1.0 / ((self.k - 2) as f64).sqrt()
        }
    }

    /// True while fewer than k distinct values were seen, so the estimate is an exact count.
    pub fn is_exact(&self) -> bool {
        // Values are pending only once `values` is full.
        self.values.len() < self.k
    }

    /// Only values below this can enter: the k-th smallest once full, else anything.
    fn limit(&self) -> u64 {
        match self.values.last() {
            Some(&max) if self.values.len() == self.k => max,
            _ => u64::MAX,
        }
    }

    /// Sorts, deduplicates and truncates `values` after a bulk insert (with nothing pending); the
    /// table no longer matches and is dropped until the next [`Kmv::insert_set`] needs it.
    fn normalize(&mut self) {
        self.values.sort_unstable();
        self.values.dedup();
        self.values.truncate(self.k);
        self.table.clear();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sketch::shingle::{ShingleKind, Shingler};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashSet;

    /// Word 3-shingle hashes (with repeats) of 200 documents of 300–1,500 words drawn from a
    /// 5,000-word vocabulary with Zipf (s = 1) frequencies.
    fn corpus() -> Vec<Vec<u64>> {
        let mut rng = StdRng::seed_from_u64(2024);
        let mut cumulative = Vec::with_capacity(5000);
        let mut total = 0.0;
        for rank in 1..=5000 {
            total += 1.0 / rank as f64;
            cumulative.push(total);
        }
        let mut shingler = Shingler::new(ShingleKind::Word, 3);
        (0..200)
            .map(|_| {
                let words = rng.random_range(300..1500);
                let text: Vec<String> = (0..words)
                    .map(|_| {
                        let u = rng.random::<f64>() * total;
                        format!("v{}", cumulative.partition_point(|&c| c < u))
                    })
                    .collect();
                let mut out = Vec::new();
                shingler.shingle(&text.join(" "), &mut out);
                out
            })
            .collect()
    }

    fn sketch_of(docs: &[Vec<u64>], k: usize) -> Kmv {
        let mut kmv = Kmv::new(k);
        for d in docs {
            kmv.insert_set(d);
        }
        kmv
    }

    /// The k smallest distinct values, the sketch's definition.
    fn reference(hashes: &[u64], k: usize) -> Vec<u64> {
        let mut all = hashes.to_vec();
        all.sort_unstable();
        all.dedup();
        all.truncate(k);
        all
    }

    #[test]
    fn chunked_filter_and_table_keep_the_k_smallest() {
        let mut rng = StdRng::seed_from_u64(7);
        // Under Miri, which runs about 10^4 times slower, 16 documents, enough to fill the
        // smaller sketches and reach the filter and the table.
        let (ks, docs): (&[usize], usize) = if cfg!(miri) {
            (&[3, 64], 16)
        } else {
            (&[3, 64, 1000], 300)
        };
        for &k in ks {
            // Documents drawn from a small pool of values (so most filtered values are kept
            // already), some from the top of the range (the table's empty marker included),
            // sizes around the chunk length.
            let pool: Vec<u64> = (0..5 * k)
                .map(|i| match i % 50 {
                    0 => u64::MAX - (i as u64 % 3),
                    _ => rng.random::<u64>() >> rng.random_range(0..8),
                })
                .collect();
            let mut kmv = Kmv::new(k);
            let mut seen = Vec::new();
            for doc in 0..docs {
                let len = rng.random_range(0..3 * CHUNK);
                let set: Vec<u64> = (0..len)
                    .map(|_| pool[rng.random_range(0..pool.len())])
                    .collect();
                kmv.insert_set(&set);
                seen.extend_from_slice(&set);
                assert_eq!(*kmv.kept(), reference(&seen, k), "k = {k}, doc {doc}");
                if doc == docs / 2 {
                    // A merge drops the table; the next insert rebuilds it.
                    kmv.merge(&Kmv::new(k));
                }
            }
            let (occupied, slots) = kmv.table.load();
            assert!(occupied >= k && 4 * occupied <= 3 * slots);
        }
        let mut top = Kmv::new(3);
        top.insert_set(&[u64::MAX, u64::MAX - 1, u64::MAX - 2, u64::MAX, 5, u64::MAX]);
        assert_eq!(*top.kept(), vec![5, u64::MAX - 2, u64::MAX - 1]);
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: 3,000 single inserts, each sorting the sketch, run natively.
    #[cfg_attr(miri, ignore)]
    fn counts_exactly_below_k() {
        let mut kmv = Kmv::default();
        for round in 0..3 {
            for h in 0..1000u64 {
                kmv.insert(h * (round + 1));
            }
        }
        // 0..1000, its even multiples up to 2,000 and multiples of 3 up to 3,000.
        let exact: HashSet<u64> = (0..1000u64).flat_map(|h| [h, 2 * h, 3 * h]).collect();
        assert_eq!(kmv.estimate(), exact.len() as f64);
        assert_eq!(kmv.relative_error(), 0.0);
        assert!(kmv.is_exact());
        assert_eq!(Kmv::new(1).k, 3);
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: a statistical test over a 180,000-word corpus, run natively.
    #[cfg_attr(miri, ignore)]
    fn estimates_distinct_shingles_of_a_zipf_corpus() {
        let docs = corpus();
        let exact = docs.iter().flatten().collect::<HashSet<_>>().len() as f64;
        for k in [DEFAULT_KMV_K, 16_384] {
            let kmv = sketch_of(&docs, k);
            let error = kmv.estimate() / exact - 1.0;
            println!(
                "k = {k}: exact {exact}, estimate {:.0}, error {:+.2} % (±{:.2} %)",
                kmv.estimate(),
                100.0 * error,
                100.0 * kmv.relative_error()
            );
            assert!(
                error.abs() <= 3.0 * kmv.relative_error(),
                "k = {k}: {error}"
            );
            // 3 % is 1.9 standard errors at k = 4096 but 3.8 at k = 16,384.
            if k == 16_384 {
                assert!(error.abs() <= 0.03, "{error}");
            }
        }
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: merges of sketches of a 180,000-word corpus, run natively.
    #[cfg_attr(miri, ignore)]
    fn merge_order_does_not_change_the_sketch() {
        let docs = corpus();
        let sequential = sketch_of(&docs, 1024);
        let parts: Vec<Kmv> = (0..4)
            .map(|t| {
                let mine: Vec<Vec<u64>> = docs.iter().skip(t).step_by(4).cloned().collect();
                sketch_of(&mine, 1024)
            })
            .collect();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut merged = Kmv::new(1024);
            for i in order {
                merged.merge(&parts[i]);
            }
            assert_eq!(merged, sequential, "order {order:?}");
        }
        let (mut left, mut right) = (parts[0].clone(), parts[2].clone());
        left.merge(&parts[1]);
        right.merge(&parts[3]);
        right.merge(&left);
        assert_eq!(right, sequential);
        assert_eq!(right.estimate().to_bits(), sequential.estimate().to_bits());
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: sketches of a 180,000-word corpus, run natively.
    #[cfg_attr(miri, ignore)]
    fn duplicates_and_insert_path_do_not_change_the_estimate() {
        let docs = corpus();
        let once = sketch_of(&docs, 1024);
        let mut twice = once.clone();
        for d in docs.iter().rev() {
            twice.insert_set(d);
        }
        assert_eq!(twice, once);
        let mut one_by_one = Kmv::new(1024);
        docs.iter().flatten().for_each(|&h| one_by_one.insert(h));
        assert_eq!(one_by_one, once);
        assert!(!once.is_exact());
    }
}
