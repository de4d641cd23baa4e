//! Connecting candidates: the pairs of every bucket checked and joined in a union-find,
//! without m² work on a bucket of m near-identical documents, and independent of threads.
//!
//!
//! Tables (bands or pieces) are processed one after another; the buckets of one table hold
//! disjoint documents, so they are verified in parallel against the union-find as it stood at
//! the start of the table, and their accepted pairs are merged in bucket order. That makes the
//! result independent of the thread count.
//!
//! Inside a bucket, each document is compared with the groups formed so far: a group already
//! connected to it (from an earlier table or this bucket) is skipped, otherwise its members are
//! tried until one verifies. So a bucket of m near-identical documents costs about m checks,
//! while m unrelated documents still get every pair checked: the components found are exactly
//! those of checking every candidate pair. A pair that failed once is never checked again.

use std::collections::HashSet;

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::pairs::{Pair, UnionFind};

use crate::pairs::Score;

/// What verification did.
#[derive(Debug, Default)]
pub struct Verification {
    /// Pairs that joined two components, in the order they were accepted.
    pub pairs: Vec<Pair>,
    /// Distinct candidate pairs that were checked.
    pub checked: u64,
    /// Checked pairs that met the bound (some turn out redundant and are not in `pairs`).
    pub passed: u64,
}

#[derive(Default)]
struct BucketOutcome {
    accepted: Vec<Pair>,
    failed: Vec<u64>,
    checked: u64,
}

/// Every bucket of every table, as `connect` takes them.
pub fn all_buckets(tables: &[Buckets]) -> Vec<Vec<&[u32]>> {
    tables
        .iter()
        .map(|t| (0..t.len()).map(|i| t.bucket(i)).collect())
        .collect()
}

/// Checks the candidates of every table (each a list of buckets), joining the documents of
/// passing pairs in `uf`.
/// `check(lo, hi)` returns the score of a pair that meets the bound.
pub fn connect<F>(tables: &[Vec<&[u32]>], uf: &mut UnionFind, check: F) -> Verification
where
    F: Fn(u32, u32) -> Option<Score> + Sync,
{
    let mut failed: HashSet<u64> = HashSet::new();
    let mut out = Verification::default();
    for table in tables {
        let frozen = &*uf;
        let failed_before = &failed;
        let outcomes: Vec<BucketOutcome> = table
            .par_iter()
            .map(|bucket| verify_bucket(bucket, frozen, failed_before, &check))
            .collect();
        for o in outcomes {
            out.checked += o.checked;
            out.passed += o.accepted.len() as u64;
            failed.extend(o.failed);
            for p in o.accepted {
                if uf.union(p.lo, p.hi) {
                    out.pairs.push(p);
                }
            }
        }
    }
    out
}

fn pair_key(a: u32, b: u32) -> u64 {
    (u64::from(a.min(b)) << 32) | u64::from(a.max(b))
}

struct Group {
    roots: Vec<u32>,
    members: Vec<u32>,
}

fn verify_bucket<F>(docs: &[u32], uf: &UnionFind, failed: &HashSet<u64>, check: &F) -> BucketOutcome
where
    F: Fn(u32, u32) -> Option<Score>,
{
    let mut out = BucketOutcome::default();
    let mut groups: Vec<Group> = Vec::new();
    for &doc in docs {
        let root = uf.root(doc);
        let mut joined: Vec<usize> = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            if g.roots.contains(&root) {
                joined.push(gi);
                continue;
            }
            for &other in &g.members {
                let key = pair_key(other, doc);
                if failed.contains(&key) {
                    continue;
                }
                out.checked += 1;
                match check(other.min(doc), other.max(doc)) {
                    Some(Score {
                        similarity,
                        distance,
                    }) => {
                        out.accepted.push(Pair {
                            lo: other.min(doc),
                            hi: other.max(doc),
                            similarity,
                            distance,
                            exact: false,
                        });
                        joined.push(gi);
                        break;
                    }
                    None => out.failed.push(key),
                }
            }
        }
        let mut merged = Group {
            roots: vec![root],
            members: vec![doc],
        };
        for &gi in joined.iter().rev() {
            let g = groups.swap_remove(gi);
            merged.roots.extend(g.roots);
            merged.members.extend(g.members);
        }
        groups.push(merged);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::buckets::Buckets;

    fn buckets(groups: &[&[u32]]) -> Buckets {
        let mut entries = Vec::new();
        for (k, g) in groups.iter().enumerate() {
            entries.extend(g.iter().map(|&d| (k as u64, d)));
        }
        Buckets::from_keys(entries)
    }

    #[test]
    fn identical_bucket_costs_linear_checks() {
        let docs: Vec<u32> = (0..500).collect();
        let mut uf = UnionFind::new(500);
        let v = connect(&all_buckets(&[buckets(&[&docs])]), &mut uf, |_, _| {
            Some(Score::of(1.0))
        });
        assert_eq!(v.checked, 499);
        assert_eq!(v.pairs.len(), 499);
    }

    #[test]
    fn finds_the_same_components_as_checking_every_pair() {
        // Similar when both ids are even, or both are 1 and 3.
        let similar =
            |a: u32, b: u32| (a.is_multiple_of(2) && b.is_multiple_of(2)) || (a == 1 && b == 3);
        let docs: Vec<u32> = (0..8).collect();
        let mut uf = UnionFind::new(8);
        let tables = [buckets(&[&docs]), buckets(&[&docs[..4], &docs[4..]])];
        let v = connect(&all_buckets(&tables), &mut uf, |a, b| {
            similar(a, b).then_some(Score::of(0.9))
        });
        for a in 0..8 {
            for b in 0..8 {
                let together = uf.find(a) == uf.find(b);
                let expected = a == b || similar(a.min(b), a.max(b)) || (a % 2 == 0 && b % 2 == 0);
                assert_eq!(together, expected, "{a} {b}");
            }
        }
        assert_eq!(v.pairs.len(), 3 + 1);
        // The second table re-checks nothing: connected pairs are skipped, failed ones remembered.
        let mut uf2 = UnionFind::new(8);
        let once = connect(&all_buckets(&tables[..1]), &mut uf2, |a, b| {
            similar(a, b).then_some(Score::of(0.9))
        });
        assert_eq!(v.checked, once.checked);
    }
}
