//! Assembly: the stages' counts and errors → the report's `stats` and `errors`, and the exit
//! status they imply. The only place that fills [`Stats`].

use crate::candidates::identical::Identical;
use crate::cluster::Found;
use crate::config::Config;
use crate::exit::ExitCode;
use crate::index::Updated;
use crate::ingest::corpus::{Corpus, Outcomes};
use crate::ingest::SignSummary;
use crate::input::walk::WalkSkips;
use crate::messages::InputError;
use crate::verify::Verified;

use super::{path_fields, ClusterOut, ErrorOut, IndexStats, Report, Stats, SCHEMA_VERSION};

/// What the walk counted.
pub struct WalkCounts {
    /// Non-directory entries that passed the include/exclude filters (aliases included).
    pub files_seen: u64,
    /// Entries seen but not kept.
    pub skipped: WalkSkips,
    /// Entries that could not be read.
    pub errors: Vec<InputError>,
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
    let mut stats = counts(&parts);
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
    if let Some(u) = updated {
        if let Some(index) = &mut stats.index {
            index.updated_generation = u.written;
        }
        errors.extend(u.errors);
    }
    errors.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    errors.dedup_by(|a, b| (&a.path, a.line) == (&b.path, b.line));
    stats.skipped.error = errors.len() as u64 - stats.skipped.bad_line;
    let code = if !errors.is_empty() {
        ExitCode::Error
    } else if cfg.exit_code && !found.is_empty() {
        ExitCode::DuplicatesFound
    } else {
        ExitCode::Success
    };
    let report = Report {
        schema_version: SCHEMA_VERSION,
        dupfind_version: env!("CARGO_PKG_VERSION"),
        params: super::params::params(cfg),
        stats,
        clusters,
        errors: errors.iter().map(error_out).collect(),
    };
    (report, code)
}

/// Every count but `skipped.error`, which needs the errors deduplicated.
fn counts(p: &Parts) -> Stats {
    let mut s = Stats {
        files_seen: p.walked.files_seen,
        index: p.index.clone(),
        ..Stats::default()
    };
    let (walk, outcomes) = (&p.walked.skipped, &p.outcomes);
    s.skipped.not_regular = walk.not_regular + outcomes.not_regular;
    s.skipped.symlink = walk.symlink;
    s.skipped.outside_roots = walk.outside_roots;
    s.skipped.too_short = walk.too_short + outcomes.too_short;
    s.skipped.too_large = walk.too_large + outcomes.too_large;
    s.skipped.binary = outcomes.binary;
    s.skipped.bad_line = p.signed.bad_lines;
    s.skipped.empty = p.signed.empty_dumps + p.identical.empty;
    s.distinct_shingles = p.signed.distinct.estimate().round() as u64;
    s.distinct_shingles_error = p.signed.distinct.relative_error();
    s.exact_groups = p.identical.groups;
    s.documents = p.identical.documents;
    s.bytes = p.identical.bytes;
    s.candidate_pairs = p.verified.checked;
    s.verified_pairs = p.verified.passed;
    s.edit_fallbacks = p.verified.fallbacks;
    s.clusters = p.found.len() as u64;
    // Counted over the new documents: with --against, a cluster whose representative is an
    // indexed document has no original among them.
    let first_new = p.corpus.first_new;
    let clustered: u64 = (p.found.iter())
        .map(|f| {
            f.cluster
                .members
                .iter()
                .filter(|&&d| d >= first_new)
                .count() as u64
        })
        .sum();
    let originals = (p.found.iter())
        .filter(|f| f.representative >= first_new)
        .count() as u64;
    let canon = &p.identical.canon;
    s.exact_copies = (first_new as usize..p.corpus.len())
        .filter(|&d| canon[d] != d as u32)
        .count() as u64;
    s.unique_documents = s.documents.saturating_sub(clustered);
    s.near_copies = clustered.saturating_sub(originals + s.exact_copies);
    s
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
