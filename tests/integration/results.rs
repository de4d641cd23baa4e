//! Results people can act on: cluster semantics, representatives (`--keep`), duplicates,
//! evidence (`--pairs`), `--min-similarity`, `--exit-code` and `--format text`.

use std::collections::HashSet;
use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::util::{cluster_paths, dots, edit, text, word_jaccard, TestDir};

/// A chain a ~ b ~ c ~ d: each neighbour pair at J ≥ 0.8, every other pair below.
fn chain() -> TestDir {
    let t = TestDir::new();
    let a = text(131, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    let d = edit(&c, &[2, 40, 80, 120]);
    let docs = [&a, &b, &c, &d];
    // The premise, computed independently of dupfind.
    for i in 0..4 {
        for j in i + 1..4 {
            let jac = word_jaccard(docs[i], docs[j], 5);
            assert_eq!(jac >= 0.8, j == i + 1, "{i} {j}: {jac}");
        }
    }
    t.write("a.txt", &a)
        .write("b.txt", &b)
        .write("c.txt", &c)
        .write("d.txt", &d)
        .write("other.txt", text(132, 300));
    t
}

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
fn exit_code_reports_whether_duplicates_were_found() {
    let t = chain();
    let r = t.run(&["scan", "--exit-code", "."]);
    assert_eq!(r.code(), 1, "{}", r.stderr);
    // Strict clusters by default: a ~ b and c ~ d.
    assert_eq!(
        r.json()["stats"]["clusters"],
        2,
        "the report is still printed"
    );
    assert_eq!(t.run(&["scan", "."]).code(), 0, "opt-in only");

    let lone = TestDir::new();
    lone.write("a.txt", text(1, 200))
        .write("b.txt", text(2, 200));
    assert_eq!(lone.run(&["scan", "--exit-code", "."]).code(), 0);
    // An unreadable input wins: status 2, whatever was found.
    let r = t.run(&["scan", "--exit-code", ".", "missing-root"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
}

#[test]
fn text_format_is_one_block_per_cluster() {
    let t = chain();
    t.write(
        "copy-of-a.txt",
        fs::read_to_string(t.join("a.txt")).unwrap(),
    );
    let r = t.run(&[
        "scan",
        "--format",
        "text",
        "--cluster",
        "components",
        "--keep",
        "first",
        ".",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "cluster 1 of 1: 5 documents, similarity 0.816 to 1.000"
    );
    assert!(lines[1].starts_with("  keep  ./a.txt  ("), "{}", r.stdout);
    let (a, b) = (
        fs::read_to_string(t.join("a.txt")).unwrap(),
        fs::read_to_string(t.join("b.txt")).unwrap(),
    );
    assert_eq!(
        lines[2],
        format!("  dup   ./b.txt  {:.3}", word_jaccard(&a, &b, 5))
    );
    assert_eq!(lines[3], "  dup   ./copy-of-a.txt  1.000 exact");
    // c and d joined through b, below the threshold to a: linked, with their exact similarity.
    let c = fs::read_to_string(t.join("c.txt")).unwrap();
    assert_eq!(
        lines[4],
        format!("  link  ./c.txt  {:.3}", word_jaccard(&a, &c, 5))
    );
    assert!(lines[5].starts_with("  link  ./d.txt  0."), "{}", r.stdout);
    assert_eq!(
        lines.last().unwrap(),
        &"1 cluster, 2 duplicates among 6 documents (1 exact group); 0 unreadable"
    );
    assert!(!r.stdout.contains('\x1b'), "no colour into a pipe");

    let coloured = t.run(&["scan", "--format", "text", "--color", "always", "."]);
    assert!(
        coloured.stdout.contains("\x1b[1;32mkeep\x1b[0m"),
        "{}",
        coloured.stdout
    );
    let mut cmd = t.command(&["scan", "--format", "text", "--color", "auto", "."]);
    cmd.env("NO_COLOR", "1");
    let out = cmd.output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
}

#[test]
fn completions_and_man_pages_come_from_the_same_definitions() {
    let t = TestDir::new();
    for (shell, marker) in [
        ("bash", "_dupfind()"),
        ("zsh", "#compdef dupfind"),
        ("fish", "complete -c dupfind"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let r = t.run(&["completions", shell]);
        assert_eq!(r.code(), 0, "{shell}: {}", r.stderr);
        assert!(r.stdout.contains(marker), "{shell}: {}", r.stdout);
        assert!(
            r.stdout.contains("min-similarity"),
            "{shell} completes scan's flags"
        );
        assert_eq!(r.stderr, "");
    }
    let r = t.run(&["completions", "tcsh"]);
    assert_eq!(r.code(), 2);

    let top = t.run(&["man"]);
    assert_eq!(top.code(), 0, "{}", top.stderr);
    assert!(top.stdout.contains(".TH dupfind 1"), "{}", top.stdout);
    assert!(top.stdout.contains("completions"), "lists the subcommands");
    let scan = t.run(&["man", "scan"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    assert!(
        scan.stdout.contains(".TH dupfind-scan 1"),
        "{}",
        scan.stdout
    );
    for flag in ["min\\-similarity", "exit\\-code", "cluster", "keep"] {
        assert!(scan.stdout.contains(flag), "man scan documents --{flag}");
    }
    let bad = t.run(&["man", "nope"]);
    assert_eq!(bad.code(), 2);
    assert!(
        bad.stderr.contains("no subcommand \"nope\""),
        "{}",
        bad.stderr
    );
    assert_eq!(bad.stdout, "");
}

#[test]
fn explain_prints_the_curve_scan_uses() {
    let t = TestDir::new();
    let r = t.run(&["explain", "--format", "json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let e = r.json();
    assert_eq!(
        (e["kind"].as_str(), e["bands"].as_u64(), e["rows"].as_u64()),
        (Some("minhash"), Some(19), Some(6))
    );
    // The banding scan chooses for the same settings.
    let corpus = TestDir::new();
    corpus.write("a.txt", text(1, 100));
    let scanned = corpus.run(&["scan", "."]).json();
    assert_eq!(scanned["params"]["bands"], e["bands"]);
    assert_eq!(scanned["params"]["rows"], e["rows"]);
    let curve = e["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 10);
    for p in curve {
        let s = p["similarity"].as_f64().unwrap();
        let closed = 1.0 - (1.0 - s.powi(6)).powi(19);
        assert!(
            (p["probability"].as_f64().unwrap() - closed).abs() < 1e-12,
            "{p}"
        );
    }
    assert_eq!(e["values_unused"], 14);

    let r = t.run(&[
        "explain", "-k", "128", "--bands", "10", "--rows", "5", "--format", "json",
    ]);
    let e = r.json();
    assert_eq!(e["values_unused"], 78);
    assert!(e["warnings"][0].as_str().unwrap().contains("unused"), "{e}");
    let text_out = t.run(&["explain", "--bands", "10", "--rows", "5"]);
    assert!(
        text_out.stdout.contains("78 signature values are UNUSED"),
        "{}",
        text_out.stdout
    );

    let sim = t
        .run(&[
            "explain",
            "-m",
            "simhash",
            "--max-distance",
            "3",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(sim["tables"], 4);
    assert_eq!(sim["curve"][3]["probability"], 1.0);
    assert!(sim["curve"][4]["probability"].as_f64().unwrap() < 1.0);

    for bad in [
        &["explain", "-t", "2"][..],
        &["explain", "--bands", "100", "--rows", "100"],
        &["explain", "-m", "simhash", "-t", "0.9"],
    ] {
        let r = t.run(bad);
        assert_eq!(r.code(), 2, "{bad:?}");
        assert_eq!(r.stdout, "", "{bad:?}");
    }

    // scan says so when the curve is poor at the threshold.
    let r = corpus.run(&["scan", "--bands", "2", "--rows", "20", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("false-negative probability > 5% at threshold + 0.05"),
        "{}",
        r.stderr
    );
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
    // The README's "what can I delete": every listed path is at J >= 0.8 to a kept file that is
    // not itself listed.
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
    for report in [components, t.run(&["scan", "."]).json()] {
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
