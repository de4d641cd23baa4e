//! Pruning: the documents whose files are gone ([`crate::index::gone`]) leave the index
//! (`dupfind index prune`, or `--prune` with `--update`), recorded as tombstones in a new
//! segment that holds no document; compaction drops them for good.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Result;

use crate::index::add::write_segment;
use crate::index::commit::{tombstones, unchanged, Locked, Summary};
use crate::index::gone::survey;
use crate::index::upgrade::upgrade_alone;

/// `dupfind index prune`: drops the documents whose files are gone.
pub fn prune(path: &Path) -> Result<Summary> {
    let (locked, index) = Locked::open(path)?;
    let (gone, counts) = survey(&index, &HashSet::new())?;
    if gone.is_empty() {
        return Ok(unchanged(&index));
    }
    if index.manifest.is_none() {
        return upgrade_alone(index, locked, &gone);
    }
    let mut w = locked.next()?;
    let plan = w.plan(tombstones(&index, &gone))?;
    let segment = write_segment(w.dir(), plan, None, None, |_| Ok(()), &mut Vec::new())?;
    w.add(segment)?;
    w.commit(index.live() - counts.documents, counts.documents)
}
