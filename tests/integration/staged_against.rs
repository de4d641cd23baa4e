//! The staged pipeline `--against` an index: the report, stderr and exit status of
//! `scan --against` at any number of shards and partitions (indexed documents unchanged, changed,
//! gone, copied and near-copied by new ones), and an index that changed since `stage init`
//! refused by every stage that opens it.

use std::fs;

use super::staged::{assert_same_as_scan, corpus, local_driver};
use super::util::{edit, text, TestDir};

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
        "--dupfind",
        bin,
        "-q",
        "--against",
        "idx",
        "c",
    ];
    let r = local_driver(&t, &args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        t.run(&["scan", "-q", "--against", "idx", "c"]).stdout
    );
}

#[test]
fn an_index_changed_since_init_is_refused_and_update_is_not_staged_yet() {
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
    // --update is `scan`'s alone for now, refused before anything is written.
    let r = t.run(&[
        "stage",
        "init",
        "--work",
        "u",
        "--against",
        "idx",
        "--update",
        "--prune",
        "c",
    ]);
    assert_eq!(r.code(), 2);
    let want = "run `dupfind scan --against idx --update --prune`";
    assert!(r.stderr.contains(want), "{}", r.stderr);
    assert!(!t.join("u").exists());
}
