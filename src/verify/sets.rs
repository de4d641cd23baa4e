//! Exact verification of MinHash candidates on their shingle sets (Jaccard, or containment with
//! `--containment`), a batch of candidate components at a time ([`Batches`]): the sets of one
//! batch are loaded in parallel, its buckets are checked with [`connect`], and the sets are
//! dropped.
//!
//! A candidate the signatures rule out (the estimate prefilter, see
//! [`crate::config::banding::estimate_floor`]) is rejected without its sets; a document with no
//! plausible partner in any of its buckets is never loaded.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::ingest::worker::{DocWorker, Engine};
use crate::input::readahead::Begun;
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError, Messages, Progress};
use crate::pairs::{DocId, Pair, Score, UnionFind};
use crate::sketch::shingle::into_set;

use super::batches::{Batches, Set};
use super::connect::{connect_with, pair_key, SharedBefore, Verification};
use super::judge::Judge;
use super::order::in_pair_order;
use super::reload::Loaded;
use crate::config::MethodConfig;

/// Bytes of sets kept after their batch for the documents that joined a cluster, so that strict
/// clustering and the report need not derive them again from their files (on the 10k benchmark
/// corpus that was a fifth of a default scan's time).
pub const RETAIN_BYTES: u64 = 32 << 20;

/// Buckets of at least this many documents get their sets' parity bitmaps built
/// ([`super::parity`]).
const PARITY_BUCKET: usize = 32;

/// What exact verification reads from the rest of the scan.
pub struct SetVerifier<'a> {
    /// Every document's file, by document id.
    pub files: &'a [FileEntry],
    /// How sets are derived again from files.
    pub engine: &'a Engine,
    /// Decides every pair.
    pub judge: &'a Judge<'a>,
    /// Warnings and progress.
    pub msgs: &'a Messages,
    /// Strict clustering's split, run on each component a batch completes (see
    /// [`super::Known`]).
    pub rehearse: Option<&'a Rehearse<'a>>,
}

/// The rehearsal's view of documents, kept across batches.
#[derive(Default)]
struct Units {
    /// Each document's byte-identical copies (document holding the content, copy), for the
    /// components `rehearse` splits.
    copies: Vec<(u32, u32)>,
    /// A mark per document, clear between batches.
    seen: Vec<bool>,
}

/// Strict clustering's split of a component (its members in id order), asking its [`Check`]
/// for the verdicts it needs; true when the report will want the component's sets again.
pub type Rehearse<'a> = dyn Fn(&[DocId], &mut Check) -> bool + Sync + 'a;

/// A verdict on a pair of documents.
pub type Check<'c> = dyn FnMut(DocId, DocId) -> Option<Score> + 'c;

