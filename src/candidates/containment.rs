//! Containment candidates (`--containment`): documents mostly contained in a larger one, found
//! by banding per pair of size classes (after LSH Ensemble, Zhu et al., VLDB 2016).
//!
//! The containment of A in B is C = |A∩B| / |A|, A the document with fewer distinct shingles.
//! Jaccard banding at the threshold misses excerpts: an excerpt of 30 % of a document has
//! C = 1 but J ≈ 0.3. With q = |B| / |A| ≥ 1, J = C / (1 + q − C), so a pair with C ≥ t has
//! J ≥ t / (1 + q − t): the lower Jaccard a pair can have grows with the size ratio.
//!
//! So documents are put in geometric size classes, class c holding the sets of 2^c to
//! 2^(c+1) − 1 distinct shingles, and each class is banded against itself and the
//! [`MAX_OFFSET`] classes above it. For classes d apart, q < 2^(d+1); capped at the documented
//! range [`MAX_RATIO`], that gives the lowest Jaccard J*_d of a pair at the threshold, and
//! offset d takes the longest bands (r rows, ⌊K/r⌋ bands) for which such a pair is a candidate
//! with probability at least [`TARGET_RECALL`] (or r = 1 when none is). A pair with q ≤
//! [`MAX_RATIO`] has classes at most [`MAX_OFFSET`] apart (2^(d−1) < q), so
//! [`Scheme::recall`], the least of the offsets' candidate probabilities at J*_d, bounds its
//! chance of being a candidate from below.
//!
//! There is one table per (offset, band): a document enters table (d, band) once for the class
//! pair (c, c + d) it is the lower member of and once for (c − d, c), the key salted with the
//! lower class, so only documents of the same class pair share a bucket, and a bucket's
//! candidates are the pairs across its two classes (two documents of one class are offset 0's
//! to judge). A pair agrees on many tables, so [`candidates`] gathers each document's partners
//! over all of them, each distinct pair once, and applies the estimate prefilter then. Exact
//! verification takes the plausible pairs as two-document buckets and computes C on the real
//! shingle sets, batch by batch, as for Jaccard.

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::candidates::lsh::{band_key, estimate_floor, Banding};
use crate::sketch::minhash::{estimate, mix64};

/// The size ratio |B| / |A| up to which the recall bound holds: an excerpt down to 10 % of its
/// source.
pub const MAX_RATIO: f64 = 10.0;

/// How many size classes apart two documents may be and still be banded together: the largest
/// d with 2^(d−1) < [`MAX_RATIO`]. Documents further apart (q > 2^(d+1) = 32) are never
/// candidates.
pub const MAX_OFFSET: u32 = 4;

/// The least chance the chosen bands give a pair at the threshold (within [`MAX_RATIO`]) of
/// becoming a candidate, when K allows it.
pub const TARGET_RECALL: f64 = 0.999;

/// The size class of a set of `size` distinct shingles: ⌊log₂ size⌋.
pub fn class(size: u64) -> u32 {
    63 - size.max(1).leading_zeros()
}

/// The lowest Jaccard similarity of a pair with containment `t` and size ratio `q` ≥ 1.
pub fn jaccard_floor(t: f64, q: f64) -> f64 {
    t / (1.0 + q - t)
}

/// Containment of the smaller set in the larger implied by Jaccard `j` and the two sizes
/// (|A∩B| = j·(|A| + |B|) / (1 + j)), at most 1.
pub fn containment_from_jaccard(j: f64, a: u64, b: u64) -> f64 {
    let small = a.min(b).max(1) as f64;
    (j * (a + b) as f64 / ((1.0 + j) * small)).min(1.0)
}

/// The banding of each class offset for a threshold and signature length.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheme {
    /// Containment threshold t.
    pub threshold: f64,
    /// Banding for classes d apart, d = 0 ..= [`MAX_OFFSET`].
    pub offsets: Vec<Banding>,
}

