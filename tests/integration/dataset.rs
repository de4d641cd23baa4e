//! `--write-dataset`: the deduplicated dataset, from `scan` and from the staged pipeline.

use std::fs;

use serde_json::Value;

use super::util::{edit, text, TestDir};

/// A dump whose records 2 and 4 are near-copies of record 1 and record 5 a byte-identical copy
/// of record 3, with a bad line and an empty text; and two files, one a near-copy of the other.
fn corpus(t: &TestDir) {
    let a = text(4000, 250);
    let b = text(4001, 250);
    let records = [
        serde_json::json!({"id": 1, "text": a, "meta": {"source": "x"}}),
        serde_json::json!({"id": 2, "text": edit(&a, &[10, 20]), "extra": [1, 2, 3]}),
        serde_json::json!({"id": 3, "text": b}),
        serde_json::json!({"id": 4, "text": edit(&a, &[30])}),
        serde_json::json!({"id": 5, "text": b}),
        serde_json::json!({"id": 6, "text": "   "}),
    ];
    let mut dump = String::new();
    for (i, r) in records.iter().enumerate() {
        dump.push_str(&format!("{r}\n"));
        if i == 2 {
            dump.push_str("{not json\n");
        }
    }
    let f = text(4002, 200);
    t.write("in/d.jsonl", &dump)
        .write("in/f1.txt", &f)
        .write("in/f2.txt", edit(&f, &[5]));
}

