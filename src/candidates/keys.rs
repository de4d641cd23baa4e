//! The similarity keys: the one place a document's LSH band keys (MinHash) and SimHash piece
//! keys are cut from its sketch, for `scan`'s buckets, the staged pipeline's key files and the
//! index's tables alike. A table is a band or a piece; two documents are candidates when they
//! share the key of some table.

use crate::config::MethodConfig;
use crate::sketch::simhash;

use super::lsh::band_key;

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
            MethodConfig::SimHash { max_distance, .. } => {
                Keying::Pieces(simhash::pieces(*max_distance))
            }
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
}
