//! The deduplicated dataset (`--write-dataset DIR`): every document with text that is not
//! listed as a duplicate (with `--annotate`: every document, and where it stands in the report),
//! each field kept. The filter step people run after deduplicating, made safe: only
//! `duplicates` (verified against a representative that is kept) are left out, never `linked`
//! members. Documents without text (empty, binary, unreadable, bad lines) carry nothing and are
//! left out too.
//!
//! Two formats ([`DatasetFormat`]). JSON Lines, one file per shard (`part-SSSSS.jsonl`): a
//! record of a JSON Lines dump as its original line (every field of the record, byte for
//! byte), a row of a Parquet dump as a JSON object of all its columns (as arrow-json writes
//! them, nulls included), a file as `{"path", "text"}` (and `path_bytes` when the path is not
//! UTF-8). Parquet ([`parquet`]), one file per input (`part-SSSSS-NNNNN.parquet`, the NNNNN-th
//! input of shard SSSSS; a run of files is one input): a Parquet dump's rows with its schema.
//! The parts in name order are the dataset; each is written under a temporary name and renamed
//! when whole.
//!
//! The inputs are read a second time, in input order, each dump streamed once; a document whose
//! content no longer hashes as it did when it was scanned is not written and is an error of the
//! run, like a file that changed during the scan.

mod annotate;
mod inputs;
mod parquet;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use xxhash_rust::xxh3::xxh3_128;

use crate::atomic::Pending;
use crate::config::{Config, DatasetFormat};
use crate::ingest::dumps::{open_records, Opened};
use crate::ingest::worker::{DocWorker, Engine};
use crate::input::jsonl::{Line, RawLine};
use crate::input::parquet::{ParquetDump, RowBatch, WholeRows};
use crate::input::read::{decode, Decoded};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};
use crate::report::path_fields;

pub use annotate::{marks, Fate, Mark};
pub use inputs::{check_inputs, refuse_existing};

use annotate::Annotation;

/// One document of the dataset's inputs.
pub struct DatasetDoc<'a> {
    /// Where it is.
    pub file: &'a FileEntry,
    /// Its content hash when it was scanned.
    pub hash: u128,
    /// Its cluster, when it is in one.
    pub fate: Option<Fate<'a>>,
}

impl DatasetDoc<'_> {
    /// Listed as a duplicate.
    fn duplicate(&self) -> bool {
        self.fate.is_some_and(|f| f.duplicate.is_some())
    }
}

/// What writing the dataset did.
#[derive(Debug, Default)]
pub struct Written {
    /// Records written.
    pub kept: u64,
    /// Duplicates left out.
    pub dropped: u64,
    /// Documents that could not be read again, or changed.
    pub errors: Vec<InputError>,
}

/// How the documents are written: the added columns' prefix with `--annotate`.
struct Writing<'a> {
    cfg: &'a Config,
    annotate: Option<&'a str>,
}

impl Writing<'_> {
    /// Left out: a duplicate, unless every document is written.
    fn drops(&self, d: &DatasetDoc) -> bool {
        self.annotate.is_none() && d.duplicate()
    }
}

/// The dataset's JSON Lines file of a scan, or of shard `part` of a staged run.
fn part_path(dir: &Path, part: u32) -> PathBuf {
    dir.join(format!("part-{part:05}.jsonl"))
}

/// Writes shard `shard`'s part of the dataset (a scan is shard 0) to `dir` in `format`: `docs`
/// (in input order; a dump's records one after another), but the duplicates, each file
/// atomically.
pub fn write(
    dir: &Path,
    shard: u32,
    format: DatasetFormat,
    docs: &[DatasetDoc],
    cfg: &Config,
    engine: &Engine,
) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
    let how = Writing {
        cfg,
        annotate: cfg.annotate.as_deref(),
    };
    let mut written = Written::default();
    let mut worker = DocWorker::new(engine);
    let to = match format {
        DatasetFormat::Jsonl => {
            let path = part_path(dir, shard);
            write_jsonl(&path, docs, &how, &mut worker, &mut written)?;
            path
        }
        DatasetFormat::Parquet => {
            parquet::write(dir, shard, docs, &how, &mut worker, &mut written)?;
            dir.to_path_buf()
        }
    };
    let what = if how.annotate.is_some() {
        format!("{} of them duplicates", written.dropped)
    } else {
        format!("{} duplicates left out", written.dropped)
    };
    cfg.messages.note(&format!(
        "dataset: {} records written to {}, {what}",
        written.kept,
        display_path(&to)
    ));
    Ok(written)
}

