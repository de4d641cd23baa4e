//! Which indexed documents can meet the new ones: those sharing a band key (MinHash) or a
//! SimHash piece with a new document, or its content hash.
//!
//! When the scan bands as the index was built (the usual case: the same `--threshold`), each
//! new content's keys are looked up in every segment's sorted key tables, a block of 256 keys
//! read per key, and only the documents found are read: the work grows with the new documents
//! and what they meet, not with the index. A scan that bands otherwise (another `--threshold`,
//! `--bands`, `--rows` or `--max-distance`), or an index of format 1, which stored no keys,
//! streams every stored signature instead, a block of rows at a time: slower, its memory still
//! bounded.

use std::collections::{HashMap, HashSet};

use anyhow::Result;
use rayon::prelude::*;

use crate::config::Config;
use crate::index::keys::{content_key, IndexKeying, Keying, CONTENT};
use crate::index::open::{DocRef, Opened};
use crate::index::segment::layout::Row;
use crate::index::store::Entry;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::Outcome;

/// How a scan under `cfg` keys documents.
pub fn keying_of(cfg: &Config) -> Keying {
    Keying::of(&cfg.method)
}

/// The live indexed documents (not `superseded`) that share a band key, SimHash piece or
/// content with a document of `new`, with their rows, in no particular order.
pub fn candidates(
    cfg: &Config,
    index: &Opened,
    new: &Corpus,
    superseded: &HashSet<DocRef>,
) -> Result<Vec<(DocRef, Row)>> {
    let keying = keying_of(cfg);
    let queries = Queries::of(&keying, new);
    if queries.hashes.is_empty() {
        return Ok(Vec::new());
    }
    let mut found: HashMap<DocRef, Option<Row>> = HashMap::new();
    if index.has_keys(&keying) {
        // One table per task: each reads its own key blocks (a `pread` each), so the tables
        // are searched on every core.
        let per_table: Vec<Vec<(u64, DocRef)>> = queries
            .tables
            .par_iter()
            .enumerate()
            .map(|(t, keys)| {
                let mut keys: Vec<u64> = keys.iter().copied().collect();
                keys.sort_unstable();
                index.lookup(t as u32, &keys)
            })
            .collect::<Result<_>>()?;
        for (_, d) in per_table.into_iter().flatten() {
            found.insert(d, None);
        }
        let mut his: Vec<u64> = queries.hashes.iter().map(|&h| content_key(h)).collect();
        his.sort_unstable();
        his.dedup();
        let by_content: Vec<DocRef> = index
            .lookup(CONTENT, &his)?
            .into_iter()
            .map(|(_, d)| d)
            .filter(|d| !found.contains_key(d))
            .collect();
        // A content key is half the hash: the whole hash decides.
        for d in by_content {
            let row = index.row(d)?;
            if queries.hashes.contains(&row.entry.content_hash) {
                found.insert(d, Some(row));
            }
        }
    } else {
        let mut keys = Vec::new();
        index.for_each_live(|d, row| {
            keys.clear();
            keying.similarity_keys(&row.entry, &mut keys);
            let shares = keys.iter().zip(&queries.tables).any(|(k, t)| t.contains(k))
                || queries.hashes.contains(&row.entry.content_hash);
            if shares {
                found.insert(d, Some(row));
            }
            Ok(())
        })?;
    }
    let mut refs: Vec<DocRef> = found
        .keys()
        .copied()
        .filter(|d| !superseded.contains(d))
        .collect();
    refs.sort_unstable();
    let mut out = Vec::with_capacity(refs.len());
    for d in refs {
        let row = match found.remove(&d).flatten() {
            Some(row) => row,
            None => index.row(d)?,
        };
        out.push((d, row));
    }
    Ok(out)
}

/// What the new documents look up.
struct Queries {
    /// Per band or piece, the keys of the new contents.
    tables: Vec<HashSet<u64>>,
    /// The new contents' hashes.
    hashes: HashSet<u128>,
}

impl Queries {
    fn of(keying: &Keying, new: &Corpus) -> Queries {
        let mut tables = vec![HashSet::new(); keying.tables()];
        let mut hashes = HashSet::new();
        let mut keys = Vec::new();
        let lanes = new.lanes;
        for (d, doc) in new.docs.iter().enumerate() {
            match doc.outcome {
                Outcome::Duplicate => {
                    hashes.insert(doc.hash);
                }
                // The copy that was sketched holds its content's signature.
                Outcome::Sketched => {
                    hashes.insert(doc.hash);
                    let e = Entry {
                        path: Vec::new(),
                        line: None,
                        id: None,
                        size: 0,
                        bytes: 0,
                        mtime_ns: 0,
                        ctime_ns: 0,
                        dev: 0,
                        inode: 0,
                        content_hash: doc.hash,
                        signature: new
                            .sigs
                            .get(d * lanes..(d + 1) * lanes)
                            .unwrap_or(&[])
                            .to_vec(),
                        simhash: doc.fingerprint,
                    };
                    keys.clear();
                    keying.similarity_keys(&e, &mut keys);
                    for (t, &k) in tables.iter_mut().zip(&keys) {
                        t.insert(k);
                    }
                }
                _ => {}
            }
        }
        Queries { tables, hashes }
    }
}
