//! Integration tests: the real binary on real files in a temporary directory.
#![allow(clippy::unwrap_used)] // a failing unwrap is a failing test

mod util;

use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use util::{cluster_paths, dot, edit, finish, text, TestDir};

/// A directory with two near-duplicate families and unrelated documents:
/// a.txt ~ a-edited.txt, b.txt ~ b-edited.txt ~ b-edited2.txt, and three others.
fn families() -> TestDir {
    let t = TestDir::new();
    let a = text(1, 300);
    let b = text(2, 300);
    t.write("a.txt", &a)
        .write("sub/a-edited.txt", edit(&a, &[40, 200]))
        .write("b.txt", &b)
        .write("b-edited.txt", edit(&b, &[10]))
        .write("deeper/x/b-edited2.txt", edit(&b, &[250, 280]))
        .write("other1.txt", text(3, 300))
        .write("other2.txt", text(4, 300))
        .write("sub/other3.txt", text(5, 300));
    t
}

fn assert_families(report: &Value) {
    assert_eq!(
        cluster_paths(report),
        vec![
            vec![dot("a.txt"), dot("sub/a-edited.txt")],
            vec![
                dot("b-edited.txt"),
                dot("b.txt"),
                dot("deeper/x/b-edited2.txt")
            ],
        ]
    );
    assert_eq!(report["stats"]["clusters"], 2);
    assert_eq!(report["stats"]["documents"], 8);
    for c in report["clusters"].as_array().unwrap() {
        let size = c["size"].as_u64().unwrap();
        let pairs = c["pairs"].as_array().unwrap();
        assert_eq!(pairs.len() as u64, size - 1, "a spanning set of pairs");
        for p in pairs {
            assert_eq!(p["exact"], false);
            let a = p["a"].as_u64().unwrap();
            let b = p["b"].as_u64().unwrap();
            assert!(a < b && b < size);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Finding duplicates

#[test]
fn clusters_near_duplicates_and_leaves_unrelated_documents_alone() {
    let t = families();
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_families(&report);
    for c in report["clusters"].as_array().unwrap() {
        for p in c["pairs"].as_array().unwrap() {
            let s = p["similarity"].as_f64().unwrap();
            assert!((0.8..1.0).contains(&s), "similarity {s}");
        }
        assert!(c["min_similarity"].as_f64().unwrap() >= 0.8);
    }
}

#[test]
fn every_method_and_verification_finds_the_same_families() {
    let t = families();
    for args in [
        vec!["scan", "--shingle", "char", "."],
        vec!["scan", "--sketch", "kperm", "."],
        vec!["scan", "--verify", "estimate", "."],
        vec!["scan", "-k", "256", "-t", "0.7", "."],
    ] {
        let r = t.run(&args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        assert_families(&r.json());
    }
}

#[test]
fn simhash_finds_a_one_word_edit_and_reports_the_distance() {
    let t = TestDir::new();
    let base = text(7, 5000);
    t.write("a.txt", &base)
        .write("b.txt", edit(&base, &[2500]))
        .write("c.txt", text(8, 5000));
    let r = t.run(&["scan", "--method", "simhash", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("a.txt"), dot("b.txt")]]
    );
    let pair = &report["clusters"][0]["pairs"][0];
    let d = pair["distance"].as_u64().unwrap();
    assert!(d <= 3);
    assert_eq!(pair["similarity"].as_f64().unwrap(), 1.0 - d as f64 / 64.0);
    assert_eq!(report["params"]["method"], "simhash");
    assert_eq!(report["params"]["max_distance"], 3);
    assert_eq!(report["params"]["pieces"], 4);
}

#[test]
fn byte_identical_files_form_an_exact_group() {
    let t = TestDir::new();
    let a = text(11, 200);
    t.write("one.txt", &a)
        .write("two.txt", &a)
        .write("three/three.txt", &a)
        .write("different.txt", text(12, 200));
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["exact_groups"], 1);
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("one.txt"), dot("three/three.txt"), dot("two.txt")]]
    );
    let c = &report["clusters"][0];
    assert_eq!(c["min_similarity"], 1.0);
    for p in c["pairs"].as_array().unwrap() {
        assert_eq!(p["exact"], true);
        assert_eq!(p["similarity"], 1.0);
    }
}

