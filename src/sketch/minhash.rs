//! MinHash signatures: K 32-bit values per document whose agreement rate estimates Jaccard.
//!
//! Two sketches of the same shape, chosen with `--sketch`:
//! - `oph` (default): one-permutation hashing with optimal densification (Shrivastava, ICML
//!   2017). Each shingle hash is permuted once under the seed ([`oph_permute`]: xor, one
//!   multiply, one xor-shift; shingle hashes are already full-avalanche hashes, so a second
//!   SplitMix64 finalizer bought nothing); its high 32 bits pick one of K bins and its
//!   low 32 bits compete for that bin's minimum. Empty bins borrow the value of a bin chosen by
//!   a seeded hash of (bin, attempt), the same for every document, so equal sets still give equal
//!   signatures and the estimator stays unbiased. Cost: O(1) per shingle plus O(K) per document.
//! - `kperm`: the classic K independent hash functions. Lane i maps a shingle hash x to
//!   `(a_i·x + b_i) >> 32` (multiply-add-shift with random 64-bit a_i odd and b_i drawn by
//!   SplitMix64 from the seed). Cost: K multiplies per distinct shingle, laid out so the compiler
//!   vectorizes the lane loop; AVX2 and AVX-512 builds of it are chosen at run time.
//!
//! Values are u32, not u64: 128 lanes take 512 bytes per document, and a 2^-32 chance that two
//! different minima agree adds nothing measurable to the estimate's error (about 1/√K).

use crate::sketch::kperm;
// The mixers, where callers have always found them.
pub use crate::sketch::hash::{mix64, splitmix64};

/// Which MinHash sketch to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SketchKind {
    /// One-permutation hashing with optimal densification.
    Oph,
    /// K independent hash functions.
    Kperm,
}

impl SketchKind {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            SketchKind::Oph => "oph",
            SketchKind::Kperm => "kperm",
        }
    }
}

const EMPTY: u32 = u32::MAX;

/// Copies of the bins an OPH sketch fills in turn (see `MinHasher::oph`).
const COPIES: usize = 4;

/// OPH's seeded permutation of a shingle hash: a bijection (so distinct shingles stay distinct)
/// whose high half depends on every input bit through the multiply, and whose low half takes
/// the high half back in through the xor-shift.
#[inline(always)]
pub fn oph_permute(x: u64, seed: u64) -> u64 {
    let h = (x ^ seed).wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^ (h >> 32)
}

/// A seeded MinHash family of `k` values.
#[derive(Clone, Debug)]
pub struct MinHasher {
    kind: SketchKind,
    k: usize,
    seed: u64,
    mul: Vec<u64>,
    add: Vec<u64>,
}

impl MinHasher {
    /// The family for `k >= 1` values under `seed`.
    pub fn new(kind: SketchKind, k: usize, seed: u64) -> Self {
        let mut state = seed ^ 0x6D69_6E68_6173_6821; // "minhash!"
        let (mut mul, mut add) = (Vec::new(), Vec::new());
        if kind == SketchKind::Kperm {
            for _ in 0..k {
                mul.push(splitmix64(&mut state) | 1);
                add.push(splitmix64(&mut state));
            }
        }
        let seed = splitmix64(&mut state);
        MinHasher {
            kind,
            k,
            seed,
            mul,
            add,
        }
    }

    /// Which sketch this family computes.
    pub fn kind(&self) -> SketchKind {
        self.kind
    }

    /// Number of values in a signature.
    pub fn len(&self) -> usize {
        self.k
    }

    /// Always false: a family has at least one value.
    pub fn is_empty(&self) -> bool {
        self.k == 0
    }

    /// Writes the signature of the shingle hashes into `out` (`out.len() == k`). The hashes may
    /// repeat and need not be sorted; they must not be empty. `scratch` is reused between calls.
    pub fn sketch(&self, shingles: &[u64], out: &mut [u32], scratch: &mut Vec<u32>) {
        debug_assert_eq!(out.len(), self.k);
        out.fill(EMPTY);
        match self.kind {
            SketchKind::Kperm => kperm::min_lanes(&self.mul, &self.add, shingles, out),
            SketchKind::Oph => self.oph(shingles, out, scratch),
        }
    }

