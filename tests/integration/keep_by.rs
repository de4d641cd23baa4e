//! `--keep-by FIELD[:max|:min]` (the dump record to keep, by a field: numbers, strings,
//! timestamps, dates, nested fields, records without one), `--keep none` (every member a
//! duplicate), both with `--against` and in the staged pipeline, and `--format parquet` (the
//! report as one table) read back.

use std::fs::File;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use serde_json::{json, Value};

use super::staged::assert_same_as_scan;
use super::util::schema::assert_schema;
use super::util::{clusters, edit, text, TestDir};

/// `n` near-duplicates of one text (each pair above 0.9 word Jaccard).
fn family(seed: u64, n: usize) -> Vec<String> {
    let base = text(seed, 300);
    (0..n).map(|i| edit(&base, &[20 + 41 * i])).collect()
}

/// JSON Lines of records: each `extra` object gets its text.
fn dump(texts: &[String], extra: &[Value]) -> String {
    (texts.iter().zip(extra))
        .map(|(t, e)| {
            let mut r = e.clone();
            r["text"] = json!(t);
            format!("{r}\n")
        })
        .collect()
}

/// A scan's report, which must succeed and follow the schema.
fn report(t: &TestDir, args: &[&str]) -> Value {
    let r = t.run(args);
    assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
    let v = r.json();
    assert_schema(&v);
    v
}

/// The `line` of each cluster's representative.
fn kept_lines(r: &Value) -> Vec<u64> {
    (clusters(r).iter())
        .map(|c| c["representative"]["line"].as_u64().unwrap())
        .collect()
}

