//! Scanning against an index, and the unchanged-file cache.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use serde_json::{json, Value};

use super::{
    assert_new_against_old, build_old, content_hash, corpus, generation_and_documents, index_files,
    info, member_sets, names, report, set, set_mtime,
};
use crate::util::{cluster_paths, clusters, edit, text, word_jaccard, TestDir};

// ---------------------------------------------------------------------------------------------
// Scanning against an index

#[test]
fn index_new_documents_are_compared_with_indexed_ones_which_represent_their_clusters() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let mut i = info(t, "idx");
    let id = i.as_object_mut().unwrap().remove("index_id").unwrap();
    assert!(
        id.as_str()
            .is_some_and(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())),
        "{id}"
    );
    let sizes: Vec<u64> = ["seg-000001.dfs", "seg-000001.docs.parquet", "manifest"]
        .iter()
        .map(|n| fs::metadata(t.join("idx").join(n)).unwrap().len())
        .collect();
    assert_eq!(
        i,
        json!({
            "schema_version": 2,
            "format_version": 2,
            "generation": 1,
            "documents": 4,
            "files": 4,
            "bytes": sizes.iter().sum::<u64>(),
            "segments": [{
                "file": "seg-000001.dfs", "documents": 4, "removed": 0, "tombstones": 0,
                "bytes": sizes[0], "table_bytes": sizes[1]
            }],
            "prune": {"documents": 0, "files": 0},
            "params": {
                "method": "minhash", "shingle": "word", "ngram": 5, "num_perm": 128,
                "sketch": "oph", "bands": 19, "rows": 6, "seed": 0, "hashing": 2,
                "max_distance": 0
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
    assert_eq!(names(&t.join("idx")), index_files(&[1]));
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
            "indexed": true, "content_hash": content_hash(&r2)
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
            "aliases": [], "indexed": true, "content_hash": content_hash(&text(815, 300))
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
    // The update added a segment; the first was not rewritten.
    assert_eq!(names(&t.join("idx")), index_files(&[1, 2]));
    assert_eq!(i["segments"][0]["documents"], 4);
    assert_eq!(i["segments"][1]["documents"], 3);

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
    // size, modification time, device and inode are those stored, but the status change time
    // is not (a write sets it, and `touch` cannot put it back), so it is read again, as git
    // would, and found to be b's near-duplicate now.
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
    assert_eq!(r["stats"]["documents"], 1, "the change went unnoticed: {r}");
    assert_eq!(r["stats"]["bytes"], a.len());
    assert_eq!(
        r["stats"]["index"],
        json!({"generation": 1, "documents": 2, "unchanged_files": 2})
    );
    assert_eq!(
        member_sets(&r),
        vec![set(&[("docs/b.txt", true), ("docs/a.txt", false)])]
    );
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
