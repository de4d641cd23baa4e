//! Walking as ripgrep and fd walk: hidden entries, `.gitignore` (inside a git repository),
//! `.ignore` and `.git/info/exclude` skipped and counted; `--hidden`, `--no-ignore`, `-u`, `-uu`;
//! roots named on the command line always scanned; a missing root among good ones;
//! `--max-depth`; `-e`.

use serde_json::{json, Value};

use super::util::{cluster_paths, mkfifo, text, Run, TestDir};

/// The text every file below is a copy of: the files scanned are then the one cluster's members.
fn copy() -> String {
    text(7, 120)
}

/// Writes a copy of the same text at each path.
fn copies(t: &TestDir, paths: &[&str]) {
    for p in paths {
        t.write(p, copy());
    }
}

/// The members of the only cluster (the scanned copies), `stats.documents` and the hidden and
/// ignored counts.
fn scanned(r: &Run) -> (Vec<String>, Value, Value, Value) {
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    let clusters = cluster_paths(&report);
    assert!(clusters.len() <= 1, "{clusters:?}");
    let stats = &report["stats"];
    (
        clusters.into_iter().next().unwrap_or_default(),
        stats["documents"].clone(),
        stats["skipped"]["hidden"].clone(),
        stats["skipped"]["ignored"].clone(),
    )
}

fn strings(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

/// A git checkout: `.git/` with files that are copies too, a `.gitignore`d directory and
/// pattern, a `.ignore`, `.git/info/exclude`, hidden files and directories, and a nested
/// `.gitignore` whose `!` re-includes one file.
fn checkout() -> TestDir {
    checkout_at("repo")
}

/// [`checkout`] with the repository at `repo`.
fn checkout_at(repo: &str) -> TestDir {
    let t = TestDir::new();
    let files = [
        ".git/HEAD",
        ".git/hooks/pre-commit.sample",
        "a.txt",
        "src/b.txt",
        "src/y.log",
        "target/c.txt",
        "x.log",
        "scratch/d.txt",
        "notes.local",
        ".env",
        ".hidden/e.txt",
        "sub/keep.txt",
        "sub/drop.txt",
        "sub/.hidden.txt",
    ];
    let paths: Vec<String> = files.iter().map(|f| format!("{repo}/{f}")).collect();
    copies(&t, &paths.iter().map(String::as_str).collect::<Vec<_>>());
    t.write(format!("{repo}/.git/info/exclude"), "# local\n*.local\n")
        .write(format!("{repo}/.gitignore"), "target/\n*.log\n")
        .write(format!("{repo}/.ignore"), "scratch/\n")
        .write(
            format!("{repo}/sub/.gitignore"),
            "*.txt\n!keep.txt\n!.hidden.txt\n",
        );
    t
}

#[test]
fn a_git_checkout_skips_git_hidden_and_ignored_entries_and_counts_them() {
    let t = checkout();
    let (paths, documents, hidden, ignored) = scanned(&t.run(&["scan", "repo"]));
    // sub/.hidden.txt: hidden, but whitelisted by a `!` pattern, so scanned (as ripgrep does).
    assert_eq!(
        paths,
        strings(&[
            "repo/a.txt",
            "repo/src/b.txt",
            "repo/sub/.hidden.txt",
            "repo/sub/keep.txt"
        ])
    );
    assert_eq!(documents, 4);
    // .env, .git, .gitignore, .hidden, .ignore, sub/.gitignore.
    assert_eq!(hidden, 6);
    // notes.local (exclude), scratch (.ignore), src/y.log, target, x.log (.gitignore),
    // sub/drop.txt (sub/.gitignore).
    assert_eq!(ignored, 6);

    // --hidden: hidden entries too, but never .git.
    let (paths, documents, hidden, ignored) = scanned(&t.run(&["scan", "--hidden", "repo"]));
    assert_eq!(
        paths,
        strings(&[
            "repo/.env",
            "repo/.hidden/e.txt",
            "repo/a.txt",
            "repo/src/b.txt",
            "repo/sub/.hidden.txt",
            "repo/sub/keep.txt"
        ])
    );
    // The copies, .gitignore, .ignore and sub/.gitignore.
    assert_eq!((documents, hidden, ignored), (json!(9), json!(1), json!(6)));

    // --no-ignore and -u: ignore files unread, hidden entries still skipped.
    let no_ignore = t.run(&["scan", "--no-ignore", "repo"]);
    let (paths, documents, hidden, ignored) = scanned(&no_ignore);
    assert_eq!(
        paths,
        strings(&[
            "repo/a.txt",
            "repo/notes.local",
            "repo/scratch/d.txt",
            "repo/src/b.txt",
            "repo/src/y.log",
            "repo/sub/drop.txt",
            "repo/sub/keep.txt",
            "repo/target/c.txt",
            "repo/x.log"
        ])
    );
    // Without its whitelist, sub/.hidden.txt is hidden again.
    assert_eq!((documents, hidden, ignored), (json!(9), json!(7), json!(0)));
    assert_eq!(t.run(&["scan", "-u", "repo"]).stdout, no_ignore.stdout);

    // -uu: everything but .git.
    let uu = t.run(&["scan", "-uu", "repo"]);
    let (paths, documents, hidden, ignored) = scanned(&uu);
    assert_eq!(paths.len(), 12, "{paths:?}");
    assert!(paths.iter().all(|p| !p.contains(".git/")), "{paths:?}");
    assert_eq!(
        (documents, hidden, ignored),
        (json!(15), json!(1), json!(0))
    );
    assert_eq!(
        t.run(&["scan", "--no-ignore", "--hidden", "repo"]).stdout,
        uu.stdout
    );
    let r = t.run(&["scan", "-uuu", "repo"]);
    assert_eq!(r.code(), 2);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("-u at most twice"), "{}", r.stderr);
}

