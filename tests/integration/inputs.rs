//! What a file's bytes become: encodings (CRLF, byte-order marks, UTF-16, invalid UTF-8), and
//! what is not a document (binary, empty and blank files, size limits, unreadable files).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use super::util::schema::{assert_jsonl_schema, assert_schema};
use super::util::{
    all_pairs, assert_families, assert_well_formed_clusters, chmod, cluster_paths, dot, dots, edit,
    families, open_to_others, run_command, text, TestDir, Unprivileged,
};

#[test]
fn crlf_bom_and_utf16_copies_are_duplicates_but_not_exact() {
    let t = TestDir::new();
    let lf = text(21, 200);
    let crlf = lf.replace('\n', "\r\n");
    let bom = [b"\xEF\xBB\xBF".as_slice(), lf.as_bytes()].concat();
    let mut utf16le = vec![0xFF, 0xFE];
    let mut utf16be = vec![0xFE, 0xFF];
    for unit in lf.encode_utf16() {
        utf16le.extend_from_slice(&unit.to_le_bytes());
        utf16be.extend_from_slice(&unit.to_be_bytes());
    }
    t.write("lf.txt", &lf)
        .write("crlf.txt", &crlf)
        .write("bom.txt", &bom)
        .write("utf16le.txt", &utf16le)
        .write("utf16be.txt", &utf16be);
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["exact_groups"], 0);
    assert_eq!(report["stats"]["skipped"]["binary"], 0, "UTF-16 is text");
    assert_eq!(report["stats"]["documents"], 5);
    let names = [
        "bom.txt",
        "crlf.txt",
        "lf.txt",
        "utf16be.txt",
        "utf16le.txt",
    ];
    assert_eq!(cluster_paths(&report), vec![dots(&names)]);
    assert_well_formed_clusters(&report);
    for p in all_pairs(&report) {
        assert_eq!(p["similarity"], 1.0);
        assert_eq!(p["exact"], false);
    }
    // Sizes are the files' own, not those of the decoded text.
    for (m, name) in report["clusters"][0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .zip(names)
    {
        assert_eq!(m["bytes"], fs::metadata(t.join(name)).unwrap().len());
    }
}

#[test]
fn invalid_utf8_is_decoded_lossily_and_kept() {
    let t = TestDir::new();
    let base = text(43, 200);
    let mut broken = base.clone().into_bytes();
    broken.splice(100..100, [0xC3, 0x28, 0xFF]);
    t.write("good.txt", &base).write("broken.txt", &broken);
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("broken.txt"), dot("good.txt")]]
    );
}

#[test]
fn binary_files_are_skipped_and_counted() {
    let t = TestDir::new();
    let mut binary = text(41, 100).into_bytes();
    binary[50] = 0;
    // A NUL past the first 8 KiB does not make a file binary.
    let long = text(43, 3000);
    assert!(long.len() > 8 * 1024);
    let late_nul = [long.as_bytes(), b"\0"].concat();
    t.write("bin1.dat", &binary)
        .write("bin2.dat", &binary)
        .write("late-nul.txt", &late_nul)
        .write("long.txt", &long)
        .write("text.txt", text(42, 100));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["binary"], 2);
    assert_eq!(report["stats"]["documents"], 3);
    assert_eq!(
        report["stats"]["exact_groups"], 0,
        "binary copies are not grouped"
    );
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["late-nul.txt", "long.txt"])]
    );
}

#[test]
fn empty_and_blank_files_are_counted_and_never_clustered() {
    let t = TestDir::new();
    t.write("empty1.txt", "")
        .write("empty2.txt", "")
        .write("blank1.txt", " \n\t \r\n")
        .write("blank2.txt", " \n\t \r\n")
        .write("bom-only.txt", b"\xEF\xBB\xBF")
        .write("text.txt", text(42, 100))
        .write("text-copy.txt", text(42, 100));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    let stats = &report["stats"];
    assert_eq!(stats["files_seen"], 7);
    assert_eq!(stats["skipped"]["empty"], 5);
    assert_eq!(stats["documents"], 2);
    // Byte-identical empty files are not an exact group: only the two texts are.
    assert_eq!(stats["exact_groups"], 1);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["text-copy.txt", "text.txt"])]
    );
}

