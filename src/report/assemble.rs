//! Assembly: the stages' counts and errors → the report's `stats` (through [`Counts`], as
//! `stage report` adds them up) and `errors`, and the exit status they imply.

use crate::candidates::identical::Identical;
use crate::cluster::Found;
use crate::config::Config;
use crate::exit::ExitCode;
use crate::ingest::corpus::{Corpus, Outcomes};
use crate::ingest::SignSummary;
use crate::input::walk::WalkSkips;
use crate::messages::InputError;
use crate::verify::Verified;

use super::counts::Counts;
use super::{
    path_fields, ClusterOut, Clusters, ErrorOut, IndexStats, Report, Stats, SCHEMA_VERSION,
};

/// What the walk counted.
pub struct WalkCounts {
    /// Non-directory entries that passed the include/exclude filters (aliases included).
    pub files_seen: u64,
    /// Entries seen but not kept.
    pub skipped: WalkSkips,
    /// Entries that could not be read.
    pub errors: Vec<InputError>,
}

/// What an index update (`--update`, `index build`) adds to the report.
pub struct Updated {
    /// The generation the update makes live once the report is delivered; None when nothing
    /// was written (the update failed, or nothing had changed).
    pub written: Option<u64>,
    /// New documents left out because their content could not be read again.
    pub errors: Vec<InputError>,
    /// The update failed (already said on stderr): the run ends in status 2, though no input
    /// was left unread, so the failure is not among the report's `errors`.
    pub failed: bool,
}

/// Every stage's contribution to the report.
pub struct Parts<'a> {
    /// The walk.
    pub walked: WalkCounts,
    /// The index joined (None without one).
    pub index: Option<IndexStats>,
    /// The first pass.
    pub signed: SignSummary,
    /// Documents the first pass could not sketch.
    pub outcomes: Outcomes,
    /// Byte-identical groups.
    pub identical: &'a Identical,
    /// Documents in the largest candidate bucket and the largest candidate component.
    pub skew: (u64, u64),
    /// Verification.
    pub verified: Verified,
    /// The clusters found.
    pub found: &'a [Found],
    /// Their records.
    pub clusters: Vec<ClusterOut>,
    /// Documents that could not be read again for clustering or the records.
    pub late_errors: Vec<InputError>,
    /// The index update, if any.
    pub updated: Option<Updated>,
    /// The documents.
    pub corpus: &'a Corpus,
}

/// The report and its exit status.
pub fn assemble(cfg: &Config, parts: Parts) -> (Report, ExitCode) {
    let mut stats = counts(&parts).stats();
    stats.index = parts.index.clone();
    let Parts {
        walked,
        signed,
        outcomes,
        verified,
        late_errors,
        updated,
        found,
        clusters,
        ..
    } = parts;
    // In the order the stages met them; sorted (stably) and deduplicated below.
    let mut errors = walked.errors;
    errors.extend(signed.errors);
    errors.extend(outcomes.errors);
    errors.extend(verified.errors);
    errors.extend(late_errors);
    let mut update_failed = false;
    if let Some(u) = updated {
        if let Some(index) = &mut stats.index {
            index.updated_generation = u.written;
        }
        errors.extend(u.errors);
        update_failed = u.failed;
    }
    finish(
        cfg,
        stats,
        Clusters::held(clusters),
        errors,
        (!found.is_empty(), update_failed),
    )
}

