//! Joining an index to a scan (`scan --against DIR`, `index build`), in two steps.
//!
//! Before the first pass ([`join`]): the walked inputs are split into those the index holds
//! unchanged (same path, size, modification time, status change time, device and inode: not
//! read at all) and those to read; an input that changed supersedes its indexed documents,
//! which leave the comparison (a file is not its own near-duplicate) and, with `--update`,
//! the index.
//!
//! After it ([`attach`]): the indexed documents that can meet a new one are found, and only
//! they join the scan, as documents 0..m ahead of the new ones, in path order: those sharing a
//! band key (or SimHash piece) or a content hash with a new document, looked up in the
//! segments' sorted keys ([`crate::index::lookup`]). Pairs of two indexed documents are never
//! checked (they were reported when the later of them was new), so no other indexed document
//! could change the report: buckets holding no new document are dropped by every scan, and
//! the ones kept hold exactly the documents found. An indexed document whose file is gone is
//! left out (it would otherwise represent the live copy of it).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::config::{Config, IndexUse, MethodConfig};
use crate::index::open::{DocRef, Opened};
use crate::index::segment::layout::{BlobRef, Row};
use crate::index::store::{self, Entry, IndexParams};
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{DocResult, Outcome, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::display_path;
use crate::sketch::shingle::Shingler;

use super::gone::is_gone;
use super::paths::{entry_as_file, from_mtime_ns, mtime_ns, path_from_bytes, path_key};

/// What verification needs to derive an indexed document's set.
#[derive(Clone, Debug)]
struct Stored {
    doc: DocRef,
    entry: Entry,
    blob: BlobRef,
}

/// The stored sets of the indexed documents taking part in a scan, by document id.
pub struct IndexedSets {
    index: Arc<Opened>,
    docs: Vec<Stored>,
    shingle: crate::sketch::shingle::ShingleKind,
    ngram: usize,
    normalize: crate::sketch::normalize::Normalize,
    /// The largest stored content decompressed (the scan's --max-size).
    limit: u64,
    /// The first stored set found damaged: an update then writes nothing.
    damage: std::sync::Mutex<Option<String>>,
}

impl IndexedSets {
    /// The stored sets of the indexed documents `refs` (document i of a staged verify task's
    /// partition is `refs[i]`), read as [`attach`] reads them.
    pub fn of_refs(cfg: &Config, index: Arc<Opened>, refs: &[DocRef]) -> Result<IndexedSets> {
        let mut docs = Vec::with_capacity(refs.len());
        for &d in refs {
            let row = index
                .row(d)
                .with_context(|| format!("cannot use index {}", display_path(index.path())))?;
            docs.push(Stored {
                doc: d,
                entry: Entry {
                    signature: Vec::new(),
                    ..row.entry
                },
                blob: row.blob,
            });
        }
        Ok(IndexedSets {
            index,
            docs,
            shingle: cfg.shingle,
            ngram: cfg.ngram,
            normalize: cfg.normalize,
            limit: cfg.walk.max_size,
            damage: std::sync::Mutex::new(None),
        })
    }

    /// The indexed documents, in the order of their ids.
    pub fn refs(&self) -> impl Iterator<Item = DocRef> + '_ {
        self.docs.iter().map(|s| s.doc)
    }

    /// Why a stored set could not be read, if one could not.
    pub fn damage(&self) -> Option<String> {
        self.damage.lock().ok().and_then(|d| d.clone())
    }
}

impl std::fmt::Debug for IndexedSets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedSets({} documents)", self.docs.len())
    }
}

impl StoredSets for IndexedSets {
    fn count(&self) -> u32 {
        self.docs.len() as u32
    }

    fn read(&self, doc: u32) -> Result<Box<[u64]>, String> {
        let s = self
            .docs
            .get(doc as usize)
            .ok_or("not an indexed document")?;
        let mut shingler = Shingler::new(self.shingle, self.ngram).normalizing(self.normalize);
        self.index
            .set(s.doc, &s.entry, &s.blob, &mut shingler, self.limit)
            .map_err(|e| {
                let e = format!("{e:#}");
                if let Ok(mut d) = self.damage.lock() {
                    d.get_or_insert_with(|| e.clone());
                }
                e
            })
    }
}

/// The parameters a scan under `cfg` would store in, or require of, an index.
pub fn index_params(cfg: &Config) -> IndexParams {
    let shingle = match cfg.shingle {
        crate::sketch::shingle::ShingleKind::Word => "word",
        crate::sketch::shingle::ShingleKind::Char => "char",
    };
    let (method, num_perm, sketch, bands, rows, max_distance) = match &cfg.method {
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
            0,
        ),
        MethodConfig::SimHash { max_distance, .. } => ("simhash", 0, "none", 0, 0, *max_distance),
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
        max_distance,
        normalize: cfg.normalize.name(),
    }
}

