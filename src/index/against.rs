//! Against: an incremental index joined to a scan (`scan --against DIR [--update]`,
//! `index build`).
//!
//! The indexed documents take part in the scan as documents 0..m, ahead of the new ones, with
//! the signatures, content hashes and shingle sets stored in the index, so nothing of them is
//! read again. Pairs of two indexed documents are never checked (they were reported when the
//! later of them was new); every reported pair has a new document in it, and an indexed member
//! always represents its cluster. (`duplicates` lists other indexed members only when a new
//! document links two indexed ones; they carry `indexed: true`.)
//!
//! Paths are stored absolute ([`path_key`]), so an index can be used from any directory;
//! indexed members are reported relative to the working directory when inside it, else
//! absolute.
//!
//! The unchanged-file cache: an input whose path, size, modification time, device and inode
//! all equal those stored for it is not read at all; its indexed documents stand for it. An
//! input that changed is read again, and its old documents leave the comparison (a file is not
//! its own near-duplicate) and, with `--update`, the index.
//!
//! `--update` writes the next generation: the indexed documents still current, then the new
//! ones, each with its set, derived again one batch at a time so memory stays bounded.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::config::{Config, IndexUse, MethodConfig};
use crate::index::store::{self, Entry, Index, IndexParams, Record as StoredRecord};
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::StoredSets;
use crate::ingest::worker::{DocResult, DocWorker, Engine, Outcome};
use crate::input::walk::{FileEntry, Record};
use crate::messages::{display_path, InputError};
use crate::sketch::bottomk::Sketches;

/// The stored sets of the indexed documents taking part in a scan, by document id.
pub struct IndexedSets {
    index: Index,
    /// Document id → position in the index.
    position: Vec<usize>,
}

impl std::fmt::Debug for IndexedSets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedSets({} documents)", self.position.len())
    }
}

impl StoredSets for IndexedSets {
    /// Number of indexed documents in the scan (their ids are 0..count).
    fn count(&self) -> u32 {
        self.position.len() as u32
    }

    /// The stored set of indexed document `doc`.
    fn read(&self, doc: u32) -> Result<Box<[u64]>, String> {
        let i = *self
            .position
            .get(doc as usize)
            .ok_or("not an indexed document")?;
        self.index
            .read_set(i)
            .map(Vec::into_boxed_slice)
            .map_err(|e| format!("{e:#}"))
    }
}

/// The parameters a scan under `cfg` would store in, or require of, an index.
pub fn index_params(cfg: &Config) -> IndexParams {
    let shingle = match cfg.shingle {
        crate::sketch::shingle::ShingleKind::Word => "word",
        crate::sketch::shingle::ShingleKind::Char => "char",
    };
    let (method, num_perm, sketch, bands, rows) = match &cfg.method {
        MethodConfig::MinHash {
            sketch,
            num_perm,
            banding,
            ..
        } => (
            "minhash",
            *num_perm as u32,
            sketch.name(),
            banding.bands as u32,
            banding.rows as u32,
        ),
        MethodConfig::SimHash { .. } => ("simhash", 0, "none", 0, 0),
    };
    IndexParams {
        method: method.to_string(),
        shingle: shingle.to_string(),
        ngram: cfg.ngram as u32,
        num_perm,
        sketch: sketch.to_string(),
        bands,
        rows,
        seed: cfg.seed,
        hashing: crate::sketch::shingle::HASH_SCHEME,
    }
}

/// An opened index, split against this run's inputs.
pub struct Joined {
    /// The inputs to read: new or changed files.
    pub to_read: Vec<FileEntry>,
    /// Inputs not read because the index holds them unchanged.
    pub unchanged: u64,
    /// The indexed documents taking part, as documents 0..m.
    pub entries: Vec<FileEntry>,
    /// Their results (content hash, size, fingerprint).
    pub docs: Vec<DocResult>,
    /// Their signatures.
    pub sigs: Vec<u32>,
    /// Their sets, for verification.
    pub sets: Option<Arc<IndexedSets>>,
    /// The generation opened (0 when the index is being created).
    pub generation: u64,
    /// Signature values per document.
    pub lanes: usize,
}

impl Joined {
    /// The indexed documents taking part, as the first documents of the scan's corpus (none
    /// without an index); what is left of `self` keeps the sets and the counts.
    pub fn take_documents(&mut self) -> Corpus {
        Corpus {
            files: std::mem::take(&mut self.entries),
            docs: std::mem::take(&mut self.docs),
            sigs: std::mem::take(&mut self.sigs),
            lanes: self.lanes,
            bottom: Sketches::default(),
            first_new: 0,
        }
    }
}