#[test]
fn crlf_bom_and_utf16_copies_are_duplicates_but_not_exact() {
    let t = TestDir::new();
    let lf = text(21, 200);
    let crlf = lf.replace('\n', "\r\n");
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(lf.as_bytes());
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in lf.encode_utf16() {
        utf16.extend_from_slice(&unit.to_le_bytes());
    }
    t.write("lf.txt", &lf)
        .write("crlf.txt", &crlf)
        .write("bom.txt", &bom)
        .write("utf16.txt", &utf16);
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["exact_groups"], 0);
    assert_eq!(report["stats"]["skipped"]["binary"], 0, "UTF-16 is text");
    assert_eq!(
        cluster_paths(&report),
        vec![vec![
            dot("bom.txt"),
            dot("crlf.txt"),
            dot("lf.txt"),
            dot("utf16.txt")
        ]]
    );
    for p in report["clusters"][0]["pairs"].as_array().unwrap() {
        assert_eq!(p["similarity"], 1.0);
        assert_eq!(p["exact"], false);
    }
}

#[test]
fn a_chain_is_one_cluster_whose_similarities_show_the_spread() {
    let t = TestDir::new();
    let a = text(31, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    t.write("a.txt", &a).write("b.txt", &b).write("c.txt", &c);
    let report = t.run(&["scan", "."]).json();
    let cl = &report["clusters"][0];
    assert_eq!(cl["size"], 3);
    let pairs = cl["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    // a and c are too far apart to be a verified pair; b links them.
    assert!(!pairs.iter().any(|p| p["a"] == 0 && p["b"] == 2));
    let (min, max) = (
        cl["min_similarity"].as_f64().unwrap(),
        cl["max_similarity"].as_f64().unwrap(),
    );
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
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("s1.txt"), dot("s2.txt")]]
    );
    assert_eq!(report["clusters"][0]["pairs"][0]["similarity"], 1.0);
    assert_eq!(report["clusters"][0]["pairs"][0]["exact"], false);
}

#[test]
fn binary_and_empty_files_are_counted_and_never_clustered() {
    let t = TestDir::new();
    let mut binary = text(41, 100).into_bytes();
    binary[50] = 0;
    t.write("bin1.dat", &binary)
        .write("bin2.dat", &binary)
        .write("empty1.txt", "")
        .write("empty2.txt", "")
        .write("blank.txt", " \n\t \r\n")
        .write("text.txt", text(42, 100));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["binary"], 2);
    assert_eq!(report["stats"]["skipped"]["empty"], 3);
    assert_eq!(report["stats"]["files_seen"], 6);
    assert_eq!(report["clusters"], Value::Array(vec![]));
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
fn the_example_corpus_gives_the_clusters_the_readme_shows() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
    let out = Command::new(util::bin())
        .args(["scan", "."])
        .current_dir(&corpus)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r = finish(out);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        vec![
            vec![
                dot("archive/harbor-bridge-2024.txt"),
                dot("news/harbor-bridge-updated.txt"),
                dot("news/harbor-bridge.txt")
            ],
            vec![dot("recipes/bread-from-blog.txt"), dot("recipes/bread.txt")],
        ]
    );
    assert_eq!(report["stats"]["skipped"]["empty"], 1);
    assert_eq!(report["stats"]["exact_groups"], 1);
    assert_eq!(report["params"]["bands"], 19);
    assert_eq!(report["params"]["rows"], 6);
}

// ---------------------------------------------------------------------------------------------
// Output format and determinism

