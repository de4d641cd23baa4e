//! The incremental index: `index build`, `index info` and `scan --against DIR [--update]`: what
//! is compared and reported, the unchanged-file cache, generations, incompatible parameters,
//! damaged indexes, a writer killed mid-commit, and where an index may lie.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use dupfind::index::store::Index;
use dupfind::sketch::minhash::mix64;
use serde_json::{json, Value};

use super::util::schema::assert_schema;
use super::util::{
    chmod, cluster_members, cluster_paths, clusters, edit, mkfifo, open_to_others, run_command,
    text, word_jaccard, words, TestDir, Unprivileged, HANG_GUARD,
};

/// The data file of an index directory.
const DATA: &str = "index.dfx";

/// True for the name of a generation being written (`index.dfx.<random>.tmp`).
fn is_temp(name: &str) -> bool {
    name.starts_with("index.dfx.") && name.ends_with(".tmp")
}

/// Whether `dir` holds a generation being written.
fn has_temp(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_str().is_some_and(is_temp))
    })
}

/// Runs dupfind, which must succeed; returns its report, checked against the schema.
fn report(t: &TestDir, args: &[&str]) -> Value {
    let run = t.run(args);
    assert_eq!(run.code(), 0, "{args:?}: {}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    r
}

/// Runs dupfind, which must fail before reporting anything: exit 2, nothing on stdout. Returns
/// stderr.
fn refused(t: &TestDir, args: &[&str]) -> String {
    let run = t.run(args);
    assert_eq!(run.code(), 2, "{args:?}: {}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "", "{args:?}");
    run.stderr
}

/// `index info` of `dir`.
fn info(t: &TestDir, dir: &str) -> Value {
    let run = t.run(&["index", "info", "--index", dir]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    run.json()
}

/// The generation and document count `index info` shows.
fn generation_and_documents(t: &TestDir, dir: &str) -> (u64, u64) {
    let i = info(t, dir);
    (
        i["generation"].as_u64().unwrap(),
        i["documents"].as_u64().unwrap(),
    )
}

/// The file names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Every member of every cluster as (path, indexed), sorted within each cluster.
fn member_sets(r: &Value) -> Vec<BTreeSet<(String, bool)>> {
    cluster_members(r, |m| {
        let indexed = m.get("indexed").is_some_and(|i| i == true);
        (m["path"].as_str().unwrap().to_string(), indexed)
    })
}

fn set(members: &[(&str, bool)]) -> BTreeSet<(String, bool)> {
    members.iter().map(|&(p, i)| (p.to_string(), i)).collect()
}

/// Copies the files of a flat directory (an index) into a new directory.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Sets a file's modification time (atime too, which the index does not look at).
fn set_mtime(path: &Path, t: SystemTime) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_times(fs::FileTimes::new().set_accessed(t).set_modified(t))
        .unwrap();
}

/// An indexed corpus and a new one:
/// old/a.txt ~ old/a-edited.txt (a pair inside the index), old/b.txt, old/c.txt;
/// new/b-edited.txt ~ old/b.txt, new/c-copy.txt = old/c.txt byte for byte, new/d.txt unrelated.
struct Corpus {
    t: TestDir,
    b: String,
    b_edited: String,
    c: String,
}

fn corpus() -> Corpus {
    let t = TestDir::new();
    let a = text(801, 300);
    let b = text(802, 300);
    let c = text(803, 300);
    let b_edited = edit(&b, &[50, 250]);
    assert!(word_jaccard(&b, &b_edited, 5) > 0.9);
    t.write("old/a.txt", &a)
        .write("old/a-edited.txt", edit(&a, &[100, 200]))
        .write("old/b.txt", &b)
        .write("old/c.txt", &c)
        .write("new/b-edited.txt", &b_edited)
        .write("new/c-copy.txt", &c)
        .write("new/d.txt", text(804, 300));
    Corpus { t, b, b_edited, c }
}

/// Builds the index `idx` over `old/` and checks the build's report.
fn build_old(t: &TestDir) {
    let built = report(t, &["index", "build", "old", "--index", "idx"]);
    assert_eq!(
        cluster_paths(&built),
        vec![vec!["old/a-edited.txt", "old/a.txt"]]
    );
    assert_eq!(built["stats"]["documents"], 4);
    assert_eq!(
        built["stats"]["index"],
        json!({"generation": 0, "documents": 0, "unchanged_files": 0, "updated_generation": 1})
    );
    assert!(clusters(&built)[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m.get("indexed").is_none()));
    assert_eq!(names(&t.join("idx")), [DATA, "lock"]);
}

/// The report of `scan new --against idx` on [`corpus`], whatever generation `idx` is at.
fn assert_new_against_old(co: &Corpus, r: &Value, generation: u64) {
    assert_eq!(
        member_sets(r),
        vec![
            set(&[("old/b.txt", true), ("new/b-edited.txt", false)]),
            set(&[("old/c.txt", true), ("new/c-copy.txt", false)]),
        ]
    );
    let (b, c) = (&clusters(r)[0], &clusters(r)[1]);
    assert_eq!(
        b["representative"],
        json!({"path": "old/b.txt", "bytes": co.b.len(), "aliases": [], "indexed": true})
    );
    let dup = &b["duplicates"][0];
    assert_eq!(b["duplicates"].as_array().unwrap().len(), 1, "{b}");
    assert_eq!(dup["path"], "new/b-edited.txt");
    assert!(dup.get("indexed").is_none(), "{dup}");
    assert_eq!(
        (&dup["exact"], &dup["estimated"]),
        (&json!(false), &json!(false))
    );
    let want = word_jaccard(&co.b, &co.b_edited, 5);
    assert!(
        (dup["similarity"].as_f64().unwrap() - want).abs() < 1e-12,
        "{dup}"
    );
    assert_eq!(b["pairs"].as_array().unwrap().len(), 1, "{b}");
    assert_eq!(
        c["representative"],
        json!({"path": "old/c.txt", "bytes": co.c.len(), "aliases": [], "indexed": true})
    );
    assert_eq!(c["duplicates"][0]["path"], "new/c-copy.txt");
    assert_eq!(c["duplicates"][0]["exact"], true);
    let s = &r["stats"];
    assert_eq!(s["files_seen"], 3);
    assert_eq!(s["documents"], 3, "only the new documents count");
    assert_eq!(
        (
            &s["clusters"],
            &s["unique_documents"],
            &s["exact_copies"],
            &s["near_copies"]
        ),
        (&json!(2), &json!(1), &json!(1), &json!(1)),
        "{s}"
    );
    // The indexed pair old/a.txt ~ old/a-edited.txt is not even a candidate again: the one
    // candidate is new/b-edited.txt with old/b.txt (the copy is found by its content hash).
    assert_eq!(
        (&s["candidate_pairs"], &s["verified_pairs"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        s["index"],
        json!({"generation": generation, "documents": 4, "unchanged_files": 0})
    );
}

// ---------------------------------------------------------------------------------------------
// Scanning against an index

#[test]
fn index_new_documents_are_compared_with_indexed_ones_which_represent_their_clusters() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    assert_eq!(
        info(t, "idx"),
        json!({
            "schema_version": 2,
            "format_version": 1,
            "generation": 1,
            "documents": 4,
            "files": 4,
            "params": {
                "method": "minhash", "shingle": "word", "ngram": 5, "num_perm": 128,
                "sketch": "oph", "bands": 19, "rows": 6, "seed": 0, "hashing": 2
            }
        })
    );
    let r = report(t, &["scan", "new", "--against", "idx"]);
    assert_new_against_old(&co, &r, 1);
    // An indexed member represents its cluster under any --keep: the new near-duplicate is the
    // larger file, yet the indexed one stays.
    assert!(co.b_edited.len() > co.b.len());
    let largest = report(t, &["scan", "new", "--against", "idx", "--keep", "largest"]);
    assert_eq!(clusters(&largest)[0]["representative"]["path"], "old/b.txt");
    assert_eq!(
        clusters(&largest)[0]["duplicates"][0]["path"],
        "new/b-edited.txt"
    );
    // Scanning without --update leaves the index as it was.
    assert_eq!(generation_and_documents(t, "idx"), (1, 4));
    assert_eq!(names(&t.join("idx")), [DATA, "lock"]);
}

#[test]
fn index_records_of_a_dump_are_indexed_and_matched_by_path_line_and_id() {
    let t = TestDir::new();
    let (r1, r2, r3) = (text(811, 300), text(812, 300), text(813, 300));
    let line = |v: Value| serde_json::to_string(&v).unwrap() + "\n";
    let dump = line(json!({"id": "r1", "text": r1}))
        + &line(json!({"id": "r2", "text": r2}))
        + &line(json!({"id": "r3", "text": r3}));
    t.write("old/dump.jsonl", dump)
        .write("new/x.txt", edit(&r2, &[20, 120]))
        .write(
            "new/more.jsonl",
            line(json!({"id": "n1", "text": edit(&r3, &[33])}))
                + &line(json!({"id": "n2", "text": text(815, 300)})),
        );
    let built = report(&t, &["index", "build", "old", "--index", "idx"]);
    assert_eq!(built["stats"]["documents"], 3);
    assert!(clusters(&built).is_empty());
    let i = info(&t, "idx");
    assert_eq!((&i["documents"], &i["files"]), (&json!(3), &json!(1)));

    let r = report(&t, &["scan", "new", "--against", "idx"]);
    assert_eq!(r["stats"]["documents"], 3);
    assert_eq!(r["stats"]["files_seen"], 2);
    assert_eq!(r["stats"]["index"]["documents"], 3);
    let cluster_of = |line: u64| {
        clusters(&r)
            .iter()
            .find(|c| c["representative"]["line"] == line)
            .unwrap_or_else(|| panic!("no cluster represented by line {line}: {r}"))
    };
    assert_eq!(clusters(&r).len(), 2, "{r}");
    let c2 = cluster_of(2);
    assert_eq!(
        c2["representative"],
        json!({
            "path": "old/dump.jsonl", "line": 2, "id": "r2", "bytes": r2.len(), "aliases": [],
            "indexed": true
        })
    );
    assert_eq!(c2["duplicates"].as_array().unwrap().len(), 1);
    assert_eq!(c2["duplicates"][0]["path"], "new/x.txt");
    assert!(c2["duplicates"][0].get("line").is_none());
    let c3 = cluster_of(3);
    assert_eq!(c3["representative"]["id"], "r3");
    assert_eq!(c3["representative"]["indexed"], true);
    let dup = &c3["duplicates"][0];
    assert_eq!(c3["duplicates"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&dup["path"], &dup["line"], &dup["id"]),
        (&json!("new/more.jsonl"), &json!(1), &json!("n1"))
    );
    assert!(dup.get("indexed").is_none(), "{dup}");

    // The new dump's records join the index with their lines and ids; the unchanged dump is not
    // read again.
    let updated = report(&t, &["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(updated["stats"]["index"]["updated_generation"], 2);
    assert_eq!(generation_and_documents(&t, "idx"), (2, 6));
    t.write("later.txt", text(815, 300));
    let again = report(&t, &["scan", "old", "new", "later.txt", "--against", "idx"]);
    assert_eq!(again["stats"]["documents"], 1);
    assert_eq!(again["stats"]["index"]["unchanged_files"], 3);
    let c = &clusters(&again)[0];
    assert_eq!(clusters(&again).len(), 1, "{again}");
    assert_eq!(
        c["representative"],
        json!({
            "path": "new/more.jsonl", "line": 2, "id": "n2", "bytes": text(815, 300).len(),
            "aliases": [], "indexed": true
        })
    );
    assert_eq!(c["duplicates"][0]["path"], "later.txt");
    assert_eq!(c["duplicates"][0]["exact"], true);
}

#[test]
fn index_update_commits_the_next_generation_which_later_scans_use() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let r = report(t, &["scan", "new", "--against", "idx", "--update"]);
    // The same report as without --update, plus the generation written.
    let mut without = r.clone();
    without["stats"]["index"]
        .as_object_mut()
        .unwrap()
        .remove("updated_generation");
    assert_new_against_old(&co, &without, 1);
    assert_eq!(r["stats"]["index"]["updated_generation"], 2);
    let i = info(t, "idx");
    assert_eq!(
        (&i["generation"], &i["documents"], &i["files"]),
        (&json!(2), &json!(7), &json!(7))
    );
    assert_eq!(i["params"], info(t, "idx")["params"]);
    assert_eq!(names(&t.join("idx")), [DATA, "lock"]);

    // The added documents are found by a later scan; pairs among them are not reported again.
    let d = fs::read_to_string(t.join("new/d.txt")).unwrap();
    t.write("later/d-edited.txt", edit(&d, &[77]));
    let later = report(t, &["scan", "new", "later", "--against", "idx"]);
    assert_eq!(
        member_sets(&later),
        vec![set(&[("new/d.txt", true), ("later/d-edited.txt", false)])]
    );
    assert_eq!(clusters(&later)[0]["representative"]["path"], "new/d.txt");
    assert_eq!(later["stats"]["documents"], 1);
    assert_eq!(
        later["stats"]["index"],
        json!({"generation": 2, "documents": 7, "unchanged_files": 3})
    );
    // And one more generation.
    let third = report(t, &["scan", "later", "--against", "idx", "--update"]);
    assert_eq!(third["stats"]["index"]["updated_generation"], 3);
    assert_eq!(generation_and_documents(t, "idx"), (3, 8));
    let all = report(t, &["scan", "old", "new", "later", "--against", "idx"]);
    assert!(clusters(&all).is_empty(), "{all}");
    assert_eq!(all["stats"]["documents"], 0);
    assert_eq!(all["stats"]["index"]["unchanged_files"], 8);
}

// ---------------------------------------------------------------------------------------------
// The unchanged-file cache

#[test]
fn index_unchanged_inputs_are_not_read_and_changed_ones_supersede_their_old_documents() {
    let t = TestDir::new();
    let a = text(821, 300);
    let b = text(822, 250);
    t.write("docs/a.txt", &a)
        .write("docs/b.txt", &b)
        .write("docs/c.txt", text(823, 300));
    report(&t, &["index", "build", "docs", "--index", "idx"]);
    let path = t.join("docs/a.txt");
    let meta = fs::metadata(&path).unwrap();
    let (mtime, inode) = (meta.modified().unwrap(), meta.ino());

    // a.txt overwritten in place by b's words padded to a's length, its mtime put back: the
    // cache cannot tell, so it is not read.
    assert!(a.len() > b.len());
    let disguised = format!("{b}{}", " ".repeat(a.len() - b.len()));
    fs::write(&path, &disguised).unwrap();
    set_mtime(&path, mtime);
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(
        (meta.len(), meta.modified().unwrap()),
        (a.len() as u64, mtime)
    );
    assert_eq!(meta.ino(), inode, "overwritten in place");
    let r = report(&t, &["scan", "docs", "--against", "idx"]);
    assert_eq!(r["stats"]["files_seen"], 3);
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["stats"]["bytes"], 0);
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 3, "unchanged_files": 3})
    );
    assert!(clusters(&r).is_empty(), "the change went unnoticed: {r}");
    // Had it been read, it would have been found: it is b's near-duplicate now.
    let plain = report(&t, &["scan", "docs"]);
    assert_eq!(
        cluster_paths(&plain),
        vec![vec!["docs/a.txt", "docs/b.txt"]]
    );

    // a's own bytes back, with a later mtime: read again (same size, new mtime), and not an
    // exact copy of its own indexed version.
    fs::write(&path, &a).unwrap();
    set_mtime(&path, mtime + Duration::from_secs(1));
    let r = report(&t, &["scan", "docs", "--against", "idx"]);
    assert_eq!(r["stats"]["documents"], 1);
    assert_eq!(r["stats"]["bytes"], a.len());
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 2, "unchanged_files": 2})
    );
    assert!(clusters(&r).is_empty(), "{r}");

    // A near-duplicate of its old version, of another size: read again, not its own duplicate;
    // with --update it replaces its old document.
    let a2 = edit(&a, &[150]);
    assert_ne!(a2.len(), a.len());
    fs::write(&path, &a2).unwrap();
    let r = report(&t, &["scan", "docs", "--against", "idx", "--update"]);
    assert_eq!(r["stats"]["documents"], 1);
    assert_eq!(r["stats"]["bytes"], a2.len());
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 2, "unchanged_files": 2, "updated_generation": 2})
    );
    assert!(clusters(&r).is_empty(), "{r}");
    assert_eq!(generation_and_documents(&t, "idx"), (2, 3));
    assert_eq!(info(&t, "idx")["files"], 3);
    let r = report(&t, &["scan", "docs", "--against", "idx"]);
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["stats"]["index"]["unchanged_files"], 3);
    // The old version left the index: a copy of it is a near-duplicate of the new a.txt only.
    t.write("copy.txt", &a);
    let r = report(&t, &["scan", "copy.txt", "--against", "idx"]);
    assert_eq!(
        member_sets(&r),
        vec![set(&[("docs/a.txt", true), ("copy.txt", false)])]
    );
    let dup = &clusters(&r)[0]["duplicates"][0];
    assert_eq!(dup["exact"], false);
    let want = word_jaccard(&a, &a2, 5);
    assert!(
        (dup["similarity"].as_f64().unwrap() - want).abs() < 1e-12,
        "{dup}"
    );
}

