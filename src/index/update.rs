//! Updating an index (`--update`, `index build`): the next generation is the indexed documents
//! still current, then the new ones, each with its set, derived again one batch at a time so
//! memory stays bounded.

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::config::{Config, IndexUse, MethodConfig};
use crate::index::store::{self, Entry, Record as StoredRecord};
use crate::ingest::worker::{DocResult, DocWorker, Engine, Outcome, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};

use super::join::{index_params, IndexedSets};
use super::paths::{mtime_ns, path_key};

/// Documents whose sets are derived per batch while the new generation is written.
const WRITE_BATCH: usize = 1024;

/// What the update writes.
pub struct Update<'a> {
    /// The scan's settings.
    pub cfg: &'a Config,
    /// How new documents' sets are derived again.
    pub engine: &'a Engine,
    /// Every document of the scan: indexed ones first.
    pub files: &'a [FileEntry],
    /// Their results.
    pub docs: &'a [DocResult],
    /// Signatures, `lanes` per document.
    pub sigs: &'a [u32],
    /// Signature values per document.
    pub lanes: usize,
    /// For each document, the document holding its content's signature.
    pub canon: &'a [u32],
    /// Indexed documents (ids below its count) and their stored sets.
    pub indexed: Option<&'a IndexedSets>,
}

impl Update<'_> {
    /// Writes the index: created (`index build`) or replaced by the next generation, which it
    /// returns. New documents whose set cannot be derived again are left out and reported.
    pub fn write(
        &self,
        against: &IndexUse,
        generation: u64,
        errors: &mut Vec<InputError>,
    ) -> Result<u64> {
        let params = index_params(self.cfg);
        let first_new = self.indexed.map_or(0, IndexedSets::count);
        let new: Vec<u32> = (first_new..self.files.len() as u32)
            .filter(|&d| {
                matches!(
                    self.docs[d as usize].outcome,
                    Outcome::Sketched | Outcome::Duplicate
                )
            })
            .collect();
        let failed = std::sync::Mutex::new(Vec::new());
        // Indexed documents keep their stored entries; their signatures (freed from the open
        // index) are taken back from the scan's.
        let old = self.indexed.into_iter().flat_map(|ix| {
            ix.position.iter().enumerate().map(move |(d, &i)| {
                let mut entry = ix.index.entries()[i].clone();
                if let MethodConfig::MinHash { .. } = &self.cfg.method {
                    entry.signature = self.sigs[d * self.lanes..(d + 1) * self.lanes].to_vec();
                }
                Ok(StoredRecord {
                    entry,
                    set: ix.index.read_set(i)?,
                })
            })
        });
        let fresh = new.chunks(WRITE_BATCH).flat_map(|chunk| {
            let loaded: Vec<Result<StoredRecord>> = chunk
                .par_iter()
                .map_init(
                    || DocWorker::new(self.engine),
                    |w, &d| {
                        let canon = self.canon[d as usize];
                        let file = &self.files[d as usize];
                        let set = w.load_set(canon, &self.files[canon as usize], {
                            self.docs[canon as usize].hash
                        });
                        (d, file, set)
                    },
                )
                .filter_map(|(d, file, set)| match set {
                    Ok(set) => Some(Ok(StoredRecord {
                        entry: self.entry(d),
                        set: set.into_vec(),
                    })),
                    Err(reason) => {
                        if let Ok(mut f) = failed.lock() {
                            f.push(file.error(None, format!("not indexed: {reason}")));
                        }
                        None
                    }
                })
                .collect();
            loaded
        });
        let records = old.chain(fresh);
        let written = if against.create {
            store::create(&against.dir, &params, records).map(|()| 1)
        } else {
            store::replace(&against.dir, generation, &params, records)
        };
        errors.extend(failed.into_inner().unwrap_or_else(|e| e.into_inner()));
        written.with_context(|| format!("cannot update index {}", display_path(&against.dir)))
    }

    fn entry(&self, d: u32) -> Entry {
        let f = &self.files[d as usize];
        let canon = self.canon[d as usize] as usize;
        let doc = &self.docs[d as usize];
        let (line, id, size) = match &f.record {
            Some(r) => (Some(r.line), r.id.clone(), r.file_size),
            None => (None, None, f.size),
        };
        let signature = match &self.cfg.method {
            MethodConfig::MinHash { .. } => {
                self.sigs[canon * self.lanes..(canon + 1) * self.lanes].to_vec()
            }
            MethodConfig::SimHash { .. } => Vec::new(),
        };
        Entry {
            path: path_key(&f.path),
            line,
            id,
            size,
            bytes: doc.bytes,
            mtime_ns: mtime_ns(f.modified),
            dev: f.id.0,
            inode: f.id.1,
            content_hash: doc.hash,
            signature,
            simhash: self.docs[canon].fingerprint,
        }
    }
}