#[test]
fn named_roots_are_scanned_even_when_hidden_or_ignored() {
    let t = checkout();
    let (paths, ..) = scanned(&t.run(&[
        "scan",
        "repo/.env",
        "repo/target/c.txt",
        "repo/.hidden",
        "repo/x.log",
    ]));
    assert_eq!(
        paths,
        strings(&[
            "repo/.env",
            "repo/.hidden/e.txt",
            "repo/target/c.txt",
            "repo/x.log"
        ])
    );
    // A root below the top of the repository: the .gitignore above it still applies
    // (src/y.log), and a named ignored directory is walked (target/ matches the directory).
    let (paths, documents, _, ignored) = scanned(&t.run(&["scan", "repo/src", "repo/target"]));
    assert_eq!(paths, strings(&["repo/src/b.txt", "repo/target/c.txt"]));
    assert_eq!((documents, ignored), (json!(2), json!(1)));
    // The same from inside the directory: parent directories' ignore files are found from
    // the root's absolute path.
    let r = super::util::run_command({
        let mut c = t.command(&["scan", "."]);
        c.current_dir(t.join("repo/src"));
        c
    });
    let (paths, _, _, ignored) = scanned(&r);
    assert!(paths.is_empty(), "one document, no cluster: {paths:?}");
    assert_eq!(r.json()["stats"]["documents"], 1);
    assert_eq!(ignored, 1);

    // --files-from names are given explicitly too.
    t.write("list", "repo/.env\nrepo/x.log\n");
    let (paths, ..) = scanned(&t.run(&["scan", "--files-from", "list"]));
    assert_eq!(paths, strings(&["repo/.env", "repo/x.log"]));
}

