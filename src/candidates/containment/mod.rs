//! Containment candidates (`--containment`): documents mostly contained in a larger one, found
//! by banding per pair of size classes (after LSH Ensemble, Zhu et al., VLDB 2016).
//!
//! The containment of A in B is C = |A∩B| / |A|, A the document with fewer distinct shingles.
//! Jaccard banding at the threshold misses excerpts: an excerpt of 30 % of a document has
//! C = 1 but J ≈ 0.3. With q = |B| / |A| ≥ 1, J = C / (1 + q − C), so a pair with C ≥ t has
//! J ≥ t / (1 + q − t): the lower Jaccard a pair can have grows with the size ratio.
//!
//! So documents are put in geometric size classes, class c holding the sets of 2^c to
//! 2^(c+1) − 1 distinct shingles, and each class is banded against itself and the
//! [`MAX_OFFSET`](crate::config::containment::MAX_OFFSET) classes above it. For classes d apart, q < 2^(d+1); capped at the documented
//! range [`MAX_RATIO`], that gives the lowest Jaccard J*_d of a pair at the threshold, and
//! offset d takes the longest bands (r rows, ⌊K/r⌋ bands) for which such a pair is a candidate
//! with probability at least [`TARGET_RECALL`](crate::config::containment::TARGET_RECALL) (or r = 1 when none is). A pair with q ≤
//! [`MAX_RATIO`] has classes at most [`MAX_OFFSET`](crate::config::containment::MAX_OFFSET) apart (2^(d−1) < q), so
//! [`Scheme::recall`], the least of the offsets' candidate probabilities at J*_d, bounds its
//! chance of being a candidate from below.
//!
//! There is one table per (offset, band). Offset 0's tables are kept as buckets of one class
//! (the key salted with it): a family of m near-copies of one size is m documents to a bucket,
//! whose pairs verification takes from the buckets when their turn comes, not m²/2 pairs listed
//! and sorted here.
//! For d > 0, a document enters table (d, band) once for the class pair (c, c + d) it is the
//! lower member of and once for (c − d, c), the key salted with the lower class, so only
//! documents of the same class pair share a bucket, and a bucket's candidates are the pairs
//! across its two classes (two documents of one class are offset 0's to judge). A pair agrees
//! on many tables, so [`candidates`] gathers each document's partners over all of them, each
//! distinct pair once, and applies the estimate prefilter then. Exact verification takes those
//! plausible pairs as two-document buckets after offset 0's, applies the prefilter to pairs of
//! offset 0's buckets itself, and computes C on the real shingle sets, batch by batch, as for
//! Jaccard.
//!
//! Clusters are connected components, reported with a spanning set of pairs: the one that
//! taking every candidate pair in (lo, hi) order, and keeping those that join two components,
//! gives (verification's `order` module).

mod gather;

use crate::candidates::buckets::Buckets;
use crate::config::banding::estimate_floor;

pub use crate::config::containment::{class, jaccard_floor, Scheme, MAX_RATIO};
pub use gather::candidates;

/// Containment of the smaller set in the larger implied by Jaccard `j` and the two sizes
/// (|A∩B| = j·(|A| + |B|) / (1 + j)), at most 1.
pub fn containment_from_jaccard(j: f64, a: u64, b: u64) -> f64 {
    let small = a.min(b).max(1) as f64;
    (j * (a + b) as f64 / ((1.0 + j) * small)).min(1.0)
}

/// The exact-verification prefilter: false when the signature estimate `estimate` (of `k`
/// values) rules out containment ≥ `t` for sets of sizes `a` and `b`, with the same 10⁻⁶ miss
/// chance as for Jaccard: the floor is that of the lowest Jaccard the pair could have,
/// t / (1 + q − t).
pub fn plausible(estimate: f64, a: u64, b: u64, k: usize, t: f64) -> bool {
    let q = a.max(b) as f64 / a.min(b).max(1) as f64;
    estimate >= estimate_floor(jaccard_floor(t, q), k)
}

