//! Tests of `explain`: its figures against the scan's own functions, and its text.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::candidates::keys::band_key;
use crate::sketch::minhash::{MinHasher, SketchKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const CHOSEN: Banding = Banding { bands: 19, rows: 6 };
const GIVEN: Banding = Banding { bands: 10, rows: 5 };

fn mh(threshold: f64, num_perm: usize, banding: Option<Banding>) -> Result<Explanation> {
    explain(&ExplainMethod::MinHash {
        threshold,
        num_perm,
        bands: banding.map(|b| b.bands),
        rows: banding.map(|b| b.rows),
    })
}

fn sh(max_distance: u32, docs: u64) -> Result<Explanation> {
    explain(&ExplainMethod::SimHash { max_distance, docs })
}

fn minhash(banding: Option<Banding>) -> (MinHashExplanation, Vec<String>) {
    let e = mh(0.8, 128, banding).unwrap();
    match e.method {
        MethodExplanation::MinHash(m) => (m, e.warnings),
        MethodExplanation::SimHash(_) => unreachable!(),
    }
}

fn simhash(max_distance: u32) -> SimHashExplanation {
    match sh(max_distance, 1_000_000).unwrap().method {
        MethodExplanation::SimHash(s) => s,
        MethodExplanation::MinHash(_) => unreachable!(),
    }
}

/// |hits/n − p| within 4 standard errors of n trials, with a floor of 0.01.
fn within_4_se(hits: usize, n: usize, p: f64) -> bool {
    let se = (p * (1.0 - p) / n as f64).sqrt().max(0.01);
    (hits as f64 / n as f64 - p).abs() <= 4.0 * se
}

#[test]
fn curve_is_the_closed_form_and_crosses_half_where_solved() {
    let (chosen, _) = minhash(None);
    assert_eq!(
        (chosen.bands, chosen.rows, chosen.banding_chosen),
        (19, 6, true)
    );
    for (m, b) in [(minhash(Some(GIVEN)).0, GIVEN), (chosen, CHOSEN)] {
        let closed = |s: f64| 1.0 - (1.0 - s.powf(b.rows as f64)).powf(b.bands as f64);
        assert_eq!(m.curve.len(), 10);
        for p in m.curve.iter().chain(&m.near_threshold) {
            assert!((p.probability - closed(p.similarity)).abs() < 1e-12);
        }
        let near: Vec<f64> = m.near_threshold.iter().map(|p| p.similarity).collect();
        assert_eq!(near, [0.75, 0.8, 0.85]);
        assert!((m.at_threshold - closed(0.8)).abs() < 1e-12);
        assert!((closed(m.crossing) - 0.5).abs() < 1e-9);
        let approx = (1.0 / b.bands as f64).powf(1.0 / b.rows as f64);
        assert!((m.crossing_approximation - approx).abs() < 1e-12);
        assert_eq!(m.false_positive_mass, b.false_positive_mass(0.8));
        assert_eq!(m.false_negative_mass, b.false_negative_mass(0.8));
        assert_eq!(m.estimate_floor, estimate_floor(0.8, 128));
        assert!((m.standard_error - (0.8f64 * 0.2 / 128.0).sqrt()).abs() < 1e-15);
    }
    for (bands, rows) in [(2, 20), (1, 1), (1, 1024), (128, 1)] {
        let b = Banding { bands, rows };
        assert!(
            (b.candidate_probability(crossing(&b)) - 0.5).abs() < 1e-9,
            "{b:?}"
        );
    }
}

#[test]
fn curve_agrees_with_simulated_minhash_signatures() {
    let mut rng = StdRng::seed_from_u64(7);
    let (mut sa, mut sb, mut scratch) = (vec![0u32; 128], vec![0u32; 128], Vec::new());
    for (kind, banding) in [(SketchKind::Kperm, CHOSEN), (SketchKind::Oph, GIVEN)] {
        let r = banding.rows;
        let key = |sig: &[u32], i: usize| band_key(i, &sig[i * r..(i + 1) * r]);
        // |A ∪ B| = 100 and |A ∩ B| = common: Jaccard exactly common / 100. (100, not 200:
        // K-permutation sketches take most of the time in a debug build.)
        for common in [50, 70, 80, 90] {
            let (s, trials) = (f64::from(common) / 100.0, 400);
            let mut hits = 0;
            for trial in 0..trials {
                let mut a: Vec<u64> = (0..common).map(|_| rng.random()).collect();
                let mut b = a.clone();
                a.extend((0..(100 - common) / 2).map(|_| rng.random::<u64>()));
                b.extend((0..(100 - common) / 2).map(|_| rng.random::<u64>()));
                let hasher = MinHasher::new(kind, 128, trial as u64);
                hasher.sketch(&a, &mut sa, &mut scratch);
                hasher.sketch(&b, &mut sb, &mut scratch);
                hits += usize::from((0..banding.bands).any(|i| key(&sa, i) == key(&sb, i)));
            }
            let p = banding.candidate_probability(s);
            assert!(
                within_4_se(hits, trials, p),
                "{kind:?} {banding:?} s={s}: {hits} vs {p}"
            );
        }
    }
}

#[test]
fn reports_unused_values_memory_and_poor_curves() {
    let given = mh(0.8, 128, Some(GIVEN)).unwrap();
    let (m, warnings) = minhash(Some(GIVEN));
    assert_eq!((m.values_used, m.values_unused), (50, 78));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        given.notes,
        [
            "78 of 128 signature values are in no band (10 × 5 = 50), only in the similarity \
          estimate: 25 bands of 5 rows would fit in K = 128"
        ]
    );
    // Given by hand, the banding the threshold chooses is no more remarked on than chosen.
    assert!(mh(0.8, 128, Some(CHOSEN)).unwrap().notes.is_empty());
    // The defaults do not remark on themselves: the values in no band serve the estimate.
    let chosen = mh(0.8, 128, None).unwrap();
    let (m, warnings) = minhash(None);
    assert_eq!((m.values_used, m.values_unused), (114, 14));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(chosen.notes.is_empty(), "{:?}", chosen.notes);
    assert!(mh(0.8, 128, Some(Banding { bands: 16, rows: 8 }))
        .unwrap()
        .notes
        .is_empty());
    assert!(minhash(Some(Banding { bands: 16, rows: 8 })).1.is_empty());
    assert_eq!(
        (m.memory.bucket_bytes, m.memory.total_bytes),
        (228, 512 + 228 + 64)
    );
    assert_eq!(simhash(3).memory.total_bytes, 8 + 4 * 12 + 64);

    assert_eq!(poor_curve_note(&CHOSEN, 0.8), None);
    let note = poor_curve_note(&Banding { bands: 2, rows: 20 }, 0.8).unwrap();
    assert!(
        note.contains("miss a pair at similarity 0.85 with probability 0.924"),
        "{note}"
    );
    let (_, warnings) = minhash(Some(Banding { bands: 2, rows: 20 }));
    assert!(
        warnings[0].starts_with("false-negative probability > 5%"),
        "{warnings:?}"
    );
}

