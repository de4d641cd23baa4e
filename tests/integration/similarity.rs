//! Finding near-duplicates: the families found by every method, shingle, sketch and verification,
//! thresholds and signature lengths, SimHash's distance, chains, short documents, and exact copies.

use std::fs;

use serde_json::{json, Value};

use super::util::{
    all_pairs, assert_families, assert_well_formed_clusters, char_jaccard, cluster_paths, clusters,
    dots, edit, families, text, word_jaccard, TestDir,
};

/// Every reported similarity equals the Jaccard similarity of the two files computed here,
/// independently of dupfind (`jaccard` over `n`-shingles).
fn assert_exact_similarities(t: &TestDir, report: &Value, jaccard: fn(&str, &str, usize) -> f64) {
    let n = report["params"]["ngram"].as_u64().unwrap() as usize;
    for c in clusters(report) {
        let read = |i: &Value| {
            let path = c["members"][i.as_u64().unwrap() as usize]["path"]
                .as_str()
                .unwrap();
            fs::read_to_string(t.join(path)).unwrap()
        };
        for p in c["pairs"].as_array().unwrap() {
            let expected = jaccard(&read(&p["a"]), &read(&p["b"]), n);
            let got = p["similarity"].as_f64().unwrap();
            assert!((got - expected).abs() < 1e-12, "{got} vs {expected}: {p}");
        }
    }
}

#[test]
fn clusters_near_duplicates_and_leaves_unrelated_documents_alone() {
    let t = families();
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.warnings().is_empty(), "{}", r.stderr);
    let report = r.json();
    assert_families(&report);
    assert_exact_similarities(&t, &report, word_jaccard);
    let stats = &report["stats"];
    assert_eq!(stats["files_seen"], 8);
    assert_eq!(stats["exact_groups"], 0);
    // Three pairs joined the clusters; a redundant fourth (b-edited ~ b-edited2) may also pass.
    let verified = stats["verified_pairs"].as_u64().unwrap();
    assert!((3..=4).contains(&verified), "{stats}");
    assert!(stats["candidate_pairs"].as_u64().unwrap() >= verified);
    for p in all_pairs(&report) {
        let s = p["similarity"].as_f64().unwrap();
        assert!((0.8..1.0).contains(&s), "similarity {s}");
        assert!(p.get("distance").is_none(), "distance is SimHash's: {p}");
    }
}

