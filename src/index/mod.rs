//! The incremental index: a directory of immutable segments and a manifest naming them
//! (docs/dumps-and-index.md has the layout). Joined to a scan before its first pass (inputs it
//! holds unchanged are not read) and after it (the indexed documents that can meet the new
//! ones take part, found through sorted keys on disk); updated after the report is delivered,
//! by one new segment.
//!
//! - `dir`: the directory, opened safely (no symbolic link followed, no FIFO waited on);
//! - `manifest`, `segment/` (layout, writer, document table), `keys`, `codec`: the format;
//! - `open`: an open generation; `lookup`: the documents the new ones can meet;
//! - `join`: an index joined to a scan; `update`: the next generation; `commit`: making it live;
//! - `compact`, `prune`, `upgrade` (format 1 → 2), `info`: the `dupfind index` commands;
//! - `store/`: format 1, read (and written by tests).

pub mod codec;
mod commit;
pub mod compact;
pub mod dir;
pub mod info;
pub mod join;
mod keys;
mod lookup;
pub mod manifest;
pub mod open;
mod paths;
pub mod prune;
pub mod segment;
pub mod store;
#[cfg(test)]
mod testing;
pub mod update;
pub mod upgrade;

use anyhow::Result;

pub use commit::Pending;

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{Engine, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};
use crate::report::IndexStats;

use join::Joined;
use update::{NewDocs, Prepared};

/// Joins the index `cfg` names to the walked `files`: with none, every file is to be read.
pub fn join(cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
    match &cfg.against {
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

/// What an update did.
pub struct Updated {
    /// The generation the update makes live once the report is delivered; None when nothing
    /// was written (the update failed, or nothing had changed).
    pub written: Option<u64>,
    /// New documents left out because their content could not be read again, and the reason
    /// the update failed, if it did.
    pub errors: Vec<InputError>,
    /// The generation written, to commit after the report.
    pub pending: Option<Pending>,
}

/// With `--update` or `index build`: writes the next generation (a segment of the new
/// documents, the tombstones of those they supersede), pending until the report is
/// delivered; None when the scan does not update an index.
pub fn update(
    cfg: &Config,
    engine: &Engine,
    corpus: &Corpus,
    canon: &[u32],
    joined: &Joined,
) -> Option<Updated> {
    let index = cfg.against.as_ref().filter(|a| a.update)?;
    let new = NewDocs {
        cfg,
        engine,
        files: &corpus.files,
        docs: &corpus.docs,
        sigs: &corpus.sigs,
        lanes: corpus.lanes,
        canon,
        first_new: corpus.first_new,
    };
    let mut errors = Vec::new();
    let prepared = if index.create {
        update::create(&index.dir, &new, &mut errors)
    } else {
        update::update(joined, &new, index.prune, &mut errors)
    };
    let (written, pending) = match prepared {
        Ok(Prepared::Pending(p)) => (Some(p.generation), Some(p)),
        Ok(Prepared::Unchanged) => {
            cfg.messages.tell(&format!(
                "index {}: nothing new, changed or removed; nothing written (generation {})",
                display_path(&index.dir),
                joined.generation()
            ));
            (None, None)
        }
        // The scan itself is complete: its report is still printed, the failure is an error of
        // the run (exit 2), and the index is as it was.
        Err(e) => {
            let reason = format!(
                "index not updated: cannot update index {}: {e:#}",
                display_path(&index.dir)
            );
            crate::messages::error(&format!("{}: {reason}", display_path(&index.dir)));
            errors.push(InputError {
                path: index.dir.clone(),
                line: None,
                error: reason,
            });
            (None, None)
        }
    };
    Some(Updated {
        written,
        errors,
        pending,
    })
}