impl Scheme {
    /// The scheme for containment threshold `t` and `k` signature values.
    pub fn new(t: f64, k: usize) -> Scheme {
        let offsets = (0..=MAX_OFFSET)
            .map(|d| {
                let j = Self::worst_jaccard(t, d);
                (1..=k.max(1))
                    .rev()
                    .map(|rows| Banding {
                        bands: k / rows,
                        rows,
                    })
                    .find(|b| b.candidate_probability(j) >= TARGET_RECALL)
                    .unwrap_or(Banding {
                        bands: k.max(1),
                        rows: 1,
                    })
            })
            .collect();
        Scheme {
            threshold: t,
            offsets,
        }
    }

    /// J*_d: the lowest Jaccard of a pair at the threshold whose classes are `d` apart and whose
    /// size ratio is within [`MAX_RATIO`] (q < 2^(d+1)).
    pub fn worst_jaccard(t: f64, d: u32) -> f64 {
        jaccard_floor(t, f64::from(1u32 << (d + 1)).min(MAX_RATIO))
    }

    /// The least candidate probability of a pair at the threshold with a size ratio up to
    /// [`MAX_RATIO`]: the recall bound of the candidates.
    pub fn recall(&self) -> f64 {
        self.offsets
            .iter()
            .zip(0..)
            .map(|(b, d)| b.candidate_probability(Self::worst_jaccard(self.threshold, d)))
            .fold(1.0, f64::min)
    }

    /// The chance that a pair at the threshold with size ratio `q` becomes a candidate, given
    /// how many classes apart it is (0 beyond [`MAX_OFFSET`]).
    pub fn candidate_probability(&self, q: f64, offset: u32) -> f64 {
        self.offsets.get(offset as usize).map_or(0.0, |b| {
            b.candidate_probability(jaccard_floor(self.threshold, q))
        })
    }

    /// The scan's note on stderr: the banding and the recall it gives.
    pub fn describe(&self) -> String {
        let bandings: Vec<String> = self
            .offsets
            .iter()
            .map(|b| format!("{}×{}", b.bands, b.rows))
            .collect();
        format!(
            "threshold {} (containment): sets in size classes 2^c to 2^(c+1), each banded against \
             the {MAX_OFFSET} classes above it (bands×rows per class offset 0..{MAX_OFFSET}: {}); a \
             pair at the threshold with a size ratio up to {MAX_RATIO} becomes a candidate with \
             probability at least {:.4}",
            self.threshold,
            bandings.join(", "),
            self.recall()
        )
    }

    /// Number of tables: the bands of every offset.
    pub fn tables(&self) -> usize {
        self.offsets.iter().map(|b| b.bands).sum()
    }

    /// The band (of the pair's class offset) in which two signatures agree, the one that made
    /// the pair a candidate.
    pub fn first_band(&self, sizes: (u64, u64), sigs: (&[u32], &[u32])) -> Option<usize> {
        let offset = class(sizes.0).abs_diff(class(sizes.1));
        let b = self.offsets.get(offset as usize)?;
        let r = b.rows;
        (0..b.bands).find(|i| sigs.0[i * r..(i + 1) * r] == sigs.1[i * r..(i + 1) * r])
    }
}

/// The exact-verification prefilter: false when the signature estimate `estimate` (of `k`
/// values) rules out containment ≥ `t` for sets of sizes `a` and `b`, with the same 10⁻⁶ miss
/// chance as for Jaccard: the floor is that of the lowest Jaccard the pair could have,
/// t / (1 + q − t).
pub fn plausible(estimate: f64, a: u64, b: u64, k: usize, t: f64) -> bool {
    let q = a.max(b) as f64 / a.min(b).max(1) as f64;
    estimate >= estimate_floor(jaccard_floor(t, q), k)
}

/// Plausible pairs verified together: the candidate pairs, in (lo, hi) order, are cut into
/// tables of this many two-document buckets. Verification checks a table's pairs in parallel
/// against the components as they stood before it, and skips a pair an earlier table joined, so
/// m near-identical documents (m² / 2 candidate pairs) cost about m + this many exact checks.
pub const PAIRS_PER_TABLE: usize = 4096;

