//! The spanning pairs of `--containment` clusters, chosen as if every candidate pair were taken
//! in (lo, hi) order.
//!
//! A `--containment` cluster is a connected component of verified pairs and is reported with a
//! spanning set of them (`pairs` in the output), so which spanning set is part of the answer.
//! It is the one that taking the candidate pairs in (lo, hi) order, and keeping each that
//! passes and joins two components, gives: for each document `lo` in increasing order, the
//! passing pair to the least `hi > lo` of every component it is not yet joined to.
//!
//! Listing every candidate pair to take them in order costs m²/2 for a family of m near-copies
//! of one size, which share buckets of m documents. Here the components are known first (found
//! bucket by bucket, [`super::connect`]); then a pair is checked again only when it can still
//! be kept, which prunes all the rest without changing what is kept:
//! - a pair whose ends are in different final components cannot pass (had it passed, they would
//!   be in one);
//! - a pair whose ends are already joined closes a cycle, and is never kept;
//! - once a component is whole, every pair of it closes a cycle, so its later documents need not
//!   even list their partners. A family whose pairs pass costs about m checks.
//!
//! A document's partners above it are listed from its buckets, or, when that is more, found
//! among the later members of its component not yet joined to it (its buckets, 64 of about m/2
//! documents each in a family, would be listed again for every document until the family is
//! joined).

use crate::pairs::{Pair, Score, UnionFind};