/// The inputs of `docs`, in order, each with the index of its first document: a dump's records,
/// or a run of files.
fn inputs<'d, 'a>(
    docs: &'d [DatasetDoc<'a>],
) -> impl Iterator<Item = (usize, &'d [DatasetDoc<'a>])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = docs.get(i)?;
        let same = |d: &DatasetDoc| match (&first.file.record, &d.file.record) {
            (None, None) => true,
            (Some(_), Some(_)) => d.file.path == first.file.path && d.file.id == first.file.id,
            _ => false,
        };
        let start = i;
        i += docs[i..].iter().take_while(|d| same(d)).count();
        Some((start, &docs[start..i]))
    })
}

/// The JSON Lines part: `docs` that are written, one line each.
fn write_jsonl(
    path: &Path,
    docs: &[DatasetDoc],
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    let pending = Pending::new(path)?;
    let mut out = std::io::BufWriter::new(pending.file());
    for (start, input) in inputs(docs) {
        if input[0].file.record.is_some() {
            write_records(&mut out, input, how, written)?;
            continue;
        }
        for (i, d) in input.iter().enumerate() {
            if let Some(text) = file_text(worker, (start + i) as u32, d, how, written) {
                write_file(&mut out, d, &text, how)?;
                written.kept += 1;
            }
        }
    }
    out.flush()
        .with_context(|| format!("writing {}", display_path(path)))?;
    drop(out);
    pending.commit()
}

/// The text of file `d` when it is written: None when it is dropped (counted), has no text, or
/// changed (an error of the run).
fn file_text(
    worker: &mut DocWorker,
    doc: u32,
    d: &DatasetDoc,
    how: &Writing,
    written: &mut Written,
) -> Option<String> {
    if how.drops(d) {
        written.dropped += 1;
        return None;
    }
    let bytes = match worker.content(doc, d.file, d.hash) {
        Ok(b) => b,
        Err(reason) => {
            written
                .errors
                .push(d.file.error(None, format!("not in the dataset: {reason}")));
            return None;
        }
    };
    let Decoded::Text(text) = decode(&bytes) else {
        return None;
    };
    written.dropped += u64::from(d.duplicate());
    Some(text.into_owned())
}

