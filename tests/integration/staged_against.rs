//! The staged pipeline `--against` an index: the report, stderr and exit status of
//! `scan --against` at any number of shards and partitions (indexed documents unchanged, changed,
//! gone, copied and near-copied by new ones), and an index that changed since `stage init`
//! refused by every stage that opens it. With `--update`, the index afterwards is the one
//! `scan --against --update` leaves, file for file, committed once by `stage report`.

use std::fs;
use std::path::Path;

use super::staged::{
    assert_same_as_scan, assert_same_run, corpus, local_driver, staged, stages_before_report,
};
use super::util::{edit, index_lock_held, text, Run, TestDir};

/// The staged test corpus indexed, then a night's changes: new near-copies and an exact copy of
/// indexed documents, a new family of its own, an indexed file edited (it supersedes its
/// indexed document) and one deleted (gone, met by a new near-copy).
fn indexed_then_changed(t: &TestDir) {
    corpus(t);
    let r = t.run(&["index", "build", "--index", "idx", "-q", "c"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let a = fs::read_to_string(t.join("c/d0/chain-a.txt")).unwrap();
    let fam = fs::read_to_string(t.join("c/d0/fam0-0.txt")).unwrap();
    let gone = fs::read_to_string(t.join("c/d2/fam2-0.txt")).unwrap();
    t.write("c/d5/new-near-a.txt", edit(&a, &[5, 90]))
        .write("c/d5/new-copy-of-fam0.txt", &fam)
        .write("c/d6/new-near-gone.txt", edit(&gone, &[7]));
    let own = text(3000, 250);
    for v in 0..3usize {
        t.write(
            format!("c/d{}/own-{v}.txt", 5 + v % 2),
            edit(&own, &[v * 11]),
        );
    }
    fs::remove_file(t.join("c/d2/fam2-0.txt")).unwrap();
    let edited = format!("{} and a new ending", text(700 + 1, 250));
    t.write("c/d1/fam1-0.txt", edited);
}

#[test]
fn staged_against_an_index_equals_scan_against_it_at_any_layout() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let layouts = [(1, 1), (2, 3), (3, 2), (5, 1)];
    assert_same_as_scan(&t, &["-q", "--against", "idx", "c"], &layouts);
    // Its notes too (the indexed documents whose files are gone), and on every task's threads.
    assert_same_as_scan(&t, &["--against", "idx", "-j3", "c"], &layouts[1..3]);
    let scan = t.run(&["scan", "--against", "idx", "c"]);
    assert!(
        scan.stderr.contains("whose files are gone"),
        "{}",
        scan.stderr
    );
    let index = &scan.json()["stats"]["index"];
    assert!(index["unchanged_files"].as_u64().unwrap() > 0, "{index}");
}

#[test]
fn an_index_inside_a_scanned_directory_is_no_input_of_a_staged_run_as_of_scan() {
    // Review 7 finding 01's kind: `stage init` walked the index's own files as inputs.
    let t = TestDir::new();
    corpus(&t);
    let r = t.run(&["index", "build", "--index", "c/idx", "-q", "c"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    t.write("c/d5/new.txt", text(3000, 250));
    assert_same_as_scan(&t, &["--against", "c/idx", "c"], &[(1, 1), (2, 3)]);
}

/// The files of index `dir`, by name, with their bytes.
fn index_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Puts `files` back as index `dir`, whatever it holds now.
fn restore(dir: &Path, files: &[(String, Vec<u8>)]) {
    if dir.exists() {
        fs::remove_dir_all(dir).unwrap();
    }
    fs::create_dir(dir).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Runs `scan` with `args`, which update index `idx`; returns its run and the index's files
/// after it, and puts the index back as it was.
fn scan_update(t: &TestDir, args: &[&str]) -> (Run, Vec<(String, Vec<u8>)>) {
    let idx = t.join("idx");
    let before = index_files(&idx);
    let scan = t.run(&[&["scan"][..], args].concat());
    assert_eq!(scan.code(), 0, "{args:?}: {}", scan.stderr);
    let after = index_files(&idx);
    assert_ne!(after, before, "the scan updated the index");
    restore(&idx, &before);
    (scan, after)
}

/// Asserts that two indexes hold the same files, byte for byte.
fn assert_same_index(what: &str, want: &[(String, Vec<u8>)], got: &[(String, Vec<u8>)]) {
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(want), names(got), "{what}: the index's files");
    for ((name, a), (_, b)) in want.iter().zip(got) {
        assert!(a == b, "{what}: {name} differs");
    }
}

/// [`indexed_then_changed`], with a new dump whose records go into the index too (one a
/// near-copy of an indexed document).
fn indexed_then_changed_with_a_dump(t: &TestDir) {
    indexed_then_changed(t);
    let fam = fs::read_to_string(t.join("c/d3/fam3-0.txt")).unwrap();
    let mut dump = String::new();
    for (i, body) in [edit(&fam, &[3]), text(5000, 220), text(5001, 220)]
        .iter()
        .enumerate()
    {
        dump += &serde_json::json!({"id": format!("r{i}"), "text": body}).to_string();
        dump.push('\n');
    }
    t.write("c/d6/records.jsonl", dump);
}

#[test]
fn staged_update_reports_and_leaves_the_index_as_scan_update_at_any_layout() {
    let t = TestDir::new();
    indexed_then_changed_with_a_dump(&t);
    let idx = t.join("idx");
    let before = index_files(&idx);
    for prune in [false, true] {
        let mut args = vec!["--against", "idx", "--update", "c"];
        if prune {
            args.insert(3, "--prune");
        }
        let (scan, want) = scan_update(&t, &args);
        assert_eq!(scan.json()["stats"]["index"]["updated_generation"], 2);
        for (shards, parts) in [(1, 1), (2, 3), (3, 2)] {
            restore(&idx, &before);
            let work = format!("w-{prune}-{shards}-{parts}");
            let r = staged(&t, &work, shards, parts, &args);
            let at = format!("{args:?} at {shards}x{parts}");
            assert_same_run(&scan, &r, &at);
            assert_same_index(&at, &want, &index_files(&idx));
        }
        // And the index then answers as scan's does: nothing is left to read.
        let again = t.run(&["scan", "-q", "--against", "idx", "c"]);
        let stats = &again.json()["stats"];
        assert_eq!(stats["documents"], 0, "{stats}");
        restore(&idx, &before);
    }
}

#[test]
fn staged_update_with_a_dictionary_per_shard_holds_the_documents_scan_update_holds() {
    let t = TestDir::new();
    // An index without a dictionary (too little text to train one), then more than a megabyte
    // of new text in each of two shards: each shard trains its own, where `scan` trains one.
    t.write("old/a.txt", text(1, 300));
    let r = t.run(&["index", "build", "--index", "idx", "-q", "old"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    for d in 0..2 {
        for i in 0..40u64 {
            t.write(
                format!("new/d{d}/n{i:02}.txt"),
                text(100 + 40 * d + i, 6000),
            );
        }
    }
    let before = index_files(&t.join("idx"));
    let args = ["-q", "--against", "idx", "--update", "new"];
    let scan = t.run(&[&["scan"][..], &args].concat());
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    let info = |t: &TestDir| {
        let mut v = t.run(&["index", "info", "--index", "idx"]).json();
        for s in v["segments"].as_array_mut().unwrap() {
            s.as_object_mut()
                .unwrap()
                .retain(|k, _| k != "bytes" && k != "table_bytes");
        }
        v.as_object_mut().unwrap().remove("bytes");
        v
    };
    let want = info(&t);
    // What the index answers for near-copies of new documents from both shards.
    for (i, seed) in [(0, 100), (1, 139), (2, 141)] {
        t.write(
            format!("probe/p{i}.txt"),
            edit(&text(seed, 6000), &[9, 400]),
        );
    }
    let probe = ["scan", "-q", "--against", "idx", "probe"];
    let answer = t.run(&probe).stdout;
    assert!(
        answer.contains("n00.txt") && answer.contains("d1/n01.txt"),
        "{answer}"
    );
    restore(&t.join("idx"), &before);
    let r = staged(&t, "w", 2, 2, &args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, scan.stdout);
    assert_eq!(info(&t), want);
    assert_eq!(t.run(&probe).stdout, answer);
}

#[test]
fn a_staged_update_is_committed_once_by_a_delivered_report_and_never_by_a_stopped_run() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let idx = t.join("idx");
    let before = index_files(&idx);
    let args = ["-q", "--against", "idx", "--update", "--prune", "c"];
    let (scan, want) = scan_update(&t, &args);
    // Every stage but the report: the index is as it was (the new documents wait in the work
    // directory).
    stages_before_report(&t, "w", (2, 1), &args);
    assert_same_index("before the report", &before, &index_files(&idx));
    // A report that cannot be delivered (a full disk) commits nothing.
    let mut cmd = t.command(&["stage", "report", "--work", "w"]);
    cmd.stdout(fs::File::options().write(true).open("/dev/full").unwrap());
    let lost = super::util::run_command(cmd);
    assert_eq!(lost.code(), 2, "{}", lost.stderr);
    assert!(
        lost.stderr.contains("the index was not updated"),
        "{}",
        lost.stderr
    );
    assert_same_index("after an undelivered report", &before, &index_files(&idx));
    // Delivered, it commits: the index scan leaves.
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, scan.stdout);
    assert_same_index("after the report", &want, &index_files(&idx));
    // Run again, the report commits nothing a second time, and says why.
    let again = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(again.code(), 2);
    assert!(again.stdout.is_empty());
    assert!(
        again
            .stderr
            .contains("this run's report already added its documents to index idx"),
        "{}",
        again.stderr
    );
    assert_same_index("after a second report", &want, &index_files(&idx));
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert!(
        status
            .stdout
            .contains("index       updated by this run's report: generation 2"),
        "{}",
        status.stdout
    );
}

#[test]
fn a_staged_update_of_an_index_changed_since_init_commits_nothing() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    stages_before_report(
        &t,
        "w",
        (1, 1),
        &["-q", "--against", "idx", "--update", "c"],
    );
    // Another run commits first.
    t.write("other/late.txt", text(4000, 200));
    let r = t.run(&["scan", "-q", "--against", "idx", "--update", "other"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let theirs = index_files(&t.join("idx"));
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert!(
        status.stdout.contains(
            "index       stale: index idx changed since `stage init` (generation 2, the run \
             compared with 1)"
        ),
        "{}",
        status.stdout
    );
    let r = t.run(&["stage", "report", "--work", "w"]);
    assert_eq!(r.code(), 2);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("index idx changed since `stage init`"),
        "{}",
        r.stderr
    );
    assert_same_index(
        "after the refused report",
        &theirs,
        &index_files(&t.join("idx")),
    );
}

#[test]
fn a_staged_update_refused_by_the_lock_ends_as_scan_update_does() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let before = index_files(&t.join("idx"));
    // Another writer holds the index's lock through both runs.
    let _held = index_lock_held(&t.join("idx"));
    for args in [
        &["-q", "--against", "idx", "--update", "c"][..],
        &["--against", "idx", "--update", "c"],
    ] {
        assert_same_as_scan(&t, args, &[(2, 3)]);
    }
    let scan = t.run(&["scan", "-q", "--against", "idx", "--update", "c"]);
    assert_eq!(scan.code(), 2, "{}", scan.stderr);
    assert_eq!(
        scan.stderr,
        "dupfind: error: index not updated: cannot update index idx: index idx is being updated \
         by another process\n"
    );
    assert_eq!(scan.json()["errors"], serde_json::json!([]));
    assert_same_index("after the refusals", &before, &index_files(&t.join("idx")));
}

#[test]
fn the_local_driver_passes_update_and_prune_on() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let idx = t.join("idx");
    let (scan, want) = scan_update(&t, &["--against", "idx", "--update", "--prune", "c"]);
    let bin = super::util::bin();
    let args = [
        "--shards",
        "3",
        "--parts",
        "2",
        "--jobs",
        "1",
        "--work",
        "w",
        "--dupfind",
        bin,
        "--against",
        "idx",
        "--update",
        "--prune",
        "c",
    ];
    let r = local_driver(&t, &args);
    assert_eq!(r.code(), scan.code(), "{}", r.stderr);
    assert_eq!(r.stdout, scan.stdout);
    assert_eq!(r.stderr, scan.stderr);
    assert_same_index("run-local.sh", &want, &index_files(&idx));
}

#[test]
fn the_local_driver_runs_attach_for_a_run_against_an_index() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let bin = super::util::bin();
    let args = [
        "--shards",
        "3",
        "--parts",
        "2",
        "--work",
        "w",
        "--jobs",
        "1",
        "--dupfind",
        bin,
        "--against",
        "idx",
        "c",
    ];
    let r = local_driver(&t, &args);
    let scan = t.run(&["scan", "--against", "idx", "c"]);
    assert_eq!(r.code(), scan.code(), "{}", r.stderr);
    assert_eq!(r.stdout, scan.stdout);
    // Parity includes stderr (the note on the indexed documents whose files are gone).
    assert!(
        scan.stderr.contains("whose files are gone"),
        "{}",
        scan.stderr
    );
    assert_eq!(r.stderr, scan.stderr);
}

