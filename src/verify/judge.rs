//! The judge: the one place that decides whether two documents are duplicates and how similar
//! they are, under every method (exact Jaccard, containment, edit similarity, the signature
//! estimate, SimHash distance). Verification, strict clusters, the representative's
//! similarities and `--pairs` evidence all ask it, so they agree.
//!
//! Byte-identical documents are sketched once: `canon[d]` is the document holding the
//! signature, fingerprint and material (set, tokens) of `d`'s content.

use crate::candidates::containment::{self, containment_from_jaccard};
use crate::config::banding::{estimate_floor, Banding};
use crate::config::{MethodConfig, Verify};
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::DocResult;
use crate::pairs::{DocId, Score};
use crate::sketch::bottomk::Sketches;
use crate::sketch::minhash::estimate;
use crate::sketch::simhash;

use super::measures::{
    containment_at_least, containment_verified, edit_check, jaccard, jaccard_at_least,
};
use super::reload::Loaded;

/// The verdict on a candidate pair during verification.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// The score, when the pair passes.
    pub score: Option<Score>,
    /// `--verify edit`: the pair was judged by Jaccard because a document is over the token cap.
    pub fallback: bool,
}

/// Read-only view of everything a decision needs.
pub struct Judge<'a> {
    /// Method and its thresholds.
    pub method: &'a MethodConfig,
    /// Signature values per document.
    pub lanes: usize,
    /// All signatures, `lanes` per document.
    pub sigs: &'a [u32],
    /// Per-document results (fingerprint, distinct shingles).
    pub docs: &'a [DocResult],
    /// The document that holds each document's sketches.
    pub canon: &'a [u32],
    /// Bottom-k sketches (`--sketch bottom-k`; empty otherwise).
    pub bottom: &'a Sketches,
    /// Documents below this id come from the index scanned against: a pair of two of them was
    /// judged when the later was new, and is never a candidate again.
    pub first_new: u32,
    /// The estimate below which MinHash's prefilter rules a pair out ([`prefilter_floor`]).
    pub floor: f64,
}

/// The estimate floor of [`Judge::plausible`] for `method` at `lanes` signature values:
/// [`estimate_floor`] of the report threshold, resolved once (a logarithm and a root that
/// were computed for every candidate pair).
pub fn prefilter_floor(method: &MethodConfig, lanes: usize) -> f64 {
    match method {
        MethodConfig::MinHash {
            report_threshold, ..
        } => estimate_floor(*report_threshold, lanes),
        MethodConfig::SimHash { .. } => f64::NEG_INFINITY,
    }
}

