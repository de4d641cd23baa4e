//! The report: every documented field, the snapshot of a whole report, params, JSON Lines,
//! `--format text`, and file names (non-UTF-8, newlines and quotes, control characters in
//! warnings).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};

use base64::Engine as _;
use serde_json::{json, Value};

use super::util::schema::{assert_jsonl_schema, assert_schema};
use super::util::{
    assert_families, chain, cluster_paths, clusters, dot, edit, families, machine_neutral, mkfifo,
    size_in_words, text, walk_files, word_jaccard, words, TestDir,
};

/// A hard link to c.txt, with a name that is not UTF-8 (so `aliases_bytes` appears).
const LINK: &[u8] = b"z-link-\xFE.txt";

/// Families plus a non-UTF-8 name, a hard link with a non-UTF-8 name and an empty file, so
/// that every optional key appears somewhere.
fn rich_tree() -> TestDir {
    let t = families();
    let c = text(6, 300);
    t.write("c.txt", &c)
        .write(OsStr::from_bytes(b"c-\xFF.txt"), edit(&c, &[100]))
        .write("empty.txt", "");
    fs::hard_link(t.join("c.txt"), t.join(OsStr::from_bytes(LINK))).unwrap();
    t
}

#[test]
fn the_report_has_every_documented_field_with_its_type() {
    let t = rich_tree();
    for method in ["minhash", "simhash"] {
        let r = t.run(&["scan", "-m", method, "-q", "."]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let report = r.json();
        assert_schema(&report);
        assert_eq!(report["params"]["method"], method);
    }
    let report = t.run(&["scan", "."]).json();
    let stats = &report["stats"];
    assert_eq!(stats["files_seen"], 12);
    assert_eq!(stats["documents"], 10);
    assert_eq!(stats["skipped"]["empty"], 1);
    assert_eq!(stats["clusters"], 3);
    // `bytes` sums the documents' sizes: each inode once (the empty file adds nothing).
    let all: u64 = walk_files(t.path())
        .iter()
        .map(|p| fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(
        stats["bytes"],
        all - fs::metadata(t.join(OsStr::from_bytes(LINK))).unwrap().len()
    );
    let sizes: u64 = clusters(&report)
        .iter()
        .flat_map(|c| c["members"].as_array().unwrap())
        .map(|m| m["bytes"].as_u64().unwrap())
        .sum();
    let in_clusters = ["a.txt", "sub/a-edited.txt", "b.txt", "b-edited.txt"]
        .iter()
        .chain(&["deeper/x/b-edited2.txt", "c.txt"])
        .map(|p| fs::metadata(t.join(p)).unwrap().len())
        .sum::<u64>()
        + fs::metadata(t.join(OsStr::from_bytes(b"c-\xFF.txt")))
            .unwrap()
            .len();
    assert_eq!(sizes, in_clusters);
}

/// `stdout` as its snapshot holds it, the version replaced by `[version]` so that a release does not
/// change the snapshot (any other version stays, and fails the comparison). insta compares text
/// with trailing white space trimmed and CRLF as LF, so the last newline and the absence of CR
/// are checked here: together they make the comparison byte for byte.
fn snapshot_text(stdout: &str) -> String {
    assert!(
        stdout.ends_with('\n') && !stdout[..stdout.len() - 1].ends_with(char::is_whitespace),
        "one newline at the end: {stdout:?}"
    );
    assert!(!stdout.contains('\r'), "{stdout:?}");
    let version = env!("CARGO_PKG_VERSION");
    machine_neutral(stdout)
        .replace(
            &format!("\"dupfind_version\": \"{version}\""),
            "\"dupfind_version\": \"[version]\"",
        )
        .replace(
            &format!("\"dupfind_version\":\"{version}\""),
            "\"dupfind_version\":\"[version]\"",
        )
}

/// Copies, an unrelated file, an empty file, a binary one, a FIFO and a symbolic link: every
/// count of `stats.skipped` that a plain directory can reach, and one exact cluster.
fn small_tree() -> TestDir {
    let t = TestDir::new();
    let copy = "The quick brown fox jumps over the lazy dog\n";
    t.write("copy-a.txt", copy)
        .write("copy-b.txt", copy)
        .write("other.txt", "Entirely different words appear in this one\n")
        .write("empty.txt", "")
        .write("bin.dat", b"\x00\x01\x02");
    mkfifo(&t.join("pipe"));
    symlink("copy-a.txt", t.join("link.txt")).unwrap();
    t
}

/// A chain a ~ b ~ c (a and c below the threshold), a byte-identical copy of a, and an unrelated
/// document; scanned as components, so that c is `linked`.
fn chain_tree() -> TestDir {
    let t = TestDir::new();
    let a = text(31, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    t.write("a.txt", &a)
        .write("a-copy.txt", &a)
        .write("b.txt", &b)
        .write("c.txt", &c)
        .write("other.txt", text(32, 300));
    t
}

/// The snapshots are in `tests/integration/snapshots/`; docs/testing.md says how to review and
/// update them (in CI, where `CI` is set, a mismatch fails and nothing is written).
#[test]
fn a_small_report_matches_its_snapshot() {
    let r = small_tree().run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    insta::assert_snapshot!("small_report.json", snapshot_text(&r.stdout));
}

#[test]
fn a_jsonl_report_matches_its_snapshot() {
    let args = [
        "scan",
        "--format",
        "jsonl",
        "--cluster",
        "components",
        "--keep",
        "first",
        ".",
    ];
    let r = chain_tree().run(&args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    insta::assert_snapshot!("chain_report.jsonl", snapshot_text(&r.stdout));
}

#[test]
fn a_text_report_matches_its_snapshot() {
    let args = [
        "scan",
        "--format",
        "text",
        "--cluster",
        "components",
        "--keep",
        "first",
        ".",
    ];
    let r = chain_tree().run(&args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    insta::assert_snapshot!("chain_report.txt", snapshot_text(&r.stdout));
}

#[test]
fn params_reflect_the_flags() {
    let t = families();
    // The banding chosen from the threshold is reported, and the note on stderr (-v) names it.
    let r = t.run(&["scan", "-v", "."]);
    let p = &r.json()["params"];
    let (bands, rows) = (p["bands"].as_u64().unwrap(), p["rows"].as_u64().unwrap());
    assert!(bands >= 1 && rows >= 1 && bands * rows <= 128, "{p}");
    assert!(
        r.stderr.contains(&format!(
            "{bands} bands × {rows} rows of 128 signature values"
        )),
        "{}",
        r.stderr
    );

    // Given banding is used as given, and no note is printed, even with -v.
    let r = t.run(&["scan", "-v", "--bands", "16", "--rows", "8", "."]);
    let report = r.json();
    assert_eq!(report["params"]["bands"], 16);
    assert_eq!(report["params"]["rows"], 8);
    assert_families(&report);
    assert_eq!(r.stderr, "");

    let r = t.run(&words(
        "scan -m minhash --shingle char -n 7 -t 0.7 -k 64 --sketch kperm --verify estimate \
         --seed 9 --bands 8 --rows 4 --cluster strict --keep shortest-path --min-similarity 0.75 .",
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.json()["params"],
        json!({
            "method": "minhash", "shingle": "char", "ngram": 7, "sketch": "kperm",
            "num_perm": 64, "bands": 8, "rows": 4, "threshold": 0.7, "verify": "estimate",
            "seed": 9, "cluster": "strict", "keep": "shortest-path", "min_similarity": 0.75
        })
    );
    // --bands alone takes as many rows as fit in K.
    let p = t.run(&["scan", "-k", "100", "--bands", "30", "."]).json()["params"].clone();
    assert_eq!(
        (p["bands"].clone(), p["rows"].clone()),
        (json!(30), json!(3))
    );

    let r = t.run(&[
        "scan",
        "-m",
        "simhash",
        "--max-distance",
        "5",
        "-n",
        "4",
        ".",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.json()["params"],
        json!({
            "method": "simhash", "shingle": "word", "ngram": 4, "bits": 64,
            "max_distance": 5, "pieces": 6, "verify": "exact", "seed": 0,
            "cluster": "strict", "keep": "oldest"
        })
    );
}

#[test]
fn jsonl_prints_typed_records_with_the_same_content() {
    let t = rich_tree();
    let r = t.run(&["scan", "--format", "jsonl", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.stdout.ends_with('\n'));
    let records = r.jsonl();
    let types: Vec<&str> = records
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["header", "cluster", "cluster", "cluster", "summary"]
    );
    assert_jsonl_schema(&records);

    // The records hold exactly what the json document holds.
    let doc = t.run(&["scan", "."]).json();
    assert_eq!(records[0]["schema_version"], doc["schema_version"]);
    assert_eq!(records[0]["dupfind_version"], doc["dupfind_version"]);
    assert_eq!(records[0]["params"], doc["params"]);
    for (i, c) in clusters(&doc).iter().enumerate() {
        let mut rec = records[1 + i].clone();
        rec.as_object_mut().unwrap().remove("type");
        assert_eq!(&rec, c);
    }
    assert_eq!(records[4]["stats"], doc["stats"]);
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
    // Its size as the summary gives sizes: in words, and in bytes with separators.
    let size = fs::metadata(t.join("a.txt")).unwrap().len();
    assert!(size >= 1024, "{size}");
    assert_eq!(
        lines[1],
        format!("  keep  ./a.txt  {}", super::util::size_in_words(size)),
        "{}",
        r.stdout
    );
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
    // The two duplicates' bytes on disk: the linked members' are not reclaimable.
    let disk = |name: &str| fs::metadata(t.join(name)).unwrap().blocks() * 512;
    let reclaimable = disk("b.txt") + disk("copy-of-a.txt");
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "1 cluster, 2 duplicates among 6 documents (1 exact group), {} reclaimable; 0 \
             unreadable",
            size_in_words(reclaimable)
        )
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

// ---------------------------------------------------------------------------------------------
// File names

#[test]
fn reports_non_utf8_path_exactly() {
    let t = TestDir::new();
    let a = text(71, 200);
    let name = OsStr::from_bytes(b"caf\xE9-\xFF.txt");
    let alias = OsStr::from_bytes(b"z-link-\xFE.txt");
    t.write("plain.txt", &a).write(name, edit(&a, &[50]));
    fs::hard_link(t.join("plain.txt"), t.join("plain2.txt")).unwrap();
    fs::hard_link(t.join("plain.txt"), t.join(alias)).unwrap();
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    let b64 = |s: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(s.as_str().unwrap())
            .unwrap()
    };
    let members = report["clusters"][0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);

    let odd = &members[0];
    assert_eq!(odd["path"], "./caf\u{FFFD}-\u{FFFD}.txt");
    let bytes = b64(&odd["path_bytes"]);
    assert_eq!(bytes, b"./caf\xE9-\xFF.txt");
    assert!(t.join(OsStr::from_bytes(&bytes)).is_file());
    assert!(odd.get("aliases_bytes").is_none());

    // The other member is valid UTF-8, and one of its aliases is not.
    let plain = &members[1];
    assert_eq!(plain["path"], dot("plain.txt"));
    assert!(plain.get("path_bytes").is_none());
    assert_eq!(
        plain["aliases"],
        json!([dot("plain2.txt"), dot("z-link-\u{FFFD}.txt")])
    );
    let aliases_bytes = plain["aliases_bytes"].as_array().unwrap();
    assert_eq!(aliases_bytes.len(), 2);
    assert!(aliases_bytes[0].is_null());
    assert_eq!(b64(&aliases_bytes[1]), b"./z-link-\xFE.txt");
}

#[test]
fn names_with_newlines_quotes_and_backslashes_stay_valid_json() {
    let t = TestDir::new();
    let a = text(72, 200);
    let name = "line\nbreak \"quoted\" back\\slash\ttab.txt";
    t.write("plain.txt", &a).write(name, edit(&a, &[60]));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot(name), dot("plain.txt")]]
    );
    assert!(report["clusters"][0]["members"][0]
        .get("path_bytes")
        .is_none());
    let records = t.run(&["scan", "--format", "jsonl", "."]).jsonl();
    assert_eq!(records[1]["members"][0]["path"], dot(name));
}

#[test]
fn warnings_escape_control_characters_in_names() {
    let t = TestDir::new();
    let big = text(73, 400);
    let names: [&OsStr; 4] = [
        OsStr::new("big\nline.txt"),
        OsStr::new("big\u{1b}[31mred.txt"),
        OsStr::new("big\u{7}bell.txt"),
        OsStr::from_bytes(b"big\xFF.txt"),
    ];
    for n in names {
        t.write(n, &big);
    }
    let r = t.run(&["scan", "--max-size", "1K", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["skipped"]["too_large"], 4);
    // One line per warning, each starting with the program name: no name forged a line.
    let warnings = r.warnings();
    assert_eq!(warnings.len(), 4, "{}", r.stderr);
    for w in &warnings {
        assert!(w.starts_with("dupfind: warning: ./big"), "{w:?}");
    }
    assert!(
        !r.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        r.stderr
    );
    for escaped in [
        r"big\nline.txt",
        r"big\u{1b}[31mred.txt",
        r"big\u{7}bell.txt",
    ] {
        assert!(r.stderr.contains(escaped), "{escaped}: {:?}", r.stderr);
    }
    assert!(r.stderr.contains("big\u{FFFD}.txt"), "{:?}", r.stderr);
}

#[test]
fn bidirectional_controls_are_escaped_for_people_and_kept_in_json() {
    let t = TestDir::new();
    let a = text(74, 200);
    // "report\u{202E}txt.exe" shows as "reportexe.txt" on a terminal that honours the override.
    let (rlo, isolate) = ("report\u{202E}txt.exe", "x\u{2067}y\u{2069}\u{200F}.txt");
    t.write(rlo, &a).write(isolate, edit(&a, &[40]));
    let json = t.run(&["scan", "."]);
    assert_eq!(json.code(), 0, "{}", json.stderr);
    assert_eq!(
        cluster_paths(&json.json()),
        vec![vec![dot(rlo), dot(isolate)]]
    );
    let text_out = t.run(&["scan", "--format", "text", "."]);
    assert_eq!(text_out.code(), 0, "{}", text_out.stderr);
    for shown in [
        r"./report\u{202e}txt.exe",
        r"./x\u{2067}y\u{2069}\u{200f}.txt",
    ] {
        assert!(
            text_out.stdout.contains(shown),
            "{shown}: {}",
            text_out.stdout
        );
    }
    // Warnings too.
    let warned = t.run(&["scan", "--max-size", "100", "."]);
    assert_eq!(warned.code(), 0, "{}", warned.stderr);
    assert!(
        warned.stderr.contains(r"./report\u{202e}txt.exe"),
        "{}",
        warned.stderr
    );
    for out in [&text_out.stdout, &warned.stderr] {
        assert!(
            !out.contains(['\u{202E}', '\u{2067}', '\u{2069}', '\u{200F}']),
            "{out}"
        );
    }
}