/// Refused before anything is reported: exit 2, nothing on stdout; returns stderr.
fn refused(t: &TestDir, args: &[&str]) -> String {
    let r = t.run(args);
    assert_eq!(r.code(), 2, "{args:?}: {}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, "", "{args:?}");
    r.stderr
}

/// Two families as JSON Lines: lines 1-4 (quality 0.5, none, 0.9, 0.9) and 5-7 (2, 10, null),
/// then an unrelated record.
fn numbers(t: &TestDir) {
    let mut texts = family(701, 4);
    texts.extend(family(702, 3));
    texts.push(text(703, 300));
    let extra = [
        json!({"id": "a0", "quality": 0.5}),
        json!({"id": "a1"}),
        json!({"id": "a2", "quality": 0.9}),
        json!({"id": "a3", "quality": 0.9}),
        json!({"id": "b0", "quality": 2}),
        json!({"id": "b1", "quality": 10}),
        json!({"id": "b2", "quality": null}),
        json!({"id": "u", "quality": 1}),
    ];
    t.write("d.jsonl", dump(&texts, &extra));
}

#[test]
fn keep_by_max_and_min_choose_by_a_number_records_without_one_last() {
    let t = TestDir::new();
    numbers(&t);
    let r = report(&t, &["scan", "--keep-by", "quality", "d.jsonl"]);
    assert_eq!(r["params"]["keep_by"], "quality:max");
    // 0.9 twice: the tie goes to --keep (oldest: the same file, so path order, then line).
    assert_eq!(kept_lines(&r), [3, 6]);
    let r = report(&t, &["scan", "--keep-by", "quality:min", "d.jsonl"]);
    assert_eq!(r["params"]["keep_by"], "quality:min");
    // Line 2 has no quality and line 7 a null one: after every record with a value, even for
    // :min, though --keep would have put line 2 ahead of line 3.
    assert_eq!(kept_lines(&r), [1, 5]);
    // Every member is still in its cluster, the others as duplicates.
    let sizes: Vec<u64> = clusters(&r)
        .iter()
        .map(|c| c["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [4, 3]);
    // Without --keep-by: oldest, then path order: the first line.
    let r = report(&t, &["scan", "d.jsonl"]);
    assert_eq!(kept_lines(&r), [1, 5]);
    assert!(r["params"].get("keep_by").is_none());
    // Ties and records without a value follow --keep: largest among the 0.9s.
    let r = report(
        &t,
        &[
            "scan",
            "--keep-by",
            "quality",
            "--keep",
            "largest",
            "d.jsonl",
        ],
    );
    let c = &clusters(&r)[0];
    let ties: Vec<&Value> = (c["members"].as_array().unwrap().iter())
        .filter(|m| [3, 4].contains(&m["line"].as_u64().unwrap()))
        .collect();
    let largest = if ties[1]["bytes"].as_u64() > ties[0]["bytes"].as_u64() {
        4
    } else {
        3
    };
    assert_eq!(c["representative"]["line"], largest);
}

#[test]
fn keep_by_compares_strings_timestamps_dates_and_nested_fields() {
    let t = TestDir::new();
    // JSON Lines: a string, an ISO 8601 time (compared as a string), a nested number.
    let texts = family(711, 3);
    let extra = [
        json!({"src": "b", "ts": "2026-02-01T00:00:00Z", "meta": {"score": 1}}),
        json!({"src": "c", "ts": "2026-03-01T00:00:00Z", "meta": {}}),
        json!({"src": "a", "ts": "2025-12-31T23:59:59Z", "meta": {"score": 7}}),
    ];
    t.write("j/d.jsonl", dump(&texts, &extra));
    let lines = |args: &[&str]| kept_lines(&report(&t, &[&["scan"][..], args, &["j"]].concat()));
    assert_eq!(lines(&["--keep-by", "src"]), [2]);
    assert_eq!(lines(&["--keep-by", "src:min"]), [3]);
    assert_eq!(lines(&["--keep-by", "ts:max"]), [2]);
    assert_eq!(lines(&["--keep-by", "ts:min"]), [3]);
    assert_eq!(lines(&["--keep-by", "meta.score"]), [3]);
    assert_eq!(lines(&["--keep-by", "meta.score:min"]), [1]);

    // Parquet: a string, a timestamp with a time zone, a date, a struct's field.
    let texts = family(712, 3);
    let day = 86_400_000_000i64;
    let score = Arc::new(Int64Array::from(vec![None, Some(5), Some(7)])) as ArrayRef;
    let meta = StructArray::from(vec![(
        Arc::new(Field::new("score", DataType::Int64, true)),
        score,
    )]);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "text",
            Arc::new(StringArray::from_iter_values(texts.iter())) as ArrayRef,
        ),
        ("src", Arc::new(StringArray::from(vec!["b", "c", "a"]))),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![20_000 * day, 10_000 * day, 30_000 * day])
                    .with_timezone("UTC"),
            ),
        ),
        ("day", Arc::new(Date32Array::from(vec![3, 1, 2]))),
        ("meta", Arc::new(meta)),
    ];
    write_parquet(&t.join("p/d.parquet"), columns);
    let lines = |args: &[&str]| kept_lines(&report(&t, &[&["scan"][..], args, &["p"]].concat()));
    assert_eq!(lines(&["--keep-by", "src"]), [2]);
    assert_eq!(lines(&["--keep-by", "src:min"]), [3]);
    assert_eq!(lines(&["--keep-by", "ts"]), [3]);
    assert_eq!(lines(&["--keep-by", "ts:min"]), [2]);
    assert_eq!(lines(&["--keep-by", "day"]), [1]);
    // Row 1's score is null: last, even for :min.
    assert_eq!(lines(&["--keep-by", "meta.score:min"]), [2]);
}

#[test]
fn keep_by_ties_negative_zero_with_zero_and_puts_nan_last() {
    let t = TestDir::new();
    // -0.0 and 0.0 are one number: with the integer 0 too, a tie that --keep (oldest: line
    // order) breaks, for :max and :min alike.
    let texts = family(721, 3);
    t.write(
        "j/d.jsonl",
        dump(
            &texts,
            &[json!({"q": -0.0}), json!({"q": 0.0}), json!({"q": 0})],
        ),
    );
    let lines =
        |dir: &str, args: &[&str]| kept_lines(&report(&t, &[&["scan"][..], args, &[dir]].concat()));
    assert_eq!(lines("j", &["--keep-by", "q:max"]), [1]);
    assert_eq!(lines("j", &["--keep-by", "q:min"]), [1]);

    // Parquet: a NaN is no value (after every record with one, for :min too).
    let texts = family(722, 3);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "text",
            Arc::new(StringArray::from_iter_values(texts.iter())) as ArrayRef,
        ),
        ("q", Arc::new(Float64Array::from(vec![f64::NAN, -0.0, 0.0]))),
    ];
    write_parquet(&t.join("p/d.parquet"), columns);
    assert_eq!(lines("p", &["--keep-by", "q:max"]), [2]);
    assert_eq!(lines("p", &["--keep-by", "q:min"]), [2]);
}

