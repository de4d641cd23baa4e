//! The store's tests: round trips, damage detected at every byte, killed commits, writers.

#![allow(clippy::unwrap_used)]

use super::*;
use std::fs;

fn params() -> IndexParams {
    IndexParams {
        method: "minhash".into(),
        shingle: "word".into(),
        ngram: 5,
        num_perm: 4,
        sketch: "oph".into(),
        bands: 2,
        rows: 2,
        seed: 0,
        hashing: 1,
        max_distance: 0,
        normalize: "none".into(),
    }
}

fn record(
    path: &[u8],
    line: Option<u64>,
    id: Option<&str>,
    signature: &[u32],
    set: &[u64],
) -> Record {
    let entry = Entry {
        path: path.to_vec(),
        line,
        id: id.map(String::from),
        size: 10 + set.len() as u64,
        bytes: 5 + set.len() as u64,
        mtime_ns: -1_500_000_001,
        ctime_ns: 0,
        dev: 3,
        inode: u64::MAX - 1,
        content_hash: u128::MAX / 3,
        signature: signature.to_vec(),
        simhash: 0xdead_beef,
    };
    Record {
        entry,
        set: set.to_vec(),
    }
}

fn state_a() -> Vec<Record> {
    vec![
        record(
            b"a/\xff\xfe.txt",
            None,
            None,
            &[1, 2, 3, u32::MAX],
            &[1, 5, u64::MAX],
        ),
        record(b"dump.jsonl", Some(3), Some("doc-\u{e9}"), &[], &[]),
        record(b"", Some(0), None, &[7; 4], &[42]),
    ]
}

fn state_b() -> Vec<Record> {
    vec![record(b"b.txt", None, Some(""), &[9, 9, 9, 9], &[2, 3])]
}

fn ok(records: &[Record]) -> impl Iterator<Item = Result<Record>> + '_ {
    records.iter().cloned().map(Ok)
}

fn load(dir: &Path) -> Result<(u64, IndexParams, Vec<Record>)> {
    let index = Index::open(dir)?;
    let records = index.records().collect::<Result<_>>()?;
    Ok((index.generation(), index.params().clone(), records))
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = (fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn err(r: Result<impl Sized>) -> String {
    format!("{:#}", r.err().unwrap())
}

#[test]
fn round_trips_params_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    create(&idx, &params(), ok(&state_a())).unwrap();
    assert_eq!(load(&idx).unwrap(), (1, params(), state_a()));
    let index = Index::open(&idx).unwrap();
    assert_eq!(index.entries()[1], state_a()[1].entry);
    assert_eq!(index.read_set(2).unwrap(), vec![42]);
    assert!(index.read_set(3).is_err());
    assert_eq!(names(&idx), ["index.dfx", "lock"]);
}

#[test]
fn replace_bumps_generation_and_rejects_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let old = Index::open(dir.path()).unwrap();
    assert_eq!(replace(dir.path(), 1, &params(), old.records()).unwrap(), 2);
    assert_eq!(
        replace(dir.path(), 2, &params(), ok(&state_b())).unwrap(),
        3
    );
    assert_eq!(load(dir.path()).unwrap(), (3, params(), state_b()));
    // A reader keeps the generation it opened.
    assert_eq!(
        old.records().collect::<Result<Vec<_>>>().unwrap(),
        state_a()
    );
    let stale = err(replace(dir.path(), 2, &params(), ok(&state_a())));
    assert!(
        stale.contains("changed during this run (generation 3, expected 2)"),
        "{stale}"
    );
    assert_eq!(load(dir.path()).unwrap(), (3, params(), state_b()));
    let again = err(create(dir.path(), &params(), ok(&state_a())));
    assert!(again.contains("already holds an index"), "{again}");
}

#[test]
fn refuses_another_hash_scheme_or_method_first() {
    let other = IndexParams {
        hashing: 2,
        seed: 9,
        ..params()
    };
    let e = err(check_compatible(&params(), &other));
    assert!(
        e.contains("hashes differently (hash scheme 1, this one uses 2)"),
        "{e}"
    );
    let simhash = IndexParams {
        method: "simhash".into(),
        num_perm: 0,
        ..params()
    };
    assert_eq!(
        err(check_compatible(&params(), &simhash)),
        "index was built with --method minhash, this scan uses --method simhash"
    );
}

#[test]
fn names_every_differing_parameter() {
    assert!(check_compatible(&params(), &params()).is_ok());
    let wanted = IndexParams {
        ngram: 3,
        seed: 7,
        ..params()
    };
    assert_eq!(
        err(check_compatible(&params(), &wanted)),
        "index was built with --ngram 5, this scan uses --ngram 3; \
         index was built with --seed 0, this scan uses --seed 7"
    );
}