/// Plausible pairs of two size classes verified together: those candidate pairs, in (lo, hi)
/// order, are cut into tables of this many two-document buckets. Verification checks a table's
/// pairs in parallel against the components as they stood before it, and skips a pair an
/// earlier table joined.
pub const PAIRS_PER_TABLE: usize = 4096;

/// What the candidate search found.
#[derive(Debug, Default)]
pub struct Candidates {
    /// Offset 0's tables (one per band of its banding, buckets of three documents or more of
    /// one size class), then the plausible
    /// candidate pairs of two classes and the pairs of offset 0's buckets of two documents,
    /// [`PAIRS_PER_TABLE`] two-document buckets per table.
    pub tables: Vec<Buckets>,
    /// Distinct candidate pairs of two classes the signature estimate ruled out (in no table).
    pub implausible: u64,
    /// Distinct candidate pairs of two classes it kept.
    pub across: u64,
}

/// Candidate pairs from which [`crowding_note`] speaks, if they are also a quarter of all pairs.
pub const CROWDED_PAIRS: u64 = 1_000_000;

/// The scan's note when the candidates are most pairs of `units` distinct documents: the
/// single-value bands then separate nothing, and the scan's time grows with the square of the
/// number of documents (with `--shingle char` on 10,000 generated texts of one language, 96 % of
/// the pairs of distinct documents are candidates; with word shingles 0.04 %).
pub fn crowding_note(candidates: u64, units: usize) -> Option<String> {
    let all = units as u64 * (units as u64).saturating_sub(1) / 2;
    (candidates >= CROWDED_PAIRS && candidates.saturating_mul(4) >= all).then(|| {
        format!(
            "--containment: {candidates} candidate pairs, {:.0} % of all pairs of documents: \
             the single-value bands that find excerpts down to 1/{MAX_RATIO} of their source do \
             not separate these documents (with --shingle char, texts of one language share \
             many q-grams), so the time grows with the square of their number; word shingles \
             separate them far better",
            100.0 * candidates as f64 / all.max(1) as f64
        )
    })
}

