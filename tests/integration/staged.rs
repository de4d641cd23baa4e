//! The staged pipeline (`dupfind stage …`): its report equals `scan`'s byte for byte for any
//! number of shards and partitions, and a damaged, missing or foreign work file is a clear error
//! naming it, with nothing overwritten.

use std::fs;
use std::path::Path;

use super::util::{edit, text, Run, TestDir};

/// Runs every stage as a separate process, shards and partitions one after another, in `t`
/// with work directory `work` (beside the scanned tree `c`, so that a scan of it never reads a
/// work directory); returns the report stage's run.
pub(super) fn staged(t: &TestDir, work: &str, shards: u32, parts: u32, args: &[&str]) -> Run {
    let said = stages_before_report(t, work, (shards, parts), args);
    let mut report = t.run(&["stage", "report", "--work", work]);
    report.stderr = said + &report.stderr;
    report
}

/// Runs `stage init` with `args` and every stage after it but the report, as [`staged`] does;
/// returns what they said on stderr, in order.
pub(super) fn stages_before_report(
    t: &TestDir,
    work: &str,
    (shards, parts): (u32, u32),
    args: &[&str],
) -> String {
    let (s, p) = (shards.to_string(), parts.to_string());
    let init = [
        &[
            "stage", "init", "--work", work, "--shards", &s, "--parts", &p,
        ][..],
        args,
    ]
    .concat();
    let r = t.run(&init);
    assert_eq!(r.code(), 0, "init {args:?}: {}", r.stderr);
    // What every stage said on stderr, in the order a driver runs them.
    let mut said = r.stderr;
    let each = |said: &mut String, stage: &str, flag: &str, n: u32| {
        for i in 0..n {
            let index = format!("{i}/{n}");
            let r = t.run(&["stage", stage, "--work", work, flag, &index]);
            assert_eq!(r.code(), 0, "{stage} {index} {args:?}: {}", r.stderr);
            *said += &r.stderr;
        }
    };
    each(&mut said, "sign", "--shard", shards);
    if args.contains(&"--against") {
        let r = t.run(&["stage", "attach", "--work", work]);
        assert_eq!(r.code(), 0, "attach {args:?}: {}", r.stderr);
        said += &r.stderr;
    }
    each(&mut said, "group", "--part", parts);
    let r = t.run(&["stage", "components", "--work", work]);
    assert_eq!(r.code(), 0, "components {args:?}: {}", r.stderr);
    said += &r.stderr;
    each(&mut said, "route", "--shard", shards);
    each(&mut said, "verify", "--part", parts);
    said
}

/// Asserts that the staged run `r` printed on stdout and stderr what `scan` did, and exited as
/// it did; `at` names the run.
pub(super) fn assert_same_run(scan: &Run, r: &Run, at: &str) {
    assert_eq!(r.code(), scan.code(), "{at}: {}", r.stderr);
    assert!(
        r.stdout == scan.stdout,
        "{at}: the report differs from scan's\n{}",
        first_difference(&scan.stdout, &r.stdout)
    );
    assert!(
        r.stderr == scan.stderr,
        "{at}: the stages' stderr differs from scan's\n{}",
        first_difference(&scan.stderr, &r.stderr)
    );
}

/// Asserts that the staged pipeline at each (shards, parts) prints what `scan` prints with
/// `args`, and exits as it does.
pub(super) fn assert_same_as_scan(t: &TestDir, args: &[&str], layouts: &[(u32, u32)]) {
    let scan = t.run(&[&["scan"][..], args].concat());
    assert!(
        scan.code() == 0 || scan.code() == 2,
        "{args:?}: {}",
        scan.stderr
    );
    assert!(
        scan.stdout.contains("cluster"),
        "the corpus has clusters: {}",
        scan.stdout
    );
    for (i, &(shards, parts)) in layouts.iter().enumerate() {
        let work = format!("work-{}-{i}", args.join("").replace(['/', '.', ' '], ""));
        let r = staged(t, &work, shards, parts, args);
        assert_same_run(
            &scan,
            &r,
            &format!("{args:?} at {shards} shards, {parts} parts"),
        );
    }
}