#[test]
fn an_index_changed_since_init_is_refused_and_named_stale() {
    let t = TestDir::new();
    indexed_then_changed(&t);
    let init = [
        "stage",
        "init",
        "--work",
        "w",
        "-q",
        "--against",
        "idx",
        "c",
    ];
    assert_eq!(t.run(&init).code(), 0);
    let r = t.run(&["stage", "sign", "--work", "w", "--shard", "0/1"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    // Another run updates the index: what this run would compare with is not what init saw.
    t.write("other/late.txt", text(4000, 200));
    let r = t.run(&["scan", "-q", "--against", "idx", "--update", "other"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    for stage in [
        &["stage", "attach", "--work", "w"][..],
        &["stage", "report", "--work", "w"],
    ] {
        let r = t.run(stage);
        assert_eq!(r.code(), 2, "{stage:?}");
        assert!(r.stdout.is_empty());
        assert!(
            r.stderr.contains(
                "index idx changed since `stage init` (generation 2, the run \
                               compared with 1): start a new run"
            ),
            "{stage:?}: {}",
            r.stderr
        );
    }
    assert!(!t.join("w/attach/summary.json").exists());
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert!(
        status.stdout.contains(
            "index       stale: index idx changed since `stage init` (generation 2, the run \
             compared with 1): start a new run"
        ),
        "{}",
        status.stdout
    );
}

#[test]
fn a_dataset_against_an_index_warns_that_its_unchanged_inputs_are_left_out_staged_alike() {
    // Review 6, finding 04: the inputs the index holds unchanged are not read, so they were
    // silently missing from the dataset (0 records, status 0).
    let t = TestDir::new();
    indexed_then_changed(&t);
    let args = |dir: &'static str| ["--against", "idx", "--write-dataset", dir, "c"];
    let scan = t.run(&[&["scan"][..], &args("ds-scan")].concat());
    let unchanged = scan.json()["stats"]["index"]["unchanged_files"]
        .as_u64()
        .unwrap();
    assert!(unchanged > 1, "{}", scan.stdout);
    let said = format!(
        "dupfind: warning: --write-dataset: {unchanged} inputs held unchanged by the index were \
         not read (--against): they are not in the dataset; to write them, scan them without \
         --against\n"
    );
    assert!(scan.stderr.contains(&said), "{}", scan.stderr);
    // The local driver, which runs every stage (`stage dataset` too).
    for shards in [1, 3] {
        let dir = if shards == 1 { "ds-1" } else { "ds-3" };
        let r = super::dataset_parquet::staged(&t, shards, &format!("w{shards}"), &args(dir));
        assert_same_run(&scan, &r, &format!("{shards} shards"));
    }
}
