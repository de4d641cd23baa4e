//! Small indexes written through the real segment writer and commit, for the unit tests of
//! the readers and writers.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::index::codec::BlobKind;
use crate::index::commit::Locked;
use crate::index::dir::IndexDir;
use crate::index::manifest::{self, Manifest};
use crate::index::segment::write::SegmentWriter;
use crate::index::store::{Entry, IndexParams};
use crate::messages::Messages;

/// MinHash with 8 values in 4 bands of 2: small, and what `IndexParams::check` accepts.
pub fn params() -> IndexParams {
    IndexParams {
        method: "minhash".into(),
        shingle: "word".into(),
        ngram: 5,
        num_perm: 8,
        sketch: "oph".into(),
        bands: 4,
        rows: 2,
        seed: 0,
        hashing: crate::sketch::shingle::HASH_SCHEME,
        max_distance: 0,
        normalize: "none".into(),
    }
}

/// Document `i`: its entry (at a path that does not exist) and its stored content.
fn document(i: u64) -> (Entry, String) {
    let content = format!("document {i}");
    let entry = Entry {
        path: format!("/nonexistent/dupfind-test/{i:04}.txt").into_bytes(),
        line: None,
        id: None,
        size: content.len() as u64,
        bytes: content.len() as u64,
        mtime_ns: i128::from(i),
        ctime_ns: i128::from(i),
        dev: 1,
        inode: 1000 + i,
        content_hash: xxhash_rust::xxh3::xxh3_128(content.as_bytes()),
        signature: (0..8).map(|j| (i * 8 + j) as u32).collect(),
        simhash: i,
    };
    (entry, content)
}

/// Builds an index in `path` (made if missing) of one segment per element of `sizes`, each
/// of that many documents, committed as generation 1.
pub fn index(path: &Path, sizes: &[u64]) -> Manifest {
    let locked = Locked::create(path, &Messages::default()).unwrap();
    let mut w = locked.fresh(params(), 1);
    let mut next_doc = 0;
    for &n in sizes {
        let plan = w.plan(Vec::new()).unwrap();
        let mut segment = SegmentWriter::new(w.dir(), plan).unwrap();
        for i in next_doc..next_doc + n {
            let (entry, content) = document(i);
            segment
                .add(&entry, BlobKind::Plain, None, content.as_bytes())
                .unwrap();
        }
        next_doc += n;
        let segment = segment.finish().unwrap();
        w.add(segment).unwrap();
    }
    w.finish().unwrap().commit().unwrap();
    let dir = IndexDir::open(path).unwrap().unwrap();
    manifest::read(&dir).unwrap().unwrap()
}