#[test]
fn index_a_changed_dump_supersedes_all_its_records() {
    let t = TestDir::new();
    let line = |v: Value| serde_json::to_string(&v).unwrap() + "\n";
    let first = line(json!({"id": "p", "text": text(831, 300)}))
        + &line(json!({"id": "q", "text": text(832, 300)}));
    t.write("dump.jsonl", &first);
    report(&t, &["index", "build", "dump.jsonl", "--index", "idx"]);
    // One record appended: the whole dump is read again, and its unchanged records are not
    // exact copies of their own indexed versions.
    let q2 = edit(&text(832, 300), &[9]);
    t.write("dump.jsonl", first + &line(json!({"id": "q2", "text": q2})));
    let r = report(&t, &["scan", "dump.jsonl", "--against", "idx", "--update"]);
    assert_eq!(r["stats"]["documents"], 3);
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 0, "unchanged_files": 0, "updated_generation": 2})
    );
    let c = &clusters(&r)[0];
    assert_eq!(clusters(&r).len(), 1, "{r}");
    for m in c["members"].as_array().unwrap() {
        assert!(m.get("indexed").is_none(), "{m}");
    }
    assert_eq!(
        (&c["representative"]["id"], &c["duplicates"][0]["id"]),
        (&json!("q"), &json!("q2"))
    );
    let i = info(&t, "idx");
    assert_eq!(
        (&i["generation"], &i["documents"], &i["files"]),
        (&json!(2), &json!(3), &json!(1))
    );
    let r = report(&t, &["scan", "dump.jsonl", "--against", "idx"]);
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["stats"]["index"]["unchanged_files"], 1);
    assert!(clusters(&r).is_empty(), "{r}");
}

