//! `--containment` verification in pair order: every candidate pair taken in (lo, hi) order,
//! kept when it passes and joins two components, without listing the pairs.
//!
//! A `--containment` cluster is a connected component of verified pairs, reported with a
//! spanning set of them (`pairs` in the output), so which spanning set is part of the answer:
//! the one that taking the candidate pairs in (lo, hi) order gives. Candidates used to be listed
//! as pairs for that, m²/2 of them for a family of m near-copies of one size, which share
//! buckets of m documents ([`crate::candidates::containment`]). Here the pairs of a document
//! `lo` are found when its turn comes, from its buckets (each partner once), and checked
//! then:
//! - documents are taken in rounds of about [`PAIRS_PER_ROUND`] candidate pairs; a round's
//!   pairs are checked side by side against the components as they stood before it, and the
//!   passing ones are joined in (lo, hi) order, each kept when it joins two components. A pair
//!   whose ends were joined before the round would not have been kept, so it is not checked; a
//!   pair joined within the round is checked but not kept: the pairs kept are those of taking
//!   them one by one, whatever the number of threads.
//! - once a document's component holds every document its buckets link it to (and their
//!   byte-identical copies), none of its pairs can join anything, so they are not listed: a
//!   family whose pairs pass costs about m checks, not m²/2 looks at pairs.
//! - a document's partners are listed from its buckets, or, when those list more pairs (with
//!   repeats: near-copies share many buckets), found among the later documents of its linked
//!   component that are not joined to it yet, asking whether the two share a bucket. A family
//!   one of whose copies passes with none of the others is never whole; this keeps each of the
//!   others' turns to a look at each later copy's root, not at its buckets' 64 lists.

use rayon::prelude::*;

use crate::pairs::{Pair, Score, UnionFind};

use super::connect::Verification;

/// Candidate pairs (counted before those already joined are set aside) checked side by side
/// in one round: more lets more checks run in parallel, and more checks of pairs that an
/// earlier pair of the round joins go to waste.
pub const PAIRS_PER_ROUND: usize = 4096;

/// Checks the candidate pairs of `tables` (lists of buckets, documents in increasing order in
/// each; every bucket of the documents' candidate components) in (lo, hi) order, joining those
/// `check` passes in `uf`: the pairs kept are those that join two components, as taking the
/// pairs one by one gives. `shares(lo, hi)` must tell whether two documents share a bucket.
pub fn in_pair_order<S, F>(
    tables: &[Vec<&[u32]>],
    uf: &mut UnionFind,
    shares: S,
    check: F,
) -> Verification
where
    S: Fn(u32, u32) -> bool + Sync,
    F: Fn(u32, u32) -> Option<Score> + Sync,
{
    in_rounds(tables, uf, PAIRS_PER_ROUND, shares, check)
}

