#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::io::{Seek, Write};
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::*;
use crate::input::jsonl::field_path;

fn opts(text: &str, id: &str, max_line: u64) -> JsonlOptions {
    JsonlOptions {
        text_field: field_path(text).unwrap(),
        id_field: field_path(id).unwrap(),
        keep_field: None,
        max_line,
    }
}

/// `batch` written to a temporary file, `group` rows per row group, pages of a few rows.
fn parquet(batch: &RecordBatch, group: usize) -> File {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_data_page_row_count_limit(2)
        .set_write_batch_size(2)
        .set_compression(Compression::SNAPPY)
        .build();
    written(batch, props)
}

/// `batch` written to a temporary file with `props`, the file at its start.
pub(super) fn written(batch: &RecordBatch, props: WriterProperties) -> File {
    let mut file = tempfile::tempfile().unwrap();
    let mut w =
        ArrowWriter::try_new(file.try_clone().unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    file.rewind().unwrap();
    file
}

fn texts(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// Six rows: ids 10..16, texts "t1".."t6" except a null at row 4 and a long text at row 5.
fn six_rows() -> RecordBatch {
    let long = "x".repeat(100);
    let text = texts(&[
        Some("t1"),
        Some("t2"),
        Some("t3"),
        None,
        Some(&long),
        Some("t6"),
    ]);
    let id: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(10),
        Some(11),
        None,
        Some(13),
        Some(14),
        Some(15),
    ]));
    RecordBatch::try_from_iter([("id", id), ("text", text)]).unwrap()
}

fn show(rows: Rows) -> Vec<String> {
    rows.map(|row| match row {
        Row::Doc { line, id, text, .. } => format!("{line} {id:?} {text}"),
        Row::Bad { line, reason } => format!("{line} bad: {reason}"),
        Row::Failed { line, reason } => format!("{line} failed: {reason}"),
        Row::Unread {
            first,
            last,
            reason,
        } => format!("{first}-{last} unread: {reason}"),
    })
    .collect()
}

#[test]
fn rows_are_numbered_across_row_groups_with_bad_rows_in_place() {
    let file = parquet(&six_rows(), 4);
    let dump = ParquetDump::open(file, &opts("text", "id", 50)).unwrap();
    assert_eq!(dump.group_starts(), [0, 4, 6]);
    let want = [
        r#"1 Some("10") t1"#,
        r#"2 Some("11") t2"#,
        "3 None t3",
        r#"4 bad: "text" is null"#,
        r#"5 bad: "text" longer than 50 bytes"#,
        r#"6 Some("15") t6"#,
    ];
    assert_eq!(show(dump.rows()), want);
}

#[test]
fn reads_back_only_the_rows_asked_for() {
    let file = parquet(&six_rows(), 2);
    let dump = ParquetDump::open(file, &opts("text", "id", 1000)).unwrap();
    // Row 4 is null (left out), row 9 lies beyond the end, row 0 does not exist.
    let wanted = BTreeMap::from([(0, 90), (1, 10), (4, 40), (5, 50), (6, 60), (9, 99)]);
    let got: Vec<(u32, String)> = dump
        .texts(wanted)
        .map(|(d, t)| (d, String::from_utf8(t).unwrap()))
        .collect();
    let want = [(10, "t1".into()), (50, "x".repeat(100)), (60, "t6".into())];
    assert_eq!(got, want);
}

#[test]
fn nested_text_and_id_columns() {
    let body = StructArray::from(vec![
        (
            Arc::new(Field::new("text", DataType::Utf8, true)),
            texts(&[Some("a"), Some("b"), None]),
        ),
        (
            Arc::new(Field::new("url", DataType::Utf8, true)),
            texts(&[Some("u1"), None, Some("u3")]),
        ),
    ]);
    let batch = RecordBatch::try_from_iter([("body", Arc::new(body) as ArrayRef)]).unwrap();
    let dump = ParquetDump::open(parquet(&batch, 10), &opts("body.text", "body.url", 100));
    let want = [
        r#"1 Some("u1") a"#,
        "2 None b",
        r#"3 bad: "body.text" is null"#,
    ];
    assert_eq!(show(dump.unwrap().rows()), want);
}