impl<'a> Judge<'a> {
    /// The judge of `corpus`'s pairs, `canon` the document holding each one's sketches.
    pub fn new(method: &'a MethodConfig, corpus: &'a Corpus, canon: &'a [u32]) -> Judge<'a> {
        Judge {
            method,
            lanes: corpus.lanes,
            sigs: &corpus.sigs,
            docs: &corpus.docs,
            canon,
            bottom: &corpus.bottom,
            first_new: corpus.indexed(),
            floor: prefilter_floor(method, corpus.lanes),
        }
    }

    /// MinHash signature of `d`'s content.
    pub fn sig(&self, d: u32) -> &[u32] {
        let c = self.canon[d as usize] as usize;
        &self.sigs[c * self.lanes..(c + 1) * self.lanes]
    }

    /// SimHash fingerprint of `d`'s content.
    pub fn fingerprint(&self, d: u32) -> u64 {
        self.docs[self.canon[d as usize] as usize].fingerprint
    }

    /// True when the two documents are byte-identical.
    pub fn same_content(&self, a: DocId, b: DocId) -> bool {
        self.canon[a as usize] == self.canon[b as usize]
    }

    /// The estimate of the pair's Jaccard similarity: from the bottom-k sketches when kept,
    /// else from the MinHash signatures.
    pub fn estimate(&self, a: u32, b: u32) -> f64 {
        if self.bottom.is_on() {
            let c = |d: u32| self.canon[d as usize];
            return self.bottom.estimate(c(a), c(b));
        }
        estimate(self.sig(a), self.sig(b))
    }

    /// The verification, for MinHash.
    pub fn verify(&self) -> Option<Verify> {
        self.method.verify()
    }

    /// Distinct shingles of `d`'s content (counted only for `--containment`).
    pub fn size(&self, d: u32) -> u64 {
        self.docs[self.canon[d as usize] as usize].shingles
    }

    /// True with `--containment`: similarities are containments of the smaller document.
    pub fn is_containment(&self) -> bool {
        self.method.containment().is_some()
    }

    /// True under `--method simhash`.
    pub fn is_simhash(&self) -> bool {
        self.method.is_simhash()
    }

    /// The similarity of two sorted shingle sets: Jaccard, or the containment of the smaller.
    pub fn set_similarity(&self, a: &[u64], b: &[u64]) -> f64 {
        if self.is_containment() {
            containment_at_least(a, b, 0.0).unwrap_or(0.0)
        } else {
            jaccard(a, b)
        }
    }

    /// The signatures' estimate of the pair's similarity (containment: from the Jaccard estimate
    /// and the exact set sizes).
    pub fn estimated_similarity(&self, a: u32, b: u32) -> f64 {
        let e = self.estimate(a, b);
        if self.is_containment() {
            containment_from_jaccard(e, self.size(a), self.size(b))
        } else {
            e
        }
    }

    /// True when the judge needs the documents' shingle sets ([`Judge::check`]'s `loaded`).
    pub fn needs_sets(&self) -> bool {
        self.verify() == Some(Verify::Exact)
    }

    /// True when the judge needs the documents' token sequences.
    pub fn needs_tokens(&self) -> bool {
        self.verify() == Some(Verify::Edit)
    }

    /// False when the signatures rule the pair out of exact verification (the prefilter).
    pub fn plausible(&self, a: DocId, b: DocId) -> bool {
        match self.method {
            MethodConfig::MinHash {
                report_threshold,
                containment: Some(_),
                ..
            } => containment::plausible(
                self.estimate(a, b),
                self.size(a),
                self.size(b),
                self.lanes,
                *report_threshold,
            ),
            MethodConfig::MinHash { .. } => self.estimate(a, b) >= self.floor,
            MethodConfig::SimHash { .. } => true,
        }
    }

    /// True for a `--containment` candidate that passed the estimate prefilter when it was
    /// gathered: a pair of documents of different size classes. Documents of one class come in
    /// the buckets of their bands (see [`crate::candidates::containment`]), unfiltered.
    pub fn prefiltered(&self, a: DocId, b: DocId) -> bool {
        self.is_containment()
            && containment::class(self.size(a)) != containment::class(self.size(b))
    }

    /// Whether verification should load the material of candidate pair `lo < hi`: not for a
    /// pair of two indexed documents, nor one the signatures rule out.
    pub fn worth_loading(&self, lo: DocId, hi: DocId) -> bool {
        hi >= self.first_new && (self.prefiltered(lo, hi) || self.plausible(lo, hi))
    }

    /// The verification's verdict on candidate pair `lo < hi`. As [`Judge::check`], except
    /// that a pair of two indexed documents never passes, `--containment` candidates of two
    /// size classes are not prefiltered again ([`Judge::prefiltered`]) and any may be turned
    /// away on a sample of the smaller set ([`containment_verified`]), and an edit-verified
    /// pair says whether it fell back to Jaccard.
    pub fn candidate(&self, lo: DocId, hi: DocId, loaded: &Loaded) -> Verdict {
        let no = Verdict {
            score: None,
            fallback: false,
        };
        if hi < self.first_new {
            return no;
        }
        match self.method {
            MethodConfig::MinHash {
                report_threshold,
                containment: Some(_),
                ..
            } => {
                // A pair of one size class is checked here as the gathering checks the others,
                // so the pairs that can pass are the same whichever way a pair came.
                if !self.prefiltered(lo, hi) && !self.plausible(lo, hi) {
                    return no;
                }
                let material = |d: u32| loaded.get(self.canon[d as usize]).set;
                let (Some(a), Some(b)) = (material(lo), material(hi)) else {
                    return no;
                };
                let canon = (self.canon[lo as usize], self.canon[hi as usize]);
                if loaded.parity_rules_out(canon, (a.len(), b.len()), *report_threshold, true) {
                    return no;
                }
                Verdict {
                    score: containment_verified(a, b, *report_threshold).map(Score::of),
                    fallback: false,
                }
            }
            MethodConfig::MinHash {
                report_threshold,
                verify: Verify::Edit,
                ..
            } => {
                let material = |d: u32| loaded.get(self.canon[d as usize]);
                let (score, fallback) = edit_check(material(lo), material(hi), *report_threshold);
                Verdict {
                    score: score.map(Score::of),
                    fallback,
                }
            }
            _ => Verdict {
                score: self.check(lo, hi, loaded),
                fallback: false,
            },
        }
    }

    /// True when [`Judge::candidate`]'s verdict on a pair is [`Judge::check`]'s and worth
    /// remembering: exact Jaccard (under `--containment` candidates of two size classes skip the
    /// prefilter, and the other verifications cost little or fall back in an order of their own).
    pub fn candidate_is_check(&self) -> bool {
        self.needs_sets() && !self.is_containment()
    }

    /// The verdict on any pair: its score when it is reported as duplicates. `loaded` holds the
    /// documents' shingle sets when [`Judge::needs_sets`], their token sequences when
    /// [`Judge::needs_tokens`] (keyed by `canon`).
    pub fn check(&self, a: DocId, b: DocId, loaded: &Loaded) -> Option<Score> {
        if self.same_content(a, b) {
            return Some(Score {
                similarity: 1.0,
                distance: self.is_simhash().then_some(0),
            });
        }
        let material = |d: u32| loaded.get(self.canon[d as usize]);
        match self.method {
            MethodConfig::MinHash {
                report_threshold,
                verify: Verify::Exact,
                ..
            } => {
                if !self.plausible(a, b) {
                    return None;
                }
                let (sa, sb) = (material(a).set?, material(b).set?);
                if self.is_containment() {
                    return containment_at_least(sa, sb, *report_threshold).map(Score::of);
                }
                let (ca, cb) = (self.canon[a as usize], self.canon[b as usize]);
                if loaded.parity_rules_out((ca, cb), (sa.len(), sb.len()), *report_threshold, false)
                {
                    return None;
                }
                jaccard_at_least(sa, sb, *report_threshold).map(Score::of)
            }
            MethodConfig::MinHash {
                report_threshold,
                verify: Verify::Edit,
                ..
            } => edit_check(material(a), material(b), *report_threshold)
                .0
                .map(Score::of),
            MethodConfig::MinHash {
                report_threshold,
                verify: Verify::Estimate,
                ..
            } => {
                let e = self.estimate(a, b);
                (e >= *report_threshold).then_some(Score::of(e))
            }
            MethodConfig::SimHash {
                report_distance, ..
            } => {
                let d = simhash::distance(self.fingerprint(a), self.fingerprint(b));
                (d <= *report_distance).then_some(Score {
                    similarity: simhash_similarity(d),
                    distance: Some(d),
                })
            }
        }
    }

    /// The SimHash distance of a pair (None under MinHash).
    pub fn distance(&self, a: u32, b: u32) -> Option<u32> {
        self.is_simhash()
            .then(|| simhash::distance(self.fingerprint(a), self.fingerprint(b)))
    }

    /// The first band (MinHash) or piece (SimHash) in which the pair collides: the table that
    /// made it a candidate. None when no table does (only byte-identical copies, which are
    /// grouped by content hash, can be reported that way).
    pub fn first_table(&self, a: u32, b: u32) -> Option<usize> {
        match self.method {
            MethodConfig::MinHash {
                containment: Some(scheme),
                ..
            } => scheme.first_band((self.size(a), self.size(b)), (self.sig(a), self.sig(b))),
            MethodConfig::MinHash {
                banding: Banding { bands, rows },
                ..
            } => {
                let (x, y) = (self.sig(a), self.sig(b));
                (0..*bands).find(|&band| {
                    let r = band * rows..(band + 1) * rows;
                    x[r.clone()] == y[r]
                })
            }
            MethodConfig::SimHash { pieces, .. } => {
                let (x, y) = (self.fingerprint(a), self.fingerprint(b));
                (pieces.iter()).position(|&p| simhash::piece_key(p, x) == simhash::piece_key(p, y))
            }
        }
    }
}

/// SimHash similarity reported for a pair: the fraction of equal fingerprint bits.
pub fn simhash_similarity(distance: u32) -> f64 {
    1.0 - f64::from(distance) / 64.0
}

/// The cosine similarity a SimHash distance implies: bits differ with probability θ/π for
/// vectors at angle θ (Charikar 2002), so d/64 ≈ θ/π and cos θ ≈ cos(π·d/64).
pub fn simhash_cosine(distance: u32) -> f64 {
    (std::f64::consts::PI * f64::from(distance) / 64.0).cos()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::scan_config;
    use crate::ingest::worker::Outcome;

    fn doc(fingerprint: u64, shingles: u64) -> DocResult {
        DocResult {
            outcome: Outcome::Sketched,
            bytes: 100,
            hash: u128::from(fingerprint),
            fingerprint,
            set: None,
            shingles,
            links: 0,
            disk: 0,
            json_lines: false,
        }
    }

    /// Four documents with 128-value signatures: 0 and 1 agree on 96 of them, 0 and 2 on none;
    /// 3 is a byte-identical copy of 0 (its canon is 0).
    struct Fixture {
        method: MethodConfig,
        sigs: Vec<u32>,
        docs: Vec<DocResult>,
        canon: Vec<u32>,
        bottom: Sketches,
    }

    fn fixture(args: &[&str]) -> Fixture {
        let mut sigs: Vec<u32> = (0..128).collect();
        sigs.extend((0..128).map(|v| if v < 96 { v } else { v + 1000 }));
        sigs.extend(2000..2128);
        sigs.extend(0..128);
        Fixture {
            method: scan_config(args).unwrap().method,
            sigs,
            docs: vec![
                doc(0b1111, 10),
                doc(0b0111, 40),
                doc(!0, 10),
                doc(0b1111, 10),
            ],
            canon: vec![0, 1, 2, 0],
            bottom: Sketches::default(),
        }
    }

    fn judge(f: &Fixture, first_new: u32) -> Judge<'_> {
        Judge {
            method: &f.method,
            lanes: 128,
            sigs: &f.sigs,
            docs: &f.docs,
            canon: &f.canon,
            bottom: &f.bottom,
            first_new,
            floor: prefilter_floor(&f.method, 128),
        }
    }

