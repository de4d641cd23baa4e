//! Bottom-k sketches (`--sketch bottom-k`): the k smallest values of a document's shingle set
//! under one seeded random permutation, and the Jaccard estimate from two of them.
//!
//! Where K-permutation MinHash keeps one minimum under each of K hash functions, bottom-k keeps
//! the k smallest under a single one: one mix per shingle instead of K, and a sample drawn
//! without replacement, so its variance is at most MinHash's J(1−J)/k. The permutation is
//! `mix64(h ^ key)` with `key` drawn from the seed by SplitMix64; `mix64` is a bijection, so
//! distinct shingles keep distinct values and a set smaller than k is kept whole.
//!
//! Sketches are sorted ascending `Vec<u64>`; two of them must come from the same seed. This
//! module does not band or bucket sketches; it builds, stores ([`Sketches`]) and compares them.

use crate::sketch::minhash::{mix64, splitmix64};

#[cfg(test)]
/// The sketch of a set of shingle hashes: its k smallest distinct values under the seeded
/// permutation, ascending (the whole set, permuted, when it has fewer than k distinct values).
pub fn sketch(set: &[u64], k: usize, seed: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(k.min(set.len()));
    sketch_into(set, k, seed, &mut out, &mut Vec::new());
    out
}

/// [`sketch`] into `out` (cleared first), with `scratch` reused between calls so a thread
/// allocates nothing per document. The set need not be sorted; repeated hashes are tolerated.
/// Linear time: a selection (`select_nth_unstable`) then a sort of the k selected values.
pub fn sketch_into(set: &[u64], k: usize, seed: u64, out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    out.clear();
    if k == 0 {
        return;
    }
    let mut state = seed ^ 0x626F_7474_6F6D_6B21; // "bottomk!"
    let key = splitmix64(&mut state);
    scratch.clear();
    scratch.extend(set.iter().map(|&h| mix64(h ^ key)));
    if scratch.len() > k {
        scratch.select_nth_unstable(k - 1);
        out.extend_from_slice(&scratch[..k]);
        out.sort_unstable();
        out.dedup();
        if out.len() < k {
            // Repeated input hashes took some of the k places: fall back to a full sort.
            scratch.sort_unstable();
            scratch.dedup();
            out.clear();
            out.extend(scratch.iter().take(k));
        }
    } else {
        out.extend_from_slice(scratch);
        out.sort_unstable();
        out.dedup();
    }
}

/// Jaccard estimate from two sketches made with the same seed and at least `k` values each:
/// |S ∩ A ∩ B| / |S| where S = bottom-k(A ∪ B), the k smallest values of the union of the
/// sketches. A value of S lies in both sets exactly when it is in both sketches, since it is
/// then among the k smallest of each. One merge, O(k).
///
/// When both sketches hold fewer than k values they are the whole sets, and the estimate is the
/// exact Jaccard over their whole union (even when that union exceeds k). Two empty sets give
/// 1.0 and one empty set 0.0, as [`crate::verify::jaccard`] does.
pub fn estimate(a: &[u64], b: &[u64], k: usize) -> f64 {
    let limit = if a.len() < k && b.len() < k {
        usize::MAX
    } else {
        k
    };
    let (mut i, mut j) = (0, 0);
    let (mut taken, mut common) = (0usize, 0usize);
    while taken < limit && (i < a.len() || j < b.len()) {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                common += 1;
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => i += 1,
            (Some(_), None) => i += 1,
            _ => j += 1,
        }
        taken += 1;
    }
    if taken == 0 {
        return 1.0;
    }
    common as f64 / taken as f64
}

#[cfg(test)]
/// Standard error of the estimate at true similarity `j` with `k` values: sqrt(j(1−j)/k).
///
/// S is a sample of k elements drawn without replacement from A ∪ B (size u), and the count of
/// S ∩ A ∩ B is hypergeometric with variance k·j(1−j)·(u−k)/(u−1). That is at most the binomial
/// variance k·j(1−j) of K-permutation MinHash, so this bound holds for both, and is tight when
/// the union is much larger than k. (When both sets are kept whole the estimate is exact.)
pub fn standard_error(j: f64, k: usize) -> f64 {
    let j = j.clamp(0.0, 1.0);
    (j * (1.0 - j) / k.max(1) as f64).sqrt()
}

