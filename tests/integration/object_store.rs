//! URLs as inputs: a prefix of a real S3 server (moto, on loopback, started by the test) scanned
//! as the same files on disk are, JSON Lines and Parquet dumps on it, and its faults (a missing
//! bucket or key, refused credentials, a refused connection, a burst of 503s, a key gone since
//! its listing, a truncated object): each an error naming the URL, the rest scanned, no hang.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

use super::util::s3::{free_port, proxy, S3};
use super::util::{cluster_paths, edit, text, Run, TestDir};

/// A corpus of near-duplicate families and unrelated texts, in two directories.
fn corpus(t: &TestDir) {
    let (a, b) = (text(9001, 300), text(9002, 300));
    t.write("corpus/a1.txt", &a)
        .write("corpus/sub/a2.txt", edit(&a, &[40]))
        .write("corpus/sub/deeper/a3.txt", edit(&a, &[200, 7]))
        .write("corpus/b1.txt", &b)
        .write("corpus/b2.md", edit(&b, &[3]))
        .write("corpus/.hidden/b3.txt", &b)
        .write("corpus/c.txt", text(9003, 300))
        .write("corpus/copy-of-c.txt", text(9003, 300));
}

/// `dupfind ARGS` run in `t` against the store at `endpoint`.
fn scan(s3: &S3, t: &TestDir, endpoint: &str, args: &[&str]) -> Run {
    let mut cmd: Command = t.command(args);
    s3.env(&mut cmd, endpoint);
    super::util::run_command(cmd)
}

/// The report's clusters with `s3://bucket/` taken off every path.
fn local_clusters(report: &Value, bucket: &str) -> Vec<Vec<String>> {
    let prefix = format!("s3://{bucket}/");
    cluster_paths(report)
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|p| p.strip_prefix(&prefix).map(str::to_string).unwrap_or(p))
                .collect()
        })
        .collect()
}

/// The report's statistics but the bytes reclaimable, which count a file's blocks on disk and
/// an object's bytes.
fn stats(report: &Value) -> Value {
    let mut stats = report["stats"].clone();
    stats.as_object_mut().unwrap().remove("reclaimable_bytes");
    stats
}

#[test]
fn a_prefix_on_s3_gives_the_clusters_of_the_same_files_on_disk() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("corpus"), "bkt/corpus/");
    let disk = t.run(&["scan", "corpus"]);
    assert_eq!(disk.code(), 0, "{}", disk.stderr);
    let end = s3.endpoint();
    for root in ["s3://bkt/corpus/", "s3://bkt/corpus"] {
        let remote = scan(&s3, &t, &end, &["scan", root]);
        assert_eq!(remote.code(), 0, "{}", remote.stderr);
        let report = remote.json();
        assert_eq!(local_clusters(&report, "bkt"), cluster_paths(&disk.json()));
        assert!(cluster_paths(&report)[0][0].starts_with("s3://bkt/corpus/"));
        assert_eq!(stats(&report), stats(&disk.json()), "{root}");
    }
    // The walk's filters, as on disk.
    for filters in [
        &["-e", "txt"][..],
        &["--exclude", "sub"],
        &["--include", "b*"],
        &["--max-depth", "1"],
        &["--hidden"],
        &["--min-size", "2000"],
    ] {
        let on_disk = t.run(&[&["scan", "corpus"][..], filters].concat());
        let remote = scan(
            &s3,
            &t,
            &end,
            &[&["scan", "s3://bkt/corpus/"][..], filters].concat(),
        );
        assert_eq!(
            local_clusters(&remote.json(), "bkt"),
            cluster_paths(&on_disk.json()),
            "{filters:?}"
        );
        assert_eq!(stats(&remote.json()), stats(&on_disk.json()), "{filters:?}");
    }
    // `--files-from` lists objects by their URLs, beside local files.
    t.write(
        "list.txt",
        "s3://bkt/corpus/c.txt\ncorpus/copy-of-c.txt\ns3://bkt/corpus/sub/\n",
    );
    let listed = scan(&s3, &t, &end, &["scan", "--files-from", "list.txt"]);
    assert_eq!(listed.code(), 0, "{}", listed.stderr);
    assert_eq!(
        cluster_paths(&listed.json()),
        vec![
            vec!["corpus/copy-of-c.txt", "s3://bkt/corpus/c.txt"],
            vec![
                "s3://bkt/corpus/sub/a2.txt",
                "s3://bkt/corpus/sub/deeper/a3.txt"
            ],
        ]
    );
}

/// Twelve JSON Lines records, three of them near-duplicates of one text.
fn records() -> (String, Vec<String>) {
    let a = text(9101, 300);
    let texts: Vec<String> = (0..12u64)
        .map(|i| match i {
            0 => a.clone(),
            5 => edit(&a, &[10]),
            9 => edit(&a, &[100, 200]),
            i => text(9110 + i, 300),
        })
        .collect();
    let jsonl = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("r{i}"), "text": t}).to_string() + "\n")
        .collect();
    (jsonl, texts)
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