pub(super) fn first_difference(a: &str, b: &str) -> String {
    let at = a.lines().zip(b.lines()).position(|(x, y)| x != y);
    match at {
        Some(i) => format!(
            "line {}:\n  scan:   {}\n  staged: {}",
            i + 1,
            a.lines().nth(i).unwrap_or(""),
            b.lines().nth(i).unwrap_or("")
        ),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

/// Families of near-copies and a chain, byte-identical copies in different directories (so
/// different shards), empty and blank documents, a binary file, unrelated texts, and a hot
/// bucket: 60 documents that share a boilerplate header long enough to fill whole bands but
/// differ in the rest.
pub(super) fn corpus(t: &TestDir) {
    for f in 0..6u64 {
        let base = text(700 + f, 250);
        for v in 0..4usize {
            let name = format!("c/d{}/fam{f}-{v}.txt", (f as usize + v) % 5);
            t.write(name, edit(&base, &[v * 17, v * 31 + 3]));
        }
    }
    let a = text(800, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    t.write("c/d0/chain-a.txt", &a)
        .write("c/d2/chain-b.txt", &b)
        .write("c/d4/chain-c.txt", &c)
        .write("c/d1/copy-of-a.txt", &a)
        .write("c/d3/another-copy-of-a.txt", &a)
        .write("c/d3/empty.txt", "")
        .write("c/d4/blank.txt", " \n\t\n")
        .write("c/d2/bin.dat", b"\x00\x01\x02 binary");
    let header = text(900, 120);
    for i in 0..60u64 {
        t.write(
            format!("c/d{}/hot-{i:02}.txt", i % 5),
            format!("{header} {}", text(1000 + i, 40)),
        );
    }
    for i in 0..10u64 {
        t.write(format!("c/d{}/alone-{i}.txt", i % 5), text(2000 + i, 200));
    }
}

const LAYOUTS: [(u32, u32); 5] = [(1, 1), (2, 1), (3, 2), (5, 4), (2, 3)];

#[test]
fn staged_minhash_reports_equal_scan_at_any_number_of_shards_and_partitions() {
    let t = TestDir::new();
    corpus(&t);
    assert_same_as_scan(&t, &["-q", "c"], &LAYOUTS);
    assert_same_as_scan(
        &t,
        &["-q", "--pairs", "--cluster", "components", "c"],
        &LAYOUTS[2..4],
    );
    assert_same_as_scan(
        &t,
        &["-q", "--format", "text", "-t", "0.6", "c"],
        &LAYOUTS[3..4],
    );
}

#[test]
fn staged_simhash_and_other_verifications_equal_scan() {
    let t = TestDir::new();
    corpus(&t);
    for args in [
        &["-q", "-m", "simhash", "--max-distance", "6", "c"][..],
        &["-q", "--verify", "edit", "--pairs", "c"],
        &["-q", "--verify", "estimate", "--sketch", "bottom-k", "c"],
        &[
            "-q",
            "--sketch",
            "kperm",
            "--shingle",
            "char",
            "--format",
            "jsonl",
            "c",
        ],
    ] {
        assert_same_as_scan(&t, args, &[(1, 1), (3, 2)]);
    }
}

#[test]
fn staged_normalize_equals_scan() {
    let t = TestDir::new();
    corpus(&t);
    // Pairs that only a step makes near-duplicates, and the Japanese pair of nfkc.
    super::normalize::corpus(&t, "c/d5");
    let plain = t.run(&["scan", "-q", "c"]).json();
    for args in [
        &[
            "-q",
            "--pairs",
            "--normalize",
            "punct,digits,accents,nfkc",
            "c",
        ][..],
        &["-q", "--verify", "edit", "--normalize", "punct", "c"],
        &[
            "-q",
            "--shingle",
            "char",
            "--normalize",
            "nfkc,accents",
            "c",
        ],
    ] {
        let normalized = t.run(&[&["scan"][..], args].concat()).json();
        assert!(
            normalized["stats"]["clusters"].as_u64() > plain["stats"]["clusters"].as_u64(),
            "{args:?} finds the pairs the steps make"
        );
        assert_same_as_scan(&t, args, &[(1, 1), (3, 2)]);
    }
}

#[test]
fn staged_dumps_and_files_together_equal_scan() {
    let t = TestDir::new();
    corpus(&t);
    // The same family as records of a plain dump and of a gzip one, beside the files.
    let base = text(700, 250);
    let mut plain = String::new();
    for v in 0..5usize {
        let record = serde_json::json!({"id": format!("r{v}"), "text": edit(&base, &[v * 11])});
        plain.push_str(&format!("{record}\n"));
    }
    plain.push_str("not json\n");
    t.write("c/dumps/a.jsonl", &plain);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, plain.replace("\"r", "\"g").as_bytes()).unwrap();
    t.write("c/dumps/b.jsonl.gz", gz.finish().unwrap());
    // Exit 2 (the bad lines), the same as scan's.
    assert_same_as_scan(&t, &["-q", "--pairs", "c"], &[(1, 1), (2, 2), (5, 3)]);
}

#[test]
fn staged_honours_dumps_as_scan_does() {
    let t = TestDir::new();
    corpus(&t);
    // A JSON log without a text field: one error (exit 2) by default, one document under
    // --dumps never, bad lines of text files too under always.
    let log: String = (0..5)
        .map(|i| format!("{}\n", serde_json::json!({"msg": text(900 + i, 40)})))
        .collect();
    t.write("c/logs/app.jsonl", &log);
    t.write("c/logs/copy.log", &log);
    // JSON Lines named .json: one document, said so on stderr (but under --dumps always).
    let records: String = (0..5)
        .map(|i| format!("{}\n", serde_json::json!({"text": text(800 + i, 40)})))
        .collect();
    t.write("c/train.json", records);
    let scan = t.run(&["scan", "c"]);
    assert!(
        scan.stderr.contains("c/train.json: holds JSON Lines")
            && scan
                .stderr
                .contains("app.jsonl: no record has a \"text\" field"),
        "{}",
        scan.stderr
    );
    assert_same_as_scan(&t, &["c"], &[(2, 2)]);
    assert_same_as_scan(&t, &["--dumps", "never", "c"], &[(1, 1), (2, 2)]);
    assert_same_as_scan(&t, &["-q", "--dumps", "always", "c"], &[(2, 2)]);
}

#[test]
fn staged_walks_hidden_ignored_depth_and_extensions_as_scan_does() {
    let t = TestDir::new();
    corpus(&t);
    // A repository whose ignore files and hidden entries hide part of each family, a missing
    // root, files under more levels and other extensions.
    let base = text(700, 250);
    t.mkdir("c/.git")
        .write("c/.git/HEAD", &base)
        .write("c/.gitignore", "d1/\n*.md\n")
        .write("c/d0/.ignore", "fam0-0.txt\n")
        .write("c/.hidden/fam0.txt", edit(&base, &[5]))
        .write("c/d3/.fam0.txt", edit(&base, &[6]))
        .write("c/d2/deep/er/fam0.md", edit(&base, &[7]));
    for args in [
        &["-q", "c", "missing"][..],
        &["-q", "--hidden", "c"],
        &["-q", "-u", "c"],
        &["-q", "-uu", "--pairs", "c"],
        &["-q", "--max-depth", "2", "-e", "txt", "-e", "md", "c"],
        &["-q", "-u", "--max-depth", "4", "-e", "md", "c/d2", "c/d0"],
    ] {
        assert_same_as_scan(&t, args, &[(1, 1), (3, 2)]);
    }
    // What each skipped, counted alike.
    let r = staged(&t, "work-counts", 2, 2, &["-q", "c"]);
    let scan = t.run(&["scan", "-q", "c"]);
    assert_eq!(r.stdout, scan.stdout);
    let skipped = &scan.json()["stats"]["skipped"];
    // .git, .gitignore, .hidden, d0/.ignore, d3/.fam0.txt; d1/, fam0-0.txt, d2/deep/er/fam0.md.
    assert_eq!(
        (&skipped["hidden"], &skipped["ignored"]),
        (&5.into(), &3.into())
    );
}

#[test]
fn staged_xz_bzip2_and_lz4_dumps_equal_scan() {
    let t = TestDir::new();
    corpus(&t);
    // One family as records of an xz, a bzip2 and an lz4 dump: the route stage streams each
    // again for the records verification needs.
    let base = text(710, 250);
    let mut plain = String::new();
    for v in 0..4usize {
        let record = serde_json::json!({"id": format!("r{v}"), "text": edit(&base, &[v * 13])});
        plain.push_str(&format!("{record}\n"));
    }
    use super::compressed::{bzip2, lz4, xz};
    t.write("c/dumps/a.jsonl.xz", xz(plain.as_bytes()));
    t.write(
        "c/dumps/b.jsonl.bz2",
        bzip2(plain.replace("\"r", "\"b").as_bytes()),
    );
    t.write(
        "c/dumps/c.jsonl.lz4",
        lz4(plain.replace("\"r", "\"l").as_bytes()),
    );
    assert_same_as_scan(&t, &["-q", "--pairs", "c"], &[(1, 1), (3, 2)]);
}

#[test]
fn staged_reports_do_not_depend_on_the_order_inputs_are_named_in() {
    let t = TestDir::new();
    corpus(&t);
    let forward = staged(
        &t,
        "w1",
        3,
        2,
        &["-q", "c/d0", "c/d1", "c/d2", "c/d3", "c/d4"],
    );
    let backward = staged(
        &t,
        "w2",
        2,
        3,
        &["-q", "c/d4", "c/d3", "c/d2", "c/d1", "c/d0"],
    );
    assert_eq!(forward.code(), 0, "{}", forward.stderr);
    assert_eq!(forward.stdout, backward.stdout);
    let scan = t.run(&["scan", "-q", "c/d2", "c/d0", "c/d4", "c/d1", "c/d3"]);
    assert_eq!(forward.stdout, scan.stdout);
}

#[test]
fn staged_paths_equal_scan_and_only_scan_takes_o() {
    let t = TestDir::new();
    corpus(&t);
    let args = ["-q", "--format", "paths", "-0", "c"];
    let scan = t.run(&[&["scan"][..], &args].concat());
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    assert!(scan.stdout.contains("copy-of-a.txt\0"), "{}", scan.stdout);
    assert_eq!(staged(&t, "w-paths", 2, 2, &args).stdout, scan.stdout);
    // -0 for a NUL-separated input list, and json out: -0 is not kept for the later stages.
    t.write("list", "c/d0\0c/d1\0c/d2\0c/d3\0c/d4\0");
    let listed = ["-q", "--files-from", "list", "-0"];
    let r = staged(&t, "w-list", 2, 1, &listed);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, t.run(&[&["scan"][..], &listed].concat()).stdout);
    let r = t.run(&["stage", "init", "--work", "w-o", "-o", "report.json", "c"]);
    assert_eq!(r.code(), 2);
    assert!(
        r.stderr.contains("-o applies to `dupfind scan`"),
        "{}",
        r.stderr
    );
}

/// Runs contrib/staged/run-local.sh in `t` with `args`.
pub(super) fn local_driver(t: &TestDir, args: &[&str]) -> Run {
    super::util::run_command(local_driver_command(t, args))
}

/// contrib/staged/run-local.sh in `t` with `args`, to run.
pub(super) fn local_driver_command(t: &TestDir, args: &[&str]) -> std::process::Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/staged/run-local.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script)
        .args(args)
        .current_dir(t.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

#[test]
fn the_local_driver_exits_with_the_status_of_a_failed_stage_task() {
    // Review finding: a failed task ended the script with xargs' 123, not the stage's 2.
    let t = TestDir::new();
    corpus(&t);
    // A dupfind whose `stage sign` fails (as one whose input went bad would), else the real one.
    let fake = t.join("fake-dupfind");
    fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$2\" = sign ] && {{ echo 'sign failed' >&2; exit 2; }}\nexec '{}' \"$@\"\n",
            super::util::bin()
        ),
    )
    .unwrap();
    super::util::chmod(&fake, 0o755);
    let args = [
        "--shards",
        "2",
        "--work",
        "w",
        "--dupfind",
        fake.to_str().unwrap(),
        "-q",
        "c",
    ];
    let r = local_driver(&t, &args);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(r.stderr.contains("sign failed"), "{}", r.stderr);
}