/// What the candidate search found.
#[derive(Debug, Default)]
pub struct Candidates {
    /// The plausible candidate pairs, [`PAIRS_PER_TABLE`] two-document buckets per table.
    pub tables: Vec<Buckets>,
    /// Distinct candidate pairs the signature estimate ruled out (in no table).
    pub implausible: u64,
}

/// Candidate pairs from which [`crowding_note`] speaks, if they are also a quarter of all pairs.
pub const CROWDED_PAIRS: u64 = 1_000_000;

/// The scan's note when the candidates are most pairs of `units` distinct documents: the
/// single-value bands then separate nothing, and the scan's time grows with the square of the
/// number of documents (with `--shingle char` on 10,000 generated texts of one language, 96 % of
/// the pairs of distinct documents are candidates; with word shingles 0.04 %).
pub fn crowding_note(candidates: u64, units: usize) -> Option<String> {
    let all = units as u64 * (units as u64).saturating_sub(1) / 2;
    (candidates >= CROWDED_PAIRS && candidates.saturating_mul(4) >= all).then(|| {
        format!(
            "--containment: {candidates} candidate pairs, {:.0} % of all pairs of documents: \
             the single-value bands that find excerpts down to 1/{MAX_RATIO} of their source do \
             not separate these documents (with --shingle char, texts of one language share \
             many q-grams), so the time grows with the square of their number; word shingles \
             separate them far better",
            100.0 * candidates as f64 / all.max(1) as f64
        )
    })
}

/// The buckets of one (offset, band) table that hold a pair to check, as groups.
#[derive(Default)]
struct Groups {
    /// Each group's documents, one after another: for offset 0 every document of the bucket,
    /// for offset d > 0 those of its upper class only.
    docs: Vec<u32>,
    /// Start of each group in `docs`, plus a final end.
    bounds: Vec<u32>,
    /// (document, group): offset 0: every document of the group; offset d > 0: the documents
    /// of the bucket's lower class, whose partners are the group.
    members: Vec<(u32, u32)>,
}

