//! The lookup tables of a segment and the key of a document in each: one table per LSH band
//! (MinHash) or SimHash piece, cut with the banding the index was built with, and three more:
//! the content hash's high half (byte-identical documents), the path and the device and inode
//! (the unchanged-file cache).

use xxhash_rust::xxh3::xxh3_64;

use crate::index::store::{Entry, IndexParams};
use crate::sketch::simhash;

/// Table of content hashes (high halves).
pub const CONTENT: u32 = 0xFFFF_FF00;
/// Table of path hashes.
pub const PATH: u32 = 0xFFFF_FF01;
/// Table of device and inode hashes.
pub const INODE: u32 = 0xFFFF_FF02;

pub use crate::candidates::keys::Keying;

/// What an index adds to the keying of its similarity tables (bands or pieces, cut as `scan`
/// cuts them): the parameters it was built with, and the content, path and inode tables.
pub trait IndexKeying {
    /// The keying of an index with `params`.
    fn for_index(params: &IndexParams) -> Keying;
    /// The table ids, increasing: bands or pieces from 0, then the content, path and inode
    /// tables.
    fn table_ids(&self) -> Vec<u32>;
    /// The keys of `e`, one per table in [`IndexKeying::table_ids`] order, appended to `out`.
    fn entry_keys(&self, e: &Entry, out: &mut Vec<u64>);
    /// The band (or piece) keys of `e` alone, appended to `out`.
    fn similarity_keys(&self, e: &Entry, out: &mut Vec<u64>);
}

impl IndexKeying for Keying {
    fn for_index(params: &IndexParams) -> Keying {
        if params.method == "simhash" {
            Keying::Pieces(simhash::pieces(params.max_distance))
        } else {
            Keying::Bands {
                bands: params.bands as usize,
                rows: params.rows as usize,
            }
        }
    }

    fn table_ids(&self) -> Vec<u32> {
        let mut t: Vec<u32> = (0..self.tables() as u32).collect();
        t.extend([CONTENT, PATH, INODE]);
        t
    }

    fn entry_keys(&self, e: &Entry, out: &mut Vec<u64>) {
        self.similarity_keys(e, out);
        out.push(content_key(e.content_hash));
        out.push(path_key(&e.path));
        out.push(inode_key(e.dev, e.inode));
    }

    fn similarity_keys(&self, e: &Entry, out: &mut Vec<u64>) {
        out.extend((0..self.tables()).map(|t| self.key(t, &e.signature, e.simhash)));
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
