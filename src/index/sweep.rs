//! What killed writers leave, and the sweep that removes it. A writer killed before its commit
//! leaves temporary files and segment files no manifest names; killed after it, the files of
//! the generation before that the new one no longer names. The next writer removes them under
//! the lock ([`sweep`], from [`crate::index::commit::Locked`]), also one that then finds nothing
//! to write ([`tidy`]); a reader never does (it may not be allowed to write the directory, and
//! must not stand in a writer's way by taking the lock).

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, Result};
use rustix::fs::FileType;

use crate::index::dir::{describe, IndexDir};
use crate::index::manifest::{self, Manifest, MANIFEST};
use crate::index::segment::{data_name, is_segment_file, table_name};
use crate::index::store;
use crate::messages::{display_path, Messages};

/// The writers' lock file.
pub const LOCK: &str = "lock";

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

/// Refuses a directory holding anything but an interrupted build's leftovers; makes a
/// missing one.
pub fn check_fresh(dir: &Path) -> Result<()> {
    check_fresh_dir(&IndexDir::create(dir)?)
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
                display_path(Path::new(&name))
            );
        }
    }
    Ok(())
}
