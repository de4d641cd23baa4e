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
//! those of checking every candidate pair. A pair that failed once is never checked again:
//! it is remembered, or, when the caller can say whether two documents shared a bucket of an
//! earlier table ([`SharedBefore`]), recognised by that. Remembering costs memory for every
//! failed pair, m²/2 for a family all of whose pairs fail; recognising costs none.

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
    /// Every checked pair that met the bound, redundant ones included, with its score.
    pub passing: Vec<Pair>,
    /// Strict clustering's verdicts, made while the sets were loaded (see [`super::Known`]):
    /// pair key and verdict.
    pub rehearsed: Vec<(u64, Option<Score>)>,
}

#[derive(Default)]
struct BucketOutcome {
    accepted: Vec<Pair>,
    failed: Vec<u64>,
    checked: u64,
}

/// Whether two documents share a bucket of a table before table `t`: then their pair was
/// decided there (it passed, and they are connected, or it failed). Tables must be complete for
/// that (every bucket of the earlier tables among those given).
pub type SharedBefore<'a> = dyn Fn(u32, u32, usize) -> bool + Sync + 'a;

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
    connect_with(tables, uf, None, check)
}

/// [`connect`], recognising the pairs decided in an earlier table by `shared_before` rather than
/// by remembering them. The result is the same.
pub fn connect_with<F>(
    tables: &[Vec<&[u32]>],
    uf: &mut UnionFind,
    shared_before: Option<&SharedBefore>,
    check: F,
) -> Verification
where
    F: Fn(u32, u32) -> Option<Score> + Sync,
{
    let mut failed: HashSet<u64> = HashSet::new();
    let mut out = Verification::default();
    let remember = shared_before.is_none();
    for (t, table) in tables.iter().enumerate() {
        let frozen = &*uf;
        let decided = |a: u32, b: u32| match shared_before {
            Some(shared) => shared(a, b, t),
            None => failed.contains(&pair_key(a, b)),
        };
        let outcomes: Vec<BucketOutcome> = table
            .par_iter()
            .map(|bucket| verify_bucket(bucket, frozen, &decided, remember, &check))
            .collect();
        for o in outcomes {
            out.checked += o.checked;
            out.passed += o.accepted.len() as u64;
            failed.extend(o.failed);
            for p in o.accepted {
                if uf.union(p.lo, p.hi) {
                    out.pairs.push(p);
                }
                out.passing.push(p);
            }
        }
    }
    out
}

/// One number for the unordered pair of `a` and `b`.
pub(super) fn pair_key(a: u32, b: u32) -> u64 {
    (u64::from(a.min(b)) << 32) | u64::from(a.max(b))
}

struct Group {
    roots: Vec<u32>,
    members: Vec<u32>,
}

/// Checks the pairs of one bucket that are not `decided`; lists those that fail when told to
/// `remember` them.
fn verify_bucket<F, D>(
    docs: &[u32],
    uf: &UnionFind,
    decided: &D,
    remember: bool,
    check: &F,
) -> BucketOutcome
where
    F: Fn(u32, u32) -> Option<Score>,
    D: Fn(u32, u32) -> bool,
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
                if decided(other, doc) {
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
                    None if remember => out.failed.push(pair_key(other, doc)),
                    None => {}
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

    proptest::proptest! {
        /// Recognising earlier tables' pairs by their shared band values gives what remembering
        /// failed pairs gives: the same pairs checked, passed and accepted.
        #[test]
        fn shared_bands_decide_as_remembered_failures_do(
            bands in proptest::collection::vec(proptest::collection::vec(0u8..3, 4), 2..40),
            similar_to in proptest::collection::vec(0u32..40, 40),
        ) {
            let n = bands.len() as u32;
            // Document d's value in band t is bands[d][t]: buckets are the equal values.
            let tables: Vec<Buckets> = (0..4)
                .map(|t| {
                    Buckets::from_keys((0..n).map(|d| (u64::from(bands[d as usize][t]), d)).collect())
                })
                .collect();
            let similar = |a: u32, b: u32| similar_to[a as usize] % n == b || (a + b).is_multiple_of(5);
            let check = |a: u32, b: u32| similar(a, b).then_some(Score::of(0.9));
            let shared = |a: u32, b: u32, t: usize| {
                (0..t).any(|band| bands[a as usize][band] == bands[b as usize][band])
            };
            let (mut uf1, mut uf2) = (UnionFind::new(n as usize), UnionFind::new(n as usize));
            let remembered = connect(&all_buckets(&tables), &mut uf1, check);
            let recognised = connect_with(&all_buckets(&tables), &mut uf2, Some(&shared), check);
            proptest::prop_assert_eq!(remembered.checked, recognised.checked);
            proptest::prop_assert_eq!(remembered.passed, recognised.passed);
            let pairs = |v: &Verification| v.pairs.iter().map(|p| (p.lo, p.hi)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(pairs(&remembered), pairs(&recognised));
        }
    }
}