/// An opened index, split against this run's inputs.
pub struct Joined {
    /// The inputs to read: new or changed files.
    pub to_read: Vec<FileEntry>,
    /// Inputs not read because the index holds them unchanged.
    pub unchanged: u64,
    /// The index (None without one, or when `index build` creates it).
    pub index: Option<Arc<Opened>>,
    /// Indexed documents of inputs that changed.
    pub superseded: HashSet<DocRef>,
    /// Paths of walked inputs (which exist).
    pub walked: HashSet<Vec<u8>>,
    /// The indexed documents compared: the index's, less those superseded.
    pub documents: u64,
    /// The indexed documents taking part, with their sets (after [`attach`]).
    pub sets: Option<Arc<IndexedSets>>,
    /// Indexed documents met as candidates whose files are gone.
    pub gone: u64,
}

impl Joined {
    /// No index: every file is read.
    pub fn none(files: Vec<FileEntry>) -> Joined {
        Joined {
            to_read: files,
            unchanged: 0,
            index: None,
            superseded: HashSet::new(),
            walked: HashSet::new(),
            documents: 0,
            sets: None,
            gone: 0,
        }
    }

    /// The generation opened (0 when the index is being created).
    pub fn generation(&self) -> u64 {
        self.index.as_ref().map_or(0, |i| i.generation)
    }
}

/// Opens the index, checks its parameters and splits `files` into those to read and those
/// the index holds unchanged.
pub fn join(against: &IndexUse, cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
    let index = Opened::open(&against.dir)
        .with_context(|| format!("cannot use index {}", display_path(&against.dir)))?;
    store::check_compatible(&index.params, &index_params(cfg))
        .with_context(|| format!("cannot scan against {}", display_path(&against.dir)))?;
    let mut joined = Joined::none(Vec::new());
    // A chunk of inputs at a time, so that the rows read to compare them are held for one
    // chunk only, however many inputs a run walks.
    let mut files = files.into_iter().peekable();
    while files.peek().is_some() {
        let chunk: Vec<FileEntry> = files.by_ref().take(JOIN_CHUNK).collect();
        join_chunk(&index, against, chunk, &mut joined)?;
    }
    joined.documents = index.live() - joined.superseded.len() as u64;
    joined.index = Some(Arc::new(index));
    // The index holds where an unchanged input's documents stood when it was indexed, not where
    // they stand among this run's clusters: the dataset holds only the inputs read.
    if cfg.dataset.is_some() && joined.unchanged > 0 {
        let said = match joined.unchanged {
            1 => "1 input held unchanged by the index was not read (--against): it is not in \
                  the dataset; to write it, scan it without --against"
                .to_string(),
            n => format!(
                "{n} inputs held unchanged by the index were not read (--against): they are \
                 not in the dataset; to write them, scan them without --against"
            ),
        };
        cfg.messages.warn(&format!("--write-dataset: {said}"));
    }
    Ok(joined)
}

/// Inputs compared with the index at a time.
const JOIN_CHUNK: usize = 8192;

/// Splits `files` into those the index holds unchanged and those to read, into `joined`.
fn join_chunk(
    index: &Opened,
    against: &IndexUse,
    files: Vec<FileEntry>,
    joined: &mut Joined,
) -> Result<()> {
    let keys: Vec<Vec<u8>> = files.iter().map(|f| path_key(&f.path)).collect();
    let by_path = index
        .by_paths(&keys)
        .with_context(|| format!("cannot use index {}", display_path(&against.dir)))?;
    let mut unmatched = Vec::new();
    for ((f, key), held) in files.into_iter().zip(keys).zip(by_path) {
        if held.is_empty() {
            unmatched.push((f, key));
        } else if held.iter().all(|(_, r)| same_file(&r.entry, &f)) {
            joined.unchanged += 1;
            joined.walked.insert(key);
        } else {
            joined.superseded.extend(held.iter().map(|(d, _)| *d));
            joined.walked.insert(key);
            joined.to_read.push(f);
        }
    }
    // Under another name (a symbolic link, a path the lexical key does not equate), the same
    // inode with the same size and times is the same file, so it is not read either.
    let ids: Vec<(u64, u64)> = unmatched.iter().map(|(f, _)| f.id).collect();
    let by_inode = index
        .by_inodes(&ids)
        .with_context(|| format!("cannot use index {}", display_path(&against.dir)))?;
    for ((f, key), held) in unmatched.into_iter().zip(by_inode) {
        joined.walked.insert(key);
        if !held.is_empty() && held.iter().all(|(_, r)| same_file(&r.entry, &f)) {
            joined.unchanged += 1;
        } else {
            joined.to_read.push(f);
        }
    }
    Ok(())
}

/// True when a stored document's file is the file walked now: same size, modification time,
/// device and inode, and status change time where it was recorded. (A record's size is its
/// dump's.)
fn same_file(e: &Entry, f: &FileEntry) -> bool {
    e.size == f.size
        && e.mtime_ns == mtime_ns(f.modified)
        && (e.ctime_ns == 0 || e.ctime_ns == mtime_ns(f.changed))
        && (e.dev, e.inode) == f.id
}

