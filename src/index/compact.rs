//! Compaction: segments merged into one, their removed documents dropped, their blobs and
//! dictionaries copied as they are (nothing is decompressed), the keys sorted anew.
//!
//! `dupfind index compact` merges every segment. An update merges by itself once the index
//! would hold more than [`AUTO_COMPACT_AFTER`] segments: the smallest ones, enough to leave
//! [`AUTO_COMPACT_TO`], so that a large old segment is rewritten only once the small ones
//! together have grown as large, and lookups touch a bounded number of segments.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;

use crate::index::commit::{unchanged, Locked, Summary, Writer};
use crate::index::dir::IndexDir;
use crate::index::open::{DocRef, Opened};
use crate::index::segment::write::{Plan, SegmentWriter, Written};
use crate::index::upgrade::upgrade_alone;

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

/// `dupfind index compact`: every segment merged into one.
pub fn compact(path: &Path) -> Result<Summary> {
    let (locked, index) = Locked::open(path)?;
    if index.manifest.is_none() {
        // A format-1 index is one file already; upgrading it makes it one segment.
        return upgrade_alone(index, locked, &HashSet::new());
    }
    let segs = index.segments();
    let removed = segs.iter().map(|s| u64::from(s.docs())).sum::<u64>() - index.live();
    let clean = segs.len() <= 1 && removed == 0 && segs.iter().all(|s| s.tombstones().is_empty());
    if clean {
        return Ok(unchanged(&index));
    }
    let mut w = locked.next()?;
    let picks: Vec<usize> = (0..segs.len()).collect();
    let documents = merge_into(&mut w, &index, &picks, &HashSet::new())?;
    w.commit(documents, removed)
}

/// Merges the segments of `index` at `picks` (less `also_removed`) into one new segment of the
/// generation `w` writes, in their place; returns its documents.
pub fn merge_into(
    w: &mut Writer,
    index: &Opened,
    picks: &[usize],
    also_removed: &HashSet<DocRef>,
) -> Result<u64> {
    let plan = w.plan(Vec::new())?;
    let merged = merge(index, w.dir(), picks, plan, also_removed)?;
    let documents = merged.docs;
    let numbers: Vec<u64> = picks
        .iter()
        .map(|&p| index.segments()[p].number())
        .collect();
    w.replace(&numbers, merged)?;
    Ok(documents)
}

/// Writes the segment `plan` gives, holding the live documents of `index`'s segments at
/// `picks` (less `also_removed`), their dictionaries, and the tombstones they hold for segments
/// not merged.
fn merge(
    index: &Opened,
    dir: &IndexDir,
    picks: &[usize],
    plan: Plan,
    also_removed: &HashSet<DocRef>,
) -> Result<Written> {
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
        dicts,
        tombstones,
        ..plan
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
