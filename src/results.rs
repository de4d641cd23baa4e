//! Results: clusters of document ids → the report's cluster records, with each cluster's
//! representative (`--keep`), its duplicates and their similarity to it, and with `--pairs` the
//! evidence for every pair. Pure apart from re-reading shingle sets for `--pairs`.

use std::collections::HashMap;

use crate::cluster::Cluster;
use crate::doc::{load_sets, Engine};
use crate::messages::InputError;
use crate::oracle::{simhash_cosine, simhash_similarity, Oracle};
use crate::report::{ClusterOut, DuplicateOut, MemberOut, PairOut};
use crate::verify::intersection;
use crate::walk::FileEntry;

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
}

/// The cluster records, in the order given; sets that cannot be read again for `--pairs` add
/// to `errors`.
pub fn cluster_records(
    inputs: &Inputs,
    clusters: &[(u32, Cluster)],
    errors: &mut Vec<InputError>,
) -> Vec<ClusterOut> {
    clusters
        .iter()
        .enumerate()
        .map(|(id, (rep, c))| {
            let sets = if inputs.evidence {
                member_sets(
                    inputs.oracle,
                    inputs.engine,
                    inputs.files,
                    &c.members,
                    errors,
                )
            } else {
                HashMap::new()
            };
            record(inputs, id, *rep, c, &sets)
        })
        .collect()
}

fn record(
    inputs: &Inputs,
    id: usize,
    rep: u32,
    c: &Cluster,
    sets: &HashMap<u32, Box<[u64]>>,
) -> ClusterOut {
    let oracle = inputs.oracle;
    let member = |d: u32| {
        let f = &inputs.files[d as usize];
        MemberOut::new(&f.path, oracle.docs[d as usize].bytes, &f.aliases)
    };
    let estimated_mode = matches!(
        oracle.method,
        crate::config::MethodConfig::MinHash { exact: false, .. }
    );
    let duplicates = c
        .members
        .iter()
        .filter(|&&d| d != rep)
        .map(|&d| {
            let direct = c
                .pairs
                .iter()
                .find(|p| (p.2.lo, p.2.hi) == (rep.min(d), rep.max(d)))
                .map(|p| (p.2.similarity, p.2.distance));
            let exact = oracle.same_content(rep, d);
            let canon = |x: u32| oracle.canon[x as usize];
            let (similarity, distance, estimated) = match (direct, distance_of(oracle, rep, d)) {
                (Some((s, dist)), _) => (s, dist, estimated_mode && !exact),
                (None, Some(dist)) => (simhash_similarity(dist), Some(dist), false),
                (None, None) if exact => (1.0, None, false),
                (None, None) => match (sets.get(&canon(rep)), sets.get(&canon(d))) {
                    (Some(a), Some(b)) => (oracle.set_similarity(a, b), None, false),
                    _ => (oracle.estimated_similarity(rep, d), None, true),
                },
            };
            DuplicateOut {
                member: member(d),
                similarity,
                distance,
                exact,
                estimated,
                containment: oracle.is_containment().then_some(similarity),
            }
        })
        .collect();
    let pairs = c
        .pairs
        .iter()
        .map(|&(a, b, p)| {
            let mut out = PairOut {
                a,
                b,
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
                out.contained = Some(contained);
                out.container = Some(container);
                out.containment = Some(p.similarity);
            }
            if inputs.evidence {
                add_evidence(&mut out, oracle, p.lo, p.hi, sets);
            }
            out
        })
        .collect();
    ClusterOut {
        id,
        size: c.members.len(),
        min_similarity: c.min_similarity(),
        max_similarity: c.max_similarity(),
        representative: member(rep),
        duplicates,
        members: c.members.iter().map(|&d| member(d)).collect(),
        pairs,
    }
}

/// SimHash distance of a pair (None under MinHash).
fn distance_of(oracle: &Oracle, a: u32, b: u32) -> Option<u32> {
    match oracle.method {
        crate::config::MethodConfig::SimHash { .. } => Some(crate::simhash::distance(
            oracle.fingerprint(a),
            oracle.fingerprint(b),
        )),
        _ => None,
    }
}

fn add_evidence(
    out: &mut PairOut,
    oracle: &Oracle,
    lo: u32,
    hi: u32,
    sets: &HashMap<u32, Box<[u64]>>,
) {
    let canon = |d: u32| oracle.canon[d as usize];
    if let (Some(a), Some(b)) = (sets.get(&canon(lo)), sets.get(&canon(hi))) {
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

/// The sets of the distinct contents of `members`, keyed by the document holding each content
/// (`oracle.canon`); files that cannot be read again add to `errors`. Used by `--pairs` and by
/// strict clusters under exact verification.
pub fn member_sets(
    oracle: &Oracle,
    engine: &Engine,
    files: &[FileEntry],
    members: &[u32],
    errors: &mut Vec<InputError>,
) -> HashMap<u32, Box<[u64]>> {
    let mut wanted: Vec<(u32, u128)> = members
        .iter()
        .map(|&d| {
            let canon = oracle.canon[d as usize];
            (canon, oracle.docs[canon as usize].hash)
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = HashMap::new();
    for (d, r) in load_sets(engine, files, &wanted) {
        match r {
            Ok(set) => {
                out.insert(d, set);
            }
            Err(error) => errors.push(InputError {
                path: files[d as usize].path.clone(),
                error,
            }),
        }
    }
    out
}
