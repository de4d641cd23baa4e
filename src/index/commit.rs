//! The one write path, which every writer (build, update, prune, compaction, upgrade) takes in
//! the same steps, as tantivy's writers hand their segments to its one `SegmentUpdater`:
//!
//! 1. [`Locked`]: the directory's lock taken, the manifest current under it read (and checked
//!    by the writer), what killed writers left removed ([`sweep`]);
//! 2. [`Writer`]: the next generation's manifest, which the writer fills: each new segment is
//!    written under fresh temporary names (each file fsynced), renamed to its segment name and
//!    added ([`Writer::add`]), or put in place of the segments it merges ([`Writer::replace`]);
//! 3. [`Pending`] ([`Writer::finish`]): the directory fsynced, the new manifest written under a
//!    temporary name and fsynced. Its [`Pending::commit`] renames the manifest into place (the
//!    one commit point), fsyncs the directory, and only then removes the files the new
//!    generation no longer names.
//!
//! A writer killed before the rename leaves the old generation and files no manifest names;
//! killed after it, the new one and the files of the old one it had yet to remove. Either way
//! the next writer removes them. A reader never sees a mix: it opens the files the manifest it
//! read names, and files are removed only once no manifest names them. A generation dropped
//! before its commit (a failed write, or a report that could not be delivered) removes what it
//! wrote.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::index::dir::IndexDir;
use crate::index::keys::{IndexKeying, Keying};
use crate::index::manifest::{self, Manifest, SegmentEntry, MANIFEST};
use crate::index::open::{self, DocRef, Opened};
use crate::index::segment::write::{Plan, Written};
use crate::index::segment::{data_name, table_name};
use crate::index::store::{self, IndexParams};
use crate::index::sweep::{check_fresh_dir, sweep, LOCK};
use crate::messages::{display_path, Messages};

/// An index held by a writer: locked, checked and swept.
pub struct Locked {
    dir: IndexDir,
    lock: File,
    /// The manifest under the lock (None: a new index, or one of format 1).
    current: Option<Manifest>,
    /// The mode of the file the new files join ([`mode_of`]).
    mode: Option<u32>,
}

impl Locked {
    /// `index build`: `path`, made when missing, which must hold nothing but an interrupted
    /// build's leftovers.
    pub fn create(path: &Path, messages: &Messages) -> Result<Locked> {
        let dir = IndexDir::create(path)?;
        let lock = dir.lock(LOCK)?;
        check_fresh_dir(&dir)?;
        Locked::swept(dir, lock, None, messages)
    }

    /// `index compact`, `prune` and `upgrade`: the index in `path`, and the index as it is
    /// under the lock. Swept also when the command then finds nothing to write: a compaction
    /// killed after its commit leaves a clean index and the files of the generation before it.
    pub fn open(path: &Path) -> Result<(Locked, Opened)> {
        let dir = IndexDir::open(path)?.with_context(|| {
            format!(
                "{} is not a dupfind index (no such directory)",
                display_path(path)
            )
        })?;
        // A directory with neither an index nor a lock is refused before the lock is made: it
        // would be left in a directory of the user's. One with a lock is left to the lock (a
        // build under way holds one and has no manifest yet) and to the reading under it.
        if dir.open_file(LOCK)?.is_none() {
            open::check_holds_index(&dir)?;
        }
        let lock = dir.lock(LOCK)?;
        let index = Opened::open_in(dir.try_clone()?)?;
        let locked = Locked::swept(dir, lock, index.manifest.clone(), &Messages::default())?;
        Ok((locked, index))
    }

    /// `--update`: the index a scan opened, which must still be the generation it opened.
    pub fn reopen(index: &Opened, messages: &Messages) -> Result<Locked> {
        let dir = index.dir().try_clone()?;
        let lock = dir.lock(LOCK)?;
        let current = manifest::read(&dir)?;
        check_unchanged(index, current.as_ref(), &dir)?;
        Locked::swept(dir, lock, current, messages)
    }

    /// Only once the directory is known to hold an index (or to be fresh) is anything removed.
    fn swept(
        dir: IndexDir,
        lock: File,
        current: Option<Manifest>,
        messages: &Messages,
    ) -> Result<Locked> {
        sweep(&dir, current.as_ref(), messages)?;
        let mode = mode_of(&dir)?;
        Ok(Locked {
            dir,
            lock,
            current,
            mode,
        })
    }