/// Finds the indexed documents that can meet the `new` ones and returns them as the first
/// documents of the scan's corpus, in path order (none without an index); their sets are then
/// `joined.sets`.
pub fn attach(cfg: &Config, joined: &mut Joined, new: &Corpus) -> Result<Corpus> {
    let Some(index) = joined.index.clone() else {
        return Ok(Corpus::empty(cfg.lanes()));
    };
    let found = crate::index::lookup::candidates(cfg, &index, new, &joined.superseded)
        .with_context(|| format!("cannot use index {}", display_path(index.path())))?;
    attach_found(cfg, joined, index, found)
}

/// [`attach`] for the documents a staged run's sign tasks met (`met`, any order, repeats
/// allowed): those not superseded, with their rows, as [`attach`] takes what it finds.
pub fn attach_met(cfg: &Config, joined: &mut Joined, mut met: Vec<DocRef>) -> Result<Corpus> {
    let Some(index) = joined.index.clone() else {
        return Ok(Corpus::empty(cfg.lanes()));
    };
    met.sort_unstable();
    met.dedup();
    met.retain(|d| !joined.superseded.contains(d));
    let found = (met.into_iter())
        .map(|d| Ok((d, index.row(d)?)))
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("cannot use index {}", display_path(index.path())))?;
    attach_found(cfg, joined, index, found)
}

/// The indexed documents `found` that still exist, in path order, as the first documents of
/// the scan's corpus; their sets are then `joined.sets`.
fn attach_found(
    cfg: &Config,
    joined: &mut Joined,
    index: Arc<Opened>,
    found: Vec<(DocRef, Row)>,
) -> Result<Corpus> {
    let lanes = cfg.lanes();
    let mut out = Corpus::empty(lanes);
    let mut present = Presence::new(&joined.walked);
    let mut rows: Vec<(DocRef, Row)> = Vec::with_capacity(found.len());
    for (d, row) in found {
        if present.exists(&row.entry.path) {
            rows.push((d, row));
        } else {
            joined.gone += 1;
        }
    }
    if joined.gone > 0 {
        cfg.messages.tell(&format!(
            "{} indexed document(s) whose files are gone were left out of the comparison; \
             `dupfind index prune --index {}` drops them",
            joined.gone,
            display_path(index.path())
        ));
    }
    let cwd = std::env::current_dir().ok();
    // Indexed documents in path order (then line), as documents of a walk are: clusters come
    // in the order of their first member, whatever segment holds them.
    rows.sort_by_cached_key(|(_, r)| (path_from_bytes(&r.entry.path), r.entry.line));
    let mut stored = Vec::with_capacity(rows.len());
    for (d, row) in rows {
        let e = &row.entry;
        out.files.push(file_entry(e, cwd.as_deref()));
        out.docs.push(DocResult {
            outcome: Outcome::Sketched,
            bytes: e.bytes,
            hash: e.content_hash,
            fingerprint: e.simhash,
            set: None,
            shingles: 0,
            links: 0,
            disk: 0,
            json_lines: false,
        });
        // K values for MinHash (the parameters were checked), none stored for SimHash.
        let start = out.sigs.len();
        out.sigs.extend(e.signature.iter().take(lanes));
        out.sigs.resize(start + lanes, 0);
        stored.push(Stored {
            doc: d,
            entry: Entry {
                signature: Vec::new(),
                ..row.entry
            },
            blob: row.blob,
        });
    }
    debug_assert!(index.params.lanes() == 0 || lanes == index.params.lanes());
    joined.sets = Some(Arc::new(IndexedSets {
        index,
        docs: stored,
        shingle: cfg.shingle,
        ngram: cfg.ngram,
        normalize: cfg.normalize,
        limit: cfg.walk.max_size,
        damage: std::sync::Mutex::new(None),
    }));
    Ok(out)
}

/// Whether indexed files still exist: a walked path does; any other is looked up once.
struct Presence<'a> {
    walked: &'a HashSet<Vec<u8>>,
    seen: HashMap<Vec<u8>, bool>,
}

impl<'a> Presence<'a> {
    fn new(walked: &'a HashSet<Vec<u8>>) -> Presence<'a> {
        Presence {
            walked,
            seen: HashMap::new(),
        }
    }

    fn exists(&mut self, path: &[u8]) -> bool {
        if self.walked.contains(path) {
            return true;
        }
        *self
            .seen
            .entry(path.to_vec())
            .or_insert_with(|| !is_gone(&path_from_bytes(path)))
    }
}

fn file_entry(e: &Entry, cwd: Option<&Path>) -> FileEntry {
    let stored = path_from_bytes(&e.path);
    // Shown relative to the working directory when inside it, like the inputs; else absolute.
    let path = match cwd.and_then(|c| stored.strip_prefix(c).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => stored,
    };
    entry_as_file(e, path, e.bytes, from_mtime_ns(e.ctime_ns))
}