#[test]
fn output_has_every_documented_field() {
    let t = families();
    t.write("empty.txt", "");
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["dupfind_version"], env!("CARGO_PKG_VERSION"));
    let params = &report["params"];
    for (key, value) in [
        ("method", Value::from("minhash")),
        ("shingle", Value::from("word")),
        ("ngram", Value::from(5)),
        ("num_perm", Value::from(128)),
        ("threshold", Value::from(0.8)),
        ("verify", Value::from("exact")),
        ("seed", Value::from(0)),
    ] {
        assert_eq!(params[key], value, "params.{key}");
    }
    assert!(params["bands"].is_u64() && params["rows"].is_u64());
    let stats = &report["stats"];
    for key in [
        "files_seen",
        "documents",
        "bytes",
        "exact_groups",
        "candidate_pairs",
        "verified_pairs",
        "clusters",
    ] {
        assert!(stats[key].is_u64(), "stats.{key}");
    }
    for key in [
        "binary",
        "empty",
        "too_short",
        "not_regular",
        "too_large",
        "error",
    ] {
        assert!(stats["skipped"][key].is_u64(), "stats.skipped.{key}");
    }
    assert_eq!(stats["files_seen"], 9);
    assert_eq!(stats["skipped"]["empty"], 1);
    let bytes: u64 = ["a.txt", "sub/a-edited.txt", "b.txt", "b-edited.txt"]
        .iter()
        .chain(&["deeper/x/b-edited2.txt", "other1.txt", "other2.txt"])
        .chain(&["sub/other3.txt"])
        .map(|p| fs::metadata(t.join(p)).unwrap().len())
        .sum();
    assert_eq!(stats["bytes"], bytes);
    let c = &report["clusters"][0];
    for key in ["id", "size", "min_similarity", "max_similarity"] {
        assert!(c[key].is_number(), "clusters[].{key}");
    }
    let m = &c["members"][0];
    assert!(m["path"].is_string() && m["bytes"].is_u64() && m["aliases"].is_array());
    assert!(m.get("path_bytes").is_none(), "only for non-UTF-8 paths");
    let p = &c["pairs"][0];
    assert!(p["a"].is_u64() && p["b"].is_u64() && p["similarity"].is_f64());
    assert!(p["exact"].is_boolean());
    assert!(report["errors"].as_array().unwrap().is_empty());
}

#[test]
fn explicit_banding_is_used_and_reported() {
    let t = families();
    let report = t.run(&["scan", "--bands", "16", "--rows", "8", "."]).json();
    assert_eq!(report["params"]["bands"], 16);
    assert_eq!(report["params"]["rows"], 8);
    assert_families(&report);
}

#[test]
fn jsonl_prints_typed_records() {
    let t = families();
    let r = t.run(&["scan", "--format", "jsonl", "."]);
    assert_eq!(r.code(), 0);
    let records: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 4);
    assert_eq!(records[0]["type"], "header");
    assert_eq!(records[0]["schema_version"], 1);
    assert_eq!(records[1]["type"], "cluster");
    assert_eq!(records[2]["type"], "cluster");
    assert_eq!(records[2]["size"], 3);
    assert_eq!(records[3]["type"], "summary");
    assert_eq!(records[3]["stats"]["clusters"], 2);
}

