//! LSH banding for MinHash signatures: the choice of b bands × r rows (the keys are cut in
//! [`crate::candidates::keys`]).
//!
//! A pair with Jaccard similarity s agrees on one signature value with probability s, on a
//! whole band of r values with probability s^r, and so becomes a candidate (agrees on at least
//! one of b bands) with probability P(s) = 1 − (1 − s^r)^b. The S-curve's steep part sits near
//! s ≈ (1/b)^(1/r).
//!
//! Given only a threshold t, the banding minimises a weighted sum of two areas under that curve:
//! the false-positive mass ∫₀ᵗ P(s) ds and the false-negative mass ∫ₜ¹ (1 − P(s)) ds. A false
//! positive costs one extra comparison (of shingle sets, or of signatures with `--verify
//! estimate`) while a false negative is a duplicate never reported, so the default weights
//! missed pairs [`RECALL_WEIGHT`] times more heavily: the banding is tuned for recall, whatever
//! the verification.

/// How much more a false negative counts than a false positive when verification is exact.
/// At 256 the 128-value signature is cut into 19 bands × 6 rows for t = 0.8: a pair at J = 0.8
/// is a candidate with probability 0.997 (at 0.85: 0.9999), where equal weights (9 × 13) give
/// only 0.40.
pub const RECALL_WEIGHT: f64 = 256.0;

/// The largest chance that exact verification's prefilter drops a pair at the threshold.
pub const PREFILTER_MISS: f64 = 1e-6;

/// Exact verification skips a candidate whose signature estimate is below this floor, t − ε:
/// by Hoeffding's bound a pair of true similarity ≥ t has an estimate ≤ t − ε with probability
/// at most exp(−2Kε²), so ε = √(ln(1/[`PREFILTER_MISS`]) / 2K) (0.23 for K = 128) keeps that
/// chance below 10⁻⁶ per pair, while the many chance candidates far below t (character
/// shingles of one language overlap a lot) cost no set comparison.
pub fn estimate_floor(t: f64, k: usize) -> f64 {
    t - ((1.0 / PREFILTER_MISS).ln() / (2.0 * k.max(1) as f64)).sqrt()
}

/// A banding of a MinHash signature: `bands · rows <= K` values are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Banding {
    /// Number of bands b.
    pub bands: usize,
    /// Values per band r.
    pub rows: usize,
}

impl Banding {
    /// P(s) = 1 − (1 − s^r)^b: the probability that a pair of Jaccard similarity s becomes a
    /// candidate.
    pub fn candidate_probability(&self, s: f64) -> f64 {
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }

    /// The similarity where the S-curve is steepest, approximately (1/b)^(1/r).
    pub fn approximate_threshold(&self) -> f64 {
        (1.0 / self.bands as f64).powf(1.0 / self.rows as f64)
    }

    /// False-positive mass ∫₀ᵗ P(s) ds.
    pub fn false_positive_mass(&self, t: f64) -> f64 {
        integrate(|s| self.candidate_probability(s), 0.0, t)
    }

    /// False-negative mass ∫ₜ¹ (1 − P(s)) ds.
    pub fn false_negative_mass(&self, t: f64) -> f64 {
        integrate(|s| 1.0 - self.candidate_probability(s), t, 1.0)
    }

    /// The banding of at most `k` values that minimises
    /// `fp_mass + recall_weight · fn_mass` for threshold `t` (the first found, in order of
    /// increasing bands then rows, on a tie).
    ///
    /// Both masses are taken on the Simpson grids of [`integrate`], but P(s) is not evaluated
    /// afresh for each banding: for fixed rows r, (1 − s^r)^b follows from (1 − s^r)^(b−1) with
    /// one multiply per grid point. Evaluating both integrals for each of K = 128's ~700
    /// bandings took half a million `powi` calls: 3–5 ms before every scan, on one thread.
    pub fn choose(t: f64, k: usize, recall_weight: f64) -> Banding {
        let mut below = Curve::new(simpson_grid(0.0, t));
        let mut above = Curve::new(simpson_grid(t, 1.0));
        let k = k.max(1);
        // cost[bands − 1][rows − 1], filled rows by rows, then searched in the tie order.
        let mut cost: Vec<Vec<f64>> = (1..=k).map(|b| vec![0.0; k / b]).collect();
        for rows in 1..=k {
            below.next_rows();
            above.next_rows();
            for by_rows in cost.iter_mut().take(k / rows) {
                below.next_band();
                above.next_band();
                let fp = below.mass(|none| 1.0 - none);
                let fn_ = above.mass(|none| none);
                by_rows[rows - 1] = fp + recall_weight * fn_;
            }
        }
        let mut best = Banding { bands: 1, rows: k };
        let mut best_cost = f64::INFINITY;
        for (bands, by_rows) in (1..).zip(&cost) {
            for (rows, &c) in (1..).zip(by_rows) {
                if c < best_cost - 1e-12 {
                    best = Banding { bands, rows };
                    best_cost = c;
                }
            }
        }
        best
    }
}