/// The report from its counts, clusters and errors (in the order the stages met them), and
/// its exit status: errors are sorted (stably) by path and line, those at the same place
/// dropped but the first, and counted in `stats.skipped.error`. `found_any`: a cluster was
/// found; `update_failed`: an index update failed ([`Updated::failed`]), status 2.
pub fn finish(
    cfg: &Config,
    mut stats: Stats,
    clusters: Clusters,
    mut errors: Vec<InputError>,
    (found_any, update_failed): (bool, bool),
) -> (Report, ExitCode) {
    errors.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    errors.dedup_by(|a, b| (&a.path, a.line) == (&b.path, b.line));
    // Every bad line is an error of its own (at its line), so this cannot go below zero.
    stats.skipped.error = (errors.len() as u64).saturating_sub(stats.skipped.bad_line);
    // In path order, as documents are, so that the report does not depend on the order the
    // roots were named in.
    let mut roots: Vec<&std::path::Path> = (cfg.walk.roots.iter())
        .filter(|r| !crate::input::stdin::is_stdin(r))
        .map(|r| r.as_path())
        .collect();
    roots.sort();
    roots.dedup();
    let roots: Vec<_> = roots.into_iter().map(path_fields).collect();
    let any_lossy = roots.iter().any(|r| r.1.is_some());
    let code = if !errors.is_empty() || update_failed {
        ExitCode::Error
    } else if cfg.exit_code && found_any {
        ExitCode::DuplicatesFound
    } else {
        ExitCode::Success
    };
    let report = Report {
        schema_version: SCHEMA_VERSION,
        dupfind_version: env!("CARGO_PKG_VERSION"),
        params: super::params::params(cfg),
        roots_bytes: any_lossy.then(|| roots.iter().map(|r| r.1.clone()).collect()),
        roots: roots.into_iter().map(|r| r.0).collect(),
        stats,
        clusters,
        errors: errors.iter().map(error_out).collect(),
    };
    (report, code)
}

/// Every count but `skipped.error`, which needs the errors deduplicated.
fn counts(p: &Parts) -> Counts {
    let mut c = Counts {
        files_seen: p.walked.files_seen,
        ..Counts::default()
    };
    let (walk, outcomes, s) = (&p.walked.skipped, &p.outcomes, &mut c.skipped);
    s.not_regular = walk.not_regular + outcomes.not_regular;
    s.symlink = walk.symlink;
    s.outside_roots = walk.outside_roots;
    (s.hidden, s.ignored) = (walk.hidden, walk.ignored);
    s.too_short = walk.too_short + outcomes.too_short;
    s.too_large = walk.too_large + outcomes.too_large;
    s.binary = outcomes.binary;
    s.bad_line = p.signed.bad_lines;
    s.empty = p.signed.empty_dumps + p.identical.empty;
    c.distinct = Some(p.signed.distinct.clone());
    c.exact_groups = p.identical.groups;
    c.documents = p.identical.documents;
    c.bytes = p.identical.bytes;
    c.candidate_pairs = p.verified.checked;
    c.verified_pairs = p.verified.passed;
    (c.largest_bucket, c.largest_component) = p.skew;
    c.edit_fallbacks = p.verified.fallbacks;
    c.clusters = p.found.len() as u64;
    c.reclaimable = super::clusters::reclaimable(&p.clusters);
    // Counted over the new documents: with --against, a cluster whose representative is an
    // indexed document has no original among them.
    let (corpus, canon) = (p.corpus, &p.identical.canon);
    c.clustered = (p.found.iter())
        .map(|f| {
            f.cluster
                .members
                .iter()
                .filter(|&&d| corpus.is_new(d))
                .count() as u64
        })
        .sum();
    c.originals = (p.found.iter())
        .filter(|f| corpus.is_new(f.representative))
        .count() as u64;
    c.exact_copies = (corpus.new_ids())
        .filter(|&d| canon[d as usize] != d)
        .count() as u64;
    c
}