    fn oph(&self, shingles: &[u64], out: &mut [u32], scratch: &mut Vec<u32>) {
        let k = self.k;
        // Shingles take turns over COPIES copies of the bins, merged at the end (min does not
        // care in what order): with one copy, a shingle often lands in a bin one of the last
        // few dozen shingles, still in flight, also wrote (128 bins), and its load waited on
        // that store. The filled bins are counted once at the end, not per shingle.
        scratch.clear();
        scratch.resize(COPIES * k, EMPTY);
        if k.is_power_of_two() && k > 1 {
            // The same bins with a shift for the multiply: for k = 2^m, ((h >> 32) · k) >> 32
            // is h >> (64 − m). One multiply a shingle instead of two (the default K = 128).
            let shift = 64 - k.trailing_zeros();
            self.oph_fill(shingles, scratch, |h| (h >> shift) as usize);
        } else {
            self.oph_fill(shingles, scratch, |h| self.bin_of(h));
        }
        let (a, rest) = scratch.split_at(k);
        let (b, rest) = rest.split_at(k);
        let (c, d) = rest.split_at(k);
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = a[i].min(b[i]).min(c[i]).min(d[i]);
        }
        let mut filled = out.iter().filter(|&&v| v != EMPTY).count();
        if filled < k && shingles.iter().any(|&x| self.oph_bin(x).1 == EMPTY) {
            // A bin whose least value is u32::MAX looks empty but was filled, and filled bins
            // decide whether to densify: count them exactly (a document with an empty bin has
            // few shingles, and a value of u32::MAX is a 2^-32 event, so this is rare and cheap).
            let mut seen = vec![false; k];
            shingles
                .iter()
                .for_each(|&x| seen[self.oph_bin(x).0] = true);
            filled = seen.iter().filter(|&&s| s).count();
        }
        if filled < k && filled > 0 {
            self.densify(out, scratch);
        }
    }

    /// The least value of each bin over the shingles, in the COPIES copies of the bins in
    /// `scratch`; `bin` is [`MinHasher::bin_of`] or the same computed otherwise.
    #[inline(always)]
    fn oph_fill(&self, shingles: &[u64], scratch: &mut [u32], bin: impl Fn(u64) -> usize) {
        let k = self.k;
        let (a, rest) = scratch.split_at_mut(k);
        let (b, rest) = rest.split_at_mut(k);
        let (c, d) = rest.split_at_mut(k);
        let quads = shingles.chunks_exact(COPIES);
        let tail = quads.remainder();
        for q in quads {
            for (&x, bins) in q.iter().zip([&mut *a, &mut *b, &mut *c, &mut *d]) {
                let h = oph_permute(x, self.seed);
                let i = bin(h);
                bins[i] = bins[i].min(h as u32);
            }
        }
        for &x in tail {
            let h = oph_permute(x, self.seed);
            let i = bin(h);
            a[i] = a[i].min(h as u32);
        }
    }

    /// The OPH bin of a permuted hash: Lemire's multiply-shift maps its high half uniformly
    /// onto 0..k without a division.
    #[inline(always)]
    fn bin_of(&self, h: u64) -> usize {
        (((h >> 32) * self.k as u64) >> 32) as usize
    }

    /// The OPH bin and value of a shingle hash.
    #[inline(always)]
    fn oph_bin(&self, x: u64) -> (usize, u32) {
        let h = oph_permute(x, self.seed);
        (self.bin_of(h), h as u32)
    }

    /// Optimal densification: an empty bin takes the value of the first non-empty bin in its own
    /// seeded sequence of random bins. Only originally non-empty bins are borrowed from.
    fn densify(&self, out: &mut [u32], original: &mut Vec<u32>) {
        original.clear();
        original.extend_from_slice(out);
        let k = self.k as u64;
        for (bin, slot) in out.iter_mut().enumerate() {
            if original[bin] != EMPTY {
                continue;
            }
            let mut state = self.seed ^ ((bin as u64) << 32);
            loop {
                let pick = ((splitmix64(&mut state) >> 32) * k) >> 32;
                let v = original[pick as usize];
                if v != EMPTY {
                    *slot = v;
                    break;
                }
            }
        }
    }
}

