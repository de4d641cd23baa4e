//! Compaction: segments merged into one, their removed documents dropped, their blobs and
//! dictionaries copied as they are (nothing is decompressed), the keys sorted anew.
//!
//! `dupfind index compact` merges every segment. An update merges by itself once the index
//! would hold more than [`AUTO_COMPACT_AFTER`] segments: the smallest ones, enough to leave
//! [`AUTO_COMPACT_TO`], so that a large old segment is rewritten only once the small ones
//! together have grown as large, and lookups touch a bounded number of segments.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::index::commit::{sweep, Pending, LOCK};
use crate::index::dir::IndexDir;
use crate::index::manifest::Manifest;
use crate::index::open::{lanes_of, DocRef, Opened};
use crate::index::segment::write::{Plan, SegmentWriter, Written};
use crate::index::segment::{data_name, table_name};
use crate::index::update::{entry_of, mode_of, place};
use crate::messages::{display_path, Messages};

/// Segments an update may leave before it merges some.
pub const AUTO_COMPACT_AFTER: usize = 16;
/// Segments an update that merges leaves.
pub const AUTO_COMPACT_TO: usize = 8;

/// The positions of the segments an update adding one to `index` merges: none while the index
/// then holds at most [`AUTO_COMPACT_AFTER`]; else the smallest, leaving [`AUTO_COMPACT_TO`].
pub fn auto_pick(index: &Opened) -> Vec<usize> {
    let segs = index.segments();
    let n = segs.len();
    if n < AUTO_COMPACT_AFTER {
        return Vec::new();
    }
    // Merged one, the others kept, the new one: 1 + (n - k) + 1 = AUTO_COMPACT_TO.
    let k = n + 2 - AUTO_COMPACT_TO;
    let mut by_size: Vec<usize> = (0..n).collect();
    by_size.sort_by_key(|&i| (segs[i].bytes(), i));
    let mut picks: Vec<usize> = by_size.into_iter().take(k).collect();
    picks.sort_unstable();
    picks
}

/// Writes segment `number` holding the live documents of `index`'s segments at `picks` (less
/// `also_removed`), with the tombstones they hold for segments not merged.
pub fn merge(
    index: &Opened,
    dir: &IndexDir,
    picks: &[usize],
    number: u64,
    mode: Option<u32>,
    also_removed: &HashSet<DocRef>,
) -> Result<Written> {
    let m = index
        .manifest
        .as_ref()
        .context("a format-1 index has no segments to merge")?;
    let segs = index.segments();
    let picked: HashSet<u64> = picks.iter().map(|&p| segs[p].number()).collect();
    let live: HashSet<u64> = segs.iter().map(|s| s.number()).collect();
    let mut dicts: Vec<Vec<u8>> = Vec::new();
    let mut remap: HashMap<(usize, u16), u16> = HashMap::new();
    let mut tombstones = Vec::new();
    for &p in picks {
        for (i, d) in segs[p].dicts().iter().enumerate() {
            let at = match dicts.iter().position(|x| x == d) {
                Some(at) => at,
                None => {
                    dicts.push(d.clone());
                    dicts.len() - 1
                }
            };
            remap.insert((p, i as u16), at as u16);
        }
        tombstones.extend(
            segs[p]
                .tombstones()
                .iter()
                .filter(|(n, _)| !picked.contains(n) && live.contains(n))
                .copied(),
        );
    }
    tombstones.sort_unstable();
    tombstones.dedup();
    let plan = Plan {
        number,
        index_id: m.index_id,
        lanes: lanes_of(&m.params),
        keying: index.keying.clone(),
        dicts,
        tombstones,
        mode,
    };
    let mut writer = SegmentWriter::new(dir, plan)?;
    for &p in picks {
        let s = &segs[p];
        s.for_each_row(|row_no, row| {
            let d = DocRef {
                seg: p as u32,
                row: row_no,
            };
            if index.is_dead(d) || also_removed.contains(&d) {
                return Ok(());
            }
            let blob = s.blob(&row.blob, row.entry.bytes)?;
            let dict = row.blob.dict.and_then(|i| remap.get(&(p, i)).copied());
            writer.add(&row.entry, row.blob.kind, dict, &blob)
        })?;
    }
    writer.finish()
}

/// Puts `merged` (whose number `next` gave) in `next` in place of the segments at `picks`
/// (where the first of them was); returns the file names that are then no longer named.
pub fn replace(
    next: &mut Manifest,
    index: &Opened,
    picks: &[usize],
    merged: &Written,
) -> Vec<String> {
    let numbers: HashSet<u64> = picks
        .iter()
        .map(|&p| index.segments()[p].number())
        .collect();
    let at = next
        .segments
        .iter()
        .position(|s| numbers.contains(&s.number))
        .unwrap_or(next.segments.len());
    next.segments.retain(|s| !numbers.contains(&s.number));
    next.segments
        .insert(at.min(next.segments.len()), entry_of(merged));
    let mut names: Vec<u64> = numbers.into_iter().collect();
    names.sort_unstable();
    names
        .into_iter()
        .flat_map(|n| [data_name(n), table_name(n)])
        .collect()
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

/// Opens the index in `path` for a writer: the directory, its lock, and the index as it is
/// under the lock, with what killed writers left swept away (also when the command then finds
/// nothing to write: a compaction killed after its commit leaves a clean index and the files
/// of the generation before it).
pub fn open_locked(path: &Path) -> Result<(IndexDir, std::fs::File, Opened)> {
    let dir = IndexDir::open(path)?.with_context(|| {
        format!(
            "{} is not a dupfind index (no such directory)",
            display_path(path)
        )
    })?;
    let lock = dir.lock(LOCK)?;
    let index = Opened::open_in(dir.try_clone()?)?;
    sweep(&dir, index.manifest.as_ref(), &Messages::default())?;
    Ok((dir, lock, index))
}

/// `dupfind index compact`: every segment merged into one.
pub fn compact(path: &Path) -> Result<Summary> {
    let (dir, lock, index) = open_locked(path)?;
    let Some(m) = index.manifest.clone() else {
        // A format-1 index is one file already; upgrading it makes it one segment.
        return crate::index::upgrade::upgrade_alone(index, dir, lock, &HashSet::new());
    };
    let segs = index.segments();
    let removed = segs.iter().map(|s| u64::from(s.docs())).sum::<u64>() - index.live();
    let clean = segs.len() <= 1 && removed == 0 && segs.iter().all(|s| s.tombstones().is_empty());
    if clean {
        return Ok(Summary {
            generation: m.generation,
            written: false,
            segments: segs.len(),
            documents: index.live(),
            removed: 0,
            bytes_written: 0,
        });
    }
    let mode = mode_of(&dir)?;
    let picks: Vec<usize> = (0..segs.len()).collect();
    let mut next = Manifest {
        generation: m.next_generation()?,
        ..m
    };
    let number = next.take_segment(&dir)?;
    let merged = merge(&index, &dir, &picks, number, mode, &HashSet::new())?;
    place(&dir, &merged)?;
    let obsolete = replace(&mut next, &index, &picks, &merged);
    let written = vec![merged.name.clone(), merged.table_name.clone()];
    let summary = Summary {
        generation: next.generation,
        written: true,
        segments: next.segments.len(),
        documents: merged.docs,
        removed,
        bytes_written: merged.written,
    };
    let pending = Pending::new(dir, lock, &next, mode, written, obsolete, merged.written)?;
    let bytes = pending.bytes;
    pending.commit()?;
    Ok(Summary {
        bytes_written: bytes,
        ..summary
    })
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