    fn sets(entries: &[(u32, &[u64])]) -> Loaded {
        let mut l = Loaded::default();
        for &(d, s) in entries {
            l.insert_set(d, s.into());
        }
        l
    }

    #[test]
    fn exact_jaccard_decides_on_the_sets_after_the_estimate_prefilter() {
        let f = fixture(&[]);
        let j = judge(&f, 0);
        assert_eq!(j.estimate(0, 1), 0.75);
        // 4 of 5 shared: J = 0.8, at the threshold.
        let s = sets(&[
            (0, &[1, 2, 3, 4]),
            (1, &[1, 2, 3, 4, 5]),
            (2, &[1, 2, 3, 4]),
        ]);
        assert_eq!(j.check(0, 1, &s), Some(Score::of(0.8)));
        assert!(j.plausible(0, 1));
        // 0 and 2 have identical sets but signatures that share nothing: the prefilter (an
        // estimate of 0, below 0.8 − √(ln 10⁶ / 256) = 0.57) turns the pair away unread.
        assert!(!j.plausible(0, 2));
        assert_eq!(j.check(0, 2, &s), None);
        // Without the sets loaded, nothing passes.
        assert_eq!(j.check(0, 1, &Loaded::default()), None);
        // A byte-identical copy needs no material, and reads its canon's.
        assert_eq!(j.check(0, 3, &Loaded::default()), Some(Score::of(1.0)));
        assert_eq!(j.check(3, 1, &s), Some(Score::of(0.8)));
        assert!(j.same_content(0, 3) && !j.same_content(0, 1));
        assert_eq!(j.first_table(0, 1), Some(0));
        assert_eq!(j.first_table(0, 2), None);
    }

