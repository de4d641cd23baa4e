//! Parameters an index refuses, damaged indexes, and a writer killed mid-commit.

use std::fs;
use std::path::Path;

use dupfind::api::mix64;
use serde_json::json;
use xxhash_rust::xxh3::xxh3_64;

use super::{
    build_old, contents, corpus, forge_manifest, generation_and_documents, index_files, info,
    member_sets, names, refused, report, set, MANIFEST,
};
use crate::util::schema::assert_schema;
use crate::util::{clusters, edit, mkfifo, text, words, TestDir};

// ---------------------------------------------------------------------------------------------
// Parameters

#[test]
fn index_incompatible_parameters_are_refused_and_banding_may_differ() {
    let co = corpus();
    let t = &co.t;
    build_old(t);
    let before = contents(&t.join("idx"));
    let cases: [(&[&str], &str); 7] = [
        (
            // The index has no steps: it was built without the field, as before the option.
            &["--normalize", "punct"],
            "index was built with --normalize none, this scan uses --normalize punct",
        ),
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
    assert_eq!(contents(&t.join("idx")), before);
    assert_eq!(names(&t.join("idx")), index_files(&[1]));

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
    // The new segment's keys are cut with the index's banding, not this scan's: a scan at the
    // default threshold finds its documents through them.
    let d = fs::read_to_string(t.join("new/d.txt")).unwrap();
    t.write("later/d-edited.txt", edit(&d, &[33]));
    let later = report(t, &words("scan later --against idx"));
    assert_eq!(
        member_sets(&later),
        vec![set(&[("new/d.txt", true), ("later/d-edited.txt", false)])]
    );
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
    assert!(params.get("normalize").is_none(), "{params}");
}

// ---------------------------------------------------------------------------------------------
// Damaged indexes

/// The (offset, length) of section `i` of a segment file, from its header: sets, rows,
/// strings, keys, fences, tables, dictionaries, tombstones.
fn span(segment: &[u8], i: usize) -> (usize, usize) {
    let at = |o: usize| u64::from_le_bytes(segment[o..o + 8].try_into().unwrap()) as usize;
    (at(80 + 24 * i), at(88 + 24 * i))
}

/// `bytes` with the byte at `at` flipped.
fn flip(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut bad = bytes.to_vec();
    bad[at] ^= 0x10;
    bad
}

/// Seeded random bytes.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = mix64(state);
            state as u8
        })
        .collect()
}

/// An index `idx` of old/a.txt and a near-duplicate of it in new/.
fn one_document_index() -> TestDir {
    let t = TestDir::new();
    let a = text(841, 300);
    t.write("old/a.txt", &a)
        .write("new/a-edited.txt", edit(&a, &[5, 205]));
    report(&t, &["index", "build", "old", "--index", "idx"]);
    t
}

