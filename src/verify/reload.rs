//! Material: what is derived again from a few documents' files to judge their pairs exactly,
//! a sorted shingle set (exact Jaccard) or a token sequence (edit similarity). Used for one
//! batch of candidates, one component (`--cluster strict`) or one cluster (`--pairs`) at a time,
//! never for the whole corpus.
//!
//! Token sequences longer than [`MAX_EDIT_TOKENS`] are not kept: a pair with such a document is
//! judged by Jaccard instead, so the shingle sets of that document and of its possible partners
//! are loaded.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::lcs::MAX_EDIT_TOKENS;
use crate::ingest::reread::{load_sets, load_token_seqs, LoadedSet};
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;

/// What was loaded of one document.
#[derive(Clone, Copy, Debug, Default)]
pub struct Material<'a> {
    /// Its sorted, deduplicated shingle hashes.
    pub set: Option<&'a [u64]>,
    /// Its token hashes in text order (at most [`MAX_EDIT_TOKENS`]).
    pub tokens: Option<&'a [u64]>,
}

/// Hashes a document id as FxHash does, with one multiplication. The ids are the scan's own
/// numbers, never chosen by the input, so SipHash's defence against chosen keys (HashDoS) buys
/// nothing here, and hashing with it was 8 M instructions of a 10k scan (issue 26). No map
/// keyed by it is iterated in its order.
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map by document id.
type ById<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// Sets and token sequences by document id (the document holding each content).
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    sets: ById<Box<[u64]>>,
    tokens: ById<Box<[u64]>>,
    /// Parity bitmaps of the sets, all of one size, when a large bucket asked for them
    /// ([`super::parity`]).
    parity: ById<Box<[u64]>>,
}

/// What to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// Every document's shingle set.
    pub sets: bool,
    /// Every document's token sequence (and the sets of documents over the cap and of their
    /// partners).
    pub tokens: bool,
}

impl Loaded {
    /// Room for `n` sets.
    pub fn with_capacity(n: usize) -> Loaded {
        Loaded {
            sets: ById::with_capacity_and_hasher(n, Default::default()),
            tokens: ById::default(),
            parity: ById::default(),
        }
    }

    /// Holds `set` as document `d`'s sorted shingle set.
    pub fn insert_set(&mut self, d: u32, set: Box<[u64]>) {
        self.sets.insert(d, set);
    }

    #[cfg(test)]
    /// Holds `tokens` as document `d`'s token sequence.
    pub fn insert_tokens(&mut self, d: u32, tokens: Box<[u64]>) {
        self.tokens.insert(d, tokens);
    }

    /// Moves into `self`, in document order, the sets of `from` whose document `keep` accepts,
    /// while their bytes fit in `budget` (which they use up).
    pub fn retain_sets(
        &mut self,
        from: Loaded,
        mut keep: impl FnMut(u32) -> bool,
        budget: &mut u64,
    ) {
        let mut sets: Vec<(u32, Box<[u64]>)> = from.sets.into_iter().collect();
        sets.sort_unstable_by_key(|(d, _)| *d);
        for (d, set) in sets {
            let bytes = set.len() as u64 * 8;
            if keep(d) && bytes <= *budget {
                *budget -= bytes;
                self.sets.insert(d, set);
            }
        }
    }

    /// Adds the parity bitmaps of the sets held for `docs` (in parallel), all of one size, for
    /// the largest of those sets.
    pub fn add_parity(&mut self, docs: &[u32]) {
        use rayon::prelude::*;
        let sets: Vec<(u32, &[u64])> = (docs.iter())
            .filter_map(|&d| Some((d, self.get(d).set?)))
            .collect();
        let largest = sets.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
        let words = super::parity::words_for(largest);
        self.parity = sets
            .into_par_iter()
            .map(|(d, set)| (d, super::parity::bitmap(set, words)))
            .collect();
    }

    /// True when the parity bitmaps of `a` and `b` (documents holding their content) prove
    /// that their sets, of `a_len` and `b_len` elements, are less similar than `threshold`:
    /// by Jaccard, or with `containment` by the containment of the smaller.
    pub fn parity_rules_out(
        &self,
        (a, b): (u32, u32),
        lens: (usize, usize),
        threshold: f64,
        containment: bool,
    ) -> bool {
        match (self.parity.get(&a), self.parity.get(&b)) {
            (Some(pa), Some(pb)) if containment => {
                super::parity::rules_out_containment(lens.0, lens.1, pa, pb, threshold)
            }
            (Some(pa), Some(pb)) => super::parity::rules_out(lens.0, lens.1, pa, pb, threshold),
            _ => false,
        }
    }

    /// A copy of the set held for `d`, if any.
    pub fn set_copy(&self, d: u32) -> Option<Box<[u64]>> {
        self.sets.get(&d).cloned()
    }

    /// What was loaded of document `d` (empty when nothing was, or its file failed).
    pub fn get(&self, d: u32) -> Material<'_> {
        Material {
            set: self.sets.get(&d).map(|s| &s[..]),
            tokens: self.tokens.get(&d).map(|t| &t[..]),
        }
    }

    /// Loads `want` of `docs` (id and content hash, sorted by id) in parallel. When a document
    /// has more tokens than the cap, the sets of `partners(over)` are loaded too, `over` being
    /// the documents over the cap. Files that cannot be read again, or changed, are added to
    /// `failed` with the reason.
    pub fn load(
        engine: &Engine,
        files: &[FileEntry],
        docs: &[(u32, u128)],
        want: Want,
        partners: impl FnOnce(&HashSet<u32>) -> Vec<u32>,
        failed: &mut Vec<(u32, String)>,
    ) -> Loaded {
        let mut out = Loaded::default();
        let mut over = HashSet::new();
        if want.tokens {
            for (d, r) in load_token_seqs(engine, files, docs) {
                match r {
                    Ok(t) if t.len() > MAX_EDIT_TOKENS => {
                        over.insert(d);
                    }
                    Ok(t) => {
                        out.tokens.insert(d, t);
                    }
                    Err(e) => failed.push((d, e)),
                }
            }
        }
        let set_docs: Vec<(u32, u128)> = if want.sets {
            docs.to_vec()
        } else if over.is_empty() {
            Vec::new()
        } else {
            let mut ids = partners(&over);
            ids.extend(&over);
            ids.sort_unstable();
            ids.dedup();
            ids.iter()
                .filter_map(|&d| {
                    let i = docs.binary_search_by_key(&d, |&(id, _)| id).ok()?;
                    Some(docs[i])
                })
                .collect()
        };
        let sets: Vec<(u32, LoadedSet)> = load_sets(engine, files, &set_docs);
        for (d, r) in sets {
            match r {
                Ok(s) => {
                    out.sets.insert(d, s);
                }
                Err(e) => failed.push((d, e)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parity_bitmaps_are_built_for_the_documents_asked_for_only() {
        // Three sets far apart: with bitmaps, any pair of them is ruled out at 0.8.
        let mut loaded = Loaded::default();
        for d in 0..3u32 {
            let set: Vec<u64> = (0..500)
                .map(|i| u64::from(d) * 1_000_000 + i * 7919)
                .collect();
            loaded.insert_set(d, set.into());
        }
        loaded.add_parity(&[0, 1]);
        assert!(loaded.parity_rules_out((0, 1), (500, 500), 0.8, false));
        // Document 2 has no bitmap: its pairs are left to the exact check.
        assert!(!loaded.parity_rules_out((0, 2), (500, 500), 0.8, false));
        assert!(!loaded.parity_rules_out((2, 1), (500, 500), 0.8, false));
        assert_eq!(loaded.parity.len(), 2);
    }
}