/// The pairs of `tables`' buckets (documents in increasing order in each) that taking every
/// candidate pair in (lo, hi) order would keep: those for which `check(lo, hi)` gives a score
/// and whose ends `forest` does not join yet (each kept pair is joined in `forest`).
/// `components` holds the components all the candidate pairs' checks give, and `forest` must
/// start from the unions `components` started from (both see byte-identical copies joined).
/// `shares(lo, hi)` tells whether two documents share a bucket. Returns the kept pairs and how
/// many pairs were checked.
pub fn pair_order_forest<S, F>(
    tables: &[Vec<&[u32]>],
    components: &mut UnionFind,
    forest: &mut UnionFind,
    shares: S,
    check: F,
) -> (Vec<Pair>, u64)
where
    S: Fn(u32, u32) -> bool,
    F: Fn(u32, u32) -> Option<Score>,
{
    let buckets: Vec<&[u32]> = tables.iter().flatten().copied().collect();
    // (document, bucket) for every document that has a partner above it in the bucket.
    let mut entries: Vec<(u32, u32)> = Vec::new();
    for (i, b) in (0u32..).zip(&buckets) {
        entries.extend(b[..b.len().saturating_sub(1)].iter().map(|&d| (d, i)));
    }
    entries.sort_unstable();
    // Every bucketed document by component, each component's in increasing order.
    let mut members: Vec<(u32, u32)> = buckets
        .iter()
        .flat_map(|b| b.iter())
        .map(|&d| (d, 0))
        .collect();
    members.sort_unstable();
    members.dedup();
    for m in &mut members {
        m.1 = m.0;
        m.0 = components.find(m.1);
    }
    members.sort_unstable();
    let (mut pairs, mut checked) = (Vec::new(), 0u64);
    let mut partners: Vec<u32> = Vec::new();
    for component in members.chunk_by(|x, y| x.0 == y.0) {
        let (home, whole) = (component[0].0, components.set_size(component[0].1));
        for (i, &(_, lo)) in component.iter().enumerate() {
            if forest.set_size(lo) == whole {
                // Every member is joined: any further pair of the component closes a cycle.
                break;
            }
            let mine = &entries[entries.partition_point(|e| e.0 < lo)..];
            let mine = &mine[..mine.partition_point(|e| e.0 == lo)];
            let above = |b: &[u32]| b.len() - b.partition_point(|&x| x <= lo);
            let listed: usize = mine.iter().map(|&(_, b)| above(buckets[b as usize])).sum();
            let later = &component[i + 1..];
            partners.clear();
            if listed <= later.len() {
                for &(_, b) in mine {
                    let b = buckets[b as usize];
                    let tail = &b[b.len() - above(b)..];
                    partners.extend(tail.iter().filter(|&&hi| components.find(hi) == home));
                }
                partners.sort_unstable();
                partners.dedup();
            } else {
                let root = forest.find(lo);
                partners.extend(
                    (later.iter().map(|&(_, hi)| hi))
                        .filter(|&hi| forest.find(hi) != root && shares(lo, hi)),
                );
            }
            for &hi in &partners {
                if forest.find(hi) == forest.find(lo) {
                    continue;
                }
                checked += 1;
                if let Some(Score {
                    similarity,
                    distance,
                }) = check(lo, hi)
                {
                    forest.union(lo, hi);
                    pairs.push(Pair {
                        lo,
                        hi,
                        similarity,
                        distance,
                        exact: false,
                    });
                    if forest.set_size(lo) == whole {
                        break;
                    }
                }
            }
        }
    }
    (pairs, checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::buckets::Buckets;
    use crate::verify::connect::{all_buckets, connect};

    /// Every candidate pair of `tables`, in (lo, hi) order, each once.
    fn all_pairs(tables: &[Buckets]) -> Vec<(u32, u32)> {
        let mut all = Vec::new();
        for t in tables {
            for i in 0..t.len() {
                let b = t.bucket(i);
                for (j, &lo) in b.iter().enumerate() {
                    all.extend(b[j + 1..].iter().map(|&hi| (lo, hi)));
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Every candidate pair of `tables` in (lo, hi) order, kept when it passes and joins two
    /// components: what listing the pairs gives.
    fn listed(tables: &[Buckets], n: usize, check: impl Fn(u32, u32) -> bool) -> Vec<(u32, u32)> {
        let all = all_pairs(tables);
        let mut uf = UnionFind::new(n);
        all.into_iter()
            .filter(|&(lo, hi)| uf.find(lo) != uf.find(hi) && check(lo, hi) && uf.union(lo, hi))
            .collect()
    }

    /// Components by [`connect`] (bucket by bucket), then the forest.
    fn chosen(
        tables: &[Buckets],
        n: usize,
        check: impl Fn(u32, u32) -> bool + Sync,
    ) -> (Vec<(u32, u32)>, u64) {
        let score = |a: u32, b: u32| check(a, b).then_some(Score::of(0.9));
        let mut components = UnionFind::new(n);
        let mut forest = components.clone();
        let buckets = all_buckets(tables);
        connect(&buckets, &mut components, score);
        let together: std::collections::HashSet<(u32, u32)> =
            all_pairs(tables).into_iter().collect();
        let shares = |a: u32, b: u32| together.contains(&(a, b));
        let (pairs, checked) =
            pair_order_forest(&buckets, &mut components, &mut forest, shares, score);
        (pairs.iter().map(|p| (p.lo, p.hi)).collect(), checked)
    }

    fn table(groups: &[&[u32]]) -> Buckets {
        let mut entries = Vec::new();
        for (k, g) in (0u64..).zip(groups) {
            entries.extend(g.iter().map(|&d| (k, d)));
        }
        Buckets::from_keys(entries)
    }

    #[test]
    fn a_family_that_passes_is_a_star_from_its_first_member_in_m_checks() {
        let family: Vec<u32> = (0..300).collect();
        // The family in every table, as near-copies share most bands.
        let tables: Vec<Buckets> = (0..8).map(|_| table(&[&family])).collect();
        let (pairs, checked) = chosen(&tables, 300, |_, _| true);
        let star: Vec<(u32, u32)> = (1..300).map(|d| (0, d)).collect();
        assert_eq!(pairs, star);
        assert_eq!(pairs, listed(&tables, 300, |_, _| true));
        assert_eq!(checked, 299);
        // A family none of whose pairs pass: its components are single documents, and no pair
        // is checked again.
        let (pairs, checked) = chosen(&tables, 300, |_, _| false);
        assert_eq!((pairs.len(), checked), (0, 0));
    }

    proptest::proptest! {
        /// Whatever the buckets and which pairs pass, the pairs chosen are those that listing
        /// every candidate pair in (lo, hi) order keeps.
        #[test]
        fn the_forest_is_the_one_listing_the_pairs_gives(
            bands in proptest::collection::vec(proptest::collection::vec(0u8..4, 5), 2..50),
            pass in proptest::collection::vec(proptest::bool::weighted(0.3), 50 * 50),
            pairs in proptest::collection::vec((0u32..50, 0u32..50), 0..30),
        ) {
            let n = bands.len() as u32;
            // Bucket tables keyed by each document's value in a band, then two-document buckets
            // of listed pairs (as `--containment`'s pairs of two size classes follow).
            let mut tables: Vec<Buckets> = (0..5)
                .map(|t| {
                    Buckets::from_keys((0..n).map(|d| (u64::from(bands[d as usize][t]), d)).collect())
                })
                .collect();
            let mut listed_pairs: Vec<(u32, u32)> = pairs
                .iter()
                .map(|&(a, b)| (a % n, b % n))
                .filter(|&(a, b)| a != b)
                .map(|(a, b)| (a.min(b), a.max(b)))
                .collect();
            listed_pairs.sort_unstable();
            listed_pairs.dedup();
            tables.extend(listed_pairs.chunks(3).map(Buckets::from_pairs));
            let check = |a: u32, b: u32| pass[(a * 50 + b) as usize];
            proptest::prop_assert_eq!(chosen(&tables, n as usize, check).0, listed(&tables, n as usize, check));
        }
    }
}