fn error_out(e: &InputError) -> ErrorOut {
    let (path, path_bytes) = path_fields(&e.path);
    ErrorOut {
        path,
        path_bytes,
        line: e.line,
        error: e.error.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::scan_config;
    use crate::ingest::worker::{DocResult, Outcome};
    use crate::input::walk::FileEntry;
    use crate::pairs::Pair;
    use crate::sketch::kmv::Kmv;
    use std::path::PathBuf;

    fn error(path: &str, line: Option<u64>, why: &str) -> InputError {
        InputError {
            path: PathBuf::from(path),
            line,
            error: why.into(),
        }
    }

    fn corpus(n: usize) -> Corpus {
        let file = |i: usize| FileEntry {
            path: PathBuf::from(format!("f{i}")),
            aliases: Vec::new(),
            size: 10,
            id: (0, i as u64),
            modified: None,
            changed: None,
            dump: false,
            record: None,
            deferred: false,
        };
        let doc = DocResult {
            outcome: Outcome::Sketched,
            bytes: 10,
            hash: 0,
            fingerprint: 0,
            set: None,
            shingles: 0,
            links: 0,
            disk: 0,
            json_lines: false,
        };
        Corpus::new(
            (0..n).map(file).collect(),
            vec![doc; n],
            Vec::new(),
            1,
            Default::default(),
        )
    }

    /// Six documents: 0 ~ 1 ~ 2 in one cluster (2 an exact copy of 0), 3 and 4 in another, 5
    /// alone; errors from three stages, two of them about the same line.
    fn parts<'a>(
        identical: &'a Identical,
        found: &'a [Found],
        corpus: &'a Corpus,
        late: Vec<InputError>,
    ) -> Parts<'a> {
        Parts {
            walked: WalkCounts {
                files_seen: 7,
                skipped: WalkSkips {
                    not_regular: 1,
                    ..WalkSkips::default()
                },
                errors: vec![error("z", None, "walk")],
            },
            index: None,
            skew: (2, 2),
            signed: crate::ingest::SignSummary {
                distinct: Kmv::new(16),
                errors: vec![
                    error("d.jsonl", Some(3), "bad line"),
                    error("d.jsonl", Some(3), "again"),
                ],
                bad_lines: 1,
                empty_dumps: 0,
                keep_seen: Default::default(),
            },
            outcomes: Default::default(),
            identical,
            verified: Verified::default(),
            found,
            clusters: Vec::new(),
            late_errors: late,
            updated: None,
            corpus,
        }
    }

    fn found(rep: u32, members: &[u32]) -> Found {
        Found {
            representative: rep,
            cluster: crate::cluster::Cluster {
                members: members.to_vec(),
                pairs: Vec::new(),
            },
        }
    }

    #[test]
    fn counts_add_up_and_errors_are_sorted_deduplicated_and_decide_the_status() {
        let corpus = corpus(6);
        let identical = Identical {
            pairs: vec![Pair {
                lo: 0,
                hi: 2,
                similarity: 1.0,
                distance: None,
                exact: true,
            }],
            units: vec![0, 1, 3, 4, 5],
            canon: vec![0, 1, 0, 3, 4, 5],
            groups: 1,
            documents: 6,
            bytes: 60,
            empty: 0,
        };
        let found = [found(0, &[0, 1, 2]), found(3, &[3, 4])];
        let cfg = scan_config(&[]).unwrap();
        let (report, code) = assemble(&cfg, parts(&identical, &found, &corpus, Vec::new()));
        let s = &report.stats;
        assert_eq!(
            (
                s.clusters,
                s.unique_documents,
                s.exact_copies,
                s.near_copies
            ),
            (2, 1, 1, 2)
        );
        assert_eq!(
            s.documents,
            s.unique_documents + s.clusters + s.exact_copies + s.near_copies
        );
        assert_eq!(
            (s.files_seen, s.skipped.not_regular, s.skipped.bad_line),
            (7, 1, 1)
        );
        // Sorted by path and line; of two errors at one line, the first met is kept.
        let errors: Vec<(&str, Option<u64>, &str)> = (report.errors.iter())
            .map(|e| (e.path.as_str(), e.line, e.error.as_str()))
            .collect();
        assert_eq!(
            errors,
            [("d.jsonl", Some(3), "bad line"), ("z", None, "walk")]
        );
        assert_eq!(s.skipped.error, 1, "errors other than bad lines");
        assert_eq!(code, ExitCode::Error);
        assert_eq!(report.schema_version, SCHEMA_VERSION);
    }

    #[test]
    fn without_errors_the_status_says_whether_duplicates_were_found() {
        let corpus = corpus(2);
        let identical = Identical {
            canon: vec![0, 1],
            documents: 2,
            ..Identical::default()
        };
        for (args, clusters, want) in [
            (&[][..], 1, ExitCode::Success),
            (&["--exit-code"][..], 1, ExitCode::DuplicatesFound),
            (&["--exit-code"][..], 0, ExitCode::Success),
        ] {
            let found: Vec<Found> = (0..clusters).map(|_| found(0, &[0, 1])).collect();
            let mut p = parts(&identical, &found, &corpus, Vec::new());
            p.walked.errors.clear();
            p.signed.errors.clear();
            p.signed.bad_lines = 0;
            let (_, code) = assemble(&scan_config(args).unwrap(), p);
            assert_eq!(code, want, "{args:?} with {clusters} cluster(s)");
        }
    }
}
