//! Walking the tree: roots (default, several, overlapping, symlinked, missing), include and
//! exclude globs, depth, symbolic links, FIFOs and hard links.

use std::fs;
use std::os::unix::fs::symlink;

use serde_json::{json, Value};

use super::util::{
    all_pairs, assert_families, cluster_members, cluster_paths, dot, dots, edit, families, mkfifo,
    text, TestDir,
};

// ---------------------------------------------------------------------------------------------
// Roots, include and exclude

#[test]
fn the_default_root_is_the_current_directory() {
    let t = families();
    let implicit = t.run(&["scan"]);
    assert_eq!(implicit.code(), 0, "{}", implicit.stderr);
    assert_families(&implicit.json());
    assert_eq!(implicit.stdout, t.run(&["scan", "."]).stdout);
}

#[test]
fn several_roots_are_scanned_and_a_file_is_one_document() {
    let t = TestDir::new();
    let a = text(99, 200);
    t.write("x/a.txt", &a)
        .write("x/a-near.txt", edit(&a, &[3]))
        .write("y/b.txt", edit(&a, &[7]))
        .write("z/other.txt", text(98, 200));
    let report = t.run(&["scan", "x", "y", "z"]).json();
    assert_eq!(report["stats"]["documents"], 4);
    assert_eq!(
        cluster_paths(&report),
        vec![vec!["x/a-near.txt", "x/a.txt", "y/b.txt"]]
    );

    // The same files reached through two roots: one document each, and a path is not an
    // alias of itself.
    let r = t.run(&["scan", "x", "x"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let twice = r.json();
    assert_eq!(twice["stats"]["documents"], 2);
    assert_eq!(cluster_paths(&twice), vec![vec!["x/a-near.txt", "x/a.txt"]]);
    for m in twice["clusters"][0]["members"].as_array().unwrap() {
        assert_eq!(m["aliases"], json!([]), "{m}");
    }
    assert_eq!(twice["stats"]["files_seen"], 2, "{}", twice["stats"]);

    // Overlapping roots and two spellings of one root: still one entry per file.
    t.write("x/sub/c.txt", text(97, 200));
    for roots in [&["x", "x/sub"][..], &["x/sub", "x"], &["x", "./x"]] {
        let r = t.run(&[&["scan"][..], roots].concat());
        assert_eq!(r.code(), 0, "{roots:?}: {}", r.stderr);
        let report = r.json();
        assert_eq!(report["stats"]["documents"], 3, "{roots:?}");
        assert_eq!(report["stats"]["files_seen"], 3, "{roots:?}");
        let members = &report["clusters"][0]["members"];
        assert_eq!(members[0]["aliases"], json!([]), "{roots:?}");
    }

    // Roots given in any order: documents and clusters in path order.
    let reversed = t.run(&["scan", "z", "y", "x"]).json();
    assert_eq!(
        cluster_paths(&reversed),
        vec![vec!["x/a-near.txt", "x/a.txt", "y/b.txt"]]
    );
}

#[test]
fn a_fifo_a_device_or_a_missing_root_is_an_input_error_and_the_rest_is_scanned() {
    let t = TestDir::new();
    mkfifo(&t.join("pipe"));
    t.write("ok.txt", text(1, 50));
    const NOT_REGULAR: &str = "not a directory or regular file (a FIFO, socket or device)";
    const MISSING: &str = "no such file or directory";
    for (args, root, reason, documents) in [
        (vec!["scan", "pipe"], "pipe", NOT_REGULAR, 0),
        (vec!["scan", "/dev/null"], "/dev/null", NOT_REGULAR, 0),
        (vec!["scan", "no-such-dir"], "no-such-dir", MISSING, 0),
        (
            vec!["scan", "ok.txt", "no-such-dir"],
            "no-such-dir",
            MISSING,
            1,
        ),
        (
            vec!["scan", "no-such-dir", "ok.txt"],
            "no-such-dir",
            MISSING,
            1,
        ),
    ] {
        let r = t.run(&args);
        assert_eq!(r.code(), 2, "{args:?}");
        // The report is printed, the root listed among the errors.
        let report = r.json();
        assert_eq!(
            report["errors"],
            json!([{"path": root, "error": reason}]),
            "{args:?}"
        );
        assert_eq!(report["stats"]["skipped"]["error"], 1, "{args:?}");
        assert_eq!(report["stats"]["documents"], documents, "{args:?}");
        // One warning, naming the root and the reason.
        assert_eq!(
            r.warnings(),
            vec![format!("dupfind: warning: {root}: {reason}")],
            "{args:?}"
        );
    }
    // -q: the report, and the one line exit status 2 leaves.
    let r = t.run(&["scan", "-q", "no-such-dir"]);
    assert_eq!(r.code(), 2);
    assert_eq!(r.json()["errors"][0]["path"], "no-such-dir");
    assert_eq!(
        r.stderr,
        "dupfind: 1 input could not be read (run without -q for details)\n"
    );
}

#[test]
fn include_and_exclude_select_files_below_the_root() {
    let t = TestDir::new();
    let a = text(97, 300);
    t.write("a.txt", &a)
        .write("a.md", edit(&a, &[1]))
        .write("skip/a.txt", edit(&a, &[2]))
        .write("notes/deep/a.txt", edit(&a, &[3]))
        .write("other.txt", text(96, 300));

    let r = t.run(&["scan", "--include", "*.txt", "--exclude", "skip/**", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["files_seen"], 3);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["a.txt", "notes/deep/a.txt"])]
    );

    // A directory that matches is not entered; globs repeat.
    let report = t
        .run(&["scan", "--exclude", "skip", "--exclude", "notes", "."])
        .json();
    assert_eq!(report["stats"]["files_seen"], 3);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.md", "a.txt"])]);

    let report = t
        .run(&["scan", "--include", "*.md", "--include", "skip/*", "."])
        .json();
    assert_eq!(report["stats"]["files_seen"], 2);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.md", "skip/a.txt"])]);

    // Paths are matched below the root, whatever the root is called.
    let report = t
        .run(&[
            "scan",
            "--exclude",
            "notes/**",
            &t.path().display().to_string(),
        ])
        .json();
    assert_eq!(report["stats"]["files_seen"], 4);

    // A directory name includes what is below it; '*' stays within one name, '**' does not.
    let report = t
        .run(&["scan", "--include", "notes", "--include", "a.md", "."])
        .json();
    assert_eq!(report["stats"]["files_seen"], 2);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["a.md", "notes/deep/a.txt"])]
    );
    let report = t
        .run(&["scan", "--include", "notes/*.txt", "--include", "/a.*", "."])
        .json();
    assert_eq!(
        report["stats"]["files_seen"], 2,
        "notes/*.txt does not reach notes/deep/a.txt"
    );
    let report = t
        .run(&[
            "scan",
            "--include",
            "notes/**/*.txt",
            "--include",
            "/a.*",
            ".",
        ])
        .json();
    assert_eq!(report["stats"]["files_seen"], 3);

    // An include that matches nothing says so.
    let r = t.run(&["scan", "--include", "*.pdf", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["files_seen"], 0);
    assert_eq!(
        r.warnings(),
        vec!["dupfind: warning: --include matched no file below the roots"]
    );
}

