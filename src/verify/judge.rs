//! The judge: the one place that decides whether two documents are duplicates and how similar
//! they are, under every method (exact Jaccard, containment, edit similarity, the signature
//! estimate, SimHash distance). Verification, strict clusters, the representative's
//! similarities and `--pairs` evidence all ask it, so they agree.
//!
//! Byte-identical documents are sketched once: `canon[d]` is the document holding the
//! signature, fingerprint and material (set, tokens) of `d`'s content.

use crate::candidates::containment::{self, containment_from_jaccard, Scheme};
use crate::candidates::lsh::{estimate_floor, Banding};
use crate::config::{MethodConfig, Verify};
use crate::ingest::worker::DocResult;
use crate::pairs::Score;
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
}

impl Judge<'_> {
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
    pub fn same_content(&self, a: u32, b: u32) -> bool {
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
        match self.method {
            MethodConfig::MinHash { verify, .. } => Some(*verify),
            MethodConfig::SimHash { .. } => None,
        }
    }

    /// Distinct shingles of `d`'s content (counted only for `--containment`).
    pub fn size(&self, d: u32) -> u64 {
        self.docs[self.canon[d as usize] as usize].shingles
    }

    /// True with `--containment`: similarities are containments of the smaller document.
    pub fn is_containment(&self) -> bool {
        matches!(
            self.method,
            MethodConfig::MinHash {
                containment: true,
                ..
            }
        )
    }

    /// True under `--method simhash`.
    pub fn is_simhash(&self) -> bool {
        matches!(self.method, MethodConfig::SimHash { .. })
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
    pub fn plausible(&self, a: u32, b: u32) -> bool {
        match self.method {
            MethodConfig::MinHash {
                report_threshold,
                containment: true,
                ..
            } => containment::plausible(
                self.estimate(a, b),
                self.size(a),
                self.size(b),
                self.lanes,
                *report_threshold,
            ),
            MethodConfig::MinHash {
                report_threshold, ..
            } => self.estimate(a, b) >= estimate_floor(*report_threshold, self.lanes),
            MethodConfig::SimHash { .. } => true,
        }
    }

    /// Whether verification should load the material of candidate pair `lo < hi`: not for a
    /// pair of two indexed documents, nor one the signatures rule out. (`--containment`
    /// candidates passed their prefilter when they were gathered.)
    pub fn worth_loading(&self, lo: u32, hi: u32) -> bool {
        hi >= self.first_new && (self.is_containment() || self.plausible(lo, hi))
    }

    /// The verification's verdict on candidate pair `lo < hi`. As [`Judge::check`], except
    /// that a pair of two indexed documents never passes, `--containment` candidates are not
    /// prefiltered again and may be turned away on a sample of the smaller set
    /// ([`containment_verified`]), and an edit-verified pair says whether it fell back to
    /// Jaccard.
    pub fn candidate(&self, lo: u32, hi: u32, loaded: &Loaded) -> Verdict {
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
                containment: true,
                ..
            } => {
                let material = |d: u32| loaded.get(self.canon[d as usize]).set;
                let (Some(a), Some(b)) = (material(lo), material(hi)) else {
                    return no;
                };
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

    /// The verdict on any pair: its score when it is reported as duplicates. `loaded` holds the
    /// documents' shingle sets when [`Judge::needs_sets`], their token sequences when
    /// [`Judge::needs_tokens`] (keyed by `canon`).
    pub fn check(&self, a: u32, b: u32, loaded: &Loaded) -> Option<Score> {
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
                let measure = if self.is_containment() {
                    containment_at_least
                } else {
                    jaccard_at_least
                };
                measure(sa, sb, *report_threshold).map(Score::of)
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
                containment: true,
                threshold,
                ..
            } => Scheme::new(*threshold, self.lanes)
                .first_band((self.size(a), self.size(b)), (self.sig(a), self.sig(b))),
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
            MethodConfig::SimHash { max_distance, .. } => {
                let (x, y) = (self.fingerprint(a), self.fingerprint(b));
                simhash::pieces(*max_distance)
                    .into_iter()
                    .position(|p| simhash::piece_key(p, x) == simhash::piece_key(p, y))
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
