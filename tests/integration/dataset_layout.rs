//! Where a Parquet dataset's parts go and what they keep: a hive-partitioned dump's part in its
//! `key=value` directories, named after its input and numbered by it (an input without a part
//! shifts no other), however the inputs were named and in the staged pipeline alike; a dump
//! without a document written whole, one without rows as its schema; the dump's dictionary
//! types, a dictionary text column's too.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::dataset_parquet::{duplicates, rows_with_ids, staged, table, write};
use super::util::TestDir;

/// The Parquet files below `dir`, relative to it, in name order of the part (its directories
/// aside): the dataset's order.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "parquet") {
                found.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    found
}

/// The schema and rows of the Parquet file at `path`, as arrow-rs reads it (typed as its
/// writer's Arrow schema says, as pyarrow reads it).
fn read(path: &Path) -> (SchemaRef, RecordBatch) {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = reader.schema().clone();
    let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
    let rows = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    (schema, rows)
}

/// The rows of every part below `dir`, in the dataset's order.
fn rows_of(dir: &Path) -> Vec<RecordBatch> {
    parts(dir).iter().map(|p| read(&dir.join(p)).1).collect()
}

/// `crawl/`, partitioned by `lang` and `day`: lang=en/day=01 (6 rows, with near-copies),
/// lang=fr/day=01 (no row), lang=fr/day=02 (6 rows), lang=fr/day=03 (not readable).
fn hive(t: &TestDir) -> [RecordBatch; 2] {
    for d in ["lang=en/day=01", "lang=fr/day=01", "lang=fr/day=02"] {
        t.mkdir(format!("crawl/{d}"));
    }
    let (en, fr) = (table(0, 6), table(6, 6));
    write(t, "crawl/lang=en/day=01/part-0.parquet", &en);
    write(t, "crawl/lang=fr/day=01/part-0.parquet", &table(0, 0));
    write(t, "crawl/lang=fr/day=02/part-0.parquet", &fr);
    t.write(
        "crawl/lang=fr/day=03/part-0.parquet",
        "PAR1 and then no footer",
    );
    [en, fr]
}

const EN: &str = "lang=en/day=01/part-00000-00000-part-0.parquet";
/// The dump without rows: a part of its schema and none.
const FR_EMPTY: &str = "lang=fr/day=01/part-00000-00001-part-0.parquet";
const FR: &str = "lang=fr/day=02/part-00000-00002-part-0.parquet";

