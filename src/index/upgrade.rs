//! Format 1 → format 2: the records of a format-1 `index.dfx` become the first segment of a
//! new manifest (with a fresh identity, at the next generation), on the first update of the
//! index or with `dupfind index upgrade`; `index.dfx` is removed once the manifest is live. A
//! format-1 index stored each document's shingle set, not its text, so the upgraded documents
//! keep their sets (delta-coded hashes, about the size format 1 gave them); the documents added
//! later store their compressed text.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{anyhow, Result};

use crate::config::DEFAULT_MAX_DISTANCE;
use crate::index::add::{write_segment, NewDocs};
use crate::index::codec::BlobKind;
use crate::index::commit::{unchanged, Locked, Pending, Summary, Writer};
use crate::index::join::index_params;
use crate::index::open::{DocRef, Opened};
use crate::index::segment::write::SegmentWriter;
use crate::index::store::{self, IndexParams};
use crate::messages::{display_path, InputError};

/// `dupfind index upgrade`: a format-1 index rewritten as format 2 (a format-2 index is left
/// as it is).
pub fn upgrade(path: &Path) -> Result<Summary> {
    let (locked, index) = Locked::open(path)?;
    if index.manifest.is_some() {
        return Ok(unchanged(&index));
    }
    upgrade_alone(index, locked, &HashSet::new())
}

/// The format-1 `index`, which `locked` holds, rewritten as one segment, less `removed`, and
/// committed.
pub fn upgrade_alone(index: Opened, locked: Locked, removed: &HashSet<DocRef>) -> Result<Summary> {
    let params = IndexParams {
        max_distance: match index.params.method.as_str() {
            "simhash" => DEFAULT_MAX_DISTANCE,
            _ => 0,
        },
        ..index.params.clone()
    };
    let live = index.live() - removed.len() as u64;
    let w = carry(&index, locked, params, removed, None, &mut Vec::new())?;
    w.commit(live, removed.len() as u64)
}

/// `--update` of the format-1 `index`, which `locked` holds: one segment holding its documents
/// (less `removed`) and the new ones `ids`, pending. The scan's parameters (compatible with the
/// index's, as the scan checked) are the new manifest's: its banding cuts the stored keys.
pub fn upgrade_with(
    index: &Opened,
    locked: Locked,
    removed: &HashSet<DocRef>,
    new: &NewDocs,
    ids: &[u32],
    failed: &mut Vec<InputError>,
) -> Result<Pending> {
    let params = index_params(new.cfg);
    carry(index, locked, params, removed, Some((new, ids)), failed)?.finish()
}

/// The next generation of `index` under a new manifest with `params`: one segment holding its
/// documents (less `removed`), then `new`'s; `index.dfx` removed once it is live.
fn carry(
    index: &Opened,
    locked: Locked,
    params: IndexParams,
    removed: &HashSet<DocRef>,
    new: Option<(&NewDocs, &[u32])>,
    failed: &mut Vec<InputError>,
) -> Result<Writer> {
    let generation = index.generation.checked_add(1).ok_or_else(|| {
        anyhow!(
            "index {} is at generation {}, the last there can be; build it again",
            display_path(index.path()),
            index.generation
        )
    })?;
    let mut w = locked.fresh(params, generation);
    let plan = w.plan(Vec::new())?;
    let carried = |sw: &mut SegmentWriter| {
        index.for_each_live(|d, row| {
            if removed.contains(&d) {
                return Ok(());
            }
            let (blob, _) = index.blob(d, &row)?;
            sw.add(&row.entry, BlobKind::Hashes, None, &blob)
        })
    };
    let segment = write_segment(w.dir(), plan, None, new, carried, failed)?;
    w.add(segment)?;
    w.retire(store::DATA);
    Ok(w)
}
