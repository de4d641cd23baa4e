//! The index's side of a staged run `--against` it (`stages::against::IndexSide`): the same
//! join, lookups, attachment and stored sets as `scan --against`, on the generation `stage init`
//! opened, which every call checks is still the index's.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::StoredSets;
use crate::input::walk::FileEntry;
use crate::messages::display_path;
use crate::stages::against::{Attached, IndexSide, IndexedRef, Joined, Recorded};
use crate::stages::plan::{path_from_b64, AgainstPlan};

use super::join::{self, IndexedSets};
use super::open::{DocRef, Opened};

/// The index, as the staged pipeline reaches it.
pub struct Staged;

/// The index `pin` names, opened and checked to be the index and generation `stage init`
/// opened: a run that compared with one generation must not go on with another (an update, a
/// compaction or a rebuild since).
fn open_pinned(pin: &AgainstPlan) -> Result<Opened> {
    let dir = path_from_b64(&pin.dir)?;
    let index =
        Opened::open(&dir).with_context(|| format!("cannot use index {}", display_path(&dir)))?;
    if format!("{:032x}", index.identity) != pin.identity {
        bail!(
            "index {} was rebuilt since `stage init` (run.json names another index): start a \
             new run with `dupfind stage init`",
            display_path(&dir)
        );
    }
    if index.generation != pin.generation {
        bail!(
            "index {} changed since `stage init` (generation {}, the run compared with {}): \
             start a new run with `dupfind stage init`",
            display_path(&dir),
            index.generation,
            pin.generation
        );
    }
    Ok(index)
}

fn doc_ref((seg, row): IndexedRef) -> DocRef {
    DocRef { seg, row }
}

impl IndexSide for Staged {
    fn join(&self, cfg: &Config, files: Vec<FileEntry>) -> Result<Joined> {
        let j = super::join(cfg, files)?;
        let index = j.index.as_ref().context("no index to join")?;
        let mut superseded: Vec<IndexedRef> = j.superseded.iter().map(|d| (d.seg, d.row)).collect();
        superseded.sort_unstable();
        Ok(Joined {
            identity: index.identity,
            generation: index.generation,
            unchanged: j.unchanged,
            documents: j.documents,
            recorded: Recorded {
                superseded,
                walked: j.walked,
            },
            to_read: j.to_read,
        })
    }

    fn met(&self, cfg: &Config, pin: &AgainstPlan, new: &Corpus) -> Result<Vec<IndexedRef>> {
        let index = open_pinned(pin)?;
        let found = super::lookup::candidates(cfg, &index, new, &HashSet::new())
            .with_context(|| format!("cannot use index {}", display_path(index.path())))?;
        Ok(found.into_iter().map(|(d, _)| (d.seg, d.row)).collect())
    }

    fn attach(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        recorded: Recorded,
        met: Vec<IndexedRef>,
    ) -> Result<Attached> {
        let mut joined = join::Joined::none(Vec::new());
        joined.index = Some(Arc::new(open_pinned(pin)?));
        joined.superseded = recorded.superseded.into_iter().map(doc_ref).collect();
        joined.walked = recorded.walked;
        let corpus = join::attach_met(cfg, &mut joined, met.into_iter().map(doc_ref).collect())?;
        let refs = (joined.sets.iter())
            .flat_map(|s| s.refs())
            .map(|d| (d.seg, d.row))
            .collect();
        Ok(Attached {
            corpus,
            refs,
            gone: joined.gone,
        })
    }

    fn sets(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        refs: &[IndexedRef],
    ) -> Result<Arc<dyn StoredSets>> {
        let index = Arc::new(open_pinned(pin)?);
        let refs: Vec<DocRef> = refs.iter().copied().map(doc_ref).collect();
        Ok(Arc::new(IndexedSets::of_refs(cfg, index, &refs)?))
    }

    fn check(&self, pin: &AgainstPlan) -> Result<()> {
        open_pinned(pin).map(|_| ())
    }
}
