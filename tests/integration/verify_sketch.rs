//! Other verifications and sketches: `--verify edit` (token edit similarity, with its Jaccard
//! fallback over the token cap) and `--sketch bottom-k` (the estimates).

use serde_json::{json, Value};

use super::util::schema::assert_schema;
use super::util::{all_pairs, cluster_paths, dots, edit, text, word_jaccard, TestDir};

/// LCS / longer over the whitespace tokens, by the textbook dynamic programme: an edit
/// similarity computed independently of dupfind.
fn token_edit_similarity(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    let mut prev = vec![0usize; b.len() + 1];
    for x in &a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    prev[b.len()] as f64 / a.len().max(b.len()) as f64
}

/// The first `n` words of `text`, one line.
fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

fn sim(v: &Value) -> f64 {
    v["similarity"].as_f64().unwrap()
}

/// Equal up to the last bit or two (serde_json's default float parsing is not correctly
/// rounded).
fn assert_close(actual: &Value, expected: f64) {
    let a = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{actual} is no number"));
    assert!((a - expected).abs() < 1e-12, "{a} != {expected}");
}

#[test]
fn edit_verification_accepts_a_few_changed_words() {
    let t = TestDir::new();
    let a = text(201, 300);
    t.write("a.txt", &a)
        .write("b.txt", edit(&a, &[40, 200]))
        .write("other.txt", text(202, 300));
    let r = t.run(&["scan", "--verify", "edit", "--pairs", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_schema(&report);
    assert_eq!(report["params"]["verify"], "edit");
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
    let stats = &report["stats"];
    assert_eq!(
        (
            &stats["candidate_pairs"],
            &stats["verified_pairs"],
            &stats["edit_fallbacks"]
        ),
        (&json!(1), &json!(1), &json!(0))
    );
    // Two substituted words of 300: the common subsequence is the other 298.
    let pair = all_pairs(&report)[0];
    assert_close(&pair["similarity"], 298.0 / 300.0);
    assert_close(&pair["edit_similarity"], 298.0 / 300.0);
    let j = word_jaccard(&a, &edit(&a, &[40, 200]), 5);
    assert!(
        (pair["jaccard"].as_f64().unwrap() - j).abs() < 1e-12,
        "{pair} {j}"
    );
    let dup = &report["clusters"][0]["duplicates"][0];
    assert_close(&dup["similarity"], 298.0 / 300.0);
    assert_eq!(dup["estimated"], false);

    // Other scans carry no edit_fallbacks.
    let plain = t.run(&["scan", "."]).json();
    assert!(
        plain["stats"].get("edit_fallbacks").is_none(),
        "{}",
        plain["stats"]
    );
    // The same bytes whatever the thread count.
    let one = t.run(&["scan", "--verify", "edit", "--pairs", "-j", "1", "."]);
    let two = t.run(&["scan", "--verify", "edit", "--pairs", "-j", "2", "."]);
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stdout, r.stdout);
}

#[test]
fn edit_verification_rejects_swapped_halves_that_jaccard_accepts() {
    let t = TestDir::new();
    let a = text(211, 1000);
    let w: Vec<&str> = a.split_whitespace().collect();
    let swapped = [&w[500..], &w[..500]].concat().join(" ");
    let edited = edit(&a, &[100, 700]);
    // The premise, computed independently: nearly every shingle survives the swap, but only
    // half of the order does.
    assert!(word_jaccard(&a, &swapped, 5) >= 0.98);
    assert!(word_jaccard(&edited, &swapped, 5) >= 0.95);
    let halves = token_edit_similarity(&a, &swapped);
    assert!((0.5..0.52).contains(&halves), "{halves}");
    assert_eq!(token_edit_similarity(&a, &edited), 0.998);
    // Paths sort as a-edited.txt, a.txt, swapped.txt.
    t.write("a.txt", &a)
        .write("a-edited.txt", &edited)
        .write("swapped.txt", &swapped);

    let jaccard = t.run(&["scan", "."]).json();
    assert_eq!(
        cluster_paths(&jaccard),
        vec![dots(&["a-edited.txt", "a.txt", "swapped.txt"])]
    );

    for cluster in ["components", "strict"] {
        let r = t.run(&["scan", "--verify", "edit", "--cluster", cluster, "."]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let report = r.json();
        assert_eq!(
            cluster_paths(&report),
            vec![dots(&["a-edited.txt", "a.txt"])],
            "{cluster}"
        );
        let c = &report["clusters"][0];
        assert_close(&c["min_similarity"], 0.998);
        assert_close(&c["duplicates"][0]["similarity"], 0.998);
        // All three pairs are candidates; one passes, and the two with the swapped copy fail
        // once each and are never checked again.
        let stats = &report["stats"];
        assert_eq!(
            (
                &stats["candidate_pairs"],
                &stats["verified_pairs"],
                &stats["edit_fallbacks"]
            ),
            (&json!(3), &json!(1), &json!(0)),
            "{cluster}"
        );
    }

    // --min-similarity above 0.998 leaves nothing.
    let r = t.run(&["scan", "--verify", "edit", "--min-similarity", "0.999", "."]);
    let report = r.json();
    assert_eq!(report["params"]["min_similarity"], 0.999);
    assert_eq!(report["stats"]["clusters"], 0);
    assert_eq!(report["stats"]["verified_pairs"], 0);
}

#[test]
fn pairs_over_the_token_cap_fall_back_to_jaccard_and_are_counted() {
    let t = TestDir::new();
    // 20,100 tokens (over the cap of 20,000) against a cut of 19,990 with two words edited:
    // the longer one is over the cap, so the pair is judged by Jaccard.
    let big = text(221, 20_100);
    let cut = first_words(&edit(&big, &[5_000, 15_000]), 19_990);
    let small = text(222, 300);
    let small_edited = edit(&small, &[100]);
    t.write("big.txt", &big)
        .write("big-cut.txt", &cut)
        .write("small.txt", &small)
        .write("small-edited.txt", &small_edited);
    let j = word_jaccard(&big, &cut, 5);
    assert!((0.98..1.0).contains(&j), "{j}");

    for cluster in ["components", "strict"] {
        let r = t.run(&[
            "scan",
            "--verify",
            "edit",
            "--pairs",
            "--cluster",
            cluster,
            ".",
        ]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let report = r.json();
        assert_schema(&report);
        assert_eq!(
            cluster_paths(&report),
            vec![
                dots(&["big-cut.txt", "big.txt"]),
                dots(&["small-edited.txt", "small.txt"])
            ],
            "{cluster}"
        );
        let stats = &report["stats"];
        assert_eq!(
            (
                &stats["candidate_pairs"],
                &stats["verified_pairs"],
                &stats["edit_fallbacks"]
            ),
            (&json!(2), &json!(2), &json!(1)),
            "{cluster}"
        );
        let pairs = all_pairs(&report);
        // The big pair: Jaccard, with no edit similarity in the evidence.
        assert!((sim(pairs[0]) - j).abs() < 1e-12, "{}", pairs[0]);
        assert_eq!(pairs[0]["jaccard"], pairs[0]["similarity"]);
        assert!(pairs[0].get("edit_similarity").is_none(), "{}", pairs[0]);
        // The small pair: edit similarity.
        assert_close(&pairs[1]["similarity"], 299.0 / 300.0);
        assert_close(&pairs[1]["edit_similarity"], 299.0 / 300.0);
    }
}

/// Three standard errors of a Jaccard estimate from k values, plus one value of rounding.
fn three_sigma(j: f64, k: f64) -> f64 {
    3.0 * (j * (1.0 - j) / k).sqrt() + 1.0 / k
}

#[test]
fn bottom_k_estimates_are_within_three_standard_errors_of_exact_jaccard() {
    let t = TestDir::new();
    // Long documents: ~2,000 shingles each, far more than k = 128.
    let long = text(231, 2000);
    let long_edited = edit(&long, &(0..20).map(|i| 50 + 100 * i).collect::<Vec<_>>());
    // Short documents: fewer shingles than k, so the sketches are the whole sets and the
    // estimate is exact (a MinHash signature gives a multiple of 1/128 instead).
    let short = text(232, 60);
    let short_edited = edit(&short, &[30]);
    t.write("long.txt", &long)
        .write("long-edited.txt", &long_edited)
        .write("short.txt", &short)
        .write("short-edited.txt", &short_edited);
    let j_long = word_jaccard(&long, &long_edited, 5);
    let j_short = word_jaccard(&short, &short_edited, 5);
    assert_eq!(j_short, 51.0 / 61.0);
    assert!((0.85..0.95).contains(&j_long), "{j_long}");

    // Enough bands that both pairs are surely candidates.
    let args = "scan --sketch bottom-k --verify estimate --bands 32 --rows 4 --pairs .";
    let r = t.run(&args.split_whitespace().collect::<Vec<_>>());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_schema(&report);
    assert_eq!(report["params"]["sketch"], "bottom-k");
    assert_eq!(report["params"]["verify"], "estimate");
    assert_eq!(
        cluster_paths(&report),
        vec![
            dots(&["long-edited.txt", "long.txt"]),
            dots(&["short-edited.txt", "short.txt"])
        ]
    );
    let pairs = all_pairs(&report);
    let e_long = sim(pairs[0]);
    assert!(
        (e_long - j_long).abs() <= three_sigma(j_long, 128.0),
        "{e_long} vs {j_long}"
    );
    assert_eq!(pairs[0]["estimate"], pairs[0]["similarity"]);
    assert!((pairs[0]["jaccard"].as_f64().unwrap() - j_long).abs() < 1e-12);
    assert_close(&pairs[1]["similarity"], j_short);
    for c in report["clusters"].as_array().unwrap() {
        assert_eq!(c["duplicates"][0]["estimated"], true, "{c}");
    }

    // With exact verification bottom-k still gives every estimate: the --pairs estimate of the
    // short pair is its exact Jaccard.
    let exact = t
        .run(&["scan", "--sketch", "bottom-k", "--pairs", "."])
        .json();
    assert_eq!(exact["params"]["verify"], "exact");
    let pairs = all_pairs(&exact);
    assert_close(&pairs[1]["estimate"], j_short);
    assert_eq!(pairs[1]["estimate"], pairs[1]["similarity"]);

    let one = t.run(&[
        "scan", "--sketch", "bottom-k", "--verify", "estimate", "-j", "1", ".",
    ]);
    let two = t.run(&[
        "scan", "--sketch", "bottom-k", "--verify", "estimate", "-j", "2", ".",
    ]);
    assert_eq!(one.stdout, two.stdout);
}

#[test]
fn params_name_the_edit_verification_and_the_bottom_k_sketch() {
    let t = TestDir::new();
    let a = text(241, 300);
    t.write("a.txt", &a).write("b.txt", edit(&a, &[7]));
    let r = t.run(&[
        "scan", "--verify", "edit", "--sketch", "bottom-k", "-k", "64", "--bands", "16", "--rows",
        "4", ".",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_schema(&report);
    assert_eq!(
        report["params"],
        json!({
            "method": "minhash", "shingle": "word", "ngram": 5, "sketch": "bottom-k",
            "num_perm": 64, "bands": 16, "rows": 4, "threshold": 0.8, "verify": "edit",
            "seed": 0, "cluster": "strict", "keep": "oldest"
        })
    );
    assert_close(
        &report["clusters"][0]["duplicates"][0]["similarity"],
        299.0 / 300.0,
    );
    for flags in [["--verify", "edit"], ["--sketch", "bottom-k"]] {
        let r = t.run(&["scan", "-m", "simhash", flags[0], flags[1], "."]);
        assert_eq!(r.code(), 2, "{flags:?}");
        assert!(r.stdout.is_empty());
        assert!(r.stderr.contains(flags[0]), "{}", r.stderr);
    }
}