/// A Parquet file of `texts` with ids and a wide column no scan reads, in row groups of four.
fn parquet(texts: &[String]) -> Vec<u8> {
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("r{i}")).collect();
    let wide: Vec<String> = (0..texts.len())
        .map(|i| text(9200 + i as u64, 20_000))
        .collect();
    let col = |v: &[String]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
    let batch = RecordBatch::try_from_iter([
        ("id", col(&ids)),
        ("other", col(&wide)),
        ("text", col(texts)),
    ])
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(4))
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

/// `object store: N requests, M bytes fetched` from stderr.
fn fetched(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("object store:"))
        .unwrap_or_else(|| panic!("no counts on stderr: {stderr}"));
    line.split(", ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn zstd_json_lines_and_parquet_dumps_on_s3_read_as_on_disk() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    let (jsonl, texts) = records();
    let pq = parquet(&texts);
    t.write("d/a.jsonl.zst", zstd(jsonl.as_bytes()))
        .write("d/plain.jsonl", &jsonl)
        .write("p/a.parquet", &pq);
    s3.create_bucket("dumps");
    s3.put_dir(&t.join("d"), "dumps/d/");
    s3.put_dir(&t.join("p"), "dumps/p/");
    let end = s3.endpoint();
    for dir in ["d", "p"] {
        let disk = t.run(&["scan", dir]);
        let mut cmd = t.command(&["scan", &format!("s3://dumps/{dir}/")]);
        s3.env(&mut cmd, &end);
        cmd.env("DUPFIND_STORE_STATS", "1");
        let remote = super::util::run_command(cmd);
        assert_eq!(remote.code(), 0, "{}", remote.stderr);
        assert_eq!(
            local_clusters(&remote.json(), "dumps"),
            cluster_paths(&disk.json()),
            "{dir}"
        );
        let members = |r: &Value| {
            super::util::cluster_members::<_, Vec<_>>(r, |m| (m["line"].clone(), m["id"].clone()))
        };
        assert_eq!(members(&remote.json()), members(&disk.json()), "{dir}");
        if dir == "p" {
            // Range requests: the footer and the id and text columns, never the wide one.
            let got = fetched(&remote.stderr);
            assert!(
                got < pq.len() as u64 / 4,
                "{got} bytes fetched of a {} byte file",
                pq.len()
            );
        }
    }
}

