//! Document dumps: JSON Lines (plain, gzip, zstd; ids, nested fields, bad lines, CRLF, empty),
//! compressed plain files, and `--files-from` lists.

use std::fs;
use std::io::Write;
use std::process::Stdio;

use serde_json::{json, Value};

use super::util::schema::assert_schema;
use super::util::{cluster_members, edit, text, wait_guarded, word_jaccard, TestDir};

/// `{"path", "line", "id"}` of every member of every cluster (id null when absent).
fn members(report: &Value) -> Vec<Vec<(String, u64, Value)>> {
    cluster_members(report, |m| {
        (
            m["path"].as_str().unwrap().to_string(),
            m["line"].as_u64().unwrap_or(0),
            m.get("id").cloned().unwrap_or(Value::Null),
        )
    })
}

fn line(v: Value) -> String {
    serde_json::to_string(&v).unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

/// A dump of five records: 1 and 4 are near-duplicates (2 words of 300 edited), 2, 3, 5
/// unrelated; record 4 has no id.
fn five_records() -> (String, String) {
    let a = text(501, 300);
    let a2 = edit(&a, &[30, 230]);
    assert!(word_jaccard(&a, &a2, 5) >= 0.9);
    let dump = [
        line(json!({"id": "a", "text": a})),
        line(json!({"id": "b", "text": text(502, 300)})),
        line(json!({"id": 3, "text": text(503, 300)})),
        line(json!({"text": a2})),
        line(json!({"id": "e", "text": text(505, 300)})),
    ]
    .join("\n")
        + "\n";
    (dump, a)
}

#[test]
fn json_lines_records_are_documents_named_by_file_line_and_id() {
    let t = TestDir::new();
    let (dump, _) = five_records();
    t.write("dump.jsonl", &dump);
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert_eq!(r["stats"]["documents"], 5);
    assert_eq!(r["stats"]["files_seen"], 1);
    assert_eq!(
        members(&r),
        vec![vec![
            ("./dump.jsonl".to_string(), 1, json!("a")),
            ("./dump.jsonl".to_string(), 4, Value::Null),
        ]]
    );
    // The same dump under another name is read as JSON Lines only when asked to.
    t.write("dump.txt", &dump);
    let plain = t.run(&["scan", "dump.txt"]).json();
    assert_eq!(plain["stats"]["documents"], 1);
    let forced = t.run(&["scan", "--jsonl", "dump.txt"]).json();
    assert_eq!(
        members(&forced),
        vec![vec![
            ("dump.txt".to_string(), 1, json!("a")),
            ("dump.txt".to_string(), 4, Value::Null),
        ]]
    );
}

#[test]
fn nested_text_and_id_fields_are_reached_by_dotted_paths() {
    let t = TestDir::new();
    let a = text(511, 300);
    let dump = [
        line(json!({"meta": {"url": "https://x/1"}, "body": {"text": a}})),
        line(json!({"meta": {"url": "https://x/2"}, "body": {"text": text(512, 300)}})),
        line(json!({"meta": {"url": "https://x/3"}, "body": {"text": edit(&a, &[7])}})),
    ]
    .join("\n");
    t.write("crawl.ndjson", &dump);
    let args = [
        "scan",
        "--text-field",
        "body.text",
        "--id-field",
        "meta.url",
        "crawl.ndjson",
    ];
    let r = t.run(&args).json();
    assert_eq!(
        members(&r),
        vec![vec![
            ("crawl.ndjson".to_string(), 1, json!("https://x/1")),
            ("crawl.ndjson".to_string(), 3, json!("https://x/3")),
        ]]
    );
    // With the default field names every line lacks "text": all are bad lines, and the dump
    // is one error.
    let run = t.run(&["scan", "crawl.ndjson"]);
    assert_eq!(run.code(), 2);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["bad_line"], 3);
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["errors"].as_array().unwrap().len(), 1);
    let error = r["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("no record has a \"text\" field (--text-field)"),
        "{error}"
    );
}

