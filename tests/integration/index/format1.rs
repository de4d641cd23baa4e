//! A format-1 index (one `index.dfx`, made by the release before segments: the fixture in
//! tests/fixtures/index-v1, whose README says how it was made) is read as that release read it,
//! and upgraded to segments by `index upgrade` or by its first update, with the same reports.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::{contents, index_files, info, names, report};
use crate::util::{without_stored_files, TestDir};

/// Where the fixture's index says its documents are (it stores absolute paths).
const HOME: &str = "/tmp/dupfind-index-v1-fixture";

fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/index-v1"
    ))
}

fn fixture_text(name: &str) -> String {
    fs::read_to_string(fixture().join(name)).unwrap()
}

/// A report the release wrote, with the counts added to `stats.skipped` since (hidden and
/// ignored files, none here), so that the rest compares byte for byte.
fn release_report(name: &str) -> String {
    let text = fixture_text(name);
    let added = "\"bad_line\": 0,\n      \"hidden\": 0,\n      \"ignored\": 0\n    }";
    assert!(text.contains("\"bad_line\": 0\n    }"), "{name}");
    text.replacen("\"bad_line\": 0\n    }", added, 1)
}

/// A report as the release would have printed it: without the fields added since (the roots,
/// each member's content hash and file, the bytes reclaimable), as a value, since the fields
/// that remain keep their values but the text around them changes.
fn as_the_release_printed(stdout: &str) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("content_hash");
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = without_stored_files(serde_json::from_str(stdout).unwrap());
    walk(&mut v);
    v
}

/// Puts the indexed documents back where the index says they are (once per test run; a file
/// already there with other bytes is replaced, through a fresh name and a rename).
fn put_back_the_indexed_documents() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let old = Path::new(HOME).join("old");
        fs::create_dir_all(&old).unwrap();
        for e in fs::read_dir(fixture().join("old")).unwrap() {
            let e = e.unwrap();
            let bytes = fs::read(e.path()).unwrap();
            let to = old.join(e.file_name());
            if fs::read(&to).ok().as_deref() != Some(&bytes[..]) {
                let temp = old.join(format!(
                    ".{}.{}",
                    e.file_name().to_string_lossy(),
                    std::process::id()
                ));
                fs::write(&temp, &bytes).unwrap();
                fs::rename(&temp, &to).unwrap();
            }
        }
    });
}

/// A directory holding a copy of the fixture's `new/` and of its index as `idx`.
fn copy() -> TestDir {
    put_back_the_indexed_documents();
    let t = TestDir::new();
    for e in fs::read_dir(fixture().join("new")).unwrap() {
        let e = e.unwrap();
        t.write(
            Path::new("new").join(e.file_name()),
            fs::read(e.path()).unwrap(),
        );
    }
    t.write(
        "idx/index.dfx",
        fs::read(fixture().join("index.dfx")).unwrap(),
    );
    t
}

/// The three reports the fixture holds, each as (arguments, file).
const REPORTS: [(&[&str], &str); 3] = [
    (&["scan", "-q", "--against", "idx", "new"], "against.json"),
    (
        &["scan", "-q", "--against", "idx", "--pairs", "new"],
        "against-pairs.json",
    ),
    (
        &[
            "scan",
            "-q",
            "--against",
            "idx",
            "--threshold",
            "0.9",
            "new",
        ],
        "against-t09.json",
    ),
];

/// Runs the fixture's three scans; each report must be the fixture's byte for byte, but for
/// the index's generation, which is `generation` now.
fn assert_the_release_reports(t: &TestDir, generation: u64) {
    for (args, file) in REPORTS {
        let run = t.run(args);
        assert_eq!(run.code(), 0, "{args:?}: {}", run.stderr);
        let want = release_report(file).replacen(
            "\"generation\": 1,",
            &format!("\"generation\": {generation},"),
            1,
        );
        let want: Value = serde_json::from_str(&want).unwrap();
        let got = as_the_release_printed(&run.stdout);
        assert_eq!(got, want, "{args:?} differs from {file}");
    }
}

#[test]
fn index_a_format_1_index_gives_the_reports_of_the_release_that_made_it_and_is_not_written() {
    let t = copy();
    let before = contents(&t.join("idx"));
    assert_the_release_reports(&t, 1);
    let i = info(&t, "idx");
    let release: Value = serde_json::from_str(&fixture_text("info.json")).unwrap();
    for key in ["format_version", "generation", "documents", "files"] {
        assert_eq!(i[key], release[key], "{key}: {i}");
    }
    assert_eq!(i["segments"], json!([]));
    assert_eq!(
        i["bytes"],
        fs::metadata(t.join("idx/index.dfx")).unwrap().len()
    );
    // The parameters the release stored, and the SimHash distance it did not (unused by
    // MinHash).
    let mut params = release["params"].clone();
    params["max_distance"] = json!(0);
    assert_eq!(i["params"], params);
    // Reading wrote nothing, upgraded nothing.
    assert_eq!(contents(&t.join("idx")), before);
    assert_eq!(names(&t.join("idx")), ["index.dfx"]);
}

#[test]
fn index_upgrade_rewrites_a_format_1_index_as_one_segment_with_the_same_reports() {
    let t = copy();
    let run = t.run(&["index", "upgrade", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let summary = run.json();
    assert_eq!(
        (
            &summary["written"],
            &summary["generation"],
            &summary["documents"],
            &summary["segments"]
        ),
        (&json!(true), &json!(2), &json!(6), &json!(1)),
        "{summary}"
    );
    assert_eq!(
        names(&t.join("idx")),
        index_files(&[1]),
        "index.dfx is gone"
    );
    let i = info(&t, "idx");
    assert_eq!(
        (
            &i["format_version"],
            &i["generation"],
            &i["documents"],
            &i["files"]
        ),
        (&json!(2), &json!(2), &json!(6), &json!(5))
    );
    assert_the_release_reports(&t, 2);

    // A second upgrade has nothing to do, and says so.
    let upgraded = contents(&t.join("idx"));
    let run = t.run(&["index", "upgrade", "--index", "idx"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.json()["written"], false);
    assert!(
        run.stderr.contains("nothing to do; nothing written"),
        "{}",
        run.stderr
    );
    assert_eq!(contents(&t.join("idx")), upgraded);
}

#[test]
fn index_the_first_update_of_a_format_1_index_upgrades_it() {
    let t = copy();
    let run = t.run(&["scan", "-q", "--against", "idx", "--update", "new"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    // The release's report, and the generation the update made.
    let want = release_report("against.json").replacen(
        "\"unchanged_files\": 0\n",
        "\"unchanged_files\": 0,\n      \"updated_generation\": 2\n",
        1,
    );
    let want: Value = serde_json::from_str(&want).unwrap();
    assert_eq!(as_the_release_printed(&run.stdout), want);
    assert_eq!(
        names(&t.join("idx")),
        index_files(&[1]),
        "index.dfx is gone"
    );
    let i = info(&t, "idx");
    assert_eq!(
        (
            &i["format_version"],
            &i["generation"],
            &i["documents"],
            &i["files"]
        ),
        (&json!(2), &json!(2), &json!(10), &json!(9))
    );
    // The new documents are indexed: unchanged, not read again, and no pair reported again.
    let r = report(&t, &["scan", "new", "--against", "idx"]);
    assert_eq!(r["stats"]["documents"], 0, "{r}");
    assert_eq!(r["stats"]["index"]["unchanged_files"], 4);
    assert_eq!(r["clusters"], json!([]));
}
