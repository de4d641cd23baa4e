//! Format 1 → format 2: the records of a format-1 `index.dfx` become the first segment of a
//! new manifest (with a fresh identity, at the next generation), on the first update of the
//! index or with `dupfind index upgrade`; `index.dfx` is removed once the manifest is live. A
//! format-1 index stored each document's shingle set, not its text, so the upgraded documents
//! keep their sets (delta-coded hashes, about the size format 1 gave them); the documents added
//! later store their compressed text.

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;

use anyhow::{anyhow, Result};

use crate::config::{Config, DEFAULT_MAX_DISTANCE};
use crate::index::codec::BlobKind;
use crate::index::commit::Pending;
use crate::index::compact::{open_locked, unchanged, Summary};
use crate::index::dir::IndexDir;
use crate::index::join::index_params;
use crate::index::manifest::Manifest;
use crate::index::open::{DocRef, Opened};
use crate::index::segment::write::Plan;
use crate::index::store::{self, IndexParams};
use crate::index::update::{entry_of, mode_of, place, write_segment, NewDocs, Prepared};
use crate::messages::{display_path, InputError};

/// `dupfind index upgrade`: a format-1 index rewritten as format 2 (a format-2 index is left
/// as it is).
pub fn upgrade(path: &Path) -> Result<Summary> {
    let (dir, lock, index) = open_locked(path)?;
    if index.manifest.is_some() {
        return Ok(unchanged(&index));
    }
    upgrade_alone(index, dir, lock, &HashSet::new())
}

/// A format-1 index rewritten as one segment, less `removed`, and committed. The caller holds
/// the lock and has swept the directory.
pub fn upgrade_alone(
    index: Opened,
    dir: IndexDir,
    lock: File,
    removed: &HashSet<DocRef>,
) -> Result<Summary> {
    let mode = mode_of(&dir)?;
    let params = IndexParams {
        max_distance: match index.params.method.as_str() {
            "simhash" => DEFAULT_MAX_DISTANCE,
            _ => 0,
        },
        ..index.params.clone()
    };
    let live = index.live() - removed.len() as u64;
    let pending = pending(
        &index,
        dir,
        lock,
        mode,
        params,
        removed,
        None,
        &mut Vec::new(),
    )?;
    let summary = Summary {
        generation: pending.generation,
        written: true,
        segments: 1,
        documents: live,
        removed: removed.len() as u64,
        bytes_written: pending.bytes,
    };
    pending.commit()?;
    Ok(summary)
}

/// `--update` of a format-1 index: one segment holding its documents (less `removed`) and the
/// new ones, pending. The caller holds the lock and has swept the directory.
#[allow(clippy::too_many_arguments)]
pub fn upgrade_with(
    index: &Opened,
    dir: IndexDir,
    lock: File,
    mode: Option<u32>,
    removed: &HashSet<DocRef>,
    new: &NewDocs,
    ids: &[u32],
    failed: &mut Vec<InputError>,
) -> Result<Prepared> {
    let params = upgraded_params(new.cfg);
    let p = pending(
        index,
        dir,
        lock,
        mode,
        params,
        removed,
        Some((new, ids)),
        failed,
    )?;
    Ok(Prepared::Pending(p))
}

/// The scan's parameters (compatible with the index's, as the scan checked): its banding cuts
/// the stored keys.
fn upgraded_params(cfg: &Config) -> IndexParams {
    index_params(cfg)
}

#[allow(clippy::too_many_arguments)]
fn pending(
    index: &Opened,
    dir: IndexDir,
    lock: File,
    mode: Option<u32>,
    params: IndexParams,
    removed: &HashSet<DocRef>,
    new: Option<(&NewDocs, &[u32])>,
    failed: &mut Vec<InputError>,
) -> Result<Pending> {
    let generation = index.generation.checked_add(1).ok_or_else(|| {
        anyhow!(
            "index {} is at generation {}, the last there can be; build it again",
            display_path(dir.path()),
            index.generation
        )
    })?;
    let mut next = Manifest::fresh(params, generation);
    let plan = Plan::next(&mut next, &dir, Vec::new(), mode)?;
    let carry = |w: &mut crate::index::segment::write::SegmentWriter| {
        index.for_each_live(|d, row| {
            if removed.contains(&d) {
                return Ok(());
            }
            let (blob, _) = index.blob(d, &row)?;
            w.add(&row.entry, BlobKind::Hashes, None, &blob)
        })
    };
    let w = write_segment(&dir, plan, None, new, carry, failed)?;
    place(&dir, &w)?;
    next.segments.push(entry_of(&w));
    let written = vec![w.name.clone(), w.table_name.clone()];
    let obsolete = vec![store::DATA.to_string()];
    Pending::new(dir, lock, &next, mode, written, obsolete, w.written)
}
