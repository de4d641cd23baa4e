//! The index's side of a staged run `--against` it (`stages::against::IndexSide`): the same
//! join, lookups, attachment and stored sets as `scan --against`, on the generation `stage init`
//! opened, which every call checks is still the index's.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{Engine, StoredSets};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};
use crate::report::Updated;
use crate::stages::against::{Attached, Commit, IndexSide, IndexedRef, Joined, Packed, Recorded};
use crate::stages::files::{Input, Output};
use crate::stages::plan::{path_from_b64, AgainstPlan};

use super::add::NewDocs;
use super::dir::IndexDir;
use super::join::{self, IndexedSets};
use super::open::{DocRef, Opened};
use super::segment::write::{Plan, SegmentWriter, Written};
use super::update::{inherited_dict, reported, update_staged, Prepared};

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
            legacy: index.manifest.is_none(),
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

    fn pack(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        engine: &Engine,
        (corpus, canon): (&Corpus, &[u32]),
        out: &Output,
    ) -> Result<Packed> {
        let index = open_pinned(pin)?;
        let new = NewDocs {
            cfg,
            engine,
            corpus,
            canon,
        };
        // The dictionary `scan --update` would inherit: every shard compresses with the same.
        super::shard::write(&new, inherited_dict(&index), out)
    }

    fn update(
        &self,
        cfg: &Config,
        pin: &AgainstPlan,
        recorded: Recorded,
        (packed, documents): (&[Input<'_>], u64),
        failed: Vec<InputError>,
    ) -> (Option<Updated>, Option<Commit>) {
        let dir = path_from_b64(&pin.dir).unwrap_or_default();
        let prepared = (|| -> Result<Prepared> {
            let index = open_pinned(pin)?;
            let superseded: HashSet<DocRef> =
                recorded.superseded.into_iter().map(doc_ref).collect();
            // The shards' documents in shard order, the order `scan` adds them in: one segment.
            let write = |dir: &IndexDir, plan: Plan| -> Result<Written> {
                let mut w = SegmentWriter::new(dir, plan)?;
                for input in packed {
                    super::shard::copy_into(input, &mut w)?;
                }
                w.finish()
            };
            let removed = (&superseded, &recorded.walked);
            update_staged(&index, removed, pin.prune, documents, write, &cfg.messages)
        })();
        let (updated, pending) = reported(cfg, &dir, pin.generation, prepared, failed);
        let commit = pending.map(|p| Box::new(move || p.commit()) as Commit);
        (updated, commit)
    }
}
