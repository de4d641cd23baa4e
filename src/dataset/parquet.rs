//! The dataset as Parquet (`--dataset-format parquet`): one part per input of the shard, in
//! order, `part-SSSSS-NNNNN.parquet`. A Parquet dump's part has the dump's schema exactly as
//! its writer's Arrow schema gives it (names, types, nesting, nullability, field and schema
//! metadata), its rows in their order; a run of files is one part of `{path, text}` rows. With
//! `--annotate`, the five added columns follow the input's own.
//!
//! Memory: the rows pass through a decoded batch at a time (the reader's bound), and the
//! writer holds one row group, cut at [`ROW_GROUP_BYTES`] or [`ROW_GROUP_ROWS`], whichever
//! comes first.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::annotate::{self, Annotation};
use super::{file_text, input_clash, inputs, DatasetDoc, DumpRows, Writing, Written};
use crate::atomic::Pending;
use crate::ingest::dumps::{open_records, Opened};
use crate::ingest::worker::DocWorker;
use crate::messages::display_path;
use crate::report::path_fields;

/// A row group is cut when its encoded size reaches this: the writer's memory, whatever the
/// size of the dataset.
const ROW_GROUP_BYTES: usize = 64 << 20;
/// ... or when it has this many rows (pyarrow's default row group length).
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Batches decoded and waiting for the writer's thread.
const IN_FLIGHT: usize = 2;
/// Files' texts gathered into a batch before it is handed to the writer.
const FILE_BATCH_BYTES: usize = 8 << 20;

/// The parts of shard `shard`'s `docs`, in `dir`.
pub(super) fn write(
    dir: &std::path::Path,
    shard: u32,
    docs: &[DatasetDoc],
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    for (n, (start, input)) in inputs(docs).enumerate() {
        let path = dir.join(format!("part-{shard:05}-{n:05}.parquet"));
        if input[0].file.record.is_none() {
            write_files(&path, start, input, how, worker, written)?;
            continue;
        }
        match open_records(input[0].file, &how.cfg.jsonl) {
            Ok(Opened::Parquet(dump)) => write_dump(&path, input, dump, how, written)?,
            Ok(Opened::Jsonl(..)) => bail!(
                "--dataset-format parquet: {} is a JSON Lines dump, whose records have no \
                 schema to keep; write the dataset as JSON Lines (--dataset-format jsonl)",
                display_path(&input[0].file.path)
            ),
            Err(reason) => {
                for d in input.iter().filter(|d| !how.drops(d)) {
                    let reason = format!("not in the dataset: {reason}");
                    written.errors.push(d.file.error(None, reason));
                }
                written.dropped += input.iter().filter(|d| how.drops(d)).count() as u64;
            }
        }
    }
    Ok(())
}

/// One Parquet dump's rows that are written, with its schema.
fn write_dump(
    path: &std::path::Path,
    docs: &[DatasetDoc],
    dump: crate::input::parquet::ParquetDump,
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    let rows = DumpRows::open(dump, true, docs, how)?;
    write_part(path, rows.written_schema(), |send| {
        rows.write(docs, how, written, |rows| send(rows).map(Ok))
    })
}

/// A run of files as `{path, text}` rows.
fn write_files(
    path: &std::path::Path,
    start: usize,
    docs: &[DatasetDoc],
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    let fields = vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
    ];
    let schema = Arc::new(Schema::new(fields));
    if let Some(name) = how.annotate.and_then(|p| input_clash(&schema, p)) {
        bail!("{}", annotate::clash_message("a file's record", name));
    }
    let annotated = how.annotate.map(|p| annotate::schema(&schema, p));
    let written_schema = annotated.clone().unwrap_or(schema.clone());
    write_part(path, written_schema, |send| {
        let mut batch = FileRows::default();
        for (i, d) in docs.iter().enumerate() {
            let Some(text) = file_text(worker, (start + i) as u32, d, how, written) else {
                continue;
            };
            written.kept += 1;
            batch.push(path_fields(&d.file.path).0, text, d);
            if batch.bytes >= FILE_BATCH_BYTES {
                send(batch.take(&schema, annotated.as_ref())?)?;
            }
        }
        if !batch.paths.is_empty() {
            send(batch.take(&schema, annotated.as_ref())?)?;
        }
        Ok(())
    })
}