/// The candidate pairs of `units` (distinct-content documents), each pair once, those that the
/// estimate prefilter ([`plausible`] at containment `prefilter`) rejects counted and dropped.
/// `sizes[d]` is document d's number of distinct shingles; signatures are `lanes` per document.
///
/// A pair is a candidate when it agrees on a band of the banding of its class offset: table
/// (d, band) pairs the documents of class c (the lower member of the class pair (c, c + d))
/// with those of class c + d (its upper member) that share the band's key. Two documents of
/// one class in such a bucket are not a candidate of it: they are d = 0 apart, and their
/// banding is offset 0's. (With r = 1 for d > 0 and character shingles, two unrelated texts of
/// one language share a single value more often than not, and pairing them made nearly every
/// pair of documents of nearby sizes a candidate, many times over.)
///
/// A pair is found in many tables, so candidates are gathered per document (its partners in
/// every table, deduplicated) and the estimate prefilter runs once per distinct pair, not once
/// per table.
pub fn candidates(
    scheme: &Scheme,
    units: &[u32],
    sigs: &[u32],
    lanes: usize,
    sizes: &[u64],
    prefilter: f64,
) -> Candidates {
    let specs: Vec<(u32, usize, usize)> = (0u32..)
        .zip(&scheme.offsets)
        .flat_map(|(d, b)| (0..b.bands).map(move |band| (d, band, b.rows)))
        .collect();
    let tables: Vec<Groups> = specs
        .par_iter()
        .map(|&(d, band, rows)| groups(d, band, rows, units, sigs, lanes, sizes))
        .collect();
    // Offset 0's groups come first (tables are numbered offset by offset).
    let zero_groups = tables[..scheme.offsets.first().map_or(0, |b| b.bands)]
        .iter()
        .map(|t| t.bounds.len() as u32 - 1)
        .sum::<u32>();
    let (docs, bounds, by_doc, starts) = index_by_document(tables, sizes.len());
    let group = |g: u32| &docs[bounds[g as usize] as usize..bounds[g as usize + 1] as usize];
    // A pair's co-occurrences in the tables of its offset: with single-value bands over the
    // whole signature (offsets 1 to 4 at the default threshold) that is the number of values the
    // two signatures share, so its estimate comes without comparing them.
    let counts_agree = |d: u32| {
        let b = scheme.offsets[d as usize];
        b.rows == 1 && b.bands == lanes
    };
    let sig = |d: u32| &sigs[d as usize * lanes..(d as usize + 1) * lanes];
    let n = sizes.len();
    let found: Vec<(Vec<u32>, u64)> = units
        .par_iter()
        .map_init(
            || (vec![u32::MAX; n], vec![0u32; n]),
            |(seen, count), &a| {
                let mut partners = Vec::new();
                for &g in &by_doc[starts[a as usize] as usize..starts[a as usize + 1] as usize] {
                    // Offset 0's groups pair every two of their documents: each pair is taken
                    // from its lower id. Offset d's pair `a` with the upper class only.
                    let zero = g < zero_groups;
                    for &b in group(g) {
                        let i = b as usize;
                        if zero && b <= a {
                            continue;
                        }
                        if seen[i] != a {
                            seen[i] = a;
                            count[i] = 0;
                            partners.push(b);
                        }
                        count[i] += 1;
                    }
                }
                let distinct = partners.len() as u64;
                let (size, c) = (sizes[a as usize], class(sizes[a as usize]));
                partners.retain(|&b| {
                    let other = sizes[b as usize];
                    let e = if counts_agree(c.abs_diff(class(other))) {
                        f64::from(count[b as usize]) / lanes as f64
                    } else {
                        estimate(sig(a), sig(b))
                    };
                    plausible(e, size, other, lanes, prefilter)
                });
                (partners, distinct)
            },
        )
        .collect();
    let distinct: u64 = found.iter().map(|f| f.1).sum();
    let mut pairs: Vec<(u32, u32)> = units
        .iter()
        .zip(found)
        .flat_map(|(&a, (partners, _))| partners.into_iter().map(move |b| (a.min(b), a.max(b))))
        .collect();
    pairs.par_sort_unstable();
    pairs.dedup();
    Candidates {
        implausible: distinct - pairs.len() as u64,
        tables: pairs
            .chunks(PAIRS_PER_TABLE)
            .map(Buckets::from_pairs)
            .collect(),
    }
}

/// The groups of table (d, `band`): the buckets of its salted band keys that pair two
/// documents.
fn groups(
    d: u32,
    band: usize,
    rows: usize,
    units: &[u32],
    sigs: &[u32],
    lanes: usize,
    sizes: &[u64],
) -> Groups {
    let mut entries: Vec<(u64, u32)> = Vec::with_capacity(units.len() * 2);
    for &u in units {
        let start = u as usize * lanes + band * rows;
        let key = band_key(band, &sigs[start..start + rows]);
        let c = class(sizes[u as usize]);
        // As the lower class of (c, c + d), and as the upper class of (c − d, c).
        entries.push((salted(key, c), u));
        if d > 0 && c >= d {
            entries.push((salted(key, c - d), u));
        }
    }
    entries.sort_unstable();
    // Two salts giving one key (a 2^-64 chance) must not put a document twice in a bucket.
    entries.dedup();
    let mut out = Groups {
        bounds: vec![0],
        ..Groups::default()
    };
    for run in entries.chunk_by(|x, y| x.0 == y.0).filter(|r| r.len() >= 2) {
        let g = out.bounds.len() as u32 - 1;
        if d == 0 {
            out.docs.extend(run.iter().map(|&(_, u)| u));
            out.members.extend(run.iter().map(|&(_, u)| (u, g)));
        } else {
            // The bucket's lower class is its least (a key collision aside, every document is
            // of the lower class or d above it).
            let class_of = |&(_, u): &(u64, u32)| class(sizes[u as usize]);
            let lower = run.iter().map(class_of).min().unwrap_or(0);
            let of = |c: u32| {
                run.iter()
                    .filter(move |e| class_of(e) == c)
                    .map(|&(_, u)| u)
            };
            if of(lower + d).next().is_none() {
                continue;
            }
            out.docs.extend(of(lower + d));
            out.members.extend(of(lower).map(|u| (u, g)));
        }
        out.bounds.push(out.docs.len() as u32);
    }
    out
}

