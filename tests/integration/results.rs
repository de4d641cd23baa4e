//! Results people can act on: cluster semantics, representatives (`--keep`), duplicates,
//! evidence (`--pairs`), `--min-similarity` and the safe removal list.

use std::collections::HashSet;
use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::util::{chain, cluster_paths, dots, edit, text, word_jaccard, TestDir};

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
    // d is ~ c only, and c is taken: d stays, in no cluster.
    assert_eq!(report["stats"]["clusters"], 1);
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
