//! At home in a shell: `--format paths` (and `-0`) through `xargs`, `-o FILE`, the report's own
//! files never scanned, text on a terminal, the one line `-q` leaves on exit status 2, the hints
//! for common mistakes, decimal sizes, refused combinations, `-h` and the man page.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::util::{self, chain, edit, families, machine_neutral, run_command, text, TestDir};

/// Sets a file's modification time to `secs` after the epoch.
fn set_time(t: &TestDir, rel: impl AsRef<Path>, secs: u64) {
    let f = fs::File::options().write(true).open(t.join(rel)).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

/// A shell command run in `dir`, with the binary as `$0`.
fn sh(dir: &Path, script: &str, args: &[&OsStr]) -> util::Run {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(script)
        .arg(util::bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_command(c)
}

/// The original (oldest), three exact copies (one with a name that is not UTF-8, one with a
/// space, one hard-linked under a second name), a near copy, and an unrelated file.
fn copies() -> TestDir {
    let t = TestDir::new();
    let original = text(71, 300);
    t.write("original.txt", &original)
        .write(OsStr::from_bytes(b"copy-\xFF.txt"), &original)
        .write("copy with space.txt", &original)
        .write("sub/copy.txt", &original)
        .write("near.txt", edit(&original, &[150]))
        .write("other.txt", text(72, 300));
    fs::hard_link(t.join("sub/copy.txt"), t.join("sub/copy-link.txt")).unwrap();
    set_time(&t, "original.txt", 1_000_000_000);
    t
}

#[test]
fn paths_lists_every_name_of_each_duplicate_and_never_the_kept_copy() {
    let t = copies();
    let r = t.run(&["scan", "-q", "--format", "paths", "-0", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let out = t
        .command(&["scan", "-q", "--format", "paths", "-0", "."])
        .output()
        .unwrap();
    let mut listed: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    assert_eq!(listed.pop(), Some(&b""[..]), "each name ends in a NUL");
    let mut want: Vec<&[u8]> = vec![
        b"./copy with space.txt",
        b"./copy-\xFF.txt",
        b"./near.txt",
        b"./sub/copy.txt",
        b"./sub/copy-link.txt",
    ];
    listed.sort();
    want.sort();
    assert_eq!(listed, want);
    // The same duplicates as the JSON report's, and never a representative.
    let report = t.run(&["scan", "-q", "."]).json();
    let c = &report["clusters"][0];
    assert_eq!(c["representative"]["path"], "./original.txt");
    assert_eq!(c["duplicates"].as_array().unwrap().len(), 4);

    // One per line without -0.
    let lines = t
        .command(&["scan", "-q", "--format", "paths", "."])
        .output()
        .unwrap();
    let mut by_line: Vec<&[u8]> = lines.stdout.split(|&b| b == b'\n').collect();
    assert_eq!(by_line.pop(), Some(&b""[..]));
    by_line.sort();
    assert_eq!(by_line, want);
}

#[test]
fn a_non_utf8_name_round_trips_through_xargs_0_rm() {
    let t = copies();
    let r = sh(
        t.path(),
        r#""$0" scan -q --format paths -0 . | xargs -0 rm --"#,
        &[],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let mut left: Vec<String> = util::walk_files(t.path())
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(t.path()).unwrap();
            String::from_utf8_lossy(rel.as_os_str().as_bytes()).into_owned()
        })
        .collect();
    left.sort();
    assert_eq!(left, ["original.txt", "other.txt"]);
    // Nothing left to remove.
    let again = t.run(&["scan", "-q", "--format", "paths", "-0", "."]);
    assert_eq!(again.stdout, "");
}

#[test]
fn paths_never_lists_linked_members_dump_records_or_a_name_split_by_a_new_line() {
    // Components: the chain's members not verified against the kept file are not listed.
    let t = chain();
    let json = t
        .run(&["scan", "-q", "--cluster", "components", "."])
        .json();
    let mut dups = Vec::new();
    for c in json["clusters"].as_array().unwrap() {
        assert!(!c["linked"].as_array().unwrap().is_empty(), "{c}");
        for d in c["duplicates"].as_array().unwrap() {
            dups.push(format!("{}\n", d["path"].as_str().unwrap()));
        }
    }
    let r = t.run(&[
        "scan",
        "-q",
        "--cluster",
        "components",
        "--format",
        "paths",
        ".",
    ]);
    assert_eq!(r.stdout, dups.concat());

    // A dump's path names the whole dump: its duplicate records are left out, with a warning.
    let d = TestDir::new();
    let line = |id: u32| {
        format!(
            "{{\"id\":{id},\"text\":\"{}\"}}\n",
            text(5, 60).replace('\n', " ")
        )
    };
    d.write("dump.jsonl", [line(1), line(2)].concat());
    let r = d.run(&["scan", "--format", "paths", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .contains("--format paths: 1 duplicate record of JSON Lines dumps not listed"),
        "{}",
        r.stderr
    );

    // A name holding a new line would read as two names: listed only with -0.
    let n = TestDir::new();
    n.write("a.txt", text(9, 200))
        .write("b\nc.txt", text(9, 200));
    set_time(&n, "a.txt", 1_000_000_000);
    let r = n.run(&["scan", "--format", "paths", "."]);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains(
            "warning: --format paths: ./b\\nc.txt not listed: its name holds a new line (use -0)"
        ),
        "{}",
        r.stderr
    );
    let r = n.run(&["scan", "--format", "paths", "-0", "."]);
    assert_eq!(r.stdout, "./b\nc.txt\0");
    assert_eq!(r.stderr, "");
}

#[test]
fn paths_never_lists_standard_input() {
    // `-` is a copy of a file kept (the older): listed, it would have `xargs rm` remove a file
    // named `-`, which a scan of this directory never saw.
    let t = TestDir::new();
    let doc = text(41, 200);
    t.write("kept.txt", &doc).write("-", "a file named -");
    set_time(&t, "kept.txt", 1_000_000_000);
    for null in [false, true] {
        let mut args = vec!["scan", "--format", "paths", "kept.txt", "-"];
        if null {
            args.push("-0");
        }
        let mut cmd = t.command(&args);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), doc.as_bytes()).unwrap();
        let r = util::wait_guarded(child);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(r.stdout, "", "-0: {null}");
        assert!(
            r.stderr.contains(
                "warning: --format paths: standard input (`-`) is a duplicate and is not listed"
            ),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn output_file_is_replaced_atomically_with_the_umask_and_never_scanned() {
    let t = families();
    let first = sh(
        t.path(),
        r#"umask 027 && exec "$0" scan -q -o report.json ."#,
        &[],
    );
    assert_eq!(first.code(), 0, "{}", first.stderr);
    assert_eq!(first.stdout, "", "the report goes to the file only");
    let report: Value = serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["stats"]["files_seen"], 8);
    let meta = fs::metadata(t.join("report.json")).unwrap();
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o640,
        "0666 less the umask"
    );

    // Again, over the first report: it is not an input, and it is replaced by a rename (a new
    // inode), leaving no temporary file behind.
    let second = t.run(&["scan", "-q", "-o", "report.json", "."]);
    assert_eq!(second.code(), 0, "{}", second.stderr);
    let again: Value = serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap();
    assert_eq!(again, report);
    assert_ne!(
        fs::metadata(t.join("report.json")).unwrap().ino(),
        meta.ino()
    );
    let names: Vec<_> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.as_bytes().starts_with(b".dupfind-"))
        .collect();
    assert!(names.is_empty(), "{names:?}");

    // Through a symbolic link, the file it leads to is replaced and the link stays.
    std::os::unix::fs::symlink("report.json", t.join("link.json")).unwrap();
    let r = t.run(&["scan", "-q", "--format", "jsonl", "-o", "link.json", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(fs::symlink_metadata(t.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    let jsonl = fs::read_to_string(t.join("report.json")).unwrap();
    assert!(jsonl.starts_with("{\"type\":\"header\""), "{jsonl}");

    // `-o -` is standard output; the earlier report is then an input like any other file (and
    // the link is seen, not followed).
    let r = t.run(&["scan", "-q", "-o", "-", "."]);
    assert_eq!(r.json()["stats"]["files_seen"], 10);
}

#[test]
fn an_output_file_that_cannot_be_written_is_refused_before_the_scan() {
    let t = families();
    for (args, says) in [
        (
            &["-o", "missing/report.json"][..],
            "-o missing/report.json: cannot use its directory missing",
        ),
        (&["-o", "sub"], "-o sub: is a directory"),
        (&["-o", "a.txt/x"], "-o a.txt/x: not a directory"),
    ] {
        let r = t.run(&[&["scan"][..], args, &["."]].concat());
        assert_eq!(r.code(), 2, "{args:?}");
        assert_eq!(r.stdout, "");
        assert!(
            r.stderr.starts_with(&format!("dupfind: {says}")),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn the_files_stdout_and_stderr_go_to_are_not_scanned() {
    let t = families();
    // Earlier output in both files, near-duplicates of a.txt: scanned, they would cluster.
    let a = fs::read_to_string(t.join("a.txt")).unwrap();
    t.write("out/report.txt", edit(&a, &[7]))
        .write("out/errors.txt", edit(&a, &[8]));
    for args in [
        &["scan", "."][..],
        &["scan", "-L", "."],
        &["scan", ".", "out"],
    ] {
        let stdout = fs::File::options()
            .append(true)
            .open(t.join("out/report.txt"))
            .unwrap();
        let stderr = fs::File::options()
            .append(true)
            .open(t.join("out/errors.txt"))
            .unwrap();
        let status = Command::new(util::bin())
            .args(args)
            .current_dir(t.path())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}");
        let written = fs::read_to_string(t.join("out/report.txt")).unwrap();
        let json = &written[written.find("\n{\n").unwrap() + 1..];
        let report: Value = serde_json::from_str(json).unwrap();
        assert_eq!(report["stats"]["files_seen"], 8, "{args:?}");
        util::assert_families(&report);
        // Start the next run from the near-duplicate alone.
        t.write("out/report.txt", edit(&a, &[7]));
    }
}

#[test]
fn a_terminal_gets_text_and_a_pipe_or_file_gets_json() {
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("note: util-linux script(1) is missing; terminal test skipped");
        return;
    }
    let t = families();
    // script(1) runs the command on a pseudo-terminal: stdout and stderr are terminals.
    let in_terminal = |command: &str, no_color: bool| {
        let mut c = Command::new("script");
        c.args(["-qec", &format!("'{}' {command}", util::bin()), "/dev/null"])
            .current_dir(t.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let r = run_command(c);
        assert_eq!(r.code(), 0, "{command}: {}", r.stderr);
        r.stdout.replace("\r\n", "\n")
    };
    let text = in_terminal("scan --progress never .", true);
    assert!(text.starts_with("cluster 1 of 2: 2 documents"), "{text}");
    let size = std::fs::metadata(t.join("a.txt")).unwrap().len();
    let keep = format!("\n  keep  ./a.txt  {}\n", util::size_in_words(size));
    assert!(text.contains(&keep), "{text}");
    assert!(text.contains("\n  dup   ./sub/a-edited.txt  0."), "{text}");
    assert!(
        machine_neutral(&text).ends_with(
            "2 clusters, 3 duplicates among 8 documents (0 exact groups), 0 bytes reclaimable; \
             0 unreadable\n"
        ),
        "{text}"
    );
    // Colour unless NO_COLOR; never the banding note without -v.
    let coloured = in_terminal("scan --progress never .", false);
    assert!(coloured.contains("\x1b[1;32mkeep\x1b[0m"), "{coloured}");
    assert_eq!(
        in_terminal("scan --progress never --color never .", false),
        text
    );
    assert!(!coloured.contains("note:"), "{coloured}");
    // --format wins; -o FILE is a file, not the terminal.
    let json = in_terminal("scan --progress never --format json .", true);
    assert!(json.starts_with("{\n  \"schema_version\""), "{json}");
    // A pipe gets JSON, as before.
    util::assert_families(&t.run(&["scan", "."]).json());
    assert_eq!(in_terminal("scan -q -o r.json .", true), "");
    let report: Value = serde_json::from_slice(&fs::read(t.join("r.json")).unwrap()).unwrap();
    util::assert_families(&report);
}

#[test]
fn quiet_leaves_one_line_when_some_input_could_not_be_read() {
    let t = families();
    t.write("list", "a.txt\nmissing-1.txt\nmissing-2.txt\n")
        .write("d.jsonl", "{\"text\":\"one two three\"}\nnot json\n");
    let r = t.run(&["scan", "-q", "--files-from", "list"]);
    assert_eq!(r.code(), 2);
    assert_eq!(
        r.json()["errors"].as_array().unwrap().len(),
        2,
        "the report is printed"
    );
    assert_eq!(
        r.stderr,
        "dupfind: 2 inputs could not be read (run without -q for details)\n"
    );
    let r = t.run(&["scan", "-q", "d.jsonl"]);
    assert_eq!(r.code(), 2);
    assert_eq!(
        r.stderr,
        "dupfind: 1 line of a JSON Lines dump held no document (run without -q for details)\n"
    );
    // Nothing when every input was read.
    let r = t.run(&["scan", "-q", "a.txt", "b.txt"]);
    assert_eq!((r.code(), r.stderr.as_str()), (0, ""));
}

#[test]
fn notes_need_verbose_and_warnings_do_not() {
    let t = families();
    let plain = t.run(&["scan", "."]);
    assert_eq!(plain.stderr, "", "no banding note by default");
    let verbose = t.run(&["scan", "-v", "."]);
    assert!(
        verbose
            .stderr
            .starts_with("dupfind: note: threshold 0.8: 19 bands × 6 rows"),
        "{}",
        verbose.stderr
    );
    assert_eq!(plain.stdout, verbose.stdout);
    // A poor S-curve is a warning: pairs will be missed.
    let poor = t.run(&["scan", "--bands", "2", "--rows", "20", "."]);
    assert!(
        poor.stderr
            .starts_with("dupfind: warning: false-negative probability"),
        "{}",
        poor.stderr
    );
    let r = t.run(&["scan", "-q", "-v", "."]);
    assert_eq!(r.code(), 2);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
}

#[test]
fn mistakes_get_hints() {
    let t = families();
    for (args, tips) in [
        (
            &["sub"][..],
            &["tip: 'sub' is a path; to scan it: `dupfind scan sub`"][..],
        ),
        (
            &["corpus"],
            &[
                "tip: the benchmark corpus generator is an example program of the source tree, \
                 not a subcommand: `cargo run --release --example corpus -- gen --out DIR`",
                "tip: to scan a directory named corpus: `dupfind scan corpus`",
            ],
        ),
        (
            &["./nothing-here"],
            &["tip: to scan a path: `dupfind scan PATH` ('./nothing-here' does not exist)"],
        ),
        (
            &["-t", "0.9", "."],
            &["tip: -t is an option of scan, and goes after it: `dupfind scan -t …`"],
        ),
    ] {
        let r = t.run(args);
        assert_eq!(r.code(), 2, "{args:?}");
        assert_eq!(r.stdout, "");
        for tip in tips {
            assert!(r.stderr.contains(tip), "{args:?}: {}", r.stderr);
        }
    }
    // clap's own suggestion stays.
    let r = t.run(&["scna", "."]);
    assert!(
        r.stderr.contains("similar subcommand exists: 'scan'"),
        "{}",
        r.stderr
    );
}

#[test]
fn sizes_take_decimals_or_say_what_is_wrong() {
    let t = TestDir::new();
    let big = text(1, 400);
    assert!(big.len() > 1536 && big.len() < 4096, "{}", big.len());
    t.write("big.txt", &big)
        .write("big-copy.txt", &big)
        .write("small.txt", text(2, 30));
    let r = t.run(&["scan", "--min-size", "1.5K", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["skipped"]["too_short"], 1);
    let r = t.run(&["scan", "-q", "--max-size", "0.5k", "."]);
    assert_eq!(r.json()["stats"]["skipped"]["too_large"], 2);
    for (size, says) in [
        (
            "1.5",
            "'1.5': a number of bytes is a whole number (a fraction needs a unit: 1.5K)",
        ),
        (
            "1.5X",
            "'1.5X': unknown unit 'X' (use K, M, G or T (powers of 1024: 64K, 1.5M, 2GiB))",
        ),
        ("-2K", "'-2K': a size cannot be negative"),
        ("1.2.3K", "'1.2.3K': '1.2.3' is not a number"),
        ("K", "'K' does not start with a number"),
    ] {
        // With `=`, so that "-2K" is not taken for a flag.
        let r = t.run(&["scan", &format!("--min-size={size}"), "."]);
        assert_eq!(r.code(), 2, "{size}");
        assert!(
            r.stderr.contains(&format!(
                "invalid value '{size}' for '--min-size <BYTES>': {says}"
            )),
            "{size}: {}",
            r.stderr
        );
    }
}

#[test]
fn options_that_cannot_apply_together_are_refused() {
    let t = families();
    for (args, says) in [
        (
            &["--min-similarity", "0.7"][..],
            "--min-similarity 0.7 is below --threshold 0.8",
        ),
        (
            &["-m", "simhash", "--min-similarity", "0.9"],
            "--min-similarity 0.9 allows a distance of 6, more than --max-distance 3",
        ),
        (
            &["--pairs", "--format", "paths"],
            "--pairs adds the evidence for each pair",
        ),
        (&["-0"], "-0 (--null) applies to --files-from"),
        (
            &["--color", "always", "--format", "jsonl"],
            "--color always applies to --format text, not --format jsonl",
        ),
        (
            &["-q", "--progress", "always"],
            "--quiet hides the progress bar",
        ),
        (
            &["--color", "always"],
            "--color always applies to the text format, and the report is json here",
        ),
    ] {
        let r = t.run(&[&["scan"][..], args, &["."]].concat());
        assert_eq!(r.code(), 2, "{args:?}");
        assert_eq!(r.stdout, "", "{args:?}");
        assert!(
            r.stderr.starts_with(&format!("dupfind: {says}")),
            "{args:?}: {}",
            r.stderr
        );
    }
    // --pairs with text shows the pairs rather than dropping them.
    let r = t.run(&["scan", "--pairs", "--format", "text", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("\n  pair  ./a.txt ~ ./sub/a-edited.txt  similarity 0."),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(" shared shingles, estimate "),
        "{}",
        r.stdout
    );
}

#[test]
fn short_help_is_grouped_and_long_help_explains() {
    let t = TestDir::new();
    let short = t.run(&["scan", "-h"]);
    let long = t.run(&["scan", "--help"]);
    assert_eq!((short.code(), long.code()), (0, 0));
    let headings: Vec<&str> = short
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Arguments:",
            "Options:",
            "Input:",
            "Similarity:",
            "Performance:",
            "Output:"
        ]
    );
    // Each option once, on a line of its own.
    let options: Vec<&str> = (short.stdout.lines())
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| l.trim_start().split("  ").next())
        .collect();
    for flag in [
        "--files-from",
        "--threshold",
        "--threads",
        "--format",
        "--output",
        "--verbose",
    ] {
        let lines = options
            .iter()
            .filter(|o| o.split([' ', ',']).any(|w| w == flag));
        assert_eq!(lines.count(), 1, "{flag}: {options:?}");
    }
    assert!(short.stdout.lines().count() < 80, "{}", short.stdout);
    // The long form has each option's explanation, the exit status, environment and examples.
    for text in [
        "For `find -print0` on the way in",
        "Exit status:",
        "RAYON_NUM_THREADS: Worker threads",
        "xargs -0 rm",
        "Without --format, a terminal gets text",
    ] {
        assert!(long.stdout.contains(text), "{text}");
        assert!(!short.stdout.contains(text), "-h: {text}");
    }
}

#[test]
fn man_pages_have_exit_status_environment_and_examples() {
    let t = TestDir::new();
    for (page, title) in [
        (vec!["man"], ".TH dupfind 1"),
        (vec!["man", "scan"], ".TH dupfind-scan 1"),
    ] {
        let r = t.run(&page);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let roff = &r.stdout;
        assert!(roff.contains(&format!("\n{title} ")), "{roff}");
        assert_eq!(roff.matches(".ds Aq").count(), 2, "one preamble (.ie, .el)");
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH DESCRIPTION",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH EXAMPLES",
        ] {
            assert!(
                roff.contains(&format!("{section}\n")),
                "{page:?} lacks {section}"
            );
        }
        for var in ["NO_COLOR", "RAYON_NUM_THREADS", "TMPDIR"] {
            assert!(
                roff.contains(&format!("\\fB{var}\\fR")),
                "{page:?} lacks {var}"
            );
        }
        assert!(roff.contains("\\fB130\\fR"), "{page:?}");
    }
    let scan = t.run(&["man", "scan"]).stdout;
    for section in [
        ".SH INPUT",
        ".SH SIMILARITY",
        ".SH OUTPUT",
        ".SH PERFORMANCE",
        ".SH NOTES",
    ] {
        assert!(
            scan.contains(&format!("{section}\n")),
            "man scan lacks {section}"
        );
    }
    assert!(scan.contains("xargs \\-0 rm"), "{scan}");
}

#[test]
fn a_closed_pipe_ends_paths_and_a_direct_output_quietly() {
    let t = TestDir::new();
    let same = text(51, 50);
    // 3,000 names of 60 bytes: far more than a pipe holds.
    for i in 0..3000 {
        t.write(format!("{:0>50}-{i:04}.txt", "copy"), &same);
    }
    for script in [
        r#"{ "$0" scan --format paths .; echo "$?" > status; } | head -c 10"#,
        r#"{ "$0" scan -o /dev/stdout .; echo "$?" > status; } | head -c 10"#,
    ] {
        let r = sh(t.path(), script, &[]);
        assert_eq!(r.code(), 0, "{script}: {}", r.stderr);
        assert_eq!(r.stdout.len(), 10, "{script}");
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(r.warnings().is_empty(), "{script}: {}", r.stderr);
        assert_eq!(
            fs::read_to_string(t.join("status")).unwrap().trim(),
            "0",
            "{script}"
        );
    }
}