#[test]
fn thread_count_and_repetition_do_not_change_a_byte() {
    let t = TestDir::new();
    for f in 0..12u64 {
        let base = text(100 + f, 250);
        t.write(format!("f{f}/base.txt"), &base);
        for c in 0..4u64 {
            let at = [(c * 37 + f) as usize % 240, (c * 91 + 7) as usize % 240];
            t.write(format!("f{f}/copy{c}.txt"), edit(&base, &at));
        }
        t.write(format!("other{f}.txt"), text(500 + f, 250));
    }
    let one = t.run(&["scan", "-j", "1", "."]);
    let two = t.run(&["scan", "--threads", "2", "."]);
    let again = t.run(&["scan", "-j", "2", "."]);
    assert_eq!(one.code(), 0);
    let sizes: Vec<u64> = one.json()["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![5; 12], "{}", one.stdout);
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(two.stdout, again.stdout);
    for method in ["simhash", "minhash"] {
        let a = t.run(&["scan", "-j", "1", "-m", method, "--shingle", "char", "."]);
        let b = t.run(&["scan", "-j", "2", "-m", method, "--shingle", "char", "."]);
        assert_eq!(a.stdout, b.stdout, "{method}");
    }
}

#[test]
fn seed_changes_the_hashes_not_the_verified_clusters() {
    let t = families();
    let a = t.run(&["scan", "--seed", "1", "."]).json();
    assert_eq!(a["params"]["seed"], 1);
    assert_families(&a);
}

#[test]
fn broken_pipe_ends_quietly() {
    let t = TestDir::new();
    let same = text(51, 50);
    for i in 0..1500 {
        t.write(format!("copy{i:04}.txt"), &same);
    }
    let mut child = t.command(&["scan", "."]).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"{\n  \"schem");
    drop(stdout);
    let r = finish(child.wait_with_output().unwrap());
    assert!(
        matches!(r.status.code(), Some(0) | Some(2)),
        "{:?}",
        r.status
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(
        !r.stderr.to_lowercase().contains("broken pipe"),
        "{}",
        r.stderr
    );
}

#[test]
fn interrupt_exits_130_with_empty_or_complete_output() {
    let t = TestDir::new();
    for i in 0..3000u64 {
        t.write(format!("d{}/f{i}.txt", i % 30), text(i, 300));
    }
    let child = t.command(&["scan", "-j", "1", "."]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on the pid of a child that has not been waited for yet.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(killed, 0);
    let r = finish(child.wait_with_output().unwrap());
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    match r.code() {
        130 => assert!(r.stdout.is_empty() || serde_json::from_str::<Value>(&r.stdout).is_ok()),
        // The scan may finish before the signal on a fast machine: then the output is whole.
        0 => assert_eq!(r.json()["stats"]["documents"], 3000),
        code => panic!("exit {code}: {}", r.stderr),
    }
}

// ---------------------------------------------------------------------------------------------
// The file system

#[test]
fn hard_links_are_one_document_with_aliases() {
    let t = TestDir::new();
    let a = text(61, 300);
    t.write("a.txt", &a).write("near.txt", edit(&a, &[100]));
    fs::create_dir(t.join("links")).unwrap();
    fs::hard_link(t.join("a.txt"), t.join("links/also-a.txt")).unwrap();
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(report["stats"]["files_seen"], 3);
    assert_eq!(report["stats"]["exact_groups"], 0);
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("a.txt"), dot("near.txt")]]
    );
    assert_eq!(
        report["clusters"][0]["members"][0]["aliases"],
        serde_json::json!([dot("links/also-a.txt")])
    );

    // Alone, a file and its hard link are no duplicate pair.
    let solo = TestDir::new();
    solo.write("x.txt", text(62, 100));
    fs::hard_link(solo.join("x.txt"), solo.join("y.txt")).unwrap();
    let report = solo.run(&["scan", "."]).json();
    assert_eq!(report["clusters"], Value::Array(vec![]));
    assert_eq!(report["stats"]["documents"], 1);
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn skips_fifo_without_blocking() {
    let t = families();
    mkfifo(&t.join("sub/pipe"));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["not_regular"], 1);
    assert_families(&report);
}

#[test]
fn a_fifo_a_device_or_a_missing_root_is_a_clear_error() {
    let t = TestDir::new();
    mkfifo(&t.join("pipe"));
    for (root, words) in [
        ("pipe", "FIFO"),
        ("/dev/null", "FIFO, socket or device"),
        ("no-such-dir", "No such file"),
    ] {
        let r = t.run(&["scan", root]);
        assert_eq!(r.code(), 2, "{root}");
        assert!(r.stdout.is_empty(), "{root}: {}", r.stdout);
        assert!(
            r.stderr.contains(root) && r.stderr.contains(words),
            "{root}: {}",
            r.stderr
        );
    }
}

#[test]
fn reports_non_utf8_path_exactly() {
    let t = TestDir::new();
    let a = text(71, 200);
    let name = std::ffi::OsStr::from_bytes(b"caf\xE9-\xFF.txt");
    t.write("plain.txt", &a).write(name, edit(&a, &[50]));
    let report = t.run(&["scan", "."]).json();
    let members = report["clusters"][0]["members"].as_array().unwrap();
    let odd = members
        .iter()
        .find(|m| m.get("path_bytes").is_some())
        .expect("a member with path_bytes");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(odd["path_bytes"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, b"./caf\xE9-\xFF.txt");
    assert_eq!(odd["path"], "./caf\u{FFFD}-\u{FFFD}.txt");
    assert!(fs::metadata(t.path().join(std::ffi::OsStr::from_bytes(&bytes[2..]))).is_ok());
}

#[test]
fn names_with_newlines_and_quotes_stay_valid_json() {
    let t = TestDir::new();
    let a = text(72, 200);
    let name = "line\nbreak \"quoted\" back\\slash\ttab.txt";
    t.write("plain.txt", &a)
        .write(name, edit(&a, &[60]))
        .write("big\u{7}bell.txt", "x".repeat(3000));
    let r = t.run(&["scan", "--max-size", "2K", "."]);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot(name), dot("plain.txt")]]
    );
    // The too-large warning names the file without the raw control character.
    assert!(r.stderr.contains("bell.txt"), "{}", r.stderr);
    assert!(
        !r.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        r.stderr
    );
}

