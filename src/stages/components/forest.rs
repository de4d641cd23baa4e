//! The candidate components: a union-find that every thread of the stage joins documents in at
//! once, and the dealing of its sets to the verify partitions.
//!
//! Lock-free: each link is a compare-and-swap on the parent of a root, always from the larger
//! index to the smaller (union by index), and finds halve their paths with compare-and-swaps on
//! non-roots, which only ever point further up. So parents only decrease along a path (no
//! cycle can form), a set's root is its least index, and the sets, their roots and everything
//! computed from them are the same whatever the threads and their schedule. Union by index
//! keeps no sizes while joining (union by size would need a second word per document); path
//! halving keeps the paths short in practice, and the sizes are counted once, after.
//!
//! Indices are `u32` while the candidates fit (4 bytes a document for the parents, 4 for the
//! sizes, which then hold each document's partition), `u64` past 4.29 billion: the width is a
//! type, [`Slot`], chosen once per run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

/// An atomic union-find entry: a parent, a size or a partition.
pub trait Slot: Send + Sync + Sized + 'static {
    /// The largest index it holds.
    const MAX: u64;
    /// A set's size and root packed into one key that sorts largest set first, then least
    /// root: `u64` for `u32` entries, so the sets cost 8 bytes each while sorted.
    type Key: Ord + Copy + Send + Sync;
    /// An entry holding `v`.
    fn new(v: u64) -> Self;
    /// Its value.
    fn get(&self) -> u64;
    /// Replaces `old` with `new`; false when it no longer held `old`.
    fn swap_if(&self, old: u64, new: u64) -> bool;
    /// Sets it to `v`.
    fn set(&self, v: u64);
    /// Adds one.
    fn add_one(&self);
    /// The key of the set of `size` documents whose root is `root`.
    fn key(size: u64, root: u64) -> Self::Key;
    /// The size and root of a key.
    fn unkey(key: Self::Key) -> (u64, u64);
}

impl Slot for AtomicU32 {
    const MAX: u64 = u32::MAX as u64;
    type Key = u64;
    fn new(v: u64) -> Self {
        AtomicU32::new(v as u32)
    }
    fn get(&self) -> u64 {
        u64::from(self.load(Relaxed))
    }
    fn swap_if(&self, old: u64, new: u64) -> bool {
        (self.compare_exchange(old as u32, new as u32, Relaxed, Relaxed)).is_ok()
    }
    fn set(&self, v: u64) {
        self.store(v as u32, Relaxed);
    }
    fn add_one(&self) {
        self.fetch_add(1, Relaxed);
    }
    fn key(size: u64, root: u64) -> u64 {
        (u64::from(!(size as u32)) << 32) | root
    }
    fn unkey(key: u64) -> (u64, u64) {
        (u64::from(!((key >> 32) as u32)), key & u64::from(u32::MAX))
    }
}

impl Slot for AtomicU64 {
    const MAX: u64 = u64::MAX;
    type Key = u128;
    fn new(v: u64) -> Self {
        AtomicU64::new(v)
    }
    fn get(&self) -> u64 {
        self.load(Relaxed)
    }
    fn swap_if(&self, old: u64, new: u64) -> bool {
        (self.compare_exchange(old, new, Relaxed, Relaxed)).is_ok()
    }
    fn set(&self, v: u64) {
        self.store(v, Relaxed);
    }
    fn add_one(&self) {
        self.fetch_add(1, Relaxed);
    }
    fn key(size: u64, root: u64) -> u128 {
        (u128::from(!size) << 64) | u128::from(root)
    }
    fn unkey(key: u128) -> (u64, u64) {
        (!((key >> 64) as u64), key as u64)
    }
}

/// Disjoint sets over `0..n`, joined from any number of threads.
pub struct Forest<S: Slot> {
    parent: Vec<S>,
    /// After [`Forest::count`], each root's set size (0 elsewhere).
    size: Vec<S>,
}