#[test]
fn size_limits_skip_files_and_too_large_ones_are_named() {
    let t = TestDir::new();
    let a = text(97, 100);
    t.write("a.txt", &a)
        .write("a-near.txt", edit(&a, &[50]))
        .write("tiny.txt", "tiny")
        .write("big.txt", text(98, 1000));
    let big = fs::metadata(t.join("big.txt")).unwrap().len();
    assert!(big > 1024 && fs::metadata(t.join("a.txt")).unwrap().len() <= 1024);
    // A second name of the big file is skipped with it, and not warned about twice.
    fs::hard_link(t.join("big.txt"), t.join("big-link.txt")).unwrap();

    let r = t.run(&["scan", "--min-size", "100", "--max-size", "1K", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["too_short"], 1);
    assert_eq!(report["stats"]["skipped"]["too_large"], 1);
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(cluster_paths(&report), vec![dots(&["a-near.txt", "a.txt"])]);
    assert_eq!(
        r.warnings(),
        vec![format!(
            "dupfind: warning: ./big-link.txt: skipped, {big} bytes is over --max-size 1024"
        )]
    );

    // Without limits every file is a document.
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 4);
    assert_eq!(report["stats"]["skipped"]["too_short"], 0);
    assert_eq!(report["stats"]["skipped"]["too_large"], 0);
}

#[test]
fn unreadable_file_gives_exit_2_and_the_rest_is_reported() {
    // Root reads a file whatever its mode, so as root the scan runs as nobody (65534) through
    // setpriv. Where that is impossible (root without setpriv) the premise cannot be set up:
    // the test says so on stderr and passes instead of failing on the environment.
    let Some(runner) = Unprivileged::get() else {
        eprintln!("note: running as root and cannot drop privileges; unreadable-file test skipped");
        return;
    };
    let t = families();
    // The directory's name is not UTF-8, so its error carries `path_bytes`.
    let locked_dir = OsStr::from_bytes(b"locked-dir-\xFF");
    t.write("locked.txt", text(81, 100))
        .write(Path::new(locked_dir).join("inside.txt"), text(82, 100));
    open_to_others(t.path());
    chmod(&t.join("locked.txt"), 0o000);
    chmod(&t.join(locked_dir), 0o000);

    let r = run_command(runner.command(t.path(), &["scan", "."]));
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_schema(&report);
    assert_families(&report);
    assert_eq!(report["stats"]["skipped"]["error"], 2);
    assert_eq!(report["stats"]["files_seen"], 9);
    let dir_bytes = base64::engine::general_purpose::STANDARD.encode(b"./locked-dir-\xFF");
    assert_eq!(
        report["errors"],
        json!([
            {"path": dot("locked-dir-\u{FFFD}"), "path_bytes": dir_bytes, "error": "permission denied"},
            {"path": dot("locked.txt"), "error": "permission denied"},
        ])
    );
    let warnings = r.warnings();
    assert_eq!(warnings.len(), 2, "{}", r.stderr);
    assert!(warnings.contains(&"dupfind: warning: ./locked.txt: permission denied"));
    assert!(warnings.contains(&"dupfind: warning: ./locked-dir-\u{FFFD}: permission denied"));

    // JSON Lines: the error records come after the clusters, before the summary.
    let r = run_command(runner.command(t.path(), &["scan", "--format", "jsonl", "."]));
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let types: Vec<Value> = r.jsonl().iter().map(|l| l["type"].clone()).collect();
    assert_eq!(
        types,
        ["header", "cluster", "cluster", "error", "error", "summary"]
    );
    let records = r.jsonl();
    assert_eq!(records[4]["path"], dot("locked.txt"));
    assert_jsonl_schema(&records);

    chmod(&t.join(locked_dir), 0o755); // so that the temporary directory can be removed
}

#[test]
fn files_of_proc_are_read_to_their_end_though_their_size_says_0() {
    let status = Path::new("/proc/self/status");
    if !status.exists() {
        return;
    }
    assert_eq!(fs::metadata(status).unwrap().len(), 0);
    let t = TestDir::new();
    let run = t.run(&["scan", "/proc/self/status", "/proc/self/limits"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(run.warnings().is_empty(), "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 2, "{r}");
    assert_eq!(r["errors"], json!([]));
    assert!(r["stats"]["bytes"].as_u64().unwrap() > 100, "{r}");
    // The size limits apply to what is read.
    let r = t
        .run(&["scan", "--max-size", "10", "/proc/self/status"])
        .json();
    assert_eq!(r["stats"]["skipped"]["too_large"], 1, "{r}");
}