    #[test]
    fn a_candidate_of_two_indexed_documents_never_passes() {
        let f = fixture(&[]);
        let s = sets(&[(0, &[1, 2, 3, 4]), (1, &[1, 2, 3, 4, 5])]);
        assert_eq!(judge(&f, 0).candidate(0, 1, &s).score, Some(Score::of(0.8)));
        let indexed = judge(&f, 2);
        assert_eq!(indexed.candidate(0, 1, &s).score, None);
        assert!(!indexed.worth_loading(0, 1));
        // The rule is verification's: asked directly, the judge still knows the pair.
        assert_eq!(indexed.check(0, 1, &s), Some(Score::of(0.8)));
    }

    #[test]
    fn the_estimate_decides_under_verify_estimate() {
        let f = fixture(&["--verify", "estimate"]);
        let j = judge(&f, 0);
        assert!(!j.needs_sets() && !j.needs_tokens());
        assert_eq!(j.check(0, 1, &Loaded::default()), None, "0.75 < 0.8");
        let f = fixture(&["--verify", "estimate", "-t", "0.7"]);
        let j = judge(&f, 0);
        assert_eq!(j.check(0, 1, &Loaded::default()), Some(Score::of(0.75)));
    }

    #[test]
    fn simhash_decides_by_distance_and_reports_it() {
        let f = fixture(&["-m", "simhash", "--max-distance", "1"]);
        let j = judge(&f, 0);
        assert!(j.is_simhash());
        assert_eq!(j.distance(0, 1), Some(1));
        let one = Score {
            similarity: 1.0 - 1.0 / 64.0,
            distance: Some(1),
        };
        assert_eq!(j.check(0, 1, &Loaded::default()), Some(one));
        assert_eq!(j.check(0, 2, &Loaded::default()), None, "distance 60");
        assert_eq!(
            j.check(0, 3, &Loaded::default()).unwrap().distance,
            Some(0),
            "a copy is at distance 0"
        );
    }