/// [`in_pair_order`] with rounds of about `round` pairs.
fn in_rounds<S, F>(
    tables: &[Vec<&[u32]>],
    uf: &mut UnionFind,
    round: usize,
    shares: S,
    check: F,
) -> Verification
where
    S: Fn(u32, u32) -> bool + Sync,
    F: Fn(u32, u32) -> Option<Score> + Sync,
{
    // The documents, numbered locally in increasing order (so local order is id order), and
    // the buckets in local numbers.
    let mut docs: Vec<u32> = tables
        .iter()
        .flatten()
        .flat_map(|b| b.iter().copied())
        .collect();
    docs.par_sort_unstable();
    docs.dedup();
    let local = |d: u32| docs.partition_point(|&x| x < d) as u32;
    let buckets = Flat::new(tables, local);
    // (document, bucket) for every document with a partner above it in the bucket, by document.
    let mut entries: Vec<(u32, u32)> = Vec::new();
    for (i, b) in (0u32..).zip(buckets.iter()) {
        entries.extend(b[..b.len().saturating_sub(1)].iter().map(|&d| (d, i)));
    }
    entries.par_sort_unstable();
    // Documents linked through buckets, and how many documents `uf` will hold in the component
    // of one of them once all the linked ones are joined (their byte-identical copies count).
    let mut linked = UnionFind::new(docs.len());
    for b in buckets.iter() {
        for w in b.windows(2) {
            linked.union(w[0], w[1]);
        }
    }
    let mut reach = vec![0u32; docs.len()];
    for (i, &d) in (0u32..).zip(&docs) {
        let r = linked.find(i);
        reach[r as usize] += uf.set_size(d);
    }
    let reach: Vec<u32> = (0..docs.len() as u32)
        .map(|i| reach[linked.find(i) as usize])
        .collect();
    // Every document by linked component, each component's in increasing order, and where each
    // document's component starts and ends in it.
    let mut by_component: Vec<(u32, u32)> = (0..docs.len() as u32)
        .map(|i| (linked.find(i), i))
        .collect();
    by_component.sort_unstable();
    let mut span = vec![(0u32, 0u32); docs.len()];
    let mut at = 0;
    for run in by_component.chunk_by(|x, y| x.0 == y.0) {
        let end = at + run.len() as u32;
        for &(_, i) in run {
            span[i as usize] = (at, end);
        }
        at = end;
    }
    let by_component: Vec<u32> = by_component.into_iter().map(|(_, i)| i).collect();
    let turns: Vec<Turn> = entries
        .chunk_by(|x, y| x.0 == y.0)
        .map(|run| {
            let lo = run[0].0;
            let listed = run.iter().map(|&(_, b)| above(buckets.get(b), lo).len());
            Turn {
                lo,
                entries: run,
                listed: listed.sum(),
            }
        })
        .collect();

    let mut out = Verification::default();
    let mut start = 0;
    while start < turns.len() {
        let mut end = start + 1;
        let mut listed = turns[start].listed;
        while end < turns.len() && listed + turns[end].listed <= round {
            listed += turns[end].listed;
            end += 1;
        }
        // The round's documents whose component can still grow, with their roots as the round
        // starts.
        let taken: Vec<(u32, &Turn)> = (turns[start..end].iter())
            .filter_map(|turn| {
                let d = docs[turn.lo as usize];
                (uf.set_size(d) < reach[turn.lo as usize]).then(|| (uf.find(d), turn))
            })
            .collect();
        let frozen = &*uf;
        let passed: Vec<Outcome> = taken
            .par_iter()
            .map_init(
                || vec![u32::MAX; docs.len()],
                |seen, &(root, turn)| {
                    let lo = turn.lo;
                    let a = docs[lo as usize];
                    // Each partner once, those not joined to `lo` yet.
                    let mut partners = Vec::new();
                    let (from, to) = span[lo as usize];
                    let later = above(&by_component[from as usize..to as usize], lo);
                    if later.len() < turn.listed {
                        // Fewer documents after it in its component than its buckets list.
                        partners.extend(later.iter().filter(|&&hi| {
                            let b = docs[hi as usize];
                            frozen.root(b) != root && shares(a, b)
                        }));
                    } else {
                        for &(_, b) in turn.entries {
                            for &hi in above(buckets.get(b), lo) {
                                if seen[hi as usize] != lo {
                                    seen[hi as usize] = lo;
                                    if frozen.root(docs[hi as usize]) != root {
                                        partners.push(hi);
                                    }
                                }
                            }
                        }
                        partners.sort_unstable();
                    }
                    let kept: Vec<(u32, Score)> = (partners.par_iter())
                        .filter_map(|&hi| {
                            let b = docs[hi as usize];
                            check(a, b).map(|s| (b, s))
                        })
                        .collect();
                    Outcome {
                        lo: a,
                        kept,
                        checked: partners.len() as u64,
                    }
                },
            )
            .collect();
        for Outcome { lo, kept, checked } in passed {
            out.checked += checked;
            out.passed += kept.len() as u64;
            for (
                hi,
                Score {
                    similarity,
                    distance,
                },
            ) in kept
            {
                if uf.union(lo, hi) {
                    out.pairs.push(Pair {
                        lo,
                        hi,
                        similarity,
                        distance,
                        exact: false,
                    });
                }
            }
        }
        start = end;
    }
    out
}

