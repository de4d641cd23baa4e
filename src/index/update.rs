//! Preparing the next generation (`--update`, `index build`): one new segment holding the
//! scan's new documents (their contents read again, checked against the content hashes of the
//! first pass, and compressed) and the tombstones of the indexed documents they supersede (and,
//! with `--prune`, of those whose files are gone). Older segments are not touched. Nothing is
//! written when there is nothing to add or remove.
//!
//! The result is a [`Pending`] commit: the report is delivered first, and the generation made
//! live only then.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use crate::config::{Config, MethodConfig};
use crate::index::codec::{self, BlobKind, Packer};
use crate::index::commit::{check_fresh_dir, sweep, tidy, Pending, LOCK};
use crate::index::dir::IndexDir;
use crate::index::join::{index_params, Joined};
use crate::index::manifest::{self, Manifest, SegmentEntry};
use crate::index::open::{DocRef, Opened};
use crate::index::segment::write::{Plan, SegmentWriter, Written};
use crate::index::store::Entry;
use crate::ingest::worker::{DocResult, DocWorker, Engine, Outcome};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};

use super::paths::{mtime_ns, path_key};

/// New documents read again together, at most.
const BATCH_DOCS: usize = 1024;
/// Bytes of new documents read again together, at most (one larger document is a batch of
/// its own).
const BATCH_BYTES: u64 = 64 << 20;

/// The scan's new documents, as an update writes them.
pub struct NewDocs<'a> {
    pub cfg: &'a Config,
    pub engine: &'a Engine,
    /// Every document of the scan: indexed ones first.
    pub files: &'a [FileEntry],
    pub docs: &'a [DocResult],
    pub sigs: &'a [u32],
    pub lanes: usize,
    /// For each document, the document holding its content's signature.
    pub canon: &'a [u32],
    /// The first new document.
    pub first_new: u32,
}

/// A document's blob and its kind, or why its content could not be read again.
type Packed = Result<(BlobKind, Vec<u8>), String>;

/// What preparing an update came to.
pub enum Prepared {
    /// Nothing to add or remove: nothing written.
    Unchanged,
    /// The next generation, written, to be made live.
    Pending(Pending),
}

impl NewDocs<'_> {
    /// The new documents with text, in document order.
    fn ids(&self) -> Vec<u32> {
        (self.first_new..self.files.len() as u32)
            .filter(|&d| {
                matches!(
                    self.docs[d as usize].outcome,
                    Outcome::Sketched | Outcome::Duplicate
                )
            })
            .collect()
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
            ctime_ns: mtime_ns(f.changed),
            dev: f.id.0,
            inode: f.id.1,
            content_hash: doc.hash,
            signature,
            simhash: self.docs[canon].fingerprint,
        }
    }

    /// Batches of at most [`BATCH_DOCS`] documents and [`BATCH_BYTES`] bytes.
    fn batches(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut bytes = 0u64;
        for &d in ids {
            let n = self.docs[d as usize].bytes;
            match out.last_mut() {
                Some(b) if b.len() < BATCH_DOCS && bytes + n <= BATCH_BYTES => {
                    b.push(d);
                    bytes += n;
                }
                _ => {
                    out.push(vec![d]);
                    bytes = n;
                }
            }
        }
        out
    }

    /// The contents of `batch`, read again in parallel (each checked against its hash).
    fn contents(&self, batch: &[u32]) -> Vec<(u32, Result<Vec<u8>, String>)> {
        batch
            .par_iter()
            .map_init(
                || DocWorker::new(self.engine),
                |w, &d| {
                    let doc = &self.docs[d as usize];
                    (d, w.content(d, &self.files[d as usize], doc.hash))
                },
            )
            .collect()
    }
}

