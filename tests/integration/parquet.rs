//! Parquet dumps: rows as documents (the same report as the same records in JSON Lines), nested
//! columns, ids, missing and wrong columns, null texts, row groups, `--max-size`, damaged files,
//! compression, several files, files and rows together, and the staged pipeline.

use std::fs::File;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};

use super::util::schema::assert_schema;
use super::util::{cluster_members, edit, text, word_jaccard, TestDir};

/// `(line, id)` of every member of every cluster (id null when absent).
fn members(report: &Value) -> Vec<Vec<(u64, Value)>> {
    cluster_members(report, |m| {
        (
            m["line"].as_u64().unwrap_or(0),
            m.get("id").cloned().unwrap_or(Value::Null),
        )
    })
}

/// `(line, error)` of every error of the report.
fn errors(report: &Value) -> Vec<(Value, String)> {
    let errors = report["errors"].as_array().unwrap();
    (errors.iter())
        .map(|e| (e["line"].clone(), e["error"].as_str().unwrap().to_string()))
        .collect()
}

/// How a test file is written.
#[derive(Clone, Copy)]
struct Layout {
    /// Rows per row group.
    group: usize,
    compression: Compression,
}

const ONE_GROUP: Layout = Layout {
    group: 1 << 20,
    compression: Compression::UNCOMPRESSED,
};

/// Writes `columns` to `rel` in `t` as one Parquet file.
fn write(t: &TestDir, rel: &str, columns: Vec<(&str, ArrayRef)>, layout: Layout) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(layout.group))
        .set_compression(layout.compression)
        .build();
    if let Some(parent) = t.join(rel).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let file = File::create(t.join(rel)).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn strings<S: AsRef<str>>(values: &[Option<S>]) -> ArrayRef {
    let values: Vec<Option<&str>> = values
        .iter()
        .map(|v| v.as_ref().map(|s| s.as_ref()))
        .collect();
    Arc::new(StringArray::from(values))
}

/// Twelve records: 1, 5 and 9 a family of near-duplicates, 3 and 11 another, 7 an exact copy of
/// 2, the rest unrelated; every third record without an id.
fn corpus() -> Vec<(Option<String>, String)> {
    let (a, b) = (text(601, 300), text(602, 300));
    let texts: Vec<String> = (0..12u64)
        .map(|i| match i {
            0 => a.clone(),
            4 => edit(&a, &[20, 140]),
            8 => edit(&a, &[90]),
            2 => b.clone(),
            10 => edit(&b, &[250]),
            6 => text(603, 300),
            1 => text(603, 300),
            i => text(610 + i, 300),
        })
        .collect();
    assert!(word_jaccard(&a, &texts[4], 5) >= 0.9);
    (texts.into_iter().enumerate())
        .map(|(i, t)| ((i % 3 != 2).then(|| format!("doc-{i}")), t))
        .collect()
}

fn as_jsonl(records: &[(Option<String>, String)]) -> String {
    let line = |(id, text): &(Option<String>, String)| match id {
        Some(id) => json!({"id": id, "text": text}).to_string() + "\n",
        None => json!({"text": text}).to_string() + "\n",
    };
    records.iter().map(line).collect()
}

fn write_corpus(t: &TestDir, rel: &str, records: &[(Option<String>, String)], layout: Layout) {
    let ids: Vec<Option<&str>> = records.iter().map(|(id, _)| id.as_deref()).collect();
    let texts: Vec<Option<&str>> = records.iter().map(|(_, t)| Some(t.as_str())).collect();
    write(
        t,
        rel,
        vec![("id", strings(&ids)), ("text", strings(&texts))],
        layout,
    );
}

