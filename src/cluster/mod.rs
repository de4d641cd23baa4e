//! Union-find over verified pairs, and the clusters it yields.
//!
//! Each union records the pair that caused it, so a cluster of n documents carries exactly
//! n − 1 pairs: a spanning tree of verified evidence rather than every pair (a cluster of 10,000
//! near-identical files would otherwise print 50 million).

pub mod representative;
pub mod strict;

use crate::candidates::containment;
use crate::config::{ClusterMode, Config};
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::Engine;
use crate::messages::InputError;
use crate::pairs::{DocId, Pair, UnionFind};
use crate::verify::reload::Loaded;
use crate::verify::{Check, Judge, Known};

/// A cluster and the member that represents it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The member to keep, chosen by `--keep` (with `--containment`, the container).
    pub representative: DocId,
    /// Its members and the pairs that joined them.
    pub cluster: Cluster,
}

/// Where the judge's material comes from after verification.
pub struct Material<'a> {
    /// Decides every pair.
    pub judge: &'a Judge<'a>,
    /// Derives sets and token sequences again.
    pub engine: &'a Engine,
    /// Sets verification kept for clustered documents.
    pub retained: &'a Loaded,
    /// Scores of the pairs verification passed.
    pub known: &'a Known,
}

/// The clusters of the verified `pairs`, in order of their first member: connected components,
/// or with `--cluster strict` components split so that every duplicate is verified against its
/// representative. Members whose material cannot be read again add to `errors`.
pub fn form(
    cfg: &Config,
    material: &Material,
    corpus: &Corpus,
    pairs: &[Pair],
    errors: &mut Vec<InputError>,
) -> Vec<Found> {
    let judge = material.judge;
    let components = clusters(corpus.len(), pairs);
    let files = &corpus.files;
    let facts = facts(corpus);
    let order = representative::Order::of(cfg);
    match cfg.cluster {
        ClusterMode::Components => components
            .into_iter()
            .map(|c| {
                let keep = order;
                let mut order = c.members.clone();
                representative::sort(keep, &mut order, facts);
                if judge.is_containment() {
                    containment::largest_first(&mut order, |d| judge.size(d));
                }
                Found {
                    representative: order[0],
                    cluster: c,
                }
            })
            .collect(),
        ClusterMode::Strict => strict::clusters(components, order, material, files, facts, errors),
    }
}

/// What `--keep` orders documents by.
fn facts<'a>(corpus: &'a Corpus) -> impl Fn(u32) -> representative::Facts<'a> + Copy + 'a {
    let files = &corpus.files;
    move |d: u32| representative::Facts {
        id: d,
        path: &files[d as usize].path,
        bytes: corpus.docs[d as usize].bytes,
        modified: files[d as usize].modified,
        indexed: !corpus.is_new(d),
        value: files[d as usize]
            .record
            .as_ref()
            .and_then(|r| r.keep.as_deref()),
    }
}

/// With `--cluster strict`, its split of one component (members in id order), for verification
/// to make the verdicts it asks for while the sets are loaded ([`crate::verify::Known`]). True
/// when the cluster records will load the component's sets again: for `--pairs` evidence, or
/// for a linked member, whose verdict against its representative is checked (a pair of a
/// cluster without its representative; see `crate::report::build::cluster_records`).
pub fn rehearsal<'a>(
    cfg: &'a Config,
    corpus: &'a Corpus,
) -> Option<impl Fn(&[DocId], &mut Check) -> bool + Sync + 'a> {
    let facts = facts(corpus);
    let keep = representative::Order::of(cfg);
    (cfg.cluster == ClusterMode::Strict).then_some(move |members: &[DocId], check: &mut Check| {
        let mut order = members.to_vec();
        representative::sort(keep, &mut order, facts);
        let split = strict::split_component(&order, check);
        cfg.pairs
            || split.iter().any(|f| {
                let rep = f.representative;
                f.cluster
                    .pairs
                    .iter()
                    .any(|p| p.2.lo != rep && p.2.hi != rep)
            })
    })
}

/// A group of documents joined by verified pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Document ids in increasing order.
    pub members: Vec<DocId>,
    /// The spanning pairs, as indices into `members` (`a < b`), sorted.
    pub pairs: Vec<(usize, usize, Pair)>,
}

impl Cluster {
    /// Smallest similarity among the cluster's pairs.
    pub fn min_similarity(&self) -> f64 {
        self.pairs
            .iter()
            .map(|p| p.2.similarity)
            .fold(f64::INFINITY, f64::min)
    }