    /// The manifest current under the lock (None: a new index, or one of format 1).
    pub fn current(&self) -> Option<&Manifest> {
        self.current.as_ref()
    }

    /// The next generation of the current manifest: its segments, one generation on.
    pub fn next(mut self) -> Result<Writer> {
        let m = self
            .current
            .take()
            .context("a format-1 index has no segments to add to")?;
        let next = Manifest {
            generation: m.next_generation()?,
            ..m
        };
        Ok(self.writer(next))
    }

    /// A new manifest at `generation`, under a new identity: a new index's, or a format-1
    /// index's rewritten as segments.
    pub fn fresh(self, params: IndexParams, generation: u64) -> Writer {
        self.writer(Manifest::fresh(params, generation))
    }

    fn writer(self, next: Manifest) -> Writer {
        Writer {
            staged: Staged {
                dir: self.dir,
                _lock: self.lock,
                written: Vec::new(),
                obsolete: Vec::new(),
                temp: None,
                committed: false,
            },
            mode: self.mode,
            next,
            bytes: 0,
        }
    }
}

/// What a generation has put in the directory, and the lock it holds until it is live.
struct Staged {
    dir: IndexDir,
    _lock: File,
    /// Segment files placed for it.
    written: Vec<String>,
    /// Files of the current generation it no longer names.
    obsolete: Vec<String>,
    /// Its manifest, under its temporary name.
    temp: Option<String>,
    committed: bool,
}

impl Drop for Staged {
    /// A generation dropped before its commit (a failed write, a report that could not be
    /// delivered) gives its space back; a killed one leaves its files to the next writer.
    fn drop(&mut self) {
        if !self.committed {
            for name in self.temp.iter().chain(&self.written) {
                let _ = self.dir.remove(name);
            }
        }
    }
}

/// The next generation, being written.
pub struct Writer {
    staged: Staged,
    /// The mode of the file its new files join ([`mode_of`]).
    mode: Option<u32>,
    next: Manifest,
    /// Bytes written for it.
    bytes: u64,
}

impl Writer {
    /// The index directory.
    pub fn dir(&self) -> &IndexDir {
        &self.staged.dir
    }

    /// A new segment of the next generation, removing `tombstones`; its number is taken from
    /// the next manifest ([`Manifest::take_segment`]).
    pub fn plan(&mut self, tombstones: Vec<(u64, u32)>) -> Result<Plan> {
        Ok(Plan {
            number: self.next.take_segment(&self.staged.dir)?,
            index_id: self.next.index_id,
            lanes: self.next.params.lanes(),
            keying: Keying::for_index(&self.next.params),
            dicts: Vec::new(),
            tombstones,
            mode: self.mode,
        })
    }

    /// Puts a written segment in place, after the next generation's others.
    pub fn add(&mut self, segment: Written) -> Result<()> {
        self.place(&segment)?;
        self.next.segments.push(entry_of(&segment));
        Ok(())
    }

    /// Puts a merged segment in place of the segments numbered `merged` (where the first of
    /// them was); their files are removed once the generation is live.
    pub fn replace(&mut self, merged: &[u64], segment: Written) -> Result<()> {
        self.place(&segment)?;
        let segments = &mut self.next.segments;
        let at = segments
            .iter()
            .position(|s| merged.contains(&s.number))
            .unwrap_or(segments.len());
        segments.retain(|s| !merged.contains(&s.number));
        segments.insert(at.min(segments.len()), entry_of(&segment));
        let mut numbers = merged.to_vec();
        numbers.sort_unstable();
        self.staged.obsolete.extend(
            numbers
                .into_iter()
                .flat_map(|n| [data_name(n), table_name(n)]),
        );
        Ok(())
    }

    /// A file of the current generation the next one no longer names (format 1's, once it
    /// is upgraded): removed once the generation is live.
    pub fn retire(&mut self, name: &str) {
        self.staged.obsolete.push(name.to_string());
    }

    /// Renames a written segment's files into place.
    fn place(&mut self, w: &Written) -> Result<()> {
        let staged = &mut self.staged;
        staged.dir.rename(&w.temp, &w.name)?;
        staged.written.push(w.name.clone());
        staged.dir.rename(&w.table_temp, &w.table_name)?;
        staged.written.push(w.table_name.clone());
        self.bytes += w.written;
        Ok(())
    }

