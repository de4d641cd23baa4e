//! The candidate components: a union-find over the candidate documents' indices (8 bytes a
//! document), and the dealing of its components to the verify partitions, done in place in
//! its own arrays so that the partition of every document costs no more memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Disjoint sets of `0..n`, joined by size.
pub struct Forest {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl Forest {
    /// `n` singletons (`n` at most `u32::MAX`, which [`super::ids::check_count`] checks).
    pub fn new(n: u32) -> Forest {
        Forest {
            parent: (0..n).collect(),
            size: vec![1; n as usize],
        }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// Joins the sets of `a` and `b`.
    pub fn union(&mut self, a: u32, b: u32) {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
    }

    /// Members of the largest set.
    pub fn largest(&self) -> u32 {
        (0..self.parent.len())
            .filter(|&i| self.parent[i] as usize == i)
            .map(|i| self.size[i])
            .max()
            .unwrap_or(0)
    }

    /// The partition of each element, and the number of sets: sets are dealt largest first
    /// (ties: the one with the first element first) to the partition with the fewest elements
    /// so far (ties: the first partition).
    pub fn deal(mut self, parts: u32) -> (Vec<u32>, u64) {
        let n = self.parent.len() as u32;
        for i in 0..n {
            let r = self.find(i);
            self.parent[i as usize] = r;
        }
        // Each set once, at its first element; its size is then zeroed to mark it seen.
        let mut sets: Vec<(Reverse<u32>, u32, u32)> = Vec::new();
        for i in 0..n {
            let r = self.parent[i as usize];
            let size = std::mem::take(&mut self.size[r as usize]);
            if size > 0 {
                sets.push((Reverse(size), i, r));
            }
        }
        sets.sort_unstable();
        let count = sets.len() as u64;
        // `size` now holds each root's partition.
        let mut load: BinaryHeap<Reverse<(u64, u32)>> =
            (0..parts).map(|p| Reverse((0, p))).collect();
        for (Reverse(size), _, r) in sets {
            if let Some(Reverse((l, p))) = load.pop() {
                self.size[r as usize] = p;
                load.push(Reverse((l + u64::from(size), p)));
            }
        }
        let part_of = self.size;
        let mut out = self.parent;
        for x in out.iter_mut() {
            *x = part_of[*x as usize];
        }
        (out, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The dealing as the stage did it with `crate::pairs::UnionFind` and separate maps.
    fn naive(n: u32, edges: &[(u32, u32)], parts: u32) -> (Vec<u32>, u64) {
        let mut uf = crate::pairs::UnionFind::new(n as usize);
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
        (parts, comps.len() as u64)
    }

    proptest! {
        #[test]
        fn deals_as_the_separate_maps_did(
            n in 1u32..60,
            raw in proptest::collection::vec((0u32..60, 0u32..60), 0..80),
            parts in 1u32..6,
        ) {
            let edges: Vec<(u32, u32)> =
                raw.into_iter().map(|(a, b)| (a % n, b % n)).collect();
            let mut f = Forest::new(n);
            for &(a, b) in &edges {
                f.union(a, b);
            }
            let mut uf = crate::pairs::UnionFind::new(n as usize);
            for &(a, b) in &edges {
                uf.union(a, b);
            }
            let largest = (0..n).map(|i| uf.set_size(i)).max();
            prop_assert_eq!(Some(f.largest()), largest);
            prop_assert_eq!(f.deal(parts), naive(n, &edges, parts));
        }
    }

    #[test]
    fn the_largest_set_is_counted_before_dealing() {
        let mut f = Forest::new(6);
        assert_eq!(f.largest(), 1);
        f.union(0, 1);
        f.union(2, 3);
        f.union(3, 4);
        assert_eq!(f.largest(), 3);
        // {2,3,4} first to partition 0, then {0,1} and {5} to the less loaded partition 1.
        assert_eq!(f.deal(2), (vec![1, 1, 0, 0, 0, 1], 3));
    }
}