#[test]
fn the_local_driver_prints_the_tasks_warnings_in_shard_order_at_two_jobs() {
    // Review 6 finding 09: sign tasks side by side wrote their warnings as they came, so that
    // run-local.sh's stderr was not scan's. Here shard 0's task holds its warnings back until
    // shard 1 has finished (as a slower shard would), which interleaved them every time.
    let t = TestDir::new();
    for (dump, seed) in [("a", 0u64), ("b", 100)] {
        let mut lines = String::new();
        for i in 0..6u64 {
            let record =
                serde_json::json!({"id": format!("{dump}{i}"), "text": text(seed + i, 60)});
            lines += &format!("{record}\nnot a record\n");
        }
        t.write(format!("c/{dump}.jsonl"), lines);
    }
    let scan = t.run(&["scan", "c"]);
    assert_eq!(scan.warnings().len(), 12, "{}", scan.stderr);
    let fake = t.join("fake-dupfind");
    fs::write(
        &fake,
        format!(
            "#!/bin/sh\n\
             [ \"$2 $6\" = 'sign 0/2' ] || exec '{bin}' \"$@\"\n\
             '{bin}' \"$@\" 2> sign-0.err; s=$?\n\
             n=0; while [ ! -e w/sign/shard-000001.json ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done\n\
             cat sign-0.err >&2; exit $s\n",
            bin = super::util::bin()
        ),
    )
    .unwrap();
    super::util::chmod(&fake, 0o755);
    let args = ["--shards", "2", "--jobs", "2", "--work", "w", "--dupfind"];
    let r = local_driver(&t, &[&args[..], &[fake.to_str().unwrap(), "c"]].concat());
    assert_eq!(r.code(), scan.code(), "{}", r.stderr);
    assert_eq!(r.stdout, scan.stdout);
    assert_eq!(r.stderr, scan.stderr);
}