/// The tables' groups numbered globally (table by table) and, for each document, the groups it
/// takes partners from: (group documents, group bounds, groups by document, each document's
/// start in it plus a final end).
fn index_by_document(tables: Vec<Groups>, n: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut docs = Vec::with_capacity(tables.iter().map(|t| t.docs.len()).sum());
    let mut bounds = vec![0u32];
    let mut starts = vec![0u32; n + 1];
    for t in &tables {
        for &(u, _) in &t.members {
            starts[u as usize + 1] += 1;
        }
    }
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    let mut next = starts.clone();
    let mut by_doc = vec![0u32; starts[n] as usize];
    for t in tables {
        // Each table is freed once copied: they are most of the memory here.
        let first = bounds.len() as u32 - 1;
        for &(u, g) in &t.members {
            by_doc[next[u as usize] as usize] = first + g;
            next[u as usize] += 1;
        }
        let base = docs.len() as u32;
        docs.extend_from_slice(&t.docs);
        bounds.extend(t.bounds[1..].iter().map(|&b| base + b));
    }
    (docs, bounds, by_doc, starts)
}

fn salted(key: u64, lower_class: u32) -> u64 {
    mix64(key ^ mix64(u64::from(lower_class) ^ 0xC0E7_A1ED_C0E7_A1ED))
}