/// Opens the index (unless it is being created), checks its parameters and splits `files`
/// into those to read and those the index holds unchanged.
pub fn join(against: &IndexUse, cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
    let mut joined = Joined {
        to_read: Vec::new(),
        unchanged: 0,
        entries: Vec::new(),
        docs: Vec::new(),
        sigs: Vec::new(),
        sets: None,
        generation: 0,
        lanes: cfg.lanes(),
    };
    if against.create {
        // Refused before the scan, not after it.
        store::check_fresh(&against.dir)
            .with_context(|| format!("cannot build an index in {}", display_path(&against.dir)))?;
        joined.to_read = files;
        return Ok(joined);
    }
    let mut index = Index::open(&against.dir)
        .with_context(|| format!("cannot use index {}", display_path(&against.dir)))?;
    store::check_compatible(index.params(), &index_params(cfg))
        .with_context(|| format!("cannot scan against {}", display_path(&against.dir)))?;
    joined.generation = index.generation();
    let stored = index.entries();
    let mut by_path: HashMap<&[u8], Vec<usize>> = HashMap::new();
    let mut by_inode: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (i, e) in stored.iter().enumerate() {
        by_path.entry(&e.path[..]).or_default().push(i);
        if (e.dev, e.inode) != (0, 0) {
            by_inode.entry((e.dev, e.inode)).or_default().push(i);
        }
    }
    let mut superseded: HashSet<&[u8]> = HashSet::new();
    for f in files {
        let key = path_key(&f.path);
        let unchanged = |held: &Vec<usize>| held.iter().all(|&i| same_file(&stored[i], &f));
        match by_path.get_key_value(&key[..]) {
            Some((_, held)) if unchanged(held) => joined.unchanged += 1,
            Some((k, _)) => {
                superseded.insert(k);
                joined.to_read.push(f);
            }
            // Under another name (a symbolic link, a path the lexical key does not equate), the
            // same inode with the same size and time is the same file, so it is not read either.
            None if by_inode.get(&f.id).is_some_and(unchanged) => joined.unchanged += 1,
            None => joined.to_read.push(f),
        }
    }
    let lanes = joined.lanes;
    let cwd = std::env::current_dir().ok();
    // Indexed documents in path order (then line), as documents of a walk are: clusters come in
    // the order of their first member, whatever order the updates wrote the records in.
    let mut order: Vec<usize> = (0..stored.len())
        .filter(|&i| !superseded.contains(&stored[i].path[..]))
        .collect();
    order.sort_by_cached_key(|&i| (path_from_bytes(&stored[i].path), stored[i].line));
    let mut position = Vec::new();
    for i in order {
        let e = &stored[i];
        position.push(i);
        joined.entries.push(file_entry(e, cwd.as_deref()));
        joined.docs.push(DocResult {
            outcome: Outcome::Sketched,
            bytes: e.bytes,
            hash: e.content_hash,
            fingerprint: e.simhash,
            set: None,
            shingles: 0,
        });
        // K values for MinHash (the parameters were checked), none stored for SimHash.
        let start = joined.sigs.len();
        joined.sigs.extend(e.signature.iter().take(lanes));
        joined.sigs.resize(start + lanes, 0);
    }
    // The signatures now live in `joined.sigs`; one copy is enough.
    index.drop_signatures();
    joined.sets = Some(Arc::new(IndexedSets { index, position }));
    Ok(joined)
}

/// True when a stored document's file is the file walked now: same size, modification time,
/// device and inode. (A record's size is its dump's.)
fn same_file(e: &Entry, f: &FileEntry) -> bool {
    e.size == f.size && e.mtime_ns == mtime_ns(f.modified) && (e.dev, e.inode) == f.id
}

fn file_entry(e: &Entry, cwd: Option<&Path>) -> FileEntry {
    let stored = path_from_bytes(&e.path);
    // Shown relative to the working directory when inside it, like the inputs; else absolute.
    let path = match cwd.and_then(|c| stored.strip_prefix(c).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => stored,
    };
    FileEntry {
        path,
        aliases: Vec::new(),
        size: e.bytes,
        id: (e.dev, e.inode),
        modified: from_mtime_ns(e.mtime_ns),
        dump: false,
        record: e.line.map(|line| {
            Box::new(Record {
                line,
                id: e.id.clone(),
                file_size: e.size,
                at: None,
            })
        }),
        deferred: false,
    }
}

/// Nanoseconds since the epoch (negative before it; 0 when the platform has no time).
pub fn mtime_ns(t: Option<SystemTime>) -> i128 {
    match t {
        None => 0,
        Some(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        },
    }
}

fn from_mtime_ns(ns: i128) -> Option<SystemTime> {
    if ns == 0 {
        return None;
    }
    let d = Duration::from_nanos(ns.unsigned_abs().min(u64::MAX as u128) as u64);
    if ns > 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
}

/// The path an index stores and looks a file up by: made absolute against the working
/// directory, lexically (`.` dropped, `..` taken back; no symbolic link resolved, no system
/// call), so `old/a`, `./old/a`, `x/../old/a` and `/home/me/old/a` are one key, and the same
/// relative path from another directory is not.
fn path_key(p: &Path) -> Vec<u8> {
    match crate::input::walk::lexical_absolute(p) {
        Some(abs) => path_bytes(&abs),
        None => path_bytes(p),
    }
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(unix)]
fn path_from_bytes(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

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
