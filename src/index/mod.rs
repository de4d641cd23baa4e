//! The incremental index: a directory of immutable segments and a manifest naming them
//! (docs/dumps-and-index.md has the layout). Joined to a scan before its first pass (inputs it
//! holds unchanged are not read) and after it (the indexed documents that can meet the new
//! ones take part, found through sorted keys on disk); updated after the report is delivered,
//! by one new segment.
//!
//! The files depend one way, each only on those listed before it:
//!
//! - the format: `dir` (the directory, opened safely: no symbolic link followed, no FIFO waited
//!   on), `codec` (stored contents), `store/` (format 1, read; and the `Entry` and
//!   `IndexParams` both formats share), `paths` (how files and times are stored), `keys`,
//!   `segment/` (layout, document table, writer), `manifest`;
//! - the readers: `open` (an open generation), `lookup` (the documents the new ones can meet),
//!   `gone` (documents whose files are gone), `join` (an index joined to a scan), `info`;
//! - the writers: `sweep` (what killed writers left), `commit` (the one write path: lock,
//!   sweep, segments, manifest, commit), `add` (a segment's new documents), `shard` (a staged
//!   shard's new documents, packed for `--update`), then the writers themselves, `upgrade`
//!   (format 1 → 2), `compact`, `prune`, `update` (the next generation of a scan's index, or of
//!   a staged run's);
//! - `staged`, the index's side of a staged run (`stages::against`);
//! - this file, which the scan calls.

mod add;
pub mod codec;
mod commit;
pub mod compact;
pub mod dir;
mod gone;
pub mod info;
pub mod join;
pub(crate) mod keys;
mod lookup;
pub mod manifest;
pub mod open;
mod paths;
pub mod prune;
pub mod segment;
mod shard;
pub mod staged;
pub mod store;
mod sweep;
#[cfg(test)]
mod testing;
pub mod update;
pub mod upgrade;

use anyhow::{Context, Result};

pub use commit::Pending;

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{Engine, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::display_path;
use crate::report::{IndexStats, Updated};

use add::NewDocs;
use join::Joined;

/// Joins the index `cfg` names to the walked `files`: with none, or one `index build` is to
/// create, every file is to be read.
pub fn join(cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
    match &cfg.against {
        Some(index) if index.create => {
            // Refused before the scan, not after it.
            sweep::check_fresh(&index.dir).with_context(|| {
                format!("cannot build an index in {}", display_path(&index.dir))
            })?;
            Ok(Joined::none(files))
        }
        Some(index) => join::join(index, cfg, files),
        None => Ok(Joined::none(files)),
    }
}

/// The indexed documents that can meet the `new` ones, as the first documents of the scan's
/// corpus (none without an index).
pub fn attach(cfg: &Config, joined: &mut Joined, new: &Corpus) -> Result<Corpus> {
    join::attach(cfg, joined, new)
}

impl Joined {
    /// The indexed documents' stored sets, for the per-document work.
    pub fn stored_sets(&self) -> Option<std::sync::Arc<dyn StoredSets>> {
        self.sets
            .clone()
            .map(|s| s as std::sync::Arc<dyn StoredSets>)
    }

    /// The index's side of the scan, for the report (None without an index).
    pub fn stats(&self, cfg: &Config) -> Option<IndexStats> {
        cfg.against.as_ref().map(|_| IndexStats {
            generation: self.generation(),
            documents: self.documents,
            unchanged_files: self.unchanged,
            updated_generation: None,
        })
    }
}

/// With `--update` or `index build`: writes the next generation (a segment of the new
/// documents, the tombstones of those they supersede), pending until the report is
/// delivered, and what the report says of it; None when the scan does not update an index.
pub fn update(
    cfg: &Config,
    engine: &Engine,
    corpus: &Corpus,
    canon: &[u32],
    joined: &Joined,
) -> (Option<Updated>, Option<Pending>) {
    let Some(index) = cfg.against.as_ref().filter(|a| a.update) else {
        return (None, None);
    };
    let new = NewDocs {
        cfg,
        engine,
        corpus,
        canon,
    };
    let mut errors = Vec::new();
    let prepared = if index.create {
        update::create(&index.dir, &new, &mut errors)
    } else {
        update::update(joined, &new, index.prune, &mut errors)
    };
    update::reported(cfg, &index.dir, joined.generation(), prepared, errors)
}