/// A file's record: `{"path", "text"}` (and `path_bytes` when the path is not UTF-8), with the
/// added fields when annotating.
fn write_file(out: &mut impl Write, d: &DatasetDoc, text: &str, how: &Writing) -> Result<()> {
    let (path, path_bytes) = path_fields(&d.file.path);
    let mut record = serde_json::json!({"path": path, "text": text});
    if let Some(b) = path_bytes {
        record["path_bytes"] = b.into();
    }
    let mut line = serde_json::to_vec(&record)?;
    if let Some(prefix) = how.annotate {
        line = annotate::splice(&line, prefix, &Annotation::of(d.fate))
            .context("a file's record is a JSON object")?;
    }
    out.write_all(&line)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The records `docs` of one dump, each its original line unless dropped (with the added
/// fields when annotating).
fn write_records(
    out: &mut impl Write,
    docs: &[DatasetDoc],
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    let cfg = how.cfg;
    let fail = |written: &mut Written, d: &DatasetDoc, reason: &str| {
        let reason = format!("not in the dataset: {reason}");
        written.errors.push(d.file.error(None, reason));
    };
    let mut reader = match open_records(docs[0].file, &cfg.jsonl) {
        Ok(Opened::Jsonl(r, _)) => r,
        Ok(Opened::Parquet(dump)) => return write_rows(out, docs, dump, how, written),
        Err(reason) => {
            docs.iter()
                .filter(|d| !how.drops(d))
                .for_each(|d| fail(written, d, &reason));
            return Ok(());
        }
    };
    let mut at = 0;
    while at < docs.len() {
        let Some(raw) = reader.next_raw() else { break };
        let RawLine::Json { line, bytes, .. } = raw else {
            // The stream failed: the records not reached are not written.
            break;
        };
        // A record's line that is no longer one (the dump changed) is passed.
        while at < docs.len() && line_of(&docs[at]) < line {
            if how.drops(&docs[at]) {
                written.dropped += 1;
            } else {
                fail(written, &docs[at], "file changed during the scan");
            }
            at += 1;
        }
        if at == docs.len() || line_of(&docs[at]) != line {
            continue;
        }
        let d = &docs[at];
        at += 1;
        if how.drops(d) {
            written.dropped += 1;
            continue;
        }
        let raw = RawLine::Json {
            line,
            offset: 0,
            bytes: bytes.clone(),
        };
        let same = match raw.parse(&cfg.jsonl) {
            Line::Doc { text, .. } => xxh3_128(text.as_bytes()) == d.hash,
            _ => false,
        };
        if !same {
            fail(written, d, "file changed during the scan");
            continue;
        }
        match how.annotate {
            None => out.write_all(&bytes)?,
            Some(prefix) => {
                let place = || format!("{}:{line}", display_path(&d.file.path));
                if let Some(name) = annotate::clash_in_line(&bytes, prefix) {
                    bail!("{}", annotate::clash_message(&place(), &name));
                }
                let spliced = annotate::splice(&bytes, prefix, &Annotation::of(d.fate))
                    .with_context(|| format!("{}: the record is not a JSON object", place()))?;
                out.write_all(&spliced)?;
            }
        }
        out.write_all(b"\n")?;
        written.kept += 1;
        written.dropped += u64::from(d.duplicate());
    }
    for d in docs[at..].iter().filter(|d| !how.drops(d)) {
        fail(written, d, "the dump ended before the record");
    }
    written.dropped += docs[at..].iter().filter(|d| how.drops(d)).count() as u64;
    Ok(())
}

/// The rows `docs` of one Parquet dump, each as a JSON object of all its columns (and the
/// added ones when annotating) unless dropped.
fn write_rows(
    out: &mut impl Write,
    docs: &[DatasetDoc],
    dump: ParquetDump,
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    DumpRows::open(dump, false, docs, how)?.write(docs, how, written, |rows| {
        // Written to memory first, so that a column arrow-json cannot write leaves no half
        // line.
        let mut buf = Vec::new();
        let mut w = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(&mut buf);
        let json = utc_offsets(&rows)
            .and_then(|rows| w.write(&rows))
            .and_then(|()| w.finish());
        drop(w);
        match json {
            Ok(()) => Ok(out.write_all(&buf).map(Ok)?),
            Err(e) => Ok(Err(format!("its row cannot be written as JSON: {e}"))),
        }
    })
}

/// `batch` with every time zone named in its types (`UTC`, `Europe/Paris`, at any depth) as the
/// offset `+00:00`: arrow-json writes a timestamp only with an offset (it would need the time
/// zone database for a name), and a timestamp with a zone is an instant, the same in any zone.
fn utc_offsets(batch: &RecordBatch) -> Result<RecordBatch, arrow_schema::ArrowError> {
    use arrow_schema::{DataType, Field, Schema};
    fn offsets(t: &DataType) -> DataType {
        let field = |f: &Field| Arc::new(f.clone().with_data_type(offsets(f.data_type())));
        match t {
            DataType::Timestamp(unit, Some(_)) => DataType::Timestamp(*unit, Some("+00:00".into())),
            DataType::List(f) => DataType::List(field(f)),
            DataType::LargeList(f) => DataType::LargeList(field(f)),
            DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
            DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
            DataType::Struct(fs) => DataType::Struct(fs.iter().map(|f| field(f)).collect()),
            DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(offsets(v))),
            other => other.clone(),
        }
    }
    fn retype(
        data: arrow_data::ArrayData,
    ) -> Result<arrow_data::ArrayData, arrow_schema::ArrowError> {
        let t = offsets(data.data_type());
        if &t == data.data_type() {
            return Ok(data);
        }
        let children = (data.child_data().iter().cloned())
            .map(retype)
            .collect::<Result<Vec<_>, _>>()?;
        data.into_builder()
            .data_type(t)
            .child_data(children)
            .build()
    }
    let schema = batch.schema();
    if schema
        .fields()
        .iter()
        .all(|f| &offsets(f.data_type()) == f.data_type())
    {
        return Ok(batch.clone());
    }
    let fields: Vec<Field> = (schema.fields().iter())
        .map(|f| f.as_ref().clone().with_data_type(offsets(f.data_type())))
        .collect();
    let columns = (batch.columns().iter())
        .map(|c| retype(c.to_data()).map(arrow_array::make_array))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// The first top-level column of `schema` that is also an added column's name.
fn input_clash<'s>(schema: &'s arrow_schema::Schema, prefix: &str) -> Option<&'s str> {
    annotate::clash(prefix, schema.fields().iter().map(|f| f.name().as_str()))
}

/// A Parquet dump's rows, to be written: their schema, and with `--annotate` the schema with
/// the added columns.
struct DumpRows {
    rows: WholeRows,
    schema: SchemaRef,
    annotated: Option<SchemaRef>,
}

impl DumpRows {
    /// The rows of `dump` (of `docs`), `typed` as its writer's Arrow schema says; a dump that
    /// has a column of an added name is refused.
    fn open(
        dump: ParquetDump,
        typed: bool,
        docs: &[DatasetDoc],
        how: &Writing,
    ) -> Result<DumpRows> {
        let rows = dump.whole_rows(typed);
        let schema = rows.schema();
        if let Some(name) = how.annotate.and_then(|p| input_clash(&schema, p)) {
            let input = display_path(&docs[0].file.path);
            bail!("{}", annotate::clash_message(&input, name));
        }
        let annotated = how.annotate.map(|p| annotate::schema(&schema, p));
        Ok(DumpRows {
            rows,
            schema,
            annotated,
        })
    }

