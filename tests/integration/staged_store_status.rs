//! `stage status` with the work directory on S3 (moto, on loopback): one listing of the work
//! directory shows every work file's size and ETag, compared with those the store gave the file
//! when its stage wrote it, instead of a GET of every file. A file written again, copied in
//! from another run or place, or deleted is still marked to run again; a summary without the
//! ETags (an earlier build's, or a Python engine's) is checked by reading its files, as before.
//! And a task reads `run.json` once.

use super::staged_store::{corpus_on_s3, local_driver, run_in};
use super::util::s3::{proxy, S3};
use super::util::TestDir;

/// The requests made by `dupfind ARGS` run in `t` through a proxy in front of `s3`, each as
/// `METHOD /bucket/key?query`, and its outcome.
fn logged(s3: &S3, t: &TestDir, args: &[&str]) -> (super::util::Run, Vec<String>) {
    let (port, faults) = proxy(s3.port);
    let r = run_in(s3, t.path(), &format!("http://127.0.0.1:{port}"), args);
    let log = faults.log.lock().unwrap().clone();
    (r, log)
}

/// True for a request that lists a prefix.
fn is_listing(request: &str) -> bool {
    request.contains("list-type=2") || request.contains("delimiter=")
}

#[test]
fn stage_status_on_s3_lists_the_work_directory_instead_of_fetching_each_work_file() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let layout = ["--shards", "5", "--parts", "3", "--work", "s3://bkt/w"];
    let r = local_driver(&s3, &t, &[&layout[..], &["s3://bkt/c/"]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let keys = s3.keys("bkt", "w/");
    let files = keys.iter().filter(|k| k.ends_with(".parquet")).count();
    let summaries = keys.iter().filter(|k| k.ends_with(".json")).count();
    assert!(files > 40, "{keys:?}");

    let (status, log) = logged(&s3, &t, &["stage", "status", "--work", "s3://bkt/w"]);
    assert_eq!(status.code(), 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("every task is done"),
        "{}",
        status.stdout
    );
    // run.json and the summaries are read whole (their lineage); the work files are seen in
    // the listing alone: the prefix's first level, then each stage's directory (a thousand
    // keys a page).
    let (listings, reads): (Vec<&String>, Vec<&String>) = log.iter().partition(|r| is_listing(r));
    for r in &reads {
        assert!(
            r.starts_with("GET /bkt/w/") && r.ends_with(".json"),
            "{r} among {log:#?}"
        );
    }
    assert_eq!(reads.len(), summaries, "{log:#?}");
    assert!(listings.len() <= 1 + 6, "{listings:#?}");
    assert!(
        log.len() < files,
        "{} requests for {files} work files: {log:#?}",
        log.len()
    );
    // `--todo STAGE` (what `run-local.sh --resume` asks before each stage) reads the stages up
    // to that one.
    let todo = ["stage", "status", "--work", "s3://bkt/w", "--todo", "group"];
    let (status, log) = logged(&s3, &t, &todo);
    assert_eq!(status.stdout, "", "{}", status.stderr);
    for later in ["components/", "route/", "verify/"] {
        let read = format!("GET /bkt/w/{later}");
        assert!(!log.iter().any(|r| r.starts_with(&read)), "{log:#?}");
    }

    // The summaries record what the store said of each file: its size and ETag.
    let sign: serde_json::Value =
        serde_json::from_slice(&s3.get("bkt/w/sign/shard-000002.json").unwrap()).unwrap();
    let docs = "sign/shard-000002.docs.parquet";
    let object = &sign["lineage"]["objects"][docs];
    let size = s3.get(&format!("bkt/w/{docs}")).unwrap().len();
    assert_eq!(object["size"], size, "{sign:#}");
    assert!(
        object["etag"].as_str().is_some_and(|e| !e.contains('"')),
        "{sign:#}"
    );

    // A summary missing is told by the listing too (no HEAD of it).
    s3.delete("bkt/w/verify/part-000002.json");
    let (status, log) = logged(&s3, &t, &["stage", "status", "--work", "s3://bkt/w"]);
    assert!(
        status.stdout.contains("partition 2: missing"),
        "{}",
        status.stdout
    );
    assert!(!log.iter().any(|r| r.starts_with("HEAD ")), "{log:#?}");

    // Each task reads the run's plan once (it read it three times: the count's check, the
    // thread pool's size, the stage).
    for task in [
        &["verify", "--part", "1/3"][..],
        &["sign", "--shard", "1/5"],
        &["components"],
    ] {
        let args = [&["stage"][..], task, &["--work", "s3://bkt/w"]].concat();
        let (r, log) = logged(&s3, &t, &args);
        assert_eq!(r.code(), 0, "{task:?}: {}", r.stderr);
        let plans = log.iter().filter(|r| *r == "GET /bkt/w/run.json").count();
        assert_eq!(plans, 1, "{task:?}: {log:#?}");
    }
}

#[test]
fn a_work_file_written_again_copied_in_or_deleted_on_s3_marks_its_producer_to_run_again() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let layout = ["--shards", "2", "--parts", "2", "--work", "s3://bkt/w"];
    let first = local_driver(&s3, &t, &[&layout[..], &["s3://bkt/c/"]].concat());
    assert_eq!(first.code(), 0, "{}", first.stderr);
    // Another run of the same inputs, signed: its files are in the same places as the first's.
    let end = s3.endpoint();
    let other = ["--work", "s3://bkt/w2"];
    let init = [
        &["stage", "init", "--shards", "2", "--parts", "2"][..],
        &other,
        &["s3://bkt/c/"],
    ];
    let r = run_in(&s3, t.path(), &end, &init.concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let r = run_in(
        &s3,
        t.path(),
        &end,
        &[&["stage", "sign", "--shard", "0/2"][..], &other].concat(),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);

    // Another run's file copied in, one of another place, one deleted, one with a bit flipped
    // (its size unchanged).
    let docs = "w/sign/shard-000000.docs.parquet";
    s3.put(
        &format!("bkt/{docs}"),
        s3.get("bkt/w2/sign/shard-000000.docs.parquet").unwrap(),
    );
    s3.delete("bkt/w/sign/shard-000001.keys-000000.parquet");
    s3.put(
        "bkt/w/group/part-000001.parquet",
        s3.get("bkt/w/group/part-000000.parquet").unwrap(),
    );
    let clusters = "bkt/w/verify/part-000000.clusters.parquet";
    let mut bytes = s3.get(clusters).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    s3.put(clusters, bytes);

    let status = run_in(
        &s3,
        t.path(),
        &end,
        &["stage", "status", "--work", "s3://bkt/w"],
    );
    assert_eq!(status.code(), 0, "{}", status.stderr);
    for said in [
        "shard 0: invalid: sign/shard-000000.docs.parquet, which it wrote, is damaged: its ETag",
        "shard 1: invalid: sign/shard-000001.keys-000000.parquet, which it wrote, is missing",
        "partition 1: invalid: group/part-000001.parquet, which it wrote, is damaged: it has",
        "partition 0: invalid: verify/part-000000.clusters.parquet, which it wrote, is damaged",
    ] {
        assert!(status.stdout.contains(said), "{said}: {}", status.stdout);
    }
    let todo = run_in(
        &s3,
        t.path(),
        &end,
        &["stage", "status", "--work", "s3://bkt/w", "--todo", "sign"],
    );
    assert_eq!(todo.stdout, "0\n1\n", "{}", todo.stderr);
    let report = run_in(
        &s3,
        t.path(),
        &end,
        &["stage", "report", "--work", "s3://bkt/w"],
    );
    assert_eq!(
        (report.code(), report.stdout.as_str()),
        (2, ""),
        "{}",
        report.stderr
    );

    let again = local_driver(&s3, &t, &["--resume", "--work", "s3://bkt/w"]);
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, first.stdout);
}