impl<S: Slot> Forest<S> {
    /// `n` singleton sets (`n` - 1 must fit in `S`, which the caller chose for `n`).
    pub fn new(n: usize) -> Self {
        debug_assert!(n as u64 <= S::MAX.saturating_add(1));
        Forest {
            parent: (0..n as u64).into_par_iter().map(S::new).collect(),
            size: (0..n).into_par_iter().map(|_| S::new(0)).collect(),
        }
    }

    /// The root of `x`'s set, halving the path on the way.
    pub fn find(&self, mut x: u64) -> u64 {
        loop {
            let p = self.parent[x as usize].get();
            if p == x {
                return x;
            }
            let g = self.parent[p as usize].get();
            if g == p {
                return p;
            }
            // g is an ancestor of x whatever another thread did meanwhile: parents only move
            // up, and a non-root never becomes a root again. Losing the race loses nothing.
            self.parent[x as usize].swap_if(p, g);
            x = g;
        }
    }

    /// Joins the sets of `a` and `b`.
    pub fn union(&self, a: u64, b: u64) {
        let (mut a, mut b) = (a, b);
        loop {
            a = self.find(a);
            b = self.find(b);
            if a == b {
                return;
            }
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            // Only while `hi` is still a root; else another thread linked it, and the roots
            // are found again.
            if self.parent[hi as usize].swap_if(hi, lo) {
                return;
            }
        }
    }

    /// Points every element at its root and counts each set's size at its root; returns the
    /// largest size.
    pub fn count(&mut self) -> u64 {
        self.size.par_iter().for_each(|s| s.set(0));
        (0..self.parent.len() as u64).into_par_iter().for_each(|i| {
            let r = self.find(i);
            self.parent[i as usize].set(r);
            self.size[r as usize].add_one();
        });
        self.size.par_iter().map(S::get).max().unwrap_or(0)
    }

    /// The partition of each element (as [`Forest::part`] reads it), and the number of sets:
    /// sets are dealt largest first (ties: the least index first) to the partition with the
    /// fewest elements so far (ties: the first partition). In the forest's own arrays, so that
    /// the partitions cost no more memory.
    pub fn deal(mut self, parts: u32) -> Parts<S> {
        self.count();
        let size = &self.size;
        let mut sets: Vec<S::Key> = (size.par_iter().enumerate())
            .filter(|(_, s)| s.get() > 0)
            .map(|(r, s)| S::key(s.get(), r as u64))
            .collect();
        sets.par_sort_unstable();
        let count = sets.len() as u64;
        // `size` now holds each root's partition.
        let mut load: BinaryHeap<Reverse<(u64, u32)>> =
            (0..parts).map(|p| Reverse((0, p))).collect();
        for key in sets {
            let (size, root) = S::unkey(key);
            if let Some(Reverse((l, p))) = load.pop() {
                self.size[root as usize].set(u64::from(p));
                load.push(Reverse((l + size, p)));
            }
        }
        let part_of = self.size;
        let out = self.parent;
        out.par_iter()
            .for_each(|x| x.set(part_of[x.get() as usize].get()));
        Parts { part: out, count }
    }
}

/// Each element's partition, and the number of sets dealt.
pub struct Parts<S: Slot> {
    part: Vec<S>,
    /// The sets.
    pub count: u64,
}

impl<S: Slot> Parts<S> {
    /// The partition of `x`.
    pub fn part(&self, x: u64) -> u32 {
        self.part[x as usize].get() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::UnionFind;
    use proptest::prelude::*;

    /// The forest of `n` joined along `edges` on `threads` threads, dealt to `parts`: each
    /// element's partition, the sets, and the largest set.
    fn dealt<S: Slot>(
        n: usize,
        edges: &[(u32, u32)],
        parts: u32,
        threads: usize,
    ) -> (Vec<u32>, u64, u64) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        pool.install(|| {
            let mut f = Forest::<S>::new(n);
            edges
                .par_iter()
                .for_each(|&(a, b)| f.union(u64::from(a), u64::from(b)));
            let largest = f.count();
            let p = f.deal(parts);
            ((0..n as u64).map(|i| p.part(i)).collect(), p.count, largest)
        })
    }

