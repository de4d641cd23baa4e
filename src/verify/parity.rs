//! Parity bitmaps: a sound, constant-time upper bound on the Jaccard similarity of two sets,
//! so that a bucket of many documents that are all a little too different from each other (a
//! family just below the threshold, or below `--min-similarity`) is not m² full set
//! comparisons.
//!
//! A set's bitmap has bit `h(e) mod b` flipped for each element `e`. Elements the two sets
//! share flip the same bits in both, so the XOR of two bitmaps is the parity bitmap of the
//! symmetric difference A Δ B, and each of its set bits needs at least one element there:
//! popcount(x_A ⊕ x_B) ≤ |A Δ B|. With |A ∩ B| = (|A| + |B| − |A Δ B|) / 2 that bounds the
//! intersection, and J = I / (|A| + |B| − I) grows with I, so the bound on J is sound: a pair it
//! rules out would fail exact verification too (the comparison is made in f64 as
//! [`super::measures::jaccard`] makes it, and correctly rounded division is monotone). The
//! results are those of checking every pair exactly; only the time changes. This is the bitmap
//! filter of Sandes, Teodoro and Melo (ICDE 2020).
//!
//! How much it rules out depends on b against |A Δ B|: near-copies whose difference is a few
//! hundred shingles give a popcount of about that many when b is some thousands of bits.

/// Bits of a bitmap, at least and at most: 512 bits is 8 words to compare; 16,384 bits (2 KiB
/// a document of the batch) keeps documents of up to some 10⁴ shingles apart.
const MIN_BITS: usize = 512;
const MAX_BITS: usize = 16_384;

/// The words of the bitmaps for sets of at most `largest` elements: about four bits an element,
/// within the bounds. A pair's popcount is about b/2 · (1 − e^(−2d/b)) for a difference of d
/// elements; at b = 4n that keeps it near d (no collisions to speak of) for the differences
/// that matter, those close to the threshold's ((1 − t)/(1 + t) · 2n: 0.22n at t = 0.8).
pub fn words_for(largest: usize) -> usize {
    largest
        .saturating_mul(4)
        .next_power_of_two()
        .clamp(MIN_BITS, MAX_BITS)
        / 64
}

/// The parity bitmap of `set` in `words` 64-bit words (a power of two).
pub fn bitmap(set: &[u64], words: usize) -> Box<[u64]> {
    let mut map = vec![0u64; words].into_boxed_slice();
    let bits = (words * 64) as u64;
    for &e in set {
        // Shingle hashes are already uniform; the multiply mixes the high bits in so that any
        // set of them spreads.
        let h = e.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let bit = h & (bits - 1);
        map[(bit / 64) as usize] ^= 1 << (bit % 64);
    }
    map
}

/// True when sets of `a_len` and `b_len` elements with bitmaps `a` and `b` cannot have a
/// Jaccard similarity of `threshold` or more.
pub fn rules_out(a_len: usize, b_len: usize, a: &[u64], b: &[u64], threshold: f64) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let total = (a_len + b_len) as u64;
    let inter = intersection_bound(a_len, b_len, a, b);
    let union = total - inter;
    union > 0 && (inter as f64 / union as f64) < threshold
}

/// True when sets of `a_len` and `b_len` elements with bitmaps `a` and `b` cannot have a
/// containment (of the smaller in the larger) of `threshold` or more: the same bound on
/// |A ∩ B|, over the smaller set's size. The ratio is computed as
/// [`super::measures::containment_at_least`] computes it, and it grows with |A ∩ B|, so a pair
/// ruled out here fails exact verification too.
pub fn rules_out_containment(
    a_len: usize,
    b_len: usize,
    a: &[u64],
    b: &[u64],
    threshold: f64,
) -> bool {
    let small = a_len.min(b_len) as u64;
    if a.len() != b.len() || small == 0 {
        return false;
    }
    let inter = (intersection_bound(a_len, b_len, a, b)).min(small);
    (inter as f64 / small as f64) < threshold
}

/// The most elements two sets of `a_len` and `b_len` elements with bitmaps `a` and `b` can
/// share: each set bit of their XOR needs an element of the symmetric difference.
fn intersection_bound(a_len: usize, b_len: usize, a: &[u64], b: &[u64]) -> u64 {
    let differ: u64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| u64::from((x ^ y).count_ones()))
        .sum();
    ((a_len + b_len) as u64).saturating_sub(differ) / 2
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::verify::measures::{containment_at_least, jaccard};

    fn set(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v.dedup();
        v
    }

    proptest! {
        /// Never rules out a pair that reaches the threshold, whatever the sets and the size.
        #[test]
        fn never_rules_out_a_pair_that_passes(
            common in proptest::collection::vec(any::<u64>(), 0..300),
            only_a in proptest::collection::vec(any::<u64>(), 0..60),
            only_b in proptest::collection::vec(any::<u64>(), 0..60),
            words in prop_oneof![Just(1usize), Just(8), Just(64)],
            threshold in 0.0f64..1.0,
        ) {
            let a = set([common.clone(), only_a].concat());
            let b = set([common, only_b].concat());
            let (ma, mb) = (bitmap(&a, words), bitmap(&b, words));
            if jaccard(&a, &b) >= threshold {
                prop_assert!(!rules_out(a.len(), b.len(), &ma, &mb, threshold));
            }
            if containment_at_least(&a, &b, threshold).is_some() {
                prop_assert!(!rules_out_containment(a.len(), b.len(), &ma, &mb, threshold));
            }
        }
    }

    #[test]
    fn near_copies_below_the_threshold_are_ruled_out() {
        // A base of 5,000 shingles; copy k drops its own 400 of them and adds 400 of its own:
        // two copies share 4,200 of 5,800, J ≈ 0.72.
        let base: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(0xA24B_AED4_963E_E407))
            .collect();
        let copy = |k: u64| {
            let dropped = 400 * k..400 * (k + 1);
            let kept = (0..5000u64).filter(|i| !dropped.contains(i));
            let mut s: Vec<u64> = kept.map(|i| base[i as usize]).collect();
            s.extend((0..400u64).map(|i| (k << 32 | i).wrapping_mul(0x9FB2_1C65_1E98_DF25)));
            set(s)
        };
        let words = words_for(5000);
        let (a, b) = (copy(1), copy(2));
        let j = jaccard(&a, &b);
        assert!(j < 0.8, "{j}");
        assert!(rules_out(
            a.len(),
            b.len(),
            &bitmap(&a, words),
            &bitmap(&b, words),
            0.8
        ));
        // The same pair at a threshold it reaches is kept.
        assert!(!rules_out(
            a.len(),
            b.len(),
            &bitmap(&a, words),
            &bitmap(&b, words),
            j
        ));
    }
}
