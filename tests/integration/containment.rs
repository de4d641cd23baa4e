//! `--containment`: documents mostly contained in a larger one (an excerpt in its source), each
//! pair with its direction, clusters represented by their container, and the flags it rejects.

use std::collections::HashSet;
use std::fs;

use serde_json::Value;

use super::util::schema::{assert_jsonl_schema, assert_schema};
use super::util::{cluster_paths, dots, edit, text, word_jaccard, TestDir};

/// Words `from..to` of `doc`, one line: a contiguous excerpt.
fn excerpt(doc: &str, from: usize, to: usize) -> String {
    let words: Vec<&str> = doc.split_whitespace().collect();
    words[from..to].join(" ") + "\n"
}

/// The word n-shingle set as dupfind normalizes text (lowercase, split at white space).
fn shingles(doc: &str, n: usize) -> HashSet<Vec<String>> {
    let toks: Vec<String> = doc.split_whitespace().map(str::to_lowercase).collect();
    if toks.len() < n {
        return HashSet::from([toks]);
    }
    toks.windows(n).map(<[String]>::to_vec).collect()
}

/// Containment of the smaller shingle set in the larger, computed independently of dupfind, and
/// the two set sizes.
fn word_containment(a: &str, b: &str) -> (f64, usize, usize) {
    let (sa, sb) = (shingles(a, 5), shingles(b, 5));
    let common = sa.intersection(&sb).count();
    (
        common as f64 / sa.len().min(sb.len()) as f64,
        sa.len(),
        sb.len(),
    )
}

/// A 1,000-word source, the middle 30 % of it as an excerpt, and three unrelated documents.
fn source_and_excerpt() -> TestDir {
    let t = TestDir::new();
    let source = text(501, 1000);
    let part = excerpt(&source, 350, 650);
    // The premise: contained whole, but far below the Jaccard threshold.
    let (c, small, large) = word_containment(&part, &source);
    assert_eq!((c, small, large), (1.0, 296, 996));
    assert!(word_jaccard(&part, &source, 5) < 0.3);
    t.write("source.txt", &source)
        .write("excerpt.txt", &part)
        .write("other1.txt", text(502, 400))
        .write("other2.txt", text(503, 1000))
        .write("other3.txt", text(504, 250));
    t
}

/// `v` is the number `x` (serde_json reads floats to within an ulp, not always exactly).
fn assert_close(v: &Value, x: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"));
    assert!((got - x).abs() < 1e-12, "{got} != {x}");
}