    /// The schema of the rows written.
    fn written_schema(&self) -> SchemaRef {
        self.annotated
            .clone()
            .unwrap_or_else(|| self.schema.clone())
    }

    /// The rows written, a decoded batch at a time: each batch cut to the rows of `docs`
    /// written and unchanged (with the added columns when annotating), passed to `emit`, which
    /// writes them or says why it cannot (the rows' error).
    fn write(
        self,
        docs: &[DatasetDoc],
        how: &Writing,
        written: &mut Written,
        mut emit: impl FnMut(RecordBatch) -> Result<Result<(), String>>,
    ) -> Result<()> {
        let mut at = 0;
        for batch in self.rows {
            // A row group that fails ends the reading: the rows not reached are errors below.
            let Ok(batch) = batch else { break };
            let end = batch.first + batch.batch.num_rows() as u64;
            let start = at;
            while at < docs.len() && line_of(&docs[at]) < end {
                at += 1;
            }
            let (keep, kept) = select(&docs[start..at], &batch, how, written);
            if kept.is_empty() {
                continue;
            }
            let mut rows = arrow_select::filter::filter_record_batch(&batch.batch, &keep.into())
                .context("selecting the rows of the dataset")?;
            if let Some(schema) = &self.annotated {
                let values: Vec<Annotation> = kept.iter().map(|d| Annotation::of(d.fate)).collect();
                rows = annotate::append(&rows, schema, &values).map_err(anyhow::Error::msg)?;
            }
            match emit(rows)? {
                Ok(()) => {
                    written.kept += kept.len() as u64;
                    written.dropped += kept.iter().filter(|d| d.duplicate()).count() as u64;
                }
                Err(reason) => {
                    for d in kept {
                        let reason = format!("not in the dataset: {reason}");
                        written.errors.push(d.file.error(None, reason));
                    }
                }
            }
        }
        for d in docs[at..].iter().filter(|d| !how.drops(d)) {
            let reason = "not in the dataset: the dump ended before the row".to_string();
            written.errors.push(d.file.error(None, reason));
        }
        written.dropped += docs[at..].iter().filter(|d| how.drops(d)).count() as u64;
        Ok(())
    }
}

/// The 1-based line (or Parquet row) of a dump record.
fn line_of(d: &DatasetDoc) -> u64 {
    d.file.record.as_ref().map_or(0, |r| r.line)
}

/// Which rows of `batch` are written: the rows of `docs` (all within `batch`, in order) not
/// dropped and unchanged, as a mask over the batch and their documents.
fn select<'d, 'a>(
    docs: &'d [DatasetDoc<'a>],
    batch: &RowBatch,
    how: &Writing,
    written: &mut Written,
) -> (Vec<bool>, Vec<&'d DatasetDoc<'a>>) {
    let mut keep = vec![false; batch.batch.num_rows()];
    let mut kept = Vec::new();
    for d in docs {
        if how.drops(d) {
            written.dropped += 1;
            continue;
        }
        let k = line_of(d).checked_sub(batch.first).map(|k| k as usize);
        let text = k.and_then(|k| batch.text(k));
        match (k, text) {
            (Some(k), Some(t)) if xxh3_128(t.as_bytes()) == d.hash => {
                keep[k] = true;
                kept.push(d);
            }
            _ => written.errors.push((d.file).error(
                None,
                "not in the dataset: file changed during the scan".into(),
            )),
        }
    }
    (keep, kept)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, StructArray, TimestampSecondArray};
    use arrow_schema::{DataType, Field, TimeUnit};

    #[test]
    fn named_time_zones_become_utc_offsets_at_any_depth() {
        let at: ArrayRef =
            Arc::new(TimestampSecondArray::from(vec![0, 86_400]).with_timezone("Europe/Paris"));
        let inner = StructArray::from(vec![(
            Arc::new(Field::new("at", at.data_type().clone(), false)),
            at.clone(),
        )]);
        let batch =
            RecordBatch::try_from_iter([("at", at), ("s", Arc::new(inner) as ArrayRef)]).unwrap();
        let out = utc_offsets(&batch).unwrap();
        let zoned = DataType::Timestamp(TimeUnit::Second, Some("+00:00".into()));
        assert_eq!(out.schema().field(0).data_type(), &zoned);
        let DataType::Struct(fields) = out.schema().field(1).data_type().clone() else {
            panic!()
        };
        assert_eq!(fields[0].data_type(), &zoned);
        let mut buf = Vec::new();
        let mut w = arrow_json::LineDelimitedWriter::new(&mut buf);
        w.write(&out).unwrap();
        w.finish().unwrap();
        let json = String::from_utf8(buf).unwrap();
        assert!(
            json.starts_with(r#"{"at":"1970-01-01T00:00:00Z","s":{"at":"1970-01-01T00:00:00Z"}}"#),
            "{json}"
        );
    }
}
