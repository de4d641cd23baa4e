//! The incremental index: joined to a scan before its first pass (indexed documents take part
//! as documents `0..first_new`, unchanged inputs are not read), updated after it with the new
//! documents, and stored on disk (`store`, in a directory opened safely by `dir`).

pub mod dir;
pub mod join;
mod paths;
pub mod store;
mod update;

use anyhow::Result;

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{Engine, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};
use crate::report::IndexStats;

use join::{IndexedSets, Joined};

/// Joins the index `cfg` names to the walked `files`: with none, every file is to be read.
pub fn join(cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
    match &cfg.against {
        Some(index) => join::join(index, cfg, files),
        None => Ok(Joined {
            to_read: files,
            unchanged: 0,
            entries: Vec::new(),
            docs: Vec::new(),
            sigs: Vec::new(),
            sets: None,
            generation: 0,
            lanes: cfg.lanes(),
        }),
    }
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
            generation: self.generation,
            documents: self.sets.as_ref().map_or(0, |s| u64::from(s.count())),
            unchanged_files: self.unchanged,
            updated_generation: None,
        })
    }
}

/// What an update did.
pub struct Updated {
    /// The generation written; None when the update failed (the index is as it was).
    pub written: Option<u64>,
    /// New documents left out because their set could not be derived again, and the reason the
    /// update failed, if it did.
    pub errors: Vec<InputError>,
}

/// With `--update` or `index build`: writes the next generation (the indexed documents still
/// current, then the new ones); None when the scan does not update an index.
pub fn update(
    cfg: &Config,
    engine: &Engine,
    corpus: &Corpus,
    canon: &[u32],
    joined: &Joined,
) -> Option<Updated> {
    let index = cfg.against.as_ref().filter(|a| a.update)?;
    let update = update::Update {
        cfg,
        engine,
        files: &corpus.files,
        docs: &corpus.docs,
        sigs: &corpus.sigs,
        lanes: corpus.lanes,
        canon,
        indexed: joined.sets.as_deref().map(|s: &IndexedSets| s),
    };
    let mut errors = Vec::new();
    let written = match update.write(index, joined.generation, &mut errors) {
        Ok(generation) => Some(generation),
        // The scan itself is complete: its report is still printed, the failure is an error of
        // the run (exit 2), and the index is as it was.
        Err(e) => {
            let reason = format!("index not updated: {e:#}");
            cfg.messages
                .warn(&format!("{}: {reason}", display_path(&index.dir)));
            errors.push(InputError {
                path: index.dir.clone(),
                line: None,
                error: reason,
            });
            None
        }
    };
    Some(Updated { written, errors })
}
