//! The dataset as Parquet (`--dataset-format parquet`): one part per input of the shard, in
//! order, `part-SSSSS-NNNNN-STEM.parquet` in the input's hive partition directories
//! ([`super::layout`]). A Parquet dump's part has the dump's schema exactly as
//! its writer's Arrow schema gives it (names, types, nesting, nullability, field and schema
//! metadata), its rows in their order; a run of files is one part of `{path, text, path_bytes}`
//! rows (`path_bytes` binary, null unless the name is not UTF-8). With `--annotate`, the five
//! added columns follow the input's own. A dump's row group of which
//! every row is written is copied, its column chunks as the dump has them ([`write_dump`]).
//!
//! Memory: the rows pass through a decoded batch at a time (the reader's bound), and the
//! writer holds one row group, cut at [`ROW_GROUP_BYTES`] or [`ROW_GROUP_ROWS`], whichever
//! comes first; a copied row group passes through a buffer, its added columns (a few bytes a
//! row) encoded whole.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::{BinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;

use super::annotate::{self, Annotation};
use super::layout::{part_path, Layout};
use super::{file_text, input_clash, not_written, DatasetDoc, DumpRows, Piece, Writing, Written};
use crate::atomic::Pending;
use crate::ingest::dumps::{open_records, Opened};
use crate::ingest::worker::DocWorker;
use crate::input::parquet::RawGroup;
use crate::messages::display_path;
use crate::report::lossy_path_bytes;

/// A row group is cut when its encoded size reaches this: the writer's memory, whatever the
/// size of the dataset.
const ROW_GROUP_BYTES: usize = 64 << 20;
/// ... or when it has this many rows (pyarrow's default row group length).
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Batches decoded and waiting for the writer's thread.
const IN_FLIGHT: usize = 2;
/// Files' texts gathered into a batch before it is handed to the writer.
const FILE_BATCH_BYTES: usize = 8 << 20;

/// The parts of shard `shard`'s inputs (`layout`) in `dir`, where `layout` places them: a
/// dump's rows but those of `docs` dropped, files of `docs` with text. A dump that cannot be
/// opened now has no part; its documents are errors of the run (a dump without one was
/// unreadable in the scan, which said so, or changed since).
pub(super) fn write(
    dir: &std::path::Path,
    shard: u32,
    docs: &[DatasetDoc],
    layout: &Layout,
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    for input in layout.inputs(docs) {
        let input = input?;
        let Some(dump) = input.dump else {
            let path = part_path(dir, shard, input.part, &input.docs[0].file.path, false);
            write_files(&path, input.docs, how, worker, written)?;
            continue;
        };
        let path = part_path(dir, shard, input.part, &dump.path, true);
        match open_records(dump, &how.cfg.jsonl) {
            Ok(Opened::Parquet(rows)) => write_dump(&path, (dump, input.docs), rows, how, written)?,
            // `embed::scan_table` refuses --write-dataset: the caller adds the columns itself.
            Ok(Opened::Table(_)) => bail!("a table in memory is not written as a dataset"),
            Ok(Opened::Jsonl(..)) => bail!(
                "--dataset-format parquet: {} is a JSON Lines dump, whose records have no \
                 schema to keep; write the dataset as JSON Lines (--dataset-format jsonl)",
                display_path(&dump.path)
            ),
            Err(reason) => {
                for d in input.docs.iter().filter(|d| !how.drops(d)) {
                    written.errors.push(not_written(d, &reason));
                }
                written.dropped += input.docs.iter().filter(|d| how.drops(d)).count() as u64;
            }
        }
    }
    Ok(())
}

/// The rows of one Parquet dump (`rows`, opened from `dump`, whose documents are `docs`) that
/// are written, with its schema: a dump without rows gives a part of its schema and none. A
/// row group of which every row is written goes out as the dump has it, its column chunks
/// copied without decoding them (in the dump's compression), the added columns encoded beside
/// them; the others are decoded and encoded again, cut to the rows written.
fn write_dump(
    path: &std::path::Path,
    (dump, docs): (&crate::input::walk::FileEntry, &[DatasetDoc]),
    rows: crate::input::parquet::ParquetDump,
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    let rows = DumpRows::open(rows, dump, true, how)?;
    let input = rows.parquet_schema().clone();
    let part = write_part(path, rows.written_schema(), |part, send| {
        let copies = copies(part, &input);
        rows.write_groups(docs, how, written, copies, |piece| send(piece).map(Ok))
    })?;
    written.parts.push(part);
    Ok(())
}