/// A `--containment` scan; ties between containers of one size go to path order (`--keep
/// first`) unless `extra` names another policy.
fn containment_scan(t: &TestDir, extra: &[&str]) -> Value {
    let keep: &[&str] = if extra.contains(&"--keep") {
        &[]
    } else {
        &["--keep", "first"]
    };
    let r = t.run(&[&["scan", "--containment"][..], keep, extra, &["."]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.warnings().is_empty(), "{}", r.stderr);
    r.json()
}

/// Every pair names its contained and container member, the contained one being the smaller
/// set, and its containment is the one computed independently from the files, at least
/// `threshold`.
fn assert_directed_pairs(t: &TestDir, report: &Value, threshold: f64) {
    for c in report["clusters"].as_array().unwrap() {
        let members = c["members"].as_array().unwrap();
        let read = |i: &Value| {
            let path = members[i.as_u64().unwrap() as usize]["path"]
                .as_str()
                .unwrap();
            fs::read_to_string(t.join(path)).unwrap()
        };
        for p in c["pairs"].as_array().unwrap() {
            let (a, b) = (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap());
            let (inner, outer) = (&p["contained"], &p["container"]);
            let ends = [inner.as_u64().unwrap(), outer.as_u64().unwrap()];
            assert!(ends == [a, b] || ends == [b, a], "{p}");
            let (expected, small, large) = word_containment(&read(inner), &read(outer));
            assert!(
                small <= large,
                "the contained document is the smaller set: {p}"
            );
            assert_close(&p["containment"], expected);
            assert_eq!(p["similarity"], p["containment"], "{p}");
            assert!(expected >= threshold, "{p}");
        }
    }
}

#[test]
fn an_excerpt_of_30_percent_is_found_inside_its_source_with_the_direction() {
    let t = source_and_excerpt();
    let report = containment_scan(&t, &[]);
    assert_schema(&report);
    assert_eq!(report["params"]["containment"], true);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["excerpt.txt", "source.txt"])]
    );
    let c = &report["clusters"][0];
    // The container represents the cluster; the excerpt is contained in it, whole.
    assert_eq!(c["representative"]["path"], "./source.txt");
    let dups = c["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 1);
    assert_eq!(dups[0]["path"], "./excerpt.txt");
    assert_eq!(dups[0]["containment"], 1.0);
    assert_eq!(dups[0]["estimated"], false);
    let pairs = c["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0]["contained"], 0, "members[0] is the excerpt");
    assert_eq!(pairs[0]["container"], 1, "members[1] is the source");
    assert_eq!(pairs[0]["containment"], 1.0);
    assert_directed_pairs(&t, &report, 0.8);
    let s = &report["stats"];
    assert_eq!(
        (&s["clusters"], &s["verified_pairs"], &s["unique_documents"]),
        (&1.into(), &1.into(), &3.into())
    );
}

#[test]
fn without_containment_the_excerpt_is_not_a_duplicate() {
    let t = source_and_excerpt();
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert!(report["params"].get("containment").is_none(), "{report}");
    assert_eq!(report["stats"]["clusters"], 0);
    assert!(report["clusters"].as_array().unwrap().is_empty());
}

/// Two sources with excerpts, an equal-size near copy, a document half of which comes from a
/// source (containment 0.75) and an unrelated one.
fn library() -> TestDir {
    let t = TestDir::new();
    let a = text(511, 800);
    let b = text(512, 600);
    let c = text(514, 300);
    let half = excerpt(&b, 150, 450) + &text(513, 100);
    let docs = [
        ("a.txt", a.clone()),
        ("a-mid.txt", excerpt(&a, 280, 520)),
        ("a-start.txt", excerpt(&a, 0, 160)),
        (
            "a-edited-excerpt.txt",
            excerpt(&edit(&a, &[450, 600]), 400, 700),
        ),
        ("b.txt", b.clone()),
        ("b-half-new.txt", half.clone()),
        ("c.txt", c.clone()),
        ("c-edit.txt", edit(&c, &[150])),
        ("u.txt", text(515, 500)),
    ];
    // The premises, independently of dupfind.
    let (edited, _, _) = word_containment(&docs[3].1, &a);
    assert!(edited > 0.95 && edited < 1.0, "{edited}");
    let (halfway, small, large) = word_containment(&half, &b);
    assert_eq!((small, large), (396, 596));
    assert!(halfway > 0.74 && halfway < 0.75, "{halfway}");
    assert_eq!(word_containment(&docs[7].1, &c).0, 291.0 / 296.0);
    for (name, body) in &docs {
        t.write(name, body);
    }
    t
}

#[test]
fn a_library_gives_exact_clusters_pairs_and_representatives() {
    let t = library();
    let report = containment_scan(&t, &["--pairs"]);
    assert_schema(&report);
    assert_eq!(
        cluster_paths(&report),
        vec![
            dots(&["a-edited-excerpt.txt", "a-mid.txt", "a-start.txt", "a.txt"]),
            dots(&["c-edit.txt", "c.txt"]),
        ]
    );
    assert_eq!(report["stats"]["clusters"], 2);
    assert_eq!(report["stats"]["near_copies"], 4);
    assert_eq!(report["stats"]["unique_documents"], 3);
    let clusters = report["clusters"].as_array().unwrap();
    assert_eq!(clusters[0]["pairs"].as_array().unwrap().len(), 3);
    assert_eq!(clusters[1]["pairs"].as_array().unwrap().len(), 1);
    assert_directed_pairs(&t, &report, 0.8);

    // Each cluster is represented by its container, and every duplicate's containment in it is
    // exact (the sets are loaded for --pairs).
    assert_eq!(clusters[0]["representative"]["path"], "./a.txt");
    let a = fs::read_to_string(t.join("a.txt")).unwrap();
    for d in clusters[0]["duplicates"].as_array().unwrap() {
        let body = fs::read_to_string(t.join(d["path"].as_str().unwrap())).unwrap();
        assert_close(&d["containment"], word_containment(&body, &a).0);
        assert_eq!(d["estimated"], false, "{d}");
    }
    // Equal sizes: the representative is the first in --keep order (path), and the pair's
    // contained document is the later one in path order.
    assert_eq!(clusters[1]["representative"]["path"], "./c-edit.txt");
    let p = &clusters[1]["pairs"][0];
    assert_eq!((&p["contained"], &p["container"]), (&1.into(), &0.into()));
    assert_close(&p["containment"], 291.0 / 296.0);

    // A lower threshold takes in the document half made of b (containment 0.747).
    let low = containment_scan(&t, &["-t", "0.7"]);
    assert_eq!(low["stats"]["clusters"], 3);
    assert_eq!(cluster_paths(&low)[1], dots(&["b-half-new.txt", "b.txt"]));
    assert_eq!(low["clusters"][1]["representative"]["path"], "./b.txt");
    assert_eq!(low["clusters"][1]["pairs"][0]["contained"], 0);
    assert_directed_pairs(&t, &low, 0.7);
}

#[test]
fn an_excerpt_of_12_percent_is_found() {
    let t = TestDir::new();
    let source = text(521, 2000);
    let part = excerpt(&source, 900, 1140);
    assert_eq!(word_containment(&part, &source), (1.0, 236, 1996));
    t.write("source.txt", &source)
        .write("part.txt", &part)
        .write("other.txt", text(522, 2000));
    let report = containment_scan(&t, &[]);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["part.txt", "source.txt"])]
    );
    assert_eq!(report["clusters"][0]["pairs"][0]["contained"], 0);
}

