//! `stage report`: adds up every stage's counts and errors, puts the partitions' clusters in
//! order of their first member and numbers them, and prints the report `scan` would have
//! printed for the same inputs and options, byte for byte, with its exit status.

use std::path::Path;

use anyhow::Result;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::report::{self, Report, Stats};

use super::dataset::DatasetSummary;
use super::plan::Plan;
use super::summary::{ComponentsSummary, ErrorRec, SignSummary, WalkSummary};
use super::verify::VerifySummary;
use super::{read_task, read_tasks, Tasks};

/// The report of the run in `work`.
pub fn report(work: &Path) -> Result<(Report, ExitCode, Config)> {
    let plan = Plan::read(work)?;
    let cfg = plan.config()?;
    cfg.check_report_target()?;
    // The whole chain first: a missing, misplaced, damaged or stale summary is an error naming
    // it and what to run, never part of a report.
    super::status::check(work, &plan)?;
    let walk: WalkSummary = read_task(work, &plan, Tasks::Init, 0)?;
    let signs: Vec<SignSummary> = read_tasks(work, &plan, Tasks::Sign)?;
    // Shards in input order: the first dump's fields are the first shard's that has one.
    let mut keep_seen = crate::ingest::KeepSeen::default();
    signs.iter().for_each(|s| keep_seen.add(&s.keep_seen));
    crate::ingest::keep_by::check_seen(&cfg, &keep_seen)?;
    let comps: ComponentsSummary = read_task(work, &plan, Tasks::Components, 0)?;
    let parts: Vec<VerifySummary> = read_tasks(work, &plan, Tasks::Verify)?;
    let mut stats = counts(&walk, &signs, &comps, &parts);
    let datasets: Vec<DatasetSummary> = read_tasks(work, &plan, Tasks::Dataset)?;
    let mut errors = Vec::new();
    let all = (walk.errors.iter())
        .chain(signs.iter().flat_map(|s| &s.errors))
        .chain(parts.iter().flat_map(|v| &v.errors))
        .chain(datasets.iter().flat_map(|d| &d.errors));
    for e in all {
        errors.push(ErrorRec::to_input_error(e)?);
    }
    let mut recs: Vec<_> = parts.into_iter().flat_map(|v| v.clusters).collect();
    recs.sort_by_key(|c| c.first);
    let clusters: Vec<_> = (recs.into_iter().enumerate())
        .map(|(id, c)| c.into_cluster(id))
        .collect();
    let clustered: u64 = clusters.iter().map(|c| c.size as u64).sum();
    stats.clusters = clusters.len() as u64;
    stats.unique_documents = stats.documents.saturating_sub(clustered);
    stats.near_copies = clustered.saturating_sub(stats.clusters + stats.exact_copies);
    let found_any = !clusters.is_empty();
    let (report, code) = report::finish(&cfg, stats, clusters, errors, found_any);
    Ok((report, code, cfg))
}

/// The counts that do not depend on the clusters.
fn counts(
    walk: &WalkSummary,
    signs: &[SignSummary],
    comps: &ComponentsSummary,
    parts: &[VerifySummary],
) -> Stats {
    let mut s = Stats {
        files_seen: walk.files_seen,
        ..Stats::default()
    };
    let sum = |f: fn(&SignSummary) -> u64| signs.iter().map(f).sum::<u64>();
    s.skipped.not_regular = walk.not_regular + sum(|x| x.not_regular);
    s.skipped.symlink = walk.symlink;
    s.skipped.outside_roots = walk.outside_roots;
    (s.skipped.hidden, s.skipped.ignored) = (walk.hidden, walk.ignored);
    s.skipped.too_short = walk.too_short + sum(|x| x.too_short);
    s.skipped.too_large = walk.too_large + sum(|x| x.too_large);
    s.skipped.binary = sum(|x| x.binary);
    s.skipped.bad_line = sum(|x| x.bad_lines);
    s.skipped.empty = sum(|x| x.empty_dumps) + sum(|x| x.empty);
    s.documents = sum(|x| x.documents);
    s.bytes = sum(|x| x.bytes);
    let mut kmv = signs.first().map(SignSummary::kmv).unwrap_or_default();
    for x in signs.iter().skip(1) {
        kmv.merge(&x.kmv());
    }
    s.distinct_shingles = kmv.estimate().round() as u64;
    s.distinct_shingles_error = kmv.relative_error();
    s.exact_groups = comps.exact_groups;
    s.exact_copies = comps.exact_copies;
    s.candidate_pairs = parts.iter().map(|v| v.checked).sum();
    s.verified_pairs = parts.iter().map(|v| v.passed).sum();
    s.largest_bucket = comps.largest_bucket;
    s.largest_component = comps.largest_component;
    if parts.iter().any(|v| v.fallbacks.is_some()) {
        s.edit_fallbacks = Some(parts.iter().filter_map(|v| v.fallbacks).sum());
    }
    s
}