#[test]
fn a_tree_1500_levels_deep_is_walked_to_the_bottom() {
    let t = TestDir::new();
    let top = text(95, 200);
    let bottom = text(96, 200);
    // 1500 × "d/" is 3000 bytes: deep, but the full path stays under PATH_MAX (4096).
    let deep = vec!["d"; 1500].join("/");
    t.write("top.txt", &top)
        .write("top2.txt", edit(&top, &[5]))
        .write(format!("{deep}/bottom.txt"), &bottom)
        .write(format!("{deep}/bottom2.txt"), edit(&bottom, &[9]));
    let r = t.run(&["scan", "-j", "2", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], 4);
    assert_eq!(
        cluster_paths(&report),
        vec![
            vec![
                dot(&format!("{deep}/bottom.txt")),
                dot(&format!("{deep}/bottom2.txt"))
            ],
            dots(&["top.txt", "top2.txt"]),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Symbolic links, FIFOs and hard links

#[test]
fn symlinks_are_skipped_unless_followed_and_never_leave_the_roots() {
    let outside = TestDir::new();
    outside.write("secret.txt", text(91, 200));
    outside.write("dir/secret.txt", text(91, 200));
    let t = TestDir::new();
    let a = text(92, 200);
    t.write("real/a.txt", &a)
        .write("real/b.txt", edit(&a, &[30]));
    symlink("real", t.join("z-link")).unwrap(); // a directory inside the root
    symlink(".", t.join("real/loop")).unwrap(); // a loop
    symlink(outside.join("secret.txt"), t.join("secret-link.txt")).unwrap();
    symlink(outside.join("dir"), t.join("outside-dir")).unwrap();

    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["symlink"], 4);
    assert_eq!(report["stats"]["skipped"]["outside_roots"], 0);
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(
        report["clusters"][0]["members"][0]["aliases"],
        json!([]),
        "links not followed are not aliases"
    );

    let r = t.run(&["scan", "-L", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    let stats = &report["stats"];
    assert_eq!(stats["documents"], 2, "z-link reaches the same inodes");
    assert_eq!(stats["skipped"]["symlink"], 0);
    // Two links out of the root, and the loop reached as real/loop and as z-link/loop.
    assert_eq!(stats["skipped"]["outside_roots"], 4);
    assert_eq!(
        cluster_paths(&report),
        vec![dots(&["real/a.txt", "real/b.txt"])]
    );
    assert_eq!(
        report["clusters"][0]["members"][0]["aliases"],
        json!([dot("z-link/a.txt")])
    );
    assert!(!r.stdout.contains("secret"), "{}", r.stdout);
    let warnings = r.warnings();
    assert_eq!(
        warnings,
        vec![
            "dupfind: warning: ./real/loop: symbolic link loop, not followed",
            "dupfind: warning: ./z-link/loop: symbolic link loop, not followed",
        ]
    );
}

#[test]
fn a_symlinked_root_directory_is_walked_and_not_counted_as_skipped() {
    let t = TestDir::new();
    let a = text(101, 200);
    t.write("x/a.txt", &a).write("x/b.txt", edit(&a, &[9]));
    symlink("x", t.join("x-link")).unwrap();
    // A root is followed whatever -L says: it was named on the command line.
    let r = t.run(&["scan", "x-link"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        vec![vec!["x-link/a.txt", "x-link/b.txt"]]
    );
    // The root link was followed, so it is neither a skipped symlink nor a file seen.
    assert_eq!(
        report["stats"]["skipped"]["symlink"], 0,
        "{}",
        report["stats"]
    );
    assert_eq!(report["stats"]["files_seen"], 2, "{}", report["stats"]);
}

#[test]
fn a_symlinked_root_file_is_scanned() {
    let t = TestDir::new();
    let a = text(102, 200);
    t.write("x/a.txt", &a).write("y/b.txt", edit(&a, &[9]));
    symlink("x/a.txt", t.join("a-link.txt")).unwrap();
    // Like a symlinked root directory, a symlinked root file is followed: the user named it.
    let r = t.run(&["scan", "a-link.txt", "y/b.txt"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], 2, "{}", report["stats"]);
    assert_eq!(
        report["stats"]["skipped"]["symlink"], 0,
        "{}",
        report["stats"]
    );
    assert_eq!(cluster_paths(&report), vec![vec!["a-link.txt", "y/b.txt"]]);
}

#[test]
fn skips_fifo_without_blocking() {
    let t = families();
    mkfifo(&t.join("sub/pipe"));
    symlink("pipe", t.join("sub/pipe-link")).unwrap();
    // A scan that opened the FIFO would block for ever; the runner's hang guard fails it.
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["not_regular"], 1);
    assert_eq!(report["stats"]["skipped"]["symlink"], 1);
    assert_families(&report);

    let r = t.run(&["scan", "-L", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        report["stats"]["skipped"]["not_regular"], 2,
        "FIFO and link"
    );
    assert_families(&report);
}

#[test]
fn hard_links_are_one_document_with_aliases() {
    let t = TestDir::new();
    let a = text(61, 300);
    t.write("a.txt", &a).write("near.txt", edit(&a, &[100]));
    t.mkdir("links");
    fs::hard_link(t.join("a.txt"), t.join("links/also-a.txt")).unwrap();
    let report = t.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(report["stats"]["files_seen"], 3);
    assert_eq!(report["stats"]["exact_groups"], 0);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "near.txt"])]);
    let members = &report["clusters"][0]["members"];
    assert_eq!(members[0]["aliases"], json!([dot("links/also-a.txt")]));
    assert_eq!(members[1]["aliases"], json!([]));
    assert_eq!(report["clusters"][0]["pairs"][0]["exact"], false);

    // Alone, a file and its hard links are no duplicates of each other.
    let solo = TestDir::new();
    solo.write("x.txt", text(62, 100));
    fs::hard_link(solo.join("x.txt"), solo.join("y.txt")).unwrap();
    fs::hard_link(solo.join("x.txt"), solo.join("z.txt")).unwrap();
    let report = solo.run(&["scan", "."]).json();
    assert_eq!(report["clusters"], json!([]));
    assert_eq!(report["stats"]["documents"], 1);
    assert_eq!(report["stats"]["exact_groups"], 0);

    // A linked file and a real copy of it: one exact pair, the link only an alias.
    solo.write("copy.txt", text(62, 100));
    let report = solo.run(&["scan", "."]).json();
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(report["stats"]["exact_groups"], 1);
    assert_eq!(cluster_paths(&report), vec![dots(&["copy.txt", "x.txt"])]);
    assert_eq!(
        report["clusters"][0]["members"][1]["aliases"],
        json!([dot("y.txt"), dot("z.txt")])
    );
    assert_eq!(all_pairs(&report).len(), 1);
}

#[test]
fn hard_links_found_when_read_keep_their_first_name_whatever_the_threads() {
    // One root and no index: the walk does not stat files, so links are found by the readers,
    // in parallel; the later name's reader may sketch the content first. Each file gets a link
    // named to come after it in walk order ("x.txt" < "x.txt.link").
    let t = TestDir::new();
    for i in 0..40u64 {
        let a = text(300 + i, 200);
        let (x, y) = (format!("d{i:02}-a.txt"), format!("d{i:02}-b.txt"));
        t.write(&x, &a).write(&y, edit(&a, &[90]));
        fs::hard_link(t.join(&x), t.join(format!("{x}.link"))).unwrap();
    }
    let reports: Vec<String> = ["-j1", "-j4"]
        .iter()
        .map(|j| {
            let r = t.run(&["scan", j, "."]);
            assert_eq!(r.code(), 0, "{}", r.stderr);
            r.stdout.clone()
        })
        .collect();
    assert_eq!(reports[0], reports[1]);
    let report: Value = serde_json::from_str(&reports[0]).unwrap();
    assert_eq!(report["stats"]["documents"], 80);
    assert_eq!(report["stats"]["files_seen"], 120);
    assert_eq!(report["stats"]["exact_groups"], 0);
    let clusters =
        cluster_members::<_, Vec<_>>(&report, |m| (m["path"].clone(), m["aliases"].clone()));
    assert_eq!(clusters.len(), 40);
    for (i, c) in clusters.iter().enumerate() {
        let a = dot(&format!("d{i:02}-a.txt"));
        let b = dot(&format!("d{i:02}-b.txt"));
        let link = dot(&format!("d{i:02}-a.txt.link"));
        assert_eq!(c, &vec![(json!(a), json!([link])), (json!(b), json!([]))]);
    }

    // Two roots: the walk stats every file and finds the same links.
    let both = t.run(&["scan", "-j4", ".", "./d00-a.txt"]).json();
    assert_eq!(both["stats"]["documents"], 80);
    assert_eq!(both["clusters"], report["clusters"]);
}
