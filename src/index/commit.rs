//! Committing a generation. Every write (build, update, prune, compaction, upgrade) takes the
//! directory's lock, removes what killed writers left, writes new segment files under fresh
//! temporary names (each fsynced, then renamed to its segment name), fsyncs the directory,
//! writes the new manifest under a temporary name and fsyncs it: a [`Pending`] commit. Its
//! [`Pending::commit`] renames the manifest into place (the one commit point), fsyncs the
//! directory, and only then removes the files the new generation no longer names.
//!
//! A writer killed before the rename leaves the old generation and files no manifest names;
//! killed after it, the new one and the files of the old one it had yet to remove. Either way
//! the next writer removes them ([`sweep`]), also one that then finds nothing to write; a
//! reader never does (it may not be allowed to write the directory, and must not stand in a
//! writer's way by taking the lock). A reader never sees a mix: it
//! opens the files the manifest it read names, and files are removed only once no manifest
//! names them. A pending commit dropped without committing (its report could not be
//! delivered) removes what it wrote.

use std::collections::HashSet;
use std::fs::File;

use anyhow::{bail, Result};
use rustix::fs::FileType;

use crate::index::dir::{describe, IndexDir};
use crate::index::manifest::{self, Manifest, MANIFEST};
use crate::index::segment::{data_name, is_segment_file, table_name};
use crate::index::store;
use crate::messages::{display_path, Messages};

/// The writers' lock file.
pub const LOCK: &str = "lock";

/// A generation written and synced, not yet live.
pub struct Pending {
    dir: IndexDir,
    lock: Option<File>,
    temp: String,
    /// The generation it makes live.
    pub generation: u64,
    /// Files written for it (removed if it is dropped uncommitted).
    written: Vec<String>,
    /// Files of the old generation it no longer names.
    obsolete: Vec<String>,
    /// Bytes written for it, the manifest included.
    pub bytes: u64,
    committed: bool,
}

impl Pending {
    /// Writes `next` (whose new files, `written`, are in place and synced) as the pending
    /// manifest; `obsolete` are removed once it is live.
    pub fn new(
        dir: IndexDir,
        lock: File,
        next: &Manifest,
        mode: Option<u32>,
        written: Vec<String>,
        obsolete: Vec<String>,
        bytes: u64,
    ) -> Result<Pending> {
        let mut pending = Pending {
            dir,
            lock: Some(lock),
            temp: String::new(),
            generation: next.generation,
            written,
            obsolete,
            bytes,
            committed: false,
        };
        // The new segments' names must be durable before a manifest names them.
        pending.dir.sync()?;
        pending.temp = manifest::write_temp(&pending.dir, next, mode)?;
        pending.bytes += next.encode()?.len() as u64;
        Ok(pending)
    }

    /// Makes the generation live; then removes what it no longer names.
    pub fn commit(mut self) -> Result<()> {
        self.dir.rename(&self.temp, MANIFEST)?;
        self.committed = true;
        self.dir.sync()?;
        for name in &self.obsolete {
            // A failure leaves a file no manifest names, which the next writer removes.
            let _ = self.dir.remove(name);
        }
        self.lock.take();
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.dir.remove(&self.temp);
            for name in &self.written {
                let _ = self.dir.remove(name);
            }
        }
    }
}

/// True for a name a writer writes under before renaming: `*.tmp` of the manifest, a segment,
/// or a format-1 generation.
fn is_temp(name: &str) -> bool {
    name.ends_with(".tmp")
        && (name.starts_with("manifest.")
            || is_segment_file(name)
            || name.starts_with("index.dfx."))
}

/// Under the lock: removes what killed writers left: temporary files, segment files `current`
/// does not name (those of the generation before a compaction killed after its commit), and,
/// once a manifest exists, the format-1 file an upgrade left. Other names are left alone.
///
/// Only files and symbolic links are removed (a link itself, never its target). Anything else
/// by such a name, a directory another user made, is none of a writer's leftovers: it is left
/// where it is with a warning, as is a file that cannot be removed (another user's, in a
/// sticky directory), and new segments take numbers whose names are free
/// ([`Manifest::take_segment`]), so that neither stops the index from being updated.
pub fn sweep(dir: &IndexDir, current: Option<&Manifest>, messages: &Messages) -> Result<()> {
    for name in stale(dir, current)? {
        let left = match dir.kind(&name)? {
            None => continue,
            Some(FileType::RegularFile | FileType::Symlink) => match dir.remove(&name) {
                Ok(()) => continue,
                Err(e) => format!("{e:#}"),
            },
            Some(kind) => format!(
                "{} is {}, which no index writer leaves",
                display_path(&dir.join(&name)),
                describe(kind)
            ),
        };
        messages.warn(&format!("{left}; left in place"));
    }
    Ok(())
}

/// The names in `dir` a sweep removes.
fn stale(dir: &IndexDir, current: Option<&Manifest>) -> Result<Vec<String>> {
    let named: HashSet<String> = current
        .iter()
        .flat_map(|m| m.segments.iter())
        .flat_map(|s| [data_name(s.number), table_name(s.number)])
        .collect();
    Ok(dir
        .names()?
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| {
            is_temp(name)
                || (is_segment_file(name) && !named.contains(name))
                || (current.is_some() && name == store::DATA)
        })
        .collect())
}

/// For a writer that finds nothing to write (`--update` with nothing new): sweeps what killed
/// writers left, when there is something and no other writer holds the index. The lock is
/// taken only then, so that such runs, as a rule, never stand in a writer's way.
///
/// Never an error: the run has done what it was asked, and a user who may read the index but
/// not write it (who cannot make the lock) leaves the sweep to the index's writers.
pub fn tidy(dir: &IndexDir, messages: &Messages) {
    let sweep_now = || -> Result<()> {
        if stale(dir, manifest::read(dir)?.as_ref())?.is_empty() {
            return Ok(());
        }
        let Some(_lock) = dir.try_lock(LOCK)? else {
            return Ok(());
        };
        // Read again under the lock: a writer may have committed since.
        sweep(dir, manifest::read(dir)?.as_ref(), messages)
    };
    let _ = sweep_now();
}

/// Refuses a directory holding anything but the leftovers of an interrupted build (temporary
/// files, segment files no manifest names, the lock).
pub fn check_fresh_dir(dir: &IndexDir) -> Result<()> {
    for name in dir.names()? {
        let text = name.to_string_lossy();
        if name == MANIFEST || name == store::DATA {
            bail!(
                "{} already holds an index; not creating another over it",
                display_path(dir.path())
            );
        }
        if !(is_temp(&text) || is_segment_file(&text) || name == LOCK) {
            bail!(
                "{} is not a dupfind index and is not empty (it holds {}); not creating an index there",
                display_path(dir.path()),
                display_path(std::path::Path::new(&name))
            );
        }
    }
    Ok(())
}