#[test]
fn ctrl_c_after_the_stderr_printer_ended_still_ends_the_local_driver_with_130() {
    // Review 7 finding 06: when the script's stderr printer had ended (and been reaped) before
    // a Ctrl-C ended the script, the EXIT trap's `kill` of it failed and, under `set -e`, ended
    // the run with 1, nothing said, leaving the temporary directory (about 1 run in 80). Here
    // shard 0's sign task makes that order certain: it lets the printer end (the step's `end`
    // file, which the script writes once xargs returns), waits until the printer is gone, then
    // sends SIGINT to the run's process group, as Ctrl-C in a terminal does.
    let t = TestDir::new();
    corpus(&t);
    fs::create_dir(t.join("tmp")).unwrap();
    let fake = t.join("fake-dupfind");
    let script = r#"#!/bin/sh
[ "$2 $6" = 'sign 0/2' ] || exec 'BIN' "$@"
ppid() { sed 's/.*) . \([0-9]*\) .*/\1/' "/proc/$1/stat" 2> /dev/null; }
xargs=$(ppid $PPID)
script=$(ppid "$xargs")
printer=
for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$xargs" ] || [ "$(ppid "$p")" != "$script" ] || printer=$p
done
[ -n "$printer" ] || { echo 'no printer found' >&2; exit 3; }
: > "$(echo "$TMPDIR"/run-local.*/sign)/end"
n=0
while [ -e "/proc/$printer" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
kill -INT 0
"#;
    fs::write(&fake, script.replace("BIN", super::util::bin())).unwrap();
    super::util::chmod(&fake, 0o755);
    let args = ["--shards", "2", "--jobs", "2", "--work", "w", "--dupfind"];
    let mut cmd = local_driver_command(&t, &[&args[..], &[fake.to_str().unwrap(), "c"]].concat());
    // Its own process group, which the task's SIGINT reaches, as a terminal's Ctrl-C does.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.env("TMPDIR", t.join("tmp"));
    let r = super::util::run_command(cmd);
    assert!(!r.stderr.contains("no printer found"), "{}", r.stderr);
    // Ended by the signal, or with 130: a shell says 130 of both.
    let code = (r.status.code())
        .or(std::os::unix::process::ExitStatusExt::signal(&r.status).map(|s| 128 + s));
    assert_eq!((code, r.stdout.as_str()), (Some(130), ""), "{}", r.stderr);
    let left: Vec<_> = fs::read_dir(t.join("tmp")).unwrap().collect();
    assert!(
        left.is_empty(),
        "the temporary directory is removed: {left:?}"
    );
}

#[test]
fn what_scan_refuses_before_its_walk_is_all_the_local_driver_says_too() {
    // Review 7 finding 01: `stage init` walked the inputs (warning about a missing one) before
    // it refused the --write-dataset directory, which scan claims before its walk; and it never
    // made scan's checks of an index's use, so that --verify edit and bottom-k sketches ran
    // --against an index scan refuses them with.
    let t = TestDir::new();
    t.write("c/a.txt", text(1, 100))
        .write("c/b.txt", text(1, 100))
        .write("held/part-00000.jsonl", "{}\n")
        .write("file", "not a directory");
    let r = t.run(&["index", "build", "--index", "idx", "-q", "c"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let bin = super::util::bin();
    let cases: [&[&str]; 5] = [
        &["--write-dataset", "held"],
        &["--write-dataset", "file/ds"],
        &["--write-dataset", "file"],
        &["--against", "idx", "--verify", "edit"],
        &["--against", "idx", "--sketch", "bottom-k"],
    ];
    for (i, case) in cases.iter().enumerate() {
        let args = [*case, &["c", "missing.txt"]].concat();
        let scan = t.run(&[&["scan"][..], &args].concat());
        assert_eq!(scan.code(), 2, "{args:?}: {}", scan.stderr);
        assert!(!scan.stderr.contains("missing.txt"), "{}", scan.stderr);
        let work = format!("w{i}");
        let driver = [
            &["--shards", "2", "--work", &work, "--dupfind", bin][..],
            &args,
        ]
        .concat();
        assert_same_run(&scan, &local_driver(&t, &driver), &format!("{args:?}"));
        assert!(!t.join(&work).join("run.json").exists(), "{args:?}");
    }
    // Claimed before the walk, a directory is let go, and the one made for the claim removed,
    // when init fails after it.
    let args = ["--write-dataset", "new", "--against", "not-an-index", "c"];
    let scan = t.run(&[&["scan"][..], &args].concat());
    let driver = [&["--work", "wn", "--dupfind", bin][..], &args].concat();
    assert_same_run(&scan, &local_driver(&t, &driver), &format!("{args:?}"));
    assert!(!t.join("new").exists());
    let r = t.run(&[&["scan"][..], &args[..2], &["c"]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
}

#[test]
fn the_local_driver_runs_every_stage_as_a_process() {
    let t = TestDir::new();
    corpus(&t);
    let bin = super::util::bin();
    let args = [
        "--shards",
        "3",
        "--parts",
        "2",
        "--jobs",
        "2",
        "--work",
        "w",
        "--dupfind",
        bin,
        "-q",
        "c",
    ];
    let r = local_driver(&t, &args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let scan = t.run(&["scan", "-q", "c"]).stdout;
    assert_eq!(r.stdout, scan);

    // A run that stopped part way: --resume runs what has no summary, and only that.
    let kept = t.join("w/sign/shard-000000.docs.parquet");
    let signed = fs::metadata(&kept).unwrap().modified().unwrap();
    for lost in [
        "w/sign/shard-000002.json",
        "w/components/summary.json",
        "w/verify/part-000001.json",
    ] {
        fs::remove_file(t.join(lost)).unwrap();
    }
    let again = local_driver(&t, &[&["--resume"][..], &args].concat());
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, scan);
    for redone in ["w/sign/shard-000002.json", "w/components/summary.json"] {
        assert!(t.join(redone).exists(), "{redone} written again");
    }
    assert_eq!(fs::metadata(&kept).unwrap().modified().unwrap(), signed);
    // Without --resume, a directory holding a run is refused.
    let refused = local_driver(&t, &args);
    assert_eq!(refused.code(), 2);
    assert!(refused.stderr.contains("holds a run"), "{}", refused.stderr);
}

#[test]
fn the_local_driver_takes_its_own_options_as_opt_equals_value_too() {
    // Review 7 finding 04: `--shards=2` went on to `stage init` beside run-local.sh's own
    // --shards ("cannot be used multiple times", given once), and `--work=DIR` was no --work.
    let t = TestDir::new();
    corpus(&t);
    let scan = t.run(&["scan", "-q", "--min-size=10", "c"]);
    let dupfind = format!("--dupfind={}", super::util::bin());
    let own = [
        "--shards=3",
        "--parts=2",
        "--jobs=2",
        "--threads=1",
        "--work=w",
    ];
    let args = [&own[..], &[&dupfind, "-q", "--min-size=10", "c"]].concat();
    assert_same_run(&scan, &local_driver(&t, &args), "--opt=value");
    let plan = fs::read_to_string(t.join("w/run.json")).unwrap();
    assert!(
        plan.contains("\"shards\": 3,") && plan.contains("\"parts\": 2,"),
        "{plan}"
    );
    // An option of its own without its value is named, not an unbound variable.
    let r = local_driver(&t, &["--work=w2", "c", "--shards"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(r.stderr.contains("--shards needs a value"), "{}", r.stderr);
}

#[test]
fn resume_with_other_options_or_inputs_is_refused_naming_them_and_with_the_same_runs() {
    // Review finding 07: run-local.sh --resume dropped the scan options and inputs given with
    // it, and reported the run's own (another threshold, over other files) with status 0.
    let t = TestDir::new();
    corpus(&t);
    t.mkdir("other");
    let bin = super::util::bin();
    let init = t.run(&["stage", "init", "--work", "w", "--shards", "2", "c"]);
    assert_eq!(init.code(), 0, "{}", init.stderr);
    let resume = |args: &[&str]| {
        let common = ["--resume", "--work", "w", "--dupfind", bin];
        local_driver(&t, &[&common[..], args].concat())
    };
    let r = resume(&["-t", "0.5", "--keep", "newest", "other"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    for says in [
        "--threshold 0.5 here, the default in the run",
        "--keep newest here, oldest in the run",
        "the inputs ",
    ] {
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
    }
    assert!(!t.join("w/sign").exists(), "nothing is run");
    // A default given or left out, and the inputs named from elsewhere, are the same run.
    let scan = t.run(&["scan", "c"]).stdout;
    let root = t.join("c").display().to_string();
    let r = resume(&["-t", "0.8", &root]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, scan);
}

#[test]
fn a_task_takes_its_own_thread_count_and_gives_the_same_report() {
    let t = TestDir::new();
    corpus(&t);
    let bin = super::util::bin();
    let one = local_driver(
        &t,
        &[
            "--shards",
            "2",
            "--parts",
            "2",
            "--threads",
            "1",
            "--work",
            "a",
            "--dupfind",
            bin,
            "c",
        ],
    );
    let four = local_driver(
        &t,
        &[
            "--shards",
            "2",
            "--parts",
            "2",
            "--threads",
            "4",
            "--work",
            "b",
            "--dupfind",
            bin,
            "c",
        ],
    );
    assert_eq!(one.code(), 0, "{}", one.stderr);
    assert_eq!(one.stdout, four.stdout);
    let r = t.run(&["stage", "sign", "--work", "a", "--shard", "0/2", "-j", "0"]);
    assert_eq!(r.code(), 2);
    assert!(r.stderr.contains("--threads"), "{}", r.stderr);
}

#[test]
fn damaged_missing_or_foreign_work_files_are_named_and_nothing_is_overwritten() {
    let t = TestDir::new();
    corpus(&t);
    let ok = staged(&t, "w", 2, 2, &["-q", "c"]);
    assert_eq!(ok.code(), 0, "{}", ok.stderr);
    let fail = |args: &[&str], want: &str| {
        let r = t.run(args);
        assert_eq!(r.code(), 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}");
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    };
    // A directory that holds a run is not started again.
    let plan = fs::read(t.join("w/run.json")).unwrap();
    fail(
        &["stage", "init", "--work", "w", "c"],
        "already holds a run",
    );
    assert_eq!(fs::read(t.join("w/run.json")).unwrap(), plan);
    // The count in I/N must be the plan's.
    fail(
        &["stage", "sign", "--work", "w", "--shard", "0/3"],
        "the run in w has 2",
    );
    fail(
        &["stage", "sign", "--work", "w", "--shard", "2/2"],
        "the index must be below",
    );
    // A missing shard file.
    let keys = t.join("w/sign/shard-000001.keys-000000.parquet");
    let saved = fs::read(&keys).unwrap();
    fs::remove_file(&keys).unwrap();
    fail(
        &["stage", "group", "--work", "w", "--part", "0/2"],
        "shard-000001.keys-000000.parquet is missing",
    );
    // A truncated one.
    fs::write(&keys, &saved[..saved.len() / 2]).unwrap();
    fail(
        &["stage", "group", "--work", "w", "--part", "0/2"],
        "shard-000001.keys-000000.parquet is damaged",
    );
    fs::write(&keys, &saved).unwrap();
    // A shard signed with other options (another run in its own directory, copied in).
    let other = staged(&t, "other", 2, 2, &["-q", "-t", "0.7", "c"]);
    assert_eq!(other.code(), 0, "{}", other.stderr);
    let group_before = fs::read(t.join("w/group/part-000000.parquet")).unwrap();
    fs::copy(t.join("other/sign/shard-000001.keys-000000.parquet"), &keys).unwrap();
    fail(
        &["stage", "group", "--work", "w", "--part", "0/2"],
        "belongs to another run",
    );
    assert_eq!(
        fs::read(t.join("w/group/part-000000.parquet")).unwrap(),
        group_before
    );
    fs::write(&keys, &saved).unwrap();
    // A summary of another run, and a stage not yet run.
    fs::copy(
        t.join("other/verify/part-000001.json"),
        t.join("w/verify/part-000001.json"),
    )
    .unwrap();
    fail(
        &["stage", "report", "--work", "w"],
        "part-000001.json belongs to another run",
    );
    fs::remove_file(t.join("w/verify/part-000001.json")).unwrap();
    fail(
        &["stage", "report", "--work", "w"],
        "partition 1 has not been verified",
    );
    // A stage run again replaces its output and the run completes as before.
    let r = t.run(&["stage", "verify", "--work", "w", "--part", "1/2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let again = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!((again.code(), &again.stdout), (0, &ok.stdout));
    // A work directory without a plan.
    fail(
        &["stage", "sign", "--work", "nowhere", "--shard", "0/1"],
        "run.json is missing",
    );
    // What the staged pipeline does not do is refused before anything is written.
    fail(
        &["stage", "init", "--work", "c", "--containment", "c"],
        "--containment is not supported",
    );
    assert!(!t.join("c/run.json").exists());
}

#[test]
fn a_hot_bucket_and_a_giant_component_are_reported_not_capped() {
    // 400 documents that differ in one word at their end: a bucket of a band holds nearly all.
    let t = TestDir::new();
    let boilerplate = text(3000, 300);
    for i in 0..400 {
        t.write(
            format!("c/d{}/page-{i:03}.txt", i % 7),
            format!("{boilerplate} unique{i}"),
        );
    }
    let scan = t.run(&["scan", "-q", "c"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    let stats = &scan.json()["stats"];
    assert!(stats["largest_bucket"].as_u64().unwrap() >= 390, "{stats}");
    assert_eq!(stats["largest_component"], 400, "{stats}");
    // Each document joins the first it matches: about 400 checks, not 80,000.
    assert!(stats["candidate_pairs"].as_u64().unwrap() < 1000, "{stats}");
    let r = staged(&t, "w", 3, 2, &["-q", "c"]);
    assert_eq!(r.stdout, scan.stdout);
}

/// Rewrites the Parquet file at `path` with its `docs` and `aux` columns as `LargeList`, the
/// way an engine with 64-bit list offsets (Polars, pyarrow's `large_list`) writes a group step.
fn as_large_lists(path: &Path) {
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, Int64Array, LargeListArray, ListArray, RecordBatch};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    let builder = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap()).unwrap();
    let kv = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
    let large = |l: &ListArray| -> Arc<dyn Array> {
        let rows = (0..l.len()).map(|k| {
            let v = l.value(k);
            let v = v.as_any().downcast_ref::<Int64Array>().unwrap();
            Some(v.values().iter().map(|&x| Some(x)).collect::<Vec<_>>())
        });
        Arc::new(LargeListArray::from_iter_primitive::<Int64Type, _, _>(rows))
    };
    let converted: Vec<Vec<Arc<dyn Array>>> = batches
        .iter()
        .map(|b| {
            (b.columns().iter())
                .map(|c| match c.as_any().downcast_ref::<ListArray>() {
                    Some(l) => large(l),
                    None => c.clone(),
                })
                .collect()
        })
        .collect();
    let schema = batches[0].schema();
    let fields: Vec<Field> = (schema.fields().iter())
        .zip(&converted[0])
        .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
        .collect();
    let large_schema = Arc::new(Schema::new(fields));
    let props = WriterProperties::builder()
        .set_key_value_metadata(kv)
        .build();
    let mut out = ArrowWriter::try_new(Vec::new(), large_schema.clone(), Some(props)).unwrap();
    for columns in converted {
        let b = RecordBatch::try_new(large_schema.clone(), columns).unwrap();
        out.write(&b).unwrap();
    }
    fs::write(path, out.into_inner().unwrap()).unwrap();
}

/// Records in `work`'s summary `name.json` the CRC-32 of `name.parquet`, written anew, and
/// seals the summary again: what another engine does when it writes a stage's files.
fn record_new_file(work: &Path, name: &str) {
    let summary = work.join(format!("{name}.json"));
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&summary).unwrap()).unwrap();
    let crc = crc32fast::hash(&fs::read(work.join(format!("{name}.parquet"))).unwrap());
    v["lineage"]["files"][format!("{name}.parquet")] = format!("{crc:08x}").into();
    v.as_object_mut().unwrap().remove("seal");
    let json = serde_json::to_vec_pretty(&v).unwrap();
    fs::write(&summary, dupfind::api::seal_summary(&json, true)).unwrap();
}

#[test]
fn group_files_written_with_large_lists_by_another_engine_are_read() {
    let t = TestDir::new();
    corpus(&t);
    let scan = t.run(&["scan", "c"]);
    let run = |args: &[&str]| {
        let r = t.run(args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
    };
    run(&[
        "stage", "init", "--work", "w", "--shards", "2", "--parts", "2", "c",
    ]);
    for i in ["0/2", "1/2"] {
        run(&["stage", "sign", "--work", "w", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        run(&["stage", "group", "--work", "w", "--part", j]);
    }
    for j in 0..2 {
        as_large_lists(&t.join(format!("w/group/part-{j:06}.parquet")));
        record_new_file(&t.join("w"), &format!("group/part-{j:06}"));
    }
    run(&["stage", "components", "--work", "w"]);
    for i in ["0/2", "1/2"] {
        run(&["stage", "route", "--work", "w", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        run(&["stage", "verify", "--work", "w", "--part", j]);
    }
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert!(r.stdout.contains("\"clusters\""), "{}", r.stderr);
    assert!(
        r.stdout == scan.stdout,
        "{}",
        first_difference(&scan.stdout, &r.stdout)
    );
}

#[test]
fn staged_warnings_equal_scans_for_unreadable_oversized_and_unreadable_again_members() {
    let t = TestDir::new();
    corpus(&t);
    // Unreadable: corrupt gzip streams, in several shards.
    for d in 0..5 {
        t.write(
            format!("c/d{d}/broken.txt.gz"),
            b"\x1f\x8b\x08\x00not deflate at all",
        );
    }
    // Over --max-size.
    t.write("c/d1/huge.txt", text(4000, 700_000));
    t.write("c/d3/huger.txt", text(4001, 800_000));
    // Two copies too large to read again as sets under --max-memory (described as a cluster),
    // though small enough to sketch: about 2.7 MB of text, 33 bytes a byte as char sets
    // (tests/integration/memory.rs has the arithmetic).
    let big = text(13, 500_000);
    t.write("c/d0/big-a.txt", &big)
        .write("c/d4/big-b.txt", &big);
    let args = [
        "--max-size",
        "3500000",
        "--shingle",
        "char",
        "--max-memory",
        "64M",
        "c",
    ];
    let scan = t.run(&[&["scan"][..], &args].concat());
    for said in [
        "c/d2/broken.txt.gz: gzip stream is corrupt",
        "c/d3/huger.txt: skipped, ",
        "to read again and compare as a set",
    ] {
        assert!(scan.stderr.contains(said), "{said}: {}", scan.stderr);
    }
    assert_same_as_scan(&t, &args, &[(1, 1), (2, 2), (3, 2)]);
}

#[test]
fn stages_run_from_inside_the_work_directory_with_work_dot() {
    let t = TestDir::new();
    corpus(&t);
    let scan = t.run(&["scan", "c"]);
    let r = t.run(&[
        "stage", "init", "--work", "w", "--shards", "2", "--parts", "2", "c",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    // Every later stage from inside w: the stages that enter init's directory (where `c` is)
    // must still find `.`, and report `c/…` paths as init named them.
    let inside = |args: &[&str]| {
        let mut c = std::process::Command::new(super::util::bin());
        c.args(args)
            .current_dir(t.join("w"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let r = super::util::run_command(c);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        r
    };
    for i in ["0/2", "1/2"] {
        inside(&["stage", "sign", "--work", ".", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        inside(&["stage", "group", "--work", ".", "--part", j]);
    }
    inside(&["stage", "components", "--work", "."]);
    for i in ["0/2", "1/2"] {
        inside(&["stage", "route", "--work", ".", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        inside(&["stage", "verify", "--work", ".", "--part", j]);
    }
    let report = inside(&["stage", "report", "--work", "."]);
    assert!(
        report.stdout == scan.stdout,
        "{}",
        first_difference(&scan.stdout, &report.stdout)
    );
}

/// The files of `w/components`, by name: each Parquet file's bytes with the attempt's token
/// (in its lineage tag, the one thing a run of the stage changes) blanked, and the summary's
/// counts.
fn components_files(t: &TestDir) -> Vec<(String, Vec<u8>)> {
    let dir = t.join("w/components");
    let summary: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let token = summary["lineage"]["attempt"].as_str().unwrap().as_bytes();
    let mut names: Vec<String> = (fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let mut bytes = fs::read(dir.join(&name)).unwrap();
            if name == "summary.json" {
                let mut counts = summary.clone();
                counts["lineage"] = serde_json::Value::Null;
                counts["seal"] = serde_json::Value::Null;
                bytes = counts.to_string().into_bytes();
            } else {
                for at in 0..bytes.len().saturating_sub(token.len() - 1) {
                    if bytes[at..].starts_with(token) {
                        bytes[at..at + token.len()].fill(b'0');
                    }
                }
            }
            (name, bytes)
        })
        .collect()
}

#[test]
fn components_writes_the_same_files_on_one_two_or_three_threads() {
    let t = TestDir::new();
    corpus(&t);
    let scan = t.run(&["scan", "-q", "--pairs", "c"]);
    let run = |args: &[&str]| {
        let r = t.run(args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        r
    };
    run(&[
        "stage", "init", "--work", "w", "--shards", "3", "--parts", "4", "-q", "--pairs", "c",
    ]);
    for i in ["0/3", "1/3", "2/3"] {
        run(&["stage", "sign", "--work", "w", "--shard", i]);
    }
    for j in ["0/4", "1/4", "2/4", "3/4"] {
        run(&["stage", "group", "--work", "w", "--part", j]);
    }
    let mut each = Vec::new();
    for threads in ["1", "2", "3"] {
        run(&["stage", "components", "--work", "w", "-j", threads]);
        each.push(components_files(&t));
    }
    assert!(each[0].len() > 8, "{:?}", each[0].iter().map(|f| &f.0));
    assert!(each[0] == each[1], "-j1 and -j2 wrote different files");
    assert!(each[0] == each[2], "-j1 and -j3 wrote different files");
    for i in ["0/3", "1/3", "2/3"] {
        run(&["stage", "route", "--work", "w", "--shard", i]);
    }
    for j in ["0/4", "1/4", "2/4", "3/4"] {
        run(&["stage", "verify", "--work", "w", "--part", j]);
    }
    let report = t.run(&["stage", "report", "--work", "w"]);
    assert!(
        report.stdout == scan.stdout,
        "{}",
        first_difference(&scan.stdout, &report.stdout)
    );
}

#[test]
fn a_damaged_or_missing_clusters_file_is_named_before_any_of_the_report_is_written() {
    let t = TestDir::new();
    corpus(&t);
    let ok = staged(&t, "w", 2, 2, &["-q", "--format", "jsonl", "c"]);
    assert_eq!(ok.code(), 0, "{}", ok.stderr);
    let file = t.join("w/verify/part-000001.clusters.parquet");
    let saved = fs::read(&file).unwrap();
    // A flipped bit in the middle: the CRC-32 the summary records no longer matches.
    let mut bad = saved.clone();
    bad[saved.len() / 2] ^= 0x10;
    fs::write(&file, &bad).unwrap();
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(r.stdout, "", "nothing of a report is written");
    assert!(
        r.stderr.contains("part-000001.clusters.parquet"),
        "{}",
        r.stderr
    );
    fs::remove_file(&file).unwrap();
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr.contains("part-000001.clusters.parquet is missing"),
        "{}",
        r.stderr
    );
    fs::write(&file, &saved).unwrap();
    let again = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(again.stdout, ok.stdout);
}

#[test]
fn a_member_file_changed_after_route_is_reported_by_verify_which_reads_it_again() {
    // verify reads a file's content from its path (route carries only dump records'), so a
    // file edited once routed is caught as `scan` catches one edited after its first pass: an
    // error, and left out of its cluster, never compared with its old content.
    let t = TestDir::new();
    let base = text(77, 300);
    for v in 0..3usize {
        t.write(format!("c/d{v}/near-{v}.txt"), edit(&base, &[v * 13 + 1]));
    }
    t.write("c/d0/alone.txt", text(78, 300));
    let init = [
        "stage", "init", "--work", "w", "--shards", "2", "--parts", "1",
    ];
    let r = t.run(&[&init[..], &["c"]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    for (stage, flag, n) in [("sign", "--shard", 2), ("group", "--part", 1)] {
        for i in 0..n {
            let r = t.run(&["stage", stage, "--work", "w", flag, &format!("{i}/{n}")]);
            assert_eq!(r.code(), 0, "{}", r.stderr);
        }
    }
    let r = t.run(&["stage", "components", "--work", "w"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    for i in ["0/2", "1/2"] {
        let r = t.run(&["stage", "route", "--work", "w", "--shard", i]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
    }
    t.write("c/d1/near-1.txt", text(79, 300));
    let r = t.run(&["stage", "verify", "--work", "w", "--part", "0/1"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.stderr.contains("near-1.txt"), "{}", r.stderr);
    let report = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(report.code(), 2, "{}", report.stderr);
    let json = report.json();
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0]["path"].as_str().unwrap().ends_with("near-1.txt"));
    assert_eq!(errors[0]["error"], "file changed during the scan");
    let members: Vec<&str> = (json["clusters"][0]["members"].as_array().unwrap().iter())
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(
        members.iter().all(|p| !p.ends_with("near-1.txt")),
        "{members:?}"
    );
}