#[test]
fn rejects_what_scan_rejects() {
    for t in [0.0, -0.1, 1.01, f64::NAN] {
        assert!(mh(t, 128, None).is_err(), "t = {t}");
    }
    assert!(mh(1.0, 128, None).is_ok() && sh(31, 1).is_ok());
    assert!(mh(0.8, 0, None).is_err() && mh(0.8, MAX_NUM_PERM + 1, None).is_err());
    let too_long = Banding {
        bands: 13,
        rows: 10,
    };
    let err = mh(0.8, 128, Some(too_long)).unwrap_err();
    assert!(
        err.to_string().contains("130 is more than --num-perm 128"),
        "{err}"
    );
    for (bands, rows) in [(0, 4), (4, 0), (usize::MAX, 2)] {
        assert!(mh(0.8, 128, Some(Banding { bands, rows })).is_err());
    }
    assert!(sh(32, 1).is_err() && sh(3, 0).is_err());
}

/// P(some piece clean) by inclusion–exclusion over every nonempty subset of pieces.
fn by_inclusion_exclusion(pieces: &[(u32, u32)], d: usize) -> f64 {
    let clean = |width: u32| binomial(64 - width as usize, d) as f64 / binomial(64, d) as f64;
    let term = |set: u32| {
        let width = (0..pieces.len())
            .filter(|i| set >> i & 1 == 1)
            .map(|i| pieces[i].1);
        let sign = if set.count_ones() % 2 == 1 { 1.0 } else { -1.0 };
        sign * clean(width.sum())
    };
    (1u32..1 << pieces.len()).map(term).sum()
}

#[test]
fn simhash_curve_is_one_within_distance_then_falls() {
    for d in [0, 1, 3, 6, 15, 31] {
        let s = simhash(d);
        let pieces: Vec<(u32, u32)> = s.pieces.iter().map(|p| (p.shift, p.width)).collect();
        assert_eq!(
            (&pieces, s.tables, s.curve.len()),
            (&simhash::pieces(d), d as usize + 1, 17)
        );
        for w in s.curve.windows(2) {
            let (prev, p) = (w[0].probability, w[1].probability);
            if w[1].distance <= d {
                assert_eq!(p, 1.0);
            } else {
                // D = 0 is one 64-bit piece: 0 for every d ≥ 1.
                assert!(p < prev || prev == 0.0, "D={d}: {w:?}");
            }
            if d <= 6 {
                let ie = by_inclusion_exclusion(&pieces, w[1].distance as usize);
                assert!((p - ie).abs() < 1e-12, "D={d}: {w:?} vs {ie}");
            }
        }
    }
    // Two 32-bit pieces at distance 2: missed only with one bit in each.
    let two = piece_candidate_probability(&simhash::pieces(1), 2);
    assert!((two - (1.0 - 32.0 * 32.0 / 2016.0)).abs() < 1e-15);
}