/// Writes a segment: `carry` adds documents first (an upgrade's), then `new`'s documents
/// `ids`. The dictionary is `inherited`, or trained on the first batch when there is none.
/// New documents that cannot be read again are left out and listed in `failed`.
pub fn write_segment(
    dir: &IndexDir,
    mut plan: Plan,
    inherited: Option<Vec<u8>>,
    new: Option<(&NewDocs, &[u32])>,
    carry: impl FnOnce(&mut SegmentWriter) -> Result<()>,
    failed: &mut Vec<InputError>,
) -> Result<Written> {
    let batches = new.map_or(Vec::new(), |(n, ids)| n.batches(ids));
    let mut first = new.zip(batches.first()).map(|((n, _), b)| n.contents(b));
    let dict = inherited.or_else(|| {
        let samples: Vec<&[u8]> = first
            .iter()
            .flatten()
            .filter_map(|(_, c)| c.as_deref().ok())
            .scan(0usize, |total, c| {
                *total += c.len();
                (*total <= codec::SAMPLE_BYTES).then_some(c)
            })
            .collect();
        codec::train(&samples)
    });
    plan.dicts = dict.iter().cloned().collect();
    let cdict = dict.as_deref().map(codec::cdict);
    let mut writer = SegmentWriter::new(dir, plan)?;
    carry(&mut writer)?;
    let Some((new, _)) = new else {
        return writer.finish();
    };
    for (i, batch) in batches.iter().enumerate() {
        let contents = match (i, first.take()) {
            (0, Some(c)) => c,
            _ => new.contents(batch),
        };
        let packed: Vec<(u32, Packed)> = contents
            .into_par_iter()
            .map_init(
                || Packer::new(cdict.as_ref()),
                |p, (d, content)| {
                    let blob = content.and_then(|c| p.pack(&c).map_err(|e| format!("{e:#}")));
                    (d, blob)
                },
            )
            .collect();
        for (d, blob) in packed {
            match blob {
                Ok((kind, bytes)) => {
                    let dict = (kind == BlobKind::Zstd && cdict.is_some()).then_some(0);
                    writer.add(&new.entry(d), kind, dict, &bytes)?;
                }
                Err(reason) => {
                    failed.push(new.files[d as usize].error(None, format!("not indexed: {reason}")))
                }
            }
        }
    }
    writer.finish()
}

/// Renames a written segment's files into place.
pub fn place(dir: &IndexDir, w: &Written) -> Result<()> {
    dir.rename(&w.temp, &w.name)?;
    dir.rename(&w.table_temp, &w.table_name)
}

/// The manifest's entry for a written segment.
pub fn entry_of(w: &Written) -> SegmentEntry {
    SegmentEntry {
        number: w.number,
        file: w.name.clone(),
        bytes: w.bytes,
        header_sum: w.header_sum,
        documents: w.docs,
        tombstones: w.tombstones,
        table: w.table_name.clone(),
        table_bytes: w.table_bytes,
        table_sum: w.table_sum,
    }
}

/// Refuses a directory holding anything but an interrupted build's leftovers; makes a
/// missing one.
pub fn check_fresh(dir: &Path) -> Result<()> {
    check_fresh_dir(&IndexDir::create(dir)?)
}

/// The mode of the file an index's new files join: its manifest's (or format-1 file's).
/// [`crate::index::dir::new_file_mode`] says what of it they take: its read and write bits,
/// never more than the umask allows.
pub fn mode_of(dir: &IndexDir) -> Result<Option<u32>> {
    for name in [manifest::MANIFEST, crate::index::store::DATA] {
        if let Some(f) = dir.open_file(name)? {
            let meta = f
                .metadata()
                .with_context(|| format!("reading {}", display_path(&dir.join(name))))?;
            return Ok(Some(meta.mode()));
        }
    }
    Ok(None)
}

/// `index build`: a new index of the scan's documents, pending.
pub fn create(path: &Path, new: &NewDocs, failed: &mut Vec<InputError>) -> Result<Prepared> {
    let dir = IndexDir::create(path)?;
    let lock = dir.lock(LOCK)?;
    check_fresh_dir(&dir)?;
    sweep(&dir, None, &new.cfg.messages)?;
    let mut next = Manifest::fresh(index_params(new.cfg), 1);
    let plan = Plan::next(&mut next, &dir, Vec::new(), None)?;
    let ids = new.ids();
    let w = write_segment(&dir, plan, None, Some((new, &ids)), |_| Ok(()), failed)?;
    place(&dir, &w)?;
    next.segments.push(entry_of(&w));
    let written = vec![w.name.clone(), w.table_name.clone()];
    let pending = Pending::new(dir, lock, &next, None, written, Vec::new(), w.written)?;
    Ok(Prepared::Pending(pending))
}