#[test]
fn a_summary_without_the_recorded_etags_is_checked_by_reading_its_files() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus_on_s3(&s3, &t);
    let end = s3.endpoint();
    let work = ["--work", "s3://bkt/w"];
    let stage = |args: &[&str]| {
        let args = [&["stage", args[0]][..], &work, &args[1..]].concat();
        let r = run_in(&s3, t.path(), &end, &args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        r
    };
    stage(&["init", "--shards", "2", "--parts", "2", "s3://bkt/c/"]);
    stage(&["sign", "--shard", "0/2"]);
    stage(&["sign", "--shard", "1/2"]);
    // Shard 0's summary as an earlier build wrote it: no `objects`, sealed again.
    let summary = "bkt/w/sign/shard-000000.json";
    let mut v: serde_json::Value = serde_json::from_slice(&s3.get(summary).unwrap()).unwrap();
    assert!(v["lineage"]["objects"].is_object(), "{v:#}");
    v["lineage"].as_object_mut().unwrap().remove("objects");
    v.as_object_mut().unwrap().remove("seal");
    let json = serde_json::to_vec_pretty(&v).unwrap();
    s3.put(summary, dupfind::api::seal_summary(&json, true));

    let (status, log) = logged(&s3, &t, &["stage", "status", "--work", "s3://bkt/w"]);
    assert!(
        status.stdout.contains("sign        2 of 2 done"),
        "{}",
        status.stdout
    );
    // Its files are fetched for their CRC-32s; shard 1's are seen in the listing.
    let fetched: Vec<&String> = log.iter().filter(|r| r.ends_with(".parquet")).collect();
    assert!(!fetched.is_empty(), "{log:#?}");
    for r in &fetched {
        assert!(
            r.starts_with("GET /bkt/w/sign/shard-000000."),
            "{r} among {log:#?}"
        );
    }

    // A bit flipped in one of them: the CRC-32 tells, as before.
    let docs = "bkt/w/sign/shard-000000.docs.parquet";
    let mut bytes = s3.get(docs).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x01;
    s3.put(docs, bytes);
    let status = stage(&["status"]);
    assert!(
        status.stdout.contains(
            "shard 0: invalid: sign/shard-000000.docs.parquet, which it wrote, is damaged: its \
             CRC-32 is"
        ),
        "{}",
        status.stdout
    );
}