#[test]
fn a_hive_partitioned_dumps_parts_keep_its_directories_and_are_numbered_by_input() {
    // Review finding 09: the parts were flat and numbered by the parts written
    // (`part-00000-00001.parquet` for lang=fr/day=02), so a hive reader of the dataset lost
    // `lang` and `day`, and nothing said which input a part held.
    let t = TestDir::new();
    let [en, fr] = hive(&t);
    let r = t.run(&["scan", "--write-dataset", "out", "crawl"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("lang=fr/day=03/part-0.parquet"),
        "{}",
        r.stderr
    );
    let want = [EN, FR_EMPTY, FR].map(PathBuf::from);
    assert_eq!(parts(&t.join("out")), want);
    // Each part the rows of its input but the duplicates, its schema the input's.
    let dups = duplicates(&r.json());
    assert!(!dups.is_empty(), "{}", r.stdout);
    for (part, input) in [(EN, &en), (FR, &fr)] {
        let (schema, rows) = read(&t.join("out").join(part));
        assert_eq!(schema, input.schema(), "{part}");
        let kept = rows_with_ids(input, |id| !dups.contains_key(id));
        assert_eq!(rows.columns(), kept.columns(), "{part}");
    }
    let (schema, rows) = read(&t.join("out").join(FR_EMPTY));
    assert_eq!((schema, rows.num_rows()), (en.schema(), 0));

    // The inputs named one by one, or listed: the same parts. A dump named alone is numbered
    // 0, in its directories all the same.
    let files = "crawl/lang=en/day=01/part-0.parquet\ncrawl/lang=fr/day=01/part-0.parquet\n\
                 crawl/lang=fr/day=02/part-0.parquet\ncrawl/lang=fr/day=03/part-0.parquet\n";
    t.write("list", files);
    let r = t.run(&["scan", "--files-from", "list", "--write-dataset", "listed"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(parts(&t.join("listed")), parts(&t.join("out")));
    assert_eq!(rows_of(&t.join("listed")), rows_of(&t.join("out")));
    let one = "crawl/lang=fr/day=02/part-0.parquet";
    let r = t.run(&["scan", "--write-dataset", "one", one]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let alone = "lang=fr/day=02/part-00000-00000-part-0.parquet";
    assert_eq!(parts(&t.join("one")), [Path::new(alone)]);

    // The staged pipeline: one shard writes scan's parts; three, the same rows in shard order,
    // each part in its input's directories.
    for shards in [1, 3] {
        let out = format!("staged-{shards}");
        let r = staged(
            &t,
            shards,
            &format!("w{shards}"),
            &["--write-dataset", &out, "crawl"],
        );
        assert_eq!(r.code(), 2, "{}", r.stderr);
        let got = parts(&t.join(&out));
        if shards == 1 {
            assert_eq!(got, parts(&t.join("out")));
        }
        let dirs: Vec<&Path> = got.iter().map(|p| p.parent().unwrap()).collect();
        let want_dirs = ["lang=en/day=01", "lang=fr/day=01", "lang=fr/day=02"];
        assert_eq!(dirs, want_dirs.map(Path::new));
        assert_eq!(rows_of(&t.join(&out)), rows_of(&t.join("out")), "{shards}");
    }

    // A directory whose dataset is in partition directories only holds one all the same.
    let r = t.run(&["scan", "--write-dataset", "out", "crawl"]);
    assert_eq!((r.code(), r.stdout.as_str()), (2, ""), "{}", r.stderr);
    assert!(
        r.stderr.contains("already holds a dataset (lang=") && r.stderr.contains("/part-00000-"),
        "{}",
        r.stderr
    );
    assert_eq!(parts(&t.join("out")), want);
}

#[test]
fn two_inputs_of_one_name_never_share_a_part() {
    let t = TestDir::new();
    for d in ["a/k=1", "b/k=1"] {
        t.mkdir(d);
    }
    let inputs = [
        "a/k=1/x.parquet",
        "a/x.parquet",
        "b/k=1/x.parquet",
        "b/x.parquet",
    ];
    for (i, input) in inputs.iter().enumerate() {
        write(&t, input, &table(20 + 6 * i, 6));
    }
    let r = t.run(&["scan", "--write-dataset", "out", "a", "b"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let want = [
        "k=1/part-00000-00000-x.parquet",
        "part-00000-00001-x.parquet",
        "k=1/part-00000-00002-x.parquet",
        "part-00000-00003-x.parquet",
    ];
    assert_eq!(parts(&t.join("out")), want.map(PathBuf::from));
    for (part, input) in want.iter().zip(inputs) {
        assert_eq!(
            read(&t.join("out").join(part)),
            read(&t.join(input)),
            "{part}"
        );
    }
}

/// `batch` with its string column `name` dictionary-encoded.
fn dictionary(batch: &RecordBatch, name: &str) -> RecordBatch {
    let at = batch.schema().index_of(name).unwrap();
    let strings = batch.column(at).as_any().downcast_ref::<StringArray>();
    let encoded: DictionaryArray<Int32Type> = strings.unwrap().iter().collect();
    let mut fields: Vec<Field> = (batch.schema().fields().iter())
        .map(|f| f.as_ref().clone())
        .collect();
    fields[at] = Field::new(name, encoded.data_type().clone(), true);
    let mut columns = batch.columns().to_vec();
    columns[at] = Arc::new(encoded) as ArrayRef;
    let schema = Schema::new(fields).with_metadata(batch.schema().metadata().clone());
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

#[test]
fn dictionary_columns_stay_dictionaries_a_dictionary_text_too() {
    // Review finding 15: a dictionary text column made the part's every column plain, the
    // dictionaries lost.
    let t = TestDir::new();
    let mut input = dictionary(&table(0, 12), "text");
    let langs: DictionaryArray<Int32Type> = (0..12).map(|i| ["en", "fr"][i % 2]).collect();
    let mut fields: Vec<Field> = (input.schema().fields().iter())
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("lang", langs.data_type().clone(), false));
    let mut columns = input.columns().to_vec();
    columns.push(Arc::new(langs));
    let schema = Schema::new(fields).with_metadata(input.schema().metadata().clone());
    input = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
    // Row groups of 5: the first holds duplicates and is encoded again, the others are copied.
    write(&t, "d.parquet", &input);
    let (schema, _) = read(&t.join("d.parquet"));
    let text = schema.field_with_name("text").unwrap().data_type();
    assert!(matches!(text, DataType::Dictionary(..)), "{text}");

    let r = t.run(&["scan", "--write-dataset", "out", "d.parquet"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let dups = duplicates(&r.json());
    assert_eq!(dups.len(), 3, "{}", r.stdout);
    let (got, rows) = read(&t.join("out/part-00000-00000-d.parquet"));
    assert_eq!(got, schema);
    let kept = rows_with_ids(&input, |id| !dups.contains_key(id));
    assert_eq!(rows.columns(), kept.columns());

    // Annotated: the dump's columns as they were, every row; the staged pipeline's part (which
    // checks the texts of the groups it copies by decoding them) is scan's.
    for extra in [&[][..] as &[&str], &["--annotate"]] {
        let args = [&["--write-dataset", "ann"][..], extra, &["d.parquet"]].concat();
        let r = t.run(&[&["scan"][..], &args].concat());
        assert_eq!(r.code(), 2, "{}", r.stderr);
        let (got, rows) = read(&t.join("ann/part-00000-00000-d.parquet"));
        assert_eq!(got.fields()[..input.num_columns()], schema.fields()[..]);
        if !extra.is_empty() {
            assert_eq!(rows.columns()[..input.num_columns()], input.columns()[..]);
        }
        let args: Vec<&str> = (args.iter())
            .map(|&a| if a == "ann" { "staged" } else { a })
            .collect();
        let r = staged(&t, 1, &format!("w{}", extra.len()), &args);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        let staged = read(&t.join("staged/part-00000-00000-d.parquet"));
        assert_eq!(staged, (got, rows));
        std::fs::remove_dir_all(t.join("ann")).unwrap();
        std::fs::remove_dir_all(t.join("staged")).unwrap();
    }
}

/// `batch` without a document: its text null in every row but the second, which is empty.
pub(super) fn without_text(batch: &RecordBatch) -> RecordBatch {
    let texts: StringArray = (0..batch.num_rows())
        .map(|i| (i == 1).then_some(""))
        .collect();
    let mut columns = batch.columns().to_vec();
    columns[1] = Arc::new(texts);
    RecordBatch::try_new(batch.schema(), columns).unwrap()
}

/// The concatenated JSON Lines parts in `dir`, in name order.
fn jsonl_parts(dir: &Path) -> String {
    let mut parts: Vec<PathBuf> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    parts.sort();
    parts
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[test]
fn a_dump_without_a_document_is_written_whole_one_without_rows_as_its_schema() {
    // Issue 27: a Parquet dump whose every text was null or empty got no part (the writer went
    // through the inputs that held documents), its rows lost, in scan and the staged pipeline,
    // as Parquet and as JSON Lines; a JSON Lines dump whose records all lacked the text too. A
    // dump without rows now has a part of its schema and no row, as one whose rows are all
    // duplicates has.
    let t = TestDir::new();
    t.mkdir("in");
    let empty = without_text(&table(12, 4));
    let inputs = [table(0, 6), empty.clone(), table(0, 0), table(6, 6)];
    for (name, batch) in ["a", "b", "c", "d"].iter().zip(&inputs) {
        write(&t, &format!("in/{name}.parquet"), batch);
    }
    let want = ["a", "b", "c", "d"].map(|n| {
        let at = n.as_bytes()[0] - b'a';
        PathBuf::from(format!("part-00000-0000{at}-{n}.parquet"))
    });
    for extra in [&[][..], &["--annotate"]] {
        let out = format!("out{}", extra.len());
        let args = [&["--write-dataset", &out][..], extra, &["in"]].concat();
        let r = t.run(&[&["scan"][..], &args].concat());
        assert_eq!(r.code(), 2, "the null texts: {}", r.stderr);
        assert_eq!(parts(&t.join(&out)), want);
        for (part, input) in want.iter().zip(&inputs).skip(1).take(2) {
            let (schema, rows) = read(&t.join(&out).join(part));
            let n = input.num_columns();
            assert_eq!(
                schema.fields()[..n],
                input.schema().fields()[..],
                "{part:?}"
            );
            assert_eq!(rows.columns()[..n], input.columns()[..], "{part:?}");
            if let Some(keep) = rows.column_by_name("dupfind_keep") {
                let all = arrow_array::BooleanArray::from(vec![true; input.num_rows()]);
                assert_eq!(keep.as_ref(), &all, "{part:?}");
                let cluster = rows.column_by_name("dupfind_cluster").unwrap();
                assert_eq!(cluster.null_count(), rows.num_rows(), "{part:?}");
            }
        }
        for shards in [1, 3] {
            let staged_out = format!("staged{}-{shards}", extra.len());
            let args: Vec<&str> = (args.iter())
                .map(|&a| if a == out { &staged_out } else { a })
                .collect();
            let r = staged(&t, shards, &format!("w{}-{shards}", extra.len()), &args);
            assert_eq!(r.code(), 2, "{}", r.stderr);
            let got = parts(&t.join(&staged_out));
            if shards == 1 {
                assert_eq!(got, want);
            }
            assert_eq!(got.len(), want.len(), "{shards} shards");
            let read_all = |dir: &str| -> Vec<(SchemaRef, RecordBatch)> {
                let dir = t.join(dir);
                parts(&dir).iter().map(|p| read(&dir.join(p))).collect()
            };
            assert_eq!(read_all(&staged_out), read_all(&out), "{shards} shards");
        }
    }

    // As JSON Lines: the dump's rows in the one part, in scan and in 3 shards alike.
    let jsonl = |out| ["--write-dataset", out, "--dataset-format", "jsonl", "in"];
    let r = t.run(&[&["scan"][..], &jsonl("j")].concat());
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let part = jsonl_parts(&t.join("j"));
    let ids: Vec<String> = (part.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .filter(|id| ["\"r13\"", "\"r14\"", "\"r15\"", "\"r16\""].contains(&id.as_str()))
        .collect();
    assert_eq!(ids.len(), 4, "{part}");
    let r = staged(&t, 3, "wj", &jsonl("js"));
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(jsonl_parts(&t.join("js")), part);

    // A JSON Lines dump whose records all lack the text, between two that have documents: its
    // lines as they are, annotated as kept in no cluster.
    let doc =
        |id: &str, seed: u64| serde_json::json!({"id": id, "text": super::util::text(seed, 80)});
    let lines = |records: &[serde_json::Value]| -> String {
        records.iter().map(|r| format!("{r}\n")).collect()
    };
    let none = "{\"id\":\"y1\"}\n{\"id\":\"y2\",\"text\":null,\"n\":1}\n";
    t.write(
        "jl/x.jsonl",
        lines(&[doc("x1", 1), doc("x2", 1), doc("x3", 2)]),
    )
    .write("jl/y.jsonl", none)
    .write("jl/z.jsonl", lines(&[doc("z1", 3), doc("z2", 2)]));
    for extra in [&[][..], &["--annotate"]] {
        let out = format!("jl-out{}", extra.len());
        let args = [&["--write-dataset", &out][..], extra, &["jl"]].concat();
        let r = t.run(&[&["scan"][..], &args].concat());
        assert_eq!(r.code(), 2, "{}", r.stderr);
        let part = jsonl_parts(&t.join(&out));
        let ys: Vec<&str> = part.lines().filter(|l| l.contains("\"y")).collect();
        if extra.is_empty() {
            assert_eq!(ys, none.lines().collect::<Vec<_>>(), "{part}");
        } else {
            assert_eq!(ys.len(), 2, "{part}");
            assert!(
                ys.iter().all(|l| l.contains("\"dupfind_keep\":true")),
                "{part}"
            );
        }
        let staged_out = format!("jl-staged{}", extra.len());
        let args: Vec<&str> = (args.iter())
            .map(|&a| if a == out { &staged_out } else { a })
            .collect();
        let r = staged(&t, 3, &format!("wjl{}", extra.len()), &args);
        assert_eq!(r.code(), 2, "{}", r.stderr);
        assert_eq!(jsonl_parts(&t.join(&staged_out)), part);
    }
}
