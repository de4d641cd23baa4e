//! `stage report`: adds up every stage's counts and errors, merges the partitions' clusters in
//! order of their first member and numbers them as they are written, and prints the report
//! `scan` would have printed for the same inputs and options, byte for byte, with its exit
//! status. It holds a row group of each partition's clusters at a time, never all of them.

use std::path::Path;

use anyhow::Result;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::report::{self, Report};

use super::dataset::DatasetSummary;
use super::plan::Plan;
use super::summary::{ComponentsSummary, ErrorRec, SignSummary, WalkSummary};
use super::verify::VerifySummary;
use super::{read_task, read_tasks, Tasks};

/// The report of the run in `work`.
pub fn report(
    work: &Path,
    index: &dyn super::against::IndexSide,
) -> Result<(Report, ExitCode, Config)> {
    let plan = Plan::read(work)?;
    let cfg = plan.config()?;
    cfg.check_report_target()?;
    // A run that compared with one generation of an index is not reported once it changed.
    if let Some(pin) = &plan.against {
        index.check(pin)?;
    }
    // The whole chain first: a missing, misplaced, damaged or stale summary is an error naming
    // it and what to run, never part of a report. The partitions' clusters files are checked
    // whole (lineage and CRC-32) before the first byte is written, then merged as they are
    // written.
    let parts: Vec<VerifySummary> = super::status::check(work, &plan, Tasks::Verify)?;
    let walk: WalkSummary = read_task(work, &plan, Tasks::Init, 0)?;
    let signs: Vec<SignSummary> = read_tasks(work, &plan, Tasks::Sign)?;
    // Shards in input order: the first dump's fields are the first shard's that has one.
    let mut keep_seen = crate::ingest::KeepSeen::default();
    signs.iter().for_each(|s| keep_seen.add(&s.keep_seen));
    crate::ingest::keep_by::check_seen(&cfg, &keep_seen)?;
    let comps: ComponentsSummary = read_task(work, &plan, Tasks::Components, 0)?;
    let mut counts = walk.counts();
    let each = (signs.iter().map(SignSummary::counts))
        .chain([comps.counts()])
        .chain(parts.iter().map(VerifySummary::counts));
    for c in each {
        counts.merge(&c);
    }
    let datasets: Vec<DatasetSummary> = read_tasks(work, &plan, Tasks::Dataset)?;
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
    let mut stats = counts.stats();
    stats.index = plan.against.as_ref().map(|a| report::IndexStats {
        generation: a.generation,
        documents: walk.indexed,
        unchanged_files: walk.unchanged,
        updated_generation: None,
    });
    let (report, code) = report::finish(&cfg, stats, clusters, errors, found_any);
    Ok((report, code, cfg))
}
