//! The similarity keys: the one place a document's LSH band keys (MinHash) and SimHash piece
//! keys are cut from its sketch, for `scan`'s buckets, the staged pipeline's key files and the
//! index's tables alike. A table is a band or a piece; two documents are candidates when they
//! share the key of some table.

use crate::config::MethodConfig;
use crate::sketch::simhash;

use crate::sketch::minhash::mix64;

/// The 64-bit key of band `band` (its `rows` values). Two documents land in the same bucket when
/// their keys agree; a 2^-64 key collision only adds a false candidate, which verification
/// removes.
#[inline]
pub fn band_key(band: usize, values: &[u32]) -> u64 {
    let mut h = mix64(band as u64 ^ 0xB4D5_EED5_B4D5_EED5);
    for pair in values.chunks(2) {
        let v = u64::from(pair[0]) | (u64::from(*pair.get(1).unwrap_or(&0)) << 32);
        h = mix64(h ^ v).wrapping_add(v);
    }
    h
}

/// How documents are keyed: the tables and how each key is cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keying {
    /// `bands` bands of `rows` signature values.
    Bands { bands: usize, rows: usize },
    /// SimHash pieces (shift, width).
    Pieces(Vec<(u32, u32)>),
}

impl Keying {
    /// The keying `method` is searched with (`--containment` buckets by size class instead,
    /// [`super::containment`]; its bands are not these).
    pub fn of(method: &MethodConfig) -> Keying {
        match method {
            MethodConfig::MinHash { banding, .. } => Keying::Bands {
                bands: banding.bands,
                rows: banding.rows,
            },
            MethodConfig::SimHash { pieces, .. } => Keying::Pieces(pieces.clone()),
        }
    }

    /// Bands or pieces.
    pub fn tables(&self) -> usize {
        match self {
            Keying::Bands { bands, .. } => *bands,
            Keying::Pieces(p) => p.len(),
        }
    }

    /// True when signatures of `lanes` values can be keyed (the bands fit in them).
    pub fn fits(&self, lanes: usize) -> bool {
        match self {
            Keying::Bands { bands, rows } => bands.checked_mul(*rows).is_some_and(|n| n <= lanes),
            Keying::Pieces(_) => true,
        }
    }

    /// The key of table `t` for a document with MinHash signature `sig` (all its values) and
    /// SimHash fingerprint `fingerprint`; each keying reads only its own.
    #[inline]
    pub fn key(&self, t: usize, sig: &[u32], fingerprint: u64) -> u64 {
        match self {
            Keying::Bands { rows, .. } => {
                band_key(t, sig.get(t * rows..(t + 1) * rows).unwrap_or(&[]))
            }
            Keying::Pieces(pieces) => simhash::piece_key(pieces[t], fingerprint),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::banding::Banding;
    use crate::sketch::minhash::splitmix64;

    #[test]
    fn bands_cut_consecutive_rows_and_pieces_the_fingerprint() {
        let sig: Vec<u32> = (0..12).collect();
        let k = Keying::Bands { bands: 3, rows: 4 };
        assert_eq!(k.key(1, &sig, 99), band_key(1, &sig[4..8]));
        assert_eq!(k.key(1, &sig, 0), k.key(1, &sig, 99));
        assert!(k.fits(12) && !k.fits(11));
        let p = Keying::Pieces(simhash::pieces(3));
        assert_eq!(
            p.key(2, &[], 0xABCD),
            simhash::piece_key(simhash::pieces(3)[2], 0xABCD)
        );
    }

    #[test]
    fn collision_rate_follows_the_s_curve() {
        // Simulate signatures of pairs at similarity s: each value agrees with probability s.
        let banding = Banding { bands: 8, rows: 4 };
        let mut state = 11;
        for &s in &[0.3, 0.5, 0.7, 0.9] {
            let trials = 4000;
            let mut hits = 0;
            for _ in 0..trials {
                let a: Vec<u32> = (0..32).map(|_| splitmix64(&mut state) as u32).collect();
                let b: Vec<u32> = a
                    .iter()
                    .map(|&v| {
                        let u = (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
                        let agree = u < s;
                        if agree {
                            v
                        } else {
                            v ^ 1
                        }
                    })
                    .collect();
                let collide = (0..banding.bands).any(|i| {
                    band_key(i, &a[i * 4..i * 4 + 4]) == band_key(i, &b[i * 4..i * 4 + 4])
                });
                hits += usize::from(collide);
            }
            let p = banding.candidate_probability(s);
            let rate = hits as f64 / trials as f64;
            let sd = (p * (1.0 - p) / trials as f64).sqrt();
            assert!(
                (rate - p).abs() <= 5.0 * sd + 1e-3,
                "s={s}: rate {rate} vs {p}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

        /// For any banding and similarity, pairs whose values agree independently with
        /// probability s collide on some band at the rate P(s) = 1 − (1 − sʳ)ᵇ: within 5
        /// standard deviations of 2,000 simulated pairs (a false alarm about once in 3.5 million
        /// cases), plus 0.002 for the rounding of rare events.
        #[test]
        fn any_banding_collides_on_its_s_curve(
            bands in 1usize..24,
            rows in 1usize..9,
            s in 0.05f64..0.99,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let banding = Banding { bands, rows };
            let mut state = seed;
            let trials = 2000;
            let mut hits = 0;
            for _ in 0..trials {
                let a: Vec<u32> = (0..bands * rows).map(|_| splitmix64(&mut state) as u32).collect();
                let b: Vec<u32> = a
                    .iter()
                    .map(|&v| {
                        let u = (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
                        if u < s { v } else { v ^ 1 }
                    })
                    .collect();
                let collide = (0..bands).any(|i| {
                    let r = i * rows..(i + 1) * rows;
                    band_key(i, &a[r.clone()]) == band_key(i, &b[r])
                });
                hits += usize::from(collide);
            }
            let p = banding.candidate_probability(s);
            let rate = hits as f64 / trials as f64;
            let sd = (p * (1.0 - p) / trials as f64).sqrt();
            proptest::prop_assert!((rate - p).abs() <= 5.0 * sd + 2e-3, "rate {} vs P {}", rate, p);
        }
    }
}
