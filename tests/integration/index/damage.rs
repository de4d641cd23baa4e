//! Parameters an index refuses, damaged indexes, and a writer killed mid-commit.

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dupfind::api::mix64;
use dupfind::api::Index;
use serde_json::json;

use super::{
    build_old, copy_dir, corpus, generation_and_documents, has_temp, info, is_temp, member_sets,
    names, refused, report, set, DATA,
};
use crate::util::schema::assert_schema;
use crate::util::{clusters, edit, text, words, TestDir, HANG_GUARD};

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
