//! The staged pipeline with its work directory and inputs on a real S3 server (moto, on
//! loopback, started by the test): `run-local.sh --work s3://…` prints `scan`'s report byte for
//! byte, and a work file missing, truncated or left by a task whose summary never got written
//! is an error naming its URL, never a report.

use std::sync::atomic::Ordering;

use super::staged::{assert_same_run, corpus, first_difference, local_driver_command};
use super::util::s3::{proxy, S3};
use super::util::{bin, Run, TestDir, Unprivileged};

/// `dupfind ARGS` run in `dir` against the store at `endpoint`.
pub(super) fn run_in(s3: &S3, dir: &std::path::Path, endpoint: &str, args: &[&str]) -> Run {
    let mut cmd = Unprivileged::Direct.command(dir, args);
    s3.env(&mut cmd, endpoint);
    super::util::run_command(cmd)
}

/// contrib/staged/run-local.sh with `args`, in `t`, against `s3`, one task at a time (so that
/// the stages' stderr comes in the order scan's does).
pub(super) fn local_driver(s3: &S3, t: &TestDir, args: &[&str]) -> Run {
    let mut cmd = local_driver_command(
        t,
        &[&["--dupfind", bin(), "--jobs", "1"][..], args].concat(),
    );
    s3.env(&mut cmd, &s3.endpoint());
    super::util::run_command(cmd)
}

/// The staged corpus, with a file over `--max-size` (a warning), on S3 under `bkt/c/`.
pub(super) fn corpus_on_s3(s3: &S3, t: &TestDir) {
    corpus(t);
    t.write("c/d1/large.txt", "word ".repeat(3000));
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("c"), "bkt/c/");
}

#[test]
fn run_local_with_work_and_inputs_on_s3_prints_scans_report_byte_for_byte() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let opts = ["--max-size", "10000", "s3://bkt/c/"];
    let scan = run_in(&s3, t.path(), &end, &[&["scan"][..], &opts].concat());
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    assert!(scan.stderr.contains("over --max-size"), "{}", scan.stderr);
    assert!(scan.stdout.contains("s3://bkt/c/d0/chain-a.txt"));
    let layout = ["--shards", "3", "--parts", "2", "--work", "s3://bkt/runs/w"];
    let r = local_driver(&s3, &t, &[&layout[..], &opts].concat());
    assert_same_run(&scan, &r, "run-local.sh --work s3://bkt/runs/w");
    // Every work file is an object below the prefix, under its name on disk; nothing local.
    let keys = s3.keys("bkt", "runs/w/");
    for name in [
        "runs/w/run.json",
        "runs/w/init/inputs.parquet",
        "runs/w/sign/shard-000002.keys-000001.parquet",
        "runs/w/group/part-000001.json",
        "runs/w/components/summary.json",
        "runs/w/route/part-000001/shard-000002.parquet",
        "runs/w/verify/part-000001.clusters.parquet",
    ] {
        assert!(keys.iter().any(|k| k == name), "{name} in {keys:?}");
    }
    assert!(!t.join("s3:").exists());

    // A run that stopped part way: --resume runs what has no summary, and only that.
    let signed = s3.get("bkt/runs/w/sign/shard-000000.docs.parquet").unwrap();
    for lost in [
        "bkt/runs/w/sign/shard-000002.json",
        "bkt/runs/w/verify/part-000001.json",
    ] {
        s3.delete(lost);
    }
    let again = local_driver(&s3, &t, &["--resume", "--work", "s3://bkt/runs/w"]);
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, scan.stdout);
    assert!(s3.get("bkt/runs/w/sign/shard-000002.json").is_some());
    let kept = s3.get("bkt/runs/w/sign/shard-000000.docs.parquet").unwrap();
    assert!(kept == signed, "shard 0 was not signed again");
    // Without --resume, a prefix holding a run is refused.
    let refused = local_driver(&s3, &t, &[&layout[..], &opts].concat());
    assert_eq!(refused.code(), 2);
    assert!(refused.stderr.contains("holds a run"), "{}", refused.stderr);

    // --write-dataset to S3: the shards' parts in name order are scan's part.
    let ds = ["--write-dataset", "s3://bkt/ds/", "s3://bkt/c/"];
    let w2 = [
        "--shards",
        "2",
        "--parts",
        "2",
        "--work",
        "s3://bkt/runs/w2",
    ];
    let r = local_driver(&s3, &t, &[&w2[..], &ds].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let one = [
        "scan",
        "--write-dataset",
        "s3://bkt/scan-ds/",
        "s3://bkt/c/",
    ];
    let scanned = run_in(&s3, t.path(), &end, &one);
    assert_eq!(scanned.code(), 0, "{}", scanned.stderr);
    let parts = s3.keys("bkt", "ds/");
    assert_eq!(parts, ["ds/part-00000.jsonl", "ds/part-00001.jsonl"]);
    let staged: Vec<u8> = (parts.iter())
        .flat_map(|k| s3.get(&format!("bkt/{k}")).unwrap())
        .collect();
    let scanned = String::from_utf8(s3.get("bkt/scan-ds/part-00000.jsonl").unwrap()).unwrap();
    let staged = String::from_utf8(staged).unwrap();
    assert!(staged == scanned, "{}", first_difference(&scanned, &staged));
}