/// A run of files as `{path, text, path_bytes}` rows.
fn write_files(
    path: &std::path::Path,
    docs: &[DatasetDoc],
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    // `path_bytes` as the JSON Lines records have it, but binary: a table's columns are the
    // same in every row, so it is there, null where the name is UTF-8.
    let fields = vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("path_bytes", DataType::Binary, true),
    ];
    let schema = Arc::new(Schema::new(fields));
    if let Some(name) = how.annotate.and_then(|p| input_clash(&schema, p)) {
        bail!("{}", annotate::clash_message("a file's record", name));
    }
    let annotated = how.annotate.map(|p| annotate::schema(&schema, p));
    let written_schema = annotated.clone().unwrap_or(schema.clone());
    let part = write_part(path, written_schema, |_, send| {
        let mut batch = FileRows::default();
        for d in docs {
            let Some(text) = file_text(worker, d, how, written) else {
                continue;
            };
            written.kept += 1;
            batch.push(&d.file.path, text, d);
            if batch.bytes >= FILE_BATCH_BYTES {
                send(Piece::Rows(batch.take(&schema, annotated.as_ref())?))?;
            }
        }
        if !batch.paths.is_empty() {
            send(Piece::Rows(batch.take(&schema, annotated.as_ref())?))?;
        }
        Ok(())
    })?;
    written.parts.push(part);
    Ok(())
}

/// Writes the pieces `fill` sends to a new part at `path` (whose Parquet columns `fill` is
/// given), encoded and compressed on a thread of its own while `fill` reads and selects the
/// next ones: the two halves of the work overlap (on the 100k benchmark dump, decoding and
/// encoding each took about half). At most [`IN_FLIGHT`] pieces wait between them. Returns
/// the part as committed.
fn write_part(
    path: &std::path::Path,
    schema: SchemaRef,
    fill: impl FnOnce(&SchemaDescriptor, &mut dyn FnMut(Piece) -> Result<()>) -> Result<()>,
) -> Result<super::PartFile> {
    let mut part = Part::create(path, schema)?;
    let columns = part.file.schema_descr().clone();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(IN_FLIGHT);
        let writer = scope.spawn(move || -> Result<Part> {
            for piece in rx {
                part.write(piece)?;
            }
            Ok(part)
        });
        let stopped = || anyhow::anyhow!("the writer of {} stopped", display_path(path));
        let filled = fill(&columns, &mut |piece| tx.send(piece).map_err(|_| stopped()));
        drop(tx);
        // The writer's own error first: a send fails only because the writer stopped.
        let part = writer.join().map_err(|_| stopped())??;
        filled?;
        part.commit()
    })
}

/// True when the leading columns of a part (`part`) are described exactly as the dump's
/// (`input`), so that the dump's column chunks can be copied into it: the part's schema comes
/// from the dump's Arrow schema, which does not always map back to the same Parquet types (an
/// older writer's annotations, say), and then every row group is decoded and encoded again.
fn copies(part: &SchemaDescriptor, input: &SchemaDescriptor) -> bool {
    input.num_columns() <= part.num_columns()
        && (input.columns().iter().zip(part.columns())).all(|(a, b)| a == b)
}

/// Files' rows gathered for one batch.
#[derive(Default)]
struct FileRows {
    paths: Vec<String>,
    texts: Vec<String>,
    path_bytes: Vec<Option<Vec<u8>>>,
    annotations: Vec<Annotation>,
    bytes: usize,
}

impl FileRows {
    fn push(&mut self, path: &std::path::Path, text: String, d: &DatasetDoc) {
        let (path, path_bytes) = (path.to_string_lossy().into_owned(), lossy_path_bytes(path));
        self.bytes += path.len() + text.len();
        self.paths.push(path);
        self.path_bytes.push(path_bytes);
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
                Arc::new(BinaryArray::from_iter(rows.path_bytes)),
            ],
        )?;
        match annotated {
            Some(a) => annotate::append(&batch, a, &rows.annotations).map_err(anyhow::Error::msg),
            None => Ok(batch),
        }
    }
}

/// A part being written: zstd pages (level 1, as the staged pipeline's files: level 3 spent a
/// quarter of a profiled run compressing; and not the dump's own codec: on the benchmark's
/// text in 1 MiB pages, snappy compressed at 590 MB/s to 1/2.2, LZ4 at 530 MB/s to 1/2.3,
/// zstd 1 at 510 MB/s to 1/3.4, so a faster codec would save little time for much more disk),
/// bounded row groups, the schema's metadata also as the file's key-value metadata (where
/// pyarrow, DuckDB and Spark look for it), renamed into place when whole. Rows are encoded as
/// `ArrowWriter` encodes them, its column writers driven here so that a row group copied from
/// the dump can go between two encoded ones.
struct Part {
    file: SerializedFileWriter<std::io::BufWriter<std::fs::File>>,
    encoders: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The row group being filled: its columns' writers and rows.
    open: Option<(Vec<ArrowColumnWriter>, usize)>,
    /// Row groups written.
    groups: usize,
    pending: Pending,
}