/// Reorders `members` (already in `--keep` order) so the largest set comes first: the
/// representative of a containment cluster is its container. Stable, so ties keep `--keep`
/// order.
pub fn largest_first(members: &mut [u32], size: impl Fn(u32) -> u64) {
    members.sort_by_key(|&d| std::cmp::Reverse(size(d)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::minhash::splitmix64;

    #[test]
    fn classes_are_powers_of_two() {
        assert_eq!(class(1), 0);
        assert_eq!(class(2), 1);
        assert_eq!(class(3), 1);
        assert_eq!(class(1023), 9);
        assert_eq!(class(1024), 10);
        // The documented offset: 2^(d−1) < MAX_RATIO ≤ 2^d.
        assert!(f64::from(1u32 << (MAX_OFFSET - 1)) < MAX_RATIO);
        assert!(f64::from(1u32 << MAX_OFFSET) >= MAX_RATIO);
    }

    #[test]
    fn jaccard_floor_is_the_jaccard_of_a_contained_pair() {
        // An excerpt of 30 % of a document: |A| = 30, |B| = 100, A ⊂ B, J = 30/100.
        assert!((jaccard_floor(1.0, 100.0 / 30.0) - 0.3).abs() < 1e-12);
        // 24 of 30 shared (C = 0.8) with 100: J = 24 / 106.
        assert!((jaccard_floor(0.8, 100.0 / 30.0) - 24.0 / 106.0).abs() < 1e-12);
        assert!((containment_from_jaccard(24.0 / 106.0, 30, 100) - 0.8).abs() < 1e-12);
        assert_eq!(containment_from_jaccard(1.0, 5, 5), 1.0);
    }

    #[test]
    fn recall_at_the_threshold_is_the_least_over_every_ratio_in_range() {
        for t in [0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
            let s = Scheme::new(t, 128);
            let mut least = f64::INFINITY;
            for (d, b) in (0u32..).zip(&s.offsets) {
                assert!(b.bands * b.rows <= 128, "{b:?}");
                // Every ratio a pair of classes d apart can have within the range.
                let lo = if d == 0 {
                    1.0
                } else {
                    f64::from(1u32 << (d - 1))
                };
                let hi = f64::from(1u32 << (d + 1)).min(MAX_RATIO);
                for i in 0..=20 {
                    let q = lo + (hi - lo) * f64::from(i) / 20.0;
                    let p = s.candidate_probability(q, d);
                    assert!(p >= s.recall() - 1e-12, "t={t} d={d} q={q}: {p}");
                    least = least.min(p);
                }
            }
            assert!((least - s.recall()).abs() < 1e-12, "t={t}");
            // The README's figures for K = 128: at least 0.999 from t = 0.6 up, 0.998 at 0.5.
            let documented = if t >= 0.6 { TARGET_RECALL } else { 0.998 };
            assert!(
                s.recall() >= documented,
                "t={t}: {s:?} gives {}",
                s.recall()
            );
        }
        // The defaults: 2 rows for one class, single values for classes further apart.
        let s = Scheme::new(0.8, 128);
        assert_eq!(s.offsets[0], Banding { bands: 64, rows: 2 });
        assert_eq!(
            s.offsets[1],
            Banding {
                bands: 128,
                rows: 1
            }
        );
        assert!(s.recall() > 0.9998, "{}", s.recall());
    }

    #[test]
    fn a_short_signature_reports_the_recall_it_can_give() {
        // K = 16 cannot reach the target at q = 10: one value per band is the best it can do.
        let s = Scheme::new(0.8, 16);
        let worst = Scheme::worst_jaccard(0.8, MAX_OFFSET);
        assert_eq!(
            s.offsets[MAX_OFFSET as usize],
            Banding { bands: 16, rows: 1 }
        );
        assert!((s.recall() - (1.0 - (1.0 - worst).powi(16))).abs() < 1e-12);
        assert!(s.recall() < TARGET_RECALL);
    }

    /// Every pair of the candidates' tables, in table order.
    fn pairs_of(c: &Candidates) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for t in &c.tables {
            assert!(t.len() <= PAIRS_PER_TABLE);
            for i in 0..t.len() {
                let b = t.bucket(i);
                assert_eq!(b.len(), 2);
                assert!(b[0] < b[1], "{b:?}");
                out.push((b[0], b[1]));
            }
        }
        out
    }

    #[test]
    fn only_documents_of_nearby_classes_are_candidates() {
        // Five documents with equal signatures: sizes 10 (class 3), 12 (3), 40 (5), 100 (6),
        // 3000 (11). Class 11 is more than MAX_OFFSET above the others.
        let lanes = 8;
        let sigs = vec![7u32; 5 * lanes];
        let sizes = [10, 12, 40, 100, 3000];
        let scheme = Scheme::new(0.8, lanes);
        let c = candidates(&scheme, &[0, 1, 2, 3, 4], &sigs, lanes, &sizes, 0.8);
        let expected = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];
        assert_eq!(pairs_of(&c), expected);
        assert_eq!(c.implausible, 0);
    }

    #[test]
    fn documents_of_one_class_need_a_band_of_their_own_offset() {
        // Three documents of class 11 and one of class 12, all sharing the first signature value
        // and nothing else. Offset 0 bands two values (64 × 2), so the first value alone makes
        // no candidate of one class; offset 1 bands single values, so it makes the three pairs
        // across the classes candidates. (Each class-11 document also enters offset 1's tables
        // as the lower member of (11, 12): that must not pair it with the other two.)
        let lanes = 128;
        let scheme = Scheme::new(0.8, lanes);
        assert_eq!(scheme.offsets[0], Banding { bands: 64, rows: 2 });
        let mut sigs: Vec<u32> = (0..4 * lanes as u32).map(|v| v + 1).collect();
        for d in 0..4 {
            sigs[d * lanes] = 0;
        }
        let sizes = [2048, 2100, 3000, 5000];
        let c = candidates(&scheme, &[0, 1, 2, 3], &sigs, lanes, &sizes, 0.0);
        assert_eq!(pairs_of(&c), [(0, 3), (1, 3), (2, 3)]);
        assert_eq!(c.implausible, 0);
        // One shared value of 128 is far below what containment 0.8 needs at these ratios.
        let c = candidates(&scheme, &[0, 1, 2, 3], &sigs, lanes, &sizes, 0.8);
        assert_eq!((pairs_of(&c).len(), c.implausible), (0, 3));
    }

    #[test]
    fn candidates_are_the_pairs_agreeing_on_a_band_of_their_offset() {
        // Signatures over a small alphabet (values agree often), sizes over six classes: the
        // candidates and their prefilter match a pair-by-pair oracle.
        let mut state = 17;
        let (mut kept, mut dropped) = (0, 0);
        for (lanes, t) in [(128, 0.8), (128, 0.5), (16, 0.9), (64, 0.7)] {
            let scheme = Scheme::new(t, lanes);
            let n = 60u32;
            let sizes: Vec<u64> = (0..n)
                .map(|_| 900 + splitmix64(&mut state) % 60_000)
                .collect();
            let sigs: Vec<u32> = (0..n as usize * lanes)
                .map(|_| (splitmix64(&mut state) % 3) as u32)
                .collect();
            let units: Vec<u32> = (0..n).filter(|d| d % 7 != 3).collect();
            let sig = |d: u32| &sigs[d as usize * lanes..(d as usize + 1) * lanes];
            let (mut expected, mut implausible) = (Vec::new(), 0);
            for (i, &a) in units.iter().enumerate() {
                for &b in &units[i + 1..] {
                    let (sa, sb) = (sizes[a as usize], sizes[b as usize]);
                    let Some(banding) = scheme.offsets.get(class(sa).abs_diff(class(sb)) as usize)
                    else {
                        continue;
                    };
                    let r = banding.rows;
                    let agree = (0..banding.bands)
                        .any(|i| sig(a)[i * r..(i + 1) * r] == sig(b)[i * r..(i + 1) * r]);
                    if !agree {
                        continue;
                    }
                    if plausible(estimate(sig(a), sig(b)), sa, sb, lanes, t) {
                        expected.push((a, b));
                    } else {
                        implausible += 1;
                    }
                }
            }
            expected.sort_unstable();
            let c = candidates(&scheme, &units, &sigs, lanes, &sizes, t);
            assert_eq!(pairs_of(&c), expected, "K={lanes} t={t}");
            assert_eq!(c.implausible, implausible, "K={lanes} t={t}");
            kept += expected.len();
            dropped += implausible;
        }
        // Both sides of the prefilter were exercised.
        assert!(kept > 100 && dropped > 100, "{kept} {dropped}");
    }

    #[test]
    fn crowding_is_noted_from_a_million_candidates_that_are_a_quarter_of_all_pairs() {
        // 10,000 documents: 49,995,000 pairs.
        assert_eq!(crowding_note(999_999, 10_000), None);
        assert_eq!(crowding_note(12_000_000, 10_000), None);
        let note = crowding_note(44_494_288, 10_000).unwrap_or_default();
        assert!(note.contains("44494288 candidate pairs, 89 %"), "{note}");
        assert!(crowding_note(1_000_000, 2_000).is_some());
        assert_eq!(crowding_note(0, 0), None);
    }

    #[test]
    fn simulated_pairs_at_the_threshold_are_candidates_as_often_as_the_bound_says() {
        // Signatures of pairs at the worst Jaccard of the widest offset, each value agreeing
        // with probability J*; the rate of pairs with an agreeing band is at least the bound.
        let scheme = Scheme::new(0.8, 128);
        let d = MAX_OFFSET;
        let j = Scheme::worst_jaccard(0.8, d);
        let b = scheme.offsets[d as usize];
        let mut state = 3;
        let trials = 2000;
        let mut hits = 0;
        for _ in 0..trials {
            let agree: Vec<bool> = (0..128)
                .map(|_| ((splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64) < j)
                .collect();
            hits += usize::from(
                (0..b.bands).any(|i| agree[i * b.rows..(i + 1) * b.rows].iter().all(|&x| x)),
            );
        }
        assert!(hits as f64 / trials as f64 >= 0.995, "{hits} of {trials}");
    }

    #[test]
    fn largest_first_keeps_keep_order_among_equals() {
        let sizes = [5u64, 9, 9, 1];
        let mut m = vec![3, 2, 0, 1];
        largest_first(&mut m, |d| sizes[d as usize]);
        assert_eq!(m, vec![2, 1, 0, 3]);
    }
}