#[test]
fn a_missing_truncated_or_unconfirmed_work_file_on_s3_is_named_and_never_trusted() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let w = "s3://bkt/w";
    // Started in a directory that is gone by the time the tasks run: with every input a URL,
    // they run where they are.
    t.mkdir("gone");
    let init = [
        "stage",
        "init",
        "--work",
        w,
        "--shards",
        "2",
        "--parts",
        "2",
        "s3://bkt/c/",
    ];
    let r = run_in(&s3, &t.join("gone"), &end, &init);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    std::fs::remove_dir(t.join("gone")).unwrap();
    let stage = |args: &[&str]| run_in(&s3, t.path(), &end, &[&["stage"][..], args].concat());
    for (s, flag, n) in [("sign", "--shard", 2), ("group", "--part", 2)] {
        for i in 0..n {
            let r = stage(&[s, "--work", w, flag, &format!("{i}/{n}")]);
            assert_eq!(r.code(), 0, "{s} {i}: {}", r.stderr);
        }
    }

    // A missing key file: named by its URL, and the stage writes nothing.
    let keys = "bkt/w/sign/shard-000001.keys-000000.parquet";
    let bytes = s3.get(keys).unwrap();
    let grouped = s3.get("bkt/w/group/part-000000.json").unwrap();
    s3.delete(keys);
    let r = stage(&["group", "--work", w, "--part", "0/2"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("s3://{keys} is missing")),
        "{}",
        r.stderr
    );
    // Truncated: named as such.
    s3.put(keys, &bytes[..bytes.len() / 2]);
    let r = stage(&["group", "--work", w, "--part", "0/2"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("s3://{keys} is damaged or truncated")),
        "{}",
        r.stderr
    );
    assert!(s3.get("bkt/w/group/part-000000.json").unwrap() == grouped);
    s3.put(keys, &bytes);
    // A missing summary: what to run.
    let summary = "bkt/w/group/part-000001.json";
    let confirmed = s3.get(summary).unwrap();
    s3.delete(summary);
    let r = stage(&["components", "--work", w]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "s3://bkt/w/group/part-000001.json is missing: partition 1 has not been grouped"
        ),
        "{}",
        r.stderr
    );
    let status = stage(&["status", "--work", w, "--todo", "group"]);
    assert_eq!(status.stdout, "1\n", "{}", status.stderr);
    s3.put(summary, &confirmed);

    // A task run again whose summary never got written (the store refused it; a kill does the
    // same): its new Parquet file is in place, but no later stage takes it for valid.
    let (port, faults) = proxy(s3.port);
    let proxied = format!("http://127.0.0.1:{port}");
    faults
        .denied
        .lock()
        .unwrap()
        .push("/bkt/w/group/part-000001.json".into());
    let before = s3.get("bkt/w/group/part-000001.parquet").unwrap();
    let r = run_in(
        &s3,
        t.path(),
        &proxied,
        &["stage", "group", "--work", w, "--part", "1/2"],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("s3://bkt/w/group/part-000001.json"),
        "{}",
        r.stderr
    );
    assert!(faults.seen.load(Ordering::SeqCst) > 0);
    let after = s3.get("bkt/w/group/part-000001.parquet").unwrap();
    assert!(after != before, "the Parquet file was written again");
    assert!(s3.get(summary).unwrap() == confirmed);
    let r = stage(&["components", "--work", w]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("group/part-000001.parquet"),
        "{}",
        r.stderr
    );
    assert!(s3.get("bkt/w/components/summary.json").is_none());
}

