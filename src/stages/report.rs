//! `stage report`: adds up every stage's counts and errors, merges the partitions' clusters in
//! order of their first member and numbers them as they are written, and prints the report
//! `scan` would have printed for the same inputs and options, byte for byte, with its exit
//! status. It holds a row group of each partition's clusters at a time, never all of them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::exit::ExitCode;
use crate::messages::display_path;
use crate::report::{self, Report};

use super::against::{Commit, IndexSide};
use super::dataset::DatasetSummary;
use super::files::Input;
use super::lineage::{Lineage, Place};
use super::plan::{path_from_b64, AgainstPlan, Plan};
use super::summary::{ComponentsSummary, ErrorRec, SignSummary, WalkSummary};
use super::verify::VerifySummary;
use super::{read_task, read_tasks, Tasks};

/// The report's place: it runs once.
const PLACE: Place = Place {
    stage: "report",
    shard: None,
    part: None,
};

/// With `--update`, written once the index's new generation is live: the run's report added
/// its documents to the index, which a report run again must not do a second time.
pub fn committed_path(work: &Path) -> PathBuf {
    work.join("report").join("committed.json")
}

/// `report/committed.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Committed {
    /// Where it comes from.
    pub lineage: Lineage,
    /// The generation the report made live.
    pub generation: u64,
}

/// The generation this run's report made live, if it did (with `--update`).
pub fn committed(work: &Path, plan: &Plan) -> Result<Option<u64>> {
    let path = committed_path(work);
    if !path.exists() {
        return Ok(None);
    }
    let c: Committed = super::read_summary(&path, "", plan, PLACE)?;
    Ok(Some(c.generation))
}

/// The report of the run in `work`; with `--update`, the index's next generation, written and
/// pending, to be made live once the report is delivered.
pub fn report(
    work: &Path,
    index: &dyn IndexSide,
) -> Result<(Report, ExitCode, Config, Option<Commit>)> {
    let plan = Plan::read(work)?;
    let cfg = plan.config()?;
    cfg.check_report_target()?;
    // A run that compared with one generation of an index is not reported once it changed; one
    // that updated it has changed it itself.
    if let Some(pin) = &plan.against {
        if let Some(generation) = committed(work, &plan)? {
            bail!(
                "this run's report already added its documents to index {} (generation \
                 {generation}); an update is committed once: start a new run with `dupfind \
                 stage init` for another report",
                display_path(&path_from_b64(&pin.dir)?)
            );
        }
        index.check(pin)?;
    }
    // The whole chain first: a missing, misplaced, damaged or stale summary is an error naming
    // it and what to run, never part of a report. The partitions' clusters files are checked
    // whole (lineage and CRC-32) before the first byte is written, then merged as they are
    // written.
    let parts: Vec<VerifySummary> = super::status::check(work, &plan, Tasks::Verify)?;
    let walk: WalkSummary = read_task(work, &plan, Tasks::Init, 0)?;
    let signs: Vec<SignSummary> = read_tasks(work, &plan, Tasks::Sign)?;
    // `stage components` refused it already; checked again, as the report is scan's.
    SignSummary::check_keep_by(&cfg, &signs)?;
    let comps: ComponentsSummary = read_task(work, &plan, Tasks::Components, 0)?;
    let mut counts = walk.counts();
    let each = (signs.iter().map(SignSummary::counts))
        .chain([comps.counts()])
        .chain(parts.iter().map(VerifySummary::counts));
    for c in each {
        counts.merge(&c);
    }
    let datasets: Vec<DatasetSummary> = read_tasks(work, &plan, Tasks::Dataset)?;
    // Every part is written and still there (a stat each, or on a store one listing of the
    // dataset's directory, which shows the ETags too; `stage status` reads local parts whole):
    // the run's claim on the dataset's directory ends.
    if let Some(dir) = &cfg.dataset {
        let listed = super::files::listing(dir)?;
        for d in &datasets {
            for part in &d.parts {
                part.check(dir, false, listed.as_ref()).map_err(|e| {
                    anyhow::anyhow!(
                        "{}: {e:#}: run `{} --work {}` again, then the report",
                        Place::shard("dataset", d.shard),
                        Tasks::Dataset.command(&plan, d.shard),
                        display_path(work)
                    )
                })?;
            }
        }
        crate::dataset::release(dir, &plan.run)?;
    }
    let mut errors = Vec::new();
    let all = (walk.errors.iter())
        .chain(signs.iter().flat_map(|s| &s.errors))
        .chain(parts.iter().flat_map(|v| &v.errors))
        .chain(datasets.iter().flat_map(|d| &d.errors));
    for e in all {
        errors.push(ErrorRec::to_input_error(e)?);
    }
    let mut streams = Vec::with_capacity(parts.len());
    for v in &parts {
        let s = super::records::read_clusters(work, &v.lineage, v.part)?;
        streams.push(Box::new(s) as super::records::RecStream);
    }
    let count: u64 = parts.iter().map(|v| v.clusters).sum();
    let count = usize::try_from(count)?;
    let clusters = report::Clusters::streamed(count, super::records::merged(streams));
    let found_any = !clusters.is_empty();
    // With --update: the next generation, written now (under the index's lock, held until it
    // is committed or dropped) so that the report can say which, as `scan --update`'s does.
    let (mut updated, mut commit, mut update_failed) = (None, None, false);
    if let Some(pin) = plan.against.as_ref().filter(|a| a.update) {
        let (u, c) = update(work, &plan, pin, &walk, &signs, index, &cfg)?;
        if let Some(u) = u {
            updated = u.written;
            errors.extend(u.errors);
            update_failed = u.failed;
        }
        commit = c;
    }
    let mut stats = counts.stats();
    stats.index = plan.against.as_ref().map(|a| report::IndexStats {
        generation: a.generation,
        documents: walk.indexed,
        unchanged_files: walk.unchanged,
        updated_generation: updated,
    });
    let (report, code) = report::finish(&cfg, stats, clusters, errors, (found_any, update_failed));
    Ok((report, code, cfg, commit))
}