/// `--update`: the next generation of the index `joined` opened, pending; `Unchanged` when
/// there is nothing to add or remove.
pub fn update(
    joined: &Joined,
    new: &NewDocs,
    prune: bool,
    failed: &mut Vec<InputError>,
) -> Result<Prepared> {
    let index = joined.index.as_ref().context("no index was opened")?;
    if let Some(damage) = joined.sets.as_ref().and_then(|s| s.damage()) {
        bail!("{damage}");
    }
    let ids = new.ids();
    let mut removed: HashSet<DocRef> = joined.superseded.clone();
    if prune {
        removed.extend(crate::index::prune::gone(index, &joined.walked)?);
    }
    if ids.is_empty() && removed.is_empty() {
        tidy(index.dir(), &new.cfg.messages);
        return Ok(Prepared::Unchanged);
    }
    let dir = index.dir().try_clone()?;
    let lock = dir.lock(LOCK)?;
    let current = manifest::read(&dir)?;
    check_unchanged(index, current.as_ref(), &dir)?;
    sweep(&dir, current.as_ref(), &new.cfg.messages)?;
    let mode = mode_of(&dir)?;
    match current {
        None => {
            crate::index::upgrade::upgrade_with(index, dir, lock, mode, &removed, new, &ids, failed)
        }
        Some(m) => next_generation(index, m, dir, lock, mode, &removed, new, &ids, failed),
    }
}

/// The index must still be the generation the scan opened: not updated since, nor rebuilt.
fn check_unchanged(index: &Opened, current: Option<&Manifest>, dir: &IndexDir) -> Result<()> {
    let now = match current {
        Some(m) => (m.index_id, m.generation),
        None => {
            let legacy = crate::index::store::Index::open_in(dir)?;
            (u128::from(legacy.stamp()), legacy.generation())
        }
    };
    if now.0 != index.identity {
        bail!(
            "index {} was rebuilt during this run; run again",
            display_path(dir.path())
        );
    }
    if now.1 != index.generation {
        bail!(
            "index {} changed during this run (generation {}, expected {}); run again",
            display_path(dir.path()),
            now.1,
            index.generation
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn next_generation(
    index: &Opened,
    m: Manifest,
    dir: IndexDir,
    lock: std::fs::File,
    mode: Option<u32>,
    removed: &HashSet<DocRef>,
    new: &NewDocs,
    ids: &[u32],
    failed: &mut Vec<InputError>,
) -> Result<Prepared> {
    let mut next = Manifest {
        generation: m.next_generation()?,
        ..m
    };
    let mut tombstones: Vec<(u64, u32)> = removed
        .iter()
        .map(|d| (index.segments()[d.seg as usize].number(), d.row))
        .collect();
    tombstones.sort_unstable();
    // The dictionary of the newest segment that has one serves the new documents too.
    let inherited = index
        .segments()
        .iter()
        .rev()
        .find_map(|s| s.dicts().first().cloned());
    let plan = Plan::next(&mut next, &dir, tombstones, mode)?;
    let w = write_segment(&dir, plan, inherited, Some((new, ids)), |_| Ok(()), failed)?;
    place(&dir, &w)?;
    let mut written = vec![w.name.clone(), w.table_name.clone()];
    let mut bytes = w.written;
    next.segments.push(entry_of(&w));
    let mut obsolete = Vec::new();
    let picks = crate::index::compact::auto_pick(index);
    if !picks.is_empty() {
        let number = next.take_segment(&dir)?;
        let merged = crate::index::compact::merge(index, &dir, &picks, number, mode, removed)?;
        place(&dir, &merged)?;
        written.extend([merged.name.clone(), merged.table_name.clone()]);
        bytes += merged.written;
        obsolete = crate::index::compact::replace(&mut next, index, &picks, &merged);
    }
    let pending = Pending::new(dir, lock, &next, mode, written, obsolete, bytes)?;
    Ok(Prepared::Pending(pending))
}