// ---------------------------------------------------------------------------------------------
// Parameters

#[test]
fn index_incompatible_parameters_are_refused_and_banding_may_differ() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let before = fs::read(t.join("idx").join(DATA)).unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--num-perm", "64"],
            "index was built with --num-perm 128, this scan uses --num-perm 64",
        ),
        (
            &["--shingle", "char"],
            "index was built with --shingle word, this scan uses --shingle char",
        ),
        (
            &["--seed", "1"],
            "index was built with --seed 0, this scan uses --seed 1",
        ),
        (
            &["--ngram", "3"],
            "index was built with --ngram 5, this scan uses --ngram 3",
        ),
        (
            &["--sketch", "kperm"],
            "index was built with --sketch oph, this scan uses --sketch kperm",
        ),
        (
            &["--method", "simhash"],
            "index was built with --method minhash, this scan uses --method simhash",
        ),
    ];
    for (flags, message) in cases {
        for update in [false, true] {
            let mut args = vec!["scan", "new", "--against", "idx"];
            args.extend(flags);
            if update {
                args.push("--update");
            }
            let err = refused(t, &args);
            assert!(err.contains("cannot scan against idx"), "{args:?}: {err}");
            assert!(err.contains(message), "{args:?}: {err}");
        }
    }
    // Every differing flag is named.
    let err = refused(t, &words("scan new --against idx --seed 1 --num-perm 64"));
    assert!(
        err.contains("--seed 1") && err.contains("--num-perm 64"),
        "{err}"
    );

    // What an index cannot serve is refused before anything is read.
    let unusable: [(&[&str], &str); 3] = [
        (
            &["--verify", "edit"],
            "--verify edit cannot be used with an index",
        ),
        (
            &["--sketch", "bottom-k"],
            "--sketch bottom-k cannot be used with an index",
        ),
        (
            &["--containment"],
            "--containment cannot be used with an index",
        ),
    ];
    for (flags, message) in unusable {
        let mut args = vec!["scan", "new", "--against", "idx", "--update"];
        args.extend(flags);
        let err = refused(t, &args);
        assert!(err.contains(message), "{args:?}: {err}");
        let mut build = vec!["index", "build", "old", "--index", "other"];
        build.extend(flags);
        let err = refused(t, &build);
        assert!(err.contains(message), "{build:?}: {err}");
        assert!(!t.join("other").exists(), "{build:?} made its directory");
    }
    assert_eq!(fs::read(t.join("idx").join(DATA)).unwrap(), before);
    assert_eq!(names(&t.join("idx")), [DATA, "lock"]);

    // Bands and rows are cut from the stored signatures at every scan: any threshold will do.
    let strict = report(t, &words("scan new --against idx --threshold 0.9"));
    assert_eq!(strict["params"]["threshold"], 0.9);
    assert_ne!(strict["params"]["bands"], 19);
    assert_eq!(
        member_sets(&strict),
        vec![
            set(&[("old/b.txt", true), ("new/b-edited.txt", false)]),
            set(&[("old/c.txt", true), ("new/c-copy.txt", false)]),
        ]
    );
    let banded = report(
        t,
        &words("scan new --against idx --bands 32 --rows 4 --update"),
    );
    assert_eq!(banded["stats"]["index"]["updated_generation"], 2);
    assert_eq!(banded["stats"]["verified_pairs"], 1);
    // The parameters an index is compared by stay those it was built with.
    let params = &info(t, "idx")["params"];
    for (key, value) in [
        ("method", json!("minhash")),
        ("shingle", json!("word")),
        ("ngram", json!(5)),
        ("num_perm", json!(128)),
        ("sketch", json!("oph")),
        ("seed", json!(0)),
    ] {
        assert_eq!(params[key], value, "{params}");
    }
}