/// `--update`: the index's next generation of the documents the shards packed, pending; once
/// made live, recorded in [`committed_path`].
fn update(
    work: &Path,
    plan: &Plan,
    pin: &AgainstPlan,
    walk: &WalkSummary,
    signs: &[SignSummary],
    index: &dyn IndexSide,
    cfg: &Config,
) -> Result<(Option<report::Updated>, Option<Commit>)> {
    let recorded = super::attach::read_join(work, &walk.lineage)?;
    let packed: Vec<Input<'_>> = (signs.iter())
        .map(|s| {
            let path = super::sign::packed_path(work, s.shard);
            Input::new(work, path, &s.lineage, Place::shard("sign", s.shard))
        })
        .collect();
    let documents = signs.iter().map(|s| s.to_index.unwrap_or(0)).sum();
    let failed = (signs.iter().flat_map(|s| &s.not_indexed))
        .map(ErrorRec::to_input_error)
        .collect::<Result<Vec<_>>>()?;
    let (updated, commit) = index.update(cfg, pin, recorded, (&packed, documents), failed);
    let Some(commit) = commit else {
        return Ok((updated, None));
    };
    let generation = updated.as_ref().and_then(|u| u.written).unwrap_or(0);
    let (work, run, digest) = (work.to_path_buf(), plan.run.clone(), plan.digest.clone());
    let messages = cfg.messages.clone();
    let then_record = move || -> Result<()> {
        commit()?;
        let c = Committed {
            lineage: Lineage::attempt(&run, &digest, PLACE),
            generation,
        };
        if let Err(e) = super::files::write_json(&committed_path(&work), &c) {
            messages.warn(&format!(
                "the index was updated, but {e:#}: a report run again will not know this run \
                 updated it already (and will refuse, the index having changed)"
            ));
        }
        Ok(())
    };
    Ok((updated, Some(Box::new(then_record))))
}