/// Every document's sketch in one flat vector: a slot of k + 1 values per document, the
/// sketch's length then its values. So a scan with bottom-k takes (k + 1)·8 bytes per document
/// and one without takes none ([`Sketches::default`]).
#[derive(Debug, Default)]
pub struct Sketches {
    k: usize,
    slots: Vec<u64>,
}

impl Sketches {
    #[cfg(test)]
    /// Room for `docs` sketches of up to `k` values, all empty.
    pub fn new(docs: usize, k: usize) -> Self {
        Sketches {
            k,
            slots: vec![0; docs * (k + 1)],
        }
    }

    /// Sketches already laid out as [`Sketches::fill`] writes them, `k + 1` values a document.
    pub fn from_slots(k: usize, slots: Vec<u64>) -> Self {
        Sketches { k, slots }
    }

    /// True when sketches are kept.
    pub fn is_on(&self) -> bool {
        !self.slots.is_empty()
    }

    #[cfg(test)]
    /// One mutable slot per document, in document order, for [`Sketches::fill`].
    pub fn slots_mut(&mut self) -> rayon::slice::ChunksMut<'_, u64> {
        use rayon::prelude::*;
        self.slots.par_chunks_mut(self.k + 1)
    }

    /// Writes a sketch of at most k values into its slot.
    pub fn fill(slot: &mut [u64], sketch: &[u64]) {
        slot[0] = sketch.len() as u64;
        slot[1..=sketch.len()].copy_from_slice(sketch);
    }

    /// The sketch of document `d`.
    pub fn get(&self, d: u32) -> &[u64] {
        let slot = &self.slots[d as usize * (self.k + 1)..(d as usize + 1) * (self.k + 1)];
        &slot[1..=slot[0] as usize]
    }

    /// Copies document `from`'s sketch to `to` (a byte-identical copy that was sketched).
    pub fn copy(&mut self, from: u32, to: u32) {
        let w = self.k + 1;
        self.slots
            .copy_within(from as usize * w..(from as usize + 1) * w, to as usize * w);
    }

    /// The Jaccard estimate of documents `a` and `b` ([`estimate`]).
    pub fn estimate(&self, a: u32, b: u32) -> f64 {
        estimate(self.get(a), self.get(b), self.k)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sketch::minhash::{self, MinHasher, SketchKind};
    use crate::verify::jaccard;
    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    /// Two random sorted sets with `common` shared hashes and `only` in each alone.
    fn set_pair(rng: &mut StdRng, common: usize, only: usize) -> (Vec<u64>, Vec<u64>, f64) {
        let shared: Vec<u64> = (0..common).map(|_| rng.random()).collect();
        let mut a = shared.clone();
        let mut b = shared;
        a.extend((0..only).map(|_| rng.random::<u64>()));
        b.extend((0..only).map(|_| rng.random::<u64>()));
        a.sort_unstable();
        b.sort_unstable();
        (a, b, common as f64 / (common + 2 * only) as f64)
    }

    #[test]
    fn small_sets_give_exact_jaccard() {
        let mut rng = StdRng::seed_from_u64(1);
        for (common, only) in [(0, 5), (10, 20), (40, 50), (100, 27), (127, 0)] {
            let (a, b, _) = set_pair(&mut rng, common, only);
            let (sa, sb) = (sketch(&a, 128, 9), sketch(&b, 128, 9));
            assert_eq!(estimate(&sa, &sb, 128), jaccard(&a, &b));
        }
        assert_eq!(estimate(&sketch(&[], 8, 0), &sketch(&[], 8, 0), 8), 1.0);
        assert_eq!(estimate(&sketch(&[1, 2], 8, 0), &[], 8), 0.0);
        assert_eq!(jaccard(&[], &[]), 1.0);
    }

    #[test]
    fn sketch_keeps_the_k_smallest_permuted_values() {
        let set: Vec<u64> = (0..1000).collect();
        let s = sketch(&set, 50, 7);
        assert_eq!(s.len(), 50);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        let mut all = sketch(&set, 5000, 7);
        assert_eq!(all.len(), 1000);
        all.truncate(50);
        assert_eq!(s, all);
        assert_ne!(sketch(&set, 50, 8), s, "the seed changes the permutation");
        assert!(sketch(&set, 0, 7).is_empty());
    }

    #[test]
    fn sketch_is_independent_of_order_and_repeats() {
        let mut rng = StdRng::seed_from_u64(2);
        // 300 values under Miri, which runs about 10^4 times slower.
        let n = if cfg!(miri) { 300 } else { 2000 };
        let set: Vec<u64> = (0..n).map(|_| rng.random()).collect();
        let mut shuffled = set.clone();
        shuffled.extend_from_slice(&set[..n / 4]);
        shuffled.shuffle(&mut rng);
        let mut sorted = set;
        sorted.sort_unstable();
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for k in [1, 64, 128, n - 1, n, n + 1000] {
            sketch_into(&shuffled, k, 3, &mut out, &mut scratch);
            assert_eq!(out, sketch(&sorted, k, 3), "k = {k}");
        }
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: a statistical test over 800 set pairs, run natively.
    #[cfg_attr(miri, ignore)]
    fn estimates_are_unbiased_and_within_error_beside_kperm_minhash() {
        let k = 128;
        let trials = 200;
        let mut rng = StdRng::seed_from_u64(42);
        let (mut ma, mut mb) = (vec![0u32; k], vec![0u32; k]);
        let mut scratch = Vec::new();
        // Unions of 1,000 shingles with J = 0.2, 0.5, 0.8, 0.95.
        for (common, only) in [(200, 400), (500, 250), (800, 100), (950, 25)] {
            let (mut bias, mut sq_bottom, mut sq_kperm) = (0.0, 0.0, 0.0);
            let mut j = 0.0;
            for t in 0..trials {
                let (a, b, exact) = set_pair(&mut rng, common, only);
                j = exact;
                let e = estimate(&sketch(&a, k, t), &sketch(&b, k, t), k);
                // Four standard errors, plus one value of rounding.
                let bound = 4.0 * standard_error(j, k) + 1.0 / k as f64;
                assert!((e - j).abs() <= bound, "J = {j}, trial {t}: {e}");
                bias += e - j;
                sq_bottom += (e - j) * (e - j);
                let hasher = MinHasher::new(SketchKind::Kperm, k, t);
                hasher.sketch(&a, &mut ma, &mut scratch);
                hasher.sketch(&b, &mut mb, &mut scratch);
                let m = minhash::estimate(&ma, &mb);
                sq_kperm += (m - j) * (m - j);
            }
            let mean_error = bias / trials as f64;
            let rmse_bottom = (sq_bottom / trials as f64).sqrt();
            let rmse_kperm = (sq_kperm / trials as f64).sqrt();
            println!(
                "J = {j:.2}: bottom-k RMSE {rmse_bottom:.4} (mean error {mean_error:+.4}), \
                 kperm RMSE {rmse_kperm:.4}, sqrt(J(1-J)/k) {:.4}",
                standard_error(j, k)
            );
            assert!(mean_error.abs() < 0.01, "J = {j}: biased by {mean_error}");
            // Each RMSE should be about one standard error; 1.5 leaves room for 200 samples.
            for rmse in [rmse_bottom, rmse_kperm] {
                assert!(rmse <= 1.5 * standard_error(j, k), "J = {j}: {rmse}");
            }
        }
    }

    #[test]
    // Under Miri's Stacked Borrows, rayon's thread pool stops in crossbeam-epoch, which is
    // known not to follow those rules (crossbeam-rs/crossbeam#1181; crossbeam checks itself
    // under Tree Borrows). This test has no unsafe code of its own.
    #[cfg_attr(miri, ignore)]
    fn stored_sketches_round_trip_and_copy() {
        use rayon::prelude::*;
        let mut store = Sketches::new(3, 4);
        assert!(store.is_on() && !Sketches::default().is_on());
        let sketches = [
            sketch(&[1, 2, 3, 4, 5, 6], 4, 0),
            sketch(&[9], 4, 0),
            vec![],
        ];
        store
            .slots_mut()
            .zip(&sketches)
            .for_each(|(slot, s)| Sketches::fill(slot, s));
        assert_eq!(store.get(0), &sketches[0][..]);
        assert_eq!(store.get(1), &sketches[1][..]);
        assert!(store.get(2).is_empty());
        store.copy(0, 2);
        assert_eq!(store.get(2), store.get(0));
        assert_eq!(store.estimate(0, 2), 1.0);
    }

    #[test]
    fn standard_error_is_the_binomial_bound() {
        assert!((standard_error(0.5, 100) - 0.05).abs() < 1e-12);
        assert_eq!(standard_error(1.0, 128), 0.0);
        assert_eq!(standard_error(0.0, 128), 0.0);
    }
}
