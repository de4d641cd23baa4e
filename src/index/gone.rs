//! Which indexed documents' files are gone: nothing is at their path any more (a path that
//! cannot be looked at, for want of permission, is not taken for gone). Read by `index prune`
//! and `--prune` (they drop them), `index info` (what a prune would drop) and the join (it leaves
//! them out of the comparison).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::index::open::{DocRef, Opened};
use crate::index::paths::path_from_bytes;

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

/// True when nothing is at `path` any more (a path that cannot be looked at, for want of
/// permission, is not taken for gone).
pub fn is_gone(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
    }
}