/// Fraction of equal values: the MinHash estimate of Jaccard similarity.
pub fn estimate(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    equal as f64 / a.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two random sets with a known Jaccard similarity: `common` shared, `only` in each alone.
    fn set_pair(state: &mut u64, common: usize, only: usize) -> (Vec<u64>, Vec<u64>, f64) {
        let shared: Vec<u64> = (0..common).map(|_| splitmix64(state)).collect();
        let mut a = shared.clone();
        let mut b = shared;
        a.extend((0..only).map(|_| splitmix64(state)));
        b.extend((0..only).map(|_| splitmix64(state)));
        let j = common as f64 / (common + 2 * only) as f64;
        (a, b, j)
    }

    fn check_estimates(kind: SketchKind) {
        let k = 128;
        let mut state = 42;
        let mut scratch = Vec::new();
        let (mut sa, mut sb) = (vec![0u32; k], vec![0u32; k]);
        let mut total_sq_err = 0.0;
        let trials = 200;
        for t in 0..trials {
            let hasher = MinHasher::new(kind, k, t);
            let common = 50 + (t as usize * 37) % 900;
            let only = (t as usize * 13) % 300;
            let (a, b, j) = set_pair(&mut state, common, only);
            hasher.sketch(&a, &mut sa, &mut scratch);
            hasher.sketch(&b, &mut sb, &mut scratch);
            let e = estimate(&sa, &sb);
            let sd = (j * (1.0 - j) / k as f64).sqrt();
            // 5 standard deviations, plus one lane of rounding.
            assert!(
                (e - j).abs() <= 5.0 * sd + 1.0 / k as f64,
                "{kind:?} trial {t}: J={j} est={e}"
            );
            total_sq_err += (e - j) * (e - j);
        }
        // The mean squared error is no worse than K-permutation MinHash's J(1-J)/K (at most 1/4K),
        // with slack for the sample.
        assert!(total_sq_err / trials as f64 <= 1.5 / (4.0 * k as f64));
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: a statistical test over 200 set pairs, run natively.
    #[cfg_attr(miri, ignore)]
    fn oph_estimates_are_within_error_of_exact_jaccard() {
        check_estimates(SketchKind::Oph);
    }

    #[test]
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: a statistical test over 200 set pairs, run natively.
    #[cfg_attr(miri, ignore)]
    fn kperm_estimates_are_within_error_of_exact_jaccard() {
        check_estimates(SketchKind::Kperm);
    }

    #[test]
    fn equal_sets_give_equal_signatures_whatever_the_order_and_repeats() {
        for kind in [SketchKind::Oph, SketchKind::Kperm] {
            let h = MinHasher::new(kind, 64, 7);
            let mut scratch = Vec::new();
            let (mut a, mut b) = (vec![0; 64], vec![0; 64]);
            h.sketch(&[1, 2, 3, 4, 5], &mut a, &mut scratch);
            h.sketch(&[5, 4, 3, 3, 2, 1, 1], &mut b, &mut scratch);
            assert_eq!(a, b);
            assert!(
                a.iter().all(|&v| v != EMPTY),
                "{kind:?}: densified, no empty bin"
            );
            h.sketch(&[6, 7, 8, 9, 10], &mut b, &mut scratch);
            assert!(estimate(&a, &b) < 0.2);
        }
    }

    /// The OPH sketch one shingle at a time, counting filled bins as it goes: what
    /// `MinHasher::oph` must equal.
    fn oph_reference(h: &MinHasher, shingles: &[u64]) -> Vec<u32> {
        let mut out = vec![EMPTY; h.k];
        let mut filled = 0;
        for &x in shingles {
            let (bin, v) = h.oph_bin(x);
            filled += usize::from(out[bin] == EMPTY);
            out[bin] = out[bin].min(v);
        }
        if filled < h.k && filled > 0 {
            h.densify(&mut out, &mut Vec::new());
        }
        out
    }

    /// A shingle hash whose OPH value is u32::MAX (and bin the top bits of `hi` choose).
    fn max_value_shingle(h: &MinHasher, hi: u32) -> u64 {
        // Invert oph_permute: the xor-shift, then the odd multiplier (Newton's iteration).
        let target = (u64::from(hi) << 32) | u64::from(u32::MAX);
        let product = target ^ (target >> 32);
        let m = 0x9FB2_1C65_1E98_DF25u64;
        let mut inv = m;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(inv)));
        }
        let x = product.wrapping_mul(inv) ^ h.seed;
        assert_eq!(oph_permute(x, h.seed), target);
        x
    }

    #[test]
    fn oph_in_copies_equals_one_shingle_at_a_time() {
        let mut state = 9u64;
        let mut scratch = Vec::new();
        // Under Miri, which runs about 10^4 times slower, k up to 64 (densifying a sketch of k
        // bins with few filled takes about k² steps): both ways of picking a bin still run.
        let ks: &[usize] = if cfg!(miri) {
            &[1, 2, 7, 64]
        } else {
            &[1, 2, 7, 64, 128, 200, 256]
        };
        for &k in ks {
            let h = MinHasher::new(SketchKind::Oph, k, k as u64);
            let mut out = vec![0; k];
            // Under Miri, which runs about 10^4 times slower, up to 300 shingles.
            let lens: &[usize] = if cfg!(miri) {
                &[1, 2, 3, 5, 9, 50, 127, 300]
            } else {
                &[1, 2, 3, 5, 9, 50, 127, 300, 1000, 5000]
            };
            for &len in lens {
                let mut shingles: Vec<u64> = (0..len).map(|_| splitmix64(&mut state)).collect();
                shingles.extend_from_within(..len / 4);
                h.sketch(&shingles, &mut out, &mut scratch);
                assert_eq!(out, oph_reference(&h, &shingles), "k {k} len {len}");
                // A bin whose least value is u32::MAX is filled, not empty.
                for hi in [0, u32::MAX / 3, u32::MAX] {
                    let mut with_max = shingles.clone();
                    with_max.push(max_value_shingle(&h, hi));
                    h.sketch(&with_max, &mut out, &mut scratch);
                    assert_eq!(out, oph_reference(&h, &with_max), "k {k} len {len} {hi}");
                }
            }
        }
        // Every bin filled, one of them only by u32::MAX: no densification.
        let h = MinHasher::new(SketchKind::Oph, 4, 1);
        let mut shingles = vec![max_value_shingle(&h, 0)];
        let mut x = 0u64;
        while shingles.len() < 4 {
            x += 1;
            let bin = h.oph_bin(x).0;
            if bin != 0 && shingles.iter().all(|&s| h.oph_bin(s).0 != bin) {
                shingles.push(x);
            }
        }
        let mut out = vec![0; 4];
        h.sketch(&shingles, &mut out, &mut scratch);
        assert_eq!(out[0], u32::MAX);
        assert_eq!(out, oph_reference(&h, &shingles));
    }

    #[test]
    fn seed_changes_the_family() {
        let mut scratch = Vec::new();
        let (mut a, mut b) = (vec![0; 32], vec![0; 32]);
        MinHasher::new(SketchKind::Oph, 32, 1).sketch(&[1, 2, 3], &mut a, &mut scratch);
        MinHasher::new(SketchKind::Oph, 32, 2).sketch(&[1, 2, 3], &mut b, &mut scratch);
        assert_ne!(a, b);
    }
}