#[test]
fn gzip_and_zstd_dumps_stream_the_same_documents_as_plain() {
    let t = TestDir::new();
    let (dump, _) = five_records();
    t.write("plain/d.jsonl", &dump)
        .write("gz/d.jsonl.gz", gzip(dump.as_bytes()))
        .write("zst/d.jsonl.zst", zstd(dump.as_bytes()))
        // Magic bytes decide, not the name: a gzip file named .jsonl is decompressed too.
        .write("misnamed/d.jsonl", gzip(dump.as_bytes()));
    for dir in ["plain", "gz", "zst", "misnamed"] {
        let run = t.run(&["scan", dir]);
        assert_eq!(run.code(), 0, "{dir}: {}", run.stderr);
        let r = run.json();
        let found: Vec<Vec<(u64, Value)>> = members(&r)
            .into_iter()
            .map(|c| c.into_iter().map(|(_, l, id)| (l, id)).collect())
            .collect();
        assert_eq!(
            found,
            vec![vec![(1, json!("a")), (4, Value::Null)]],
            "{dir}"
        );
    }
    // Across the three dumps, each record's copies are exact duplicates of one another.
    let r = t.run(&["scan", "plain", "gz", "zst"]).json();
    assert_eq!(r["stats"]["documents"], 15);
    assert_eq!(r["stats"]["exact_groups"], 5);
    let sizes: Vec<u64> = r["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [6, 3, 3, 3]);
}

#[test]
fn a_bad_line_in_the_middle_is_reported_and_the_rest_is_kept() {
    let t = TestDir::new();
    let (dump, _) = five_records();
    let mut lines: Vec<&str> = dump.lines().collect();
    lines.insert(2, "{\"id\": \"broken\", \"text\": ");
    lines.insert(4, "[\"not\", \"an object\"]");
    lines.insert(5, "{\"id\": \"n\", \"text\": 42}");
    t.write("d.jsonl", lines.join("\n") + "\n");
    let run = t.run(&["scan", "d.jsonl"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert_eq!(r["stats"]["documents"], 5);
    assert_eq!(r["stats"]["skipped"]["bad_line"], 3);
    assert_eq!(r["stats"]["skipped"]["error"], 0);
    let errors: Vec<(u64, String)> = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["path"], "d.jsonl");
            (
                e["line"].as_u64().unwrap(),
                e["error"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[0].0, 3);
    assert!(errors[0].1.starts_with("invalid JSON"), "{errors:?}");
    assert_eq!(errors[1], (5, "not a JSON object".to_string()));
    assert_eq!(errors[2], (6, "\"text\" is not a string".to_string()));
    // The near-duplicates around the bad lines are still found, at their own line numbers.
    assert_eq!(
        members(&r),
        vec![vec![
            ("d.jsonl".to_string(), 1, json!("a")),
            ("d.jsonl".to_string(), 7, Value::Null),
        ]]
    );
    for l in [3, 5, 6] {
        assert!(
            run.stderr.contains(&format!("d.jsonl:{l}: ")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn an_empty_dump_and_crlf_line_ends_are_read_as_such() {
    let t = TestDir::new();
    let (dump, _) = five_records();
    t.write("empty.jsonl", "")
        .write("empty.jsonl.gz", gzip(b""))
        .write("crlf.jsonl", dump.replace('\n', "\r\n"));
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 5);
    assert_eq!(r["stats"]["skipped"]["bad_line"], 0);
    // The two empty dumps count as empty inputs, like empty files.
    assert_eq!(r["stats"]["skipped"]["empty"], 2);
    assert_eq!(
        members(&r),
        vec![vec![
            ("./crlf.jsonl".to_string(), 1, json!("a")),
            ("./crlf.jsonl".to_string(), 4, Value::Null),
        ]]
    );
    // The carriage return is not part of the text: the records equal those of an LF dump.
    t.write("lf.jsonl", &dump);
    let both = t.run(&["scan", "crlf.jsonl", "lf.jsonl"]).json();
    assert_eq!(both["stats"]["exact_groups"], 5);
}

#[test]
fn a_truncated_compressed_dump_keeps_what_came_before_and_exits_2() {
    let t = TestDir::new();
    let (dump, _) = five_records();
    let gz = gzip(dump.as_bytes());
    t.write("cut.jsonl.gz", &gz[..gz.len() - 40]);
    let run = t.run(&["scan", "cut.jsonl.gz"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["errors"].as_array().unwrap().len(), 1);
    let e = &r["errors"][0];
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("gzip stream is corrupt or truncated"),
        "{e}"
    );
    assert!(r["stats"]["documents"].as_u64().unwrap() >= 1, "{r}");
}

#[test]
fn compressed_plain_files_are_decompressed_by_their_magic_bytes() {
    let t = TestDir::new();
    let a = text(521, 300);
    t.write("a.txt", &a)
        .write("a-edited.txt.gz", gzip(edit(&a, &[100]).as_bytes()))
        .write("a-copy.zst", zstd(a.as_bytes()))
        .write("other.gz", gzip(text(522, 300).as_bytes()));
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 4);
    assert_eq!(r["stats"]["skipped"]["binary"], 0);
    let c = &r["clusters"][0];
    let paths: Vec<&str> = c["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["./a-copy.zst", "./a-edited.txt.gz", "./a.txt"]);
    // Bytes are those of the text, and the .zst copy is an exact duplicate of a.txt.
    assert_eq!(c["members"][0]["bytes"], a.len());
    assert_eq!(r["stats"]["exact_groups"], 1);
    // A small file that decompresses past --max-size is skipped as too large, not read whole.
    t.write("bomb.gz", gzip(&vec![b'a'; 4 << 20]));
    let r = t.run(&["scan", "--max-size", "1M", "bomb.gz"]).json();
    assert_eq!(r["stats"]["skipped"]["too_large"], 1);
}

fn files_from(t: &TestDir, list: &[u8], extra: &[&str]) -> super::util::Run {
    let mut args = vec!["scan", "--files-from", "-"];
    args.extend_from_slice(extra);
    let mut cmd = t.command(&args);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(list).unwrap();
    wait_guarded(child)
}

#[test]
fn files_from_reads_newline_and_nul_separated_lists() {
    let t = TestDir::new();
    let a = text(531, 300);
    t.write("x/a.txt", &a)
        .write("y/a-edited.txt", edit(&a, &[5]))
        .write("y/with space.txt", edit(&a, &[250]))
        .write("z/not-listed.txt", &a);
    let expected = vec![
        "x/a.txt".to_string(),
        "y/a-edited.txt".to_string(),
        "y/with space.txt".to_string(),
    ];
    let paths = |r: &Value| -> Vec<String> {
        r["clusters"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap().to_string())
            .collect()
    };
    // CR LF line ends (a list written on Windows) are fine too.
    let run = files_from(&t, b"x/a.txt\ny/a-edited.txt\r\n\ny/with space.txt\n", &[]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 3);
    assert_eq!(paths(&r), expected);
    let run = files_from(&t, b"x/a.txt\0y/a-edited.txt\0y/with space.txt\0", &["-0"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(paths(&run.json()), expected);
    // From a file, and mixed with a directory listed and a path given on the command line.
    t.write("list.txt", "y\n");
    let r = t
        .run(&["scan", "--files-from", "list.txt", "x/a.txt"])
        .json();
    assert_eq!(paths(&r), ["x/a.txt", "y/a-edited.txt", "y/with space.txt"]);
}

#[test]
fn a_missing_file_in_the_list_is_an_error_and_the_rest_is_scanned() {
    let t = TestDir::new();
    let a = text(541, 300);
    t.write("a.txt", &a).write("b.txt", edit(&a, &[9]));
    let run = files_from(&t, b"a.txt\nmissing.txt\nb.txt\n", &[]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert_eq!(r["stats"]["documents"], 2);
    assert_eq!(r["clusters"].as_array().unwrap().len(), 1);
    assert_eq!(r["errors"].as_array().unwrap().len(), 1);
    assert_eq!(r["errors"][0]["path"], "missing.txt");
    assert!(run.stderr.contains("missing.txt"), "{}", run.stderr);
    // -0 without --files-from is a usage error.
    let run = t.run(&["scan", "-0", "."]);
    assert_eq!(run.code(), 2);
    assert!(run.stdout.is_empty());
}

#[test]
fn a_list_that_is_no_list_is_refused_not_read_into_memory() {
    let t = TestDir::new();
    let a = text(542, 300);
    t.write("a.txt", &a).write("b.txt", edit(&a, &[9]));
    // /dev/zero has no new line: the first name never ends.
    let run = t.run(&["scan", "--files-from", "/dev/zero"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("name 1 is longer than 64 KiB"),
        "{}",
        run.stderr
    );
    // A name just under 64 KiB with its CR is still a name (of a file that does not exist), and
    // CR LF lines are read.
    let mut list = vec![b'x'; (64 << 10) - 1];
    list.extend_from_slice(b"\r\na.txt\r\nb.txt\r\n");
    let run = files_from(&t, &list, &[]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 2);
    assert_eq!(r["clusters"].as_array().unwrap().len(), 1);
    assert_eq!(r["errors"].as_array().unwrap().len(), 1);
}

#[test]
fn dump_records_are_verified_exactly_with_pairs_and_strict_clusters() {
    // Exact verification and --pairs read the records' texts again (from the spill), so the
    // reported similarities are exact Jaccard, equal to an independent computation.
    let t = TestDir::new();
    let (dump, a) = five_records();
    t.write("d.jsonl.zst", zstd(dump.as_bytes()));
    let a2 = edit(&a, &[30, 230]);
    let want = word_jaccard(&a, &a2, 5);
    for cluster in ["components", "strict"] {
        let run = t.run(&["scan", "--pairs", "--cluster", cluster, "d.jsonl.zst"]);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let r = run.json();
        let p = &r["clusters"][0]["pairs"][0];
        assert!(
            (p["similarity"].as_f64().unwrap() - want).abs() < 1e-12,
            "{p}"
        );
        assert!((p["jaccard"].as_f64().unwrap() - want).abs() < 1e-12, "{p}");
        assert!(p["shared_shingles"].as_u64().unwrap() > 250, "{p}");
    }
}

#[test]
fn only_the_first_ten_bad_lines_of_a_dump_are_warned_about_and_all_are_listed() {
    let t = TestDir::new();
    let mut lines: Vec<String> = (0..12).map(|i| format!("not json {i}")).collect();
    lines.push(line(json!({"id": "ok", "text": text(551, 50)})));
    t.write("bad.jsonl", lines.join("\n"));
    let run = t.run(&["scan", "bad.jsonl"]);
    assert_eq!(run.code(), 2);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["bad_line"], 12);
    assert_eq!(r["errors"].as_array().unwrap().len(), 12);
    assert_eq!(r["stats"]["documents"], 1);
    let warned: Vec<&str> = run
        .warnings()
        .into_iter()
        .filter(|l| l.contains("bad.jsonl:") && l.contains("invalid JSON"))
        .collect();
    assert_eq!(warned.len(), 10, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bad.jsonl: 2 more bad lines (listed in the report's errors)"),
        "{}",
        run.stderr
    );
}

#[test]
fn only_the_dotted_fields_matter_not_a_huge_number_or_deep_nesting_beside_them() {
    let t = TestDir::new();
    let a = line(json!(text(521, 300)));
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    // Written by hand: serde_json would not write 1e400 or nest 300 deep.
    let dump = [
        format!(r#"{{"meta":{{"url":"u1","n":1e400}},"body":{{"text":{a},"deep":{deep}}}}}"#),
        format!(r#"{{"x":-1e999,"d":{deep},"meta":{{"url":"u2"}},"body":{{"text":{a}}}}}"#),
    ]
    .join("\n");
    t.write("crawl.jsonl", &dump);
    let args = [
        "scan",
        "--text-field",
        "body.text",
        "--id-field",
        "meta.url",
        "crawl.jsonl",
    ];
    let run = t.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 2);
    assert_eq!(r["stats"]["skipped"]["bad_line"], 0);
    assert_eq!(
        members(&r),
        vec![vec![
            ("crawl.jsonl".to_string(), 1, json!("u1")),
            ("crawl.jsonl".to_string(), 2, json!("u2")),
        ]]
    );
}

#[test]
fn a_text_field_no_record_has_is_named_with_the_fields_the_first_record_has() {
    let t = TestDir::new();
    // By hand, to keep the keys in this order.
    let dump = [
        r#"{"id":1,"body":{"content":"one two","lang":"en"},"url":"u"}"#,
        r#"{"id":2,"body":{"content":"three four"}}"#,
    ]
    .join("\n");
    t.write("crawl.jsonl", &dump);
    let run = t.run(&["scan", "--text-field", "body.text", "crawl.jsonl"]);
    assert_eq!(run.code(), 2);
    let hint = "dupfind: warning: crawl.jsonl: no record has a \"body.text\" field \
                (--text-field); the first record has \"id\", \"body\", \"url\", \
                \"body.content\", \"body.lang\"";
    // Once per dump, its one error (no record has the field: no line is warned about alone).
    assert_eq!(run.warnings().len(), 1, "{}", run.stderr);
    assert!(run.warnings()[0].starts_with(hint), "{}", run.stderr);
    // A dump where some records have the field gets no hint: its other lines are bad lines.
    t.write(
        "mixed.jsonl",
        [
            line(json!({"text": "a b c"})),
            line(json!({"txt": "d e f"})),
        ]
        .join("\n"),
    );
    let run = t.run(&["scan", "mixed.jsonl"]);
    assert_eq!(run.code(), 2);
    assert!(!run.stderr.contains("no record has"), "{}", run.stderr);
    assert_eq!(run.json()["stats"]["documents"], 1);
}

#[test]
fn text_and_id_fields_are_refused_when_no_input_is_a_dump() {
    let t = TestDir::new();
    t.write("f/a.txt", text(3, 50))
        .write("f/b.txt", text(4, 50));
    for (args, said) in [
        (
            &["--text-field", "body"][..],
            "--text-field body: the inputs are files",
        ),
        (
            &["--id-field", "meta.url"][..],
            "--id-field meta.url: the inputs are files",
        ),
    ] {
        for stage in [false, true] {
            let mut all = if stage {
                vec!["stage", "init", "--work", "w"]
            } else {
                vec!["scan"]
            };
            all.extend(args);
            all.push("f");
            let r = t.run(&all);
            assert_eq!(r.code(), 2, "{all:?}: {}", r.stderr);
            assert_eq!(r.stdout, "", "{all:?}");
            assert!(r.stderr.contains(said), "{all:?}: {}", r.stderr);
        }
    }
    // The default's name restates what applies anyway; a dump among the inputs takes either.
    let r = t.run(&["scan", "--text-field", "text", "f"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    t.write(
        "f/d.jsonl",
        format!("{}\n", line(json!({"body": "a b c d e f"}))),
    );
    let r = t.run(&[
        "scan",
        "--text-field",
        "body",
        "--id-field",
        "meta.url",
        "f",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
}

#[test]
fn a_json_file_of_json_lines_is_one_document_and_said_so_once() {
    let t = TestDir::new();
    let records: String = (0..50)
        .map(|i| format!("{}\n", line(json!({"id": i, "text": text(i, 40)}))))
        .collect();
    t.write("train.json", &records)
        .write("pretty.json", "{\n  \"text\": \"a b c\"\n}\n")
        .write("one.json", line(json!({"text": text(7, 40)})));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        r.json()["stats"]["documents"],
        3,
        "each file is one document"
    );
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("JSON Lines"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(
        said[0].starts_with("dupfind: warning: ./train.json: holds JSON Lines")
            && said[0].contains("rename it *.jsonl"),
        "{}",
        said[0]
    );
    // Named for what it holds, it is a dump and nothing is said.
    fs::rename(t.join("train.json"), t.join("train.jsonl")).unwrap();
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["documents"], 52);
    assert!(!r.stderr.contains("JSON Lines"), "{}", r.stderr);
}

#[test]
fn dumps_never_reads_every_file_as_one_document_and_always_every_file_as_a_dump() {
    let t = TestDir::new();
    // A JSON log with no text field, and a Parquet file (a fixture, here not even valid).
    let log: String = (0..20)
        .map(|i| format!("{}\n", line(json!({"level": "info", "msg": text(i, 30)}))))
        .collect();
    t.write("c/app.jsonl", &log)
        .write("c/fixture.parquet", b"PAR1\0\0\0\0not a real file\0PAR1")
        .write("c/a.txt", text(5, 80))
        .write("c/b.txt", text(5, 80));
    let auto = t.run(&["scan", "c"]);
    assert_eq!(auto.code(), 2, "{}", auto.stderr);
    let never = t.run(&["scan", "--dumps", "never", "c"]);
    assert_eq!(never.code(), 0, "{}", never.stderr);
    let report = never.json();
    assert_eq!(report["stats"]["documents"], 3, "the log is one document");
    assert_eq!(report["stats"]["skipped"]["binary"], 1, "the Parquet file");
    assert_eq!(report["clusters"].as_array().unwrap().len(), 1);
    assert_eq!(never.stderr, "");

    // always: a record per line whatever the name, standard input too.
    let d = TestDir::new();
    let records: String = (0..3)
        .map(|i| format!("{}\n", line(json!({"id": i, "text": text(9, 60)}))))
        .collect();
    d.write("export.txt", &records);
    for args in [
        &["--dumps", "always"][..],
        &["--jsonl"],
        &["--jsonl", "--dumps", "always"],
    ] {
        let r = d.run(&[&["scan", "-q"][..], args, &["export.txt"]].concat());
        assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
        assert_eq!(r.json()["stats"]["documents"], 3, "{args:?}");
        assert_eq!(r.json()["clusters"][0]["size"], 3, "{args:?}");
    }
    let r = d.run(&["scan", "-q", "--dumps", "auto", "export.txt"]);
    assert_eq!(r.json()["stats"]["documents"], 1);
    for other in ["auto", "never"] {
        let r = d.run(&["scan", "--jsonl", "--dumps", other, "export.txt"]);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        assert!(r.stderr.contains("it is --dumps always"), "{}", r.stderr);
    }
}

#[test]
fn a_json_log_without_the_text_field_in_a_tree_is_one_error() {
    let t = TestDir::new();
    let log: String = (0..1000)
        .map(|i| {
            format!(
                "{}\n",
                line(json!({"ts": i, "level": "info", "msg": "started"}))
            )
        })
        .collect();
    t.write("tree/logs/app.jsonl", &log)
        .write("tree/a.txt", text(5, 80))
        .write("tree/b.txt", text(5, 80));
    let r = t.run(&["scan", "tree"]);
    assert_eq!(r.code(), 2, "an input error: {}", r.stderr);
    let report = r.json();
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], "tree/logs/app.jsonl");
    assert!(
        errors[0].get("line").is_none_or(Value::is_null),
        "{}",
        errors[0]
    );
    let error = errors[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "no record has a \"text\" field (--text-field); the first record has \"level\", \
             \"msg\", \"ts\"; none of its 1000 records is read"
        ) && error.contains("--dumps never"),
        "{error}"
    );
    assert_eq!(r.warnings().len(), 1, "{}", r.stderr);
    assert_eq!(report["clusters"].as_array().unwrap().len(), 1);
    // The same lines after a record with the field: each is a bad line, as before.
    t.write(
        "tree/logs/app.jsonl",
        format!("{}\n{log}", line(json!({"text": "one two three"}))),
    );
    let r = t.run(&["scan", "tree"]);
    assert_eq!(r.code(), 2);
    assert_eq!(r.json()["errors"].as_array().unwrap().len(), 1000);
}