impl SetVerifier<'_> {
    /// Verifies every candidate of `tables`, joining passing pairs in `uf`. `kept` holds the
    /// sets kept from the first pass (taken as they are used). Files that cannot be read again,
    /// or changed since the first pass, are added to `errors`; their pairs fail.
    pub fn run(
        &self,
        kept: &mut [Option<Set>],
        tables: &[Buckets],
        uf: &mut UnionFind,
        errors: &mut Vec<InputError>,
        retained: &mut Loaded,
    ) -> Verification {
        let batches = Batches {
            files: self.files,
            shingle: self.engine.shingle,
            msgs: self.msgs,
        };
        // Documents found to need their sets. Batches hold disjoint components, so this is never
        // reset.
        let needed: Vec<AtomicBool> = (0..kept.len()).map(|_| AtomicBool::new(false)).collect();
        let mut budget = RETAIN_BYTES;
        let banding = self.band_tables(tables.len());
        let mut units = Units::default();
        if self.rehearse.is_some() {
            units.copies = (self.judge.canon.iter().enumerate())
                .filter(|&(d, &c)| c as usize != d)
                .map(|(d, &c)| (c, d as u32))
                .collect();
            units.copies.sort_unstable();
            units.seen = vec![false; kept.len()];
        }
        let shared = |a: u32, b: u32, t: usize| {
            let (sa, sb) = (self.judge.sig(a), self.judge.sig(b));
            // Values compared in a loop, not by a call to memcmp: a band is a few values.
            let agree = |r: usize, band: usize| {
                let (x, y) = (&sa[band * r..][..r], &sb[band * r..][..r]);
                x.iter().zip(y).all(|(p, q)| p == q)
            };
            banding.is_some_and(|r| (0..t).any(|band| agree(r, band)))
        };
        let shared_before: Option<&SharedBefore> = banding.map(|_| &shared as &SharedBefore);
        // --containment: its first tables are the bands of documents of one size class (keys
        // salted with the class), then come pairs of two classes.
        let same_class = match self.judge.method {
            MethodConfig::MinHash {
                banding,
                containment: Some(_),
                ..
            } => Some((banding.bands, banding.rows)),
            _ => None,
        };
        batches.run(kept, tables, |per_table, kept, bar| {
            let sets = self.load_sets(per_table, kept, &needed, errors, bar);
            let check = |lo, hi| self.judge.candidate(lo, hi, &sets).score;
            // --containment reports its clusters with the spanning pairs that taking the
            // candidate pairs in (lo, hi) order gives (see [`super::order`]).
            let v = if let Some((bands, rows)) = same_class {
                let mut across: Vec<(u32, u32)> = (per_table.iter().skip(bands).flatten())
                    .map(|b| (b[0], b[1]))
                    .collect();
                across.sort_unstable();
                let class = |d: u32| crate::candidates::containment::class(self.judge.size(d));
                // Two documents share a bucket when they are of one class and agree on a band
                // (a collision of two salted keys aside, a 2^-64 chance), or are a listed pair.
                let shares = |a: u32, b: u32| {
                    let (sa, sb) = (self.judge.sig(a), self.judge.sig(b));
                    let agree = |band: usize| {
                        let (x, y) = (&sa[band * rows..][..rows], &sb[band * rows..][..rows]);
                        // Two values to a band: a loop, not a call to memcmp.
                        x.iter().zip(y).all(|(p, q)| p == q)
                    };
                    (class(a) == class(b) && (0..bands).any(agree))
                        || across.binary_search(&(a, b)).is_ok()
                };
                in_pair_order(per_table, uf, shares, check)
            } else {
                connect_with(per_table, uf, shared_before, check)
            };
            // A batch holds whole candidate components, so its documents' clusters are final:
            // strict clustering's verdicts on them are made now, while their sets are loaded,
            // and the sets the report will read again are retained.
            let mut v = v;
            // Without a rehearsal, any clustered document's set may be asked for again.
            let mut wanted_later = None;
            if let Some(rehearse) = self.rehearse {
                let (verdicts, later) =
                    self.rehearsal(rehearse, per_table, uf, &mut units, &sets, &v.passing);
                v.rehearsed = verdicts;
                wanted_later = Some(later);
            }
            let later = |d: u32| {
                wanted_later
                    .as_ref()
                    .is_none_or(|w| w.binary_search(&d).is_ok())
            };
            retained.retain_sets(sets, |d| uf.set_size(d) > 1 && later(d), &mut budget);
            v
        })
    }

    /// Runs `rehearse` on each component of the batch's documents (with their byte-identical
    /// copies) and returns the verdicts it asked for that need sets, where both were loaded:
    /// those are the verdicts strict clustering will ask for, and its check's. A pair the batch
    /// `passing` holds is not checked again: its score is that check's, on the same sets. Also
    /// returns, in id order, the documents of the components whose sets the report will want
    /// again: only those are retained, where every clustered document's set was, up to
    /// [`RETAIN_BYTES`] on top of the next batches' sets (on a real corpus the heap peaked at
    /// 61 MB in verification for it, above the first pass's 55 MB; it now stays below).
    fn rehearsal(
        &self,
        rehearse: &Rehearse,
        per_table: &[Vec<&[u32]>],
        uf: &UnionFind,
        units: &mut Units,
        sets: &Loaded,
        passing: &[Pair],
    ) -> (Vec<(u64, Option<Score>)>, Vec<u32>) {
        let judge = self.judge;
        // A two-document component's split asks for the one pair verification just passed:
        // checking it again was a third of the exact Jaccard computed on a real corpus.
        let canon_key = |a: u32, b: u32| pair_key(judge.canon[a as usize], judge.canon[b as usize]);
        let mut passed: Vec<(u64, Score)> = (passing.iter())
            .map(|p| {
                (
                    canon_key(p.lo, p.hi),
                    Score {
                        similarity: p.similarity,
                        distance: p.distance,
                    },
                )
            })
            .collect();
        passed.sort_unstable_by_key(|p| p.0);
        // Each unit once, marked as seen rather than sorted out of the buckets' lists (a unit
        // is listed once per table it shares a bucket in: sorting every listing was 0.6 % of a
        // default scan's instructions on the 10k corpus). A unit alone in its component, with
        // its copies at most, is left out: their split asks for no verdict between two contents.
        let bucketed = || per_table.iter().flatten().flat_map(|b| b.iter().copied());
        let mut components: Vec<(u32, u32)> = Vec::new();
        for d in bucketed() {
            if !std::mem::replace(&mut units.seen[d as usize], true) {
                let root = uf.root(d);
                if uf.root_size(root) > 1 {
                    components.push((root, d));
                }
            }
        }
        for d in bucketed() {
            units.seen[d as usize] = false;
        }
        components.sort_unstable();
        let copies = &units.copies;
        let mut verdicts = Vec::new();
        let mut later = Vec::new();
        for component in components.chunk_by(|a, b| a.0 == b.0) {
            let mut members: Vec<u32> = Vec::new();
            for &(_, unit) in component {
                let from = copies.partition_point(|c| c.0 < unit);
                let of = copies[from..].iter().take_while(|c| c.0 == unit);
                members.extend(std::iter::once(unit).chain(of.map(|c| c.1)));
            }
            if members.len() < 2 {
                continue;
            }
            members.sort_unstable();
            let wanted = rehearse(&members, &mut |a, b| {
                let (ca, cb) = (judge.canon[a as usize], judge.canon[b as usize]);
                let known = (ca != cb)
                    .then(|| passed.binary_search_by_key(&pair_key(ca, cb), |p| p.0).ok())
                    .flatten();
                let verdict = match known {
                    Some(i) => Some(passed[i].1),
                    None => judge.check(a, b, sets),
                };
                let loaded = |c: u32| sets.get(c).set.is_some();
                if ca != cb && loaded(ca) && loaded(cb) {
                    verdicts.push((pair_key(ca, cb), verdict));
                }
                verdict
            });
            if wanted {
                later.extend(component.iter().map(|&(_, unit)| unit));
            }
        }
        later.sort_unstable();
        (verdicts, later)
    }

    /// The rows of a band when the `tables` are every band's, in band order, and complete (not
    /// narrowed to the buckets of new documents, as against an index): then two documents that
    /// share a band's values shared that table's bucket.
    fn band_tables(&self, tables: usize) -> Option<usize> {
        match self.judge.method {
            MethodConfig::MinHash {
                banding,
                containment: None,
                ..
            } if self.judge.first_new == 0 && banding.bands == tables => Some(banding.rows),
            _ => None,
        }
    }

    /// The batch's documents that have a plausible partner in one of their buckets, in id order.
    fn needed(&self, per_table: &[Vec<&[u32]>], needed: &[AtomicBool]) -> Vec<u32> {
        // A document is needed once one pair of it passes in one bucket of any table, so a
        // pair whose documents are both needed already is not tested again (a near-duplicate
        // pair shares about five of 19 bands). Which documents end up needed does not depend
        // on the order buckets are taken in, so they are taken in parallel.
        let mark = |d: u32| !needed[d as usize].swap(true, Ordering::Relaxed);
        let is_needed = |d: u32| needed[d as usize].load(Ordering::Relaxed);
        let mut fresh: Vec<u32> = per_table
            .par_iter()
            .flat_map(|table| table.par_iter())
            .flat_map_iter(|&bucket| {
                let mut fresh = Vec::new();
                // A large bucket (many near-identical documents, nearly all needed) loads every
                // member rather than testing m² pairs.
                if bucket.len() > 64 {
                    fresh.extend(bucket.iter().copied().filter(|&d| mark(d)));
                    return fresh;
                }
                for (j, &a) in bucket.iter().enumerate() {
                    for &b in &bucket[j + 1..] {
                        if is_needed(a) && is_needed(b) {
                            continue;
                        }
                        if self.judge.worth_loading(a.min(b), a.max(b)) {
                            fresh.extend([a, b].into_iter().filter(|&d| mark(d)));
                        }
                    }
                }
                fresh
            })
            .collect();
        // Each document once; in id order, so that errors are too.
        fresh.sort_unstable();
        fresh
    }

    /// The sets of the batch's needed documents: kept ones sorted, the others derived again.
    fn load_sets(
        &self,
        per_table: &[Vec<&[u32]>],
        kept: &mut [Option<Set>],
        needed: &[AtomicBool],
        errors: &mut Vec<InputError>,
        bar: &Progress,
    ) -> Loaded {
        let fresh = self.needed(per_table, needed);
        let docs = self.judge.docs;
        let taken: Vec<(u32, u128, Option<Set>)> = fresh
            .iter()
            .map(|&d| (d, docs[d as usize].hash, kept[d as usize].take()))
            .collect();
        // Only sets derived again from their file are read from its path: not kept ones, nor
        // dump records (read from the spill) or indexed documents.
        let indexed = self.engine.indexed.as_ref().map_or(0, |ix| ix.count());
        let from_file: Vec<bool> = taken
            .iter()
            .map(|(d, _, set)| {
                set.is_none() && *d >= indexed && self.files[*d as usize].record.is_none()
            })
            .collect();
        let path_of = |i: usize| from_file[i].then(|| self.files[fresh[i] as usize].path.as_path());
        let objects = (0..fresh.len()).any(|i| path_of(i).is_some_and(crate::store::is_url));
        let _ahead = crate::input::readahead::fetch_ahead(&self.engine.budget, objects);
        let begun = Begun::new(fresh.len(), objects);
        let path_of = |i: usize| path_of(i).filter(|_| !begun.is(i));
        let loaded: Vec<(u32, Result<Set, String>)> = taken
            .into_par_iter()
            .enumerate()
            .map_init(
                || DocWorker::new(self.engine),
                |w, (i, (d, hash, kept))| {
                    // Called for kept sets too, so that the worker sees its run in order.
                    w.read_ahead((fresh.as_ptr() as usize, i, fresh.len()), path_of);
                    begun.mark(i);
                    let r = match kept {
                        Some(raw) => {
                            let mut v = raw.into_vec();
                            into_set(&mut v);
                            Ok(v.into_boxed_slice())
                        }
                        None => w.load_set(d, &self.files[d as usize], hash),
                    };
                    bar.inc(1);
                    (d, r)
                },
            )
            .collect();
        let mut sets = Loaded::with_capacity(loaded.len());
        for (d, r) in loaded {
            match r {
                Ok(set) => sets.insert_set(d, set),
                Err(reason) => {
                    let file = &self.files[d as usize];
                    self.msgs
                        .warn(&format!("{}: {reason}", display_path(&file.path)));
                    errors.push(file.error(None, reason));
                }
            }
        }
        // A bucket this large may hold a family whose pairs all fail (m² of them): the bitmaps
        // rule most of those out in constant time each. Smaller buckets are not worth building
        // them for, nor are the sets of documents in none: a bitmap is used only when both of
        // a pair have one, and a batch is a whole candidate component, which with character
        // shingles can be most of the corpus (6,267 of the 10k benchmark corpus's documents,
        // for a largest bucket of 44: their bitmaps were a twentieth of such a scan's time).
        let mut large: Vec<u32> = (per_table.iter().flatten())
            .filter(|b| b.len() >= PARITY_BUCKET)
            .flat_map(|b| b.iter().copied())
            .collect();
        if !large.is_empty() {
            large.sort_unstable();
            large.dedup();
            sets.add_parity(&large);
        }
        sets
    }
}