// ---------------------------------------------------------------------------------------------
// Damaged indexes

/// The section lengths P, S, R of an `index.dfx` header.
fn sections(bytes: &[u8]) -> (usize, usize, usize) {
    let at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) as usize;
    (at(32), at(40), at(48))
}

#[test]
fn index_truncated_corrupt_or_foreign_files_are_refused_and_never_overwritten() {
    let t = TestDir::new();
    let a = text(841, 300);
    t.write("old/a.txt", &a)
        .write("new/a-edited.txt", edit(&a, &[5, 205]));
    report(&t, &["index", "build", "old", "--index", "idx"]);
    let data = t.join("idx").join(DATA);
    let good = fs::read(&data).unwrap();
    let (p, s, r) = sections(&good);
    assert_eq!(80 + p + s + r, good.len());
    let flip = |at: usize| {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        bad
    };
    let mut state = 7u64;
    let foreign: Vec<u8> = (0..good.len())
        .map(|_| {
            state = mix64(state);
            state as u8
        })
        .collect();
    let cases = [
        (
            "truncated",
            good[..good.len() - 13].to_vec(),
            "corrupt index: truncated",
        ),
        (
            "a record flipped",
            flip(80 + p + s + r / 2),
            "corrupt index: checksum mismatch in the section",
        ),
        (
            "a header byte flipped",
            flip(20),
            "corrupt index: header checksum mismatch",
        ),
        ("foreign", foreign, "is not a dupfind index (bad magic)"),
        ("empty", Vec::new(), "corrupt index: truncated"),
    ];
    for (what, bytes, message) in &cases {
        fs::write(&data, bytes).unwrap();
        for args in [
            &["scan", "new", "--against", "idx"][..],
            &["scan", "new", "--against", "idx", "--update"],
            &["index", "info", "--index", "idx"],
        ] {
            let err = refused(&t, args);
            assert!(
                err.contains("cannot use index idx"),
                "{what}, {args:?}: {err}"
            );
            assert!(err.contains(message), "{what}, {args:?}: {err}");
            assert_eq!(&fs::read(&data).unwrap(), bytes, "{what}: {args:?} wrote");
            assert_eq!(names(&t.join("idx")), [DATA, "lock"], "{what}: {args:?}");
        }
    }

    // A byte flipped in the middle of the file, among the sets, which are checked when read:
    // the scan that needs the set reports it as an error of the indexed document, and an
    // update, which carries every set over, fails without writing.
    let mid = good.len() / 2;
    assert!(
        (80 + p..80 + p + s).contains(&mid),
        "the middle is in the sets"
    );
    let bad = flip(mid);
    fs::write(&data, &bad).unwrap();
    let run = t.run(&["scan", "new", "--against", "idx"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert!(clusters(&r).is_empty(), "{r}");
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{r}");
    assert_eq!(errors[0]["path"], "old/a.txt");
    let msg = errors[0]["error"].as_str().unwrap();
    assert!(
        msg.contains("corrupt index: checksum mismatch in the set of record 0"),
        "{msg}"
    );
    // With --update the scan's report is still printed; the failed update is one more error
    // (exit 2), and the index is left as it was.
    let run = t.run(&["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert!(
        r["stats"]["index"].get("updated_generation").is_none(),
        "{r}"
    );
    let update_error = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "idx")
        .unwrap_or_else(|| panic!("no error for the index: {r}"));
    let msg = update_error["error"].as_str().unwrap();
    assert!(
        msg.starts_with("index not updated: cannot update index idx"),
        "{msg}"
    );
    assert!(
        msg.contains("checksum mismatch in the set of record 0"),
        "{msg}"
    );
    assert!(run.stderr.contains("index not updated"), "{}", run.stderr);
    assert_eq!(fs::read(&data).unwrap(), bad, "--update wrote");
    assert_eq!(names(&t.join("idx")), [DATA, "lock"]);

    // The good bytes back: everything works again.
    fs::write(&data, &good).unwrap();
    let r = report(&t, &["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(r["stats"]["verified_pairs"], 1);
    assert_eq!(generation_and_documents(&t, "idx"), (2, 2));
}

// ---------------------------------------------------------------------------------------------
// A writer killed

#[test]
fn index_a_writer_killed_at_any_moment_leaves_the_old_or_the_new_generation() {
    const OLD_DOCS: usize = 40;
    const NEW_DOCS: usize = 1500;
    const KILLS: u32 = 28;
    /// Of which spread over the write.
    const WRITE_KILLS: u32 = 8;
    let t = TestDir::new();
    for i in 0..OLD_DOCS {
        t.write(format!("base/{i:03}.txt"), text(10_000 + i as u64, 60));
    }
    for i in 0..NEW_DOCS {
        t.write(format!("new/{i:04}.txt"), text(20_000 + i as u64, 60));
    }
    report(&t, &["index", "build", "base", "--index", "gen1", "-q"]);
    let (old_state, new_state) = ((1, OLD_DOCS), (2, OLD_DOCS + NEW_DOCS));
    fn args(dir: &str) -> [&str; 8] {
        ["scan", "new", "--against", dir, "--update", "-q", "-j", "1"]
    }
    let state = |dir: &str| -> Result<(u64, usize), String> {
        let index = Index::open(&t.join(dir)).map_err(|e| format!("{e:#}"))?;
        // Every set is whole too.
        for r in index.records() {
            r.map_err(|e| format!("{e:#}"))?;
        }
        Ok((index.generation(), index.entries().len()))
    };

    let spawn = |dir: &str| {
        let mut cmd = t.command(&args(dir));
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd.spawn().unwrap()
    };

    // An uninterrupted run, to learn how long one takes and when it starts writing the new
    // generation (the temp file appears).
    copy_dir(&t.join("gen1"), &t.join("full"));
    let temp = t.join("full");
    let start = Instant::now();
    let mut child = spawn("full");
    let mut writing = None;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < HANG_GUARD, "the update hung");
        if writing.is_none() && has_temp(&temp) {
            writing = Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let duration = start.elapsed();
    assert!(status.success(), "{status:?}");
    assert_eq!(state("full"), Ok(new_state));
    assert_eq!(state("gen1"), Ok(old_state));
    // Kill points: spread over the whole run from its start; then, as the machine's load
    // makes a run's phases drift, spread over the write, the commit and a little beyond
    // (a quarter of the write) from the moment the temp file appears in that run.
    let writing = writing.unwrap_or(duration);
    let spread =
        |span: Duration, n: u32| (0..n).map(move |i| span.mul_f64(f64::from(i) / f64::from(n - 1)));
    let points: Vec<(bool, Duration)> = (spread(duration, KILLS - WRITE_KILLS).map(|d| (false, d)))
        .chain(spread((duration - writing).mul_f64(1.25), WRITE_KILLS).map(|d| (true, d)))
        .collect();

    let (mut old, mut old_writing, mut new_killed, mut new_finished) = (0, 0, 0, 0);
    let mut with_temp = None;
    for (i, &(from_write, point)) in points.iter().enumerate() {
        let dir = format!("kill{i}");
        copy_dir(&t.join("gen1"), &t.join(&dir));
        let mut child = spawn(&dir);
        if from_write {
            let (temp, start) = (t.join(&dir), Instant::now());
            while !has_temp(&temp) && child.try_wait().unwrap().is_none() {
                assert!(start.elapsed() < HANG_GUARD, "the update hung");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        std::thread::sleep(point);
        // SIGKILL; a child that has exited already is not harmed.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        match state(&dir) {
            Ok(s) if s == old_state => {
                old += 1;
                if has_temp(&t.join(&dir)) {
                    old_writing += 1;
                    with_temp.get_or_insert_with(|| dir.clone());
                }
            }
            Ok(s) if s == new_state && status.success() => new_finished += 1,
            Ok(s) if s == new_state => new_killed += 1,
            other => panic!(
                "killed {point:?} after its {} of {duration:?}: {other:?} ({status:?})",
                if from_write { "write began" } else { "start" }
            ),
        }
        for name in names(&t.join(&dir)) {
            assert!(
                [DATA, "lock"].contains(&name.as_str()) || is_temp(&name),
                "{dir}: {name}"
            );
        }
    }
    eprintln!(
        "index kill test: a run takes {duration:?}, writing from {writing:?}; {KILLS} kills: \
         {old} before the commit left generation 1 ({old_writing} of them killed mid-write), \
         {new_killed} after the commit left generation 2, {new_finished} ran to the end"
    );
    assert!(old >= 1, "no kill landed before the commit");
    // A leftover temp file does not stand in the way of the next update.
    let dir = with_temp.unwrap_or_else(|| "kill0".to_string());
    let run = t.run(&args(&dir));
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(state(&dir), Ok(new_state));
    assert_eq!(names(&t.join(&dir)), [DATA, "lock"]);
}

// ---------------------------------------------------------------------------------------------
// Where an index lies

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
    let data = t.join("idx").join(DATA);
    let before = fs::read(&data).unwrap();

    // A second build over it is refused, and changes nothing.
    for index in ["idx", "./idx"] {
        let err = refused(&t, &["index", "build", ".", "--index", index]);
        assert!(err.contains("already holds an index"), "{err}");
        assert_eq!(fs::read(&data).unwrap(), before);
        assert_eq!(names(&t.join("idx")), [DATA, "lock"]);
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
    for root in ["new/../old", "link"] {
        let r = report(t, &["scan", root, "--against", "idx", "--update"]);
        assert!(
            clusters(&r).is_empty(),
            "{root}: files reported as their own copies: {r}"
        );
        assert_eq!(r["stats"]["documents"], 0, "{root}");
        assert_eq!(r["stats"]["index"]["unchanged_files"], 4, "{root}");
    }
    // Nothing was added twice.
    assert_eq!(generation_and_documents(t, "idx"), (3, 4));
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
        run.stdout.ends_with(
            "2 clusters, 2 duplicates among 3 documents (1 exact group); 0 unreadable\n"
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
    let data = fs::read(idx.join(DATA)).unwrap();
    let victim = || fs::read_to_string(t.join("victim.txt")).unwrap();
    let update = ["scan", "--against", "shared/idx", "--update", "new"];

    // The lock and the old fixed temporary name, pointed at the owner's file.
    fs::remove_file(idx.join("lock")).unwrap();
    std::os::unix::fs::symlink(t.join("victim.txt"), idx.join("lock")).unwrap();
    std::os::unix::fs::symlink(t.join("victim.txt"), idx.join("index.dfx.tmp")).unwrap();
    let r = run(&update);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("lock is a symbolic link"), "{}", r.stderr);
    assert_eq!(
        r.json()["clusters"].as_array().unwrap().len(),
        1,
        "the report is printed"
    );
    assert_eq!(victim(), "the owner's precious file\n");
    assert_eq!(
        fs::read(idx.join(DATA)).unwrap(),
        data,
        "the index is untouched"
    );

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

    // With a sound lock, the planted temporary name is never written through: the update
    // writes under a fresh name and removes the stale link (not its target). The owner's mode
    // of the index, 0600, is kept.
    chmod(&idx.join(DATA), 0o600);
    let r = run(&update);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["index"]["updated_generation"], 2);
    assert_eq!(victim(), "the owner's precious file\n");
    assert_eq!(names(&idx), [DATA, "lock"]);
    assert_eq!(fs::metadata(idx.join(DATA)).unwrap().mode() & 0o777, 0o600);

    // The data file or the directory itself replaced by a link: refused.
    fs::rename(idx.join(DATA), t.join("shared/moved.dfx")).unwrap();
    std::os::unix::fs::symlink(t.join("shared/moved.dfx"), idx.join(DATA)).unwrap();
    let r = run(&["scan", "--against", "shared/idx", "new"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("index.dfx is a symbolic link"),
        "{}",
        r.stderr
    );
    fs::remove_file(idx.join(DATA)).unwrap();
    fs::rename(t.join("shared/moved.dfx"), idx.join(DATA)).unwrap();
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
