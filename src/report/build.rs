//! Results: clusters of document ids → the report's cluster records, with each cluster's
//! representative (`--keep`), its duplicates and their similarity to it, and with `--pairs` the
//! evidence for every pair. Pure apart from re-reading shingle sets (and, with `--verify edit`,
//! token sequences) for `--pairs`.

use std::collections::HashSet;

use rayon::prelude::*;

use crate::cluster::Cluster;
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::report::{ClusterOut, DuplicateOut, MemberOut, PairMore, PairOut};
use crate::verify::intersection;
use crate::verify::judge::{simhash_cosine, simhash_similarity, Oracle};
use crate::verify::lcs::edit_similarity;
use crate::verify::reload::{Loaded, Want};

/// What the cluster records are made from.
pub struct Inputs<'a> {
    /// Files by document id.
    pub files: &'a [FileEntry],
    /// Judges pairs.
    pub oracle: &'a Oracle<'a>,
    /// Re-derives shingle sets for `--pairs`.
    pub engine: &'a Engine,
    /// Add evidence to every pair.
    pub evidence: bool,
    /// Documents below this id are from the index scanned against.
    pub first_new: u32,
}

/// The cluster records, in the order given; sets that cannot be read again add to `errors`.
///
/// A cluster needs its members' sets (or token sequences) loaded again for `--pairs` evidence,
/// and for a member that is not a direct pair of the representative (a component's chain):
/// it is a duplicate only once verified against the representative.
pub fn cluster_records(
    inputs: &Inputs,
    clusters: &[(u32, Cluster)],
    errors: &mut Vec<InputError>,
) -> Vec<ClusterOut> {
    let oracle = inputs.oracle;
    let judge_loads = oracle.needs_sets() || oracle.needs_tokens();
    let needs_material = |(rep, c): &(u32, Cluster)| {
        inputs.evidence || (judge_loads && !undecided(oracle, *rep, c).is_empty())
    };
    // Clusters with nothing to load are built by the pool (1.3 ms for a 10k default scan on
    // one thread, the last stage before writing); the others load their members one cluster at
    // a time, so memory stays that of the largest.
    let mut records: Vec<Option<ClusterOut>> = clusters
        .par_iter()
        .enumerate()
        .map(|(id, found)| {
            (!needs_material(found))
                .then(|| record(inputs, id, found.0, &found.1, &Loaded::default()))
        })
        .collect();
    for (id, (found, slot)) in clusters.iter().zip(&mut records).enumerate() {
        if slot.is_some() {
            continue;
        }
        let want = Want {
            sets: inputs.evidence || oracle.needs_sets(),
            tokens: oracle.needs_tokens(),
        };
        let loaded = member_material(
            oracle,
            inputs.engine,
            inputs.files,
            &found.1.members,
            want,
            errors,
        );
        *slot = Some(record(inputs, id, found.0, &found.1, &loaded));
    }
    records.into_iter().flatten().collect()
}

/// The pair of the representative with `d`, or with a byte-identical copy of `d` (which has the
/// same similarity to it): its score.
fn direct_pair(oracle: &Oracle, rep: u32, d: u32, c: &Cluster) -> Option<(f64, Option<u32>)> {
    c.pairs
        .iter()
        .find(|p| {
            let other = match (p.2.lo, p.2.hi) {
                (x, y) if x == rep => y,
                (x, y) if y == rep => x,
                _ => return false,
            };
            oracle.same_content(other, d)
        })
        .map(|p| (p.2.similarity, p.2.distance))
}

/// Members whose verdict against the representative is not known from the cluster's pairs: no
/// direct pair with it and not byte-identical to it.
fn undecided(oracle: &Oracle, rep: u32, c: &Cluster) -> Vec<u32> {
    (c.members.iter().copied())
        .filter(|&d| d != rep && !oracle.same_content(rep, d))
        .filter(|&d| direct_pair(oracle, rep, d, c).is_none())
        .collect()
}

