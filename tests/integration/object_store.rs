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

use super::dataset_layout::without_text;
use super::dataset_parquet::{table, write};
use super::util::s3::{free_port, proxy, S3};
use super::util::stats_but_reclaimable as stats;
use super::util::{cluster_paths, cluster_paths_below, edit, text, Run, TestDir};

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
    cluster_paths_below(report, &format!("s3://{bucket}/"))
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

/// `object store: N requests, M bytes fetched` from stderr: (N, M).
fn counts(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("object store:"))
        .unwrap_or_else(|| panic!("no counts on stderr: {stderr}"));
    let number = |words: &str| words.trim().split(' ').next().unwrap().parse().unwrap();
    let (requests, bytes) = line.split_once(", ").unwrap();
    (
        number(requests.split("object store:").nth(1).unwrap()),
        number(bytes),
    )
}

#[test]
fn a_parquet_dumps_ranges_are_fetched_once_though_verification_reads_them_again() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    let (_, texts) = records();
    t.write("p/a.parquet", parquet(&texts));
    s3.create_bucket("dumps");
    s3.put_dir(&t.join("p"), "dumps/p/");
    let end = s3.endpoint();
    let counted = |verify: &str| {
        let mut cmd = t.command(&["scan", "--verify", verify, "s3://dumps/p/"]);
        s3.env(&mut cmd, &end);
        cmd.env("DUPFIND_STORE_STATS", "1");
        let r = super::util::run_command(cmd);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(r.json()["stats"]["near_copies"], 2, "{}", r.stdout);
        counts(&r.stderr)
    };
    // Exact verification reads the candidates' texts again (rows 0, 5 and 9: three row groups
    // of four), from the ranges the first pass fetched: it costs no request more than
    // estimating from the signatures, which reads nothing again.
    let (estimate, exact) = (counted("estimate"), counted("exact"));
    assert_eq!(exact, estimate, "(requests, bytes) of exact, of estimate");
}

