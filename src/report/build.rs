//! Cluster records: clusters of document ids → the report's clusters, with each cluster's
//! representative (`--keep`), its duplicates (and its linked members) with their similarity to
//! it, and with `--pairs` the evidence for every pair. Pure apart from re-reading shingle sets
//! (and, with `--verify edit`, token sequences) when a verdict or `--pairs` needs them.

use rayon::prelude::*;

use crate::cluster::{Cluster, Found};
use crate::config::Verify;
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::pairs::Pair;
use crate::verify::judge::{simhash_cosine, simhash_similarity};
use crate::verify::lcs::edit_similarity;
use crate::verify::members::member_material;
use crate::verify::reload::{Loaded, Want};
use crate::verify::{intersection, Judge};

use super::{ClusterOut, DuplicateOut, FileOut, MemberOut, PairMore, PairOut};

/// What the cluster records are made from.
pub struct Inputs<'a> {
    /// Files by document id.
    pub files: &'a [FileEntry],
    /// Judges pairs.
    pub judge: &'a Judge<'a>,
    /// Re-derives shingle sets and token sequences.
    pub engine: &'a Engine,
    /// Add evidence to every pair (`--pairs`).
    pub evidence: bool,
    /// Sets verification kept for clustered documents.
    pub retained: &'a Loaded,
    /// `--keep none`: no member is kept; every member is a duplicate.
    pub keep_none: bool,
}

/// The cluster records, in the order given; sets that cannot be read again add to `errors`.
///
/// A cluster needs its members' sets (or token sequences) loaded again for `--pairs` evidence,
/// and for a member that is not a direct pair of the representative (a component's chain, or a
/// strict cluster's linked member): it is a duplicate only once verified against the
/// representative.
pub fn cluster_records(
    inputs: &Inputs,
    clusters: &[Found],
    errors: &mut Vec<InputError>,
) -> Vec<ClusterOut> {
    let judge = inputs.judge;
    let judge_loads = judge.needs_sets() || judge.needs_tokens();
    let needs_material = |f: &Found| {
        inputs.evidence
            || (judge_loads
                && !inputs.keep_none
                && undecided(judge, f.representative, &f.cluster)
                    .next()
                    .is_some())
    };
    // Clusters with nothing to load are built by the pool (1.3 ms for a 10k default scan on
    // one thread, the last stage before writing); the others load their members one cluster at
    // a time, so memory stays that of the largest.
    let mut records: Vec<Option<ClusterOut>> = clusters
        .par_iter()
        .enumerate()
        .map(|(id, f)| (!needs_material(f)).then(|| record(inputs, id, f, &Loaded::default())))
        .collect();
    for (id, (f, slot)) in clusters.iter().zip(&mut records).enumerate() {
        if slot.is_some() {
            continue;
        }
        let want = Want {
            sets: inputs.evidence || judge.needs_sets(),
            tokens: judge.needs_tokens(),
        };
        let loaded = member_material(
            judge,
            inputs.engine,
            inputs.files,
            &f.cluster.members,
            want,
            inputs.retained,
            errors,
        );
        *slot = Some(record(inputs, id, f, &loaded));
    }
    records.into_iter().flatten().collect()
}

/// The pair of the representative with `d`, or with a byte-identical copy of `d` (which has the
/// same similarity to it).
fn direct_pair<'c>(judge: &Judge, rep: u32, d: u32, c: &'c Cluster) -> Option<&'c Pair> {
    c.pairs.iter().map(|p| &p.2).find(|p| {
        let other = match (p.lo, p.hi) {
            (x, y) if x == rep => y,
            (x, y) if y == rep => x,
            _ => return false,
        };
        judge.same_content(other, d)
    })
}

/// Members whose verdict against the representative is not known from the cluster's pairs: no
/// direct pair with it and not byte-identical to it.
fn undecided<'c>(judge: &'c Judge, rep: u32, c: &'c Cluster) -> impl Iterator<Item = u32> + 'c {
    (c.members.iter().copied())
        .filter(move |&d| d != rep && !judge.same_content(rep, d))
        .filter(move |&d| direct_pair(judge, rep, d, c).is_none())
}

fn record(inputs: &Inputs, id: usize, found: &Found, loaded: &Loaded) -> ClusterOut {
    let (rep, c) = (found.representative, &found.cluster);
    let judge = inputs.judge;
    let member = |d: u32| {
        let (f, doc) = (&inputs.files[d as usize], &judge.docs[d as usize]);
        let mut m = MemberOut::new(
            &f.path,
            f.record.as_deref(),
            (doc.bytes, doc.hash),
            &f.aliases,
        );
        m.indexed = d < judge.first_new;
        m.file = FileOut::read_now(f, doc).map(Box::new);
        m
    };
    let (mut duplicates, mut linked) = (Vec::new(), Vec::new());
    if inputs.keep_none {
        duplicates = (0..c.members.len() as u32)
            .map(|at| nearest(judge, at, c))
            .collect();
    }
    let others = c.members.iter().zip(0u32..).filter(|&(&d, _)| d != rep);
    for (&d, at) in others.filter(|_| !inputs.keep_none) {
        let (out, verified) = against_representative(judge, rep, d, at, c, loaded);
        if verified {
            duplicates.push(out);
        } else {
            linked.push(out);
        }
    }
    let pairs = (c.pairs.iter())
        .map(|&(a, b, p)| pair_record(inputs, a as u32, b as u32, &p, loaded))
        .collect();
    ClusterOut {
        id,
        size: c.members.len(),
        min_similarity: c.min_similarity(),
        max_similarity: c.max_similarity(),
        representative: c.members.iter().position(|&d| d == rep).unwrap_or(0),
        kept: !inputs.keep_none,
        duplicates,
        linked,
        members: c.members.iter().map(|&d| member(d)).collect(),
        pairs,
    }
}

