//! What the staged pipeline asks of the index a run compares with (`--against`). The index
//! writes its document tables with this pipeline's schema, so it imports `stages`; the stages
//! reach it through this trait instead, implemented by `index::staged` and passed in by the
//! driver, so that neither imports the other back. Indexed documents are named by their place
//! in the generation `stage init` opened, (segment in the manifest, row).

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::Result;

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{Engine, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::report::Updated;

use super::files::{Input, Output};
use super::lineage::Written;
use super::plan::AgainstPlan;

/// An indexed document: its segment's place in the manifest, and its row.
pub type IndexedRef = (u32, u32);

/// The index's side of a staged run.
pub trait IndexSide: Sync {
    /// `stage init`: opens the index `cfg` names, checks its parameters as `scan` does, and
    /// joins the walked `files` to it.
    fn join(&self, cfg: &Config, files: Vec<FileEntry>) -> Result<Joined>;
    /// `stage sign`: the indexed documents the shard's documents `new` meet.
    fn met(&self, cfg: &Config, pin: &AgainstPlan, new: &Corpus) -> Result<Vec<IndexedRef>>;
    /// `stage attach`: the documents met, but the superseded and the gone, as the first
    /// documents of a corpus in path order (as `scan` attaches them), where each lies, and how
    /// many were gone.
    fn attach(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        recorded: Recorded,
        met: Vec<IndexedRef>,
    ) -> Result<Attached>;
    /// `stage verify`: the stored sets of `refs`, document i being `refs[i]`.
    fn sets(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        refs: &[IndexedRef],
    ) -> Result<Arc<dyn StoredSets>>;
    /// `stage report`: that the index is still the one `stage init` opened.
    fn check(&self, pin: &AgainstPlan) -> Result<()>;
    /// `stage sign` with `--update`: the shard's documents with text (`corpus`, each holding
    /// its content's signature at `canon`), read again and packed as the index will hold them,
    /// into `out`.
    fn pack(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        engine: &Engine,
        new: (&Corpus, &[u32]),
        out: &Output,
    ) -> Result<Packed>;
    /// `stage report` with `--update`: the index's next generation, of the `documents` the
    /// shards packed (their files `packed`, in shard order) less those the run removes, written
    /// under the index's lock and pending, and what the report says of it (`failed`: the
    /// documents the shards could not pack), as `scan --update` prepares it.
    fn update(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        recorded: Recorded,
        packed: (&[Input<'_>], u64),
        failed: Vec<InputError>,
    ) -> (Option<Updated>, Option<Commit>);
}

/// A shard's documents packed for the index.
pub struct Packed {
    /// Its file.
    pub written: Written,
    /// The documents it had to pack (those that could not be read again included).
    pub documents: u64,
    /// Those that could not be read again, left out as `scan --update` leaves them out.
    pub failed: Vec<InputError>,
}

/// A generation written and synced, not yet live: made live by calling it once the report is
/// delivered; dropped, it removes what it wrote.
pub type Commit = Box<dyn FnOnce() -> Result<()> + Send>;

/// The walk joined to the index.
pub struct Joined {
    /// The inputs to sign: new or changed.
    pub to_read: Vec<FileEntry>,
    /// Inputs not read because the index holds them unchanged.
    pub unchanged: u64,
    /// The indexed documents compared.
    pub documents: u64,
    /// The index's identity and the generation opened.
    pub identity: u128,
    /// True for an index of format 1 (one file, no segments), which a staged run does not
    /// update.
    pub legacy: bool,
    pub generation: u64,
    /// What `stage attach` needs of the join.
    pub recorded: Recorded,
}

/// The join's side that `stage init` records for `stage attach`.
#[derive(Default)]
pub struct Recorded {
    /// Indexed documents the changed inputs supersede.
    pub superseded: Vec<IndexedRef>,
    /// The walked paths, as the index keys them.
    pub walked: HashSet<Vec<u8>>,
}

/// The indexed documents a run attaches.
pub struct Attached {
    pub corpus: Corpus,
    pub refs: Vec<IndexedRef>,
    pub gone: u64,
}
