//! An index over its life: grown by many updates (the same reports as one built at once),
//! files deleted (never a representative; `index prune`, `--update --prune`), compaction, a
//! second writer while one holds the index, and what killed writers or other users leave in
//! its directory.

use std::fs;

use serde_json::{json, Value};

use super::{
    contents, generation_and_documents, index_files, info, member_sets, names, report, set,
};
use crate::util::{
    clusters, edit, index_lock_held, mkfifo, text, wait_guarded, wait_in_syscall, TestDir,
};

/// The report with the index's generation blanked out (it counts commits, which differ).
fn without_generation(mut r: Value) -> Value {
    r["stats"]["index"]["generation"] = json!(0);
    r
}

#[test]
fn index_an_index_updated_in_five_steps_gives_the_reports_of_one_built_at_once() {
    let t = TestDir::new();
    // Five batches of documents, near-duplicates across batches and within them.
    let bases: Vec<String> = (0..10).map(|i| text(60_000 + i, 200)).collect();
    for step in 0..5u64 {
        for i in 0..8u64 {
            let n = step * 8 + i;
            let body = if n % 3 == 0 {
                edit(&bases[(n % 10) as usize], &[(n as usize * 7) % 150 + 5])
            } else {
                text(61_000 + n, 200)
            };
            t.write(format!("all/step{step}/{i}.txt"), body);
        }
    }
    for (i, b) in bases.iter().enumerate() {
        t.write(format!("probe/near{i}.txt"), edit(b, &[20, 120]));
    }
    t.write(
        "probe/copy.txt",
        fs::read(t.join("all/step3/1.txt")).unwrap(),
    );

    report(&t, &["index", "build", "all", "--index", "once", "-q"]);
    report(
        &t,
        &["index", "build", "all/step0", "--index", "steps", "-q"],
    );
    for step in 1..5 {
        let root = format!("all/step{step}");
        report(&t, &["scan", &root, "--against", "steps", "--update", "-q"]);
    }
    assert_eq!(generation_and_documents(&t, "once"), (1, 40));
    assert_eq!(generation_and_documents(&t, "steps"), (5, 40));
    assert_eq!(info(&t, "steps")["segments"].as_array().unwrap().len(), 5);

    for args in [
        &["scan", "probe", "-q"][..],
        &["scan", "probe", "-q", "--pairs"],
        &["scan", "probe", "-q", "--threshold", "0.6"],
        &["scan", "probe", "-q", "--format", "text"],
    ] {
        let with = |index: &str| {
            let mut a = args.to_vec();
            a.extend(["--against", index]);
            let run = t.run(&a);
            assert_eq!(run.code(), 0, "{a:?}: {}", run.stderr);
            run.stdout
        };
        let (once, steps) = (with("once"), with("steps"));
        if args.contains(&"text") {
            assert_eq!(once, steps, "{args:?}");
        } else {
            let once: Value = serde_json::from_str(&once).unwrap();
            let steps: Value = serde_json::from_str(&steps).unwrap();
            assert_eq!(once["stats"]["index"]["generation"], 1);
            assert_eq!(steps["stats"]["index"]["generation"], 5);
            assert!(!clusters(&once).is_empty(), "{once}");
            // Byte for byte, but for the generation.
            assert_eq!(
                serde_json::to_string_pretty(&without_generation(once)).unwrap(),
                serde_json::to_string_pretty(&without_generation(steps)).unwrap(),
                "{args:?}"
            );
        }
    }
    // Compacted, the same again.
    let run = t.run(&["index", "compact", "--index", "steps"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(names(&t.join("steps")), index_files(&[6]));
    let a = report(&t, &["scan", "probe", "--against", "once"]);
    let b = report(&t, &["scan", "probe", "--against", "steps"]);
    assert_eq!(without_generation(a), without_generation(b));
    // A compaction of a compact index writes nothing, and says so.
    let before = contents(&t.join("steps"));
    let run = t.run(&["index", "compact", "--index", "steps"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.json()["written"], false);
    assert!(
        run.stderr.contains("nothing to do; nothing written"),
        "{}",
        run.stderr
    );
    assert_eq!(contents(&t.join("steps")), before);
}

#[test]
fn index_a_deleted_file_never_represents_a_live_one_and_prune_drops_it() {
    let t = TestDir::new();
    let (a, b, c) = (text(71_001, 250), text(71_002, 250), text(71_003, 250));
    t.write("old/a.txt", &a)
        .write("old/b.txt", &b)
        .write("old/c.txt", &c)
        .write("new/b-copy.txt", &b)
        .write("new/c-near.txt", edit(&c, &[30, 90]));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    fs::remove_file(t.join("old/b.txt")).unwrap();
    fs::remove_file(t.join("old/c.txt")).unwrap();

    // The deleted indexed files are left out: the live copies are nobody's duplicates.
    let run = t.run(&["scan", "new", "--against", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert!(
        clusters(&r).is_empty(),
        "a deleted file represents a live one: {r}"
    );
    assert!(
        run.stderr.contains(
            "2 indexed document(s) whose files are gone were left out of the comparison; \
             `dupfind index prune --index idx` drops them"
        ),
        "{}",
        run.stderr
    );
    let i = info(&t, "idx");
    assert_eq!(i["prune"], json!({"documents": 2, "files": 2}));
    assert_eq!(i["documents"], 3);

    // A copy of a live indexed file is still found.
    t.write("new2/a-copy.txt", &a);
    let r = report(&t, &["scan", "new2", "--against", "idx", "-q"]);
    assert_eq!(
        member_sets(&r),
        vec![set(&[("old/a.txt", true), ("new2/a-copy.txt", false)])]
    );

    // `index prune` drops them with a segment of tombstones; nothing else is rewritten.
    let first = fs::read(t.join("idx/seg-000001.dfs")).unwrap();
    let run = t.run(&["index", "prune", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let summary = run.json();
    assert_eq!(
        (
            &summary["written"],
            &summary["generation"],
            &summary["documents"],
            &summary["removed"]
        ),
        (&json!(true), &json!(2), &json!(1), &json!(2)),
        "{summary}"
    );
    assert_eq!(fs::read(t.join("idx/seg-000001.dfs")).unwrap(), first);
    let i = info(&t, "idx");
    assert_eq!(i["prune"], json!({"documents": 0, "files": 0}));
    assert_eq!((&i["documents"], &i["files"]), (&json!(1), &json!(1)));
    let segments = i["segments"].as_array().unwrap();
    assert_eq!(
        (
            &segments[0]["removed"],
            &segments[1]["documents"],
            &segments[1]["tombstones"]
        ),
        (&json!(2), &json!(0), &json!(2))
    );
    let run = t.run(&["scan", "new", "--against", "idx"]);
    assert!(!run.stderr.contains("files are gone"), "{}", run.stderr);
    // Nothing left to prune: nothing written.
    let before = contents(&t.join("idx"));
    let run = t.run(&["index", "prune", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.json()["written"], false);
    assert_eq!(contents(&t.join("idx")), before);
    // Compaction drops them for good.
    let run = t.run(&["index", "compact", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(names(&t.join("idx")), index_files(&[3]));
    let i = info(&t, "idx");
    assert_eq!(i["segments"][0]["documents"], 1);
    assert_eq!(i["segments"][0]["tombstones"], 0);
}

#[test]
fn index_update_with_prune_drops_the_gone_and_adds_the_new_in_one_generation() {
    let t = TestDir::new();
    t.write("old/a.txt", text(72_001, 200))
        .write("old/b.txt", text(72_002, 200))
        .write("new/c.txt", text(72_003, 200));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    fs::remove_file(t.join("old/a.txt")).unwrap();
    let probe = t.join("probe");
    fs::create_dir(&probe).unwrap();
    // Without --prune, an update keeps the gone document: with nothing new, nothing is written.
    let run = t.run(&["scan", "probe", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("nothing written (generation 1)"),
        "{}",
        run.stderr
    );
    assert_eq!(generation_and_documents(&t, "idx"), (1, 2));
    // With it, the gone document is dropped, alone in a generation.
    let r = report(
        &t,
        &[
            "scan",
            "probe",
            "--against",
            "idx",
            "--update",
            "--prune",
            "-q",
        ],
    );
    assert_eq!(r["stats"]["index"]["updated_generation"], 2, "{r}");
    assert_eq!(generation_and_documents(&t, "idx"), (2, 1));
    let r = report(
        &t,
        &[
            "scan",
            "new",
            "--against",
            "idx",
            "--update",
            "--prune",
            "-q",
        ],
    );
    assert_eq!(r["stats"]["index"]["updated_generation"], 3, "{r}");
    assert_eq!(generation_and_documents(&t, "idx"), (3, 2));
    // --prune needs --update.
    let run = t.run(&["scan", "new", "--against", "idx", "--prune"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
}

#[test]
fn index_a_second_writer_gets_a_clear_error_and_changes_nothing() {
    let t = TestDir::new();
    t.write("old/a.txt", text(73_001, 200))
        .write("new/b.txt", text(73_002, 200));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    let before = contents(&t.join("idx"));
    // Another writer holds the lock.
    let lock = index_lock_held(&t.join("idx"));
    let busy = "index idx is being updated by another process";
    let run = t.run(&["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(run.stderr.contains(busy), "{}", run.stderr);
    // The report is still printed; the new document is not indexed.
    assert_eq!(run.json()["stats"]["documents"], 1);
    for args in [
        &["index", "compact", "--index", "idx"][..],
        &["index", "prune", "--index", "idx"],
        &["index", "upgrade", "--index", "idx"],
    ] {
        let run = t.run(args);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(busy), "{args:?}: {}", run.stderr);
    }
    // Readers need no lock.
    report(&t, &["scan", "new", "--against", "idx", "-q"]);
    assert_eq!(info(&t, "idx")["generation"], 1);
    assert_eq!(contents(&t.join("idx")), before);
    drop(lock);
    let r = report(&t, &["scan", "new", "--against", "idx", "--update", "-q"]);
    assert_eq!(r["stats"]["index"]["updated_generation"], 2);
}

/// Every input of a refused update was read: the refusal is said once on stderr (even with
/// `-q`) and ends the run in status 2, but is not an unreadable input in the report.
#[test]
fn index_an_update_refused_by_the_lock_is_not_an_unreadable_input() {
    let t = TestDir::new();
    t.write("old/a.txt", text(73_101, 200))
        .write("new/b.txt", text(73_102, 200));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    let _held = index_lock_held(&t.join("idx"));
    let said = "dupfind: error: index not updated: cannot update index idx: index idx is being \
                updated by another process\n";
    for quiet in [true, false] {
        let args = ["scan", "new", "--against", "idx", "--update"];
        let run = t.run(&[&args[..], if quiet { &["-q"][..] } else { &[] }].concat());
        assert_eq!(run.code(), 2, "{}", run.stderr);
        assert_eq!(run.stderr, said, "-q {quiet}");
        let r = run.json();
        assert_eq!(r["errors"], serde_json::json!([]), "{r}");
        assert_eq!(r["stats"]["skipped"]["error"], 0, "{r}");
        assert_eq!(r["stats"]["documents"], 1, "{r}");
        assert!(
            r["stats"]["index"].get("updated_generation").is_none(),
            "{r}"
        );
    }
}

#[test]
fn index_an_update_whose_report_cannot_be_delivered_is_not_committed() {
    let t = TestDir::new();
    let a = text(74_001, 200);
    t.write("old/a.txt", &a).write("new/a-copy.txt", &a);
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    let before = contents(&t.join("idx"));
    // stdout on a full disk: the report is lost, so the new documents are not indexed.
    let mut cmd = t.command(&["scan", "new", "--against", "idx", "--update"]);
    cmd.stdout(fs::File::options().write(true).open("/dev/full").unwrap());
    let run = crate::util::run_command(cmd);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the index was not updated (its new documents are reported again next time)"),
        "{}",
        run.stderr
    );
    assert_eq!(contents(&t.join("idx")), before);
    assert_eq!(
        names(&t.join("idx")),
        index_files(&[1]),
        "the pending generation is removed"
    );
    // The next run reports the copy, and indexes it.
    let r = report(&t, &["scan", "new", "--against", "idx", "--update", "-q"]);
    assert_eq!(
        member_sets(&r),
        vec![set(&[("old/a.txt", true), ("new/a-copy.txt", false)])]
    );
    assert_eq!(generation_and_documents(&t, "idx"), (2, 2));
}

#[test]
fn index_updates_merge_segments_by_themselves_past_sixteen() {
    let t = TestDir::new();
    let bases: Vec<String> = (0..17).map(|i| text(75_000 + i, 150)).collect();
    for (step, b) in bases.iter().enumerate() {
        t.write(format!("all/s{step:02}/a.txt"), b);
        t.write(
            format!("all/s{step:02}/b.txt"),
            text(76_000 + step as u64, 150),
        );
        t.write(format!("probe/{step:02}.txt"), edit(b, &[40]));
    }
    report(&t, &["index", "build", "all", "--index", "once", "-q"]);
    report(&t, &["index", "build", "all/s00", "--index", "steps", "-q"]);
    let segments = |t: &TestDir| info(t, "steps")["segments"].as_array().unwrap().len();
    for step in 1..16 {
        let root = format!("all/s{step:02}");
        report(&t, &["scan", &root, "--against", "steps", "--update", "-q"]);
    }
    assert_eq!(segments(&t), 16);
    // The update that would make 17 merges the smallest, leaving 8.
    report(
        &t,
        &["scan", "all/s16", "--against", "steps", "--update", "-q"],
    );
    assert_eq!(segments(&t), 8);
    assert_eq!(generation_and_documents(&t, "steps"), (17, 34));
    assert_eq!(names(&t.join("steps")).len(), 2 + 2 * 8);
    let a = report(&t, &["scan", "probe", "--against", "once", "--pairs"]);
    let b = report(&t, &["scan", "probe", "--against", "steps", "--pairs"]);
    assert_eq!(clusters(&a).len(), 17, "{a}");
    assert_eq!(without_generation(a), without_generation(b));
}

/// What a compaction killed after its commit leaves: the new generation, and the files of the
/// generation before it that it had yet to remove.
fn leave_old_segments(idx: &std::path::Path, old: &std::collections::BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in old.iter().filter(|(n, _)| n.starts_with("seg-")) {
        fs::write(idx.join(name), bytes).unwrap();
    }
}

#[test]
fn index_files_no_generation_names_are_swept_by_the_next_writer_even_one_with_nothing_to_write() {
    let t = TestDir::new();
    t.write("old/a.txt", text(77_001, 200))
        .write("new/b.txt", text(77_002, 200));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    report(&t, &["scan", "new", "--against", "idx", "--update", "-q"]);
    let idx = t.join("idx");
    let old = contents(&idx);
    let run = t.run(&["index", "compact", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(names(&idx), index_files(&[3]));
    leave_old_segments(&idx, &old);
    let leftovers = names(&idx);
    assert_eq!(leftovers.len(), index_files(&[3]).len() + 4);
    // Readers never write: they leave them (and read the live generation).
    assert_eq!(generation_and_documents(&t, "idx"), (3, 2));
    report(&t, &["scan", "new", "--against", "idx", "-q"]);
    assert_eq!(names(&idx), leftovers);
    // Every writer sweeps them, also when it then finds nothing to write.
    for args in [
        &["index", "compact", "--index", "idx"][..],
        &["index", "prune", "--index", "idx"],
        &["index", "upgrade", "--index", "idx"],
        &["scan", "new", "--against", "idx", "--update"],
    ] {
        leave_old_segments(&idx, &old);
        let run = t.run(args);
        assert_eq!(run.code(), 0, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("nothing"), "{args:?}: {}", run.stderr);
        assert_eq!(names(&idx), index_files(&[3]), "{args:?}");
        assert_eq!(generation_and_documents(&t, "idx"), (3, 2));
    }
}

#[test]
fn index_a_directory_or_fifo_planted_under_a_segment_name_is_left_with_a_warning() {
    let t = TestDir::new();
    t.write("old/a.txt", text(78_001, 200))
        .write("new/b.txt", text(78_002, 200))
        .write("newer/c.txt", text(78_003, 200));
    report(&t, &["index", "build", "old", "--index", "idx", "-q"]);
    let idx = t.join("idx");
    // The next segment's name, another number's table, and a stale-looking name: none of them
    // a file a writer leaves, and unlink removes none of the directories.
    t.write("idx/seg-000002.dfs/inside", "another user's")
        .mkdir("idx/seg-000009.docs.parquet");
    mkfifo(&idx.join("seg-000004.dfs"));
    let planted = [
        "seg-000002.dfs",
        "seg-000004.dfs",
        "seg-000009.docs.parquet",
    ];
    let run = t.run(&["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    for (name, kind) in planted.iter().zip(["a directory", "a FIFO", "a directory"]) {
        let warning = format!("idx/{name} is {kind}, which no index writer leaves; left in place");
        assert!(run.stderr.contains(&warning), "{}", run.stderr);
    }
    assert_eq!(run.json()["stats"]["index"]["updated_generation"], 2);
    // The new segment takes the first number whose names are free.
    let mut want = index_files(&[1, 3]);
    want.extend(planted.iter().map(|n| n.to_string()));
    want.sort();
    assert_eq!(names(&idx), want);
    assert_eq!(
        fs::read_to_string(idx.join("seg-000002.dfs/inside")).unwrap(),
        "another user's"
    );
    // Later updates and a compaction go on around them.
    report(&t, &["scan", "newer", "--against", "idx", "--update", "-q"]);
    let run = t.run(&["index", "compact", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let mut want = index_files(&[6]);
    want.extend(planted.iter().map(|n| n.to_string()));
    want.sort();
    assert_eq!(names(&idx), want);
    assert_eq!(generation_and_documents(&t, "idx"), (4, 3));
}

/// Ctrl-C once `index compact` has committed (here while it prints its summary, its stdout a
/// full pipe) no longer changes its outcome: it finishes, says what it did, and exits 0, the
/// replaced segments removed; as `scan --update` ends once its report is out.
#[test]
fn index_compact_interrupted_after_its_commit_finishes_and_exits_0() {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let t = TestDir::new();
    for (step, dir) in ["a", "b", "c"].iter().enumerate() {
        t.write(format!("{dir}/1.txt"), text(77_000 + step as u64, 200));
        let args: &[&str] = match step {
            0 => &["index", "build", dir, "--index", "idx", "-q"],
            _ => &["scan", dir, "--against", "idx", "--update", "-q"],
        };
        report(&t, args);
    }
    assert_eq!(names(&t.join("idx")), index_files(&[1, 2, 3]));
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills the two descriptors, which are owned from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both are open and owned by nothing else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl(2) on a pipe this test owns.
    let size = unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(size >= 4096);
    let mut write_end = fs::File::from(write_end);
    write_end.write_all(&vec![b'\n'; size as usize]).unwrap();
    let mut cmd = t.command(&["index", "compact", "--index", "idx"]);
    cmd.stdout(write_end);
    let child = cmd.spawn().unwrap();
    // The parent's write end closes, so that the pipe ends with the child.
    drop(cmd);
    wait_in_syscall(child.id(), &[libc::SYS_write], 1);
    crate::act::send_interrupt(child.id());
    let mut out = String::new();
    fs::File::from(read_end).read_to_string(&mut out).unwrap();
    let run = wait_guarded(child);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let summary: Value = serde_json::from_str(out.trim_start()).unwrap();
    assert_eq!(summary["generation"], 4, "{summary}");
    assert_eq!(summary["written"], true, "{summary}");
    assert_eq!(summary["segments"], 1, "{summary}");
    assert_eq!(names(&t.join("idx")), index_files(&[4]));
}