#[test]
fn a_missing_or_wrong_text_column_lists_the_columns() {
    let id: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let raw: ArrayRef = Arc::new(BinaryArray::from(vec![&b"x"[..]]));
    let batch = RecordBatch::try_from_iter([("id", id), ("raw", raw)]).unwrap();
    let open =
        |text: &str, id: &str| ParquetDump::open(parquet(&batch, 10), &opts(text, id, 100)).err();
    let got = open("text", "id");
    assert_eq!(
        got.as_deref(),
        Some(r#"no column "text" (columns: id, raw)"#)
    );
    let got = open("raw", "id");
    assert_eq!(
        got.as_deref(),
        Some(r#"column "raw" is binary, not a string (columns: id, raw)"#)
    );
    let got = open("id", "x");
    assert_eq!(
        got.as_deref(),
        Some(r#"column "id" is int64, not a string (columns: id, raw)"#)
    );
}

#[test]
fn an_unusable_id_column_is_an_error_and_a_missing_one_gives_no_ids() {
    let text = texts(&[Some("a")]);
    let raw: ArrayRef = Arc::new(BinaryArray::from(vec![&b"x"[..]]));
    let batch = RecordBatch::try_from_iter([("text", text), ("raw", raw)]).unwrap();
    let err = ParquetDump::open(parquet(&batch, 10), &opts("text", "raw", 100)).err();
    assert!(err
        .unwrap()
        .starts_with(r#"column "raw" is binary, which cannot name"#));
    let dump = ParquetDump::open(parquet(&batch, 10), &opts("text", "id", 100)).unwrap();
    assert_eq!(show(dump.rows()), ["1 None a"]);
}

#[test]
fn a_file_that_is_not_parquet_or_lost_its_footer_is_an_error() {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"PAR1 and then nothing").unwrap();
    assert!(starts_with_magic(&Source::from(file.try_clone().unwrap())).unwrap());
    let err = ParquetDump::open(file, &opts("text", "id", 100))
        .err()
        .unwrap();
    assert!(err.starts_with("not a readable Parquet file: "), "{err}");
    let empty = tempfile::tempfile().unwrap();
    assert!(!starts_with_magic(&Source::from(empty)).unwrap());
}

#[test]
fn a_damaged_row_group_ends_the_reading_after_the_rows_before_it() {
    let mut file = parquet(&six_rows(), 2);
    let dump = ParquetDump::open(file.try_clone().unwrap(), &opts("text", "id", 1000)).unwrap();
    // Overwrite the text column's chunk of row group 1 (rows 3-4) with garbage.
    let chunk = dump.meta.metadata().row_group(1).column(1);
    let (start, len) = chunk.byte_range();
    file.seek(std::io::SeekFrom::Start(start)).unwrap();
    file.write_all(&vec![0xA5; len as usize]).unwrap();
    let got = show(dump.rows());
    assert_eq!(got[..2], [r#"1 Some("10") t1"#, r#"2 Some("11") t2"#]);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[2].starts_with("2 failed: row group 1 (rows 3-4): "),
        "{got:?}"
    );
}

#[test]
fn reading_back_leaves_out_the_rows_of_a_damaged_row_group_only() {
    let mut file = parquet(&six_rows(), 2);
    let dump = ParquetDump::open(file.try_clone().unwrap(), &opts("text", "id", 1000)).unwrap();
    let (start, len) = dump.meta.metadata().row_group(1).column(1).byte_range();
    file.seek(std::io::SeekFrom::Start(start)).unwrap();
    file.write_all(&vec![0xA5; len as usize]).unwrap();
    let wanted = BTreeMap::from([(1, 10), (3, 30), (6, 60)]);
    let got: Vec<u32> = dump.texts(wanted).map(|(d, _)| d).collect();
    assert_eq!(got, [10, 60]);
}

/// 200 rows of one 512 KiB dictionary entry: a footer size of a few KB a row, 100 MiB decoded.
#[test]
fn a_batch_of_dictionary_rows_is_sized_by_the_text_they_decode_to() {
    let entry = "lorem ipsum ".repeat(512 << 10 >> 4);
    let text: ArrayRef = Arc::new(StringArray::from(vec![entry.as_str(); 200]));
    let batch = RecordBatch::try_from_iter([("text", text)]).unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_page_size_limit(4 << 20)
        .set_compression(Compression::ZSTD(Default::default()))
        .build();
    let dump = ParquetDump::open(written(&batch, props), &opts("text", "id", 1 << 20)).unwrap();
    let mut reader = dump.reader(0, Leaves::TextAndId, None, None).unwrap();
    // Two rows, a mebibyte of text: the footer's sizes made it all 200 at once.
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 2);
    let rows: Vec<Row> = dump.rows().collect();
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r.text_len() == entry.len()));
}

#[test]
fn a_dictionary_text_column_is_read_as_strings() {
    // As pyarrow writes a categorical column: the embedded Arrow schema says dictionary.
    let text: arrow_array::DictionaryArray<arrow_array::types::Int32Type> =
        vec!["a", "b", "a"].into_iter().collect();
    let batch = RecordBatch::try_from_iter([("text", Arc::new(text) as ArrayRef)]).unwrap();
    let dump = ParquetDump::open(parquet(&batch, 10), &opts("text", "id", 100)).unwrap();
    assert_eq!(show(dump.rows()), ["1 None a", "2 None b", "3 None a"]);
}

#[test]
fn lz4_brotli_and_lzo_pages_are_not_read() {
    assert_eq!(unread_codec(Codec::SNAPPY), None);
    assert_eq!(unread_codec(Codec::GZIP(Default::default())), None);
    assert_eq!(unread_codec(Codec::ZSTD(Default::default())), None);
    assert_eq!(unread_codec(Codec::LZ4_RAW), Some("LZ4_RAW"));
    assert_eq!(
        unread_codec(Codec::BROTLI(Default::default())),
        Some("Brotli")
    );
}

#[test]
fn a_row_groups_print_taken_while_reading_is_that_of_its_text_chunks_bytes() {
    // Pages of two rows, the id column's pages read between the text's, a dictionary page
    // first or none: what the reader took of the text chunk hashes as the chunk's raw bytes.
    let make = |fifth: &str| {
        let text = texts(&[Some("t1"), Some("t2"), Some("t3"), Some("t4"), Some(fifth)]);
        let id: ArrayRef = Arc::new(Int64Array::from(vec![10, 11, 12, 13, 14]));
        RecordBatch::try_from_iter([("id", id), ("text", text)]).unwrap()
    };
    for dictionary in [true, false] {
        let props = || {
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(3))
                .set_data_page_row_count_limit(2)
                .set_write_batch_size(2)
                .set_dictionary_enabled(dictionary)
                .set_compression(Compression::SNAPPY)
                .build()
        };
        let file = written(&make("t5"), props());
        let prints = Arc::new(std::sync::Mutex::new(Vec::new()));
        let dump = ParquetDump::open(file.try_clone().unwrap(), &opts("text", "id", 100));
        assert_eq!(dump.unwrap().rows_printed(Arc::clone(&prints)).count(), 5);
        let prints = prints.lock().unwrap().clone();
        assert_eq!(
            prints.iter().map(TextPrint::group).collect::<Vec<_>>(),
            [0, 1]
        );
        let now = ParquetDump::open(file, &opts("text", "id", 100)).unwrap();
        let now = now.whole_rows(true);
        assert_eq!(
            now.text_print(0),
            Some(prints[0]),
            "dictionary {dictionary}"
        );
        assert_eq!(
            now.text_print(1),
            Some(prints[1]),
            "dictionary {dictionary}"
        );
        // Row 5's text changed, its length kept: the second group's print changes.
        let changed = written(&make("T5"), props());
        let changed = ParquetDump::open(changed, &opts("text", "id", 100)).unwrap();
        let changed = changed.whole_rows(true);
        assert_eq!(changed.text_print(0), Some(prints[0]));
        assert_ne!(changed.text_print(1), Some(prints[1]));
    }
}