/// A document's turn: its (local) number, its (document, bucket) entries, and how many pairs
/// they list (with repeats).
struct Turn<'a> {
    lo: u32,
    entries: &'a [(u32, u32)],
    listed: usize,
}

/// What a turn found: the document, its partners that passed (with their scores, in
/// increasing order), and how many pairs it checked.
struct Outcome {
    lo: u32,
    kept: Vec<(u32, Score)>,
    checked: u64,
}

/// Buckets in one list (a batch may hold a million buckets of two or three documents).
struct Flat {
    docs: Vec<u32>,
    /// Start of each bucket in `docs`, plus a final end.
    bounds: Vec<u32>,
}

impl Flat {
    /// Every bucket of `tables`, each document renamed by `rename`.
    fn new(tables: &[Vec<&[u32]>], rename: impl Fn(u32) -> u32) -> Flat {
        let mut flat = Flat {
            docs: Vec::new(),
            bounds: vec![0],
        };
        for b in tables.iter().flatten() {
            flat.docs.extend(b.iter().map(|&d| rename(d)));
            flat.bounds.push(flat.docs.len() as u32);
        }
        flat
    }

    /// Bucket `i`.
    fn get(&self, i: u32) -> &[u32] {
        &self.docs[self.bounds[i as usize] as usize..self.bounds[i as usize + 1] as usize]
    }

    /// Every bucket, in order.
    fn iter(&self) -> impl Iterator<Item = &[u32]> {
        self.bounds
            .windows(2)
            .map(|w| &self.docs[w[0] as usize..w[1] as usize])
    }
}