#[test]
fn faults_are_errors_naming_the_url_and_the_rest_is_scanned() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("corpus"), "bkt/corpus/");
    let jsonl = records().0;
    let whole = zstd(jsonl.as_bytes());
    s3.put("bkt/cut/a.jsonl.zst", &whole[..whole.len() / 2]);
    let end = s3.endpoint();
    let disk = t.run(&["scan", "corpus"]).json();

    // A missing bucket, and a missing key: input errors; the local root is scanned.
    for url in ["s3://no-such-bucket/x/", "s3://bkt/no/such/key.txt"] {
        let r = scan(&s3, &t, &end, &["scan", url, "corpus"]);
        assert_eq!(r.code(), 2, "{url}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("warning: {url}: ")),
            "{}",
            r.stderr
        );
        assert_eq!(cluster_paths(&r.json()), cluster_paths(&disk));
        assert_eq!(r.json()["errors"][0]["path"], url);
    }

    // A truncated zstd dump: its error names it; nothing of it is taken for whole.
    let r = scan(&s3, &t, &end, &["scan", "s3://bkt/cut/", "corpus"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("s3://bkt/cut/a.jsonl.zst"),
        "{}",
        r.stderr
    );
    assert_eq!(cluster_paths(&r.json()), cluster_paths(&disk));

    // A refused connection: an error naming the URL within the deadline, no hang.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let r = scan(&s3, &t, &closed, &["scan", "s3://bkt/corpus/", "corpus"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("warning: s3://bkt/corpus/: "),
        "{}",
        r.stderr
    );
    assert_eq!(cluster_paths(&r.json()), cluster_paths(&disk));

    let (port, faults) = proxy(s3.port);
    let proxied = format!("http://127.0.0.1:{port}");

    // Refused credentials: the error says to check them.
    faults.refuse.store(true, Ordering::SeqCst);
    let r = scan(&s3, &t, &proxied, &["scan", "s3://bkt/corpus/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("s3://bkt/corpus/: "), "{}", r.stderr);
    assert!(r.stderr.contains("credentials"), "{}", r.stderr);
    faults.refuse.store(false, Ordering::SeqCst);

    // A burst of 503s is retried through: the same report as without.
    let clean = scan(&s3, &t, &end, &["scan", "s3://bkt/corpus/"]);
    faults.busy.store(4, Ordering::SeqCst);
    let r = scan(&s3, &t, &proxied, &["scan", "s3://bkt/corpus/"]);
    assert_eq!(faults.busy.load(Ordering::SeqCst), 0);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, clean.stdout);

    // A key deleted between the listing and its read: an input error, the rest scanned.
    faults
        .gone
        .lock()
        .unwrap()
        .push("/bkt/corpus/sub/a2.txt".into());
    let r = scan(&s3, &t, &proxied, &["scan", "s3://bkt/corpus/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["errors"][0]["path"], "s3://bkt/corpus/sub/a2.txt");
    assert!(
        r.stderr
            .contains("s3://bkt/corpus/sub/a2.txt: no such object"),
        "{}",
        r.stderr
    );
    let expected: Vec<Vec<String>> = local_clusters(&clean.json(), "bkt")
        .into_iter()
        .map(|c| c.into_iter().filter(|p| p != "corpus/sub/a2.txt").collect())
        .collect();
    assert_eq!(local_clusters(&report, "bkt"), expected);
}

#[test]
fn an_index_refuses_urls_and_says_why() {
    let t = TestDir::new();
    t.write("a.txt", "some text");
    let r = t.run(&["scan", "--against", "s3://bkt/index", "."]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("atomic rename"), "{}", r.stderr);
    let r = t.run(&["index", "build", "--index", "idx", "s3://bkt/corpus/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot go into an index"), "{}", r.stderr);
    // Every command that opens an index, and a staged run against one.
    for cmd in ["info", "compact", "prune", "upgrade"] {
        let r = t.run(&["index", cmd, "--index", "s3://bkt/index"]);
        assert_eq!(r.code(), 2, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains(
                "index s3://bkt/index: must be a local directory, not a URL: an index is \
                 committed by an atomic rename under a lock"
            ),
            "{cmd}: {}",
            r.stderr
        );
    }
    let init = ["stage", "init", "--work", "w", "--against"];
    let r = t.run(&[&init[..], &["s3://bkt/index", "."]].concat());
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("atomic rename"), "{}", r.stderr);
    assert!(!t.join("w").exists());
    t.mkdir("idx");
    let r = t.run(&[&init[..], &["idx", "s3://bkt/corpus/"]].concat());
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot go into an index"), "{}", r.stderr);
}

#[test]
fn the_report_and_the_dataset_are_written_to_s3_whole() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("out");
    let end = s3.endpoint();
    let local = t.run(&["scan", "corpus", "--write-dataset", "ds"]);
    assert_eq!(local.code(), 0, "{}", local.stderr);
    let args = [
        "scan",
        "corpus",
        "-o",
        "s3://out/r/report.json",
        "--write-dataset",
        "s3://out/ds/",
    ];
    let r = scan(&s3, &t, &end, &args);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    let report = s3.get("out/r/report.json").expect("the report's object");
    assert_eq!(String::from_utf8(report).unwrap(), local.stdout);
    let parts = s3.keys("out", "ds/");
    assert_eq!(parts, ["ds/part-00000.jsonl"]);
    let part = s3.get("out/ds/part-00000.jsonl").unwrap();
    assert_eq!(part, std::fs::read(t.join("ds/part-00000.jsonl")).unwrap());

    // A part over 8 MiB goes up in parts, visible once the upload is completed.
    let big = text(9300, 1_600_000);
    assert!(big.len() > 9 << 20);
    t.write("big/a.txt", &big);
    let args_big = ["scan", "big", "--max-size", "64M", "--write-dataset"];
    let r = scan(&s3, &t, &end, &[&args_big[..], &["s3://out/big"]].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let l = t.run(&[&args_big[..], &["big-ds"]].concat());
    assert_eq!(l.code(), 0, "{}", l.stderr);
    let part = s3.get("out/big/part-00000.jsonl").unwrap();
    assert!(part == std::fs::read(t.join("big-ds/part-00000.jsonl")).unwrap());

    // A dataset prefix that holds objects is refused before the scan, as a directory is.
    let again = scan(&s3, &t, &end, &args);
    assert_eq!(again.code(), 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("already holds objects"),
        "{}",
        again.stderr
    );

    // A write the store refuses leaves no object at all.
    let (port, faults) = proxy(s3.port);
    faults.refuse.store(true, Ordering::SeqCst);
    let proxied = format!("http://127.0.0.1:{port}");
    let r = scan(
        &s3,
        &t,
        &proxied,
        &["scan", "corpus", "-o", "s3://out/r2/report.json"],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("s3://out/r2/report.json"), "{}", r.stderr);
    assert_eq!(s3.keys("out", "r2/"), Vec::<String>::new());
}

#[test]
fn reclaimable_bytes_count_every_duplicate_object() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    let (a, b) = (text(9401, 300), text(9402, 500));
    t.write("c/a.txt", &a)
        .write("c/copy-of-a.txt", &a)
        .write("c/b.txt", &b)
        .write("c/copy-of-b.txt", &b);
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("c"), "bkt/c/");
    let r = scan(&s3, &t, &s3.endpoint(), &["scan", "s3://bkt/c/"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    // Objects have no inode to share: each duplicate frees its own bytes.
    let freed = (a.len() + b.len()) as u64;
    assert_eq!(r.json()["stats"]["reclaimable_bytes"], freed);
}