/// P(s) on a grid, for [`Banding::choose`]: bands are added one at a time, rows too.
struct Curve {
    grid: SimpsonGrid,
    /// s^r.
    pow: Vec<f64>,
    /// 1 − s^r: one band disagrees.
    miss: Vec<f64>,
    /// (1 − s^r)^b = 1 − P(s): no band agrees.
    none: Vec<f64>,
    /// The integrand.
    values: Vec<f64>,
}

impl Curve {
    fn new(grid: SimpsonGrid) -> Curve {
        let n = grid.points.len();
        Curve {
            grid,
            pow: vec![1.0; n],
            miss: vec![0.0; n],
            none: vec![1.0; n],
            values: vec![0.0; n],
        }
    }

    /// One more row per band, and no bands yet.
    fn next_rows(&mut self) {
        for ((p, m), &s) in self
            .pow
            .iter_mut()
            .zip(&mut self.miss)
            .zip(&self.grid.points)
        {
            *p *= s;
            *m = 1.0 - *p;
        }
        self.none.fill(1.0);
    }

    fn next_band(&mut self) {
        for (none, &m) in self.none.iter_mut().zip(&self.miss) {
            *none *= m;
        }
    }

    /// The integral of `f(1 − P(s))`.
    fn mass(&mut self, f: impl Fn(f64) -> f64) -> f64 {
        for (v, &none) in self.values.iter_mut().zip(&self.none) {
            *v = f(none);
        }
        self.grid.integral(&self.values)
    }
}

/// Intervals of Simpson's rule: the integrands are smooth polynomials in s.
const SIMPSON_INTERVALS: usize = 256;

/// The points where Simpson's rule samples an integrand on [a, b].
struct SimpsonGrid {
    /// a, a + h, …, b; empty when b <= a (the integral is 0).
    points: Vec<f64>,
    h: f64,
}

fn simpson_grid(a: f64, b: f64) -> SimpsonGrid {
    if b <= a {
        return SimpsonGrid {
            points: Vec::new(),
            h: 0.0,
        };
    }
    let n = SIMPSON_INTERVALS;
    let h = (b - a) / n as f64;
    let points = (0..=n)
        .map(|i| if i == n { b } else { a + i as f64 * h })
        .collect();
    SimpsonGrid { points, h }
}

impl SimpsonGrid {
    /// Simpson's sum of an integrand's values at the grid's points.
    fn integral(&self, values: &[f64]) -> f64 {
        let Some((&last, inner)) = values.split_last() else {
            return 0.0;
        };
        let Some((&first, inner)) = inner.split_first() else {
            return 0.0;
        };
        let mut sum = first + last;
        for (i, &v) in (1..).zip(inner) {
            let w = if i % 2 == 1 { 4.0 } else { 2.0 };
            sum += w * v;
        }
        sum * self.h / 3.0
    }
}

