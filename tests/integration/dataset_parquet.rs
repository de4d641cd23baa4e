//! `--write-dataset` as Parquet and `--annotate`: a dump with typed, nested and nullable columns
//! goes back out with its schema and values, without the rows listed as duplicates, or every
//! row with the added columns agreeing with the report; the staged pipeline writes the same
//! tables; bad inputs are refused.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, Float64Array, Int64Array,
    RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

use super::util::{edit, run_command, text, TestDir};

/// Rows (1-based) 2 and 4 are near-copies of row 1, row 5 a byte-identical copy of row 3, row 10
/// has no text; the rest are unique. Every other column is typed, nested or nullable.
pub(super) fn table(first: usize, rows: usize) -> RecordBatch {
    let a = text(9000, 250);
    let b = text(9001, 250);
    let texts: Vec<Option<String>> = (1..=rows)
        .map(|i| match first + i {
            1 => Some(a.clone()),
            2 => Some(edit(&a, &[10, 20])),
            3 | 5 => Some(b.clone()),
            4 => Some(edit(&a, &[30])),
            10 => None,
            n => Some(text(9100 + n as u64, 200)),
        })
        .collect();
    let n = |i: usize| first + i + 1;
    let ids = StringArray::from_iter_values((0..rows).map(|i| format!("r{:02}", n(i))));
    let ints = Int64Array::from_iter((0..rows).map(|i| (n(i) % 3 != 0).then_some(n(i) as i64 * 7)));
    let floats =
        Float64Array::from_iter((0..rows).map(|i| (n(i) % 4 != 0).then_some(n(i) as f64 / 3.0)));
    let times = TimestampMicrosecondArray::from_iter(
        (0..rows).map(|i| (n(i) != 6).then_some(1_700_000_000_000_000 + n(i) as i64)),
    )
    .with_timezone("Europe/Paris");
    let decimals =
        Decimal128Array::from_iter((0..rows).map(|i| (n(i) != 7).then_some(n(i) as i128 * 12345)))
            .with_precision_and_scale(12, 2)
            .unwrap();
    let binary =
        BinaryArray::from_iter((0..rows).map(|i| (n(i) != 8).then(|| vec![n(i) as u8, 0, 255])));
    let mut list = ListBuilder::new(Int32Builder::new());
    for i in 0..rows {
        if n(i) == 9 {
            list.append_null();
        } else {
            list.append_value((0..n(i) % 3).map(|k| Some(k as i32)));
        }
    }
    let inner = Fields::from(vec![
        Field::new("source", DataType::Utf8, true),
        Field::new("rank", DataType::Int64, false),
    ]);
    let meta = StructArray::new(
        inner.clone(),
        vec![
            Arc::new(StringArray::from_iter(
                (0..rows).map(|i| (n(i) != 2).then(|| format!("s{}", n(i)))),
            )),
            Arc::new(Int64Array::from_iter_values((0..rows).map(|i| n(i) as i64))),
        ],
        Some((0..rows).map(|i| n(i) != 11).collect()),
    );
    let field = |name: &str, t: DataType, null: bool| Field::new(name, t, null);
    let schema = Schema::new(vec![
        field("id", DataType::Utf8, false),
        field("text", DataType::Utf8, true),
        field("n", DataType::Int64, true),
        field("score", DataType::Float64, true)
            .with_metadata(HashMap::from([("unit".into(), "points".into())])),
        field("at", times.data_type().clone(), true),
        field("price", decimals.data_type().clone(), true),
        field("blob", DataType::Binary, true),
        field(
            "tags",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
            true,
        ),
        field("meta", DataType::Struct(inner), true),
    ])
    .with_metadata(HashMap::from([("origin".into(), "dupfind-test".into())]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ids),
        Arc::new(StringArray::from(texts)),
        Arc::new(ints),
        Arc::new(floats),
        Arc::new(times),
        Arc::new(decimals),
        Arc::new(binary),
        Arc::new(list.finish()),
        Arc::new(meta),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

/// Writes `batch` to `rel` in row groups of 5 rows, snappy.
pub(super) fn write(t: &TestDir, rel: &str, batch: &RecordBatch) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(5))
        .set_compression(Compression::SNAPPY)
        .build();
    let file = File::create(t.join(rel)).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// The dataset in `dir`: its parts in name order, their schema (all the same) and rows.
fn read_dataset(dir: &Path) -> (SchemaRef, RecordBatch) {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    parts.sort();
    assert!(!parts.is_empty(), "no part in {}", dir.display());
    let mut schema = None;
    let mut batches = Vec::new();
    for p in parts {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap();
        let s = reader.schema().clone();
        assert!(
            schema.as_ref().is_none_or(|first| *first == s),
            "{}",
            p.display()
        );
        schema = Some(s);
        for b in reader.build().unwrap() {
            batches.push(b.unwrap());
        }
    }
    let schema = schema.unwrap();
    let rows = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    (schema, rows)
}

/// The rows of `batch` whose ids are in `ids`, in order.
pub(super) fn rows_with_ids(batch: &RecordBatch, keep: impl Fn(&str) -> bool) -> RecordBatch {
    let ids = batch
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let mask: BooleanArray = ids.iter().map(|id| Some(keep(id.unwrap()))).collect();
    arrow_select::filter::filter_record_batch(batch, &mask).unwrap()
}

/// The ids the report lists as duplicates, each with its cluster's id and size, its
/// representative's id and its similarity.
pub(super) fn duplicates(report: &Value) -> HashMap<String, (i64, i64, String, f64)> {
    let mut out = HashMap::new();
    for c in report["clusters"].as_array().unwrap() {
        for d in c["duplicates"].as_array().unwrap() {
            let value = (
                c["id"].as_i64().unwrap(),
                c["size"].as_i64().unwrap(),
                c["representative"]["id"].as_str().unwrap().to_string(),
                d["similarity"].as_f64().unwrap(),
            );
            out.insert(d["id"].as_str().unwrap().to_string(), value);
        }
    }
    out
}

/// The cluster id and size of every clustered id.
fn clustered(report: &Value) -> HashMap<String, (i64, i64)> {
    let mut out = HashMap::new();
    for c in report["clusters"].as_array().unwrap() {
        for m in c["members"].as_array().unwrap() {
            let value = (c["id"].as_i64().unwrap(), c["size"].as_i64().unwrap());
            out.insert(m["id"].as_str().unwrap().to_string(), value);
        }
    }
    out
}

fn columns(batch: &RecordBatch, range: std::ops::Range<usize>) -> Vec<ArrayRef> {
    batch.columns()[range].to_vec()
}

#[test]
fn a_parquet_dump_goes_back_out_with_its_schema_but_the_rows_listed_as_duplicates() {
    let t = TestDir::new();
    let input = table(0, 12);
    write(&t, "d.parquet", &input);
    let r = t.run(&["scan", "-v", "--write-dataset", "out", "d.parquet"]);
    // Row 10 has no text: an error of the report, yet a row of the dataset (no duplicate).
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    let dups = duplicates(&report);
    assert_eq!(dups.len(), 3, "{}", r.stdout);
    assert!(
        r.stderr.contains("dataset: 9 records written"),
        "{}",
        r.stderr
    );
    let (schema, rows) = read_dataset(&t.join("out"));
    assert!(t.join("out/part-00000-00000-d.parquet").exists());
    assert_eq!(schema.as_ref(), input.schema().as_ref());
    let expected = rows_with_ids(&input, |id| !dups.contains_key(id));
    assert_eq!(rows.columns(), expected.columns());
}

#[test]
fn annotate_writes_every_row_with_columns_that_agree_with_the_report() {
    let t = TestDir::new();
    let input = table(0, 12);
    write(&t, "d.parquet", &input);
    let r = t.run(&["scan", "--annotate", "--write-dataset", "out", "d.parquet"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    let (schema, rows) = read_dataset(&t.join("out"));
    let own = input.num_columns();
    assert_eq!(schema.fields()[..own], input.schema().fields()[..]);
    assert_eq!(schema.metadata(), input.schema().metadata());
    let added: Vec<(&str, &DataType, bool)> = (schema.fields()[own..].iter())
        .map(|f| (f.name().as_str(), f.data_type(), f.is_nullable()))
        .collect();
    assert_eq!(
        added,
        [
            ("dupfind_cluster", &DataType::Int64, true),
            ("dupfind_cluster_size", &DataType::Int64, true),
            ("dupfind_keep", &DataType::Boolean, false),
            ("dupfind_duplicate_of", &DataType::Utf8, true),
            ("dupfind_similarity", &DataType::Float64, true),
        ]
    );
    // Every row, that without text (r10) too.
    assert_eq!(columns(&rows, 0..own), input.columns());
    let dups = duplicates(&report);
    let clustered = clustered(&report);
    let ids = rows
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let get = |k: usize| rows.column(own + k).clone();
    let (cluster, size, keep, of, sim) = (get(0), get(1), get(2), get(3), get(4));
    let int = |a: &ArrayRef, i: usize| {
        let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
        a.is_valid(i).then(|| a.value(i))
    };
    let keep = keep.as_any().downcast_ref::<BooleanArray>().unwrap();
    let of = of.as_any().downcast_ref::<StringArray>().unwrap();
    let sim = sim.as_any().downcast_ref::<Float64Array>().unwrap();
    for i in 0..rows.num_rows() {
        let id = ids.value(i);
        let c = clustered.get(id);
        assert_eq!(int(&cluster, i), c.map(|c| c.0), "{id}");
        assert_eq!(int(&size, i), c.map(|c| c.1), "{id}");
        let d = dups.get(id);
        assert_eq!(keep.value(i), d.is_none(), "{id}");
        assert_eq!(
            of.is_valid(i).then(|| of.value(i)),
            d.map(|d| d.2.as_str()),
            "{id}"
        );
        assert_eq!(
            sim.is_valid(i).then(|| sim.value(i)),
            d.map(|d| d.3),
            "{id}"
        );
    }
    // Filtering on the keep column gives the deduplicated dataset.
    let kept = arrow_select::filter::filter_record_batch(&rows, keep).unwrap();
    let again = TestDir::new();
    write(&again, "d.parquet", &input);
    again.run(&["scan", "--write-dataset", "out", "d.parquet"]);
    let (_, plain) = read_dataset(&again.join("out"));
    assert_eq!(columns(&kept, 0..own), plain.columns());
}

#[test]
fn annotate_adds_fields_after_a_json_lines_record_and_a_file() {
    let t = TestDir::new();
    let a = text(9200, 250);
    let line1 = format!(
        r#"{{"id": "x1", "text": {}}}"#,
        serde_json::to_string(&a).unwrap()
    );
    let line2 = format!(
        r#"{{"text": {} , "id":"x2"}}"#,
        serde_json::to_string(&edit(&a, &[7])).unwrap()
    );
    t.write("d.jsonl", format!("{line1}\n{line2}\n"))
        .write("f.txt", text(9201, 100));
    let r = t.run(&[
        "scan",
        "--keep",
        "first",
        "--annotate",
        "--write-dataset",
        "out",
        ".",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let out = std::fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    // Each record's own bytes first, up to its closing brace.
    assert!(
        lines[0].starts_with(&line1[..line1.len() - 1]),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&line2[..line2.len() - 1]),
        "{}",
        lines[1]
    );
    let values: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(values[0]["dupfind_keep"], true);
    assert_eq!(values[0]["dupfind_cluster"], 0);
    assert_eq!(values[0]["dupfind_duplicate_of"], Value::Null);
    assert_eq!(values[1]["dupfind_keep"], false);
    assert_eq!(values[1]["dupfind_cluster_size"], 2);
    assert_eq!(values[1]["dupfind_duplicate_of"], "x1");
    let similarity = r.json()["clusters"][0]["duplicates"][0]["similarity"].clone();
    assert_eq!(values[1]["dupfind_similarity"], similarity);
    assert_eq!(values[2]["path"], "./f.txt");
    assert_eq!(values[2]["dupfind_keep"], true);
    assert_eq!(values[2]["dupfind_cluster"], Value::Null);
}

/// Runs the staged pipeline (contrib/staged/run-local.sh) with `shards` shards, 2 partitions and
/// the scan options and inputs `args`, in `t`.
pub(super) fn staged(t: &TestDir, shards: u32, work: &str, args: &[&str]) -> super::util::Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/staged/run-local.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script)
        .args([
            "--shards",
            &shards.to_string(),
            "--parts",
            "2",
            "--work",
            work,
        ])
        .args(["--dupfind", super::util::bin()])
        .args(args)
        .current_dir(t.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    run_command(cmd)
}

#[test]
fn the_staged_pipeline_writes_the_scans_tables_with_one_and_three_shards() {
    let t = TestDir::new();
    std::fs::create_dir(t.join("in")).unwrap();
    write(&t, "in/a.parquet", &table(0, 4));
    write(&t, "in/b.parquet", &table(4, 4));
    write(&t, "in/c.parquet", &table(8, 6));
    for annotate in [false, true] {
        let extra: &[&str] = if annotate { &["--annotate"] } else { &[] };
        fn args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
            [&["-q", "--write-dataset", out][..], extra, &["in"]].concat()
        }
        let run = |out: &'static str| args(out, extra);
        let scan = t.run(&[&["scan"][..], &run("scan-out")].concat());
        let (schema, rows) = read_dataset(&t.join("scan-out"));
        assert!(rows.num_rows() > 5);
        for shards in [1, 3] {
            let out = format!("staged-{shards}-out");
            let work = format!("w-{shards}-{annotate}");
            let r = staged(&t, shards, &work, &args(&out, extra));
            assert_eq!(
                (r.code(), &r.stdout),
                (scan.code(), &scan.stdout),
                "{}",
                r.stderr
            );
            let (s, staged_rows) = read_dataset(&t.join(&out));
            assert_eq!(
                (s, staged_rows),
                (schema.clone(), rows.clone()),
                "{shards} shards"
            );
            std::fs::remove_dir_all(t.join(&out)).unwrap();
        }
        std::fs::remove_dir_all(t.join("scan-out")).unwrap();
    }
}

#[test]
fn an_input_with_a_column_of_an_added_name_is_refused_naming_it() {
    let t = TestDir::new();
    let input = table(0, 6);
    let keep: ArrayRef = Arc::new(BooleanArray::from(vec![true; 6]));
    let mut fields: Vec<Field> = input
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("dupfind_keep", DataType::Boolean, false));
    let mut cols = input.columns().to_vec();
    cols.push(keep);
    let clash = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    write(&t, "d.parquet", &clash);
    let r = t.run(&["scan", "--annotate", "--write-dataset", "out", "d.parquet"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(r.stderr.contains("\"dupfind_keep\""), "{}", r.stderr);
    assert!(r.stderr.contains("--annotate-prefix"), "{}", r.stderr);
    assert!(!t.join("out").exists());
    let r = t.run(&[
        "scan",
        "--annotate",
        "--annotate-prefix",
        "dd_",
        "--write-dataset",
        "out",
        "d.parquet",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let (schema, _) = read_dataset(&t.join("out"));
    assert_eq!(schema.fields().last().unwrap().name(), "dd_similarity");
    // A JSON Lines record with such a field.
    t.write(
        "d.jsonl",
        "{\"text\": \"a b c d e f g\", \"dupfind_cluster\": 1}\n",
    );
    let r = t.run(&["scan", "--annotate", "--write-dataset", "out2", "d.jsonl"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("d.jsonl:1 already has a column \"dupfind_cluster\""),
        "{}",
        r.stderr
    );
    assert!(!t.join("out2/part-00000.jsonl").exists());
}

#[test]
fn a_directory_that_holds_a_dataset_is_refused_and_left_as_it_was() {
    let t = TestDir::new();
    t.mkdir("in");
    write(&t, "in/d.parquet", &table(0, 6));
    t.write("out/part-00000-00000.parquet", "older");
    let r = t.run(&["scan", "--write-dataset", "out", "in"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(r.stderr.contains("already holds a dataset"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(t.join("out/part-00000-00000.parquet")).unwrap(),
        "older"
    );
    assert_eq!(std::fs::read_dir(t.join("out")).unwrap().count(), 1);
    let r = staged(&t, 1, "w", &["--write-dataset", "out", "in"]);
    assert_ne!(r.code(), 0, "{}", r.stderr);
    assert!(r.stderr.contains("already holds a dataset"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(t.join("out")).unwrap().count(), 1);
}

#[test]
fn annotate_and_dataset_format_need_write_dataset() {
    let t = TestDir::new();
    t.write("a.txt", "some text here");
    for args in [
        &["--annotate"][..],
        &["--dataset-format", "jsonl"],
        &["--annotate-prefix", "x_"],
    ] {
        let r = t.run(&[&["scan"][..], args, &["a.txt"]].concat());
        assert_eq!(
            (r.code(), r.stdout.as_str()),
            (2, ""),
            "{args:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("--write-dataset") || r.stderr.contains("--annotate"),
            "{}",
            r.stderr
        );
    }
    // JSON Lines dumps have no schema to keep.
    t.write("d.jsonl", "{\"text\": \"a b c d e f g\"}\n");
    let r = t.run(&[
        "scan",
        "--write-dataset",
        "out",
        "--dataset-format",
        "parquet",
        "d.jsonl",
    ]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(r.stderr.contains("--dataset-format jsonl"), "{}", r.stderr);
}

#[test]
fn a_parquet_dump_written_as_json_lines_keeps_every_row_a_time_zone_included() {
    // The dump's Arrow schema names its time zone (Europe/Paris), which arrow-json cannot
    // write; as JSON Lines the rows are read with the Parquet schema's own types (UTC offsets).
    let t = TestDir::new();
    write(&t, "d.parquet", &table(0, 12));
    let r = t.run(&[
        "scan",
        "--write-dataset",
        "out",
        "--dataset-format",
        "jsonl",
        "d.parquet",
    ]);
    let report = r.json();
    let errors: Vec<&Value> = report["errors"].as_array().unwrap().iter().collect();
    assert_eq!(errors.len(), 1, "only row 10, without text: {errors:?}");
    let out = std::fs::read_to_string(t.join("out/part-00000.jsonl")).unwrap();
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Row 10, without text, is written all the same.
    assert_eq!(rows.len(), 12 - duplicates(&report).len());
    assert_eq!(rows[0]["id"], "r01");
    assert_eq!(rows[0]["price"], 123.45);
    assert!(rows[0]["at"]
        .as_str()
        .unwrap()
        .starts_with("2023-11-14T22:13:20.000001"));
}

#[test]
fn files_become_path_and_text_rows_a_part_per_run_of_files() {
    let t = TestDir::new();
    let a = text(9300, 200);
    t.write("in/a.txt", &a)
        .write("in/b.txt", edit(&a, &[3]))
        .write("in/c.txt", text(9301, 200));
    write(&t, "in/d.parquet", &table(0, 6));
    t.write("in/e.txt", text(9302, 200));
    let r = t.run(&[
        "scan",
        "--keep",
        "first",
        "--annotate",
        "--dataset-format",
        "parquet",
        "--write-dataset",
        "out",
        "in",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    // a, b, c; the dump; e: three parts, in input order, the dump's named after it.
    let names: Vec<String> = {
        let mut n: Vec<String> = std::fs::read_dir(t.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names,
        [
            "part-00000-00000.parquet",
            "part-00000-00001-d.parquet",
            "part-00000-00002.parquet"
        ]
    );
    let read = |name: &str| {
        let f = File::open(t.join("out").join(name)).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    };
    let files = read("part-00000-00000.parquet");
    let schema = files.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(&names[..2], ["path", "text"]);
    let column = |b: &RecordBatch, name: &str| -> Vec<Option<String>> {
        let a = b
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        a.iter().map(|v| v.map(str::to_string)).collect()
    };
    let paths = column(&files, "path");
    assert_eq!(
        paths,
        [
            Some("in/a.txt".into()),
            Some("in/b.txt".into()),
            Some("in/c.txt".into())
        ]
    );
    assert_eq!(column(&files, "text")[0].as_deref(), Some(a.as_str()));
    assert_eq!(
        column(&files, "dupfind_duplicate_of")[1].as_deref(),
        Some("in/a.txt")
    );
    assert_eq!(
        column(&read("part-00000-00002.parquet"), "path"),
        [Some("in/e.txt".into())]
    );
}

#[test]
fn with_keep_none_every_clustered_row_is_a_duplicate_of_no_kept_member() {
    let t = TestDir::new();
    write(&t, "d.parquet", &table(0, 6));
    let r = t.run(&[
        "scan",
        "--keep",
        "none",
        "--annotate",
        "--write-dataset",
        "out",
        "d.parquet",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let clustered = clustered(&r.json());
    assert_eq!(clustered.len(), 5, "{}", r.stdout);
    let (schema, rows) = read_dataset(&t.join("out"));
    let column = |name: &str| rows.column(schema.index_of(name).unwrap()).clone();
    let ids = column("id");
    let ids = ids.as_any().downcast_ref::<StringArray>().unwrap();
    let keep = column("dupfind_keep");
    let keep = keep.as_any().downcast_ref::<BooleanArray>().unwrap();
    let of = column("dupfind_duplicate_of");
    let sim = column("dupfind_similarity");
    for i in 0..rows.num_rows() {
        let in_cluster = clustered.contains_key(ids.value(i));
        assert_eq!(keep.value(i), !in_cluster, "{}", ids.value(i));
        assert!(of.is_null(i));
        assert_eq!(sim.is_valid(i), in_cluster);
    }
}

/// The codec of column `column` in each row group of the part `path`.
fn codecs(path: &Path, column: usize) -> Vec<Compression> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let groups = reader.metadata().row_groups();
    groups
        .iter()
        .map(|g| g.column(column).compression())
        .collect()
}

#[test]
fn row_groups_without_a_dropped_row_are_copied_in_their_codecs_the_others_encoded_again() {
    let t = TestDir::new();
    // Row groups of 5: the first holds duplicates; the second, with the row without text (no
    // document, yet a row of the dataset), and the four after them are written whole. Each
    // column in a codec of its own.
    let input = table(0, 30);
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(5))
        .set_compression(Compression::SNAPPY)
        .set_column_compression("text".into(), Compression::GZIP(Default::default()))
        .set_column_compression("n".into(), Compression::ZSTD(Default::default()))
        .set_column_compression("blob".into(), Compression::UNCOMPRESSED)
        .build();
    let file = File::create(t.join("d.parquet")).unwrap();
    let mut w = ArrowWriter::try_new(file, input.schema(), Some(props)).unwrap();
    w.write(&input).unwrap();
    w.close().unwrap();
    // As the footer gives them: without a level.
    let zstd = Compression::ZSTD(Default::default());
    let gzip = Compression::GZIP(Default::default());

    let r = t.run(&["scan", "--write-dataset", "out", "d.parquet"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let dups = duplicates(&r.json());
    let (schema, rows) = read_dataset(&t.join("out"));
    assert_eq!(schema.as_ref(), input.schema().as_ref());
    let expected = rows_with_ids(&input, |id| !dups.contains_key(id));
    assert_eq!(rows.columns(), expected.columns());
    // The kept rows of the first group encoded again; the other five as they were.
    let part = t.join("out/part-00000-00000-d.parquet");
    assert_eq!(codecs(&part, 1), [zstd, gzip, gzip, gzip, gzip, gzip]);
    assert_eq!(codecs(&part, 2)[1..], [zstd; 5]);

    let r = t.run(&["scan", "--annotate", "--write-dataset", "ann", "d.parquet"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let (schema, rows) = read_dataset(&t.join("ann"));
    let own = input.num_columns();
    assert_eq!(schema.fields()[..own], input.schema().fields()[..]);
    assert_eq!(schema.metadata(), input.schema().metadata());
    // Every row, that without text (r10) too.
    assert_eq!(columns(&rows, 0..own), input.columns());
    // Every group as it was, that with the row without text too; the added columns are zstd.
    let part = t.join("ann/part-00000-00000-d.parquet");
    assert_eq!(codecs(&part, 1), [gzip; 6]);
    // Leaf 12: the input has ten leaf columns (meta has two), then cluster, size, keep.
    assert_eq!(codecs(&part, 12), [zstd; 6]);
}

#[cfg(unix)]
#[test]
fn a_name_that_is_not_utf8_keeps_its_bytes_in_the_dataset_and_the_report_table() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let t = TestDir::new();
    let a = text(9300, 200);
    let odd = b"in/caf\xE9-\xFF.txt";
    t.write("in/a.txt", &a)
        .write(OsStr::from_bytes(odd), edit(&a, &[7]))
        .write("in/b.txt", text(9301, 200));
    let dataset = [
        "--dataset-format",
        "parquet",
        "--write-dataset",
        "out",
        "in",
    ];
    let r = t.run(&[&["scan", "--annotate"][..], &dataset].concat());
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let r = t.run(&["scan", "--format", "parquet", "-o", "r.parquet", "in"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let bytes_of = |rows: &RecordBatch| -> Vec<(String, Option<Vec<u8>>)> {
        let column = |name: &str| rows.column_by_name(name).unwrap().clone();
        let (paths, exact) = (column("path"), column("path_bytes"));
        let paths = paths.as_any().downcast_ref::<StringArray>().unwrap();
        let exact = exact.as_any().downcast_ref::<BinaryArray>().unwrap();
        (paths.iter().zip(exact))
            .map(|(p, b)| (p.unwrap().to_string(), b.map(<[u8]>::to_vec)))
            .collect()
    };
    let lossy = "in/caf\u{FFFD}-\u{FFFD}.txt".to_string();
    // The dataset: every file, the odd name's exact bytes beside its lossy path.
    let (schema, rows) = read_dataset(&t.join("out"));
    let field = schema.field_with_name("path_bytes").unwrap();
    assert_eq!(field.data_type(), &DataType::Binary);
    assert_eq!(
        bytes_of(&rows),
        [
            ("in/a.txt".to_string(), None),
            ("in/b.txt".to_string(), None),
            (lossy.clone(), Some(odd.to_vec())),
        ]
    );
    // The report's table: the cluster's two members, as the JSON report has them.
    let f = File::open(t.join("r.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
    let rows = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(
        bytes_of(&rows),
        [("in/a.txt".to_string(), None), (lossy, Some(odd.to_vec()))]
    );
}

/// The ids of the rows of `batch` (its first column, strings), in order.
fn ids_of(batch: &RecordBatch) -> Vec<String> {
    let ids = batch.column(0).as_any().downcast_ref::<StringArray>();
    ids.unwrap()
        .iter()
        .map(|id| id.unwrap().to_string())
        .collect()
}

/// Rows whose text is null or empty hold no document, yet are rows of the input: every one is
/// written with --annotate (kept, in no cluster), and by --write-dataset, as they are no
/// duplicates; the null text is the row's input error all the same. In every row group, copied
/// whole or encoded again, and in a JSON Lines dump too.
#[test]
fn rows_with_a_null_or_empty_text_are_written_and_annotated_as_kept() {
    let t = TestDir::new();
    let same = text(730, 40);
    let texts = [Some(same.as_str()), Some(same.as_str()), None, Some("")];
    // Twice: row groups of 5 rows, one with a duplicate (encoded again), one without (copied).
    let ids: Vec<String> = (0..8).map(|i| format!("r{i}")).collect();
    let other = text(731, 40);
    let texts: Vec<Option<&str>> = (0..8)
        .map(|i| match i {
            5 => Some(other.as_str()),
            i => texts[i % 4],
        })
        .collect();
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(StringArray::from(ids.clone())) as ArrayRef),
        ("text", Arc::new(StringArray::from(texts)) as ArrayRef),
    ])
    .unwrap();
    write(&t, "in.parquet", &batch);
    let run = t.run(&[
        "scan",
        "--id-field",
        "id",
        "in.parquet",
        "--write-dataset",
        "dd",
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let errors: Vec<(Value, Value)> = (run.json()["errors"].as_array().unwrap().iter())
        .map(|e| (e["line"].clone(), e["error"].clone()))
        .collect();
    assert_eq!(
        errors,
        [
            (3.into(), "\"text\" is null".into()),
            (7.into(), "\"text\" is null".into())
        ]
    );
    // r4 is the other copy of r0 and r1.
    let (_, rows) = read_dataset(&t.join("dd"));
    assert_eq!(ids_of(&rows), ["r0", "r2", "r3", "r5", "r6", "r7"]);

    let run = t.run(&[
        "scan",
        "-q",
        "--id-field",
        "id",
        "in.parquet",
        "--write-dataset",
        "ann",
        "--annotate",
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    // Rows, not lines: there is no JSON Lines dump.
    assert_eq!(
        run.stderr,
        "dupfind: 2 rows of Parquet dumps held no document (run without -q for details)\n"
    );
    let (_, rows) = read_dataset(&t.join("ann"));
    assert_eq!(ids_of(&rows), ids);
    let keep = rows.column_by_name("dupfind_keep").unwrap();
    let keep = keep.as_any().downcast_ref::<BooleanArray>().unwrap();
    let keep: Vec<bool> = keep.iter().map(Option::unwrap).collect();
    assert_eq!(keep, [true, false, true, true, false, true, true, true]);
    let cluster = rows.column_by_name("dupfind_cluster").unwrap();
    let nulls: Vec<bool> = (0..8).map(|k| cluster.is_null(k)).collect();
    assert_eq!(nulls, [false, false, true, true, false, true, true, true]);

    let lines = [
        serde_json::json!({"id": "a", "text": same}).to_string(),
        serde_json::json!({"id": "b", "text": same}).to_string(),
        r#"{"id":"c","text":null}"#.to_string(),
        r#"{"id":"d","text":""}"#.to_string(),
    ];
    t.write("in.jsonl", &(lines.join("\n") + "\n"));
    t.run(&["scan", "-q", "in.jsonl", "--write-dataset", "j"]);
    let part = std::fs::read_to_string(t.join("j/part-00000.jsonl")).unwrap();
    assert_eq!(
        part,
        [&lines[0], &lines[2], &lines[3]]
            .map(|l| format!("{l}\n"))
            .concat()
    );
}

/// Spark's and Hadoop's markers beside a dataset's parts are no inputs, as a dataset reader
/// never reads them: an empty `_SUCCESS` would be a file that is not Parquet, and make the
/// deduplicated dataset JSON Lines.
#[test]
fn spark_markers_beside_parquet_parts_are_no_inputs() {
    let t = TestDir::new();
    std::fs::create_dir(t.join("spark")).unwrap();
    write(&t, "spark/part-00000-abc.snappy.parquet", &table(0, 6));
    t.write("spark/_SUCCESS", "")
        .write("spark/_committed_123", "{}")
        .write("spark/._SUCCESS.crc", "crc")
        .write("spark/_common_metadata", "not a footer");
    let r = t.run(&["scan", "spark", "--write-dataset", "out"]);
    let report = r.json();
    assert_eq!(report["stats"]["files_seen"], 1, "{}", r.stdout);
    assert_eq!(report["stats"]["skipped"]["hidden"], 4, "{}", r.stdout);
    assert!(t
        .join("out/part-00000-00000-part-00000-abc.snappy.parquet")
        .exists());
    assert!(!t.join("out/part-00000.jsonl").exists());
}

/// A dump as DuckDB writes one (review finding 08): its JSON and UUID columns carry Parquet
/// logical types and no Arrow schema is embedded; rows 1 and 3 are copies.
fn write_duckdb_like(path: &Path, uuids: &[[u8; 16]]) {
    use parquet::data_type::{ByteArray, ByteArrayType, FixedLenByteArray, FixedLenByteArrayType};
    use parquet::file::writer::SerializedFileWriter;
    let schema = parquet::schema::parser::parse_message_type(
        "message duckdb_schema {
            required binary id (STRING);
            required binary text (STRING);
            required binary j (JSON);
            optional fixed_len_byte_array(16) u (UUID);
        }",
    )
    .unwrap();
    let props = Arc::new(WriterProperties::builder().build());
    let mut w =
        SerializedFileWriter::new(File::create(path).unwrap(), Arc::new(schema), props).unwrap();
    let mut group = w.next_row_group().unwrap();
    let texts = [text(9500, 200), text(9501, 200), text(9500, 200)];
    let strings = |v: Vec<String>| {
        (v.into_iter())
            .map(|s| ByteArray::from(s.into_bytes()))
            .collect::<Vec<_>>()
    };
    for values in [
        strings(vec!["r1".into(), "r2".into(), "r3".into()]),
        strings(texts.to_vec()),
        strings((0..3).map(|i| format!("{{\"a\":{i}}}")).collect()),
    ] {
        let mut col = group.next_column().unwrap().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(&values, None, None)
            .unwrap();
        col.close().unwrap();
    }
    let mut col = group.next_column().unwrap().unwrap();
    let values: Vec<FixedLenByteArray> = (uuids.iter())
        .map(|u| FixedLenByteArray::from(u.to_vec()))
        .collect();
    col.typed::<FixedLenByteArrayType>()
        .write_batch(&values, Some(&[1, 1, 1]), None)
        .unwrap();
    col.close().unwrap();
    group.close().unwrap();
    w.close().unwrap();
}

/// The UUID and JSON logical types of a dump (as DuckDB writes them) stay in its part, scanned
/// or staged, with and without --annotate: pyarrow reads the part's columns as the arrow.uuid
/// and arrow.json extension types, as it reads the dump's.
#[test]
fn a_dumps_uuid_and_json_columns_keep_their_types_in_the_dataset() {
    use parquet::basic::LogicalType;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let t = TestDir::new();
    std::fs::create_dir(t.join("in")).unwrap();
    let uuids = [[1u8; 16], [2; 16], [3; 16]];
    write_duckdb_like(&t.join("in/duck.parquet"), &uuids);
    for annotate in [false, true] {
        let extra: &[&str] = if annotate { &["--annotate"] } else { &[] };
        let scan = t.run(&[&["scan", "-q", "--write-dataset", "s", "in"][..], extra].concat());
        assert_eq!(scan.code(), 0, "{}", scan.stderr);
        let staged_args = [&["-q", "--write-dataset", "w"][..], extra, &["in"]].concat();
        let run = staged(&t, 2, &format!("work-{annotate}"), &staged_args);
        assert_eq!(
            (run.code(), &run.stdout),
            (0, &scan.stdout),
            "{}",
            run.stderr
        );
        for out in ["s", "w"] {
            let at = format!("{out}, --annotate {annotate}");
            let part = t.join(format!("{out}/part-00000-00000-duck.parquet"));
            let reader = SerializedFileReader::new(File::open(&part).unwrap()).unwrap();
            let columns = reader.metadata().file_metadata().schema_descr_ptr();
            let logical = |i: usize| columns.column(i).logical_type_ref().cloned();
            assert_eq!(logical(2), Some(LogicalType::Json), "{at}");
            assert_eq!(logical(3), Some(LogicalType::Uuid), "{at}");
            let (schema, rows) = read_dataset(&t.join(out));
            let extension = |name: &str| {
                let field = schema.field_with_name(name).unwrap();
                field.metadata().get("ARROW:extension:name").cloned()
            };
            assert_eq!(extension("j").as_deref(), Some("arrow.json"), "{at}");
            assert_eq!(extension("u").as_deref(), Some("arrow.uuid"), "{at}");
            let u = rows.column_by_name("u").unwrap();
            let u = u
                .as_any()
                .downcast_ref::<arrow_array::FixedSizeBinaryArray>()
                .unwrap();
            let got: Vec<&[u8]> = u.iter().map(Option::unwrap).collect();
            let want: Vec<&[u8]> = match annotate {
                true => uuids.iter().map(|u| &u[..]).collect(),
                false => uuids[..2].iter().map(|u| &u[..]).collect(),
            };
            assert_eq!(got, want, "{at}");
            std::fs::remove_dir_all(t.join(out)).unwrap();
        }
    }
}

/// A text column of Arrow type `null`, as pandas and pyarrow write a column of None only
/// (review 7, finding 02), holds rows whose text is null, not an unreadable dump: each row is
/// the input error of a null text, written by --write-dataset, annotated as kept and in no
/// cluster, its column left of type `null`; scanned or staged alike.
#[test]
fn a_text_column_of_type_null_is_rows_whose_text_is_null() {
    let t = TestDir::new();
    t.mkdir("in");
    let ids: Vec<String> = (0..7).map(|i| format!("n{i}")).collect();
    let nulls = RecordBatch::try_from_iter_with_nullable([
        (
            "id",
            Arc::new(StringArray::from(ids.clone())) as ArrayRef,
            false,
        ),
        (
            "text",
            Arc::new(arrow_array::NullArray::new(7)) as ArrayRef,
            true,
        ),
        (
            "n",
            Arc::new(Int64Array::from_iter_values(0..7)) as ArrayRef,
            false,
        ),
    ])
    .unwrap();
    // Two row groups.
    write(&t, "in/nulls.parquet", &nulls);
    for annotate in [false, true] {
        let extra: &[&str] = if annotate { &["--annotate"] } else { &[] };
        let args = |out: &'static str| {
            [
                &["--id-field", "id", "--write-dataset", out][..],
                extra,
                &["in"],
            ]
            .concat()
        };
        let scan = t.run(&[&["scan"][..], &args("s")].concat());
        assert_eq!(scan.code(), 2, "{}", scan.stderr);
        let errors: Vec<(Value, Value)> = (scan.json()["errors"].as_array().unwrap().iter())
            .map(|e| (e["line"].clone(), e["error"].clone()))
            .collect();
        let null: Vec<(Value, Value)> = (1..=7)
            .map(|line| (line.into(), "\"text\" is null".into()))
            .collect();
        assert_eq!(errors, null, "{}", scan.stdout);
        let (schema, rows) = read_dataset(&t.join("s"));
        assert_eq!(ids_of(&rows), ids, "--annotate {annotate}");
        assert_eq!(
            schema.field_with_name("text").unwrap().data_type(),
            &DataType::Null
        );
        if annotate {
            let keep = rows.column_by_name("dupfind_keep").unwrap();
            let keep = keep.as_any().downcast_ref::<BooleanArray>().unwrap();
            assert!(keep.iter().all(|k| k == Some(true)));
            let cluster = rows.column_by_name("dupfind_cluster").unwrap();
            assert_eq!(cluster.null_count(), 7);
        }
        let run = staged(&t, 2, &format!("work-{annotate}"), &args("w"));
        assert_eq!(
            (run.code(), &run.stdout, &run.stderr),
            (2, &scan.stdout, &scan.stderr)
        );
        assert_eq!(read_dataset(&t.join("w")), (schema, rows));
        std::fs::remove_dir_all(t.join("s")).unwrap();
        std::fs::remove_dir_all(t.join("w")).unwrap();
    }
}