    /// Largest similarity among the cluster's pairs.
    pub fn max_similarity(&self) -> f64 {
        self.pairs
            .iter()
            .map(|p| p.2.similarity)
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// Clusters (two or more members) of `n` documents from spanning pairs, ordered by their
/// smallest member id. Pairs that would close a cycle are ignored, so every cluster carries
/// exactly size − 1 pairs.
pub fn clusters(n: usize, pairs: &[Pair]) -> Vec<Cluster> {
    let mut uf = UnionFind::new(n);
    let kept: Vec<&Pair> = pairs.iter().filter(|p| uf.union(p.lo, p.hi)).collect();
    let mut by_root: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut out: Vec<Cluster> = Vec::new();
    // Documents are visited in id order, so clusters come out ordered by their smallest member
    // and members in increasing order, independent of hash-map iteration order.
    for doc in 0..n as u32 {
        let root = uf.find(doc);
        if uf.set_size(root) < 2 {
            continue;
        }
        let idx = *by_root.entry(root).or_insert_with(|| {
            out.push(Cluster {
                members: Vec::new(),
                pairs: Vec::new(),
            });
            out.len() - 1
        });
        out[idx].members.push(doc);
    }
    for p in kept {
        let idx = by_root[&uf.find(p.lo)];
        let c = &mut out[idx];
        let a = c.members.binary_search(&p.lo).unwrap_or_default();
        let b = c.members.binary_search(&p.hi).unwrap_or_default();
        c.pairs.push((a.min(b), a.max(b), *p));
    }
    for c in &mut out {
        c.pairs.sort_by_key(|p| (p.0, p.1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::minhash::splitmix64;

    fn pair(lo: u32, hi: u32, similarity: f64) -> Pair {
        Pair {
            lo,
            hi,
            similarity,
            distance: None,
            exact: false,
        }
    }

    /// Naive oracle: repeatedly merge label classes until no pair crosses two labels.
    fn naive_labels(n: usize, edges: &[(u32, u32)]) -> Vec<usize> {
        let mut label: Vec<usize> = (0..n).collect();
        loop {
            let mut changed = false;
            for &(a, b) in edges {
                let (la, lb) = (label[a as usize], label[b as usize]);
                if la != lb {
                    let (keep, drop) = (la.min(lb), la.max(lb));
                    for l in label.iter_mut() {
                        if *l == drop {
                            *l = keep;
                        }
                    }
                    changed = true;
                }
            }
            if !changed {
                return label;
            }
        }
    }

    #[test]
    fn union_find_matches_naive_oracle() {
        let mut state = 5;
        for round in 0..50 {
            let n = 2 + round * 3;
            let edges: Vec<(u32, u32)> = (0..n / 2)
                .map(|_| {
                    let a = (splitmix64(&mut state) % n as u64) as u32;
                    let b = (splitmix64(&mut state) % n as u64) as u32;
                    (a, b)
                })
                .collect();
            let labels = naive_labels(n, &edges);
            let mut uf = UnionFind::new(n);
            for &(a, b) in &edges {
                uf.union(a, b);
            }
            for i in 0..n as u32 {
                for j in 0..n as u32 {
                    assert_eq!(
                        uf.find(i) == uf.find(j),
                        labels[i as usize] == labels[j as usize]
                    );
                    assert_eq!(uf.root(i), uf.find(i));
                }
            }
        }
    }

    #[test]
    fn clusters_carry_a_spanning_set_and_similarity_range() {
        // 0~2~4 is a chain with a cycle-closing pair, 1~3 a pair, 5 alone.
        let pairs = [
            pair(0, 2, 0.9),
            pair(2, 4, 0.85),
            pair(0, 4, 0.8),
            pair(1, 3, 1.0),
        ];
        let cs = clusters(6, &pairs);
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].members, vec![0, 2, 4]);
        assert_eq!(cs[0].pairs.len(), 2);
        assert_eq!((cs[0].pairs[0].0, cs[0].pairs[0].1), (0, 1));
        assert_eq!((cs[0].pairs[1].0, cs[0].pairs[1].1), (1, 2));
        assert_eq!(cs[0].min_similarity(), 0.85);
        assert_eq!(cs[0].max_similarity(), 0.9);
        assert_eq!(cs[1].members, vec![1, 3]);
    }
}