#[test]
fn evidence_shows_the_low_jaccard_of_an_excerpt() {
    let t = source_and_excerpt();
    let report = containment_scan(&t, &["--pairs"]);
    let p = &report["clusters"][0]["pairs"][0];
    assert_eq!(p["shared_shingles"], 296);
    assert_close(&p["jaccard"], 296.0 / 996.0);
    assert_eq!(p["containment"], 1.0);
    assert!(p["estimate"].as_f64().unwrap() < 0.5, "{p}");
    assert!(p["band"].is_u64(), "{p}");
}

#[test]
fn jsonl_and_text_carry_the_direction() {
    let t = source_and_excerpt();
    let r = t.run(&["scan", "--containment", "--format", "jsonl", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let records = r.jsonl();
    assert_jsonl_schema(&records);
    assert_eq!(records[0]["params"]["containment"], true);
    let clusters: Vec<&Value> = records.iter().filter(|r| r["type"] == "cluster").collect();
    assert_eq!(clusters.len(), 1);
    let p = &clusters[0]["pairs"][0];
    assert_eq!((&p["contained"], &p["container"]), (&0.into(), &1.into()));

    let r = t.run(&["scan", "--containment", "--format", "text", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("cluster 1 of 1: 2 documents, containment 1.000 to 1.000\n"),
        "{}",
        r.stdout
    );
    let size = fs::metadata(t.join("source.txt")).unwrap().len();
    let keep = format!(
        "  keep  ./source.txt  {}\n",
        super::util::size_in_words(size)
    );
    assert!(r.stdout.contains(&keep), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("  dup   ./excerpt.txt  1.000 contained in keep\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn the_note_states_the_recall_bound() {
    let t = source_and_excerpt();
    let r = t.run(&["scan", "-v", "--containment", "."]);
    assert!(
        r.stderr.contains(
            "a pair at the threshold with a size ratio up to 10 becomes a candidate with \
             probability at least 0.9999"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn thread_count_does_not_change_a_byte_with_containment() {
    let t = library();
    let one = t.run(&["scan", "--containment", "--pairs", "-j1", "."]);
    let two = t.run(&["scan", "--containment", "--pairs", "-j2", "."]);
    assert_eq!(one.code(), 0, "{}", one.stderr);
    assert_eq!(one.stdout, two.stdout);
}

#[test]
fn flags_that_make_no_sense_with_containment_are_rejected() {
    let t = source_and_excerpt();
    for (args, says) in [
        (
            &["-m", "simhash"][..],
            "--containment applies to --method minhash",
        ),
        (
            &["--verify", "estimate"],
            "--containment needs --verify exact",
        ),
        (
            &["--bands", "4"],
            "--bands and --rows do not apply to --containment",
        ),
        (
            &["--rows", "2"],
            "--bands and --rows do not apply to --containment",
        ),
        (
            &["--cluster", "strict"],
            "--cluster strict does not apply to --containment",
        ),
    ] {
        let r = t.run(&[&["scan", "--containment"][..], args, &["."]].concat());
        assert_eq!(r.code(), 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    // What it keeps: a stricter report threshold, another sketch, another signature length.
    for args in [
        &["--min-similarity", "0.9"][..],
        &["--sketch", "kperm"],
        &["-k", "256"],
    ] {
        let report = containment_scan(&t, args);
        assert_eq!(
            cluster_paths(&report),
            vec![dots(&["excerpt.txt", "source.txt"])],
            "{args:?}"
        );
    }
}

#[test]
fn an_exact_copy_of_the_source_joins_with_containment_one() {
    let t = source_and_excerpt();
    let source = fs::read_to_string(t.join("source.txt")).unwrap();
    t.write("copy/source.txt", &source);
    let report = containment_scan(&t, &[]);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["copy/source.txt", "excerpt.txt", "source.txt"])]
    );
    let c = &report["clusters"][0];
    // Two containers of equal size: the first in --keep order (path) represents the cluster.
    assert_eq!(c["representative"]["path"], "./copy/source.txt");
    let dups = c["duplicates"].as_array().unwrap();
    assert_eq!(dups[0]["path"], "./excerpt.txt");
    assert_eq!(dups[0]["containment"], 1.0);
    assert_eq!(dups[1]["path"], "./source.txt");
    assert_eq!(
        (&dups[1]["exact"], &dups[1]["containment"]),
        (&true.into(), &1.0.into())
    );
    assert_eq!(report["stats"]["exact_copies"], 1);
    assert_eq!(c["pairs"].as_array().unwrap().len(), 2);
}

#[test]
fn documents_of_one_size_sharing_a_paragraph_are_not_all_candidates() {
    // Twelve documents of 440 words, each its own text and one 40-word paragraph they all
    // share: about 0.04 Jaccard, 0.08 containment, and one size class (about 436 distinct word
    // 5-shingles). Documents of one class are banded two values to a band (offset 0), where such
    // a pair agrees by chance about once in ten. They also enter the single-value tables of the
    // class pairs above and below theirs, which must not pair them with each other: there nearly
    // every pair agrees somewhere.
    let t = source_and_excerpt();
    let paragraph = text(900, 40);
    for i in 0..12 {
        t.write(
            format!("same/doc{i:02}.txt"),
            text(910 + i, 400) + &paragraph,
        );
    }
    let report = containment_scan(&t, &[]);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["excerpt.txt", "source.txt"])]
    );
    let candidates = report["stats"]["candidate_pairs"].as_u64().unwrap();
    // 22 of the 136 pairs of the 17 documents (112 when documents of one class were paired in
    // the single-value tables).
    assert!(candidates < 40, "{candidates}");
}

#[test]
fn a_family_of_near_copies_is_one_cluster_with_a_star_of_pairs() {
    // A 400-word text, 70 copies of it each with one word of its own edited (containment about
    // 0.97 between any two: far above the threshold), an excerpt of 150 of its words (one size
    // class below the others) and three unrelated texts. Documents of one class share buckets
    // of about 70 documents, verified as buckets; the excerpt's pairs across classes are listed.
    let t = TestDir::new();
    let base = text(601, 400);
    t.write("a-base.txt", &base);
    for i in 0..70 {
        t.write(format!("copy-{i:02}.txt"), edit(&base, &[5 * i + 10]));
    }
    t.write("excerpt.txt", excerpt(&base, 200, 350));
    for (i, seed) in [602, 603, 604].into_iter().enumerate() {
        t.write(format!("x-other{i}.txt"), text(seed, 400));
    }
    // The premises, independently of dupfind: every pair of the family is above the threshold,
    // and the excerpt is a class below the copies (146 against 396 distinct shingles).
    let copy = |i: usize| edit(&base, &[5 * i + 10]);
    let (c, small, large) = word_containment(&copy(0), &copy(69));
    assert!(
        c > 0.95 && (small, large) == (396, 396),
        "{c} {small} {large}"
    );
    let (c, small, _) = word_containment(&excerpt(&base, 200, 350), &copy(40));
    assert!(c > 0.95 && small == 146, "{c} {small}");

    let report = containment_scan(&t, &[]);
    let clusters = report["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "{report}");
    let c = &clusters[0];
    assert_eq!(c["size"], 72);
    let members = c["members"].as_array().unwrap();
    assert_eq!(members.len(), 72);
    assert!(members
        .iter()
        .all(|m| !m["path"].as_str().unwrap().contains("other")));
    assert_eq!(report["stats"]["unique_documents"], 3);
    // The spanning pairs are those of taking the candidate pairs in order: every pair passes,
    // so the first document (in path order) joins all the others.
    let pairs = c["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 71);
    assert!(pairs.iter().all(|p| p["a"] == 0), "{pairs:?}");
    assert_directed_pairs(&t, &report, 0.8);
    // The checks of one class are not m²/2: connected documents are not checked again.
    let checked = report["stats"]["candidate_pairs"].as_u64().unwrap();
    assert!(checked < 1000, "{checked}");

    // The same bytes whatever the number of threads.
    let one = t.run(&["scan", "--containment", "-j1", "."]);
    let two = t.run(&["scan", "--containment", "-j2", "."]);
    assert_eq!(one.code(), 0, "{}", one.stderr);
    assert_eq!(one.stdout, two.stdout);
}
