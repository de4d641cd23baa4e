//! Small indexes written through the real segment writer and commit, for the unit tests of
//! the readers and writers.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::index::codec::BlobKind;
use crate::index::commit::{Pending, LOCK};
use crate::index::dir::IndexDir;
use crate::index::manifest::Manifest;
use crate::index::segment::write::{Plan, SegmentWriter};
use crate::index::store::{Entry, IndexParams};
use crate::index::update::{entry_of, place};

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
    let dir = IndexDir::create(path).unwrap();
    let lock = dir.lock(LOCK).unwrap();
    let mut m = Manifest::fresh(params(), 1);
    let mut written = Vec::new();
    let mut next_doc = 0;
    for &n in sizes {
        let plan = Plan::next(&mut m, &dir, Vec::new(), None).unwrap();
        let mut w = SegmentWriter::new(&dir, plan).unwrap();
        for i in next_doc..next_doc + n {
            let (entry, content) = document(i);
            w.add(&entry, BlobKind::Plain, None, content.as_bytes())
                .unwrap();
        }
        next_doc += n;
        let w = w.finish().unwrap();
        place(&dir, &w).unwrap();
        written.extend([w.name.clone(), w.table_name.clone()]);
        m.segments.push(entry_of(&w));
    }
    let pending = Pending::new(dir, lock, &m, None, written, Vec::new(), 0).unwrap();
    pending.commit().unwrap();
    m
}
