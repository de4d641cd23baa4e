//! Joining an index to a scan (`scan --against DIR`, `index build`).
//!
//! The indexed documents take part in the scan as documents 0..m, ahead of the new ones, with
//! the signatures, content hashes and shingle sets stored in the index, so nothing of them is
//! read again. Pairs of two indexed documents are never checked (they were reported when the
//! later of them was new); every reported pair has a new document in it, and an indexed member
//! always represents its cluster. (`duplicates` lists other indexed members only when a new
//! document links two indexed ones; they carry `indexed: true`.)
//!
//! The unchanged-file cache: an input whose path, size, modification time, device and inode
//! all equal those stored for it is not read at all; its indexed documents stand for it. An
//! input that changed is read again, and its old documents leave the comparison (a file is not
//! its own near-duplicate) and, with `--update`, the index.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::config::{Config, IndexUse, MethodConfig};
use crate::index::store::{self, Entry, Index, IndexParams};
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::StoredSets;
use crate::ingest::worker::{DocResult, Outcome};
use crate::input::walk::{FileEntry, Record};
use crate::messages::display_path;
use crate::sketch::bottomk::Sketches;

use super::paths::{from_mtime_ns, mtime_ns, path_from_bytes, path_key};

/// The stored sets of the indexed documents taking part in a scan, by document id.
pub struct IndexedSets {
    pub(super) index: Index,
    /// Document id → position in the index.
    pub(super) position: Vec<usize>,
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