/// Reorders `members` (already in `--keep` order) so the largest set comes first: the
/// representative of a containment cluster is its container. Stable, so ties keep `--keep`
/// order.
pub fn largest_first(members: &mut [u32], size: impl Fn(u32) -> u64) {
    members.sort_by_key(|&d| std::cmp::Reverse(size(d)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::banding::Banding;
    use crate::config::containment::{MAX_OFFSET, TARGET_RECALL};
    use crate::sketch::minhash::splitmix64;

    #[test]
    fn classes_are_powers_of_two() {
        assert_eq!(class(1), 0);
        assert_eq!(class(2), 1);
        assert_eq!(class(3), 1);
        assert_eq!(class(1023), 9);
        assert_eq!(class(1024), 10);
        // The documented offset: 2^(d−1) < MAX_RATIO ≤ 2^d.
        assert!(f64::from(1u32 << (MAX_OFFSET - 1)) < MAX_RATIO);
        assert!(f64::from(1u32 << MAX_OFFSET) >= MAX_RATIO);
    }

    #[test]
    fn jaccard_floor_is_the_jaccard_of_a_contained_pair() {
        // An excerpt of 30 % of a document: |A| = 30, |B| = 100, A ⊂ B, J = 30/100.
        assert!((jaccard_floor(1.0, 100.0 / 30.0) - 0.3).abs() < 1e-12);
        // 24 of 30 shared (C = 0.8) with 100: J = 24 / 106.
        assert!((jaccard_floor(0.8, 100.0 / 30.0) - 24.0 / 106.0).abs() < 1e-12);
        assert!((containment_from_jaccard(24.0 / 106.0, 30, 100) - 0.8).abs() < 1e-12);
        assert_eq!(containment_from_jaccard(1.0, 5, 5), 1.0);
    }

    #[test]
    fn recall_at_the_threshold_is_the_least_over_every_ratio_in_range() {
        for t in [0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
            let s = Scheme::new(t, 128);
            let mut least = f64::INFINITY;
            for (d, b) in (0u32..).zip(&s.offsets) {
                assert!(b.bands * b.rows <= 128, "{b:?}");
                // Every ratio a pair of classes d apart can have within the range.
                let lo = if d == 0 {
                    1.0
                } else {
                    f64::from(1u32 << (d - 1))
                };
                let hi = f64::from(1u32 << (d + 1)).min(MAX_RATIO);
                for i in 0..=20 {
                    let q = lo + (hi - lo) * f64::from(i) / 20.0;
                    let p = s.candidate_probability(q, d);
                    assert!(p >= s.recall() - 1e-12, "t={t} d={d} q={q}: {p}");
                    least = least.min(p);
                }
            }
            assert!((least - s.recall()).abs() < 1e-12, "t={t}");
            // The figures docs/how-it-works.md gives for K = 128: at least 0.999 from t = 0.6 up, 0.998 at 0.5.
            let documented = if t >= 0.6 { TARGET_RECALL } else { 0.998 };
            assert!(
                s.recall() >= documented,
                "t={t}: {s:?} gives {}",
                s.recall()
            );
        }
        // The defaults: 2 rows for one class, single values for classes further apart.
        let s = Scheme::new(0.8, 128);
        assert_eq!(s.offsets[0], Banding { bands: 64, rows: 2 });
        assert_eq!(
            s.offsets[1],
            Banding {
                bands: 128,
                rows: 1
            }
        );
        assert!(s.recall() > 0.9998, "{}", s.recall());
    }

    #[test]
    fn a_short_signature_reports_the_recall_it_can_give() {
        // K = 16 cannot reach the target at q = 10: one value per band is the best it can do.
        let s = Scheme::new(0.8, 16);
        let worst = Scheme::worst_jaccard(0.8, MAX_OFFSET);
        assert_eq!(
            s.offsets[MAX_OFFSET as usize],
            Banding { bands: 16, rows: 1 }
        );
        assert!((s.recall() - (1.0 - (1.0 - worst).powi(16))).abs() < 1e-12);
        assert!(s.recall() < TARGET_RECALL);
    }

    #[test]
    fn crowding_is_noted_from_a_million_candidates_that_are_a_quarter_of_all_pairs() {
        // 10,000 documents: 49,995,000 pairs.
        assert_eq!(crowding_note(999_999, 10_000), None);
        assert_eq!(crowding_note(12_000_000, 10_000), None);
        let note = crowding_note(44_494_288, 10_000).unwrap_or_default();
        assert!(note.contains("44494288 candidate pairs, 89 %"), "{note}");
        assert!(crowding_note(1_000_000, 2_000).is_some());
        assert_eq!(crowding_note(0, 0), None);
    }

    #[test]
    fn simulated_pairs_at_the_threshold_are_candidates_as_often_as_the_bound_says() {
        // Signatures of pairs at the worst Jaccard of the widest offset, each value agreeing
        // with probability J*; the rate of pairs with an agreeing band is at least the bound.
        let scheme = Scheme::new(0.8, 128);
        let d = MAX_OFFSET;
        let j = Scheme::worst_jaccard(0.8, d);
        let b = scheme.offsets[d as usize];
        let mut state = 3;
        let trials = 2000;
        let mut hits = 0;
        for _ in 0..trials {
            let agree: Vec<bool> = (0..128)
                .map(|_| ((splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64) < j)
                .collect();
            hits += usize::from(
                (0..b.bands).any(|i| agree[i * b.rows..(i + 1) * b.rows].iter().all(|&x| x)),
            );
        }
        assert!(hits as f64 / trials as f64 >= 0.995, "{hits} of {trials}");
    }

    #[test]
    fn largest_first_keeps_keep_order_among_equals() {
        let sizes = [5u64, 9, 9, 1];
        let mut m = vec![3, 2, 0, 1];
        largest_first(&mut m, |d| sizes[d as usize]);
        assert_eq!(m, vec![2, 1, 0, 3]);
    }
}
