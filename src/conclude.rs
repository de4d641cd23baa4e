//! The end of the pipeline's middle, written once: verify every candidate, form the clusters,
//! build their records, and say on stderr which members failed when read again for them.
//! `scan` calls it on the whole corpus and `stage verify` on a partition's, so a partition's
//! clusters, records, errors and warnings are scan's.

use crate::candidates::identical::Identical;
use crate::candidates::Candidates;
use crate::cluster::{self, Found};
use crate::config::Config;
use crate::ingest::corpus::Corpus;
use crate::ingest::corpus::Set;
use crate::ingest::worker::Engine;
use crate::messages::InputError;
use crate::report::build;
use crate::report::ClusterOut;
use crate::verify::{self, Judge, Verified};

/// What the middle concluded.
pub struct Concluded {
    /// The verified pairs and verification's counts and errors.
    pub verified: Verified,
    /// The clusters.
    pub found: Vec<Found>,
    /// Their records, in the same order.
    pub clusters: Vec<ClusterOut>,
    /// Members that failed when read again to form or describe their clusters (already said
    /// on stderr).
    pub late_errors: Vec<InputError>,
}

/// Verifies `candidates` (dropped once verified: clustering does not need them) with `judge`,
/// then clusters and describes the result. `kept` holds the sets the first pass kept.
pub fn conclude(
    cfg: &Config,
    judge: &Judge,
    engine: &Engine,
    corpus: &Corpus,
    kept: Vec<Option<Set>>,
    identical: &Identical,
    candidates: Candidates,
) -> Concluded {
    let rehearsal = cluster::rehearsal(cfg, corpus);
    let verified = verify::run(
        cfg,
        judge,
        engine,
        &corpus.files,
        kept,
        identical,
        &candidates,
        rehearsal.as_ref().map(|r| r as &verify::Rehearse),
    );
    drop(candidates);
    let mut late_errors = Vec::new();
    let material = cluster::Material {
        judge,
        engine,
        retained: &verified.retained,
        known: &verified.known,
    };
    let found = cluster::form(cfg, &material, corpus, &verified.pairs, &mut late_errors);
    let inputs = build::Inputs {
        files: &corpus.files,
        judge,
        engine,
        evidence: cfg.pairs,
        retained: &verified.retained,
        keep_none: cfg.keep == crate::config::KeepPolicy::None,
    };
    let clusters = build::cluster_records(&inputs, &found, &mut late_errors);
    // Members read again for strict clusters and cluster records fail after verification's own
    // warnings: said on stderr too, as every unreadable input is.
    cfg.messages.warn_errors(&late_errors);
    Concluded {
        verified,
        found,
        clusters,
        late_errors,
    }
}