/// A JSON Lines dump of `n` records `{"id", "text"}`, record i's text `words` words of seed
/// `seed + i`.
fn dump_of(n: u64, seed: u64, words: usize) -> String {
    let mut dump = String::new();
    for i in 0..n {
        dump.push_str(&serde_json::json!({"id": i, "text": text(seed + i, words)}).to_string());
        dump.push('\n');
    }
    dump
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_dataset_keeps_every_document_but_the_duplicates_each_field_as_it_was() {
    let t = TestDir::new();
    corpus(&t);
    let r = t.run(&[
        "scan",
        "-v",
        "--keep",
        "first",
        "--write-dataset",
        "out",
        "in",
    ]);
    assert_eq!(r.code(), 2, "the bad line: {}", r.stderr);
    assert!(
        r.stderr.contains("dataset: 4 records written"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("4 duplicates left out"), "{}", r.stderr);
    let out = lines(&t.join("out/part-00000.jsonl"));
    let ids: Vec<&Value> = out
        .iter()
        .map(|r| r.get("id").unwrap_or(&r["path"]))
        .collect();
    // Record 6, whose text is blank, is no document yet a record of the dump; the line that is
    // not JSON is left out.
    assert_eq!(
        ids,
        [
            &Value::from(1),
            &Value::from(3),
            &Value::from(6),
            &Value::from("in/f1.txt")
        ]
    );
    // A record is its original line, every field kept.
    let first = fs::read_to_string(t.join("in/d.jsonl")).unwrap();
    let written = fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    assert!(written.starts_with(first.lines().next().unwrap()));
    assert_eq!(out[0]["meta"]["source"], "x");
    // A file is its path and text.
    assert_eq!(
        out[3]["text"],
        fs::read_to_string(t.join("in/f1.txt")).unwrap()
    );
    // The dataset directory is never scanned, even inside a root (a dataset there is refused,
    // so it holds an older one under another name).
    fs::rename(t.join("out/part-00000.jsonl"), t.join("out/old.jsonl")).unwrap();
    let again = t.run(&["scan", "--keep", "first", "--write-dataset", "out", "."]);
    assert_eq!(again.json()["stats"]["files_seen"], 3, "{}", again.stdout);
}

#[test]
fn only_verified_duplicates_are_left_out_never_linked_members() {
    // A chain a ~ b ~ c with a ≁ c: as components, c is linked to a, not a duplicate.
    let t = TestDir::new();
    let a = text(31, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    t.write("in/a.txt", &a)
        .write("in/b.txt", &b)
        .write("in/c.txt", &c);
    let r = t.run(&[
        "scan",
        "--cluster",
        "components",
        "--keep",
        "first",
        "--write-dataset",
        "out",
        "in",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let kept: Vec<String> = (lines(&t.join("out/part-00000.jsonl")).iter())
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept, ["in/a.txt", "in/c.txt"]);
}

#[test]
fn a_file_after_a_skipped_file_and_a_dumps_kept_records_is_written() {
    // a.bin (binary: no text, not written), then two records one word apart (a candidate pair,
    // whose texts the scan keeps by document id to verify it), then z.txt: z.txt's place among
    // the documents written is the second record's id, whose text it was checked against.
    let t = TestDir::new();
    let w = text(4300, 30);
    let records = [
        serde_json::json!({"text": w}),
        serde_json::json!({"text": edit(&w, &[2])}),
    ];
    t.write("in/a.bin", "x\0y")
        .write("in/d.jsonl", format!("{}\n{}\n", records[0], records[1]))
        .write("in/z.txt", "a plain file with a few words of its own");
    for extra in [&[][..], &["--annotate"]] {
        let args = |out| [&["-q", "--write-dataset", out][..], extra, &["in"]].concat();
        let r = t.run(&[&["scan"][..], &args("out")].concat());
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(r.json()["errors"], serde_json::json!([]));
        let paths: Vec<Value> = (lines(&t.join("out/part-00000.jsonl")).iter())
            .map(|r| r.get("path").cloned().unwrap_or(Value::Null))
            .collect();
        assert_eq!(paths, [Value::Null, Value::Null, Value::from("in/z.txt")]);
        let staged = super::dataset_parquet::staged(&t, 1, "w", &args("staged-out"));
        assert_eq!((staged.code(), &staged.stdout), (r.code(), &r.stdout));
        fs::remove_dir_all(t.join("out")).unwrap();
        fs::remove_dir_all(t.join("staged-out")).unwrap();
        fs::remove_dir_all(t.join("w")).unwrap();
    }
}

#[test]
fn a_record_longer_than_max_size_is_written_as_it_is_a_line_longer_that_is_no_json_is_not() {
    // The record over --max-size is no document, yet a JSON object of the dump, as a Parquet
    // row of any size is; it ends in CRLF. The line after it is as long, and not JSON.
    let big = serde_json::json!({"id": "big", "text": "word ".repeat(600)}).to_string();
    let dump = format!(
        "{}\n{big}\r\n{{not json {}\n{}\n",
        serde_json::json!({"id": "a", "text": text(4400, 40)}),
        "x".repeat(3000),
        serde_json::json!({"id": "c", "text": text(4401, 40)}),
    );
    let t = TestDir::new();
    t.write("in/d.jsonl", &dump);
    let plain = t.run(&[
        "scan",
        "-q",
        "--max-size",
        "1K",
        "--write-dataset",
        "out",
        "in",
    ]);
    // The scan's report is as it was: both long lines are bad lines.
    assert_eq!(plain.code(), 2, "{}", plain.stderr);
    assert_eq!(plain.json()["errors"].as_array().unwrap().len(), 2);
    let written = fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    let want: Vec<&str> = dump.lines().filter(|l| !l.starts_with("{not")).collect();
    let want = want.join("\n").replace('\r', "") + "\n";
    assert!(
        written == want,
        "the dataset is not the dump's records as they are"
    );
    let r = t.run(&[
        "scan",
        "-q",
        "--max-size",
        "1K",
        "--annotate",
        "--write-dataset",
        "ann",
        "in",
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let out = lines(&t.join("ann/part-00000.jsonl"));
    let ids: Vec<&Value> = out.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, ["a", "big", "c"]);
    assert_eq!(out[1]["text"], "word ".repeat(600));
    assert_eq!(out[1]["dupfind_keep"], true);
    assert_eq!(out[1]["dupfind_cluster"], Value::Null);
}

#[test]
fn a_staged_run_claims_its_dataset_directory_another_run_and_a_scan_are_refused_it() {
    let t = TestDir::new();
    t.write("a/x.txt", text(4500, 100))
        .write("b/y.txt", text(4501, 100));
    let init = |work: &str, input: &str| {
        t.run(&[
            "stage",
            "init",
            "--work",
            work,
            "--write-dataset",
            "ds",
            input,
        ])
    };
    let claimed = "is claimed by the staged run";
    assert_eq!(init("wa", "a").code(), 0);
    // Run B, started before run A wrote anything, and a scan are refused the directory.
    let b = init("wb", "b");
    assert_eq!(b.code(), 2, "{}", b.stderr);
    assert!(b.stderr.contains(claimed), "{}", b.stderr);
    assert!(
        b.stderr.contains("wa)"),
        "names run A's work directory: {}",
        b.stderr
    );
    let scan = t.run(&["scan", "--write-dataset", "ds", "b"]);
    assert_eq!(
        (scan.code(), scan.stdout.as_str()),
        (2, ""),
        "{}",
        scan.stderr
    );
    assert!(scan.stderr.contains(claimed), "{}", scan.stderr);
    // A stage dataset writes only into a directory that names its run: one claimed by another
    // run since, or no longer claimed, is refused.
    let run = |work: &str, stages: &[&str]| {
        let mut last = None;
        for stage in stages {
            let flag = if ["group", "verify"].contains(stage) {
                "--part"
            } else {
                "--shard"
            };
            let args: Vec<&str> = match *stage {
                "components" | "report" => vec!["stage", stage, "--work", work],
                _ => vec!["stage", stage, "--work", work, flag, "0/1"],
            };
            let r = t.run(&args);
            if r.code() != 0 {
                return r;
            }
            last = Some(r);
        }
        last.unwrap()
    };
    let before = ["sign", "group", "components", "route", "verify"];
    assert_eq!(run("wa", &before).code(), 0);
    let marker = t.join("ds/_dupfind_run");
    let mine = fs::read(&marker).unwrap();
    fs::remove_file(&marker).unwrap();
    let gone = run("wa", &["dataset"]);
    assert_eq!(gone.code(), 2, "{}", gone.stderr);
    assert!(
        gone.stderr.contains("no longer names this run"),
        "{}",
        gone.stderr
    );
    assert_eq!(init("wc", "b").code(), 0, "claims the directory");
    let taken = run("wa", &["dataset"]);
    assert_eq!(taken.code(), 2, "{}", taken.stderr);
    assert!(taken.stderr.contains(claimed), "{}", taken.stderr);
    assert!(!t.join("ds/part-00000.jsonl").exists());
    // Given back to run A, it writes its part; its report ends the claim, and its part refuses
    // the directory to another run.
    fs::write(&marker, mine).unwrap();
    let a = run("wa", &["dataset", "report"]);
    assert_eq!(a.code(), 0, "{}", a.stderr);
    let names: Vec<String> = (fs::read_dir(t.join("ds")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["part-00000.jsonl"]);
    assert!(fs::read_to_string(t.join("ds/part-00000.jsonl"))
        .unwrap()
        .contains("a/x.txt"));
    let b = init("wd", "b");
    assert_eq!(b.code(), 2, "{}", b.stderr);
    assert!(b.stderr.contains("already holds a dataset"), "{}", b.stderr);
}

/// Runs every stage of the run in `work` (`shards` shards, one partition) but the report, by
/// hand, asserting each exits 0.
pub(super) fn stages_through_dataset(
    run: impl Fn(&[&str]) -> super::util::Run,
    work: &str,
    shards: u32,
) {
    let each = |stage: &str, flag: &str, n: u32| {
        for i in 0..n {
            let r = run(&["stage", stage, "--work", work, flag, &format!("{i}/{n}")]);
            assert_eq!(r.code(), 0, "{stage} {i}: {}", r.stderr);
        }
    };
    each("sign", "--shard", shards);
    each("group", "--part", 1);
    let r = run(&["stage", "components", "--work", work]);
    assert_eq!(r.code(), 0, "components: {}", r.stderr);
    each("route", "--shard", shards);
    each("verify", "--part", 1);
    each("dataset", "--shard", shards);
}

#[test]
fn a_staged_dataset_part_lost_or_changed_marks_its_shard_to_run_again_and_stops_the_report() {
    // Review 6 finding 06: the dataset summaries recorded no part, so a part lost after `stage
    // dataset` went unnoticed: status said every task was done, and the report exited 0 and
    // ended the run's claim on a dataset missing a shard's rows.
    let t = TestDir::new();
    corpus(&t);
    let scan = t.run(&["scan", "--write-dataset", "scan-ds", "in"]);
    let init = ["stage", "init", "--work", "w", "--shards", "2"];
    let r = t.run(&[&init[..], &["--write-dataset", "ds", "in"]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    stages_through_dataset(|a| t.run(a), "w", 2);
    // Part 0 changed in place (its size kept), part 1 lost.
    let mut bytes = fs::read(t.join("ds/part-00000.jsonl")).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    fs::write(t.join("ds/part-00000.jsonl"), bytes).unwrap();
    fs::remove_file(t.join("ds/part-00001.jsonl")).unwrap();
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert_eq!(status.code(), 0, "{}", status.stderr);
    for said in [
        "dataset     0 of 2 done",
        "part-00000.jsonl, a part of the dataset it wrote, changed since: its CRC-32 is",
        "part-00001.jsonl, a part of the dataset it wrote, is missing",
        "next: dupfind stage dataset --shard 0/2 --work w",
    ] {
        assert!(status.stdout.contains(said), "{said}: {}", status.stdout);
    }
    let todo = t.run(&["stage", "status", "--work", "w", "--todo", "dataset"]);
    assert_eq!(todo.stdout, "0\n1\n");
    // From inside the work directory, the relative dataset directory is still init's.
    let mut inside = t.command(&["stage", "status", "--work", "."]);
    inside.current_dir(t.join("w"));
    let inside = super::util::run_command(inside);
    let lost = "part-00001.jsonl, a part of the dataset it wrote, is missing";
    assert!(inside.stdout.contains(lost), "{}", inside.stdout);
    // The report refuses (the lost part; it does not read the parts whole) and keeps the claim.
    let report = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!((report.code(), report.stdout.as_str()), (2, ""));
    assert!(
        report.stderr.contains("stage dataset, shard 1: ")
            && report
                .stderr
                .contains("part-00001.jsonl, a part of the dataset it wrote, is missing")
            && report
                .stderr
                .contains("run `dupfind stage dataset --shard 1/2 --work w` again"),
        "{}",
        report.stderr
    );
    assert!(t.join("ds/_dupfind_run").exists());
    // --resume writes both parts again; the report then ends the claim.
    let args = ["--resume", "--work", "w", "--dupfind", super::util::bin()];
    let resume = super::staged::local_driver(&t, &args);
    assert_eq!(resume.code(), scan.code(), "{}", resume.stderr);
    assert_eq!(resume.stdout, scan.stdout);
    let parts = [
        fs::read(t.join("ds/part-00000.jsonl")).unwrap(),
        fs::read(t.join("ds/part-00001.jsonl")).unwrap(),
    ]
    .concat();
    assert_eq!(parts, fs::read(t.join("scan-ds/part-00000.jsonl")).unwrap());
    assert!(!t.join("ds/_dupfind_run").exists());
}

#[test]
fn the_staged_dataset_in_shard_order_is_the_scans_annotated_or_not() {
    let t = TestDir::new();
    corpus(&t);
    for i in 0..30u64 {
        let base = text(5000 + i / 3, 120);
        t.write(format!("in/g/{i:02}.txt"), edit(&base, &[i as usize % 100]));
    }
    for extra in [&[][..], &["--annotate"]] {
        let args = |out| [&["-q", "--write-dataset", out][..], extra, &["in"]].concat();
        let scan = t.run(&[&["scan"][..], &args("scan-out")].concat());
        let work = format!("w{}", extra.len());
        let staged = super::dataset_parquet::staged(&t, 3, &work, &args("staged-out"));
        assert_eq!(
            (staged.code(), &staged.stdout),
            (scan.code(), &scan.stdout),
            "{}",
            staged.stderr
        );
        let mut parts = String::new();
        for shard in 0..3 {
            let part = t.join(format!("staged-out/part-{shard:05}.jsonl"));
            parts.push_str(&fs::read_to_string(part).unwrap());
        }
        let whole = fs::read_to_string(t.join("scan-out/part-00000.jsonl")).unwrap();
        assert_eq!(parts, whole);
        assert!(whole.lines().count() > 10);
        assert_eq!(whole.contains("dupfind_keep"), !extra.is_empty());
        fs::remove_dir_all(t.join("scan-out")).unwrap();
        fs::remove_dir_all(t.join("staged-out")).unwrap();
    }
}

#[test]
fn documents_the_dataset_lacks_are_summed_up_as_such_not_as_bad_lines() {
    let t = TestDir::new();
    let a = text(4100, 200);
    let dump = |third: &str| {
        [
            serde_json::json!({"id": 1, "text": a}),
            serde_json::json!({"id": 2, "text": edit(&a, &[10])}),
            serde_json::json!({"id": 3, "text": third}),
        ]
        .map(|r| format!("{r}\n"))
        .concat()
    };
    t.write("in/d.jsonl", dump(&text(4101, 200)));
    let init = [
        "stage",
        "init",
        "--work",
        "w",
        "-q",
        "--write-dataset",
        "out",
        "in",
    ];
    for args in [
        &init[..],
        &["stage", "sign", "--work", "w", "--shard", "0/1"],
        &["stage", "group", "--work", "w", "--part", "0/1"],
        &["stage", "components", "--work", "w"],
        &["stage", "route", "--work", "w", "--shard", "0/1"],
        &["stage", "verify", "--work", "w", "--part", "0/1"],
    ] {
        let r = t.run(args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
    }
    // Record 3 changes after the scan's stages and before the dataset's.
    t.write("in/d.jsonl", dump(&text(4102, 200)));
    let r = t.run(&["stage", "dataset", "--work", "w", "--shard", "0/1"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "dupfind: 1 document could not be written to the dataset (run without -q for details)\n"
    );
    let errors = &r.json()["errors"];
    assert_eq!(errors[0]["line"], 3, "{errors}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("not in the dataset"),
        "{errors}"
    );
}

#[test]
fn ctrl_c_while_a_part_is_written_leaves_no_temporary_file_in_the_dataset_directory() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let t = TestDir::new();
    // Large enough that the part is a while in the writing, even in a release build.
    let dump = dump_of(4000, 7000, 1500);
    t.write("in/d.jsonl", &dump);
    let mut child = t
        .command(&["scan", "-q", "-j1", "in", "--write-dataset", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let temp = loop {
        let found = fs::read_dir(t.join("out")).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .find(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        });
        if let Some(e) = found {
            break e.path();
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its part was seen being written"
        );
        assert!(start.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(2));
    };
    // SAFETY: kill(2) on the child's pid, which it holds until waited for.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(killed, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!temp.exists(), "{} is left", temp.display());
    let left: Vec<_> = fs::read_dir(t.join("out")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_record_changed_before_the_dataset_is_written_is_a_warning_on_stderr() {
    use std::io::{Seek, SeekFrom, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let t = TestDir::new();
    let dump = dump_of(4000, 9000, 1500);
    t.write("in/d.jsonl", &dump);
    let child = t
        .command(&["scan", "-j1", "in", "--write-dataset", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The part being written: not the scan's claim (`_dupfind_run`, a few bytes, written
    // through a temporary file of its own at the scan's start).
    let writing = |e: fs::DirEntry| {
        e.file_name().to_string_lossy().ends_with(".tmp")
            && e.metadata().is_ok_and(|m| m.len() > 4096)
    };
    while !fs::read_dir(t.join("out")).is_ok_and(|mut d| d.any(|e| e.is_ok_and(writing))) {
        assert!(start.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(2));
    }
    // The last record's text, changed while the part is written from the first ones.
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(t.join("in/d.jsonl"))
        .unwrap();
    f.seek(SeekFrom::Start(dump.len() as u64 - 40)).unwrap();
    f.write_all(b"XXXXXXXXXX").unwrap();
    drop(f);
    let r = super::util::wait_guarded(child);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("in/d.jsonl:4000: not in the dataset"),
        "{}",
        r.stderr
    );
}

#[test]
fn of_two_scans_writing_one_dataset_directory_at_once_the_second_is_refused() {
    // Review 6, finding 02: a scan took no claim, so of two scans started together both
    // passed the check and the later part replaced the earlier, both exiting 0.
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let t = TestDir::new();
    let dump = dump_of(4000, 7000, 1500);
    t.write("a/d.jsonl", &dump)
        .write("b/y.txt", text(4501, 100));
    let mut first = t
        .command(&["scan", "-q", "-j1", "a", "--write-dataset", "out"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let marker = t.join("out/_dupfind_run");
    let start = Instant::now();
    while !marker.exists() {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first scan ended before its claim was seen"
        );
        assert!(start.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(2));
    }
    let second = t.run(&["scan", "-q", "b", "--write-dataset", "out"]);
    let first = first.wait_with_output().unwrap();
    let first_err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(0), "{first_err}");
    assert_eq!((second.code(), second.stdout.as_str()), (2, ""));
    assert!(
        second
            .stderr
            .contains("out is being written by another scan (process ")
            && second.stderr.contains("remove out/_dupfind_run"),
        "{}",
        second.stderr
    );
    // The first's dataset whole, its claim ended with it.
    let names: Vec<String> = (fs::read_dir(t.join("out")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["part-00000.jsonl"]);
    assert_eq!(lines(&t.join("out/part-00000.jsonl")).len(), 4000);
    // A staged run is refused a directory a scan is writing, and a scan that fails after it
    // claimed the directory ends its claim.
    fs::write(&marker, br#"{"run":"00000000000000aa","scan":4242}"#).unwrap();
    let init = t.run(&[
        "stage",
        "init",
        "--work",
        "w",
        "--write-dataset",
        "out",
        "b",
    ]);
    assert_eq!(init.code(), 2, "{}", init.stderr);
    assert!(
        init.stderr
            .contains("being written by another scan (process 4242)"),
        "{}",
        init.stderr
    );
    let parquet = ["scan", "b", "a", "--dataset-format", "parquet"];
    let failed = t.run(&[&parquet[..], &["--write-dataset", "ds"]].concat());
    assert_eq!(failed.code(), 2, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("is a JSON Lines dump"),
        "{}",
        failed.stderr
    );
    assert!(!t.join("ds/_dupfind_run").exists());
}

#[test]
fn a_report_inside_the_dataset_directory_is_refused_before_anything_is_written() {
    // Review 6, finding 03: `-o out/part-00000.jsonl --write-dataset out` was accepted and the
    // report renamed over the dataset's part.
    let t = TestDir::new();
    corpus(&t);
    fs::create_dir_all(t.join("out/sub")).unwrap();
    fs::create_dir(t.join("link")).unwrap();
    std::os::unix::fs::symlink(t.join("out"), t.join("link/to-out")).unwrap();
    for (o, dataset) in [
        ("out/part-00000.jsonl", "out"),
        ("./out/sub/report.json", "out/"),
        ("link/to-out/part-00000-00000.parquet", "out"),
        ("s3://bkt/ds/part-00000.jsonl", "s3://bkt/ds"),
        ("s3://bkt/ds/r.json", "s3://bkt/ds/"),
    ] {
        let r = t.run(&["scan", "-o", o, "--write-dataset", dataset, "in"]);
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{o}: {}", r.stderr);
        let said = format!("-o {o} is inside the --write-dataset directory {dataset}");
        assert!(r.stderr.contains(&said), "{}", r.stderr);
        let names: Vec<_> = fs::read_dir(t.join("out")).unwrap().collect();
        assert_eq!(names.len(), 1, "{o}: {names:?}");
    }
    // Beside it: written.
    fs::remove_dir(t.join("out/sub")).unwrap();
    let r = t.run(&[
        "scan",
        "-o",
        "out-report.json",
        "--write-dataset",
        "out",
        "in",
    ]);
    assert_eq!(r.code(), 2, "the corpus's bad line: {}", r.stderr);
    assert!(t.join("out-report.json").exists());
    assert!(t.join("out/part-00000.jsonl").exists());
}

#[test]
fn a_dataset_write_error_names_the_part_and_a_file_is_no_directory() {
    // Review 6, finding 11: `--write-dataset FILE` said "reading FILE/_dupfind_run: Not a
    // directory", and a write that failed (a full disk) said only the OS's error.
    use std::os::unix::process::CommandExt;
    let t = TestDir::new();
    t.write("afile", "").write("in/x.txt", text(4600, 100));
    for args in [
        &["scan", "--write-dataset", "afile", "in"][..],
        &[
            "stage",
            "init",
            "--work",
            "w",
            "--write-dataset",
            "afile",
            "in",
        ],
    ] {
        let r = t.run(args);
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
        assert!(
            r.stderr
                .contains("--write-dataset: afile is not a directory"),
            "{}",
            r.stderr
        );
    }
    // A file size limit stands for the full disk: the part's write fails past 64 KiB.
    let dump = dump_of(100, 7000, 300);
    t.write("big/d.jsonl", &dump);
    let mut scan = t.command(&["scan", "-q", "--write-dataset", "out", "big"]);
    // SAFETY: between fork and exec, only async-signal-safe calls: setrlimit(2), signal(2) (the
    // signal ignored, so that the write fails with EFBIG rather than killing the process).
    unsafe {
        scan.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            match libc::setrlimit(libc::RLIMIT_FSIZE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let r = super::util::run_command(scan);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("writing out/part-00000.jsonl: File too large"),
        "{}",
        r.stderr
    );
}
