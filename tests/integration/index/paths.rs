//! Where an index may lie, paths as its keys, and a directory shared with other users.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;

use serde_json::json;

use super::{
    build_old, contents, corpus, generation_and_documents, index_files, info, member_sets, names,
    refused, report, set, MANIFEST,
};
use crate::util::{
    chmod, clusters, edit, machine_neutral, mkfifo, open_to_others, run_command, text, TestDir,
    Unprivileged,
};

// ---------------------------------------------------------------------------------------------
// Where an index lies

#[test]
fn index_maintenance_refuses_a_directory_that_is_no_index_and_makes_nothing_in_it() {
    let t = TestDir::new();
    t.write("notes/todo.txt", "my notes");
    fs::create_dir(t.join("empty")).unwrap();
    for command in ["info", "compact", "prune", "upgrade"] {
        for dir in ["notes", "empty"] {
            let err = refused(&t, &["index", command, "--index", dir]);
            assert!(
                err.contains(&format!("{dir} is not a dupfind index (it has no manifest")),
                "{command} {dir}: {err}"
            );
        }
        // Before: compact, prune and upgrade left their lock there.
        assert_eq!(names(&t.join("notes")), ["todo.txt"], "{command}");
        assert!(names(&t.join("empty")).is_empty(), "{command}");
    }
}

#[test]
fn index_build_refuses_an_existing_index_and_never_reads_its_own_directory() {
    let t = TestDir::new();
    let a = text(851, 300);
    t.write("a.txt", &a)
        .write("b.txt", text(852, 300))
        .write("sub/c.txt", text(853, 300));
    // The index inside the scanned root is not an input.
    let built = report(&t, &["index", "build", ".", "--index", "idx"]);
    assert_eq!(built["stats"]["files_seen"], 3);
    assert_eq!(built["stats"]["documents"], 3);
    assert_eq!(info(&t, "idx")["files"], 3);
    let before = contents(&t.join("idx"));

    // A second build over it is refused, and changes nothing.
    for index in ["idx", "./idx"] {
        let err = refused(&t, &["index", "build", ".", "--index", index]);
        assert!(err.contains("already holds an index"), "{err}");
        assert_eq!(contents(&t.join("idx")), before);
        assert_eq!(names(&t.join("idx")), index_files(&[1]));
    }
    // So is a directory holding anything else.
    let err = refused(&t, &["index", "build", ".", "--index", "sub"]);
    assert!(
        err.contains("is not a dupfind index and is not empty"),
        "{err}"
    );
    assert_eq!(names(&t.join("sub")), ["c.txt"]);

    // Scanning against it, however spelled, does not read it either, nor its temp file.
    t.write("sub/a-edited.txt", edit(&a, &[3]));
    let r = report(&t, &["scan", ".", "--against", "./idx", "--update"]);
    assert_eq!(r["stats"]["files_seen"], 4);
    assert_eq!(r["stats"]["documents"], 1);
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 3, "unchanged_files": 3, "updated_generation": 2})
    );
    assert_eq!(
        member_sets(&r),
        // Indexed paths are stored absolute and shown relative to the working directory.
        vec![set(&[("a.txt", true), ("./sub/a-edited.txt", false)])]
    );
    let r = report(&t, &["scan", ".", "--against", "idx"]);
    assert_eq!(r["stats"]["files_seen"], 4);
    assert_eq!(r["stats"]["documents"], 0);
    assert!(clusters(&r).is_empty(), "{r}");
}

// ---------------------------------------------------------------------------------------------
// Paths as keys

#[test]
fn index_the_same_files_under_another_spelling_are_the_indexed_ones() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    // `old` indexed, `./old` scanned: the same four files (same device and inode, size, mtime).
    let r = report(t, &["scan", "./old", "--against", "idx"]);
    assert!(
        clusters(&r).is_empty(),
        "files reported as their own copies: {r}"
    );
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["stats"]["index"]["unchanged_files"], 4);
}

#[test]
fn index_a_relative_path_from_another_directory_names_another_file() {
    let t = TestDir::new();
    t.write("one/docs/a.txt", text(861, 300))
        .write("one/docs/c.txt", text(862, 300))
        .write("two/docs/a.txt", text(863, 300));
    let in_dir = |dir: &str, args: &[&str]| {
        let mut cmd = t.command(args);
        cmd.current_dir(t.join(dir));
        let run = run_command(cmd);
        assert_eq!(run.code(), 0, "{args:?}: {}", run.stderr);
        run.json()
    };
    in_dir("one", &["index", "build", "docs", "--index", "../idx"]);
    // two/docs/a.txt is a new file, not a changed one/docs/a.txt.
    let r = in_dir("two", &["scan", "docs", "--against", "../idx", "--update"]);
    assert_eq!(r["stats"]["documents"], 1);
    assert_eq!(r["stats"]["index"]["documents"], 2, "{r}");
    assert_eq!(generation_and_documents(&t, "idx"), (2, 3));
    // one/docs is still indexed, unchanged.
    let r = in_dir("one", &["scan", "docs", "--against", "../idx"]);
    assert_eq!(r["stats"]["documents"], 0, "{r}");
    assert_eq!(r["stats"]["index"]["unchanged_files"], 2);
}