/// Writes the batches `fill` sends to a new part at `path`, encoded and compressed on a thread
/// of its own while `fill` reads and selects the next ones: the two halves of the work overlap
/// (on the 100k benchmark dump, decoding and encoding each took about half). At most
/// [`IN_FLIGHT`] batches wait between them.
fn write_part(
    path: &std::path::Path,
    schema: SchemaRef,
    fill: impl FnOnce(&mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let mut part = Part::create(path, schema)?;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(IN_FLIGHT);
        let writer = scope.spawn(move || -> Result<Part> {
            for batch in rx {
                part.write(batch)?;
            }
            Ok(part)
        });
        let stopped = || anyhow::anyhow!("the writer of {} stopped", display_path(path));
        let filled = fill(&mut |batch| tx.send(batch).map_err(|_| stopped()));
        drop(tx);
        // The writer's own error first: a send fails only because the writer stopped.
        let part = writer.join().map_err(|_| stopped())??;
        filled?;
        part.commit()
    })
}

/// Files' rows gathered for one batch.
#[derive(Default)]
struct FileRows {
    paths: Vec<String>,
    texts: Vec<String>,
    annotations: Vec<Annotation>,
    bytes: usize,
}

impl FileRows {
    fn push(&mut self, path: String, text: String, d: &DatasetDoc) {
        self.bytes += path.len() + text.len();
        self.paths.push(path);
        self.texts.push(text);
        self.annotations.push(Annotation::of(d.fate));
    }

    fn take(&mut self, schema: &SchemaRef, annotated: Option<&SchemaRef>) -> Result<RecordBatch> {
        let rows = std::mem::take(self);
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(rows.paths)),
                Arc::new(StringArray::from(rows.texts)),
            ],
        )?;
        match annotated {
            Some(a) => annotate::append(&batch, a, &rows.annotations).map_err(anyhow::Error::msg),
            None => Ok(batch),
        }
    }
}

/// A part being written: zstd pages (level 1, as the staged pipeline's files: level 3 spent a
/// quarter of a profiled run compressing), bounded row groups, the schema's metadata also as
/// the file's key-value metadata (where pyarrow, DuckDB and Spark look for it), renamed into
/// place when whole.
struct Part {
    writer: ArrowWriter<std::io::BufWriter<std::fs::File>>,
    schema: SchemaRef,
    pending: Pending,
}

impl Part {
    fn create(path: &std::path::Path, schema: SchemaRef) -> Result<Part> {
        let pending = Pending::new(path)?;
        let file = (pending.file().try_clone())
            .with_context(|| format!("writing {}", display_path(path)))?;
        // Sorted: the schema's metadata is a hash map, and the same input must give the same
        // bytes.
        let mut kv: Vec<KeyValue> = (schema.metadata().iter())
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        kv.sort_by(|a, b| a.key.cmp(&b.key));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_key_value_metadata((!kv.is_empty()).then_some(kv))
            .build();
        let writer =
            ArrowWriter::try_new(std::io::BufWriter::new(file), schema.clone(), Some(props))
                .with_context(|| format!("writing {}", display_path(path)))?;
        Ok(Part {
            writer,
            schema,
            pending,
        })
    }

    fn write(&mut self, batch: RecordBatch) -> Result<()> {
        // Under the part's own schema, which carries the metadata a decoded batch may lack.
        let batch = batch.with_schema(self.schema.clone())?;
        let path = self.pending.path();
        (self.writer.write(&batch)).with_context(|| format!("writing {}", display_path(path)))
    }

    fn commit(self) -> Result<()> {
        let path = self.pending.path().to_path_buf();
        let what = || format!("writing {}", display_path(&path));
        let mut out = self.writer.into_inner().with_context(what)?;
        std::io::Write::flush(&mut out).with_context(what)?;
        drop(out);
        self.pending.commit()
    }
}
