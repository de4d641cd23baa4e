//! The index driver against `scan`: `index build` prints `scan`'s report (and the index's
//! generation), warnings and exit status; `scan --against` a clean index warns and exits as `scan` of both does, and finds the
//! same components and the same verified pairs.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::util::{clusters, edit, text, TestDir};

/// Old documents with no duplicate among themselves (`old/`), and new ones (`new/`): near and
/// exact copies of old documents, a family of their own, a corrupt gzip stream and a file over
/// `--max-size 20000`.
fn corpus(t: &TestDir) {
    for s in 0..6 {
        t.write(format!("old/o{s}.txt"), text(700 + s, 400));
    }
    t.write("new/near0.txt", edit(&text(700, 400), &[10, 200]))
        .write("new/near3.txt", edit(&text(703, 400), &[50]))
        .write("new/copy5.txt", text(705, 400))
        .write("new/fam-a.txt", text(800, 400))
        .write("new/fam-b.txt", edit(&text(800, 400), &[5]))
        .write("new/fam-c.txt", edit(&text(800, 400), &[5, 300]))
        .write("new/alone.txt", text(801, 400))
        .write("new/broken.txt.gz", b"\x1f\x8b\x08\x00not deflate at all")
        .write("new/huge.txt", text(802, 6000));
}

/// Every cluster's member paths, sorted.
type Members = BTreeSet<Vec<String>>;
/// Every verified pair as its two paths (sorted) and its similarity (as JSON writes it).
type Pairs = BTreeSet<(String, String, String)>;

fn shape(report: &Value) -> (Members, Pairs) {
    let mut sets = BTreeSet::new();
    let mut pairs = BTreeSet::new();
    for c in clusters(report) {
        let paths: Vec<String> = c["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap().to_string())
            .collect();
        for p in c["pairs"].as_array().unwrap() {
            let (a, b) = (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap());
            let (mut a, mut b) = (paths[a as usize].clone(), paths[b as usize].clone());
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            pairs.insert((a, b, p["similarity"].to_string()));
        }
        let mut sorted = paths;
        sorted.sort();
        sets.insert(sorted);
    }
    (sets, pairs)
}

#[test]
fn index_build_prints_scans_report_warnings_and_exit_status() {
    let t = TestDir::new();
    corpus(&t);
    // The text normalization (--normalize) is the shingler's: the index's sets are made by it.
    let cases = [
        ("json", &[][..]),
        ("text", &[][..]),
        ("json", &["--normalize", "punct,digits"][..]),
    ];
    for (i, (format, more)) in cases.into_iter().enumerate() {
        let args = [
            &[
                "--exit-code",
                "--max-size",
                "20000",
                "--format",
                format,
                "old",
                "new",
            ][..],
            more,
        ]
        .concat();
        let scan = t.run(&[&["scan"][..], &args].concat());
        assert_eq!(scan.code(), 2, "{}", scan.stderr);
        for said in [
            "new/broken.txt.gz: gzip stream is corrupt",
            "new/huge.txt: skipped, ",
        ] {
            assert!(scan.stderr.contains(said), "{said}: {}", scan.stderr);
        }
        let idx = format!("idx-{i}");
        let build = t.run(&[&["index", "build", "--index", &idx][..], &args].concat());
        assert_eq!(
            (build.code(), &build.stderr),
            (scan.code(), &scan.stderr),
            "--format {format}"
        );
        if format == "text" {
            assert_eq!(build.stdout, scan.stdout);
        } else {
            // The one difference: the index's generation, under `stats.index`.
            let mut built = build.json();
            let index = built["stats"].as_object_mut().unwrap().remove("index");
            assert_eq!(index.unwrap()["updated_generation"], 1, "{}", build.stdout);
            assert_eq!(built, scan.json());
        }
    }
}

#[test]
fn scan_against_a_clean_index_warns_exits_and_pairs_as_scan_of_both() {
    for normalize in [&[][..], &["--normalize", "punct,digits"]] {
        against_as_both(normalize);
    }
}

fn against_as_both(normalize: &[&str]) {
    let t = TestDir::new();
    corpus(&t);
    let built = t.run(
        &[
            &["index", "build", "--index", "idx"][..],
            normalize,
            &["old"],
        ]
        .concat(),
    );
    assert_eq!(built.code(), 0, "{}", built.stderr);
    assert!(built.stderr.is_empty(), "{}", built.stderr);
    let opts = [
        &[
            "--exit-code",
            "--max-size",
            "20000",
            "--cluster",
            "components",
        ][..],
        normalize,
    ]
    .concat();
    let both = t.run(&[&["scan"][..], &opts, &["old", "new"]].concat());
    let against = t.run(&[&["scan", "--against", "idx"][..], &opts, &["new"]].concat());
    assert_eq!(both.code(), 2, "{}", both.stderr);
    assert_eq!(
        (against.code(), &against.stderr),
        (both.code(), &both.stderr)
    );
    let (r_both, r_against) = (both.json(), against.json());
    assert_eq!(r_against["errors"], r_both["errors"]);
    let (sets, pairs) = shape(&r_both);
    assert_eq!(shape(&r_against), (sets.clone(), pairs));
    // The old documents are in no cluster of their own, so every component holds a new one.
    let want: Members = [
        vec!["new/copy5.txt", "old/o5.txt"],
        vec!["new/fam-a.txt", "new/fam-b.txt", "new/fam-c.txt"],
        vec!["new/near0.txt", "old/o0.txt"],
        vec!["new/near3.txt", "old/o3.txt"],
    ]
    .iter()
    .map(|s| s.iter().map(|p| p.to_string()).collect())
    .collect();
    assert_eq!(sets, want);
}