fn record(inputs: &Inputs, id: usize, rep: u32, c: &Cluster, loaded: &Loaded) -> ClusterOut {
    let oracle = inputs.oracle;
    let member = |d: u32| {
        let f = &inputs.files[d as usize];
        let mut m = MemberOut::new(
            &f.path,
            f.record.as_deref(),
            oracle.docs[d as usize].bytes,
            &f.aliases,
        );
        m.indexed = d < inputs.first_new;
        m
    };
    let estimated_mode = oracle.verify() == Some(crate::config::Verify::Estimate);
    let (mut duplicates, mut linked) = (Vec::new(), Vec::new());
    for (&d, at) in c.members.iter().zip(0u32..).filter(|&(&d, _)| d != rep) {
        let exact = oracle.same_content(rep, d);
        let canon = |x: u32| oracle.canon[x as usize];
        // (similarity, distance, estimated, verified against the representative)
        let (similarity, distance, estimated, verified) =
            match (direct_pair(oracle, rep, d, c), distance_of(oracle, rep, d)) {
                (Some((s, dist)), _) => (s, dist, estimated_mode && !exact, true),
                (None, Some(dist)) => {
                    let passes = oracle.check(rep, d, loaded).is_some();
                    (simhash_similarity(dist), Some(dist), false, passes)
                }
                (None, None) if exact => (1.0, None, false, true),
                (None, None) => match oracle.check(rep, d, loaded) {
                    Some((s, _)) => (s, None, estimated_mode, true),
                    None => {
                        // Tokens are loaded only under --verify edit, and kept up to the cap.
                        let (x, y) = (loaded.get(canon(rep)), loaded.get(canon(d)));
                        let (s, estimated) = match (x.tokens.zip(y.tokens), x.set.zip(y.set)) {
                            (Some((a, b)), _) => (edit_similarity(a, b), false),
                            (None, Some((a, b))) => (oracle.set_similarity(a, b), false),
                            (None, None) => (oracle.estimated_similarity(rep, d), true),
                        };
                        (s, None, estimated, false)
                    }
                },
            };
        let out = DuplicateOut {
            member: at,
            similarity,
            distance,
            exact,
            estimated,
            containment: oracle.is_containment().then_some(similarity),
        };
        if verified {
            duplicates.push(out);
        } else {
            linked.push(out);
        }
    }
    let pairs = c
        .pairs
        .iter()
        .map(|&(a, b, p)| {
            let mut out = PairOut {
                a: a as u32,
                b: b as u32,
                similarity: p.similarity,
                distance: p.distance,
                exact: p.exact,
                ..PairOut::default()
            };
            if oracle.is_containment() {
                // The smaller set is the contained one; on a tie, the later in path order.
                let (contained, container) = if oracle.size(p.lo) < oracle.size(p.hi) {
                    (a, b)
                } else {
                    (b, a)
                };
                let more = out.more();
                more.contained = Some(contained as u32);
                more.container = Some(container as u32);
                more.containment = Some(p.similarity);
            }
            if inputs.evidence {
                add_evidence(out.more(), oracle, p.lo, p.hi, loaded);
            }
            out
        })
        .collect();
    ClusterOut {
        id,
        size: c.members.len(),
        min_similarity: c.min_similarity(),
        max_similarity: c.max_similarity(),
        representative: c.members.iter().position(|&d| d == rep).unwrap_or(0),
        duplicates,
        linked,
        members: c.members.iter().map(|&d| member(d)).collect(),
        pairs,
    }
}

/// SimHash distance of a pair (None under MinHash).
fn distance_of(oracle: &Oracle, a: u32, b: u32) -> Option<u32> {
    match oracle.method {
        crate::config::MethodConfig::SimHash { .. } => Some(crate::sketch::simhash::distance(
            oracle.fingerprint(a),
            oracle.fingerprint(b),
        )),
        _ => None,
    }
}

fn add_evidence(out: &mut PairMore, oracle: &Oracle, lo: u32, hi: u32, loaded: &Loaded) {
    let canon = |d: u32| oracle.canon[d as usize];
    let (x, y) = (loaded.get(canon(lo)), loaded.get(canon(hi)));
    if let Some((a, b)) = x.tokens.zip(y.tokens) {
        out.edit_similarity = Some(edit_similarity(a, b));
    }
    if let Some((a, b)) = x.set.zip(y.set) {
        let shared = intersection(a, b);
        let union = a.len() + b.len() - shared;
        out.shared_shingles = Some(shared as u64);
        out.jaccard = Some(if union == 0 {
            1.0
        } else {
            shared as f64 / union as f64
        });
    }
    match distance_of(oracle, lo, hi) {
        Some(d) => {
            out.hamming = Some(d);
            out.cosine = Some(simhash_cosine(d));
            out.piece = oracle.first_table(lo, hi);
        }
        None => {
            out.estimate = Some(oracle.estimate(lo, hi));
            out.band = oracle.first_table(lo, hi);
        }
    }
}

/// `want` of the distinct contents of `members`, keyed by the document holding each content
/// (`oracle.canon`); files that cannot be read again add to `errors`. Used by `--pairs` and by
/// strict clusters under exact or edit verification. A member over the edit cap brings in every
/// member's set, since any of them may be compared with it.
pub fn member_material(
    oracle: &Oracle,
    engine: &Engine,
    files: &[FileEntry],
    members: &[u32],
    want: Want,
    errors: &mut Vec<InputError>,
) -> Loaded {
    let mut wanted: Vec<(u32, u128)> = members
        .iter()
        .map(|&d| {
            let canon = oracle.canon[d as usize];
            (canon, oracle.docs[canon as usize].hash)
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let all: Vec<u32> = wanted.iter().map(|&(d, _)| d).collect();
    let mut failed = Vec::new();
    let loaded = Loaded::load(
        engine,
        files,
        &wanted,
        want,
        |_: &HashSet<u32>| all,
        &mut failed,
    );
    errors.extend(
        failed
            .into_iter()
            .map(|(d, error)| files[d as usize].error(None, error)),
    );
    loaded
}
