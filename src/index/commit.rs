//! Committing a generation. Every write (build, update, prune, compaction, upgrade) takes the
//! directory's lock, removes what killed writers left, writes new segment files under fresh
//! temporary names (each fsynced, then renamed to its segment name), fsyncs the directory,
//! writes the new manifest under a temporary name and fsyncs it: a [`Pending`] commit. Its
//! [`Pending::commit`] renames the manifest into place (the one commit point), fsyncs the
//! directory, and only then removes the files the new generation no longer names.
//!
//! A writer killed before the rename leaves the old generation and files no manifest names
//! (removed by the next writer); killed after it, the new one. A reader never sees a mix: it
//! opens the files the manifest it read names, and files are removed only once no manifest
//! names them. A pending commit dropped without committing (its report could not be
//! delivered) removes what it wrote.

use std::fs::File;

use anyhow::{bail, Result};

use crate::index::dir::IndexDir;
use crate::index::manifest::{self, Manifest, MANIFEST};
use crate::index::segment::{data_name, is_segment_file, table_name};
use crate::index::store;
use crate::messages::display_path;

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
/// does not name, and, once a manifest exists, the format-1 file an upgrade left. Other
/// names are left alone.
pub fn sweep(dir: &IndexDir, current: Option<&Manifest>) -> Result<()> {
    let named: std::collections::HashSet<String> = current
        .iter()
        .flat_map(|m| m.segments.iter())
        .flat_map(|s| [data_name(s.number), table_name(s.number)])
        .collect();
    for name in dir.names()? {
        let Some(name) = name.to_str() else {
            continue;
        };
        let stale = is_temp(name)
            || (is_segment_file(name) && !named.contains(name))
            || (current.is_some() && name == store::DATA);
        if stale {
            dir.remove(name)?;
        }
    }
    Ok(())
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
