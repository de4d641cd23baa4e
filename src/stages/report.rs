//! `stage report`: adds up every stage's counts and errors, puts the partitions' clusters in
//! order of their first member and numbers them, and prints the report `scan` would have
//! printed for the same inputs and options, byte for byte, with its exit status.

use std::path::Path;

use anyhow::Result;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::report::{self, Report, Stats};

use super::components::summary_path as components_summary;
use super::dataset::{summary_path as dataset_summary, DatasetSummary};
use super::plan::Plan;
use super::sign::summary_path as sign_summary;
use super::summary::{ComponentsSummary, ErrorRec, SignSummary, WalkSummary};
use super::verify::{verified_path, VerifySummary};

/// The report of the run in `work`.
pub fn report(work: &Path) -> Result<(Report, ExitCode, Config)> {
    let plan = Plan::read(work)?;
    let cfg = plan.config()?;
    let walk_path = work.join("init").join("walk.json");
    let walk: WalkSummary =
        super::read_summary(&walk_path, "run `dupfind stage init` first", &plan)?;
    let mut signs = Vec::new();
    for shard in 0..plan.shards {
        let path = sign_summary(work, shard);
        let missing = super::not_run(super::Task::Shard, shard, plan.shards, "signed", "sign");
        let s: SignSummary = super::read_summary(&path, &missing, &plan)?;
        signs.push(s);
    }
    let path = components_summary(work);
    let comps: ComponentsSummary =
        super::read_summary(&path, "run `dupfind stage components` first", &plan)?;
    let mut parts = Vec::new();
    for part in 0..plan.parts {
        let path = verified_path(work, part);
        let missing = super::not_run(super::Task::Part, part, plan.parts, "verified", "verify");
        let v: VerifySummary = super::read_summary(&path, &missing, &plan)?;
        parts.push(v);
    }
    let mut stats = counts(&walk, &signs, &comps, &parts);
    let mut datasets = Vec::new();
    if cfg.dataset.is_some() {
        for shard in 0..plan.shards {
            let path = dataset_summary(work, shard);
            let what = format!("shard {shard}'s part of the dataset has not been written (run `dupfind stage dataset --shard {shard}/{}`)", plan.shards);
            let d: DatasetSummary = super::read_summary(&path, &what, &plan)?;
            datasets.push(d);
        }
    }
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
