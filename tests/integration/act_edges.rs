//! `dupfind remove`, `move` and `link` at their edges: where `move` puts the files of several
//! roots, `--to` a file, a report acted on from another directory, Ctrl-C between two files, a
//! second `link`, a member larger than the memory the command may use, a bind mount.

use std::fs;
use std::io::Read;
use std::os::fd::AsRawFd;

use super::act::{
    copies, copies_hard_linked, exists, indexed_copies, make_old, scan_into, send_interrupt,
};
use super::util::{bin, run_command, text, wait_guarded, wait_in_syscall, TestDir};

/// `keep.txt` in `a` (the oldest: the representative), and exact copies of it at the same
/// relative path in `a` and `b`: `a/x/same.txt` and `b/x/same.txt`.
fn same_names_in_two_roots() -> TestDir {
    let t = TestDir::new();
    let body = text(29, 400);
    t.write("a/keep.txt", &body);
    make_old(&t, "a/keep.txt");
    t.write("a/x/same.txt", &body).write("b/x/same.txt", &body);
    t
}

#[test]
fn move_gives_each_of_several_roots_its_own_directory() {
    // Review finding: with roots a and b, a/x/same.txt and b/x/same.txt both went to
    // attic/x/same.txt, and the second move failed with `exists`.
    let t = same_names_in_two_roots();
    scan_into(&t, &["a", "b"]);
    let r = t.run(&["move", "--to", "attic", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "mv -n -- 'a/x/same.txt' 'attic/a/x/same.txt'\n\
         mv -n -- 'b/x/same.txt' 'attic/b/x/same.txt'\n"
    );
    assert!(exists(&t, "attic/a/x/same.txt") && exists(&t, "attic/b/x/same.txt"));
    assert!(exists(&t, "a/keep.txt"));
}

#[test]
fn move_refuses_up_front_two_files_that_would_meet_at_one_destination() {
    // Files listed by --files-from are each their own root: both would be attic/same.txt.
    let t = same_names_in_two_roots();
    t.write("list", "a/keep.txt\na/x/same.txt\nb/x/same.txt\n");
    let scan = t.run(&["scan", "-q", "--files-from", "list", "-o", "report.json"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    for dry in [&["-n"][..], &[]] {
        let r = t.run(&[&["move"][..], dry, &["--to", "attic", "report.json"]].concat());
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
        assert!(
            r.stderr.contains(
                "dupfind: --to attic: these duplicates would be moved to the same place, so \
                 nothing was moved:\n  a/x/same.txt and b/x/same.txt → attic/same.txt\n"
            ),
            "{}",
            r.stderr
        );
        assert!(!exists(&t, "attic") && exists(&t, "a/x/same.txt") && exists(&t, "b/x/same.txt"));
    }
}

#[test]
fn a_file_named_on_the_command_line_is_its_own_root_when_moved() {
    // Review finding: `scan . ./b/copy1.txt` then `move --to D` put the file at D/b/copy1.txt;
    // the docs say a file named on the command line is its own root: D/copy1.txt.
    let t = TestDir::new();
    let body = text(31, 400);
    t.write("a.txt", &body)
        .write("b/copy1.txt", &body)
        .write("c/copy2.txt", &body);
    make_old(&t, "a.txt");
    scan_into(&t, &[".", "./b/copy1.txt"]);
    let r = t.run(&["move", "--to", "D", "report.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "mv -n -- './b/copy1.txt' 'D/copy1.txt'\nmv -n -- './c/copy2.txt' 'D/c/copy2.txt'\n"
    );
    assert!(exists(&t, "D/copy1.txt") && exists(&t, "D/c/copy2.txt"));
}

#[test]
fn move_to_a_file_is_one_error_before_any_file_is_looked_at() {
    // Review finding: one `file exists` per member instead of one error about --to.
    let (t, _) = copies(3);
    t.write("attic", "a file, not a directory");
    let r = t.run(&["move", "--to", "attic", "report.json"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "dupfind: --to attic: not a directory (it is a file): choose a directory, or a path \
         that does not exist yet\n"
    );
    assert!(exists(&t, "r/sub/dup-0.txt"));
}

#[test]
fn a_report_acted_on_from_another_directory_is_refused_alike_with_or_without_against() {
    // Review finding: from another directory a plain report's members were `gone` (status 2),
    // an --against report's `left alone` (status 0).
    let (t, _) = indexed_copies(37, &["new/b.txt", "new/c.txt"], "against.json");
    scan_into(&t, &["old", "new"]);
    let elsewhere = TestDir::new();
    for report in ["report.json", "against.json"] {
        let path = t.join(report);
        let r = run_command(elsewhere.command(&["remove", path.to_str().unwrap()]));
        assert_eq!(
            (r.code(), r.stdout.as_str()),
            (2, ""),
            "{report}: {}",
            r.stderr
        );
        let here = fs::canonicalize(elsewhere.path()).unwrap();
        assert!(
            r.stderr.contains(&format!(
                "is found from the current directory {} (",
                here.display()
            )) && r.stderr.contains(
                "a report's relative paths are taken from the directory the scan ran in; run \
                 this command there. Nothing was done"
            ),
            "{report}: {}",
            r.stderr
        );
    }
    assert!(exists(&t, "new/b.txt") && exists(&t, "new/c.txt"));
}

#[test]
fn ctrl_c_stops_remove_between_two_files_with_its_summary_and_status_130() {
    // Review finding: remove, move and link had no Ctrl-C handler.
    const N: usize = 600;
    let t = TestDir::new();
    let body = text(41, 60);
    t.write("r/keep.txt", &body);
    make_old(&t, "r/keep.txt");
    for i in 0..N {
        t.write(format!("r/d/dup-{i:04}.txt"), &body);
    }
    scan_into(&t, &["r"]);
    let mut child = t.command(&["remove", "report.json"]).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // A pipe of one page: the list of actions fills it, and the binary waits there, in the
    // middle of its run, until it is read.
    // SAFETY: fcntl(2) on a pipe this test owns.
    let set = unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(set >= 4096);
    wait_in_syscall(child.id(), &[libc::SYS_write], 1);
    send_interrupt(child.id());
    let mut listed = String::new();
    stdout.read_to_string(&mut listed).unwrap();
    let r = wait_guarded(child);
    assert_eq!(r.code(), 130, "{}", r.stderr);
    let removed: Vec<&str> = (listed.lines())
        .map(|l| {
            l.strip_prefix("rm -- '")
                .and_then(|l| l.strip_suffix('\''))
                .unwrap()
        })
        .collect();
    assert!(
        !removed.is_empty() && removed.len() < N,
        "{}",
        removed.len()
    );
    for i in 0..N {
        let name = format!("r/d/dup-{i:04}.txt");
        assert_eq!(
            exists(&t, &name),
            !removed.contains(&name.as_str()),
            "{name}"
        );
    }
    let summary = format!(
        "dupfind: removed {} files ({} names), ",
        removed.len(),
        removed.len()
    );
    assert!(r.stderr.contains(&summary), "{}", r.stderr);
    let rest = format!(
        "; interrupted: {} not looked at (run it again to finish)\n",
        N - removed.len()
    );
    assert!(r.stderr.ends_with(&rest), "{}", r.stderr);
}

#[test]
fn a_second_link_notes_that_the_files_are_already_one_and_exits_0() {
    // Review finding: the second `link` of a cluster exited 2 (its files had one more name).
    let (t, _) = copies(2);
    let first = t.run(&["link", "report.json"]);
    assert_eq!(first.code(), 0, "{}", first.stderr);
    let again = t.run(&["link", "report.json"]);
    assert_eq!(
        (again.code(), again.stdout.as_str()),
        (0, ""),
        "{}",
        again.stderr
    );
    for name in ["dup-0", "dup-1"] {
        let note = format!(
            "dupfind: note: r/sub/{name}.txt: already a hard link to its representative: \
             nothing to do"
        );
        assert!(again.stderr.contains(&note), "{}", again.stderr);
    }
    assert!(
        again.stderr.contains(
            "linked 0 files (0 names); 1 left alone (see the notes above); 2 already \
                       linked to their representative"
        ),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains("warning"), "{}", again.stderr);
}

#[test]
fn a_member_larger_than_the_memory_allowed_is_checked_in_chunks() {
    // Review finding: the check read the whole file into memory. Under a limit of its address
    // space smaller than the file, it must still read it through (and find it changed: the
    // report's content_hash is of the file as scanned, before it grew).
    const SIZE: u64 = 256 << 20;
    let t = TestDir::new();
    let body = text(43, 400);
    t.write("keep.txt", &body).write("big.txt", &body);
    make_old(&t, "keep.txt");
    let mut report = scan_into(&t, &["keep.txt", "big.txt"]);
    let f = fs::File::options()
        .write(true)
        .open(t.join("big.txt"))
        .unwrap();
    f.set_len(SIZE).unwrap();
    // Its size and time as they are now: only the content tells.
    let meta = f.metadata().unwrap();
    let dup = &mut report["clusters"][0]["duplicates"][0];
    assert_eq!(dup["path"], "big.txt");
    dup["bytes"] = SIZE.into();
    dup["file"]["size"] = SIZE.into();
    use std::os::unix::fs::MetadataExt;
    dup["file"]["modified_secs"] = meta.mtime().into();
    dup["file"]["modified_nanos"] = meta.mtime_nsec().into();
    fs::write(t.join("grown.json"), serde_json::to_vec(&report).unwrap()).unwrap();
    let mut sh = std::process::Command::new("sh");
    sh.args([
        "-c",
        "ulimit -v 330000 && exec \"$0\" remove -n grown.json",
        bin(),
    ])
    .current_dir(t.path())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let r = run_command(sh);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("dupfind: warning: big.txt: skipped: it has other content than when scanned"),
        "{}",
        r.stderr
    );
}

#[test]
fn dry_run_says_copy_where_the_run_copies_across_a_bind_mount() {
    // Review finding: a bind mount is one device but another mount, where rename fails with
    // EXDEV: --dry-run said `mv` (by the device) and the run copied.
    let t = copies_hard_linked();
    t.mkdir("mnt");
    let script = "mount --bind r mnt || exit 77
        \"$0\" move -n --to mnt/attic report.json > plan.out 2> plan.err
        \"$0\" move --to mnt/attic report.json > done.out 2> done.err";
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["-rm", "sh", "-c", script, bin()])
        .current_dir(t.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let r = run_command(cmd);
    if r.code() != 0 {
        eprintln!(
            "note: no bind mount here ({}); bind mount test skipped",
            r.stderr.trim()
        );
        return;
    }
    let read = |name: &str| fs::read_to_string(t.join(name)).unwrap();
    let (plan, done) = (read("plan.out"), read("done.out"));
    assert_eq!(plan, done, "{}\n{}", read("plan.err"), read("done.err"));
    assert!(
        done.contains("\ncp -p -n -- 'r/sub/also.txt' 'mnt/attic/sub/also.txt'\n"),
        "{done}"
    );
    assert!(
        read("plan.err").contains("would move 2 files (3 names), copied to another file system"),
        "{}",
        read("plan.err")
    );
    assert!(exists(&t, "r/attic/sub/dup-0.txt") && !exists(&t, "r/sub/dup-0.txt"));
}

#[test]
fn paths_lists_the_duplicates_of_an_indexed_representative_that_remove_checks_first() {
    // Review finding: documented, as docs/output.md says under Paths: the list checks nothing on
    // disk, and remove leaves a cluster whose indexed representative no longer holds its content.
    let (t, _) = indexed_copies(47, &["new/b.txt"], "report.json");
    let scan = ["scan", "-q", "--against", "idx"];
    t.write("old/a.txt", "rewritten since it was indexed");
    let paths = t.run(&[&scan[..], &["--format", "paths", "new"]].concat());
    assert_eq!(
        (paths.code(), paths.stdout.as_str()),
        (0, "new/b.txt\n"),
        "{}",
        paths.stderr
    );
    let r = t.run(&["remove", "report.json"]);
    assert_eq!((r.code(), r.stdout.as_str()), (0, ""), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "new/b.txt: not acted on: its representative old/a.txt (indexed) has other content"
        ),
        "{}",
        r.stderr
    );
    let doc = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/output.md")).unwrap();
    assert!(doc.contains("are listed on the index's word that the copy kept exists"));
}
