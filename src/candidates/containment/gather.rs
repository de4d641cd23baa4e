//! Gathering containment candidates: offset 0's tables as the buckets of their bands, and for
//! the other offsets each document's partners over all their tables (each distinct pair once),
//! with the estimate prefilter.

use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::candidates::keys::band_key;
use crate::sketch::minhash::{estimate, mix64};

use super::{class, plausible, Candidates, Scheme, PAIRS_PER_TABLE};

/// The buckets of one (offset d > 0, band) table that hold a pair to check, as groups.
#[derive(Default)]
struct Groups {
    /// Each group's documents, one after another: those of its bucket's upper class.
    docs: Vec<u32>,
    /// Start of each group in `docs`, plus a final end.
    bounds: Vec<u32>,
    /// (document, group): the documents of the bucket's lower class, whose partners are the
    /// group.
    members: Vec<(u32, u32)>,
}

/// The candidates of `units` (distinct-content documents). `sizes[d]` is document d's number of
/// distinct shingles; signatures are `lanes` per document.
///
/// Two documents of one size class (offset 0) are a candidate when they share a bucket of one of
/// offset 0's bands: those tables come first, as buckets (the key salted with the class, so a
/// bucket holds one class), and verification takes each document's partners from them, applying
/// the estimate prefilter ([`crate::verify::Judge::candidate`]). A family of m near-copies
/// shares buckets of m documents, m²/2 pairs that a list of pairs would hold and sort, and
/// whose checks stop once the family is joined.
///
/// Two documents d > 0 classes apart are a candidate when they agree on a band of offset d's
/// banding: table (d, band) pairs the documents of class c (the lower member of the class pair
/// (c, c + d)) with those of class c + d (its upper member) that share the band's key. Two
/// documents of one class in such a bucket are not a candidate of it: they are 0 apart, and
/// their banding is offset 0's. (With r = 1 for d > 0 and character shingles, two unrelated
/// texts of one language share a single value more often than not, and pairing them made
/// nearly every pair of documents of nearby sizes a candidate, many times over.) Those pairs
/// are gathered per document (its partners in every table, deduplicated), the estimate
/// prefilter ([`plausible`] at containment `prefilter`) runs once per distinct pair, and the
/// pairs it rejects are counted and dropped; the others follow offset 0's tables as
/// two-document buckets, [`PAIRS_PER_TABLE`] to a table, in (lo, hi) order, with the pairs of
/// offset 0's buckets of two documents (taken out of those tables, each pair once, not
/// prefiltered).
pub fn candidates(
    scheme: &Scheme,
    units: &[u32],
    sigs: &[u32],
    lanes: usize,
    sizes: &[u64],
    prefilter: f64,
) -> Candidates {
    let zero = scheme
        .offsets
        .first()
        .copied()
        .unwrap_or(crate::config::banding::Banding { bands: 0, rows: 1 });
    let specs: Vec<(u32, usize, usize)> = (1u32..)
        .zip(scheme.offsets.iter().skip(1))
        .flat_map(|(d, b)| (0..b.bands).map(move |band| (d, band, b.rows)))
        .collect();
    let mut tables: Vec<Buckets> = (0..zero.bands)
        .into_par_iter()
        .map(|band| {
            let rows = zero.rows;
            let entries = units
                .iter()
                .map(|&u| {
                    let start = u as usize * lanes + band * rows;
                    let key = band_key(band, &sigs[start..start + rows]);
                    (salted(key, class(sizes[u as usize])), u)
                })
                .collect();
            Buckets::from_keys(entries)
        })
        .collect();
    let groups: Vec<Groups> = specs
        .par_iter()
        .map(|&(d, band, rows)| groups(d, band, rows, units, sigs, lanes, sizes))
        .collect();
    let (docs, bounds, by_doc, starts) = index_by_document(groups, sizes.len());
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
                // `a` is the lower class's document of each of its groups: its partners are
                // the group, all of the upper class.
                for &g in &by_doc[starts[a as usize] as usize..starts[a as usize + 1] as usize] {
                    for &b in group(g) {
                        let i = b as usize;
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
    let (implausible, across) = (distinct - pairs.len() as u64, pairs.len() as u64);
    // Offset 0's buckets of two documents join the pairs, each pair once: near-duplicate pairs
    // agree on most of the 64 bands, and one entry costs less than a bucket in each.
    for t in &mut tables {
        pairs.extend(t.take_pairs());
    }
    pairs.par_sort_unstable();
    pairs.dedup();
    tables.extend(pairs.chunks(PAIRS_PER_TABLE).map(Buckets::from_pairs));
    Candidates {
        implausible,
        across,
        tables,
    }
}

/// The groups of table (d > 0, `band`): the buckets of its salted band keys that pair two
/// documents of classes d apart.
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
        if c >= d {
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
        // The bucket's lower class is its least (a key collision aside, every document is of
        // the lower class or d above it).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::banding::Banding;
    use crate::sketch::minhash::splitmix64;

    /// The candidate pairs: those of offset 0's buckets (one size class each, the documents in
    /// increasing order) that `plausible` accepts, then the pairs of the other tables (two
    /// classes, two-document buckets in (lo, hi) order); and how many pairs of offset 0's
    /// buckets `plausible` turned away. Each distinct pair once.
    fn pairs_of(
        c: &Candidates,
        scheme: &Scheme,
        sizes: &[u64],
        plausible: impl Fn(u32, u32) -> bool,
    ) -> (Vec<(u32, u32)>, u64) {
        let (mut same, mut across) = (Vec::new(), Vec::new());
        let one_class = |a: u32, b: u32| class(sizes[a as usize]) == class(sizes[b as usize]);
        let mut listed = Vec::new();
        for (ti, t) in c.tables.iter().enumerate() {
            for i in 0..t.len() {
                let b = t.bucket(i);
                assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
                if ti < scheme.offsets[0].bands {
                    assert!(b.len() > 2, "buckets of two are listed as pairs");
                    for (j, &lo) in b.iter().enumerate() {
                        same.extend(b[j + 1..].iter().map(|&hi| (lo, hi)));
                    }
                } else {
                    assert!(t.len() <= PAIRS_PER_TABLE);
                    assert_eq!(b.len(), 2);
                    listed.push((b[0], b[1]));
                    if one_class(b[0], b[1]) {
                        same.push((b[0], b[1]));
                    } else {
                        across.push((b[0], b[1]));
                    }
                }
            }
        }
        assert!(
            listed.windows(2).all(|w| w[0] < w[1]),
            "each pair once, in order"
        );
        assert_eq!(across.len() as u64, c.across);
        same.sort_unstable();
        same.dedup();
        let found = same.len();
        same.retain(|&(lo, hi)| plausible(lo, hi));
        let turned_away = (found - same.len()) as u64;
        assert!(
            across.windows(2).all(|w| w[0] < w[1]),
            "each pair once, in order"
        );
        assert!(same.iter().all(|p| across.binary_search(p).is_err()));
        same.extend(across);
        same.sort_unstable();
        (same, turned_away)
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
        assert_eq!(
            pairs_of(&c, &scheme, &sizes, |_, _| true),
            (expected.to_vec(), 0)
        );
        assert_eq!(c.implausible, 0);
        // Offset 0's tables come first, one per band; the pair of one class, a bucket of two in
        // each, is listed once with the others.
        let zero = scheme.offsets[0].bands;
        assert!(c.tables[..zero].iter().all(|t| t.is_empty()));
        assert_eq!(c.tables.len(), zero + 1);
        assert_eq!(c.tables[zero].bucket(0), [0, 1]);
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
        assert_eq!(
            pairs_of(&c, &scheme, &sizes, |_, _| true),
            (vec![(0, 3), (1, 3), (2, 3)], 0)
        );
        assert_eq!(c.implausible, 0);
        // One shared value of 128 is far below what containment 0.8 needs at these ratios.
        let c = candidates(&scheme, &[0, 1, 2, 3], &sigs, lanes, &sizes, 0.8);
        assert_eq!(
            (
                pairs_of(&c, &scheme, &sizes, |_, _| true).0.len(),
                c.implausible
            ),
            (0, 3)
        );
    }

    #[test]
    fn candidates_are_the_pairs_agreeing_on_a_band_of_their_offset() {
        // Signatures over a small alphabet (values agree often), sizes over six classes: the
        // candidates and their prefilter (in verification for pairs of one class) match a
        // pair-by-pair oracle.
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
            let (mut expected, mut implausible, mut implausible_same) = (Vec::new(), 0, 0);
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
                    } else if class(sa) == class(sb) {
                        implausible_same += 1;
                    } else {
                        implausible += 1;
                    }
                }
            }
            expected.sort_unstable();
            let c = candidates(&scheme, &units, &sigs, lanes, &sizes, t);
            let judged = |a: u32, b: u32| {
                let (sa, sb) = (sizes[a as usize], sizes[b as usize]);
                plausible(estimate(sig(a), sig(b)), sa, sb, lanes, t)
            };
            assert_eq!(
                pairs_of(&c, &scheme, &sizes, judged),
                (expected.clone(), implausible_same),
                "K={lanes} t={t}"
            );
            assert_eq!(c.implausible, implausible, "K={lanes} t={t}");
            kept += expected.len();
            dropped += implausible + implausible_same;
        }
        // Both sides of the prefilter were exercised.
        assert!(kept > 100 && dropped > 100, "{kept} {dropped}");
    }
}