#[test]
fn index_dot_dot_and_linked_roots_are_the_indexed_files_not_copies_of_them() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    std::os::unix::fs::symlink(t.join("old"), t.join("link")).unwrap();
    let before = contents(&t.join("idx"));
    for root in ["new/../old", "link"] {
        let run = t.run(&["scan", root, "--against", "idx", "--update"]);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let r = run.json();
        assert!(
            clusters(&r).is_empty(),
            "{root}: files reported as their own copies: {r}"
        );
        assert_eq!(r["stats"]["documents"], 0, "{root}");
        assert_eq!(r["stats"]["index"]["unchanged_files"], 4, "{root}");
        // Nothing new: nothing written, and said so.
        assert!(
            r["stats"]["index"].get("updated_generation").is_none(),
            "{r}"
        );
        assert!(
            run.stderr
                .contains("nothing new, changed or removed; nothing written (generation 1)"),
            "{}",
            run.stderr
        );
    }
    // Nothing was added twice; not a byte was written.
    assert_eq!(generation_and_documents(t, "idx"), (1, 4));
    assert_eq!(contents(&t.join("idx")), before);
}

#[test]
fn index_clusters_stay_in_path_order_after_an_update_rewrote_the_records() {
    // old/a.txt changes, so the update writes it after old/b.txt and old/c.txt; clusters of a
    // later scan still come in path order.
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let a = text(801, 300);
    t.write("old/a.txt", format!("{a} one more line"))
        .write("new/a-near.txt", edit(&a, &[150]));
    report(t, &["scan", "old", "--against", "idx", "--update"]);
    let r = report(t, &["scan", "new", "--against", "idx"]);
    let firsts: Vec<&str> = clusters(&r)
        .iter()
        .map(|c| c["members"][0]["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        firsts,
        ["old/a-edited.txt", "old/b.txt", "old/c.txt"],
        "{r}"
    );
}

#[test]
fn index_text_format_marks_indexed_members_and_counts_only_new_duplicates() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let run = t.run(&["scan", "new", "--against", "idx", "--format", "text"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    // Two clusters, each an indexed representative with one new duplicate.
    assert!(
        run.stdout.contains("keep  old/b.txt [indexed]"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("keep  old/c.txt [indexed]"),
        "{}",
        run.stdout
    );
    assert!(
        machine_neutral(&run.stdout).ends_with(
            "2 clusters, 2 duplicates among 3 documents (1 exact group), 0 bytes reclaimable; 0 \
             unreadable\n"
        ),
        "{}",
        run.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// A directory shared with other users

#[test]
fn index_links_and_fifos_planted_in_a_shared_directory_are_refused_and_their_targets_untouched() {
    // The index's owner runs without root's privileges (as nobody when the tests run as root);
    // the "other user" is this test, which can write the shared directory.
    let Some(owner) = Unprivileged::get() else {
        eprintln!("skipped: running as root without a way to drop privileges");
        return;
    };
    let t = TestDir::new();
    let base = text(1201, 300);
    t.write("old/a.txt", &base)
        .write("new/b.txt", edit(&base, &[5, 90]))
        .write("victim.txt", "the owner's precious file\n")
        .mkdir("shared");
    open_to_others(t.path());
    chmod(&t.join("victim.txt"), 0o666);
    chmod(&t.join("shared"), 0o777);
    let run = |args: &[&str]| run_command(owner.command(t.path(), args));
    let built = run(&["index", "build", "old", "--index", "shared/idx"]);
    assert_eq!(built.code(), 0, "{}", built.stderr);
    let idx = t.join("shared/idx");
    chmod(&idx, 0o777);
    let data = contents(&idx);
    let victim = || fs::read_to_string(t.join("victim.txt")).unwrap();
    let update = ["scan", "--against", "shared/idx", "--update", "new"];

    // The lock, the old fixed temporary name, a manifest's temporary name and the next
    // segment's name, pointed at the owner's file.
    fs::remove_file(idx.join("lock")).unwrap();
    for planted in ["lock", "index.dfx.tmp", "manifest.tmp", "seg-000002.dfs"] {
        std::os::unix::fs::symlink(t.join("victim.txt"), idx.join(planted)).unwrap();
    }
    let r = run(&update);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("lock is a symbolic link"), "{}", r.stderr);
    assert_eq!(
        r.json()["clusters"].as_array().unwrap().len(),
        1,
        "the report is printed"
    );
    assert_eq!(victim(), "the owner's precious file\n");
    assert_eq!(contents(&idx), data, "the index is untouched");

    // A FIFO as the lock is refused at once, never waited on.
    fs::remove_file(idx.join("lock")).unwrap();
    mkfifo(&idx.join("lock"));
    chmod(&idx.join("lock"), 0o666);
    let r = run(&update);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("lock is not a regular file (it is a FIFO)"),
        "{}",
        r.stderr
    );
    fs::remove_file(idx.join("lock")).unwrap();

    // With a sound lock, the planted names are never written through: the update writes under
    // fresh names and removes the stale links (not their targets). The owner's mode of the
    // index, 0600, is kept for every file the update writes.
    for name in index_files(&[1]).iter().filter(|n| *n != "lock") {
        chmod(&idx.join(name), 0o600);
    }
    let r = run(&update);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["index"]["updated_generation"], 2);
    assert_eq!(victim(), "the owner's precious file\n");
    assert_eq!(names(&idx), index_files(&[1, 2]));
    for name in [MANIFEST, "seg-000002.dfs", "seg-000002.docs.parquet"] {
        let mode = fs::metadata(idx.join(name)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }

    // The manifest, a segment or the directory itself replaced by a link: refused.
    for name in [MANIFEST, "seg-000001.dfs"] {
        fs::rename(idx.join(name), t.join("shared/moved")).unwrap();
        std::os::unix::fs::symlink(t.join("shared/moved"), idx.join(name)).unwrap();
        let r = run(&["scan", "--against", "shared/idx", "new"]);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        let want = format!("{name} is a symbolic link");
        assert!(r.stderr.contains(&want), "{}", r.stderr);
        fs::remove_file(idx.join(name)).unwrap();
        fs::rename(t.join("shared/moved"), idx.join(name)).unwrap();
    }
    std::os::unix::fs::symlink(&idx, t.join("shared/alias")).unwrap();
    let r = run(&["scan", "--against", "shared/alias", "--update", "new"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("alias is a symbolic link"),
        "{}",
        r.stderr
    );
    assert_eq!(info(&t, "shared/idx")["generation"], 2);
}

#[test]
fn index_files_written_in_a_shared_directory_take_no_setuid_or_execute_bit_from_a_planted_manifest()
{
    // The index's owner runs without root's privileges and with the umask of a group that
    // shares a directory (002); the other member, this test, replaces the manifest with a
    // byte-identical copy of her own of mode 06777 before each of the owner's writes.
    let Some(owner) = Unprivileged::get() else {
        eprintln!("skipped: running as root without a way to drop privileges");
        return;
    };
    let t = TestDir::new();
    let base = text(1301, 300);
    t.write("old/a.txt", &base)
        .write("old/b.txt", text(1302, 300))
        .write("new/c.txt", edit(&base, &[5, 90]))
        .mkdir("shared/v1");
    open_to_others(t.path());
    chmod(&t.join("shared"), 0o777);
    chmod(&t.join("shared/v1"), 0o777);
    let run = |args: &[&str]| {
        let mut cmd = owner.command(t.path(), args);
        // SAFETY: umask(2) is async-signal-safe and changes only the child's own mask.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o002);
                Ok(())
            });
        }
        let r = run_command(cmd);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        r.json()
    };
    let plant = |idx: &std::path::Path, name: &str| {
        let planted = t.join("shared/planted");
        fs::copy(idx.join(name), &planted).unwrap();
        chmod(&planted, 0o6777);
        fs::rename(&planted, idx.join(name)).unwrap();
    };
    // Every file of the index: read and write for the owner and the group (the old mode's
    // read and write bits, 0666, less the umask), never a setuid, setgid, sticky or execute
    // bit, never writable by others.
    let assert_modes = |idx: &std::path::Path, what: &str| {
        for name in names(idx) {
            let mode = fs::metadata(idx.join(&name)).unwrap().mode() & 0o7777;
            assert_eq!(mode, 0o664, "{what}: {name} has mode {mode:o}");
        }
    };
    run(&["index", "build", "old", "--index", "shared/idx"]);
    let idx = t.join("shared/idx");
    chmod(&idx, 0o777);
    assert_modes(&idx, "build");

    plant(&idx, MANIFEST);
    let r = run(&["scan", "--against", "shared/idx", "--update", "new"]);
    assert_eq!(r["stats"]["index"]["updated_generation"], 2);
    assert_eq!(names(&idx), index_files(&[1, 2]));
    assert_modes(&idx, "--update");

    plant(&idx, MANIFEST);
    assert_eq!(
        run(&["index", "compact", "--index", "shared/idx"])["written"],
        true
    );
    assert_eq!(names(&idx), index_files(&[3]));
    assert_modes(&idx, "index compact");

    fs::remove_file(t.join("old/b.txt")).unwrap();
    plant(&idx, MANIFEST);
    assert_eq!(
        run(&["index", "prune", "--index", "shared/idx"])["removed"],
        1
    );
    assert_eq!(names(&idx), index_files(&[3, 4]));
    assert_modes(&idx, "index prune");

    // A format-1 index whose one file is planted so.
    let v1 = t.join("shared/v1");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/index-v1/index.dfx"
    );
    fs::copy(fixture, v1.join("index.dfx")).unwrap();
    plant(&v1, "index.dfx");
    assert_eq!(
        run(&["index", "upgrade", "--index", "shared/v1"])["written"],
        true
    );
    assert_eq!(names(&v1), index_files(&[1]));
    assert_modes(&v1, "index upgrade");
}