#[test]
fn a_gitignore_outside_a_git_repository_is_not_honoured_but_an_ignore_is() {
    let t = TestDir::new();
    copies(
        &t,
        &["plain/a.txt", "plain/b.txt", "plain/c.md", "plain/d/e.txt"],
    );
    t.write("plain/.gitignore", "*.txt\n")
        .write("plain/.ignore", "*.md\n");
    let (paths, documents, hidden, ignored) = scanned(&t.run(&["scan", "plain"]));
    assert_eq!(
        paths,
        strings(&["plain/a.txt", "plain/b.txt", "plain/d/e.txt"])
    );
    assert_eq!((documents, hidden, ignored), (json!(3), json!(2), json!(1)));

    // Made a repository (a `.git` file, as in a worktree, counts), the .gitignore applies.
    t.write("plain/.git", "gitdir: /nonexistent\n");
    let (paths, _, hidden, ignored) = scanned(&t.run(&["scan", "plain"]));
    assert!(paths.is_empty(), "{paths:?}");
    assert_eq!((hidden, ignored), (json!(3), json!(4)));

    // A repository nested in another: the outer .gitignore stops at the inner one's top.
    let n = TestDir::new();
    copies(
        &n,
        &["outer/a.txt", "outer/inner/b.txt", "outer/inner/c.txt"],
    );
    n.mkdir("outer/.git").mkdir("outer/inner/.git");
    n.write("outer/.gitignore", "*.txt\n")
        .write("outer/inner/.gitignore", "c.txt\n");
    let (paths, documents, _, ignored) = scanned(&n.run(&["scan", "outer"]));
    assert!(paths.is_empty(), "{paths:?}");
    assert_eq!((documents, ignored), (json!(1), json!(2)));
}

#[test]
fn a_worktree_reads_the_exclude_file_of_its_common_repository() {
    let t = TestDir::new();
    copies(&t, &["wt/a.tmp", "wt/b.txt", "wt/c.txt"]);
    t.write("main/.git/info/exclude", "*.tmp\n")
        .write("main/.git/worktrees/wt/commondir", "../..\n")
        .write(
            "wt/.git",
            format!("gitdir: {}\n", t.join("main/.git/worktrees/wt").display()),
        );
    let (paths, documents, hidden, ignored) = scanned(&t.run(&["scan", "wt"]));
    assert_eq!(paths, strings(&["wt/b.txt", "wt/c.txt"]));
    assert_eq!((documents, hidden, ignored), (json!(2), json!(1), json!(1)));
}

#[test]
fn ignore_files_that_are_fifos_never_block_and_output_does_not_depend_on_threads() {
    let t = checkout();
    mkfifo(&t.join("repo/src/.gitignore"));
    let one = t.run(&["scan", "-j1", "repo"]);
    let two = t.run(&["scan", "-j2", "repo"]);
    assert_eq!(one.code(), 0, "{}", one.stderr);
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.json()["stats"]["skipped"]["hidden"], 7);
    for args in [
        &["--hidden"][..],
        &["-uu"],
        &["--max-depth", "2"],
        &["-e", "txt"],
    ] {
        let run = |j: &str| t.run(&[&["scan", j][..], args, &["repo"]].concat()).stdout;
        assert_eq!(run("-j1"), run("-j2"), "{args:?}");
    }
}

#[test]
fn a_checkout_deep_below_the_root_is_walked_as_when_named_at_any_thread_count() {
    // Subdirectories are walked in parallel down to a few levels below the root and by one
    // walker below: a repository three levels down has its ignore files on both sides of that
    // line, and each directory's are read from its listing.
    let t = checkout_at("a/b/c/repo");
    t.write("a/b/x.txt", copy()).write("a/b/.y.txt", copy());
    let named = scanned(&t.run(&["scan", "-j1", "a/b/c/repo"]));
    let count = |v: &Value| v.as_u64().unwrap_or_default();
    assert!(named.0.contains(&"a/b/c/repo/sub/keep.txt".to_string()));
    assert!(count(&named.3) >= 4, "{named:?}");
    let mut expected = named.0.clone();
    expected.push("a/b/x.txt".to_string());
    expected.sort();
    for j in ["-j1", "-j2", "-j3"] {
        let (mut members, documents, hidden, ignored) = scanned(&t.run(&["scan", j, "a"]));
        members.sort();
        assert_eq!(members, expected, "{j}");
        assert_eq!(count(&documents), count(&named.1) + 1, "{j}");
        assert_eq!(count(&hidden), count(&named.2) + 1, "{j}");
        assert_eq!(ignored, named.3, "{j}");
    }
    for args in [&["--max-depth", "5"][..], &["--hidden"], &["--no-ignore"]] {
        let run = |j: &str| t.run(&[&["scan", j][..], args, &["a"]].concat()).stdout;
        assert_eq!(run("-j1"), run("-j2"), "{args:?}");
    }
}