fn euid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() }
}

#[test]
fn unreadable_file_gives_exit_2_and_the_rest_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let t = families();
    t.write("locked.txt", text(81, 100));
    fs::set_permissions(t.join("locked.txt"), fs::Permissions::from_mode(0o000)).unwrap();
    let mut args = vec!["scan", "."];
    let r = if euid() == 0 {
        // Root reads any file, so the scan runs as nobody: the tree must be readable to others.
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
        for d in ["sub", "deeper", "deeper/x"] {
            fs::set_permissions(t.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut full = vec![
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            util::bin(),
        ];
        full.append(&mut args);
        let out = Command::new("setpriv")
            .args(&full)
            .current_dir(t.path())
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) if !String::from_utf8_lossy(&o.stderr).starts_with("setpriv:") => finish(o),
            _ => {
                eprintln!("note: running as root without setpriv; unreadable-file test skipped");
                return;
            }
        }
    } else {
        t.run(&args)
    };
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_families(&report);
    assert_eq!(report["stats"]["skipped"]["error"], 1);
    assert_eq!(
        report["errors"],
        serde_json::json!([{"path": dot("locked.txt"), "error": "permission denied"}])
    );
    assert!(
        r.stderr.contains("locked.txt: permission denied"),
        "{}",
        r.stderr
    );
}

#[test]
fn symlinks_are_skipped_unless_followed_and_never_leave_the_roots() {
    use std::os::unix::fs::symlink;
    let outside = TestDir::new();
    outside.write("secret.txt", text(91, 200));
    let t = TestDir::new();
    let a = text(92, 200);
    t.write("real/a.txt", &a)
        .write("real/b.txt", edit(&a, &[30]));
    symlink("real", t.join("z-link")).unwrap();
    symlink(".", t.join("real/loop")).unwrap();
    symlink(outside.join("secret.txt"), t.join("secret-link.txt")).unwrap();

    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["symlink"], 3);
    assert_eq!(report["stats"]["documents"], 2);

    let r = t.run(&["scan", "-L", "."]);
    let report = r.json();
    assert_eq!(
        report["stats"]["documents"], 2,
        "link/ reaches the same inodes"
    );
    assert_eq!(
        cluster_paths(&report),
        vec![vec![dot("real/a.txt"), dot("real/b.txt")]]
    );
    assert_eq!(
        report["clusters"][0]["members"][0]["aliases"],
        serde_json::json!([dot("z-link/a.txt")])
    );
    assert!(
        report["stats"]["skipped"]["outside_roots"]
            .as_u64()
            .unwrap()
            >= 2
    );
    assert!(r.stderr.contains("loop"), "{}", r.stderr);
    assert!(!r.stdout.contains("secret"));
}

#[test]
fn a_tree_1500_levels_deep_is_walked_to_the_bottom() {
    let t = TestDir::new();
    let top = text(95, 200);
    let bottom = text(96, 200);
    let deep = vec!["d"; 1500].join("/");
    t.write("top.txt", &top)
        .write("top2.txt", edit(&top, &[5]))
        .write(format!("{deep}/bottom.txt"), &bottom)
        .write(format!("{deep}/bottom2.txt"), edit(&bottom, &[9]));
    let r = t.run(&["scan", "-j", "2", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["clusters"], 2);
    assert_eq!(report["stats"]["documents"], 4);
}

#[test]
fn include_exclude_and_size_limits_select_files() {
    let t = TestDir::new();
    let a = text(97, 300);
    t.write("a.txt", &a)
        .write("a.md", edit(&a, &[1]))
        .write("skip/a.txt", edit(&a, &[2]))
        .write("tiny.txt", "tiny")
        .write("big.txt", text(98, 3000));
    let only_txt = t.run(&["scan", "--include", "*.txt", "--exclude", "skip/**", "."]);
    let report = only_txt.json();
    assert_eq!(report["stats"]["files_seen"], 3);
    assert_eq!(report["clusters"], Value::Array(vec![]));

    let sized = t.run(&["scan", "--min-size", "100", "--max-size", "4K", "."]);
    assert_eq!(sized.code(), 0);
    let report = sized.json();
    assert_eq!(report["stats"]["skipped"]["too_short"], 1);
    assert_eq!(report["stats"]["skipped"]["too_large"], 1);
    assert_eq!(report["clusters"][0]["size"], 3);
    assert!(
        sized.stderr.contains("big.txt: skipped"),
        "{}",
        sized.stderr
    );
}

#[test]
fn several_roots_are_scanned_once_each() {
    let t = TestDir::new();
    let a = text(99, 200);
    t.write("x/a.txt", &a).write("y/b.txt", edit(&a, &[7]));
    let report = t.run(&["scan", "x", "y"]).json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec!["x/a.txt".to_string(), "y/b.txt".to_string()]]
    );
    let twice = t.run(&["scan", "x", "x"]).json();
    assert_eq!(twice["stats"]["documents"], 1);
    assert_eq!(twice["clusters"], Value::Array(vec![]));
}

