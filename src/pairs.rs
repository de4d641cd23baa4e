//! The pair graph's building blocks, shared by the stages that find, verify and cluster pairs:
//! document ids, a verified pair with its score, and the union-find that joins them.

/// A document's id: its position in the scan's corpus (indexed documents first, then the
/// inputs in path order). A plain `u32` rather than a newtype: ids index the per-document
/// vectors in the hot loops (bucketing, verification, union-find), and buckets hand them out as
/// slices.
pub type DocId = u32;

/// A pair that passed: its similarity, and its SimHash distance where there is one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Jaccard, containment, edit similarity, the estimate, or 1 − distance/64 (SimHash).
    pub similarity: f64,
    /// SimHash Hamming distance.
    pub distance: Option<u32>,
}

impl Score {
    /// A score without a distance (MinHash).
    pub fn of(similarity: f64) -> Score {
        Score {
            similarity,
            distance: None,
        }
    }
}

/// A verified pair of documents, by document id (`lo < hi`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// The smaller document id.
    pub lo: DocId,
    /// The larger document id.
    pub hi: DocId,
    /// Jaccard similarity (MinHash) or 1 − distance/64 (SimHash).
    pub similarity: f64,
    /// SimHash Hamming distance, when the method is SimHash.
    pub distance: Option<u32>,
    /// True when the two documents are byte-identical.
    pub exact: bool,
}

/// Disjoint sets over `0..n` with union by size and path halving.
#[derive(Clone, Debug)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    /// `n` singleton sets.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    /// The representative of `x`'s set, compressing the path on the way.
    pub fn find(&mut self, mut x: DocId) -> DocId {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// The representative of `x`'s set without modifying anything (for readers in parallel).
    pub fn root(&self, mut x: DocId) -> DocId {
        while self.parent[x as usize] != x {
            x = self.parent[x as usize];
        }
        x
    }

    /// The number of elements in the set `root` represents (a [`UnionFind::root`]).
    pub fn root_size(&self, root: DocId) -> u32 {
        self.size[root as usize]
    }

    /// The number of elements in `x`'s set.
    pub fn set_size(&mut self, x: DocId) -> u32 {
        let root = self.find(x);
        self.size[root as usize]
    }

    /// Joins the sets of `a` and `b`; false when they were already one set.
    pub fn union(&mut self, a: DocId, b: DocId) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Naive oracle: repeatedly merge label classes until no edge crosses two labels.
    fn naive_labels(n: usize, edges: &[(u32, u32)]) -> Vec<usize> {
        let mut label: Vec<usize> = (0..n).collect();
        loop {
            let mut changed = false;
            for &(a, b) in edges {
                let (la, lb) = (label[a as usize], label[b as usize]);
                if la != lb {
                    let (keep, drop) = (la.min(lb), la.max(lb));
                    label
                        .iter_mut()
                        .filter(|l| **l == drop)
                        .for_each(|l| *l = keep);
                    changed = true;
                }
            }
            if !changed {
                return label;
            }
        }
    }

    fn graph() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (1usize..60).prop_flat_map(|n| {
            let edge = (0..n as u32, 0..n as u32);
            (Just(n), proptest::collection::vec(edge, 0..2 * n))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn union_find_equals_the_naive_oracle((n, edges) in graph()) {
            let labels = naive_labels(n, &edges);
            let mut uf = UnionFind::new(n);
            let mut joined = 0;
            for &(a, b) in &edges {
                joined += usize::from(uf.union(a, b));
            }
            let classes = labels.iter().collect::<std::collections::HashSet<_>>().len();
            // Each union that joined two sets removed one set.
            prop_assert_eq!(n - joined, classes);
            for i in 0..n as u32 {
                prop_assert_eq!(uf.root(i), uf.find(i));
                let size = labels.iter().filter(|&&l| l == labels[i as usize]).count();
                prop_assert_eq!(uf.set_size(i) as usize, size);
                for j in 0..n as u32 {
                    prop_assert_eq!(
                        uf.find(i) == uf.find(j),
                        labels[i as usize] == labels[j as usize]
                    );
                }
            }
        }
    }
}
