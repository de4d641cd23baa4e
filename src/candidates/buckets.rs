//! Buckets: the groups of documents that share a key in one LSH band or SimHash piece.
//!
//! Only buckets of two or more documents are kept, as one flat list of document ids plus bucket
//! boundaries, so a table costs 4 bytes per bucketed document whatever the bucket sizes.

use crate::sketch::shingle::sort_by_uniform_key;

/// The multi-document buckets of one table (band or piece), in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Buckets {
    docs: Vec<u32>,
    /// Start of each bucket in `docs`, plus a final end.
    bounds: Vec<u32>,
}

impl Buckets {
    /// Groups `(key, doc)` entries by key; documents within a bucket come out in increasing id
    /// order, buckets in key order, so the result does not depend on the input order. Keys are
    /// hashes (band keys) or bit ranges of fingerprints (SimHash pieces), so they sort in about
    /// three passes.
    pub fn from_keys(mut entries: Vec<(u64, u32)>) -> Self {
        sort_by_uniform_key(&mut entries, |&(k, _)| k);
        let mut docs = Vec::new();
        let mut bounds = vec![0u32];
        let mut i = 0;
        while i < entries.len() {
            let key = entries[i].0;
            let mut j = i + 1;
            while j < entries.len() && entries[j].0 == key {
                j += 1;
            }
            if j - i >= 2 {
                docs.extend(entries[i..j].iter().map(|&(_, d)| d));
                bounds.push(docs.len() as u32);
            }
            i = j;
        }
        Buckets { docs, bounds }
    }

    /// One two-document bucket per pair, in the order given (`--containment`, whose candidates
    /// are pairs rather than buckets: see [`crate::candidates::containment::candidates`]).
    pub fn from_pairs(pairs: &[(u32, u32)]) -> Self {
        let docs = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        let bounds = (0..=pairs.len() as u32).map(|i| 2 * i).collect();
        Buckets { docs, bounds }
    }

    /// Takes the buckets of two documents out, as (lo, hi) pairs in bucket order.
    pub fn take_pairs(&mut self) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        let mut docs = Vec::new();
        let mut bounds = vec![0u32];
        for i in 0..self.len() {
            match self.bucket(i) {
                &[lo, hi] => pairs.push((lo, hi)),
                b => {
                    docs.extend_from_slice(b);
                    bounds.push(docs.len() as u32);
                }
            }
        }
        *self = Buckets { docs, bounds };
        pairs
    }

    /// Number of multi-document buckets.
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// True when no two documents share a key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The documents of bucket `i`, in increasing id order.
    pub fn bucket(&self, i: usize) -> &[u32] {
        &self.docs[self.bounds[i] as usize..self.bounds[i + 1] as usize]
    }

    /// Keeps only the buckets that hold a document with id `first` or more: with an index, the
    /// buckets of indexed documents alone hold no pair to check.
    pub fn keep_from(&mut self, first: u32) {
        let mut docs = Vec::new();
        let mut bounds = vec![0u32];
        for i in 0..self.len() {
            let b = self.bucket(i);
            // Ids within a bucket increase, so its last is its largest.
            if b.last().is_some_and(|&d| d >= first) {
                docs.extend_from_slice(b);
                bounds.push(docs.len() as u32);
            }
        }
        *self = Buckets { docs, bounds };
    }

    /// Every bucketed document id (with repeats across tables, none within one).
    pub fn docs(&self) -> &[u32] {
        &self.docs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_key_and_drops_singletons() {
        let b = Buckets::from_keys(vec![(5, 3), (1, 0), (5, 1), (2, 2), (1, 4), (5, 2)]);
        assert_eq!(b.len(), 2);
        assert_eq!(b.bucket(0), &[0, 4]);
        assert_eq!(b.bucket(1), &[1, 2, 3]);
        assert!(Buckets::from_keys(vec![(1, 0), (2, 1)]).is_empty());
        let p = Buckets::from_pairs(&[(0, 4), (1, 2)]);
        assert_eq!(
            (p.len(), p.bucket(0), p.bucket(1)),
            (2, &[0, 4][..], &[1, 2][..])
        );
        assert!(Buckets::from_pairs(&[]).is_empty());
        let mut some = Buckets::from_keys(vec![(1, 7), (2, 3), (1, 5), (2, 4), (2, 9), (3, 0)]);
        assert_eq!(some.take_pairs(), [(5, 7)]);
        assert_eq!((some.len(), some.bucket(0)), (1, &[3, 4, 9][..]));
        let mut kept = b.clone();
        kept.keep_from(4);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept.bucket(0), &[0, 4]);
        kept.keep_from(5);
        assert!(kept.is_empty());
        // Hash keys, many of them shared, in any order: the same buckets as a plain sort.
        let mut state = 9u64;
        let keys: Vec<u64> = (0..300)
            .map(|_| crate::sketch::minhash::splitmix64(&mut state))
            .collect();
        let mut entries: Vec<(u64, u32)> = (0..3000u32)
            .map(|d| {
                (
                    keys[crate::sketch::minhash::splitmix64(&mut state) as usize % 300],
                    d,
                )
            })
            .collect();
        entries.reverse();
        let b = Buckets::from_keys(entries.clone());
        entries.sort_unstable();
        let mut docs = Vec::new();
        for w in entries.chunk_by(|x, y| x.0 == y.0) {
            docs.extend(w.iter().map(|&(_, d)| d));
        }
        assert_eq!(b.docs(), &docs[..]);
        // Narrow keys (SimHash pieces): the counting pass takes the bits they use.
        let narrow: Vec<(u64, u32)> = (0..3000u32)
            .map(|d| (u64::from(d % 1000) >> 3, d))
            .collect();
        let b = Buckets::from_keys(narrow);
        assert_eq!(b.len(), 125);
        assert_eq!(
            b.bucket(0),
            &[
                0, 1, 2, 3, 4, 5, 6, 7, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 2000, 2001,
                2002, 2003, 2004, 2005, 2006, 2007
            ]
        );
    }
}