#[test]
fn each_object_is_one_request_and_a_listing_one_per_directory() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    // 150 documents in three directories and their parent, 30 of them near-duplicates (whose
    // texts exact verification reads again).
    let docs = 150;
    for i in 0..docs {
        let body = match i % 5 {
            0 => edit(&text(9700 + i / 5, 200), &[50]),
            _ => text(9800 + i, 200),
        };
        let dir = ["", "x/", "y/", "y/z/"][i as usize % 4];
        t.write(format!("c/{dir}d{i:03}.txt"), body);
        if i % 5 == 0 {
            t.write(format!("c/{dir}e{i:03}.txt"), text(9700 + i / 5, 200));
        }
    }
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("c"), "bkt/c/");
    let objects = docs + docs / 5;
    let mut cmd = t.command(&["scan", "-j", "2", "s3://bkt/c/"]);
    s3.env(&mut cmd, &s3.endpoint());
    cmd.env("DUPFIND_STORE_STATS", "1");
    let r = super::util::run_command(cmd);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], objects);
    assert_eq!(report["stats"]["near_copies"], docs / 5);
    // A GET per object, one more per document verification reads again (at most the pairs'
    // 60), and the listing's: the prefix's first level, then its directories (x/ and y/).
    // Nothing fetched ahead is fetched twice.
    let most = objects + 2 * docs / 5 + 3;
    let (got, _) = counts(&r.stderr);
    assert!(
        got <= most,
        "{got} requests for {objects} objects (at most {most})"
    );
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
            let (_, got) = counts(&remote.stderr);
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
fn ctrl_c_during_an_upload_aborts_it() {
    // Review finding 05: an interrupt while a dataset's part went up in parts ended the run at
    // once and left the multipart upload unfinished (its parts stored, out of sight, billed);
    // a stage had no handler at all, and died of the signal with the same result.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("out");
    t.write("big/a.txt", text(9300, 1_600_000));
    let (port, faults) = proxy(s3.port);
    let proxied = format!("http://127.0.0.1:{port}");
    // `args` run through the proxy holding every part, interrupted once one is held: 130, and
    // no upload left unfinished, no object written.
    let interrupted = |args: &[&str], prefix: &str| {
        faults.held.store(0, Ordering::SeqCst);
        faults.hold_parts.store(true, Ordering::SeqCst);
        let mut cmd = t.command(args);
        s3.env(&mut cmd, &proxied);
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while faults.held.load(Ordering::SeqCst) == 0 {
            assert!(
                start.elapsed() < super::util::HANG_GUARD,
                "no part was sent"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill(2) on the pid of a child that has not been waited for yet.
        let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(killed, 0);
        let out = child.wait_with_output().unwrap();
        faults.hold_parts.store(false, Ordering::SeqCst);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{args:?}: {stderr}");
        let (status, uploads) = s3.request("GET", "/out?uploads", b"");
        assert_eq!(status, 200);
        let uploads = String::from_utf8_lossy(&uploads);
        assert!(!uploads.contains("<Upload>"), "{args:?}: {uploads}");
        // No part (a staged run's claim on its dataset, `_dupfind_run`, is init's).
        let parts: Vec<String> = (s3.keys("out", prefix).into_iter())
            .filter(|k| !k.ends_with("_dupfind_run"))
            .collect();
        assert_eq!(parts, Vec::<String>::new(), "{args:?}");
    };
    let scan = ["scan", "big", "--max-size", "64M", "-o", "s3://out/r.json"];
    interrupted(
        &[&scan[..], &["--write-dataset", "s3://out/ds/"]].concat(),
        "",
    );

    // A staged run's dataset stage.
    let end = s3.endpoint();
    let stage = |args: &[&str]| {
        let mut cmd = t.command(&[&["stage"], args, &["--work", "run"]].concat());
        s3.env(&mut cmd, &end);
        let r = super::util::run_command(cmd);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
    };
    let init = ["init", "--shards", "1", "--parts", "1", "--max-size", "64M"];
    stage(&[&init[..], &["--write-dataset", "s3://out/sds/", "big"]].concat());
    stage(&["sign", "--shard", "0/1"]);
    stage(&["group", "--part", "0/1"]);
    stage(&["components"]);
    stage(&["route", "--shard", "0/1"]);
    stage(&["verify", "--part", "0/1"]);
    let dataset = ["stage", "dataset", "--shard", "0/1", "--work", "run"];
    interrupted(&dataset, "sds/");
}

#[test]
fn a_parquet_dataset_sent_to_s3_keeps_its_inputs_partition_directories() {
    // Review finding 09, on a store: each part under its key=value prefixes, named after its
    // input, the bytes written on disk for the same files. Issue 27: a dump without a document
    // (b.parquet, every text null or empty) is read from the store and written whole, as on
    // disk; a JSON Lines one too.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    t.mkdir("crawl/lang=en").mkdir("crawl/lang=fr");
    write(&t, "crawl/lang=en/a.parquet", &table(0, 6));
    write(&t, "crawl/lang=fr/a.parquet", &table(6, 6));
    write(&t, "crawl/lang=fr/b.parquet", &without_text(&table(12, 4)));
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("crawl"), "bkt/crawl/");
    let local = t.run(&["scan", "crawl", "--write-dataset", "ds"]);
    let end = s3.endpoint();
    let args = ["scan", "s3://bkt/crawl/", "--write-dataset", "s3://bkt/ds/"];
    let r = scan(&s3, &t, &end, &args);
    assert_eq!(r.code(), local.code(), "{}", r.stderr);
    let parts = [
        "lang=en/part-00000-00000-a.parquet",
        "lang=fr/part-00000-00001-a.parquet",
        "lang=fr/part-00000-00002-b.parquet",
    ];
    let keys: Vec<String> = parts.iter().map(|p| format!("ds/{p}")).collect();
    assert_eq!(s3.keys("bkt", "ds/"), keys);
    for part in parts {
        let sent = s3.get(&format!("bkt/ds/{part}")).unwrap();
        assert!(
            sent == std::fs::read(t.join("ds").join(part)).unwrap(),
            "{part}"
        );
    }

    let none = "{\"id\":\"y1\"}\n{\"id\":\"y2\",\"text\":\"\"}\n";
    t.write(
        "j/x.jsonl",
        format!("{}\n", serde_json::json!({"text": text(9601, 80)})),
    )
    .write("j/y.jsonl", none);
    s3.put_dir(&t.join("j"), "bkt/j/");
    let local = t.run(&["scan", "j", "--write-dataset", "jds"]);
    let part = std::fs::read_to_string(t.join("jds/part-00000.jsonl")).unwrap();
    assert!(part.ends_with(none), "{part}");
    let args = ["scan", "s3://bkt/j/", "--write-dataset", "s3://bkt/jds/"];
    let r = scan(&s3, &t, &end, &args);
    assert_eq!(r.code(), local.code(), "{}", r.stderr);
    let sent = s3.get("bkt/jds/part-00000.jsonl").unwrap();
    assert_eq!(String::from_utf8(sent).unwrap(), part);
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

#[test]
fn ignore_files_below_a_url_root_are_read_as_on_disk() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    let a = text(9501, 300);
    t.write("tree/.ignore", "skipped/\n*.log\n!keep.log\n")
        .write("tree/a.txt", &a)
        .write("tree/skipped/a-copy.txt", &a)
        .write("tree/x.log", &a)
        .write("tree/keep.log", &a)
        .write("tree/repo/.gitignore", "build/\n")
        .write("tree/repo/.git/info/exclude", "*.tmp\n")
        .write("tree/repo/.git/HEAD", "ref: refs/heads/main\n")
        .write("tree/repo/build/out.txt", &a)
        .write("tree/repo/b.tmp", &a)
        .write("tree/repo/src/a2.txt", edit(&a, &[5]))
        .write("tree/plain/.gitignore", "*.txt\n")
        .write("tree/plain/a3.txt", &a)
        .write("tree/.hidden/a4.txt", &a);
    s3.create_bucket("bkt");
    s3.put_dir(&t.join("tree"), "bkt/tree/");
    let end = s3.endpoint();
    for flags in [&[][..], &["--no-ignore"], &["--hidden"]] {
        let disk = t.run(&[&["scan", "tree"][..], flags].concat());
        assert_eq!(disk.code(), 0, "{}", disk.stderr);
        let args = [&["scan", "s3://bkt/tree/"][..], flags].concat();
        let remote = scan(&s3, &t, &end, &args);
        assert_eq!(remote.code(), 0, "{}", remote.stderr);
        let report = remote.json();
        assert_eq!(
            local_clusters(&report, "bkt"),
            cluster_paths(&disk.json()),
            "{flags:?}"
        );
        assert_eq!(stats(&report), stats(&disk.json()), "{flags:?}");
    }
    // The ignore files did their work: a .gitignore outside a repository does not.
    let report = scan(&s3, &t, &end, &["scan", "s3://bkt/tree/"]).json();
    assert_eq!(report["stats"]["skipped"]["ignored"], 4);
    assert_eq!(
        local_clusters(&report, "bkt"),
        [[
            "tree/a.txt",
            "tree/keep.log",
            "tree/plain/a3.txt",
            "tree/repo/src/a2.txt"
        ]]
    );
}

#[test]
fn keys_are_taken_byte_for_byte_and_the_clis_files_are_read() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("bkt");
    let body = text(9101, 200);
    // Keys as S3 holds them: `q?x.txt` and `pct%41.txt` (escaped in the request's path).
    for key in ["data/a.txt", "data/q%3Fx.txt", "data/pct%2541.txt"] {
        s3.put(&format!("bkt/{key}"), &body);
    }
    let end = s3.endpoint();
    let r = scan(&s3, &t, &end, &["scan", "s3://bkt/data/"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        cluster_paths(&r.json()),
        vec![vec![
            "s3://bkt/data/a.txt",
            "s3://bkt/data/pct%41.txt",
            "s3://bkt/data/q?x.txt"
        ]]
    );
    // Named one by one, as listed.
    let r = scan(
        &s3,
        &t,
        &end,
        &["scan", "s3://bkt/data/q?x.txt", "s3://bkt/data/pct%41.txt"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(cluster_paths(&r.json()).len(), 1);

    // No key in the environment: the credentials `aws configure` writes, the profile
    // AWS_PROFILE names, and its region and endpoint from ~/.aws/config.
    t.write(
        "home/.aws/credentials",
        "[default]\naws_access_key_id = a\naws_secret_access_key = b\n\n\
         [work]\naws_access_key_id = c\naws_secret_access_key = d\n",
    );
    t.write(
        "home/.aws/config",
        format!("[default]\nregion = us-east-1\n[profile work]\nregion = us-east-1\nendpoint_url = {end}\n"),
    );
    let from_files = |profile: Option<&str>, endpoint: Option<&str>, home: &str| {
        let mut cmd = t.command(&["scan", "s3://bkt/data/"]);
        s3.env(&mut cmd, &end);
        cmd.env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_REGION")
            .env_remove("AWS_DEFAULT_REGION")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .env_remove("AWS_CONFIG_FILE")
            .env("DUPFIND_STORE_TIMEOUT", "2")
            .env("HOME", t.join(home));
        if let Some(p) = profile {
            cmd.env("AWS_PROFILE", p);
        }
        if endpoint.is_none() {
            cmd.env_remove("AWS_ENDPOINT_URL");
        }
        super::util::run_command(cmd)
    };
    let r = from_files(None, Some(&end), "home");
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(cluster_paths(&r.json()).len(), 1);
    let r = from_files(Some("work"), None, "home");
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(cluster_paths(&r.json()).len(), 1);
    // Without them, no keys: the store refuses.
    let r = from_files(None, Some(&end), "nohome");
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let r = from_files(Some("nosuch"), Some(&end), "home");
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("profile nosuch"), "{}", r.stderr);
}

#[test]
fn a_key_the_client_cannot_name_is_an_error_alone_and_the_rest_of_its_prefix_is_scanned() {
    // Review finding 03: one key with an empty, `.` or `..` segment (legal on S3) made the
    // client refuse the listing, so the whole prefix gave no document and one error naming it.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("bkt");
    let a = text(9400, 200);
    let mut keys = vec!["p/a.txt".to_string(), "p/b.txt".into(), "p/x/z.txt".into()];
    for k in &keys {
        s3.put(&format!("bkt/{k}"), &a);
    }
    // Unrelated texts on either side of the odd keys, in the same pages of the listing.
    for i in 0..12 {
        for (j, dir) in ["m", "y/q"].into_iter().enumerate() {
            let k = format!("p/{dir}{i:02}.txt");
            s3.put(&format!("bkt/{k}"), text(9410 + 20 * j as u64 + i, 200));
            keys.push(k);
        }
    }
    let odd = ["p/./d.txt", "p/x//c.txt", "p/y/../e.txt"];
    for k in odd {
        s3.put(&format!("bkt/{k}"), text(9401, 200));
    }
    assert_eq!(s3.keys("bkt", "p/").len(), keys.len() + odd.len());
    let end = s3.endpoint();
    let r = scan(&s3, &t, &end, &["scan", "--hidden", "s3://bkt/p/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], keys.len(), "{}", r.stderr);
    assert_eq!(
        cluster_paths(&report),
        vec![vec![
            "s3://bkt/p/a.txt",
            "s3://bkt/p/b.txt",
            "s3://bkt/p/x/z.txt"
        ]]
    );
    let errors: Vec<&str> = (report["errors"].as_array().unwrap().iter())
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(errors, odd.map(|k| format!("s3://bkt/{k}")));
    for k in odd {
        assert!(
            r.stderr.contains(&format!("s3://bkt/{k}: cannot be read")),
            "{}",
            r.stderr
        );
    }
    // Without --hidden, a `.` or `..` segment is a hidden name, as on disk.
    let r = scan(&s3, &t, &end, &["scan", "s3://bkt/p/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["documents"], keys.len());
    assert_eq!(r.json()["errors"][0]["path"], "s3://bkt/p/x//c.txt");
    // A dataset prefix holding such a key holds objects.
    let args = [
        "scan",
        "s3://bkt/p/a.txt",
        "--write-dataset",
        "s3://bkt/p/x/",
    ];
    let r = scan(&s3, &t, &end, &args);
    assert!(r.stderr.contains("already holds objects"), "{}", r.stderr);
}

#[test]
fn an_output_object_inside_the_scanned_prefix_is_never_scanned() {
    // Review finding 10: on disk an `-o` file inside the tree is skipped; on S3 the last run's
    // report was read by the next run as one more document.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("bkt");
    let a = text(9500, 200);
    s3.put("bkt/p/a.txt", &a);
    s3.put("bkt/p/b.txt", &a);
    let end = s3.endpoint();
    for root in ["s3://bkt/p/", "s3://bkt/p", "S3://bkt/p/"] {
        let args = ["scan", root, "-o", "s3://bkt/p/report.json"];
        let r = scan(&s3, &t, &end, &args);
        assert_eq!(r.code(), 0, "{root}: {}", r.stderr);
        let report: Value = serde_json::from_slice(&s3.get("bkt/p/report.json").unwrap()).unwrap();
        assert_eq!(report["stats"]["files_seen"], 2, "{root}");
        assert_eq!(report["stats"]["documents"], 2, "{root}");
    }
}

#[test]
fn an_output_url_is_checked_before_the_scan() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("bkt");
    let end = s3.endpoint();
    for (url, says) in [
        ("s3://nobucket/r.json", "no such bucket"),
        ("s3://bkt/", "names a prefix"),
        ("s3://bkt", "names a prefix"),
        ("https://example.org/r.json", "read only"),
    ] {
        let r = scan(&s3, &t, &end, &["scan", "corpus", "-o", url]);
        assert_eq!(r.code(), 2, "{url}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("-o {url}: ")) && r.stderr.contains(says),
            "{url}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("<?xml"), "{}", r.stderr);
        // Refused before any work: no report anywhere.
        assert_eq!(r.stdout, "");
    }
    let r = scan(&s3, &t, &end, &["scan", "s3://nobucket/x/", "corpus"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("warning: s3://nobucket/x/: no such bucket"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("<?xml"), "{}", r.stderr);
}

#[test]
fn a_staged_dataset_goes_to_s3_and_an_index_refuses_url_inputs() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("out");
    s3.put_dir(&t.join("corpus"), "out/corpus/");
    let end = s3.endpoint();
    let local = t.run(&["scan", "corpus", "--write-dataset", "ds"]);
    assert_eq!(local.code(), 0, "{}", local.stderr);
    let run = |args: &[&str]| {
        let r = scan(&s3, &t, &end, args);
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        r
    };
    run(&[
        "stage",
        "init",
        "--work",
        "w",
        "--shards",
        "1",
        "--parts",
        "1",
        "corpus",
        "--write-dataset",
        "s3://out/sds/",
    ]);
    for stage in [
        &["sign", "--shard", "0/1"][..],
        &["group", "--part", "0/1"],
        &["components"],
        &["route", "--shard", "0/1"],
        &["verify", "--part", "0/1"],
        &["dataset", "--shard", "0/1"],
    ] {
        run(&[&["stage", stage[0], "--work", "w"][..], &stage[1..]].concat());
    }
    let report = run(&["stage", "report", "--work", "w"]);
    assert_eq!(report.stdout, local.stdout);
    assert_eq!(s3.keys("out", "sds/"), ["sds/part-00000.jsonl"]);
    assert_eq!(
        s3.get("out/sds/part-00000.jsonl").unwrap(),
        std::fs::read(t.join("ds/part-00000.jsonl")).unwrap()
    );
    // Nothing written to a local directory named after the URL.
    assert!(!t.join("s3:").exists());

    // --against in the staged pipeline refuses URL inputs, as scan does.
    let b = t.run(&["index", "build", "-q", "--index", "idx", "corpus"]);
    assert_eq!(b.code(), 0, "{}", b.stderr);
    let r = scan(
        &s3,
        &t,
        &end,
        &[
            "stage",
            "init",
            "--work",
            "w2",
            "--against",
            "idx",
            "s3://out/corpus/",
        ],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot go into an index"), "{}", r.stderr);
    assert!(!t.join("w2/run.json").exists());
}

#[test]
fn a_scan_claims_its_dataset_prefix_while_it_writes_it() {
    // Review 6, finding 02, on S3: a scan took no claim on its prefix, so two at once both
    // wrote `part-00000.jsonl`, the later replacing the earlier.
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    corpus(&t);
    s3.create_bucket("out");
    let end = s3.endpoint();
    // A scan writing the prefix (its claim) refuses it to another scan and to a staged run.
    s3.put(
        "out/ds/_dupfind_run",
        br#"{"run":"00000000000000aa","scan":4242}"#,
    );
    let claimed = "s3://out/ds/ is being written by another scan (process 4242)";
    for args in [
        &["scan", "corpus", "--write-dataset", "s3://out/ds/"][..],
        &[
            "stage",
            "init",
            "--work",
            "w",
            "--write-dataset",
            "s3://out/ds/",
            "corpus",
        ],
    ] {
        let r = scan(&s3, &t, &end, args);
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
        assert!(r.stderr.contains(claimed), "{}", r.stderr);
        assert!(
            r.stderr.contains("remove s3://out/ds/_dupfind_run"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(s3.keys("out", "ds/"), ["ds/_dupfind_run"]);
    // Its claim gone, a scan writes the prefix and ends its own claim.
    s3.delete("out/ds/_dupfind_run");
    let r = scan(
        &s3,
        &t,
        &end,
        &["scan", "corpus", "--write-dataset", "s3://out/ds/"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(s3.keys("out", "ds/"), ["ds/part-00000.jsonl"]);
}

/// A key ending in '/' is a folder marker, as the AWS CLI and s3fs take it, never a document
/// (review 7, finding 05): one with content is skipped with a warning that names its key
/// exactly (`dir/`, not `dir`), counted as no regular file, where the listing shows a marker
/// (below the root's first level); deeper, where a listing cannot tell `x/y/` from `x/y`, the
/// error of its read names the key. An empty marker is skipped as before.
#[test]
fn a_folder_marker_with_content_is_named_by_its_key() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("bkt");
    let words = text(9050, 40);
    s3.put("bkt/in/dir/", &words);
    s3.put("bkt/in/a.txt", &words);
    s3.put("bkt/in/e/", "");
    s3.put("bkt/in/e/b.txt", text(9051, 40));
    let end = s3.endpoint();
    let r = scan(&s3, &t, &end, &["scan", "s3://bkt/in/"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let warning = format!(
        "dupfind: warning: s3://bkt/in/dir/: skipped: a folder marker (its key ends in '/'), not \
         a document, though it holds {} bytes; copy them to a key without the '/' to scan them\n",
        words.len()
    );
    assert!(r.stderr.contains(&warning), "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["errors"], serde_json::json!([]));
    let stats = &report["stats"];
    let counts = [
        &stats["files_seen"],
        &stats["documents"],
        &stats["skipped"]["not_regular"],
        &stats["skipped"]["empty"],
    ];
    assert_eq!(counts, [4, 2, 1, 1], "{}", r.stdout);

    s3.put("bkt/deep/x/y/", &words);
    s3.put("bkt/deep/x/z.txt", text(9052, 40));
    let r = scan(&s3, &t, &end, &["scan", "s3://bkt/deep/"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let error = r.json()["errors"][0]["error"].clone();
    let named = "its key is s3://bkt/deep/x/y/, ending in '/': a folder marker, not a document";
    assert!(error.as_str().unwrap().contains(named), "{error}");
}

/// `remove`, `move` and `link` act on local files (review 7, finding 03): a report of objects
/// is refused with what to do, never a URL read as a local path (`s3://bkt/x` as `s3:/bkt/x`,
/// here a local directory holding the same files); in a report of both, each object is left
/// alone with a note and the local files are acted on.
#[test]
fn acting_on_a_report_of_objects_is_refused_and_a_url_is_no_local_path() {
    let Some(s3) = S3::start() else { return };
    let t = TestDir::new();
    s3.create_bucket("bkt");
    let words = text(9060, 200);
    for i in 1..=3 {
        s3.put(&format!("bkt/tx/x{i}.txt"), &words);
        t.write(format!("s3:/bkt/tx/x{i}.txt"), &words);
    }
    let end = s3.endpoint();
    let r = scan(
        &s3,
        &t,
        &end,
        &["scan", "-q", "-o", "r.json", "s3://bkt/tx/"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    t.mkdir("attic");
    let commands: [&[&str]; 3] = [
        &["remove", "r.json"],
        &["move", "--to", "attic", "r.json"],
        &["link", "r.json"],
    ];
    for args in commands {
        let r = t.run(args);
        assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
        let refused = format!(
            "the report's members are objects of an object store (s3://bkt/tx/x1.txt, …), not \
             local files: dupfind {} acts on local files only. Nothing was done.",
            args[0]
        );
        assert!(r.stderr.contains(&refused), "{}", r.stderr);
    }
    for i in 1..=3 {
        assert!(t.join(format!("s3:/bkt/tx/x{i}.txt")).exists());
    }
    assert_eq!(std::fs::read_dir(t.join("attic")).unwrap().count(), 0);

    let other = text(9061, 200);
    t.write("loc/a.txt", &other).write("loc/b.txt", &other);
    let r = scan(
        &s3,
        &t,
        &end,
        &["scan", "-q", "-o", "both.json", "s3://bkt/tx/", "loc"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let r = t.run(&["remove", "--dry-run", "both.json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.stdout, "rm -- 'loc/b.txt'\n");
    let note = "note: s3://bkt/tx/x2.txt: not acted on: it is an object of an object store \
                (remove, move and link act on local files)";
    assert!(r.stderr.contains(note), "{}", r.stderr);
}
