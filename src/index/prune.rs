//! Pruning: the documents whose files are gone leave the index (`dupfind index prune`, or
//! `--prune` with `--update`), recorded as tombstones in a new segment that holds no document;
//! compaction drops them for good. A file is gone when nothing is at its path any more; a path
//! that cannot be looked at (no permission on a directory) is not taken for gone.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::index::commit::Pending;
use crate::index::compact::{open_locked, unchanged, Summary};
use crate::index::join::is_gone;
use crate::index::manifest::Manifest;
use crate::index::open::{DocRef, Opened};
use crate::index::paths::path_from_bytes;
use crate::index::segment::write::Plan;
use crate::index::update::{entry_of, mode_of, place, write_segment};

/// What pruning would drop.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Prunable {
    /// Documents.
    pub documents: u64,
    /// The files they come from.
    pub files: u64,
}

/// The live documents of `index` whose files are gone (a path in `walked` exists).
pub fn gone(index: &Opened, walked: &HashSet<Vec<u8>>) -> Result<HashSet<DocRef>> {
    Ok(survey(index, walked)?.0)
}

/// The gone documents and what they amount to.
pub fn survey(index: &Opened, walked: &HashSet<Vec<u8>>) -> Result<(HashSet<DocRef>, Prunable)> {
    let mut seen: HashMap<Vec<u8>, bool> = HashMap::new();
    let mut out = HashSet::new();
    let mut counts = Prunable::default();
    index.for_each_live(|d, row| {
        let path = &row.entry.path;
        let gone = match seen.get(path) {
            Some(&g) => g,
            None => {
                let g = !walked.contains(path) && is_gone(&path_from_bytes(path));
                seen.insert(path.clone(), g);
                counts.files += u64::from(g);
                g
            }
        };
        if gone {
            out.insert(d);
            counts.documents += 1;
        }
        Ok(())
    })?;
    Ok((out, counts))
}

/// `dupfind index prune`: drops the documents whose files are gone.
pub fn prune(path: &Path) -> Result<Summary> {
    let (dir, lock, index) = open_locked(path)?;
    let (gone, counts) = survey(&index, &HashSet::new())?;
    if gone.is_empty() {
        return Ok(unchanged(&index));
    }
    let Some(m) = index.manifest.clone() else {
        return crate::index::upgrade::upgrade_alone(index, dir, lock, &gone);
    };
    let mode = mode_of(&dir)?;
    let mut tombstones: Vec<(u64, u32)> = gone
        .iter()
        .map(|d| (index.segments()[d.seg as usize].number(), d.row))
        .collect();
    tombstones.sort_unstable();
    let mut next = Manifest {
        generation: m.next_generation()?,
        ..m
    };
    let plan = Plan::next(&mut next, &dir, tombstones, mode)?;
    let w = write_segment(&dir, plan, None, None, |_| Ok(()), &mut Vec::new())?;
    place(&dir, &w)?;
    next.segments.push(entry_of(&w));
    let written = vec![w.name.clone(), w.table_name.clone()];
    let pending = Pending::new(dir, lock, &next, mode, written, Vec::new(), w.written)?;
    let summary = Summary {
        generation: pending.generation,
        written: true,
        segments: next.segments.len(),
        documents: index.live() - counts.documents,
        removed: counts.documents,
        bytes_written: pending.bytes,
    };
    pending.commit()?;
    Ok(summary)
}