fn write_parquet(path: &std::path::Path, columns: Vec<(&str, ArrayRef)>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn keep_none_makes_every_member_a_duplicate_in_every_format_and_the_dataset() {
    let t = TestDir::new();
    let texts = family(721, 3);
    for (i, x) in texts.iter().enumerate() {
        t.write(format!("f/{i}.txt"), x);
    }
    t.write("f/other.txt", text(722, 300));
    let r = report(&t, &["scan", "--keep", "none", "f"]);
    assert_eq!(r["params"]["keep"], "none");
    let c = &clusters(&r)[0];
    assert_eq!(c["representative"], Value::Null);
    let dups: Vec<&str> = (c["duplicates"].as_array().unwrap().iter())
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(dups, ["f/0.txt", "f/1.txt", "f/2.txt"]);
    // Each with its similarity to its nearest member, one of the cluster's pairs.
    for d in c["duplicates"].as_array().unwrap() {
        let s = d["similarity"].as_f64().unwrap();
        assert!(
            s >= 0.8 && s <= c["max_similarity"].as_f64().unwrap(),
            "{d}"
        );
        assert_eq!(d["exact"], false);
    }
    // The counts describe the corpus, whatever is kept.
    assert_eq!(r["stats"]["clusters"], 1);
    assert_eq!(r["stats"]["near_copies"], 2);

    let paths = t.run(&["scan", "--keep", "none", "--format", "paths", "f"]);
    assert_eq!(paths.stdout, "f/0.txt\nf/1.txt\nf/2.txt\n");
    let text_out = t.run(&["scan", "--keep", "none", "--format", "text", "f"]);
    assert!(!text_out.stdout.contains("keep "), "{}", text_out.stdout);
    assert_eq!(text_out.stdout.matches("  dup ").count(), 3);
    assert!(
        text_out.stdout.contains("3 duplicates"),
        "{}",
        text_out.stdout
    );

    // A dump's clustered records all leave the dataset.
    t.write(
        "d/d.jsonl",
        dump(&texts, &[json!({"id": "x"}), json!({"id": "y"}), json!({})]),
    );
    t.write("d/e.jsonl", dump(&[text(723, 300)], &[json!({"id": "z"})]));
    let r = t.run(&["scan", "--keep", "none", "--write-dataset", "out", "d"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let written = std::fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    let ids: Vec<Value> = (written.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, [json!("z")]);
}

#[test]
fn keep_by_against_an_index_keeps_the_indexed_document_and_orders_the_new_ones() {
    let t = TestDir::new();
    let a = family(731, 3);
    let b = family(732, 2);
    t.write(
        "old/a.jsonl",
        dump(&a[..1], &[json!({"id": "a0", "quality": 1})]),
    );
    let built = t.run(&[
        "index",
        "build",
        "old",
        "--index",
        "idx",
        "--keep-by",
        "quality",
    ]);
    assert_eq!(built.code(), 0, "{}", built.stderr);
    t.write(
        "new/b.jsonl",
        dump(
            &[a[1].clone(), a[2].clone(), b[0].clone(), b[1].clone()],
            &[
                json!({"id": "a1", "quality": 9}),
                json!({"id": "a2", "quality": 5}),
                json!({"id": "b0", "quality": 3}),
                json!({"id": "b1", "quality": 4}),
            ],
        ),
    );
    let r = report(
        &t,
        &["scan", "new", "--against", "idx", "--keep-by", "quality"],
    );
    let reps: Vec<(Value, Value)> = (clusters(&r).iter())
        .map(|c| {
            let rep = &c["representative"];
            (
                rep["id"].clone(),
                rep.get("indexed").cloned().unwrap_or(json!(false)),
            )
        })
        .collect();
    // The indexed a0 was kept by an earlier run, whatever its quality; the index stores no
    // fields. b1 has the greater quality of the new family.
    assert_eq!(
        reps,
        [(json!("a0"), json!(true)), (json!("b1"), json!(false))]
    );
    let r = report(
        &t,
        &[
            "scan",
            "new",
            "--against",
            "idx",
            "--keep-by",
            "quality:min",
        ],
    );
    let ids: Vec<Value> = (clusters(&r).iter())
        .map(|c| c["representative"]["id"].clone())
        .collect();
    assert_eq!(ids, [json!("a0"), json!("b0")]);
    // --keep none: the indexed member is a duplicate too (flagged indexed).
    let r = report(&t, &["scan", "new", "--against", "idx", "--keep", "none"]);
    let c = &clusters(&r)[0];
    assert_eq!(c["representative"], Value::Null);
    assert_eq!(c["duplicates"].as_array().unwrap().len(), 3);
    assert_eq!(c["duplicates"][0]["indexed"], true);
}

/// Three dumps (JSON Lines, a gzip one, Parquet) with families spread over them, and records
/// with and without the field.
fn staged_corpus(t: &TestDir) {
    let a = family(741, 6);
    let b = family(742, 4);
    let q = |i: usize| match i % 3 {
        0 => json!({"id": format!("r{i}"), "q": i * 7 % 5}),
        1 => json!({"id": format!("r{i}"), "q": format!("s{}", i % 4)}),
        _ => json!({"id": format!("r{i}")}),
    };
    let extra: Vec<Value> = (0..5).map(q).collect();
    t.write(
        "c/1.jsonl",
        dump(
            &[
                a[0].clone(),
                b[0].clone(),
                a[1].clone(),
                text(743, 200),
                b[1].clone(),
            ],
            &extra,
        ),
    );
    let extra: Vec<Value> = (5..8).map(q).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let plain = dump(&[a[2].clone(), a[3].clone(), b[2].clone()], &extra);
    std::io::Write::write_all(&mut gz, plain.as_bytes()).unwrap();
    t.write("c/2.jsonl.gz", gz.finish().unwrap());
    let texts = [a[4].clone(), b[3].clone(), a[5].clone()];
    write_parquet(
        &t.join("c/3.parquet"),
        vec![
            (
                "id",
                Arc::new(StringArray::from(vec!["p0", "p1", "p2"])) as ArrayRef,
            ),
            (
                "text",
                Arc::new(StringArray::from_iter_values(texts.iter())),
            ),
            (
                "q",
                Arc::new(Int64Array::from(vec![Some(4), None, Some(9)])),
            ),
        ],
    );
}

#[test]
fn staged_keep_by_and_keep_none_equal_scan() {
    let t = TestDir::new();
    staged_corpus(&t);
    for args in [
        &["--keep-by", "q", "c"][..],
        &["--keep-by", "q:min", "--cluster", "components", "c"],
        &["--keep", "none", "c"],
        &["--keep", "none", "--format", "text", "c"],
    ] {
        assert_same_as_scan(&t, args, &[(1, 2), (3, 2)]);
    }
}

#[test]
fn staged_refuses_a_keep_by_field_no_record_has_before_any_dataset_part_is_written() {
    // Review 6 finding 05: only `stage report` refused it, after `stage dataset` had written
    // the whole dataset with representatives chosen by --keep. `stage components`, the first
    // task after every shard is signed, now says scan's error, with its status.
    let t = TestDir::new();
    staged_corpus(&t);
    let args = ["--keep-by", "nope", "--write-dataset", "ds", "c"];
    let scan = t.run(&[&["scan"][..], &args].concat());
    assert!(
        scan.stderr.contains("no record has a \"nope\" field"),
        "{}",
        scan.stderr
    );
    assert!(!t.join("ds").exists(), "scan wrote nothing");
    let w = "w";
    let run = |a: &[&str]| t.run(&[&["stage"][..], a, &["--work", w]].concat());
    let init = t.run(
        &[
            &[
                "stage", "init", "--work", w, "--shards", "3", "--parts", "2",
            ][..],
            &args,
        ]
        .concat(),
    );
    assert_eq!(init.code(), 0, "{}", init.stderr);
    let mut said = init.stderr;
    for i in 0..3 {
        let r = run(&["sign", "--shard", &format!("{i}/3")]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        said += &r.stderr;
    }
    for i in 0..2 {
        let r = run(&["group", "--part", &format!("{i}/2")]);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        said += &r.stderr;
    }
    let comps = run(&["components"]);
    said += &comps.stderr;
    assert_eq!(
        (comps.code(), said.as_str()),
        (scan.code(), scan.stderr.as_str())
    );
    // Nothing after it runs, and no part is written; the run's claim stays, as after any
    // failed task.
    for later in [
        &["route", "--shard", "0/3"][..],
        &["dataset", "--shard", "0/3"],
    ] {
        let r = run(later);
        assert_eq!(r.code(), 2, "{later:?}: {}", r.stderr);
    }
    let report = run(&["report"]);
    assert_eq!((report.code(), report.stdout.as_str()), (2, ""));
    let left: Vec<String> = std::fs::read_dir(t.join("ds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["_dupfind_run"]);
    // The local driver stops there too, with scan's stderr and status.
    let args2 = ["--keep-by", "nope", "--write-dataset", "ds2", "c"];
    let scan2 = t.run(&[&["scan"][..], &args2].concat());
    let bin = super::util::bin();
    let driver = [
        &[
            "--dupfind",
            bin,
            "--shards",
            "3",
            "--parts",
            "2",
            "--work",
            "w2",
        ][..],
        &args2,
    ];
    let r = super::staged::local_driver(&t, &driver.concat());
    assert_eq!(
        (r.code(), r.stdout.as_str(), r.stderr.as_str()),
        (scan2.code(), "", scan2.stderr.as_str())
    );
    assert!(!t.join("ds2").join("part-00000.jsonl").exists());
}

#[test]
fn keep_by_refuses_a_field_no_record_has_files_and_keep_none() {
    let t = TestDir::new();
    numbers(&t);
    let said = refused(&t, &["scan", "--keep-by", "qualty", "d.jsonl"]);
    assert!(
        said.contains(
            "--keep-by qualty:max: no record has a \"qualty\" field with a value to compare"
        ) && said.contains("the first record of d.jsonl has \"id\", \"quality\", \"text\""),
        "{said}"
    );
    // Nested: the names along the path.
    let said = refused(&t, &["scan", "--keep-by", "quality.x", "d.jsonl"]);
    assert!(said.contains("has \"id\", \"quality\", \"text\""), "{said}");
    write_parquet(
        &t.join("p/d.parquet"),
        vec![
            (
                "text",
                Arc::new(StringArray::from(vec!["a b c d e f"])) as ArrayRef,
            ),
            ("n", Arc::new(Float64Array::from(vec![1.0]))),
            ("ok", Arc::new(BooleanArray::from(vec![true]))),
        ],
    );
    let said = refused(&t, &["scan", "--keep-by", "score", "p"]);
    assert!(
        said.contains("; p/d.parquet has the columns text, n, ok"),
        "{said}"
    );
    // A column of a type that does not compare is an error for the file, as a bad id column.
    write_parquet(
        &t.join("q/d.parquet"),
        vec![
            (
                "text",
                Arc::new(StringArray::from(vec!["a b c d e f"])) as ArrayRef,
            ),
            (
                "blob",
                Arc::new(arrow_array::BinaryArray::from(vec![&b"x"[..]])),
            ),
        ],
    );
    let r = t.run(&["scan", "--keep-by", "blob", "q"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("column \"blob\" is binary, which --keep-by cannot compare"),
        "{}",
        r.stderr
    );
    // Files have no fields.
    t.write("f/a.txt", "some text here")
        .write("f/b.txt", "other text");
    let said = refused(&t, &["scan", "--keep-by", "quality", "f"]);
    assert!(
        said.contains("the inputs are files, which have no fields"),
        "{said}"
    );
    let init = t.run(&["stage", "init", "--work", "w", "--keep-by", "quality", "f"]);
    assert_eq!(init.code(), 2);
    assert!(
        init.stderr.contains("the inputs are files"),
        "{}",
        init.stderr
    );
    // What cannot go together.
    let said = refused(
        &t,
        &["scan", "--keep-by", "quality", "--keep", "none", "d.jsonl"],
    );
    assert!(said.contains("--keep none keeps none"), "{said}");
    let said = refused(&t, &["scan", "--keep-by", "quality:best", "d.jsonl"]);
    assert!(said.contains("max or min"), "{said}");
}

/// The rows of a Parquet report: (cluster, size, path, line, id, representative, duplicate,
/// similarity, exact, indexed).
type Row = (
    i64,
    i64,
    String,
    Option<i64>,
    Option<String>,
    bool,
    bool,
    Option<f64>,
    Option<bool>,
    bool,
);

fn parquet_rows(bytes: Vec<u8>) -> Vec<Row> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let b = batch.unwrap();
        let col = |name: &str| b.column_by_name(name).unwrap().clone();
        let int = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let flag = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap()
                .clone()
        };
        let string = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let (cluster, size, line) = (int("cluster"), int("size"), int("line"));
        let (path, id) = (string("path"), string("id"));
        let (rep, dup, exact, indexed) = (
            flag("representative"),
            flag("duplicate"),
            flag("exact"),
            flag("indexed"),
        );
        let sim = col("similarity");
        let sim = sim.as_any().downcast_ref::<Float64Array>().unwrap();
        for k in 0..b.num_rows() {
            rows.push((
                cluster.value(k),
                size.value(k),
                path.value(k).to_string(),
                (!line.is_null(k)).then(|| line.value(k)),
                (!id.is_null(k)).then(|| id.value(k).to_string()),
                rep.value(k),
                dup.value(k),
                (!sim.is_null(k)).then(|| sim.value(k)),
                (!exact.is_null(k)).then(|| exact.value(k)),
                indexed.value(k),
            ));
        }
    }
    rows
}

/// The rows the JSON report implies.
fn rows_of(report: &Value) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in clusters(report) {
        let members = c["members"].as_array().unwrap();
        let role = |m: &Value, list: &str| {
            (c.get(list).and_then(Value::as_array).into_iter().flatten())
                .find(|d| d["path"] == m["path"] && d.get("line") == m.get("line"))
                .cloned()
        };
        for m in members {
            let dup = role(m, "duplicates");
            let entry = dup.clone().or_else(|| role(m, "linked"));
            let rep = &c["representative"];
            rows.push((
                c["id"].as_i64().unwrap(),
                c["size"].as_i64().unwrap(),
                m["path"].as_str().unwrap().to_string(),
                m["line"].as_i64(),
                m["id"].as_str().map(String::from),
                !rep.is_null() && rep["path"] == m["path"] && rep.get("line") == m.get("line"),
                dup.is_some(),
                entry.as_ref().map(|e| e["similarity"].as_f64().unwrap()),
                entry.as_ref().map(|e| e["exact"].as_bool().unwrap()),
                m.get("indexed").is_some(),
            ));
        }
    }
    rows
}

#[test]
fn the_parquet_report_has_a_row_per_clustered_document_as_the_json_report_says() {
    let t = TestDir::new();
    staged_corpus(&t);
    let a = family(751, 2);
    t.write("c/x.txt", &a[0])
        .write("c/y.txt", &a[0])
        .write("c/z.txt", &a[1]);
    for args in [
        &["c"][..],
        &["--keep-by", "q:min", "c"],
        &["--keep", "none", "c"],
        &["--cluster", "components", "c"],
    ] {
        let json = report(&t, &[&["scan"][..], args].concat());
        let r = t.run(
            &[
                &["scan", "--format", "parquet", "-o", "r.parquet"][..],
                args,
            ]
            .concat(),
        );
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(r.stdout, "");
        let rows = parquet_rows(std::fs::read(t.join("r.parquet")).unwrap());
        assert_eq!(rows, rows_of(&json), "{args:?}");
        assert!(
            rows.iter().any(|r| r.8 == Some(true)),
            "an exact copy: {rows:?}"
        );
        // To a pipe as well: the same bytes as the file.
        let piped = (t.command(&[&["scan", "--format", "parquet"][..], args].concat()))
            .output()
            .unwrap();
        assert!(piped.status.success());
        assert!(
            piped.stdout == std::fs::read(t.join("r.parquet")).unwrap(),
            "{args:?}"
        );
    }
    let r = t.run(&["scan", "--format", "parquet", "--pairs", "c"]);
    assert_eq!(r.code(), 2);
    assert!(r
        .stderr
        .contains("--format parquet has a row per clustered document"));
}

/// The records of one dump share its modification time: `--keep newest` keeps the last of
/// them (rows are appended to a table), `oldest` the first, not both the first.
#[test]
fn keep_newest_among_the_records_of_one_dump_keeps_the_last() {
    let t = TestDir::new();
    let line = serde_json::json!({"text": text(740, 60)}).to_string() + "\n";
    t.write("k.jsonl", line.repeat(3));
    for (keep, kept) in [("oldest", 1), ("newest", 3)] {
        let r = t.run(&["scan", "-q", "--keep", keep, "k.jsonl"]);
        let report = r.json();
        assert_eq!(
            report["clusters"][0]["representative"]["line"], kept,
            "{keep}: {}",
            r.stdout
        );
    }
}
