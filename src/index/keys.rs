//! The lookup tables of a segment and the key of a document in each: one table per LSH band
//! (MinHash) or SimHash piece, cut with the banding the index was built with, and three more:
//! the content hash's high half (byte-identical documents), the path and the device and inode
//! (the unchanged-file cache).

use xxhash_rust::xxh3::xxh3_64;

use crate::candidates::lsh::band_key;
use crate::index::store::{Entry, IndexParams};
use crate::sketch::simhash;

/// Table of content hashes (high halves).
pub const CONTENT: u32 = 0xFFFF_FF00;
/// Table of path hashes.
pub const PATH: u32 = 0xFFFF_FF01;
/// Table of device and inode hashes.
pub const INODE: u32 = 0xFFFF_FF02;

/// How documents are keyed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keying {
    /// `bands` bands of `rows` signature values.
    Bands { bands: usize, rows: usize },
    /// SimHash pieces (shift, width).
    Pieces(Vec<(u32, u32)>),
}

impl Keying {
    /// The keying of an index with `params`.
    pub fn of(params: &IndexParams) -> Keying {
        if params.method == "simhash" {
            Keying::Pieces(simhash::pieces(params.max_distance))
        } else {
            Keying::Bands {
                bands: params.bands as usize,
                rows: params.rows as usize,
            }
        }
    }

    /// Bands or pieces.
    pub fn similarity_tables(&self) -> usize {
        match self {
            Keying::Bands { bands, .. } => *bands,
            Keying::Pieces(p) => p.len(),
        }
    }

    /// The table ids, increasing: bands or pieces from 0, then the content, path and inode
    /// tables.
    pub fn tables(&self) -> Vec<u32> {
        let mut t: Vec<u32> = (0..self.similarity_tables() as u32).collect();
        t.extend([CONTENT, PATH, INODE]);
        t
    }

    /// True when signatures of `lanes` values can be keyed (the bands fit in them).
    pub fn fits(&self, lanes: usize) -> bool {
        match self {
            Keying::Bands { bands, rows } => bands.checked_mul(*rows).is_some_and(|n| n <= lanes),
            Keying::Pieces(_) => true,
        }
    }

    /// The keys of `e`, one per table in [`Keying::tables`] order, appended to `out`.
    pub fn keys(&self, e: &Entry, out: &mut Vec<u64>) {
        self.similarity_keys(e, out);
        out.push(content_key(e.content_hash));
        out.push(path_key(&e.path));
        out.push(inode_key(e.dev, e.inode));
    }

    /// The band (or piece) keys of `e` alone, appended to `out`.
    pub fn similarity_keys(&self, e: &Entry, out: &mut Vec<u64>) {
        match self {
            Keying::Bands { bands, rows } => {
                for b in 0..*bands {
                    let values = e.signature.get(b * rows..(b + 1) * rows).unwrap_or(&[]);
                    out.push(band_key(b, values));
                }
            }
            Keying::Pieces(pieces) => {
                out.extend(pieces.iter().map(|&p| simhash::piece_key(p, e.simhash)));
            }
        }
    }
}

/// A content hash's key: its high half.
pub fn content_key(hash: u128) -> u64 {
    (hash >> 64) as u64
}

/// A stored path's key.
pub fn path_key(path: &[u8]) -> u64 {
    xxh3_64(path)
}

/// A device and inode's key.
pub fn inode_key(dev: u64, inode: u64) -> u64 {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&dev.to_le_bytes());
    b[8..].copy_from_slice(&inode.to_le_bytes());
    xxh3_64(&b)
}