#[test]
fn parquet_rows_give_the_report_of_the_same_records_in_json_lines() {
    let t = TestDir::new();
    let records = corpus();
    t.write("d.jsonl", as_jsonl(&records));
    let layout = Layout {
        group: 5,
        compression: Compression::SNAPPY,
    };
    write_corpus(&t, "d.parquet", &records, layout);
    for args in [&["scan", "--pairs"][..], &["scan", "--method", "simhash"]] {
        let from_jsonl = t.run(&[args, &["d.jsonl"]].concat());
        let from_parquet = t.run(&[args, &["d.parquet"]].concat());
        assert_eq!(from_parquet.code(), 0, "{}", from_parquet.stderr);
        assert_schema(&from_parquet.json());
        // The same bytes but for the path.
        let same = from_jsonl.stdout.replace("d.jsonl", "d.parquet");
        assert_eq!(from_parquet.stdout, same, "{args:?}");
    }
    let r = t.run(&["scan", "d.parquet"]).json();
    assert_eq!(
        members(&r),
        vec![
            vec![(1, json!("doc-0")), (5, json!("doc-4")), (9, Value::Null)],
            vec![(2, json!("doc-1")), (7, json!("doc-6"))],
            vec![(3, Value::Null), (11, json!("doc-10"))],
        ]
    );
}

#[test]
fn a_dotted_name_reaches_into_a_struct_column() {
    let t = TestDir::new();
    let a = text(621, 300);
    let body = StructArray::from(vec![
        (
            Arc::new(Field::new("text", DataType::Utf8, true)),
            strings(&[Some(a.clone()), Some(text(622, 300)), Some(edit(&a, &[7]))]),
        ),
        (
            Arc::new(Field::new("lang", DataType::Utf8, true)),
            strings(&[Some("en"), Some("en"), None]),
        ),
    ]);
    let meta = StructArray::from(vec![(
        Arc::new(Field::new("url", DataType::Utf8, true)),
        strings(&[
            Some("https://x/1"),
            Some("https://x/2"),
            Some("https://x/3"),
        ]),
    )]);
    let columns: Vec<(&str, ArrayRef)> = vec![("meta", Arc::new(meta)), ("body", Arc::new(body))];
    write(&t, "crawl.parquet", columns, ONE_GROUP);
    let args = [
        "scan",
        "--text-field",
        "body.text",
        "--id-field",
        "meta.url",
        "crawl.parquet",
    ];
    let run = t.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        members(&run.json()),
        vec![vec![(1, json!("https://x/1")), (3, json!("https://x/3"))]]
    );
}