#[test]
fn character_shingles_find_the_same_families() {
    let t = families();
    let r = t.run(&["scan", "--shingle", "char", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["params"]["shingle"], "char");
    assert_families(&report);
    assert_exact_similarities(&t, &report, char_jaccard);
}

#[test]
fn k_permutation_sketches_find_the_same_families() {
    let t = families();
    let r = t.run(&["scan", "--sketch", "kperm", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["params"]["sketch"], "kperm");
    assert_families(&report);
    assert_exact_similarities(&t, &report, word_jaccard);
}

#[test]
fn estimated_verification_is_banded_for_recall_and_warns_of_nothing() {
    // Equal weights gave 9 × 13 here, missing 31 % of the pairs at 0.85, and a warning about
    // dupfind's own choice on every run.
    let t = families();
    let r = t.run(&["scan", "--verify", "estimate", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let params = r.json()["params"].clone();
    assert_eq!((&params["bands"], &params["rows"]), (&json!(19), &json!(6)));
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    assert!(!r.stderr.contains("false-negative"), "{}", r.stderr);
}

#[test]
fn estimated_verification_reports_signature_agreement() {
    let t = families();
    let r = t.run(&["scan", "--verify", "estimate", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["params"]["verify"], "estimate");
    assert_families(&report);
    for c in clusters(&report) {
        let path = |i: &Value| {
            let p = c["members"][i.as_u64().unwrap() as usize]["path"]
                .as_str()
                .unwrap();
            fs::read_to_string(t.join(p)).unwrap()
        };
        for p in c["pairs"].as_array().unwrap() {
            let s = p["similarity"].as_f64().unwrap();
            // The fraction of 128 signature values that agree, near the true Jaccard.
            assert_eq!((s * 128.0).fract(), 0.0, "{s} is not k/128");
            assert!(s >= 0.8, "{s}");
            let exact = word_jaccard(&path(&p["a"]), &path(&p["b"]), 5);
            assert!((s - exact).abs() < 0.15, "estimate {s}, exact {exact}");
        }
    }
}

#[test]
fn other_thresholds_and_signature_lengths_find_the_same_families() {
    let t = families();
    for args in [
        vec!["scan", "-k", "256", "-t", "0.7", "."],
        vec!["scan", "-k", "64", "-t", "0.85", "."],
        vec!["scan", "--bands", "16", "--rows", "8", "."],
        vec!["scan", "--seed", "12345", "."],
    ] {
        let r = t.run(&args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        let report = r.json();
        assert_families(&report);
        assert_exact_similarities(&t, &report, word_jaccard);
    }
}

#[test]
fn simhash_finds_a_one_word_edit_and_reports_the_distance() {
    // One edited word changes 5 shingles. In 300 words that is 1.7% of them, and the 64-bit
    // fingerprints then differ in about 3.7 bits on average: half of such pairs are over the
    // default distance 3. In 5,000 words the mean is under 1 bit, which is the case SimHash
    // with d = 3 is for.
    let t = TestDir::new();
    let base = text(7, 5000);
    t.write("a.txt", &base)
        .write("b.txt", edit(&base, &[2500]))
        .write("c.txt", text(8, 5000))
        .write("d.txt", text(9, 5000));
    let r = t.run(&["scan", "--method", "simhash", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
    assert_well_formed_clusters(&report);
    let pair = &report["clusters"][0]["pairs"][0];
    let d = pair["distance"].as_u64().expect("distance is present");
    assert!(d <= 3, "{pair}");
    assert_eq!(pair["similarity"].as_f64().unwrap(), 1.0 - d as f64 / 64.0);
    assert_eq!(pair["exact"], false);
    let params = &report["params"];
    assert_eq!(params["method"], "simhash");
    assert_eq!(params["max_distance"], 3);
    assert_eq!(params["bits"], 64);
    assert_eq!(params["pieces"], 4);
}

#[test]
fn a_chain_is_one_cluster_whose_similarities_show_the_spread() {
    let t = TestDir::new();
    let a = text(31, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    // The premise, computed independently: a ~ b and b ~ c, but a and c are too far apart.
    assert!(word_jaccard(&a, &b, 5) >= 0.8);
    assert!(word_jaccard(&b, &c, 5) >= 0.8);
    assert!(word_jaccard(&a, &c, 5) < 0.8);
    t.write("a.txt", &a).write("b.txt", &b).write("c.txt", &c);
    let report = t.run(&["scan", "--cluster", "components", "."]).json();
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["a.txt", "b.txt", "c.txt"])]
    );
    assert_well_formed_clusters(&report);
    assert_exact_similarities(&t, &report, word_jaccard);
    let cl = &report["clusters"][0];
    let pairs = cl["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert!(!pairs.iter().any(|p| p["a"] == 0 && p["b"] == 2), "a~c");
    let min = cl["min_similarity"].as_f64().unwrap();
    let max = cl["max_similarity"].as_f64().unwrap();
    assert!(0.8 <= min && min < max, "{min} {max}");
}

#[test]
fn short_documents_are_one_whole_text_shingle() {
    let t = TestDir::new();
    t.write("s1.txt", "Hello World foo")
        .write("s2.txt", "hello   world\tFOO\n")
        .write("s3.txt", "hello world bar")
        .write("s4.txt", "completely other words");
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 4);
    assert_eq!(cluster_paths(&report), vec![dots(&["s1.txt", "s2.txt"])]);
    let pair = &report["clusters"][0]["pairs"][0];
    assert_eq!(pair["similarity"], 1.0);
    assert_eq!(pair["exact"], false);
}

#[test]
fn byte_identical_files_form_an_exact_group() {
    let t = TestDir::new();
    let a = text(11, 200);
    t.write("one.txt", &a)
        .write("two.txt", &a)
        .write("three/three.txt", &a)
        .write("different.txt", text(12, 200));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    let stats = &report["stats"];
    assert_eq!(stats["exact_groups"], 1);
    assert_eq!(stats["documents"], 4);
    // Copies are grouped by content: only distinct contents go on to the candidate search.
    assert_eq!(stats["candidate_pairs"], 0);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["one.txt", "three/three.txt", "two.txt"])]
    );
    assert_well_formed_clusters(&report);
    let c = &report["clusters"][0];
    assert_eq!(c["min_similarity"], 1.0);
    assert_eq!(c["max_similarity"], 1.0);
    for p in c["pairs"].as_array().unwrap() {
        assert_eq!(p["exact"], true);
        assert_eq!(p["similarity"], 1.0);
    }
}

#[test]
fn exact_copies_and_near_duplicates_join_one_cluster() {
    let t = TestDir::new();
    let a = text(13, 300);
    t.write("a.txt", &a)
        .write("a-copy.txt", &a)
        .write("a-near.txt", edit(&a, &[150]));
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["exact_groups"], 1);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["a-copy.txt", "a-near.txt", "a.txt"])]
    );
    assert_well_formed_clusters(&report);
    assert_exact_similarities(&t, &report, word_jaccard);
    let mut exact: Vec<bool> = all_pairs(&report)
        .iter()
        .map(|p| p["exact"].as_bool().unwrap())
        .collect();
    exact.sort();
    assert_eq!(exact, vec![false, true]);
    let c = &report["clusters"][0];
    assert_eq!(c["max_similarity"], 1.0);
    assert!(c["min_similarity"].as_f64().unwrap() < 1.0);
}