#[test]
fn a_missing_root_among_good_ones_is_an_input_error_and_the_rest_is_scanned() {
    let t = TestDir::new();
    copies(&t, &["x/a.txt", "y/b.txt"]);
    mkfifo(&t.join("pipe"));
    for (bad, reason) in [
        ("no-such-dir", "no such file or directory"),
        (
            "pipe",
            "not a directory or regular file (a FIFO, socket or device)",
        ),
        (
            "/dev/null",
            "not a directory or regular file (a FIFO, socket or device)",
        ),
    ] {
        let r = t.run(&["scan", "x", bad, "y"]);
        assert_eq!(r.code(), 2, "{bad}: {}", r.stderr);
        let report = r.json();
        assert_eq!(
            cluster_paths(&report),
            vec![strings(&["x/a.txt", "y/b.txt"])]
        );
        assert_eq!(report["errors"], json!([{"path": bad, "error": reason}]));
        assert_eq!(report["stats"]["skipped"]["error"], 1);
        assert_eq!(
            r.warnings(),
            vec![format!("dupfind: warning: {bad}: {reason}")],
            "{bad}"
        );
    }
    // Alone, it gives an empty report, still with the error.
    let r = t.run(&["scan", "-q", "no-such-dir"]);
    assert_eq!(r.code(), 2);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], 0);
    assert_eq!(report["errors"][0]["path"], "no-such-dir");
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "-q leaves one line: {}",
        r.stderr
    );
}

#[test]
fn max_depth_counts_levels_below_each_root() {
    let t = TestDir::new();
    copies(
        &t,
        &["top/a.txt", "top/d1/b.txt", "top/d1/d2/c.txt", "f.txt"],
    );
    let depth = |n: &str| {
        let r = t.run(&["scan", "-j2", "--max-depth", n, "top", "f.txt"]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let report = r.json();
        (
            report["stats"]["documents"].clone(),
            cluster_paths(&report)
                .into_iter()
                .next()
                .unwrap_or_default(),
        )
    };
    // 0: the roots alone, so only the file root.
    assert_eq!(depth("0"), (json!(1), vec![]));
    assert_eq!(depth("1").1, strings(&["f.txt", "top/a.txt"]));
    assert_eq!(
        depth("2").1,
        strings(&["f.txt", "top/a.txt", "top/d1/b.txt"])
    );
    assert_eq!(depth("3").0, 4);
    // One root and two threads (the split walk): the same depths.
    for (n, docs) in [("0", 0), ("1", 1), ("2", 2), ("3", 3)] {
        let one = t.run(&["scan", "-j1", "--max-depth", n, "top"]);
        let two = t.run(&["scan", "-j2", "--max-depth", n, "top"]);
        assert_eq!(one.stdout, two.stdout, "{n}");
        assert_eq!(one.json()["stats"]["documents"], docs, "{n}");
    }
}

#[test]
fn extension_keeps_names_ending_in_it_ignoring_case_and_compression() {
    let t = TestDir::new();
    copies(
        &t,
        &[
            "d/a.txt",
            "d/b.TXT",
            "d/c.md",
            "d/e.txt.gz",
            "d/f.txtx",
            "d/g",
            "d/txt",
            "d/h.gz",
            "d/s/i.txt",
        ],
    );
    let paths = |args: &[&str]| scanned(&t.run(&[&["scan", "-j2"][..], args, &["d"]].concat())).0;
    assert_eq!(
        paths(&["-e", "txt"]),
        strings(&["d/a.txt", "d/b.TXT", "d/e.txt.gz", "d/s/i.txt"])
    );
    assert_eq!(
        paths(&["-e", ".MD", "--extension", "txt"]),
        strings(&["d/a.txt", "d/b.TXT", "d/c.md", "d/e.txt.gz", "d/s/i.txt"])
    );
    assert_eq!(paths(&["-e", "gz"]), strings(&["d/e.txt.gz", "d/h.gz"]));
    // A root named on the command line is scanned whatever its name.
    let (named, ..) = scanned(&t.run(&["scan", "-e", "md", "d/g", "d/s", "d/c.md"]));
    assert_eq!(named, strings(&["d/c.md", "d/g"]));
    let r = t.run(&["scan", "-e", "", "d"]);
    assert_eq!(r.code(), 2);
    assert!(r.stderr.contains("an extension is"), "{}", r.stderr);
}

/// `n` patterns of `**/dirI/*N.log` (about 9 KB each once compiled) and, last, `*.skip`.
fn many_patterns(n: usize) -> String {
    let mut patterns: String = (0..n)
        .map(|i| format!("**/dir{}/*{i:06}.log\n", i % 1000))
        .collect();
    patterns.push_str("*.skip\n");
    patterns
}

/// (path, error) of each error in the report.
fn errors(report: &Value) -> Vec<(String, String)> {
    (report["errors"].as_array().unwrap().iter())
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("path"), s("error"))
        })
        .collect()
}