/// The documents of bucket `b` (in increasing order) above `lo`.
fn above(b: &[u32], lo: u32) -> &[u32] {
    &b[b.partition_point(|&x| x <= lo)..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::buckets::Buckets;
    use crate::verify::connect::all_buckets;

    /// Every candidate pair of `tables` listed in (lo, hi) order, each once, kept when it
    /// passes and joins two components: what listing the pairs gives.
    fn listed(
        tables: &[Buckets],
        uf: &mut UnionFind,
        check: impl Fn(u32, u32) -> bool,
    ) -> Vec<(u32, u32)> {
        pairs_of(tables)
            .into_iter()
            .filter(|&(lo, hi)| uf.find(lo) != uf.find(hi) && check(lo, hi) && uf.union(lo, hi))
            .collect()
    }

    /// Every candidate pair of `tables`, in (lo, hi) order, each once.
    fn pairs_of(tables: &[Buckets]) -> Vec<(u32, u32)> {
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

    /// The pairs [`in_rounds`] keeps, and how many it checked.
    fn ordered(
        tables: &[Buckets],
        uf: &mut UnionFind,
        round: usize,
        check: impl Fn(u32, u32) -> bool + Sync,
    ) -> (Vec<(u32, u32)>, u64) {
        let together: std::collections::HashSet<(u32, u32)> =
            pairs_of(tables).into_iter().collect();
        ordered_with(tables, uf, round, |a, b| together.contains(&(a, b)), check)
    }

    /// [`ordered`], told by `shares` which documents share a bucket.
    fn ordered_with(
        tables: &[Buckets],
        uf: &mut UnionFind,
        round: usize,
        shares: impl Fn(u32, u32) -> bool + Sync,
        check: impl Fn(u32, u32) -> bool + Sync,
    ) -> (Vec<(u32, u32)>, u64) {
        let score = |a: u32, b: u32| check(a, b).then_some(Score::of(0.9));
        let v = in_rounds(&all_buckets(tables), uf, round, shares, score);
        (v.pairs.iter().map(|p| (p.lo, p.hi)).collect(), v.checked)
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
        // 4,200 near-copies in every table, as near-copies share most bands (more pairs than a
        // round holds), and an unrelated bucket.
        let family: Vec<u32> = (0..4200).collect();
        let tables: Vec<Buckets> = (0..8).map(|_| table(&[&family, &[4200, 4201]])).collect();
        let all = |_, _| true;
        let shares = |a: u32, b: u32| (a < 4200) == (b < 4200);
        let mut uf = UnionFind::new(4202);
        let (pairs, checked) = ordered_with(&tables, &mut uf, PAIRS_PER_ROUND, shares, all);
        let star: Vec<(u32, u32)> = (1..4200).map(|d| (0, d)).chain([(4200, 4201)]).collect();
        assert_eq!(pairs, star);
        assert_eq!(checked, 4199 + 1);
        // A family none of whose pairs pass: each pair is checked once.
        let family: Vec<u32> = (0..300).collect();
        let tables: Vec<Buckets> = (0..8).map(|_| table(&[&family])).collect();
        let (pairs, checked) = ordered(&tables, &mut UnionFind::new(300), 1, |_, _| false);
        assert_eq!((pairs.len() as u64, checked), (0, 300 * 299 / 2));
    }

    #[test]
    fn byte_identical_copies_count_in_a_whole_component() {
        // 0, 1 and 2 share a bucket, (0, 1) and (1, 2) pass; 3 is a copy of 0, joined before
        // verification. When 1's turn comes, its component (0, 1 and the copy) is not yet all
        // four documents it can reach: (1, 2) is checked and kept.
        let tables = [table(&[&[0, 1, 2]])];
        let mut uf = UnionFind::new(4);
        uf.union(0, 3);
        let pass = |a: u32, b: u32| b == a + 1;
        let (pairs, checked) = ordered(&tables, &mut uf, 1, pass);
        assert_eq!((pairs, checked), (vec![(0, 1), (1, 2)], 3));
        // Taken in one round, (1, 2) is checked before (0, 1) joins anything: the same pairs.
        let mut uf = UnionFind::new(4);
        uf.union(0, 3);
        assert_eq!(
            ordered(&tables, &mut uf, PAIRS_PER_ROUND, pass).0,
            [(0, 1), (1, 2)]
        );
    }

    proptest::proptest! {
        /// Whatever the buckets and which pairs pass, the pairs kept are those that listing
        /// every candidate pair in (lo, hi) order keeps, and the components are the same.
        #[test]
        fn the_pairs_kept_are_those_listing_the_pairs_keeps(
            bands in proptest::collection::vec(proptest::collection::vec(0u8..4, 5), 2..60),
            pass in proptest::collection::vec(proptest::bool::weighted(0.3), 60 * 60),
            pairs in proptest::collection::vec((0u32..60, 0u32..60), 0..30),
            copies in proptest::collection::vec(0u32..60, 0..4),
        ) {
            let n = bands.len() as u32;
            // Tables keyed by each document's value in a band, then two-document buckets of
            // listed pairs (as `--containment`'s pairs of two size classes follow).
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
            // Byte-identical copies: documents n.. joined to a bucketed one beforehand.
            let mut start = UnionFind::new(n as usize + copies.len());
            for (c, &of) in (n..).zip(&copies) {
                start.union(of % n, c);
            }
            let check = |a: u32, b: u32| pass[(a * 60 + b) as usize];
            let mut expected = start.clone();
            let kept = listed(&tables, &mut expected, check);
            for round in [1, 7, PAIRS_PER_ROUND] {
                let mut uf = start.clone();
                proptest::prop_assert_eq!(&ordered(&tables, &mut uf, round, check).0, &kept);
                for d in 0..n {
                    proptest::prop_assert_eq!(uf.set_size(d), expected.set_size(d));
                }
            }
        }
    }
}
