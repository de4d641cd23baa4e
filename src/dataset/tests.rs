//! The dataset of a Parquet dump that changed between the first pass and the writing.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::Compression;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::reader::{FileReader, SerializedFileReader};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};

use super::*;
use crate::config::scan_config;
use crate::ingest;
use crate::input::walk::walk;

/// Four rows of unrelated texts in two row groups, `fourth` the last text.
fn dump(path: &Path, fourth: &str) {
    let texts: Vec<String> = (1..4).map(|i| format!("text {i} ").repeat(40)).collect();
    let text: ArrayRef = Arc::new(StringArray::from(vec![
        texts[0].as_str(),
        &texts[1],
        &texts[2],
        fourth,
    ]));
    let id: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3, 4]));
    let batch = RecordBatch::try_from_iter([("id", id), ("text", text)]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2))
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The codec of each row group's text column in the Parquet file at `path`.
fn text_codecs(path: &Path) -> Vec<Compression> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let groups = reader.metadata().row_groups();
    groups.iter().map(|g| g.column(1).compression()).collect()
}

#[test]
fn a_row_group_whose_text_changed_after_the_first_pass_is_not_copied() {
    // The first pass takes each row group's print; the dump then changes in row 4 (the same
    // length, so every chunk keeps its place): row group 0 still has its print and is copied
    // as the dump has it (snappy), row group 1 is decoded, its row 3 written (zstd) and row 4
    // an error of the run.
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("d.parquet");
    let fourth = "text 4 ".repeat(40);
    dump(&path, &fourth);
    let out = t.path().join("out");
    let (root, out) = (path.to_str().unwrap(), out.to_str().unwrap());
    let mut cfg = scan_config(&["-q", "--write-dataset", out, "--annotate", root]).unwrap();
    cfg.messages.quiet = true;
    let walked = walk(&cfg.walk, &cfg.messages).unwrap();
    let layout = Layout::of(&walked.files);
    let engine = ingest::engine(&cfg, None);
    let signed = ingest::sign(&cfg, walked.files, &engine, true).unwrap();
    assert_eq!(signed.prints.get(&path).map(Vec::len), Some(2));
    let docs: Vec<DatasetDoc> = (signed.corpus.files.iter().zip(&signed.corpus.docs))
        .enumerate()
        .map(|(i, (file, d))| DatasetDoc {
            doc: i as u32,
            file,
            hash: d.hash,
            fate: None,
        })
        .collect();
    assert_eq!(docs.len(), 4);

    dump(&path, &"text 5 ".repeat(40));
    let dir = Path::new(out);
    let format = (DatasetFormat::Parquet, &layout);
    let written = write(dir, 0, format, &docs, &cfg, &engine, &signed.prints).unwrap();
    assert_eq!(written.kept, 3);
    let errors: Vec<(Option<u64>, &str)> = (written.errors.iter())
        .map(|e| (e.line, e.error.as_str()))
        .collect();
    assert_eq!(
        errors,
        [(Some(4), "not in the dataset: file changed during the scan")]
    );
    let part = dir.join("part-00000-00000-d.parquet");
    assert_eq!(
        text_codecs(&part),
        [Compression::SNAPPY, Compression::ZSTD(Default::default())]
    );
}

#[test]
fn decoding_ahead_stops_when_the_consumer_does() {
    // The consumer takes three items of an endless producer and returns: the producer, blocked
    // on the full channel, stops rather than holding the scope open.
    let taken = decoded_ahead(0u64.., |items| items.take(3).collect::<Vec<_>>());
    assert_eq!(taken, [0, 1, 2]);
}