#[test]
fn a_stage_on_a_work_url_in_a_missing_bucket_says_no_such_bucket_not_run_init() {
    // Review finding 08: the bucket's 404 was taken for a missing run.json ("run `dupfind stage
    // init` first"), and run-local.sh --resume, which asks `stage status`, started a new run.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let w = "s3://bkt-typo/w";
    for args in [
        &["status", "--work", w][..],
        &["sign", "--work", w, "--shard", "0/1"],
        &["report", "--work", w],
    ] {
        let r = run_in(&s3, t.path(), &end, &[&["stage"][..], args].concat());
        assert_eq!(r.code(), 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("s3://bkt-typo/w/run.json: no such bucket"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("stage init"), "{args:?}: {}", r.stderr);
    }
    let r = local_driver(&s3, &t, &["--resume", "--work", w, "s3://bkt/c/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("no such bucket"), "{}", r.stderr);
    assert!(!r.stderr.contains("inputs.parquet"), "{}", r.stderr);
}

#[test]
fn a_staged_run_claims_its_dataset_prefix_on_s3_another_run_is_refused_it() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let init = |work: &str| {
        let args = [
            "stage",
            "init",
            "--work",
            work,
            "--write-dataset",
            "s3://bkt/ds/",
            "s3://bkt/c/",
        ];
        run_in(&s3, t.path(), &end, &args)
    };
    let a = init("s3://bkt/wa");
    assert_eq!(a.code(), 0, "{}", a.stderr);
    assert_eq!(s3.keys("bkt", "ds/"), ["ds/_dupfind_run"]);
    let b = init("s3://bkt/wb");
    assert_eq!(b.code(), 2, "{}", b.stderr);
    assert!(
        b.stderr.contains("is claimed by the staged run") && b.stderr.contains("s3://bkt/wa"),
        "{}",
        b.stderr
    );
    assert_eq!(s3.keys("bkt", "ds/"), ["ds/_dupfind_run"]);
}

#[test]
fn a_staged_dataset_part_lost_or_changed_on_s3_marks_its_shard_to_run_again() {
    // Review 6 finding 06, on a store: a part is checked by one listing of the dataset's
    // directory (its size and ETag), as on disk by a stat (the report) or a read (`stage
    // status`).
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let run = |args: &[&str]| run_in(&s3, t.path(), &end, args);
    let init = [
        "stage",
        "init",
        "--work",
        "s3://bkt/w",
        "--shards",
        "2",
        "--write-dataset",
        "s3://bkt/ds/",
        "s3://bkt/c/",
    ];
    let r = run(&init);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    super::dataset::stages_through_dataset(run, "s3://bkt/w", 2);
    let written = s3.get("bkt/ds/part-00000.jsonl").unwrap();
    let mut bytes = written.clone();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    s3.put("bkt/ds/part-00000.jsonl", bytes);
    s3.delete("bkt/ds/part-00001.jsonl");
    let status = run(&["stage", "status", "--work", "s3://bkt/w"]);
    for said in [
        "s3://bkt/ds/part-00000.jsonl, a part of the dataset it wrote, changed since",
        "s3://bkt/ds/part-00001.jsonl, a part of the dataset it wrote, is missing",
    ] {
        assert!(status.stdout.contains(said), "{said}: {}", status.stdout);
    }
    let refused = |said: &str| {
        let report = run(&["stage", "report", "--work", "s3://bkt/w"]);
        assert_eq!((report.code(), report.stdout.as_str()), (2, ""));
        assert!(report.stderr.contains(said), "{said}: {}", report.stderr);
    };
    // The report sees the parts' ETags in its listing too: a part changed at its size is
    // refused, which a HEAD of its size alone let through.
    refused("part-00000.jsonl, a part of the dataset it wrote, changed since: its ETag");
    s3.put("bkt/ds/part-00000.jsonl", written);
    refused("part-00001.jsonl, a part of the dataset it wrote, is missing");
    assert_eq!(
        s3.keys("bkt", "ds/"),
        ["ds/_dupfind_run", "ds/part-00000.jsonl"]
    );
    let resume = local_driver(&s3, &t, &["--resume", "--work", "s3://bkt/w"]);
    assert_eq!(resume.code(), 0, "{}", resume.stderr);
    assert_eq!(
        s3.keys("bkt", "ds/"),
        ["ds/part-00000.jsonl", "ds/part-00001.jsonl"]
    );
}