/// ∫ₐᵇ f by Simpson's rule.
fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let grid = simpson_grid(a, b);
    let values: Vec<f64> = grid.points.iter().map(|&s| f(s)).collect();
    grid.integral(&values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_matches_closed_form() {
        let b = Banding { bands: 20, rows: 5 };
        for i in 0..=10 {
            let s = i as f64 / 10.0;
            let expected = 1.0 - (1.0 - s.powf(5.0)).powf(20.0);
            assert!((b.candidate_probability(s) - expected).abs() < 1e-12);
        }
        assert_eq!(b.candidate_probability(0.0), 0.0);
        assert_eq!(b.candidate_probability(1.0), 1.0);
    }

    #[test]
    fn masses_match_numeric_integration_of_closed_form() {
        // Closed form for b = 1, r = 2: ∫₀ᵗ s² ds = t³/3.
        let b = Banding { bands: 1, rows: 2 };
        assert!((b.false_positive_mass(0.5) - 0.125 / 3.0).abs() < 1e-9);
        assert!((b.false_negative_mass(0.5) - (0.5 - (1.0 - 0.125) / 3.0)).abs() < 1e-9);
    }

    #[test]
    fn estimate_floor_follows_hoeffding() {
        assert!((estimate_floor(0.8, 128) - 0.5677).abs() < 1e-3);
        // Short signatures say too little to filter anything.
        assert!(estimate_floor(0.8, 8) < 0.0);
        for k in [16, 64, 128, 256, 1024] {
            let eps = 0.8 - estimate_floor(0.8, k);
            assert!((-2.0 * k as f64 * eps * eps).exp() <= PREFILTER_MISS * 1.0001);
        }
    }

    #[test]
    fn chosen_bandings_are_sensible() {
        for &t in &[0.5, 0.8, 0.9] {
            for &w in &[1.0, RECALL_WEIGHT] {
                let b = Banding::choose(t, 128, w);
                assert!(b.bands * b.rows <= 128);
                // The curve's midpoint sits near the threshold, below it when tuned for recall.
                let mid = b.approximate_threshold();
                assert!(
                    mid > t - 0.25 && mid < t + 0.1,
                    "t={t} w={w}: {b:?} mid={mid}"
                );
                // A pair right at the threshold is found at least about half the time.
                assert!(b.candidate_probability(t) > 0.3, "t={t} w={w}: {b:?}");
                // Unrelated pairs are seldom candidates.
                assert!(b.candidate_probability(0.1) < 0.05, "t={t} w={w}: {b:?}");
                assert!(b.candidate_probability(t - 0.4) < 0.1, "t={t} w={w}: {b:?}");
            }
            let recall = Banding::choose(t, 128, RECALL_WEIGHT);
            let balanced = Banding::choose(t, 128, 1.0);
            assert!(recall.candidate_probability(t) >= balanced.candidate_probability(t));
            // Tuned for recall: a pair at the threshold is a candidate with probability ≥ 0.99.
            assert!(recall.candidate_probability(t) >= 0.99, "t={t}: {recall:?}");
        }
        assert_eq!(
            Banding::choose(0.8, 128, RECALL_WEIGHT),
            Banding { bands: 19, rows: 6 }
        );
        // Higher thresholds take longer bands.
        assert!(Banding::choose(0.9, 128, 1.0).rows > Banding::choose(0.5, 128, 1.0).rows);
    }

    /// [`Banding::choose`] as the masses define it: both integrals evaluated for each banding.
    fn choose_by_integrals(t: f64, k: usize, recall_weight: f64) -> Banding {
        let mut best = Banding {
            bands: 1,
            rows: k.max(1),
        };
        let mut best_cost = f64::INFINITY;
        for bands in 1..=k {
            for rows in 1..=k / bands {
                let b = Banding { bands, rows };
                let cost = b.false_positive_mass(t) + recall_weight * b.false_negative_mass(t);
                if cost < best_cost - 1e-12 {
                    best = b;
                    best_cost = cost;
                }
            }
        }
        best
    }

    #[test]
    fn choice_equals_evaluating_every_banding() {
        let ks: &[usize] = if cfg!(debug_assertions) {
            &[0, 1, 2, 5, 16, 33, 64, 128]
        } else {
            &[0, 1, 2, 5, 16, 33, 64, 100, 128, 200, 256]
        };
        for &k in ks {
            for i in 1..=21 {
                // Twenty thresholds from 0.04 to 0.98, and 1.0.
                let t = (f64::from(i) * 0.05 - 0.01 * f64::from(i % 3)).min(1.0);
                for w in [1.0, 4.0, RECALL_WEIGHT] {
                    assert_eq!(
                        Banding::choose(t, k, w),
                        choose_by_integrals(t, k, w),
                        "t={t} k={k} w={w}"
                    );
                }
            }
        }
    }
}