    /// The dealing as the staged pipeline first did it: components by the sequential
    /// union-find, each set once at its first element, sorted largest first, dealt to the
    /// least loaded partition; and the largest set.
    fn naive_deal(n: u32, edges: &[(u32, u32)], parts: u32) -> (Vec<u32>, u64, u64) {
        let mut uf = UnionFind::new(n as usize);
        for &(a, b) in edges {
            uf.union(a, b);
        }
        let roots: Vec<u32> = (0..n).map(|i| uf.find(i)).collect();
        let mut seen = vec![false; n as usize];
        let mut comps = Vec::new();
        for i in 0..n {
            let r = roots[i as usize];
            if !seen[r as usize] {
                seen[r as usize] = true;
                comps.push((Reverse(uf.set_size(i)), i, r));
            }
        }
        comps.sort_unstable();
        let mut load: BinaryHeap<Reverse<(u64, u32)>> =
            (0..parts).map(|p| Reverse((0, p))).collect();
        let mut part_of_root = vec![0u32; n as usize];
        for &(Reverse(size), _, r) in &comps {
            if let Some(Reverse((l, p))) = load.pop() {
                part_of_root[r as usize] = p;
                load.push(Reverse((l + u64::from(size), p)));
            }
        }
        let parts = roots.iter().map(|&r| part_of_root[r as usize]).collect();
        let largest = comps.first().map_or(0, |c| u64::from(c.0 .0));
        (parts, comps.len() as u64, largest)
    }

    fn graph() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (1usize..200).prop_flat_map(|n| {
            let edge = (0..n as u32, 0..n as u32);
            (Just(n), proptest::collection::vec(edge, 0..2 * n))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// As the stage dealt them when it joined on one thread (scan's union-find by size), with
        /// separate maps, with either width, on one thread or three.
        #[test]
        fn deals_as_the_sequential_union_find_on_any_threads_and_width(
            (n, edges) in graph(),
            parts in 1u32..6,
        ) {
            let want = naive_deal(n as u32, &edges, parts);
            prop_assert_eq!(&dealt::<AtomicU32>(n, &edges, parts, 1), &want);
            prop_assert_eq!(&dealt::<AtomicU32>(n, &edges, parts, 3), &want);
            prop_assert_eq!(&dealt::<AtomicU64>(n, &edges, parts, 3), &want);
        }
    }

    #[test]
    fn keys_sort_the_largest_set_first_then_the_least_root() {
        fn order<S: Slot>(sets: &[(u64, u64)]) -> Vec<(u64, u64)> {
            let mut keys: Vec<S::Key> = sets.iter().map(|&(s, r)| S::key(s, r)).collect();
            keys.sort_unstable();
            keys.into_iter().map(S::unkey).collect()
        }
        let m = u64::from(u32::MAX);
        let sets = [(2, 7), (m, 0), (3, m), (2, 1), (m, m - 1)];
        let want = [(m, 0), (m, m - 1), (3, m), (2, 1), (2, 7)];
        assert_eq!(order::<AtomicU32>(&sets), want);
        // Past 2³²: sizes and roots that only the wide entries hold.
        let big = [
            (m + 5, m + 9),
            (2, m + 1),
            (m + 5, 3),
            (u64::MAX - 1, u64::MAX - 1),
        ];
        let want = [
            (u64::MAX - 1, u64::MAX - 1),
            (m + 5, 3),
            (m + 5, m + 9),
            (2, m + 1),
        ];
        assert_eq!(order::<AtomicU64>(&big), want);
    }

    /// A heavily contended chain: every thread joins overlapping runs at once.
    #[test]
    fn contended_unions_make_one_set_rooted_at_the_least_index() {
        let n = 100_000u64;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        pool.install(|| {
            let mut f = Forest::<AtomicU32>::new(n as usize);
            (0..n - 1)
                .into_par_iter()
                .for_each(|i| f.union((i * 7919) % n, (i * 7919 + 7919) % n));
            assert_eq!(f.count(), n);
            assert!((0..n).all(|i| f.find(i) == 0));
        });
    }
}