#[test]
fn a_column_whose_name_holds_a_dot_is_found_by_it_unless_a_struct_field_is_too() {
    let t = TestDir::new();
    let a = text(625, 300);
    // As pandas' json_normalize and Spark's flattening name columns; "q" a struct, so that
    // "q.rank" is found through it while "q.x" is the column so named.
    let q = StructArray::from(vec![(
        Arc::new(Field::new("rank", DataType::Int64, true)),
        Arc::new(Int64Array::from(vec![3, 9, 1])) as ArrayRef,
    )]);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "meta.text",
            strings(&[Some(a.clone()), Some(text(626, 300)), Some(edit(&a, &[7]))]),
        ),
        ("meta.id", strings(&[Some("a"), Some("b"), Some("c")])),
        ("q.x", Arc::new(Int64Array::from(vec![2, 0, 1]))),
        ("q", Arc::new(q)),
    ];
    write(&t, "flat.parquet", columns, ONE_GROUP);
    let kept = |keep_by: &str| {
        let args = [
            "scan",
            "--text-field",
            "meta.text",
            "--id-field",
            "meta.id",
            "--keep-by",
            keep_by,
            "flat.parquet",
        ];
        let run = t.run(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let r = run.json();
        assert_eq!(members(&r), vec![vec![(1, json!("a")), (3, json!("c"))]]);
        r["clusters"][0]["representative"]["id"].clone()
    };
    assert_eq!(kept("q.x:min"), "c");
    assert_eq!(kept("q.x:max"), "a");
    assert_eq!(kept("q.rank:min"), "c");

    // A name both a struct's field and a column has is refused: either could be the wrong one.
    let meta = StructArray::from(vec![(
        Arc::new(Field::new("text", DataType::Utf8, true)),
        strings(&[Some(a.clone())]),
    )]);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("meta.text", strings(&[Some(a.clone())])),
        ("meta", Arc::new(meta)),
    ];
    write(&t, "both.parquet", columns, ONE_GROUP);
    let run = t.run(&["scan", "--text-field", "meta.text", "both.parquet"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let want = r#""meta.text" names more than one field: the struct field "meta" > "text", the column "meta.text"; rename one of them"#;
    assert_eq!(errors(&run.json()), [(Value::Null, want.to_string())]);

    // JSON Lines cannot name such a key: the message says so, not that the record lacks it.
    t.write("flat.jsonl", format!("{}\n", json!({"meta.text": a})));
    let run = t.run(&["scan", "--text-field", "meta.text", "flat.jsonl"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            r#"the first record has "meta.text" (in JSON Lines a dotted name is a path into nested objects: a key that itself holds a dot, as "meta.text" does, cannot be named; rename the key)"#
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn integer_and_string_ids_render_as_in_json_lines() {
    let t = TestDir::new();
    let a = text(631, 300);
    let texts = strings(&[
        Some(a.clone()),
        Some(edit(&a, &[3])),
        Some(edit(&a, &[200])),
    ]);
    let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(42), None, Some(-7)]));
    write(
        &t,
        "ints.parquet",
        vec![("id", ints), ("text", texts.clone())],
        ONE_GROUP,
    );
    write(&t, "none.parquet", vec![("text", texts)], ONE_GROUP);
    let r = t.run(&["scan", "ints.parquet"]).json();
    assert_eq!(
        members(&r),
        vec![vec![(1, json!("42")), (2, Value::Null), (3, json!("-7"))]]
    );
    // No id column: no ids, as a JSON Lines record without the field.
    let r = t.run(&["scan", "none.parquet"]).json();
    assert_eq!(
        members(&r),
        vec![vec![(1, Value::Null), (2, Value::Null), (3, Value::Null)]]
    );
    let jsonl = [
        json!({"id": 42, "text": a}),
        json!({"text": edit(&a, &[3])}),
        json!({"id": -7, "text": edit(&a, &[200])}),
    ];
    t.write("ints.jsonl", jsonl.map(|l| l.to_string() + "\n").concat());
    let from_jsonl = t.run(&["scan", "ints.jsonl"]).stdout;
    let from_parquet = t.run(&["scan", "ints.parquet"]).stdout;
    assert_eq!(
        from_parquet,
        from_jsonl.replace("ints.jsonl", "ints.parquet")
    );
}

#[test]
fn a_missing_or_binary_text_column_is_an_error_listing_the_columns() {
    let t = TestDir::new();
    let a = text(641, 300);
    let body: ArrayRef = Arc::new(BinaryArray::from(vec![a.as_bytes()]));
    let url = StructArray::from(vec![(
        Arc::new(Field::new("url", DataType::Utf8, true)),
        strings(&[Some("u")]),
    )]);
    write(
        &t,
        "d.parquet",
        vec![("body", body), ("meta", Arc::new(url))],
        ONE_GROUP,
    );
    t.write("a.txt", &a).write("b.txt", edit(&a, &[1]));
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(
        errors(&r),
        [(
            Value::Null,
            r#"no column "text" (columns: body, meta.url)"#.to_string()
        )]
    );
    assert_eq!(r["errors"][0]["path"], "./d.parquet");
    assert!(run
        .stderr
        .contains(r#"d.parquet: no column "text" (columns: body, meta.url)"#));
    // The other inputs are scanned.
    assert_eq!(r["stats"]["documents"], 2);
    assert_eq!(r["clusters"].as_array().unwrap().len(), 1);
    let run = t.run(&["scan", "--text-field", "body", "d.parquet"]);
    assert_eq!(run.code(), 2);
    let want = r#"column "body" is binary, not a string (columns: body, meta.url)"#;
    assert_eq!(errors(&run.json()), [(Value::Null, want.to_string())]);
}

#[test]
fn a_null_text_is_a_bad_line_with_its_row_number() {
    let t = TestDir::new();
    let a = text(651, 300);
    let texts = strings(&[
        Some(a.clone()),
        None,
        Some(text(652, 300)),
        Some(edit(&a, &[9])),
    ]);
    write(&t, "d.parquet", vec![("text", texts)], ONE_GROUP);
    let run = t.run(&["scan", "d.parquet"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_schema(&r);
    assert_eq!(r["stats"]["skipped"]["bad_line"], 1);
    assert_eq!(r["stats"]["documents"], 3);
    assert_eq!(errors(&r), [(json!(2), r#""text" is null"#.to_string())]);
    assert!(
        run.stderr.contains(r#"d.parquet:2: "text" is null"#),
        "{}",
        run.stderr
    );
    assert_eq!(members(&r), vec![vec![(1, Value::Null), (4, Value::Null)]]);
}

#[test]
fn row_numbers_continue_across_row_groups() {
    let t = TestDir::new();
    let records = corpus();
    let layout = Layout {
        group: 2,
        compression: Compression::UNCOMPRESSED,
    };
    write_corpus(&t, "small-groups.parquet", &records, layout);
    write_corpus(&t, "one-group.parquet", &records, ONE_GROUP);
    let small = t.run(&["scan", "--pairs", "small-groups.parquet"]);
    assert_eq!(small.code(), 0, "{}", small.stderr);
    let one = t.run(&["scan", "--pairs", "one-group.parquet"]);
    assert_eq!(
        small.stdout,
        one.stdout.replace("one-group", "small-groups")
    );
    assert_eq!(
        members(&small.json())[0],
        [(1, json!("doc-0")), (5, json!("doc-4")), (9, Value::Null)]
    );
}

#[test]
fn max_size_bounds_each_text_not_the_file() {
    let t = TestDir::new();
    let a = text(661, 300);
    let long = text(662, 3000);
    let texts = strings(&[Some(a.clone()), Some(long.clone()), Some(edit(&a, &[4]))]);
    write(&t, "d.parquet", vec![("text", texts)], ONE_GROUP);
    let size = std::fs::metadata(t.join("d.parquet")).unwrap().len();
    let max = (a.len() + 100).to_string();
    assert!(size > a.len() as u64 + 100 && long.len() > a.len() + 100);
    let run = t.run(&["scan", "--max-size", &max, "d.parquet"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["bad_line"], 1);
    assert_eq!(r["stats"]["skipped"]["too_large"], 0);
    let want = format!(r#""text" longer than {max} bytes"#);
    assert_eq!(errors(&r), [(json!(2), want)]);
    assert_eq!(members(&r), vec![vec![(1, Value::Null), (3, Value::Null)]]);
}

#[test]
fn a_truncated_file_is_an_error_naming_it_and_the_rest_is_scanned() {
    let t = TestDir::new();
    write_corpus(&t, "whole.parquet", &corpus(), ONE_GROUP);
    let bytes = std::fs::read(t.join("whole.parquet")).unwrap();
    t.write("cut.parquet", &bytes[..bytes.len() / 2]);
    t.write("empty.parquet", b"");
    t.write("text.parquet", b"not Parquet at all\n");
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 12);
    let by_path: Vec<(String, String)> = (r["errors"].as_array().unwrap().iter())
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["error"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(by_path.len(), 3, "{by_path:?}");
    assert_eq!(by_path[0].0, "./cut.parquet");
    assert!(
        by_path[0].1.starts_with("not a readable Parquet file: "),
        "{by_path:?}"
    );
    assert!(run
        .stderr
        .contains("cut.parquet: not a readable Parquet file"));
    let not_parquet = "not a Parquet file (it does not start with PAR1)".to_string();
    assert_eq!(by_path[1], ("./empty.parquet".into(), not_parquet.clone()));
    assert_eq!(by_path[2], ("./text.parquet".into(), not_parquet));
    assert_eq!(members(&r).len(), 3);
}

#[test]
fn a_damaged_row_group_keeps_the_rows_before_it() {
    let t = TestDir::new();
    let records = corpus();
    let layout = Layout {
        group: 4,
        compression: Compression::UNCOMPRESSED,
    };
    write_corpus(&t, "d.parquet", &records, layout);
    // The text column's chunk of row group 1 (rows 5-8) overwritten, the footer intact.
    let mut bytes = std::fs::read(t.join("d.parquet")).unwrap();
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(
        File::open(t.join("d.parquet")).unwrap(),
    )
    .unwrap();
    let chunk = parquet::file::reader::FileReader::metadata(&reader)
        .row_group(1)
        .column(1);
    let (start, len) = chunk.byte_range();
    bytes[start as usize..(start + len) as usize].fill(0xA5);
    t.write("d.parquet", &bytes);
    let run = t.run(&["scan", "d.parquet"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 4);
    let errors = errors(&r);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, 5);
    assert!(
        errors[0].1.starts_with("row group 1 (rows 5-8): "),
        "{errors:?}"
    );
    assert!(
        errors[0].1.ends_with(" (rows 1-4 before it were read)"),
        "{errors:?}"
    );
}

#[test]
fn zstd_snappy_and_gzip_files_read_as_uncompressed() {
    let t = TestDir::new();
    let records = corpus();
    for (name, compression) in [
        ("plain", Compression::UNCOMPRESSED),
        ("snappy", Compression::SNAPPY),
        ("zstd", Compression::ZSTD(ZstdLevel::try_new(3).unwrap())),
        ("gzip", Compression::GZIP(GzipLevel::default())),
    ] {
        let layout = Layout {
            group: 3,
            compression,
        };
        write_corpus(&t, &format!("{name}/d.parquet"), &records, layout);
    }
    let plain = t.run(&["scan", "--pairs", "plain"]);
    assert_eq!(plain.code(), 0, "{}", plain.stderr);
    for name in ["snappy", "zstd", "gzip"] {
        let run = t.run(&["scan", "--pairs", name]);
        assert_eq!(run.code(), 0, "{name}: {}", run.stderr);
        assert_eq!(
            run.stdout,
            (plain.stdout.replace("plain/", &format!("{name}/")))
                .replace("\"plain\"", &format!("\"{name}\"")),
            "{name}"
        );
    }
}

#[test]
fn a_corpus_split_across_files_finds_the_same_clusters() {
    let t = TestDir::new();
    let records = corpus();
    for (i, part) in records.chunks(5).enumerate() {
        write_corpus(&t, &format!("parts/part-{i:05}.parquet"), part, ONE_GROUP);
    }
    let run = t.run(&["scan", "parts"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 12);
    let found: Vec<Vec<(String, u64)>> = cluster_members(&r, |m| {
        (
            m["path"].as_str().unwrap().to_string(),
            m["line"].as_u64().unwrap(),
        )
    });
    let at = |part: u32, line: u64| (format!("parts/part-{part:05}.parquet"), line);
    assert_eq!(
        found,
        vec![
            vec![at(0, 1), at(0, 5), at(1, 4)],
            vec![at(0, 2), at(1, 2)],
            vec![at(0, 3), at(2, 1)],
        ]
    );
}

#[test]
fn a_row_and_a_text_file_with_the_same_text_are_one_cluster() {
    let t = TestDir::new();
    let a = text(671, 300);
    let texts = strings(&[Some(text(672, 300)), Some(a.clone())]);
    let ids = strings(&[Some("x"), Some("y")]);
    write(
        &t,
        "rows.parquet",
        vec![("id", ids), ("text", texts)],
        ONE_GROUP,
    );
    t.write("copy.txt", &a).write("near.txt", edit(&a, &[100]));
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    let found: Vec<Vec<(String, Option<Value>)>> = cluster_members(&r, |m| {
        (
            m["path"].as_str().unwrap().to_string(),
            m.get("id").cloned(),
        )
    });
    assert_eq!(
        found,
        vec![vec![
            ("./copy.txt".to_string(), None),
            ("./near.txt".to_string(), None),
            ("./rows.parquet".to_string(), Some(json!("y"))),
        ]]
    );
    assert_eq!(r["stats"]["exact_groups"], 1);
}

#[test]
fn a_parquet_file_is_known_by_its_magic_bytes_with_jsonl() {
    let t = TestDir::new();
    write_corpus(&t, "dump.bin", &corpus(), ONE_GROUP);
    t.write("more.jsonl", as_jsonl(&corpus()[..1]));
    // Without --jsonl, a file not named *.parquet is a plain file (binary: no document).
    let r = t.run(&["scan", "dump.bin"]).json();
    assert_eq!(r["stats"]["documents"], 0);
    assert_eq!(r["stats"]["skipped"]["binary"], 1);
    let run = t.run(&["scan", "--jsonl", "dump.bin", "more.jsonl"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 13);
    assert_eq!(
        members(&r)[0],
        [
            (1, json!("doc-0")),
            (5, json!("doc-4")),
            (9, Value::Null),
            (1, json!("doc-0"))
        ]
    );
}

#[test]
fn the_staged_pipeline_reads_parquet_as_scan_does() {
    let t = TestDir::new();
    let records = corpus();
    let layout = Layout {
        group: 3,
        compression: Compression::SNAPPY,
    };
    write_corpus(&t, "in/a.parquet", &records[..7], layout);
    write_corpus(&t, "in/b.parquet", &records[7..], layout);
    t.write("in/c.txt", &records[4].1);
    let scan = t.run(&["scan", "--pairs", "in"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    let stage = |args: &[&str]| {
        let run = t.run(&[&["stage"], args, &["--work", "w"]].concat());
        assert_eq!(run.code(), 0, "{args:?}: {}", run.stderr);
        run.stdout
    };
    stage(&["init", "--shards", "2", "--parts", "2", "--pairs", "in"]);
    for i in ["0/2", "1/2"] {
        stage(&["sign", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        stage(&["group", "--part", j]);
    }
    stage(&["components"]);
    for i in ["0/2", "1/2"] {
        stage(&["route", "--shard", i]);
    }
    for j in ["0/2", "1/2"] {
        stage(&["verify", "--part", j]);
    }
    assert_eq!(stage(&["report"]), scan.stdout);
}

#[test]
fn the_dataset_of_a_parquet_dump_keeps_each_row_with_all_its_columns_but_the_duplicates() {
    let t = TestDir::new();
    let records = corpus();
    let ids: Vec<Option<&str>> = records.iter().map(|(id, _)| id.as_deref()).collect();
    // Row 12 has no text: a bad line of the report, yet a row of the dataset.
    let mut texts: Vec<Option<&str>> = records.iter().map(|(_, t)| Some(t.as_str())).collect();
    texts[11] = None;
    let n: ArrayRef = Arc::new(Int64Array::from_iter_values(100..112));
    let columns = vec![("id", strings(&ids)), ("n", n), ("text", strings(&texts))];
    let layout = Layout {
        group: 5,
        compression: Compression::SNAPPY,
    };
    write(&t, "d.parquet", columns, layout);
    let r = t.run(&[
        "scan",
        "-q",
        "--write-dataset",
        "out",
        "--dataset-format",
        "jsonl",
        "d.parquet",
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(errors(&report).len(), 1, "{}", r.stdout);
    assert_eq!(errors(&report)[0].0, json!(12));
    let dropped: Vec<u64> = (report["clusters"].as_array().unwrap().iter())
        .flat_map(|c| c["duplicates"].as_array().unwrap().iter())
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(dropped.len(), 4, "{}", r.stdout);
    let out = std::fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<Value> = (1..=12u64)
        .filter(|line| !dropped.contains(line))
        .map(|line| {
            let (id, text) = &records[line as usize - 1];
            let text = (line < 12).then_some(text);
            json!({"id": id, "n": 99 + line, "text": text})
        })
        .collect();
    assert_eq!(rows, expected);
}

#[test]
fn a_footer_declaring_more_schema_children_than_it_holds_is_refused_before_it_is_decoded() {
    let t = TestDir::new();
    // A 47-byte file whose root declares 2³¹ − 1 children: the parquet crate reserved 16 GiB
    // for them (an abort under `ulimit -v`) before finding one element after it.
    let bad = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions/parquet/schema-num-children-i32-max"),
    )
    .unwrap();
    t.write("bad.parquet", &bad[1..]);
    write_corpus(&t, "good.parquet", &corpus(), ONE_GROUP);
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    let errors = errors(&report);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .1
            .contains("corrupt footer: schema element 0 declares 2147483647 children"),
        "{errors:?}"
    );
    assert_eq!(report["stats"]["documents"], corpus().len());
}

/// A file of `rows` rows that all point at one dictionary entry of `entry` bytes (a few KB on
/// disk, `rows × entry` decoded), as `rel` in `t`; the entry is returned.
fn write_dictionary_bomb(t: &TestDir, rel: &str, rows: usize, entry: usize) -> String {
    let base = text(680, 2000) + " ";
    let entry: String = base.repeat(entry / base.len() + 1)[..entry].to_string();
    let column: ArrayRef = Arc::new(StringArray::from(vec![entry.as_str(); rows]));
    let batch = RecordBatch::try_from_iter([("text", column)]).unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_page_size_limit(64 << 20)
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let file = File::create(t.join(rel)).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    entry
}

/// Rows that decode to far more than their encoded size are decoded a few at a time (the
/// benchmark `benches/memory.sh --cases dictbomb` measures the peak), and read in full.
#[test]
fn a_dictionary_bomb_is_read_whole_a_few_rows_at_a_time() {
    let t = TestDir::new();
    write_dictionary_bomb(&t, "d.parquet", 300, 256 << 10);
    assert!(std::fs::metadata(t.join("d.parquet")).unwrap().len() < 64 << 10);
    let run = t.run(&["scan", "--max-memory", "64M", "d.parquet"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 300, "{}", run.stderr);
    let clusters = r["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1);
    assert_eq!(clusters[0]["members"].as_array().unwrap().len(), 300);
}

/// A row whose dictionary entry alone is more than a decoder may hold under --max-memory (a
/// quarter of it) is the memory error of each row of its row group, naming the file; the other
/// files are read.
#[test]
fn a_dictionary_entry_over_what_a_decoder_may_hold_is_an_input_error_saying_so() {
    let t = TestDir::new();
    write_dictionary_bomb(&t, "big.parquet", 3, 12 << 20);
    write_corpus(&t, "good.parquet", &corpus(), ONE_GROUP);
    let run = t.run(&["scan", "--max-memory", "64M", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], corpus().len());
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{errors:?}");
    for (e, line) in errors.iter().zip(1..) {
        assert_eq!(e["path"], "./big.parquet");
        assert_eq!(e["line"], line);
        let e = e["error"].as_str().unwrap();
        assert!(
            e.starts_with("row group 0: needs about 24.0 MiB of memory"),
            "{e}"
        );
        assert!(
            e.contains(
                "more than --max-memory leaves a Parquet decoder (16.0 MiB, a quarter of it); \
                 raise --max-memory"
            ),
            "{e}"
        );
    }
    assert!(
        run.stderr
            .contains("./big.parquet: rows 1-3 not read: row group 0"),
        "{}",
        run.stderr
    );
}

/// Long documents in one row group, as pyarrow's defaults write them (every row in one page),
/// are read when --max-memory leaves a decoder room for the group (a quarter of it), however
/// little a decoder of a compressed stream may hold. When it does not, each of the group's rows
/// is an input error, counted as one in the summary, and the other row groups are read.
#[test]
fn a_row_group_of_long_documents_is_read_under_a_budget_that_holds_it_else_its_rows_are_errors() {
    let t = TestDir::new();
    let long = text(620, 450_000);
    assert!(
        long.len() > 2 << 20 && long.len() < 4 << 20,
        "{}",
        long.len()
    );
    let mut records = corpus();
    records.push((Some("long-0".into()), long.clone()));
    records.push((Some("long-1".into()), long));
    records.push((Some("long-2".into()), text(621, 450_000)));
    let layout = Layout {
        group: corpus().len(),
        compression: Compression::UNCOMPRESSED,
    };
    write_corpus(&t, "d.parquet", &records, layout);

    // Its pages and a row need about 21 MiB: more than a stream's decoder (17 MiB), less than
    // a quarter of 128 MiB.
    let run = t.run(&["scan", "--max-memory", "128M", "d.parquet"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], records.len(), "{}", run.stderr);
    let long_pair = vec![(13, json!("long-0")), (14, json!("long-1"))];
    assert!(members(&r).contains(&long_pair), "{:?}", members(&r));

    let run = t.run(&["scan", "-q", "--max-memory", "64M", "d.parquet"]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], corpus().len());
    let lines: Vec<Value> = errors(&r).into_iter().map(|(line, _)| line).collect();
    assert_eq!(lines, [json!(13), json!(14), json!(15)]);
    assert_eq!(
        run.stderr,
        "dupfind: 3 rows of Parquet dumps could not be read (run without -q for details)\n"
    );
}