    #[test]
    fn containment_judges_the_smaller_set_inside_the_larger() {
        let f = fixture(&["--containment", "-t", "0.75"]);
        let j = judge(&f, 0);
        assert!(j.is_containment());
        let s = sets(&[(0, &[1, 2, 3, 4]), (1, &[1, 2, 3, 9, 10, 11, 12, 13])]);
        assert_eq!(
            j.set_similarity(&[1, 2, 3, 4], &[1, 2, 3, 9, 10, 11, 12, 13]),
            0.75
        );
        // Candidates of two size classes (10 and 40 shingles) skip the prefilter: they passed
        // it when gathered. Those of one class (0 and 2, whose signatures share nothing) do not.
        assert!(j.prefiltered(1, 2) && j.worth_loading(1, 2));
        assert!(!j.prefiltered(0, 2) && !j.worth_loading(0, 2));
        assert_eq!(j.candidate(0, 1, &s).score, Some(Score::of(0.75)));
        let same = sets(&[(0, &[1, 2, 3, 4]), (2, &[1, 2, 3, 4])]);
        assert_eq!(j.candidate(0, 2, &same).score, None);
        // The estimate of a contained pair, from the Jaccard estimate and the set sizes.
        assert!(j.estimated_similarity(0, 1) > j.estimate(0, 1));
    }

    #[test]
    fn edit_verification_reads_token_sequences() {
        let f = fixture(&["--verify", "edit"]);
        let j = judge(&f, 0);
        assert!(j.needs_tokens() && !j.needs_sets());
        let mut l = Loaded::default();
        l.insert_tokens(0, (0..100).collect());
        let mut edited: Vec<u64> = (0..100).collect();
        edited[50] = 1000;
        l.insert_tokens(1, edited.into());
        let v = j.candidate(0, 1, &l);
        assert_eq!(v.score, Some(Score::of(0.99)));
        assert!(!v.fallback);
    }
}