#[test]
fn index_a_damaged_manifest_or_segment_is_named_and_nothing_is_written() {
    let t = one_document_index();
    let idx = t.join("idx");
    let (manifest, seg) = (idx.join(MANIFEST), idx.join("seg-000001.dfs"));
    let good = contents(&idx);
    let (m, s) = (&good[MANIFEST], &good["seg-000001.dfs"]);
    let nl = m.iter().position(|&b| b == b'\n').unwrap();
    // Another index of the same documents: a segment of the same length, of another index.
    report(&t, &["index", "build", "old", "--index", "other"]);
    let foreign_seg = fs::read(t.join("other/seg-000001.dfs")).unwrap();
    assert_eq!(foreign_seg.len(), s.len());
    let key_block = span(s, 3).0 + 5;
    let row = span(s, 1).0 + 20;
    let cases: Vec<(&str, &Path, Option<Vec<u8>>, &str)> = vec![
        (
            "a truncated manifest",
            &manifest,
            Some(m[..m.len() - 13].to_vec()),
            "manifest: corrupt manifest: checksum mismatch",
        ),
        (
            "a manifest byte flipped",
            &manifest,
            Some(flip(m, nl + 40)),
            "manifest: corrupt manifest: checksum mismatch",
        ),
        (
            "a foreign manifest",
            &manifest,
            Some(noise(m.len(), 7)),
            "not a dupfind index manifest",
        ),
        (
            "an empty manifest",
            &manifest,
            Some(Vec::new()),
            "not a dupfind index manifest",
        ),
        (
            "a truncated segment",
            &seg,
            Some(s[..s.len() - 1].to_vec()),
            "seg-000001.dfs: corrupt index segment: ",
        ),
        (
            "a segment header byte flipped",
            &seg,
            Some(flip(s, 40)),
            "seg-000001.dfs: corrupt index segment: header checksum mismatch",
        ),
        (
            "a fence flipped",
            &seg,
            Some(flip(s, span(s, 4).0 + 3)),
            "seg-000001.dfs: corrupt index segment: checksum mismatch in the Fences section",
        ),
        (
            "a table entry flipped",
            &seg,
            Some(flip(s, span(s, 5).0 + 1)),
            "seg-000001.dfs: corrupt index segment: checksum mismatch in the Tables section",
        ),
        (
            "the dictionaries flipped",
            &seg,
            Some(flip(s, span(s, 6).0)),
            "seg-000001.dfs: corrupt index segment: checksum mismatch in the Dicts section",
        ),
        (
            "a key block flipped",
            &seg,
            Some(flip(s, key_block)),
            "seg-000001.dfs: corrupt index segment: checksum mismatch in key block 0",
        ),
        (
            "a row flipped",
            &seg,
            Some(flip(s, row)),
            "seg-000001.dfs: corrupt index segment: row 0: row checksum mismatch",
        ),
        (
            "another index's segment",
            &seg,
            Some(foreign_seg),
            "seg-000001.dfs: corrupt index segment: its header is not the one the manifest records",
        ),
        ("a missing segment", &seg, None, "seg-000001.dfs is missing"),
    ];
    // A key block or a row is read only when something needs it: a scan those of its
    // candidates, info every one, prune every row; a compaction of one clean segment nothing.
    let deep = ["a key block flipped", "a row flipped"];
    for (what, file, bytes, message) in &cases {
        match bytes {
            Some(b) => fs::write(file, b).unwrap(),
            None => fs::remove_file(file).unwrap(),
        }
        let damaged = contents(&idx);
        let mut commands = vec![
            &["scan", "new", "--against", "idx"][..],
            &["scan", "new", "--against", "idx", "--update"],
            &["index", "info", "--index", "idx"],
        ];
        if !deep.contains(what) {
            commands.extend([
                &["index", "compact", "--index", "idx"][..],
                &["index", "prune", "--index", "idx"],
            ]);
        }
        for args in commands {
            let err = refused(&t, args);
            assert!(
                err.contains("cannot use index idx"),
                "{what}, {args:?}: {err}"
            );
            assert!(err.contains(message), "{what}, {args:?}: {err}");
            assert_eq!(contents(&idx), damaged, "{what}: {args:?} wrote");
        }
        fs::write(file, if *file == manifest.as_path() { m } else { s }).unwrap();
    }
    assert_eq!(contents(&idx), good);
    assert_eq!(names(&idx), index_files(&[1]));

    // A FIFO as the manifest or a segment is refused at once, never waited on.
    for name in [MANIFEST, "seg-000001.dfs"] {
        fs::remove_file(idx.join(name)).unwrap();
        mkfifo(&idx.join(name));
        let err = refused(&t, &["scan", "new", "--against", "idx"]);
        let want = format!("{name} is not a regular file (it is a FIFO)");
        assert!(err.contains(&want), "{err}");
        fs::remove_file(idx.join(name)).unwrap();
        fs::write(idx.join(name), &good[name]).unwrap();
    }

    // The good bytes back: everything works again.
    let r = report(&t, &["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(r["stats"]["verified_pairs"], 1);
    assert_eq!(generation_and_documents(&t, "idx"), (2, 2));
}

#[test]
fn index_a_damaged_set_is_an_error_of_its_document_and_the_update_writes_nothing() {
    let t = one_document_index();
    let idx = t.join("idx");
    let seg = idx.join("seg-000001.dfs");
    let good = fs::read(&seg).unwrap();
    let (sets, len) = span(&good, 0);
    fs::write(&seg, flip(&good, sets + len / 2)).unwrap();
    let before = contents(&idx);
    // The scan that needs the set reports it as an error of the indexed document.
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
        msg.contains("seg-000001.dfs: corrupt index segment: checksum mismatch in the set at byte"),
        "{msg}"
    );
    // With --update the scan's report is still printed, its errors those of the scan; the
    // update, which met a damaged segment, fails (exit 2, said on stderr), and nothing is
    // written.
    let run = t.run(&["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert!(
        r["stats"]["index"].get("updated_generation").is_none(),
        "{r}"
    );
    let paths: Vec<&str> = (r["errors"].as_array().unwrap().iter())
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["old/a.txt"], "{r}");
    let said = (run.stderr.lines())
        .find(|l| l.starts_with("dupfind: error: index not updated: cannot update index idx"))
        .unwrap_or_else(|| panic!("no error for the index: {}", run.stderr));
    assert!(
        said.contains("checksum mismatch in the set at byte"),
        "{said}"
    );
    assert!(run.stderr.contains("index not updated"), "{}", run.stderr);
    assert_eq!(contents(&idx), before, "--update wrote");
    // `index info` checks every set.
    let err = refused(&t, &["index", "info", "--index", "idx"]);
    assert!(
        err.contains("checksum mismatch in the set at byte"),
        "{err}"
    );
}

#[test]
fn index_a_forged_header_declaring_huge_sections_is_an_error_not_an_allocation() {
    let t = one_document_index();
    let idx = t.join("idx");
    let seg = idx.join("seg-000001.dfs");
    let good = fs::read(&seg).unwrap();
    // The dictionaries section declared 8 GiB long, the file made sparse to match, and the
    // header and the manifest re-checksummed: what a forger who can write the index can do.
    let huge: u64 = 8 << 30;
    let mut forged = good.clone();
    let dicts_len = 88 + 24 * 6;
    let old_len = u64::from_le_bytes(forged[dicts_len..dicts_len + 8].try_into().unwrap());
    forged[dicts_len..dicts_len + 8].copy_from_slice(&(old_len + huge).to_le_bytes());
    let tombs_at = 80 + 24 * 7;
    let old_at = u64::from_le_bytes(forged[tombs_at..tombs_at + 8].try_into().unwrap());
    forged[tombs_at..tombs_at + 8].copy_from_slice(&(old_at + huge).to_le_bytes());
    let sum = xxh3_64(&forged[..280]);
    forged[280..288].copy_from_slice(&sum.to_le_bytes());
    // The tombstones (none) move to the end; the dictionaries grow by a hole.
    let tail = forged.split_off(old_at as usize);
    let f = fs::File::create(&seg).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&forged, 0).unwrap();
    f.write_all_at(&tail, old_at + huge).unwrap();
    f.set_len(old_at + huge + tail.len() as u64).unwrap();
    let new_len = old_at + huge + tail.len() as u64;
    assert_eq!(f.metadata().unwrap().len(), new_len);
    drop(f);
    forge_manifest(&idx, |m| {
        m["segments"][0]["bytes"] = json!(new_len);
        m["segments"][0]["header_sum"] = json!(format!("{:016x}", xxh3_64(&forged[..288])));
    });
    for args in [
        &["scan", "new", "--against", "idx"][..],
        &["index", "info", "--index", "idx"],
    ] {
        let err = refused(&t, args);
        assert!(
            err.contains("seg-000001.dfs: corrupt index segment: 8589934596 bytes of dictionaries is more than a segment holds"),
            "{args:?}: {err}"
        );
    }
    fs::remove_file(&seg).unwrap();
}

#[test]
fn index_a_forged_next_segment_number_is_an_error_and_the_index_stays_usable() {
    let t = one_document_index();
    let idx = t.join("idx");
    forge_manifest(&idx, |m| m["next_segment"] = json!(u64::MAX));
    let before = contents(&idx);
    // Before: a debug build panicked on the overflow; a release build wrapped to 0 and wrote
    // a manifest no later run would open.
    let run = t.run(&["scan", "new", "--against", "idx", "--update"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "manifest: its next segment number, 18446744073709551615, leaves none for a new \
             segment (a damaged or forged manifest); build the index again"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.json()["clusters"].as_array().unwrap().len(),
        1,
        "the report is printed"
    );
    assert_eq!(contents(&idx), before, "nothing is written");
    assert_eq!(names(&idx), index_files(&[1]));
    assert_eq!(generation_and_documents(&t, "idx"), (1, 1));
    report(&t, &["scan", "new", "--against", "idx"]);
}