impl Part {
    fn create(path: &std::path::Path, schema: SchemaRef) -> Result<Part> {
        let pending = Pending::new(path)?;
        let what = || format!("writing {}", display_path(path));
        let file = pending.file().try_clone().with_context(what)?;
        // Sorted: the schema's metadata is a hash map, and the same input must give the same
        // bytes.
        let mut kv: Vec<KeyValue> = (schema.metadata().iter())
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        kv.sort_by(|a, b| a.key.cmp(&b.key));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_key_value_metadata((!kv.is_empty()).then_some(kv))
            .build();
        // The Arrow writer makes the Parquet schema and embeds the Arrow one (ARROW:schema).
        let writer =
            ArrowWriter::try_new(std::io::BufWriter::new(file), schema.clone(), Some(props))
                .with_context(what)?;
        let (file, encoders) = writer.into_serialized_writer().with_context(what)?;
        Ok(Part {
            file,
            encoders,
            schema,
            open: None,
            groups: 0,
            pending,
        })
    }

    fn write(&mut self, piece: Piece) -> Result<()> {
        let path = self.pending.path().to_path_buf();
        let written = match piece {
            Piece::Rows(batch) => self.encode(batch),
            Piece::Group(raw, added) => self.copy(&raw, added),
        };
        written.with_context(|| format!("writing {}", display_path(&path)))
    }

    /// Encodes `batch` into the open row group, which is closed when it reaches
    /// [`ROW_GROUP_BYTES`] or [`ROW_GROUP_ROWS`] (after the batch that reaches it).
    fn encode(&mut self, batch: RecordBatch) -> Result<()> {
        let (writers, rows) = match &mut self.open {
            Some(open) => open,
            None => {
                let writers = self.encoders.create_column_writers(self.groups)?;
                self.open.insert((writers, 0))
            }
        };
        // Under the part's own schema, which carries the metadata a decoded batch may lack.
        let batch = batch.with_schema(self.schema.clone())?;
        encode_columns(writers, &batch)?;
        *rows += batch.num_rows();
        let bytes: usize = writers.iter().map(|w| w.get_estimated_total_bytes()).sum();
        if *rows >= ROW_GROUP_ROWS || bytes >= ROW_GROUP_BYTES {
            self.close_open()?;
        }
        Ok(())
    }

    /// Closes the row group being filled, if any.
    fn close_open(&mut self) -> Result<()> {
        let Some((writers, _)) = self.open.take() else {
            return Ok(());
        };
        let mut group = self.file.next_row_group()?;
        for w in writers {
            w.close()?.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.groups += 1;
        Ok(())
    }

    /// Writes `raw` as a row group of its own, with the `added` columns encoded after it.
    fn copy(&mut self, raw: &RawGroup, added: Option<RecordBatch>) -> Result<()> {
        self.close_open()?;
        let mut writers = self.encoders.create_column_writers(self.groups)?;
        let mut group = self.file.next_row_group()?;
        raw.append_to(&mut group)?;
        if let Some(added) = added {
            // The added columns are the last, a leaf each.
            let mut writers = writers.split_off(writers.len().saturating_sub(added.num_columns()));
            encode_columns(&mut writers, &added)?;
            for w in writers {
                w.close()?.append_to_row_group(&mut group)?;
            }
        }
        group.close()?;
        self.groups += 1;
        Ok(())
    }

    fn commit(mut self) -> Result<super::PartFile> {
        let path = self.pending.path().to_path_buf();
        let what = || format!("writing {}", display_path(&path));
        self.close_open().with_context(what)?;
        let mut out = self.file.into_inner().with_context(what)?;
        std::io::Write::flush(&mut out).with_context(what)?;
        drop(out);
        super::commit_part(self.pending)
    }
}

/// Encodes the columns of `batch` with `writers`, a writer per leaf column in order.
fn encode_columns(writers: &mut [ArrowColumnWriter], batch: &RecordBatch) -> Result<()> {
    let mut writers = writers.iter_mut();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        for leaf in compute_leaves(field, column)? {
            let writer = writers.next().context("a leaf column without its writer")?;
            writer.write(&leaf)?;
        }
    }
    Ok(())
}
