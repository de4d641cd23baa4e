//! The incremental index: `index build`, `index info` and `scan --against DIR [--update]`: what
//! is compared and reported, the unchanged-file cache, generations, incompatible parameters,
//! damaged indexes, a writer killed mid-commit, and where an index may lie.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use serde_json::{json, Value};

use super::util::schema::assert_schema;
use super::util::{cluster_members, cluster_paths, clusters, edit, text, word_jaccard, TestDir};

mod against;
mod damage;
mod format1;
mod imports;
mod kill;
mod lifecycle;
mod parity;
mod paths;

/// The manifest of an index directory: the file a commit replaces.
const MANIFEST: &str = "manifest";

/// The files of an index whose segments are `numbers`: the lock, the manifest, and each
/// segment's file and document table, sorted.
fn index_files(numbers: &[u64]) -> Vec<String> {
    let mut names = vec!["lock".to_string(), MANIFEST.to_string()];
    for n in numbers {
        names.push(format!("seg-{n:06}.dfs"));
        names.push(format!("seg-{n:06}.docs.parquet"));
    }
    names.sort();
    names
}

/// True for the name of a file being written (`*.<random>.tmp`).
fn is_temp(name: &str) -> bool {
    name.ends_with(".tmp")
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

/// Every regular file of a flat directory (an index) with its bytes, but the lock (empty, and
/// made by any writer): what "nothing was written" compares. (Links and FIFOs a test planted
/// are left out.)
fn contents(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name() != "lock")
        .map(|e| {
            let bytes = fs::read(e.path()).unwrap();
            (e.file_name().into_string().unwrap(), bytes)
        })
        .collect()
}

/// Rewrites the manifest of the index `idx` as `forge` edits its JSON, and checksums it again:
/// what a forger who can write the index can do.
fn forge_manifest(idx: &Path, forge: impl FnOnce(&mut Value)) {
    let manifest = fs::read_to_string(idx.join(MANIFEST)).unwrap();
    let (_, body) = manifest.split_once('\n').unwrap();
    let mut m: Value = serde_json::from_str(body).unwrap();
    forge(&mut m);
    let body = serde_json::to_string_pretty(&m).unwrap() + "\n";
    let head = format!(
        "dupfind-index-manifest 2 {:016x}\n",
        xxhash_rust::xxh3::xxh3_64(body.as_bytes())
    );
    fs::write(idx.join(MANIFEST), head + &body).unwrap();
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
    assert_eq!(names(&t.join("idx")), index_files(&[1]));
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
        json!({"path": "old/b.txt", "bytes": co.b.len(), "aliases": [], "indexed": true,
               "content_hash": content_hash(&co.b)})
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
        json!({"path": "old/c.txt", "bytes": co.c.len(), "aliases": [], "indexed": true,
               "content_hash": content_hash(&co.c)})
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

/// A content hash as the report writes it: XXH3-128, 32 hex digits.
pub fn content_hash(text: &str) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
}