#[test]
fn simhash_curve_agrees_with_flipped_bits() {
    let mut rng = StdRng::seed_from_u64(3);
    for max_distance in [3u32, 5] {
        let pieces = simhash::pieces(max_distance);
        let key = |fp, p| simhash::piece_key(p, fp);
        for d in max_distance + 1..=max_distance + 4 {
            let trials = 4000;
            let mut hits = 0;
            for _ in 0..trials {
                let a: u64 = rng.random();
                let flips = rand::seq::index::sample(&mut rng, 64, d as usize);
                let b = flips.iter().fold(a, |f, bit| f ^ (1u64 << bit));
                hits += usize::from(pieces.iter().any(|&p| key(a, p) == key(b, p)));
            }
            let p = piece_candidate_probability(&pieces, d);
            assert!(
                within_4_se(hits, trials, p),
                "D={max_distance} d={d}: {hits} vs {p}"
            );
        }
    }
    let s = simhash(3);
    assert!((s.chance_candidates_per_doc - 999_999.0 * 4.0 / 65536.0).abs() < 1e-9);
    let cos = (3.0 * std::f64::consts::PI / 64.0).cos();
    assert!((s.cosine_at_max_distance - cos).abs() < 1e-15);
    let warnings = sh(7, 1_000_000).unwrap().warnings;
    assert!(
        warnings[0].starts_with("many chance candidates"),
        "{warnings:?}"
    );
    assert_eq!(simhash(31).chance_candidates_per_doc, 999_999.0);
}

#[test]
fn text_shows_the_key_numbers() {
    let text = |e: Explanation| {
        let mut out = Vec::new();
        render_text(&e, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let minhash = text(mh(0.8, 128, None).unwrap());
    for needle in [
        "banding      19 bands × 6 rows, chosen from the threshold",
        "114 of 128 in bands; all 128 in the similarity estimate (14 only there)",
        "P(0.8) = 0.996899",
        "prefilter    0.5677",
        "±0.0354",
        "signature 512 B + buckets 19 × 12 B + overhead 64 B = 804 B + path",
        "        0.80  0.996899  ########################################  ← threshold\n",
        "        0.85  0.999876  ########################################  ← t + 0.05\n",
        "        0.90  0.999999  ########################################\n",
    ] {
        assert!(
            minhash.contains(needle),
            "{needle:?} missing from\n{minhash}"
        );
    }
    assert!(
        !minhash.contains("warning") && !minhash.contains("note"),
        "{minhash}"
    );
    let given = text(mh(0.8, 128, Some(GIVEN)).unwrap());
    assert!(
        given.contains("\nnote: 78 of 128 signature values are in no band"),
        "{given}"
    );
    let simhash = text(sh(3, 1_000_000).unwrap());
    for needle in [
        "4 tables, bits [0,16) [16,32) [32,48) [48,64)\n",
        "≤ 61.04",
        "← D\n",
    ] {
        assert!(
            simhash.contains(needle),
            "{needle:?} missing from\n{simhash}"
        );
    }
}

#[test]
fn json_uses_the_documented_field_names() {
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k.join(" ")
    };
    let v = serde_json::to_value(mh(0.8, 128, None).unwrap()).unwrap();
    assert_eq!(
        keys(&v),
        "at_threshold banding_chosen bands crossing crossing_approximation curve \
         estimate_floor false_negative_mass false_positive_mass kind memory near_threshold \
         notes num_perm rows schema_version standard_error threshold values_unused values_used \
         warnings"
    );
    assert_eq!(
        (&v["schema_version"], &v["kind"]),
        (&json!(1), &json!("minhash"))
    );
    assert_eq!(
        (&v["bands"], &v["rows"], &v["values_unused"]),
        (&json!(19), &json!(6), &json!(14))
    );
    assert_eq!(
        v["curve"][9],
        json!({"similarity": 1.0, "probability": 1.0})
    );
    assert_eq!(v["near_threshold"][2]["similarity"], 0.85);
    assert_eq!(
        keys(&v["memory"]),
        "bucket_bytes bucket_entries overhead_bytes signature_bytes total_bytes"
    );
    assert_eq!(v["memory"]["total_bytes"], 804);
    let v = serde_json::to_value(sh(3, 10).unwrap()).unwrap();
    assert_eq!(
        keys(&v),
        "bits chance_candidates_per_doc cosine_at_max_distance curve docs kind max_distance \
         memory notes pieces schema_version tables warnings"
    );
    assert_eq!((&v["kind"], &v["tables"]), (&json!("simhash"), &json!(4)));
    assert_eq!(v["pieces"][1], json!({"shift": 16, "width": 16}));
    assert_eq!(keys(&v["curve"][4]), "distance probability");
}
