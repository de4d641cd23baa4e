//! The containment scheme (`--containment`), derived from the threshold and the signature
//! length once, as the banding is: geometric size classes, and the banding of each class
//! offset, chosen for a recall bound. How candidates are found with it, and why the bound
//! holds, is in [`crate::candidates::containment`].

use super::banding::Banding;

/// The size ratio |B| / |A| up to which the recall bound holds: an excerpt down to 10 % of its
/// source.
pub const MAX_RATIO: f64 = 10.0;

/// How many size classes apart two documents may be and still be banded together: the largest
/// d with 2^(d−1) < [`MAX_RATIO`]. Documents further apart (q > 2^(d+1) = 32) are never
/// candidates.
pub const MAX_OFFSET: u32 = 4;

/// The least chance the chosen bands give a pair at the threshold (within [`MAX_RATIO`]) of
/// becoming a candidate, when K allows it.
pub const TARGET_RECALL: f64 = 0.999;

/// The size class of a set of `size` distinct shingles: ⌊log₂ size⌋.
pub fn class(size: u64) -> u32 {
    63 - size.max(1).leading_zeros()
}

/// The lowest Jaccard similarity of a pair with containment `t` and size ratio `q` ≥ 1.
pub fn jaccard_floor(t: f64, q: f64) -> f64 {
    t / (1.0 + q - t)
}

/// The banding of each class offset for a threshold and signature length.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheme {
    /// Containment threshold t.
    pub threshold: f64,
    /// Banding for classes d apart, d = 0 ..= [`MAX_OFFSET`].
    pub offsets: Vec<Banding>,
}

impl Scheme {
    /// The scheme for containment threshold `t` and `k` signature values.
    pub fn new(t: f64, k: usize) -> Scheme {
        let offsets = (0..=MAX_OFFSET)
            .map(|d| {
                let j = Self::worst_jaccard(t, d);
                (1..=k.max(1))
                    .rev()
                    .map(|rows| Banding {
                        bands: k / rows,
                        rows,
                    })
                    .find(|b| b.candidate_probability(j) >= TARGET_RECALL)
                    .unwrap_or(Banding {
                        bands: k.max(1),
                        rows: 1,
                    })
            })
            .collect();
        Scheme {
            threshold: t,
            offsets,
        }
    }

    /// J*_d: the lowest Jaccard of a pair at the threshold whose classes are `d` apart and whose
    /// size ratio is within [`MAX_RATIO`] (q < 2^(d+1)).
    pub fn worst_jaccard(t: f64, d: u32) -> f64 {
        jaccard_floor(t, f64::from(1u32 << (d + 1)).min(MAX_RATIO))
    }

    /// The least candidate probability of a pair at the threshold with a size ratio up to
    /// [`MAX_RATIO`]: the recall bound of the candidates.
    pub fn recall(&self) -> f64 {
        self.offsets
            .iter()
            .zip(0..)
            .map(|(b, d)| b.candidate_probability(Self::worst_jaccard(self.threshold, d)))
            .fold(1.0, f64::min)
    }

    #[cfg(test)]
    /// The chance that a pair at the threshold with size ratio `q` becomes a candidate, given
    /// how many classes apart it is (0 beyond [`MAX_OFFSET`]).
    pub fn candidate_probability(&self, q: f64, offset: u32) -> f64 {
        self.offsets.get(offset as usize).map_or(0.0, |b| {
            b.candidate_probability(jaccard_floor(self.threshold, q))
        })
    }

    /// The scan's note on stderr: the banding and the recall it gives.
    pub fn describe(&self) -> String {
        let bandings: Vec<String> = self
            .offsets
            .iter()
            .map(|b| format!("{}×{}", b.bands, b.rows))
            .collect();
        format!(
            "threshold {} (containment): sets in size classes 2^c to 2^(c+1), each banded against \
             the {MAX_OFFSET} classes above it (bands×rows per class offset 0..{MAX_OFFSET}: {}); a \
             pair at the threshold with a size ratio up to {MAX_RATIO} becomes a candidate with \
             probability at least {:.4}",
            self.threshold,
            bandings.join(", "),
            self.recall()
        )
    }

    /// The band (of the pair's class offset) in which two signatures agree, the one that made
    /// the pair a candidate.
    pub fn first_band(&self, sizes: (u64, u64), sigs: (&[u32], &[u32])) -> Option<usize> {
        let offset = class(sizes.0).abs_diff(class(sizes.1));
        let b = self.offsets.get(offset as usize)?;
        let r = b.rows;
        (0..b.bands).find(|i| sigs.0[i * r..(i + 1) * r] == sigs.1[i * r..(i + 1) * r])
    }
}
