//! Results people can act on: cluster semantics, representatives (`--keep`), duplicates,
//! evidence (`--pairs`), `--min-similarity` and the safe removal list.

use std::collections::HashSet;
use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::util::{
    assert_well_formed_clusters, chain, cluster_paths, dots, edit, text, word_jaccard, TestDir,
};

fn duplicate_paths(cluster: &Value) -> Vec<String> {
    cluster["duplicates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_chain_is_one_component_and_two_strict_clusters() {
    let t = chain();
    let args = ["scan", "--cluster", "components", "--keep", "first", "."];
    let components = t.run(&args).json();
    assert_eq!(
        cluster_paths(&components),
        vec![dots(&["a.txt", "b.txt", "c.txt", "d.txt"])]
    );
    let c = &components["clusters"][0];
    assert_eq!(c["representative"]["path"], "./a.txt");
    // b was verified against a; c and d joined through the chain and are below the threshold
    // to a, so they are `linked`, never `duplicates`: their exact similarity shows the chain.
    assert_eq!(duplicate_paths(c), dots(&["b.txt"]));
    let dups = c["duplicates"].as_array().unwrap();
    assert_eq!(dups[0]["estimated"], false);
    assert!(dups[0]["similarity"].as_f64().unwrap() >= 0.8);
    let linked = c["linked"].as_array().unwrap();
    let linked_paths: Vec<&str> = linked.iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(linked_paths, ["./c.txt", "./d.txt"]);
    let a = fs::read_to_string(t.join("a.txt")).unwrap();
    for d in linked {
        let other = fs::read_to_string(t.join(d["path"].as_str().unwrap())).unwrap();
        assert_eq!(d["estimated"], false, "{d}");
        let want = word_jaccard(&a, &other, 5);
        assert!(want < 0.8, "{d}");
        assert!(
            (d["similarity"].as_f64().unwrap() - want).abs() < 1e-12,
            "{d}"
        );
    }

    let strict = t
        .run(&["scan", "--cluster", "strict", "--keep", "first", "."])
        .json();
    assert_eq!(strict["params"]["cluster"], "strict");
    assert_eq!(
        cluster_paths(&strict),
        vec![dots(&["a.txt", "b.txt"]), dots(&["c.txt", "d.txt"])]
    );
    for c in strict["clusters"].as_array().unwrap() {
        for d in c["duplicates"].as_array().unwrap() {
            assert_eq!(d["estimated"], false, "{d}");
            assert!(d["similarity"].as_f64().unwrap() >= 0.8, "{d}");
        }
    }

    // --min-similarity above the weakest link breaks the chain there (b ~ c, 6 words edited).
    let tight = t
        .run(&[
            "scan",
            "--cluster",
            "components",
            "--min-similarity",
            "0.85",
            ".",
        ])
        .json();
    assert_eq!(tight["params"]["min_similarity"], 0.85);
    assert_eq!(
        cluster_paths(&tight),
        vec![dots(&["a.txt", "b.txt"]), dots(&["c.txt", "d.txt"])]
    );
    for c in tight["clusters"].as_array().unwrap() {
        assert!(c["min_similarity"].as_f64().unwrap() >= 0.85, "{c}");
    }
}

#[test]
fn strict_clusters_hold_for_every_method() {
    let t = chain();
    for args in [
        &["--verify", "estimate"][..],
        &["--sketch", "kperm"],
        &["-m", "simhash", "--max-distance", "12"],
    ] {
        let r = t.run(&[&["scan", "--cluster", "strict"][..], args, &["."]].concat());
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        let report = r.json();
        for c in report["clusters"].as_array().unwrap() {
            let rep = c["representative"]["path"].as_str().unwrap();
            assert!(
                c["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["path"] == rep),
                "{args:?}: {c}"
            );
            for d in c["duplicates"].as_array().unwrap() {
                assert_eq!(d["estimated"], args[0] == "--verify", "{args:?}: {d}");
            }
        }
    }
}

#[test]
fn each_keep_policy_picks_the_expected_representative() {
    let t = TestDir::new();
    let base = text(141, 300);
    // Three near-copies: sizes differ through appended words, times are set by hand.
    t.write(
        "deep/er/path/long-copy.txt",
        format!("{base} extra words at the end"),
    )
    .write("b.txt", edit(&base, &[7]))
    .write("mid/c.txt", format!("{base} tail"));
    let set_time = |rel: &str, secs: u64| {
        let f = fs::File::options().write(true).open(t.join(rel)).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    set_time("deep/er/path/long-copy.txt", 1_000_000);
    set_time("b.txt", 3_000_000);
    set_time("mid/c.txt", 2_000_000);
    for (keep, expected) in [
        ("first", "./b.txt"),
        ("largest", "./deep/er/path/long-copy.txt"),
        ("smallest", "./b.txt"),
        ("newest", "./b.txt"),
        ("oldest", "./deep/er/path/long-copy.txt"),
        ("shortest-path", "./b.txt"),
    ] {
        for cluster in ["components", "strict"] {
            let r = t.run(&["scan", "--keep", keep, "--cluster", cluster, "."]);
            assert_eq!(r.code(), 0, "{}", r.stderr);
            let report = r.json();
            assert_eq!(report["params"]["keep"], keep);
            let c = &report["clusters"][0];
            assert_eq!(c["size"], 3, "{keep} {cluster}");
            assert_eq!(c["representative"]["path"], expected, "{keep} {cluster}");
            let dups = duplicate_paths(c);
            assert_eq!(dups.len(), 2);
            assert!(!dups.contains(&expected.to_string()), "{keep} {cluster}");
        }
    }
    // Middle sizes and times: mid/c.txt is neither largest nor smallest, newest nor oldest.
    let r = t.run(&["scan", "--keep", "newest", "."]).json();
    assert_eq!(
        duplicate_paths(&r["clusters"][0]),
        vec!["./deep/er/path/long-copy.txt", "./mid/c.txt"],
        "duplicates in path order"
    );
}

/// Word 5-shingles as sets of strings, independently of dupfind.
fn shingles(text: &str) -> HashSet<Vec<String>> {
    let toks: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    toks.windows(5).map(<[String]>::to_vec).collect()
}

#[test]
fn pairs_carry_their_evidence() {
    let t = chain();
    let report = t.run(&["scan", "--pairs", "."]).json();
    let c = &report["clusters"][0];
    let members: Vec<String> = c["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_string())
        .collect();
    let bands = report["params"]["bands"].as_u64().unwrap();
    for p in c["pairs"].as_array().unwrap() {
        let (a, b) = (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap());
        let ta = fs::read_to_string(t.join(&members[a as usize])).unwrap();
        let tb = fs::read_to_string(t.join(&members[b as usize])).unwrap();
        let shared = shingles(&ta).intersection(&shingles(&tb)).count() as u64;
        assert_eq!(p["shared_shingles"], shared, "{p}");
        let jac = p["jaccard"].as_f64().unwrap();
        assert!((jac - word_jaccard(&ta, &tb, 5)).abs() < 1e-12, "{p}");
        assert_eq!(p["similarity"], p["jaccard"], "exact verification: {p}");
        let est = p["estimate"].as_f64().unwrap();
        assert!((est - jac).abs() < 0.25, "{p}");
        assert!(p["band"].as_u64().unwrap() < bands, "{p}");
    }
    // With --pairs the sets are at hand, so every duplicate's similarity is exact.
    for d in c["duplicates"].as_array().unwrap() {
        assert_eq!(d["estimated"], false, "{d}");
    }
    // Without --pairs, no evidence fields.
    let plain = t.run(&["scan", "."]).json();
    assert!(plain["clusters"][0]["pairs"][0].get("jaccard").is_none());

    let sim = t
        .run(&[
            "scan",
            "--pairs",
            "-m",
            "simhash",
            "--max-distance",
            "12",
            ".",
        ])
        .json();
    let pieces = sim["params"]["pieces"].as_u64().unwrap();
    for p in super::util::all_pairs(&sim) {
        let d = p["distance"].as_u64().unwrap();
        assert_eq!(p["hamming"], d, "{p}");
        let cos = (std::f64::consts::PI * d as f64 / 64.0).cos();
        assert!((p["cosine"].as_f64().unwrap() - cos).abs() < 1e-12, "{p}");
        assert!(p["piece"].as_u64().unwrap() < pieces, "{p}");
        assert!(p["shared_shingles"].as_u64().unwrap() > 0, "{p}");
    }
}

#[test]
fn stats_count_unique_and_copied_documents_and_distinct_shingles() {
    let t = chain();
    t.write(
        "copy-of-a.txt",
        fs::read_to_string(t.join("a.txt")).unwrap(),
    )
    .write(
        "copy2-of-a.txt",
        fs::read_to_string(t.join("a.txt")).unwrap(),
    );
    let report = t.run(&["scan", "--cluster", "components", "."]).json();
    let s = &report["stats"];
    // a, b, c, d and two copies of a in one cluster; other.txt alone.
    assert_eq!(s["documents"], 7);
    assert_eq!(s["unique_documents"], 1);
    assert_eq!(s["clusters"], 1);
    assert_eq!(s["exact_copies"], 2);
    assert_eq!(s["near_copies"], 3);
    // Fewer than 4,096 distinct shingles: the sketch's count is exact.
    let mut all = HashSet::new();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt", "other.txt"] {
        all.extend(shingles(&fs::read_to_string(t.join(name)).unwrap()));
    }
    assert_eq!(s["distinct_shingles"], all.len() as u64);
    assert_eq!(s["distinct_shingles_error"], 0.0);
}

#[test]
fn a_copy_of_a_verified_duplicate_shares_its_exact_similarity() {
    // a ~ b verified; b-copy is byte-identical to b, so its similarity to a is b's, exactly,
    // not the signature estimate.
    let t = TestDir::new();
    let a = text(171, 300);
    let b = edit(&a, &[10, 150, 290]);
    t.write("a.txt", &a)
        .write("b.txt", &b)
        .write("b-copy.txt", &b);
    let r = t.run(&["scan", "."]).json();
    let c = &r["clusters"][0];
    assert_eq!(c["representative"]["path"], "./a.txt");
    let dups = c["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 2);
    let want = word_jaccard(&a, &b, 5);
    for d in dups {
        assert_eq!(d["estimated"], false, "{d}");
        assert_eq!(d["exact"], false, "{d}");
        assert!(
            (d["similarity"].as_f64().unwrap() - want).abs() < 1e-12,
            "{d}"
        );
    }
}

/// Every duplicate of every cluster, with the representative it would be removed in favour of,
/// checked against word 5-shingle Jaccard computed independently from the files.
fn assert_duplicates_reach_the_threshold(t: &TestDir, report: &Value, threshold: f64) {
    for c in report["clusters"].as_array().unwrap() {
        let rep =
            fs::read_to_string(t.join(c["representative"]["path"].as_str().unwrap())).unwrap();
        for d in c["duplicates"].as_array().unwrap() {
            let body = fs::read_to_string(t.join(d["path"].as_str().unwrap())).unwrap();
            let j = word_jaccard(&rep, &body, 5);
            assert!(
                j >= threshold,
                "{} is {j} to its representative: {c}",
                d["path"]
            );
        }
    }
}

#[test]
fn the_default_removal_list_holds_only_documents_verified_against_their_representative() {
    // a ~ b ~ c ~ d, no other pair at 0.8: whichever document represents a group, nothing
    // below the threshold to it may be listed for removal, under any policy or cluster mode.
    let t = chain();
    let set_time = |rel: &str, secs: u64| {
        let f = fs::File::options().write(true).open(t.join(rel)).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    // b is the oldest: the default keeps it, and a and c (both ~ b) are its duplicates.
    for (name, secs) in [
        ("a.txt", 3_000),
        ("b.txt", 1_000),
        ("c.txt", 2_000),
        ("d.txt", 4_000),
    ] {
        set_time(name, secs);
    }
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["params"]["cluster"], "strict");
    assert_eq!(report["params"]["keep"], "oldest");
    let c = &report["clusters"][0];
    assert_eq!(c["representative"]["path"], "./b.txt");
    assert_eq!(duplicate_paths(c), dots(&["a.txt", "c.txt"]));
    // d is ~ c only, and c is taken: d is linked to b's cluster through c, never a duplicate.
    assert_eq!(report["stats"]["clusters"], 1);
    assert_eq!(c["linked"][0]["path"], "./d.txt");
    assert_eq!(c["linked"].as_array().unwrap().len(), 1);
    assert_duplicates_reach_the_threshold(&t, &report, 0.8);

    for keep in [
        "first",
        "largest",
        "smallest",
        "newest",
        "oldest",
        "shortest-path",
    ] {
        for cluster in [
            &[][..],
            &["--cluster", "components"],
            &["--cluster", "strict"],
        ] {
            for method in [&[][..], &["--verify", "edit"], &["--sketch", "kperm"]] {
                let args = [&["scan", "--keep", keep][..], cluster, method, &["."]].concat();
                let r = t.run(&args);
                assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
                let report = r.json();
                // Edit verification judges by edit similarity, which a substituted word
                // lowers far less than Jaccard: the chain's ends are 0.97 alike by it.
                if method.is_empty() || method[0] != "--verify" {
                    assert_duplicates_reach_the_threshold(&t, &report, 0.8);
                }
                for c in report["clusters"].as_array().unwrap() {
                    for d in c["duplicates"].as_array().unwrap() {
                        assert_eq!(d["estimated"], false, "{args:?}: {d}");
                        assert!(d["similarity"].as_f64().unwrap() >= 0.8, "{args:?}: {d}");
                    }
                }
            }
        }
    }
}

#[test]
fn the_readme_removal_recipe_lists_only_safe_copies() {
    // The README's "what can I delete" (`--format paths`, the same as the JSON's duplicates):
    // every listed path is at J >= 0.8 to a kept file that is not itself listed.
    let t = chain();
    let r = t.run(&["scan", "--cluster", "components", "."]);
    let components = r.json();
    let listed: Vec<String> = components["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(duplicate_paths)
        .collect();
    assert_eq!(
        listed.len(),
        1,
        "only one of the chain is verified against the kept file"
    );
    for (report, mode) in [
        (components, "components"),
        (t.run(&["scan", "."]).json(), "strict"),
    ] {
        let paths = t.run(&["scan", "-q", "--cluster", mode, "--format", "paths", "."]);
        let listed: Vec<String> = (report["clusters"].as_array().unwrap().iter())
            .flat_map(duplicate_paths)
            .map(|p| format!("{p}\n"))
            .collect();
        assert_eq!(paths.stdout, listed.concat(), "{mode}");
        assert_duplicates_reach_the_threshold(&t, &report, 0.8);
        let kept: HashSet<String> = report["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["representative"]["path"].as_str().unwrap().to_string())
            .collect();
        for c in report["clusters"].as_array().unwrap() {
            for d in duplicate_paths(c) {
                assert!(!kept.contains(&d), "{d} is both kept and listed");
            }
        }
    }
}

#[test]
fn the_default_keeps_the_original_over_a_newer_copy_earlier_in_path_order() {
    let t = TestDir::new();
    let original = text(181, 300);
    t.write("zz-original.txt", &original).write(
        "aa-blog-copy.txt",
        format!("{original}\nshared from my blog"),
    );
    let set_time = |rel: &str, secs: u64| {
        let f = fs::File::options().write(true).open(t.join(rel)).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    set_time("zz-original.txt", 1_000_000);
    set_time("aa-blog-copy.txt", 2_000_000);
    let c = &t.run(&["scan", "."]).json()["clusters"][0];
    assert_eq!(c["representative"]["path"], "./zz-original.txt");
    assert_eq!(duplicate_paths(c), dots(&["aa-blog-copy.txt"]));
    // Same time: path order breaks the tie.
    set_time("zz-original.txt", 2_000_000);
    let c = &t.run(&["scan", "."]).json()["clusters"][0];
    assert_eq!(c["representative"]["path"], "./aa-blog-copy.txt");
}

#[test]
fn strict_cannot_be_asked_of_containment_which_defaults_to_components() {
    let t = chain();
    let r = t.run(&["scan", "--containment", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["params"]["cluster"], "components");
    let r = t.run(&["scan", "--containment", "--cluster", "strict", "."]);
    assert_eq!(r.code(), 2);
    assert!(
        r.stderr
            .contains("--cluster strict does not apply to --containment"),
        "{}",
        r.stderr
    );
}

/// a ~ b ~ c with a ≁ c, at exact word-5 Jaccard 276/316 (a, b: 4 words of 300 edited, each
/// changing 5 of the 296 shingles), 266/326 (b, c: 6 more words) and 246/346 (a, c), and an
/// unrelated document. Strict clustering in path order makes a a representative and b its
/// duplicate; c is below the threshold to a, and b, its only partner, is taken.
fn taken_partner(t: &TestDir, dir: &str) -> [String; 3] {
    let a = text(191, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    // The premise, computed independently of dupfind.
    assert_eq!(word_jaccard(&a, &b, 5), 276.0 / 316.0);
    assert_eq!(word_jaccard(&b, &c, 5), 266.0 / 326.0);
    assert_eq!(word_jaccard(&a, &c, 5), 246.0 / 346.0);
    t.write(format!("{dir}/a.txt"), &a)
        .write(format!("{dir}/b.txt"), &b)
        .write(format!("{dir}/c.txt"), &c)
        .write(format!("{dir}/other.txt"), text(192, 300));
    [a, b, c]
}

/// documents, clusters, unique_documents, exact_copies, near_copies.
fn document_counts(report: &Value) -> Vec<u64> {
    let s = &report["stats"];
    [
        "documents",
        "clusters",
        "unique_documents",
        "exact_copies",
        "near_copies",
    ]
    .iter()
    .map(|k| s[k].as_u64().unwrap())
    .collect()
}

#[test]
fn a_document_whose_only_partner_was_taken_is_linked_to_its_cluster() {
    let t = TestDir::new();
    taken_partner(&t, "in");
    let args = ["scan", "--keep", "first", "--pairs", "in"];
    let first = t.run(&args);
    assert_eq!(first.code(), 0, "{}", first.stderr);
    let report = first.json();
    assert_eq!(report["params"]["cluster"], "strict");
    assert_eq!(
        cluster_paths(&report),
        vec![vec!["in/a.txt", "in/b.txt", "in/c.txt"]]
    );
    let c = &report["clusters"][0];
    assert_eq!(c["representative"]["path"], "in/a.txt");
    assert_eq!(duplicate_paths(c), ["in/b.txt"]);
    assert_eq!(c["duplicates"][0]["similarity"], 276.0 / 316.0);
    // c is reported, never as a duplicate: linked, at its exact similarity to a.
    let linked = c["linked"].as_array().unwrap();
    assert_eq!(linked.len(), 1, "{c}");
    assert_eq!(linked[0]["path"], "in/c.txt");
    assert_eq!(linked[0]["similarity"], 246.0 / 346.0);
    assert_eq!(linked[0]["estimated"], false);
    // The evidence: a ~ b and the verified pair b ~ c that holds c.
    let pairs: Vec<(u64, u64, f64)> = (c["pairs"].as_array().unwrap().iter())
        .map(|p| {
            let (a, b) = (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap());
            assert_eq!(p["jaccard"], p["similarity"], "{p}");
            (a, b, p["similarity"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(pairs, [(0, 1, 276.0 / 316.0), (1, 2, 266.0 / 326.0)]);
    assert_eq!(c["min_similarity"], 266.0 / 326.0);
    assert_well_formed_clusters(&report);
    assert_eq!(document_counts(&report), [4, 1, 1, 0, 2]);

    let text = t.run(&["scan", "--keep", "first", "--format", "text", "in"]);
    assert!(
        text.stdout.contains("  link  in/c.txt  0.711\n"),
        "{}",
        text.stdout
    );

    // Never removable: not in the paths list, kept by the dataset.
    let paths = t.run(&["scan", "-q", "--keep", "first", "--format", "paths", "in"]);
    assert_eq!(paths.stdout, "in/b.txt\n");
    let r = t.run(&["scan", "--keep", "first", "--write-dataset", "out", "in"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let kept: Vec<String> = (fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap())
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].to_string())
        .collect();
    assert_eq!(
        kept,
        [r#""in/a.txt""#, r#""in/c.txt""#, r#""in/other.txt""#]
    );

    // The same bytes whatever the thread count.
    let one = t.run(&[&args[..], &["-j", "1"]].concat());
    let two = t.run(&[&args[..], &["-j", "2"]].concat());
    assert_eq!(one.stdout, first.stdout);
    assert_eq!(two.stdout, first.stdout);
}

#[test]
fn a_new_document_whose_indexed_partner_was_taken_is_linked_to_it() {
    // The index holds a and its duplicate b ([`taken_partner`]); the new documents are c (~ b
    // only) and m (one word of a edited: ~ a and ~ b, ≁ c). An indexed document represents its
    // cluster, so a does, with b, and m joins it; c, new and seen before as b's near-copy, must
    // be reported with b as its evidence.
    let t = TestDir::new();
    let [a, _, c] = taken_partner(&t, "old");
    fs::remove_file(t.join("old/c.txt")).unwrap();
    let m = edit(&a, &[2]);
    assert!(word_jaccard(&m, &c, 5) < 0.8);
    t.write("new/c.txt", &c).write("new/m.txt", &m);
    let built = t.run(&["index", "build", "old", "--index", "idx"]);
    assert_eq!(built.code(), 0, "{}", built.stderr);
    let args = [
        "scan",
        "new",
        "--against",
        "idx",
        "--pairs",
        "--keep",
        "first",
    ];
    let first = t.run(&args);
    assert_eq!(first.code(), 0, "{}", first.stderr);
    let report = first.json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec!["old/a.txt", "old/b.txt", "new/c.txt", "new/m.txt"]],
        "indexed members first"
    );
    let cl = &report["clusters"][0];
    assert_eq!(cl["representative"]["path"], "old/a.txt");
    assert_eq!(duplicate_paths(cl), ["old/b.txt", "new/m.txt"]);
    let linked = cl["linked"].as_array().unwrap();
    assert_eq!(linked.len(), 1, "{cl}");
    assert_eq!(linked[0]["path"], "new/c.txt");
    assert_eq!(linked[0]["similarity"], 246.0 / 346.0);
    // Its evidence is its pair with the indexed b (members 1 and 2).
    let held: Vec<&Value> = (cl["pairs"].as_array().unwrap().iter())
        .filter(|p| p["b"] == 2)
        .collect();
    assert_eq!(held.len(), 1, "{cl}");
    assert_eq!(held[0]["a"], 1);
    assert_eq!(held[0]["jaccard"], 266.0 / 326.0);
    assert_well_formed_clusters(&report);
    // Counted over the new documents: a represents, so m and c are both near copies.
    assert_eq!(document_counts(&report), [2, 1, 0, 0, 2]);
    let paths = t.run(&[
        "scan",
        "new",
        "--against",
        "idx",
        "--keep",
        "first",
        "--format",
        "paths",
    ]);
    assert_eq!(paths.stdout, "new/m.txt\n", "{}", paths.stderr);
    for j in ["1", "2"] {
        assert_eq!(
            t.run(&[&args[..], &["-j", j]].concat()).stdout,
            first.stdout
        );
    }
}