    /// Writes the next generation's manifest, synced, under a temporary name: the generation
    /// is complete, to be made live by [`Pending::commit`].
    pub fn finish(self) -> Result<Pending> {
        let Writer {
            mut staged,
            mode,
            next,
            bytes,
        } = self;
        // The new segments' names must be durable before a manifest names them.
        staged.dir.sync()?;
        let bytes = bytes + next.encode()?.len() as u64;
        staged.temp = Some(manifest::write_temp(&staged.dir, &next, mode)?);
        Ok(Pending {
            staged,
            generation: next.generation,
            bytes,
        })
    }

    /// For `index compact`, `prune` and `upgrade`: the generation made live at once, leaving
    /// `documents`, `removed` of them by this command.
    pub fn commit(self, documents: u64, removed: u64) -> Result<Summary> {
        let segments = self.next.segments.len();
        let pending = self.finish()?;
        let summary = Summary {
            generation: pending.generation,
            written: true,
            segments,
            documents,
            removed,
            bytes_written: pending.bytes,
        };
        if !crate::interrupt::settle_commit() {
            // Interrupted before the commit: the index is left as it was, its new files removed,
            // and the run ends as the handler ends it before this point.
            drop(pending);
            std::process::exit(crate::exit::ExitCode::Interrupted.code());
        }
        pending.commit()?;
        Ok(summary)
    }
}

/// A generation written and synced, not yet live; dropped, it removes what it wrote.
pub struct Pending {
    staged: Staged,
    /// The generation it makes live.
    pub generation: u64,
    /// Bytes written for it, the manifest included.
    pub bytes: u64,
}

impl Pending {
    /// Makes the generation live; then removes what it no longer names.
    pub fn commit(mut self) -> Result<()> {
        let staged = &mut self.staged;
        let temp = staged.temp.as_deref().context("no manifest was written")?;
        staged.dir.rename(temp, MANIFEST)?;
        staged.committed = true;
        staged.dir.sync()?;
        for name in &staged.obsolete {
            // A failure leaves a file no manifest names, which the next writer removes.
            let _ = staged.dir.remove(name);
        }
        Ok(())
    }
}

/// What `index compact`, `index prune` and `index upgrade` print.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The generation the index is at now.
    pub generation: u64,
    /// True when a new generation was written.
    pub written: bool,
    /// Its segments now.
    pub segments: usize,
    /// Its documents now.
    pub documents: u64,
    /// Documents removed by this command.
    pub removed: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// The generation a command left, when it wrote nothing.
pub fn unchanged(index: &Opened) -> Summary {
    Summary {
        generation: index.generation,
        written: false,
        segments: index.segments().len(),
        documents: index.live(),
        removed: 0,
        bytes_written: 0,
    }
}

/// The tombstones that remove `docs` of `index`: (segment number, row), sorted.
pub fn tombstones(index: &Opened, docs: &HashSet<DocRef>) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = docs
        .iter()
        .map(|d| (index.segments()[d.seg as usize].number(), d.row))
        .collect();
    out.sort_unstable();
    out
}

/// The manifest's entry for a written segment.
fn entry_of(w: &Written) -> SegmentEntry {
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

/// The mode of the file an index's new files join: its manifest's (or format-1 file's).
/// [`crate::index::dir::new_file_mode`] says what of it they take: its read and write bits,
/// never more than the umask allows.
fn mode_of(dir: &IndexDir) -> Result<Option<u32>> {
    for name in [MANIFEST, store::DATA] {
        if let Some(f) = dir.open_file(name)? {
            let meta = f
                .metadata()
                .with_context(|| format!("reading {}", display_path(&dir.join(name))))?;
            return Ok(Some(meta.mode()));
        }
    }
    Ok(None)
}

/// The index must still be the generation the scan opened: not updated since, nor rebuilt.
fn check_unchanged(index: &Opened, current: Option<&Manifest>, dir: &IndexDir) -> Result<()> {
    let now = match current {
        Some(m) => (m.index_id, m.generation),
        None => {
            let legacy = store::Index::open_in(dir)?;
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