#[test]
fn reports_truncation_at_every_length() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let path = dir.path().join(DATA);
    let bytes = fs::read(&path).unwrap();
    for cut in 0..bytes.len() {
        fs::write(&path, &bytes[..cut]).unwrap();
        let msg = err(Index::open(dir.path()));
        assert!(msg.contains("truncated"), "cut at {cut}: {msg}");
    }
}

#[test]
fn reports_a_flipped_byte_in_every_section() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let path = dir.path().join(DATA);
    let bytes = fs::read(&path).unwrap();
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        fs::write(&path, &bad).unwrap();
        let msg = err(load(dir.path()));
        let want = if at < 8 {
            "not a dupfind index"
        } else {
            "checksum mismatch"
        };
        assert!(msg.contains(want), "byte {at}: {msg}");
    }
}

#[test]
fn refuses_a_foreign_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    assert!(err(Index::open(dir.path())).contains("not a dupfind index"));
    assert!(err(create(dir.path(), &params(), ok(&state_a()))).contains("not a dupfind index"));
    assert!(err(replace(dir.path(), 1, &params(), ok(&state_a()))).contains("not a dupfind index"));
    fs::write(dir.path().join(DATA), "not an index at all").unwrap();
    assert!(err(Index::open(dir.path())).contains("not a dupfind index (bad magic)"));
    assert!(err(replace(dir.path(), 1, &params(), ok(&state_a()))).contains("not a dupfind index"));
    assert_eq!(names(dir.path()), ["index.dfx", "notes.txt"]);
    assert_eq!(
        fs::read(dir.path().join(DATA)).unwrap(),
        b"not an index at all"
    );
}

#[test]
fn names_both_versions_for_a_future_format() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let path = dir.path().join(DATA);
    let mut bytes = fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    let prefix_sum = xxh3_64(&bytes[..12]) as u32;
    bytes[12..16].copy_from_slice(&prefix_sum.to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let msg = err(Index::open(dir.path()));
    assert!(
        msg.contains("version 2 is not supported; this build reads version 1"),
        "{msg}"
    );
}

#[test]
fn a_killed_commit_leaves_the_old_or_the_new_state() {
    for stop in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let idir = IndexDir::open(dir.path()).unwrap().unwrap();
        commit(&idir, 2, &params(), ok(&state_b()), None, Some(stop)).unwrap();
        let want = if stop == 1 {
            (1, state_a())
        } else {
            (2, state_b())
        };
        let (generation, _, records) = load(dir.path()).unwrap();
        assert_eq!((generation, records), want, "stopped after step {stop}");
        if stop == 1 {
            // Killed mid-write: a partial temp file is ignored just the same.
            let temp = (names(dir.path()).into_iter())
                .find(|n| n.ends_with(".tmp"))
                .map(|n| dir.path().join(n))
                .unwrap();
            let len = fs::metadata(&temp).unwrap().len();
            fs::File::options()
                .write(true)
                .open(&temp)
                .unwrap()
                .set_len(len / 2)
                .unwrap();
            assert_eq!(load(dir.path()).unwrap().2, state_a());
        }
        let next = replace(dir.path(), want.0, &params(), ok(&state_a())).unwrap();
        assert_eq!(load(dir.path()).unwrap(), (next, params(), state_a()));
        assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
    }
}

#[test]
fn an_interrupted_create_can_be_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let idir = IndexDir::open(dir.path()).unwrap().unwrap();
    commit(&idir, 1, &params(), ok(&state_a()), None, Some(1)).unwrap();
    assert!(err(Index::open(dir.path())).contains("building it was interrupted"));
    create(dir.path(), &params(), ok(&state_b())).unwrap();
    assert_eq!(load(dir.path()).unwrap(), (1, params(), state_b()));
    assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
}

#[test]
fn a_failed_write_changes_nothing_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let b = state_b();
    let bad = ok(&b).chain([Err(anyhow::anyhow!("a set would not read"))]);
    assert!(err(replace(dir.path(), 1, &params(), bad)).contains("a set would not read"));
    assert_eq!(load(dir.path()).unwrap(), (1, params(), state_a()));
    assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
}

#[test]
fn a_second_writer_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), &params(), ok(&state_a())).unwrap();
    let held = IndexDir::open(dir.path())
        .unwrap()
        .unwrap()
        .lock(LOCK)
        .unwrap();
    let msg = err(replace(dir.path(), 1, &params(), ok(&state_b())));
    assert!(msg.contains("is being updated by another process"), "{msg}");
    assert_eq!(load(dir.path()).unwrap().0, 1);
    drop(held);
    assert_eq!(
        replace(dir.path(), 1, &params(), ok(&state_b())).unwrap(),
        2
    );
}