/// Member `d` (at `at` in the cluster) against the representative: its record and whether the
/// judge verifies it against the representative (a duplicate) or not (a linked member).
fn against_representative(
    judge: &Judge,
    rep: u32,
    d: u32,
    at: u32,
    c: &Cluster,
    loaded: &Loaded,
) -> (DuplicateOut, bool) {
    let estimated_mode = judge.verify() == Some(Verify::Estimate);
    let exact = judge.same_content(rep, d);
    let canon = |x: u32| judge.canon[x as usize];
    // (similarity, distance, estimated, verified against the representative)
    let (similarity, distance, estimated, verified) =
        match (direct_pair(judge, rep, d, c), judge.distance(rep, d)) {
            (Some(p), _) => (p.similarity, p.distance, estimated_mode && !exact, true),
            (None, Some(dist)) => {
                let passes = judge.check(rep, d, loaded).is_some();
                (simhash_similarity(dist), Some(dist), false, passes)
            }
            (None, None) if exact => (1.0, None, false, true),
            (None, None) => match judge.check(rep, d, loaded) {
                Some(s) => (s.similarity, None, estimated_mode, true),
                None => {
                    // Tokens are loaded only under --verify edit, and kept up to the cap.
                    let (x, y) = (loaded.get(canon(rep)), loaded.get(canon(d)));
                    let (s, estimated) = match (x.tokens.zip(y.tokens), x.set.zip(y.set)) {
                        (Some((a, b)), _) => (edit_similarity(a, b), false),
                        (None, Some((a, b))) => (judge.set_similarity(a, b), false),
                        (None, None) => (judge.estimated_similarity(rep, d), true),
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
        containment: judge.is_containment().then_some(similarity),
    };
    (out, verified)
}

/// With `--keep none`, member `at` as a duplicate: with no member kept there is no
/// representative to measure it against, so it is given with its nearest member among the
/// cluster's verified pairs (the most similar; on a tie, the first in the cluster's order).
/// Every member has one: the pairs span the cluster.
fn nearest(judge: &Judge, at: u32, c: &Cluster) -> DuplicateOut {
    let best = (c.pairs.iter())
        .filter(|p| p.0 as u32 == at || p.1 as u32 == at)
        .map(|p| &p.2)
        .fold(None::<&Pair>, |best, p| match best {
            Some(b) if b.similarity >= p.similarity => Some(b),
            _ => Some(p),
        });
    let estimated_mode = judge.verify() == Some(Verify::Estimate);
    match best {
        Some(p) => DuplicateOut {
            member: at,
            similarity: p.similarity,
            distance: p.distance,
            exact: p.exact,
            estimated: estimated_mode && !p.exact,
            containment: judge.is_containment().then_some(p.similarity),
        },
        // Not reached (a cluster's pairs span it); a member alone is its own nearest.
        None => DuplicateOut {
            member: at,
            similarity: 1.0,
            distance: None,
            exact: true,
            estimated: false,
            containment: None,
        },
    }
}

/// One spanning pair (`a`, `b` index into the cluster's members).
fn pair_record(inputs: &Inputs, a: u32, b: u32, p: &Pair, loaded: &Loaded) -> PairOut {
    let judge = inputs.judge;
    let mut out = PairOut {
        a,
        b,
        similarity: p.similarity,
        distance: p.distance,
        exact: p.exact,
        ..PairOut::default()
    };
    if judge.is_containment() {
        // The smaller set is the contained one; on a tie, the later in path order.
        let (contained, container) = if judge.size(p.lo) < judge.size(p.hi) {
            (a, b)
        } else {
            (b, a)
        };
        let more = out.more();
        more.contained = Some(contained);
        more.container = Some(container);
        more.containment = Some(p.similarity);
    }
    if inputs.evidence {
        add_evidence(out.more(), judge, p.lo, p.hi, loaded);
    }
    out
}

fn add_evidence(out: &mut PairMore, judge: &Judge, lo: u32, hi: u32, loaded: &Loaded) {
    let canon = |d: u32| judge.canon[d as usize];
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
    match judge.distance(lo, hi) {
        Some(d) => {
            out.hamming = Some(d);
            out.cosine = Some(simhash_cosine(d));
            out.piece = judge.first_table(lo, hi);
        }
        None => {
            out.estimate = Some(judge.estimate(lo, hi));
            out.band = judge.first_table(lo, hi);
        }
    }
}