fn snapshot(dir: &Path, out: &mut Vec<(String, u64, std::time::SystemTime)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let meta = fs::symlink_metadata(e.path()).unwrap();
        out.push((
            e.path().display().to_string(),
            meta.len(),
            meta.modified().unwrap(),
        ));
        if meta.is_dir() {
            snapshot(&e.path(), out);
        }
    }
}

#[test]
fn nothing_is_written_and_stdin_is_not_read() {
    let t = families();
    let mut before = Vec::new();
    snapshot(t.path(), &mut before);
    // stdin is a pipe that stays open and empty: a scan that read it would never finish.
    let mut child = t
        .command(&["scan", "-j", "2", "."])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("the scan waited on stdin");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = finish(child.wait_with_output().unwrap());
    assert_eq!(r.code(), 0);
    assert_families(&r.json());
    let mut after = Vec::new();
    snapshot(t.path(), &mut after);
    assert_eq!(before, after);
}

// ---------------------------------------------------------------------------------------------
// The command line

#[test]
fn quiet_silences_stderr() {
    let t = families();
    t.write("huge.txt", text(9, 2000));
    let r = t.run(&[
        "scan",
        "-q",
        "--max-size",
        "1K",
        "--progress",
        "always",
        ".",
    ]);
    assert_eq!(r.code(), 0);
    assert_eq!(r.stderr, "");
    assert!(r.json()["stats"]["skipped"]["too_large"].as_u64().unwrap() >= 1);
    let loud = t.run(&["scan", "--max-size", "1K", "."]);
    assert!(loud.stderr.contains("huge.txt"), "{}", loud.stderr);
}

#[test]
fn usage_errors_exit_2_with_nothing_on_stdout() {
    let t = families();
    for args in [
        vec!["scan", "-t", "1.5", "."],
        vec!["scan", "-t", "0", "."],
        vec!["scan", "-k", "0", "."],
        vec!["scan", "--bands", "100", "--rows", "100", "."],
        vec!["scan", "-m", "simhash", "--bands", "4", "."],
        vec!["scan", "--max-distance", "40", "-m", "simhash", "."],
        vec!["scan", "--min-size", "2K", "--max-size", "1K", "."],
        vec!["scan", "--max-size", "lots", "."],
        vec!["scan", "--include", "[", "."],
        vec!["scan", "-j", "0", "."],
        vec!["scan", "--bogus", "."],
        vec!["frobnicate"],
    ] {
        let r = t.run(&args);
        assert_eq!(r.code(), 2, "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(!r.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn help_and_version_work() {
    let t = TestDir::new();
    let v = t.run(&["--version"]);
    assert_eq!(v.code(), 0);
    assert_eq!(
        v.stdout.trim(),
        format!("dupfind {}", env!("CARGO_PKG_VERSION"))
    );
    let h = t.run(&["--help"]);
    assert_eq!(h.code(), 0);
    assert!(h.stdout.contains("scan"));
    let s = t.run(&["scan", "--help"]);
    assert_eq!(s.code(), 0);
    for flag in [
        "--method",
        "--shingle",
        "--ngram",
        "--threshold",
        "--num-perm",
        "--bands",
        "--rows",
        "--max-distance",
        "--verify",
        "--seed",
        "--threads",
        "--format",
        "--include",
        "--exclude",
        "--min-size",
        "--max-size",
        "--follow-links",
        "--quiet",
        "--progress",
        "Exit status",
    ] {
        assert!(s.stdout.contains(flag), "scan --help lacks {flag}");
    }
}