/// An ignore file whose matchers would take more than half of --max-memory is not built: an
/// input error names it and what to do, and its patterns are not applied (its files are read,
/// as when an ignore file cannot be read). Under a budget that holds it, it applies.
#[test]
fn an_ignore_file_over_half_the_memory_budget_is_an_input_error_not_applied() {
    let t = TestDir::new();
    t.mkdir("repo/.git");
    t.write("repo/.gitignore", many_patterns(4000));
    copies(&t, &["repo/a.txt", "repo/b.skip"]);
    let r = t.run(&["scan", "--max-memory", "64M", "repo"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(cluster_paths(&report), [["repo/a.txt", "repo/b.skip"]]);
    let want = "an ignore file of 4001 patterns, which need about 46.0 MiB of memory to match, \
                more than the ignore files of a directory may take under --max-memory \
                (32.0 MiB, half of it); its patterns are not applied: raise --max-memory, or \
                pass --no-ignore to read no ignore file";
    assert_eq!(errors(&report), [("repo/.gitignore".into(), want.into())]);
    assert!(
        r.stderr.contains(&format!("repo/.gitignore: {want}")),
        "{}",
        r.stderr
    );
    let (members, documents, _, ignored) = scanned(&t.run(&["scan", "--max-memory", "1G", "repo"]));
    assert_eq!((members, documents, ignored), (vec![], json!(1), json!(1)));
}

/// The ignore files that apply to a directory count together: a nested one that fits alone but
/// not beside its parent's is refused, and the parent's still applies.
#[test]
fn ignore_files_above_a_directory_count_against_the_same_half_of_the_budget() {
    let t = TestDir::new();
    t.mkdir("repo/.git");
    t.write("repo/.gitignore", many_patterns(1500));
    t.write(
        "repo/sub/.gitignore",
        many_patterns(1500).replace("*.skip", "*.also"),
    );
    copies(
        &t,
        &[
            "repo/a.txt",
            "repo/b.skip",
            "repo/sub/c.txt",
            "repo/sub/d.also",
        ],
    );
    let r = t.run(&["scan", "--max-memory", "64M", "repo"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(
        cluster_paths(&report),
        [["repo/a.txt", "repo/sub/c.txt", "repo/sub/d.also"]]
    );
    let errors = errors(&report);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "repo/sub/.gitignore");
    assert!(
        errors[0].1.starts_with(
            "an ignore file of 1501 patterns, which need about 17.3 MiB of memory to match \
             (34.5 MiB with the ignore files above it), more than"
        ),
        "{errors:?}"
    );
}
