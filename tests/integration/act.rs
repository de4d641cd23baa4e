//! `dupfind remove`, `move` and `link` on real reports of real files: what they act on, what
//! they refuse, and the check that a file is still the one the report describes.

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};

use serde_json::{json, Value};

use super::compressed::with_stdin;
use super::util::{edit, size_in_words, text, TestDir};

/// `keep.txt` (the oldest: the representative) and `dup-N.txt`, exact copies of it, in
/// directory `r`; `near.txt`, a near copy. Scanned into `report.json`.
pub(super) fn copies(n: usize) -> (TestDir, String) {
    let t = TestDir::new();
    let body = text(7, 400);
    t.write("r/keep.txt", &body);
    make_old(&t, "r/keep.txt");
    for i in 0..n {
        t.write(format!("r/sub/dup-{i}.txt"), &body);
    }
    t.write("r/near.txt", edit(&body, &[50, 150]));
    scan_into(&t, &["r"]);
    (t, body)
}

/// Dates `rel` back to 2020, so that `--keep oldest` keeps it.
pub(super) fn make_old(t: &TestDir, rel: &str) {
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    let f = fs::File::options().write(true).open(t.join(rel)).unwrap();
    f.set_modified(old).unwrap();
}

pub(super) fn scan_into(t: &TestDir, roots: &[&str]) -> Value {
    let r = t.run(&[&["scan", "-q", "-o", "report.json"][..], roots].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap()
}

pub(super) fn exists(t: &TestDir, rel: &str) -> bool {
    fs::symlink_metadata(t.join(rel)).is_ok()
}

#[test]
fn a_file_edited_replaced_or_hard_linked_since_the_scan_is_skipped() {
    let (t, body) = copies(4);
    // Edited in place, its size and modification time kept: only the content hash tells.
    let edited = t.join("r/sub/dup-0.txt");
    let mtime = fs::metadata(&edited).unwrap().modified().unwrap();
    let mut changed = body.clone().into_bytes();
    changed[0] = if changed[0] == b'x' { b'y' } else { b'x' };
    fs::write(&edited, &changed).unwrap();
    let f = fs::File::options().write(true).open(&edited).unwrap();
    f.set_modified(mtime).unwrap();
    // Replaced by a file of the same content: another inode.
    t.write("r/sub/new", &body);
    fs::rename(t.join("r/sub/new"), t.join("r/sub/dup-1.txt")).unwrap();
    // Given another name, outside the tree: removing it would free nothing.
    fs::hard_link(t.join("r/sub/dup-2.txt"), t.join("elsewhere.txt")).unwrap();

    let r = t.run(&["remove", "report.json"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(r.stdout, "rm -- 'r/near.txt'\nrm -- 'r/sub/dup-3.txt'\n");
    for (name, why) in [
        ("dup-0.txt", "it has other content than when scanned"),
        (
            "dup-1.txt",
            "it was replaced since the scan (another inode)",
        ),
        ("dup-2.txt", "it has 2 names, 1 when scanned"),
    ] {
        let line = format!("dupfind: warning: r/sub/{name}: skipped: {why}");
        assert!(r.stderr.contains(&line), "{line}\n{}", r.stderr);
        assert!(exists(&t, &format!("r/sub/{name}")));
    }
    assert!(!exists(&t, "r/sub/dup-3.txt") && !exists(&t, "r/near.txt"));
    assert!(exists(&t, "r/keep.txt"));
    assert!(
        r.stderr.contains("removed 2 files (2 names)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("; skipped: 3 changed since the scan (scan again to act on them"),
        "{}",
        r.stderr
    );
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let (t, _) = copies(2);
    let before = fs::read_dir(t.join("r/sub")).unwrap().count();
    let r = t.run(&["remove", "--dry-run", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let plan = "rm -- 'r/near.txt'\nrm -- 'r/sub/dup-0.txt'\nrm -- 'r/sub/dup-1.txt'\n";
    assert_eq!(r.stdout, plan);
    assert!(
        r.stderr.contains("would remove 3 files (3 names)"),
        "{}",
        r.stderr
    );
    assert_eq!(fs::read_dir(t.join("r/sub")).unwrap().count(), before);
    assert!(exists(&t, "r/near.txt"));
    let moved = t.run(&["move", "-n", "--to", "attic", "report.json"]);
    assert_eq!(moved.code(), 0, "{}", moved.stderr);
    assert!(moved
        .stdout
        .ends_with("mv -n -- 'r/sub/dup-1.txt' 'attic/sub/dup-1.txt'\n"));
    assert!(!exists(&t, "attic"));
    // Done for real, the same lines.
    let done = t.run(&["remove", "report.json"]);
    assert_eq!(
        (done.code(), done.stdout.as_str()),
        (0, plan),
        "{}",
        done.stderr
    );
}

#[test]
fn move_keeps_the_path_below_the_root_and_never_overwrites() {
    let (t, body) = copies(2);
    t.write("attic/sub/dup-1.txt", "already here\n");
    let r = t.run(&["move", "--to", "attic", "report.json"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(
        fs::read_to_string(t.join("attic/sub/dup-0.txt")).unwrap(),
        body
    );
    assert!(!exists(&t, "r/sub/dup-0.txt"));
    assert_eq!(
        fs::read_to_string(t.join("attic/sub/dup-1.txt")).unwrap(),
        "already here\n"
    );
    assert_eq!(fs::read_to_string(t.join("r/sub/dup-1.txt")).unwrap(), body);
    assert!(
        r.stderr
            .contains("r/sub/dup-1.txt: not moved: attic/sub/dup-1.txt exists: not overwritten")
            || r.stderr
                .contains("not moved to attic/sub/dup-1.txt: exists: not overwritten"),
        "{}",
        r.stderr
    );
    assert!(exists(&t, "attic/near.txt") && exists(&t, "r/keep.txt"));
}

#[test]
fn representatives_standard_input_and_dump_records_are_never_touched() {
    let t = TestDir::new();
    let body = text(9, 300);
    t.write("r/a.txt", &body).write("r/b.txt", &body);
    // The oldest, so the representative (standard input's copy is as new as the run).
    make_old(&t, "r/a.txt");
    let record = serde_json::json!({ "text": body }).to_string();
    t.write("r/d.jsonl", format!("{record}\n{record}\n"));
    let args = ["scan", "-q", "-o", "report.json", "-", "r"];
    let r = with_stdin(&t, &args, body.as_bytes());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report: Value = serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["clusters"][0]["representative"]["path"], "r/a.txt");
    let dups = report["clusters"][0]["duplicates"].as_array().unwrap();
    assert!(dups.iter().any(|d| d["path"] == "-"), "{report}");
    assert!(dups.iter().any(|d| d.get("line").is_some()), "{report}");

    for args in [
        &["link", "-n", "report.json"][..],
        &["remove", "report.json"],
    ] {
        let r = t.run(args);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert!(
            r.stderr.contains("-: not acted on: it is standard input"),
            "{}",
            r.stderr
        );
        let dump = "r/d.jsonl:2: not acted on: it is a record of a JSON Lines dump";
        assert!(r.stderr.contains(dump), "{}", r.stderr);
        assert!(r.stdout.ends_with(" 'r/b.txt'\n"), "{}", r.stdout);
        assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    }
    assert!(exists(&t, "r/d.jsonl") && exists(&t, "r/a.txt") && !exists(&t, "r/b.txt"));
    assert!(!exists(&t, "-"));
}

#[test]
fn a_symbolic_link_leading_out_of_the_root_is_not_followed() {
    let (t, _) = copies(1);
    // The directory moves out of the root, and a link to it takes its place: the same file,
    // now reached through a link that leaves the root.
    fs::rename(t.join("r/sub"), t.join("outside")).unwrap();
    symlink("../outside", t.join("r/sub")).unwrap();
    for args in [
        &["remove", "report.json"][..],
        &["move", "--to", "attic", "report.json"],
    ] {
        let r = t.run(args);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        assert!(
            r.stderr.contains(
                "r/sub/dup-0.txt: skipped: it leads out of its root through a symbolic link"
            ),
            "{}",
            r.stderr
        );
        assert!(exists(&t, "outside/dup-0.txt"));
    }
}

#[test]
fn link_replaces_exact_copies_only_by_hard_links_to_the_representative() {
    let (t, _) = copies(2);
    let r = t.run(&["link", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "ln -f -- 'r/keep.txt' 'r/sub/dup-0.txt'\nln -f -- 'r/keep.txt' 'r/sub/dup-1.txt'\n"
    );
    assert!(
        r.stderr
            .contains("r/near.txt: not linked: its content is not identical"),
        "{}",
        r.stderr
    );
    let ino = |rel: &str| fs::metadata(t.join(rel)).unwrap().ino();
    assert_eq!(ino("r/sub/dup-0.txt"), ino("r/keep.txt"));
    assert_eq!(ino("r/sub/dup-1.txt"), ino("r/keep.txt"));
    assert_ne!(ino("r/near.txt"), ino("r/keep.txt"));
    assert_eq!(fs::metadata(t.join("r/keep.txt")).unwrap().nlink(), 3);
    // No temporary name is left behind.
    assert_eq!(fs::read_dir(t.join("r/sub")).unwrap().count(), 2);
}

#[test]
fn link_skips_all_when_the_representative_changed() {
    let (t, body) = copies(1);
    fs::write(t.join("r/keep.txt"), format!("{body} more")).unwrap();
    let r = t.run(&["link", "report.json"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("its representative r/keep.txt"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout, "");
    assert_eq!(fs::metadata(t.join("r/sub/dup-0.txt")).unwrap().nlink(), 1);
}

#[test]
fn reclaimable_bytes_count_a_hard_linked_file_once_and_only_with_all_its_names() {
    let t = TestDir::new();
    let body = text(11, 2000);
    t.write("r/a.txt", &body)
        .write("r/b.txt", &body)
        .write("r/c.txt", &body);
    fs::hard_link(t.join("r/c.txt"), t.join("r/c-again.txt")).unwrap();
    let disk = |rel: &str| fs::metadata(t.join(rel)).unwrap().blocks() * 512;
    let report = scan_into(&t, &["r"]);
    let dups = report["clusters"][0]["duplicates"].as_array().unwrap();
    assert_eq!(dups.len(), 2, "{report}");
    let expected = disk("r/b.txt") + disk("r/c.txt");
    assert_eq!(report["stats"]["reclaimable_bytes"], expected, "{report}");
    assert!(expected > body.len() as u64 * 2 - 1);
    // A name outside the roots keeps c's data: it frees nothing.
    fs::hard_link(t.join("r/c.txt"), t.join("kept-elsewhere.txt")).unwrap();
    let report = scan_into(&t, &["r"]);
    assert_eq!(
        report["stats"]["reclaimable_bytes"],
        disk("r/b.txt"),
        "{report}"
    );
    let text = t.run(&["scan", "-q", "--format", "text", "r"]);
    let summary = format!(
        "{} reclaimable; 0 unreadable\n",
        size_in_words(disk("r/b.txt"))
    );
    assert!(text.stdout.ends_with(&summary), "{}", text.stdout);
}

#[test]
fn a_report_is_read_from_standard_input() {
    let (t, _) = copies(1);
    let report = fs::read(t.join("report.json")).unwrap();
    let r = with_stdin(&t, &["remove", "-"], &report);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, "rm -- 'r/near.txt'\nrm -- 'r/sub/dup-0.txt'\n");
    assert!(!exists(&t, "r/sub/dup-0.txt"));
}

#[test]
fn a_malformed_report_is_a_clear_error_with_status_2() {
    let (t, _) = copies(1);
    t.write("cut.json", &fs::read(t.join("report.json")).unwrap()[..200]);
    t.write(
        "lines.jsonl",
        "{\"type\":\"header\"}\n{\"type\":\"summary\"}\n",
    );
    for (file, why) in [
        ("cut.json", "not a JSON report: EOF while parsing"),
        (
            "lines.jsonl",
            "a JSON Lines report (--format jsonl): act on --format json",
        ),
        ("missing.json", "cannot read the report missing.json"),
    ] {
        let r = t.run(&["remove", file]);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        assert!(r.stderr.starts_with("dupfind: "), "{}", r.stderr);
        assert!(r.stderr.contains(why), "{why}: {}", r.stderr);
        assert_eq!(r.stdout, "");
    }
    assert!(exists(&t, "r/sub/dup-0.txt"));
}

#[test]
fn remove_and_move_leave_every_duplicate_when_the_kept_copy_is_gone_or_changed() {
    for action in [&["remove"][..], &["move", "--to", "attic"]] {
        // Gone: removing its duplicates would lose the last copy.
        let (t, _) = copies(2);
        fs::remove_file(t.join("r/keep.txt")).unwrap();
        let r = t.run(&[action, &["report.json"]].concat());
        assert_eq!(r.code(), 2, "{action:?}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{action:?}");
        assert!(
            r.stderr.contains("skipped: its representative r/keep.txt"),
            "{action:?}: {}",
            r.stderr
        );
        for dup in ["r/sub/dup-0.txt", "r/sub/dup-1.txt", "r/near.txt"] {
            assert!(exists(&t, dup), "{action:?}: {dup}");
        }
        // Rewritten with other content.
        let (t, _) = copies(1);
        t.write("r/keep.txt", "something else entirely");
        let r = t.run(&[action, &["report.json"]].concat());
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
        assert!(exists(&t, "r/sub/dup-0.txt") && exists(&t, "r/near.txt"));
    }
}

#[test]
fn a_duplicate_kept_in_favour_of_standard_input_is_never_removed_or_listed() {
    let t = TestDir::new();
    let body = text(11, 300);
    t.write("r/only.txt", &body);
    let args = [
        "scan",
        "-q",
        "--keep",
        "first",
        "-o",
        "report.json",
        "-",
        "r",
    ];
    let r = with_stdin(&t, &args, body.as_bytes());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report: Value = serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["clusters"][0]["representative"]["path"], "-");
    for action in [&["remove"][..], &["move", "--to", "attic"]] {
        let r = t.run(&[action, &["report.json"]].concat());
        assert_eq!((r.code(), r.stdout.as_str()), (0, ""), "{}", r.stderr);
        assert!(
            r.stderr.contains("its representative is standard input"),
            "{}",
            r.stderr
        );
        assert!(exists(&t, "r/only.txt"), "{action:?}");
    }
    // Nor in the list `xargs rm` reads.
    let paths = with_stdin(
        &t,
        &["scan", "--keep", "first", "--format", "paths", "-", "r"],
        body.as_bytes(),
    );
    assert_eq!(paths.code(), 0, "{}", paths.stderr);
    assert_eq!(paths.stdout, "");
    assert!(
        paths.stderr.contains("kept in favour of standard input"),
        "{}",
        paths.stderr
    );
}

#[test]
fn a_file_moved_to_another_file_system_keeps_its_modification_time() {
    let shm = std::path::Path::new("/dev/shm");
    let (t, _) = copies(1);
    let here = fs::metadata(t.path()).unwrap().dev();
    if fs::metadata(shm).map_or(true, |m| m.dev() == here) {
        eprintln!("note: no /dev/shm on another file system; cross-device move test skipped");
        return;
    }
    let dup = t.join("r/sub/dup-0.txt");
    let before = fs::metadata(&dup).unwrap().modified().unwrap();
    let attic = shm.join(format!("dupfind-attic-{}", std::process::id()));
    let _ = fs::remove_dir_all(&attic);
    let r = t.run(&["move", "--to", attic.to_str().unwrap(), "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let moved = attic.join("sub/dup-0.txt");
    let after = fs::metadata(&moved).unwrap().modified().unwrap();
    let _ = fs::remove_dir_all(&attic);
    assert_eq!(after, before, "the modification time travels with the file");
    assert!(!exists(&t, "r/sub/dup-0.txt"));
}

/// A directory on /dev/shm for an attic on another file system than the test's, removed on
/// drop; None (the test is skipped, with a note) when /dev/shm is on the same one.
struct OtherFs(std::path::PathBuf);

impl OtherFs {
    fn attic(t: &TestDir, tag: &str) -> Option<OtherFs> {
        let shm = std::path::Path::new("/dev/shm");
        let here = fs::metadata(t.path()).unwrap().dev();
        if fs::metadata(shm).map_or(true, |m| m.dev() == here) {
            eprintln!("note: no /dev/shm on another file system; cross-device move test skipped");
            return None;
        }
        let attic = shm.join(format!("dupfind-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&attic);
        Some(OtherFs(attic))
    }
}

impl Drop for OtherFs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_move_to_another_file_system_interrupted_midway_leaves_no_part_of_a_file() {
    // Review finding: Ctrl-C while a large file was copied left the copy's first megabytes under
    // the final name, which a second move then refused to overwrite.
    let t = TestDir::new();
    let Some(attic) = OtherFs::attic(&t, "interrupted") else {
        return;
    };
    let body: String = text(11, 2_000).repeat(1 + (40 << 20) / 12_000);
    t.write("r/keep.txt", &body);
    make_old(&t, "r/keep.txt");
    t.write("r/dup.txt", &body);
    scan_into(&t, &["--max-size", "100M", "r"]);
    let mut child = t
        .command(&["move", "--to", attic.0.to_str().unwrap(), "report.json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The destination's directory is made just before the copy starts.
    let started = std::time::Instant::now();
    while !attic.0.exists() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    send_interrupt(child.id());
    let _ = child.wait().unwrap();
    let moved = attic.0.join("dup.txt");
    match fs::read(&moved) {
        Ok(bytes) => {
            assert_eq!(
                bytes.len(),
                body.len(),
                "a part of the file under its final name"
            );
            assert!(bytes == body.as_bytes());
        }
        Err(_) => assert!(exists(&t, "r/dup.txt"), "the file is in neither place"),
    }
    let hidden: Vec<_> = fs::read_dir(&attic.0)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(hidden.iter().all(|n| n == "dup.txt"), "{hidden:?}");
}

/// Sends SIGINT to `pid`, as Ctrl-C does.
pub(super) fn send_interrupt(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn the_summary_is_printed_when_the_list_of_actions_cannot_be_written() {
    // Review finding: `remove r.json > /dev/full` removed every duplicate and said only "No space
    // left on device".
    let (t, _) = copies(2);
    let full = fs::File::options().write(true).open("/dev/full").unwrap();
    let out = t
        .command(&["remove", "report.json"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("dupfind: removed 3 files (3 names)"),
        "{stderr}"
    );
    assert!(!exists(&t, "r/sub/dup-0.txt") && exists(&t, "r/keep.txt"));
}

/// `copies(1)` with a second name for the duplicate: `r/sub/dup-0.txt` and `r/sub/also.txt`.
pub(super) fn copies_hard_linked() -> TestDir {
    let (t, _) = copies(1);
    fs::hard_link(t.join("r/sub/dup-0.txt"), t.join("r/sub/also.txt")).unwrap();
    scan_into(&t, &["r"]);
    t
}

#[test]
fn a_hard_linked_file_moved_to_another_file_system_is_copied_once_and_linked_there() {
    let t = copies_hard_linked();
    let Some(attic) = OtherFs::attic(&t, "linked") else {
        return;
    };
    let to = attic.0.to_str().unwrap();
    let plan = t.run(&["move", "-n", "--to", to, "report.json"]);
    assert_eq!(plan.code(), 0, "{}", plan.stderr);
    let r = t.run(&["move", "--to", to, "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, plan.stdout, "the dry run printed what was done");
    let names: Vec<String> = fs::read_dir(attic.0.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let a = fs::metadata(attic.0.join("sub/also.txt")).unwrap();
    let b = fs::metadata(attic.0.join("sub/dup-0.txt")).unwrap();
    assert_eq!(a.ino(), b.ino(), "one file with both names");
    assert_eq!(a.nlink(), 2);
    assert!(!exists(&t, "r/sub/dup-0.txt") && !exists(&t, "r/sub/also.txt"));
    let (src, dst) = (
        |n: &str| format!("'r/sub/{n}'"),
        |n: &str| format!("'{to}/sub/{n}'"),
    );
    assert_eq!(
        r.stdout,
        format!(
            "mv -n -- 'r/near.txt' '{to}/near.txt'\ncp -p -n -- {} {}\nln -- {} {}\nrm -- {}\nrm -- {}\n",
            src("also.txt"),
            dst("also.txt"),
            dst("also.txt"),
            dst("dup-0.txt"),
            src("also.txt"),
            src("dup-0.txt"),
        )
    );
    assert!(
        r.stderr.contains("copied to another file system"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_hard_linked_file_is_not_moved_at_all_when_one_of_its_destinations_exists() {
    let t = copies_hard_linked();
    let Some(attic) = OtherFs::attic(&t, "taken") else {
        return;
    };
    fs::create_dir_all(attic.0.join("sub")).unwrap();
    fs::write(attic.0.join("sub/dup-0.txt"), "already here\n").unwrap();
    let r = t.run(&["move", "--to", attic.0.to_str().unwrap(), "report.json"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("exists: not overwritten"), "{}", r.stderr);
    // Both names stay, together; nothing of it is left in the attic.
    let ino = |rel: &str| fs::metadata(t.join(rel)).unwrap().ino();
    assert_eq!(ino("r/sub/also.txt"), ino("r/sub/dup-0.txt"));
    assert!(!attic.0.join("sub/also.txt").exists());
    assert_eq!(
        fs::read_to_string(attic.0.join("sub/dup-0.txt")).unwrap(),
        "already here\n"
    );
}

#[test]
fn a_file_gone_resized_or_unlinked_since_the_scan_is_skipped_with_its_own_reason() {
    let (t, body) = copies(3);
    fs::hard_link(t.join("r/sub/dup-2.txt"), t.join("r/sub/dup-2-again.txt")).unwrap();
    t.write("r/gone/dup.txt", &body);
    scan_into(&t, &["r"]);
    fs::remove_file(t.join("r/sub/dup-0.txt")).unwrap();
    t.write("r/sub/dup-1.txt", format!("{body} more"));
    fs::remove_file(t.join("r/sub/dup-2.txt")).unwrap();
    fs::remove_dir_all(t.join("r/gone")).unwrap();
    let r = t.run(&["remove", "report.json"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(r.stdout, "rm -- 'r/near.txt'\n");
    let n = body.len();
    for line in [
        "dupfind: warning: r/sub/dup-0.txt: skipped: it is gone since the scan\n".to_string(),
        format!(
            "dupfind: warning: r/sub/dup-1.txt: skipped: it changed size since the scan: {} \
             bytes, {n} when scanned\n",
            n + 5
        ),
        "dupfind: warning: r/sub/dup-2-again.txt: skipped: it has 1 name, 2 when scanned: a \
         hard link was made or removed since\n"
            .to_string(),
        "dupfind: warning: r/gone/dup.txt: skipped: it is gone since the scan\n".to_string(),
    ] {
        assert!(r.stderr.contains(&line), "{line}\n{}", r.stderr);
    }
    assert!(
        r.stderr.contains(
            "; skipped: 2 changed since the scan, 2 gone since the scan (scan again to act on \
             them as they are now)\n"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn a_path_going_up_from_a_root_is_reached_as_given_not_called_a_symbolic_link() {
    let t = TestDir::new();
    let body = text(13, 400);
    t.write("x", &body).write("w/y", &body);
    make_old(&t, "x");
    let in_w = |args: &[&str]| {
        let mut cmd = t.command(args);
        cmd.current_dir(t.join("w"));
        super::util::run_command(cmd)
    };
    // `./../x` is its own root (a file named on the command line), though `.` is a prefix of it.
    let scan = in_w(&["scan", "-q", "-o", "../report.json", ".", "./../x"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    let r = in_w(&["remove", "../report.json"]);
    assert_eq!(
        (r.code(), r.stdout.as_str()),
        (0, "rm -- './y'\n"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("symbolic link"), "{}", r.stderr);
    assert!(exists(&t, "x") && !exists(&t, "w/y"));
}

#[test]
fn link_under_keep_none_and_move_on_one_file_system_say_what_they_do() {
    let (t, _) = copies(1);
    let r = t.run(&["scan", "-q", "--keep", "none", "-o", "none.json", "r"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let r = t.run(&["link", "none.json"]);
    assert_eq!((r.code(), r.stdout.as_str()), (0, ""), "{}", r.stderr);
    assert_eq!(
        r.stderr
            .matches("not linked: no member is kept (--keep none)")
            .count(),
        3,
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("representative"), "{}", r.stderr);
    // A rename frees nothing.
    let r = t.run(&["move", "--to", "attic", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stderr.ends_with(
            "dupfind: moved 2 files (2 names), renamed on their file system: nothing freed\n"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn the_summary_gives_sizes_in_words_and_bytes() {
    let (t, _) = copies(2);
    let r = t.run(&["remove", "-n", "report.json"]);
    let disk: u64 = ["r/near.txt", "r/sub/dup-0.txt", "r/sub/dup-1.txt"]
        .iter()
        .map(|f| fs::metadata(t.join(f)).unwrap().blocks() * 512)
        .sum();
    assert!(
        r.stderr.ends_with(&format!(
            "dupfind: would remove 3 files (3 names), {} to free\n",
            size_in_words(disk)
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn the_text_report_names_every_hard_link_remove_would_remove() {
    let (t, _) = copies(1);
    fs::hard_link(t.join("r/sub/dup-0.txt"), t.join("r/sub/also.txt")).unwrap();
    let r = t.run(&["scan", "-q", "--format", "text", "r"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "  dup   r/sub/also.txt  1.000 exact\n        also r/sub/dup-0.txt (same file)\n"
        ),
        "{}",
        r.stdout
    );
    scan_into(&t, &["r"]);
    let rm = t.run(&["remove", "-n", "report.json"]);
    assert!(
        rm.stdout
            .contains("rm -- 'r/sub/also.txt'\nrm -- 'r/sub/dup-0.txt'\n"),
        "{}",
        rm.stdout
    );
}

#[test]
fn a_symbolic_link_followed_by_scan_l_is_left_as_it_is_and_stops_nothing() {
    // Review finding: `scan -L` lists a link followed to a file it read as another name of that
    // file, and remove then skipped the cluster ("no longer leads to it") though nothing changed.
    let (t, _) = copies(2);
    symlink("keep.txt", t.join("r/sym-keep.txt")).unwrap();
    symlink("dup-1.txt", t.join("r/sub/sym-dup.txt")).unwrap();
    scan_into(&t, &["-L", "r"]);
    let r = t.run(&["remove", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "rm -- 'r/near.txt'\nrm -- 'r/sub/dup-0.txt'\nrm -- 'r/sub/dup-1.txt'\n"
    );
    assert!(
        r.stderr.contains("removed 3 files (3 names)"),
        "{}",
        r.stderr
    );
    assert!(exists(&t, "r/keep.txt") && exists(&t, "r/sym-keep.txt"));
    assert!(
        exists(&t, "r/sub/sym-dup.txt"),
        "the link is left, as rm leaves it"
    );
}

/// `old/a.txt` indexed in `idx`, and exact copies of it at `new` (paths below `new/`) scanned
/// `--against idx` into `report`.
pub(super) fn indexed_copies(seed: u64, new: &[&str], report: &str) -> (TestDir, String) {
    let t = TestDir::new();
    let body = text(seed, 400);
    t.write("old/a.txt", &body);
    for name in new {
        t.write(name, &body);
    }
    make_old(&t, "old/a.txt");
    let built = t.run(&["index", "build", "-q", "--index", "idx", "old"]);
    assert_eq!(built.code(), 0, "{}", built.stderr);
    let scan = t.run(&["scan", "-q", "--against", "idx", "-o", report, "new"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    (t, body)
}

#[test]
fn an_indexed_representative_is_the_kept_copy_while_its_path_holds_its_content() {
    let (t, body) = indexed_copies(17, &["new/b.txt", "new/c.txt"], "report.json");
    let report: Value = serde_json::from_slice(&fs::read(t.join("report.json")).unwrap()).unwrap();
    let rep = &report["clusters"][0]["representative"];
    assert_eq!(
        (&rep["path"], &rep["indexed"]),
        (&json!("old/a.txt"), &json!(true))
    );

    // Rewritten since it was indexed: no copy is known to be kept, the cluster is left whole.
    t.write("old/a.txt", "rewritten since");
    for action in [&["remove"][..], &["move", "--to", "attic"]] {
        let r = t.run(&[action, &["report.json"]].concat());
        assert_eq!((r.code(), r.stdout.as_str()), (0, ""), "{}", r.stderr);
        assert!(
            r.stderr.contains(
                "new/b.txt: not acted on: its representative old/a.txt (indexed) has other \
                 content than the index recorded"
            ),
            "{}",
            r.stderr
        );
    }
    // As indexed again: it is the copy kept, and its duplicates go.
    t.write("old/a.txt", &body);
    let r = t.run(&["remove", "report.json"]);
    assert_eq!(
        (r.code(), r.stdout.as_str()),
        (0, "rm -- 'new/b.txt'\nrm -- 'new/c.txt'\n"),
        "{}",
        r.stderr
    );
    assert!(exists(&t, "old/a.txt") && !exists(&t, "new/b.txt") && !exists(&t, "new/c.txt"));
}

#[test]
fn a_duplicate_that_is_the_file_of_its_indexed_representative_is_left() {
    let t = TestDir::new();
    let body = text(19, 400);
    t.write("old/a.txt", &body);
    let built = t.run(&["index", "build", "-q", "--index", "idx", "old"]);
    assert_eq!(built.code(), 0, "{}", built.stderr);
    fs::hard_link(t.join("old/a.txt"), t.join("new-a.txt")).unwrap();
    let scan = t.run(&[
        "scan",
        "-q",
        "--against",
        "idx",
        "-o",
        "report.json",
        "new-a.txt",
    ]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    let r = t.run(&["remove", "report.json"]);
    assert_eq!((r.code(), r.stdout.as_str()), (0, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("new-a.txt: not acted on: it is the file of its representative"),
        "{}",
        r.stderr
    );
    assert!(exists(&t, "new-a.txt"));
}
