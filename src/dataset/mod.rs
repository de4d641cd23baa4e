//! The deduplicated dataset (`--write-dataset DIR`): every document with text that is not
//! listed as a duplicate (with `--annotate`: every document, and where it stands in the report),
//! each field kept. The filter step people run after deduplicating, made safe: only
//! `duplicates` (verified against a representative that is kept) are left out, never `linked`
//! members. A dump's record that holds no document (a null or empty text) is written as it
//! is, a row of the input like any other; files without text, lines that are not JSON objects
//! and rows that cannot be decoded carry nothing and are left out.
//!
//! Two formats ([`DatasetFormat`]): JSON Lines ([`jsonl`]), one file per shard, every record
//! as its original line; Parquet ([`parquet`]), one file per input, a Parquet dump's rows with
//! its schema. The parts in name order are the dataset; each is written under a temporary name
//! and renamed when whole. Here: what both share (the documents by input, a file's text, a
//! Parquet dump's rows selected batch by batch); `annotate` says where each document stands in
//! the report, `inputs` checks the inputs before the scan.
//!
//! The inputs are read a second time, in input order, each dump streamed once; a document whose
//! content no longer hashes as it did when it was scanned is not written and is an error of the
//! run, like a file that changed during the scan. A Parquet row group copied whole is checked
//! by its text column chunk's raw bytes, hashed by the scan as it decoded them ([`TextPrint`]),
//! rather than by decoding the texts again: on the benchmark dump, with `--annotate`, that
//! decoding was most of what the dataset cost (docs/performance.md).

mod annotate;
mod claim;
mod inputs;
mod jsonl;
mod layout;
mod parquet;

use std::path::Path;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use xxhash_rust::xxh3::xxh3_128;

use crate::config::{Config, DatasetFormat};
use crate::ingest::worker::{DocWorker, Engine};
use crate::input::parquet::{ParquetDump, RawGroup, RowBatch, TextPrint, TextPrints, WholeRows};
use crate::input::read::{decode, Decoded};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};

pub use annotate::{marks, Fate, Mark};
pub use claim::{claim, claim_scan, refuse_held, release, Writer};
pub use inputs::{check_inputs, refuse_existing};
pub use layout::Layout;

use annotate::Annotation;

/// How the error of a document the dataset lacks begins: the run's one-line summary (`-q`)
/// counts these errors by it, apart from the inputs that could not be read.
pub const NOT_WRITTEN: &str = "not in the dataset";

/// The error of document `d`, not written to the dataset because of `reason`.
fn not_written(d: &DatasetDoc, reason: &str) -> InputError {
    d.file.error(None, format!("{NOT_WRITTEN}: {reason}"))
}

/// One document of the dataset's inputs.
pub struct DatasetDoc<'a> {
    /// Its id in the run (the corpus's, or the shard's), by which the engine's spill holds the
    /// texts it kept: not its place among the documents written, which skip those without text.
    pub doc: u32,
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

/// `--annotate`'s five columns (`dupfind_` prefixed) for the `rows` rows of a table handed over
/// in memory, the scan's one input ([`crate::input::table`]), in row order, from the clusters
/// `found` and their records `clusters`: a row the scan holds no document of (a null text) is
/// in no cluster and kept.
pub fn table_annotations(
    corpus: &crate::ingest::corpus::Corpus,
    found: &[crate::cluster::Found],
    clusters: &[crate::report::ClusterOut],
    rows: u64,
) -> Result<RecordBatch, String> {
    let marks = marks(found, clusters, corpus.len());
    let mut values: Vec<Annotation> = (0..rows).map(|_| Annotation::of(None)).collect();
    for d in corpus.new_ids().map(|d| d as usize) {
        let Some(record) = &corpus.files[d].record else {
            continue;
        };
        let at = record
            .line
            .checked_sub(1)
            .and_then(|r| values.get_mut(r as usize));
        if let Some(value) = at {
            *value = Annotation::of(marks[d].map(|m| Fate::of(m, clusters)));
        }
    }
    let schema = annotate::schema(&arrow_schema::Schema::empty(), "dupfind_");
    annotate::added(&schema, &values)
}

/// Refuses `input` (a table in memory) when one of `columns` is one the annotation adds
/// ([`table_annotations`]).
pub fn refuse_clash<'a>(input: &str, columns: impl Iterator<Item = &'a str>) -> Result<()> {
    if let Some(name) = annotate::clash("dupfind_", columns) {
        bail!(
            "{input} already has a column \"{name}\", one of the five the annotation adds; \
             rename or drop it"
        );
    }
    Ok(())
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
    /// The parts written, in order.
    pub parts: Vec<PartFile>,
}

/// A part as it was written: what `stage dataset` records, so that `stage status` and `stage
/// report` notice a part lost or changed since.
#[derive(Debug)]
pub struct PartFile {
    /// Where.
    pub path: std::path::PathBuf,
    /// Its bytes.
    pub size: u64,
    /// Their CRC-32 (zlib's, as the work files' lineage records them).
    pub crc: u32,
    /// On an object store, the ETag it gave the part (without quotes).
    pub e_tag: Option<String>,
}

/// Commits the part `pending`, its size and CRC-32 read from the temporary file first (a local
/// file even for a URL, so that no part is fetched back from a store to be checked).
fn commit_part(pending: crate::atomic::Pending) -> Result<PartFile> {
    use std::io::{Read, Seek};
    let path = pending.path().to_path_buf();
    let what = || format!("writing {}", display_path(&path));
    let mut file = pending.file();
    file.rewind().with_context(what)?;
    let (mut hasher, mut size) = (crc32fast::Hasher::new(), 0u64);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).with_context(what)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    let stored = pending.commit_stored()?;
    Ok(PartFile {
        path,
        size,
        crc: hasher.finalize(),
        e_tag: stored.e_tag,
    })
}

/// How the documents are written: the added columns' prefix with `--annotate`, and the prints
/// of the Parquet dumps' row groups as the scan read them.
struct Writing<'a> {
    cfg: &'a Config,
    annotate: Option<&'a str>,
    prints: &'a TextPrints,
}

impl Writing<'_> {
    /// Left out: a duplicate, unless every document is written.
    fn drops(&self, d: &DatasetDoc) -> bool {
        self.annotate.is_none() && d.duplicate()
    }
}

/// Writes shard `shard`'s part of the dataset (a scan is shard 0) to `dir` in `format`: the
/// inputs `layout` lists (the shard's), their records that hold no document too, and of `docs`
/// (in input order; a dump's records one after another) all but the duplicates, each file
/// atomically; as Parquet, in the parts `layout` says. A Parquet dump's
/// row group whose text column chunk has the print it had when the group was read (`prints`,
/// by dump) holds the texts read, without decoding it again.
///
/// `dir` may be a URL: object stores have no rename, so each part is written whole to a local
/// temporary file, then sent to its key, where it appears when complete
/// (`crate::atomic::Pending`), as a part renamed into place on disk does.
pub fn write(
    dir: &Path,
    shard: u32,
    (format, layout): (DatasetFormat, &Layout),
    docs: &[DatasetDoc],
    cfg: &Config,
    engine: &Engine,
    prints: &TextPrints,
) -> Result<Written> {
    if !crate::store::is_url(dir) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
    }
    let how = Writing {
        cfg,
        annotate: cfg.annotate.as_deref(),
        prints,
    };
    let mut written = Written::default();
    let mut worker = DocWorker::new(engine);
    let to = match format {
        DatasetFormat::Jsonl => {
            let path = jsonl::part_path(dir, shard);
            jsonl::write(&path, layout.inputs(docs), &how, &mut worker, &mut written)?;
            path
        }
        DatasetFormat::Parquet => {
            parquet::write(dir, shard, docs, layout, &how, &mut worker, &mut written)?;
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
    // Said on stderr too, as every input error is: the report's `errors` alone is easy to miss.
    cfg.messages.warn_errors(&written.errors);
    Ok(written)
}

/// The text of file `d` when it is written: None when it is dropped (counted), has no text, or
/// changed (an error of the run).
fn file_text(
    worker: &mut DocWorker,
    d: &DatasetDoc,
    how: &Writing,
    written: &mut Written,
) -> Option<String> {
    if how.drops(d) {
        written.dropped += 1;
        return None;
    }
    let bytes = match worker.content(d.doc, d.file, d.hash) {
        Ok(b) => b,
        Err(reason) => {
            written.errors.push(not_written(d, &reason));
            return None;
        }
    };
    let Decoded::Text(text) = decode(&bytes) else {
        return None;
    };
    written.dropped += u64::from(d.duplicate());
    Some(text.into_owned())
}

/// The first top-level column of `schema` that is also an added column's name.
fn input_clash<'s>(schema: &'s arrow_schema::Schema, prefix: &str) -> Option<&'s str> {
    annotate::clash(prefix, schema.fields().iter().map(|f| f.name().as_str()))
}

/// What a part's writer is given, in order.
enum Piece {
    /// Rows, encoded into the row group being filled.
    Rows(RecordBatch),
    /// A row group of the dump copied as it is, with the added columns of its rows.
    Group(RawGroup, Option<RecordBatch>),
}

/// A Parquet dump's rows, to be written: their schema, and with `--annotate` the schema with
/// the added columns.
struct DumpRows<'e> {
    /// The dump.
    entry: &'e FileEntry,
    rows: WholeRows,
    schema: SchemaRef,
    annotated: Option<SchemaRef>,
}

impl<'e> DumpRows<'e> {
    /// The rows of `dump`, opened from `entry`, `typed` as its writer's Arrow schema says; a
    /// dump that has a column of an added name is refused.
    fn open(
        dump: ParquetDump,
        entry: &'e FileEntry,
        typed: bool,
        how: &Writing,
    ) -> Result<DumpRows<'e>> {
        let rows = dump.whole_rows(typed);
        let schema = rows.schema();
        if let Some(name) = how.annotate.and_then(|p| input_clash(&schema, p)) {
            let input = display_path(&entry.path);
            bail!("{}", annotate::clash_message(&input, name));
        }
        let annotated = how.annotate.map(|p| annotate::schema(&schema, p));
        Ok(DumpRows {
            entry,
            rows,
            schema,
            annotated,
        })
    }

    /// The dump's Parquet schema.
    fn parquet_schema(&self) -> &::parquet::schema::types::SchemaDescriptor {
        self.rows.parquet_schema()
    }

    /// The schema of the rows written.
    fn written_schema(&self) -> SchemaRef {
        self.annotated
            .clone()
            .unwrap_or_else(|| self.schema.clone())
    }

    /// The rows written, a decoded batch at a time: each batch cut to the rows of `docs`
    /// written and unchanged (with the added columns when annotating), passed to `emit`, which
    /// writes them or says why it cannot (the rows' error). The batches are decoded on a thread
    /// of their own while `emit` writes the one before (JSON Lines: on the 100k benchmark dump
    /// decoding was about 60 % of the writing, the JSON and the writes the rest).
    fn write(
        self,
        docs: &[DatasetDoc],
        how: &Writing,
        written: &mut Written,
        mut emit: impl FnMut(RecordBatch) -> Result<Result<(), String>>,
    ) -> Result<()> {
        let mut at = 0;
        let annotated = self.annotated.as_ref();
        let dump = (self.entry, docs);
        decoded_ahead(self.rows, |batches| -> Result<()> {
            for batch in batches {
                // A row group that fails ends the reading: the rows not reached are errors
                // below.
                let Ok(batch) = batch else { break };
                write_batch(&batch, annotated, dump, &mut at, how, written, &mut emit)?;
            }
            Ok(())
        })?;
        unreached(&docs[at..], how, written);
        Ok(())
    }

    /// As [`DumpRows::write`], a row group at a time, each passed to `emit` as a piece: a group
    /// whose rows are all written and unchanged ([`DumpRows::unchanged`]) as the file has it,
    /// with the added columns' values when annotating, when `copies` (the part's leading
    /// columns are described as the dump's); the others decoded whole and cut as `write` cuts
    /// them.
    fn write_groups(
        self,
        docs: &[DatasetDoc],
        how: &Writing,
        written: &mut Written,
        copies: bool,
        mut emit: impl FnMut(Piece) -> Result<Result<(), String>>,
    ) -> Result<()> {
        let starts = self.rows.group_starts();
        let mut at = 0;
        'groups: for (g, w) in starts.windows(2).enumerate() {
            // The group's rows are lines w[0] + 1 ..= w[1].
            let from = at;
            let to = from
                + docs[from..]
                    .iter()
                    .take_while(|d| line_of(d) <= w[1])
                    .count();
            let group = &docs[from..to];
            // Rows that are no document (a null or empty text) are copied with the others; a
            // group without a document was not read by the scan (too large to decode) or holds
            // nothing to check, and is decoded.
            let whole = copies
                && !group.is_empty()
                && !group.iter().any(|d| how.drops(d))
                && self.unchanged(g, group, how.prints.get(&self.entry.path));
            if let (true, Ok(raw)) = (whole, self.rows.raw_group(g)) {
                let rows = rows_of(w[0] + 1..=w[1], group);
                let added = (self.annotated.as_ref()).map(|schema| {
                    let values: Vec<Annotation> = rows
                        .iter()
                        .map(|r| Annotation::of(r.1.and_then(|d| d.fate)))
                        .collect();
                    annotate::added(schema, &values)
                });
                let added = added.transpose().map_err(anyhow::Error::msg)?;
                count(self.entry, &rows, emit(Piece::Group(raw, added))?, written);
                at = to;
                continue;
            }
            let Ok(batches) = self.rows.group(g, false) else {
                // Not decoded (too large for the decoder's share of the budget, or damaged
                // since): its documents are not written, the groups after it are.
                unreached(group, how, written);
                at = to;
                continue;
            };
            for batch in batches {
                let Ok(batch) = batch else { break 'groups };
                let annotated = self.annotated.as_ref();
                let emit = &mut |rows| emit(Piece::Rows(rows));
                let dump = (self.entry, docs);
                write_batch(&batch, annotated, dump, &mut at, how, written, emit)?;
            }
        }
        unreached(&docs[at..], how, written);
        Ok(())
    }

    /// True when every row of row group `group` is one of `docs` (in order) with the text it
    /// had when it was scanned: the group's text column chunk has the print it had then (one of
    /// `prints`; the rows are then the documents, as many and numbered alike), else each row's
    /// text, decoded, has its document's hash.
    fn unchanged(
        &self,
        group: usize,
        docs: &[DatasetDoc],
        prints: Option<&Vec<TextPrint>>,
    ) -> bool {
        let then = prints.and_then(|p| {
            let at = p.binary_search_by_key(&group, TextPrint::group).ok()?;
            Some(p[at])
        });
        if then.is_some() && then == self.rows.text_print(group) {
            return true;
        }
        let Ok(batches) = self.rows.group(group, true) else {
            return false;
        };
        let mut docs = docs.iter().peekable();
        for batch in batches {
            let Ok(batch) = batch else { return false };
            for k in 0..batch.batch.num_rows() {
                // A row that is no document is copied as it is.
                let Some(d) = docs.next_if(|d| line_of(d) == batch.first + k as u64) else {
                    continue;
                };
                let text = batch.text(k);
                if text.is_none_or(|t| xxh3_128(t.as_bytes()) != d.hash) {
                    return false;
                }
            }
        }
        docs.next().is_none()
    }
}

/// Batches decoded and waiting for [`decoded_ahead`]'s consumer.
const DECODED_AHEAD: usize = 2;

/// Runs `take` on the items of `items`, which a thread of its own produces up to
/// [`DECODED_AHEAD`] items ahead; it stops when `take` returns.
fn decoded_ahead<I, R>(items: I, take: impl FnOnce(&mut dyn Iterator<Item = I::Item>) -> R) -> R
where
    I: Iterator + Send,
    I::Item: Send,
{
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(DECODED_AHEAD);
        scope.spawn(move || {
            for item in items {
                if tx.send(item).is_err() {
                    break;
                }
            }
        });
        let mut received = rx.into_iter();
        let taken = take(&mut received);
        // Dropped before the thread is joined: a producer blocked on a full channel stops.
        drop(received);
        taken
    })
}

/// Writes the rows of `batch` that are written (a batch of `dump`, whose documents are `docs`:
/// those of the batch from `at` on, `at` moved past them), with the added columns under
/// `annotated`, passed to `emit`.
fn write_batch(
    batch: &RowBatch,
    annotated: Option<&SchemaRef>,
    (dump, docs): (&FileEntry, &[DatasetDoc]),
    at: &mut usize,
    how: &Writing,
    written: &mut Written,
    emit: &mut impl FnMut(RecordBatch) -> Result<Result<(), String>>,
) -> Result<()> {
    let end = batch.first + batch.batch.num_rows() as u64;
    let start = *at;
    while *at < docs.len() && line_of(&docs[*at]) < end {
        *at += 1;
    }
    let (keep, kept) = select(&docs[start..*at], batch, how, written);
    if kept.is_empty() {
        return Ok(());
    }
    let mut rows = arrow_select::filter::filter_record_batch(&batch.batch, &keep.into())
        .context("selecting the rows of the dataset")?;
    if let Some(schema) = annotated {
        let values: Vec<Annotation> = (kept.iter())
            .map(|r| Annotation::of(r.1.and_then(|d| d.fate)))
            .collect();
        rows = annotate::append(&rows, schema, &values).map_err(anyhow::Error::msg)?;
    }
    count(dump, &kept, emit(rows)?, written);
    Ok(())
}

/// A row of a dump written: its number, and its document unless it is none (a null or empty
/// text).
type RowOf<'d, 'a> = (u64, Option<&'d DatasetDoc<'a>>);

/// The rows `lines` of a dump, each with its document among `docs` (in order) if it is one.
fn rows_of<'d, 'a>(
    lines: std::ops::RangeInclusive<u64>,
    docs: &'d [DatasetDoc<'a>],
) -> Vec<RowOf<'d, 'a>> {
    let mut docs = docs.iter().peekable();
    lines
        .map(|line| (line, docs.next_if(|d| line_of(d) == line)))
        .collect()
}

/// Counts the rows `kept` of `dump` as written, or as errors of the run when writing them
/// failed.
fn count(dump: &FileEntry, kept: &[RowOf], result: Result<(), String>, written: &mut Written) {
    match result {
        Ok(()) => {
            written.kept += kept.len() as u64;
            written.dropped += kept
                .iter()
                .filter(|r| r.1.is_some_and(|d| d.duplicate()))
                .count() as u64;
        }
        Err(reason) => {
            for &(line, d) in kept {
                let error = format!("{NOT_WRITTEN}: {reason}");
                written.errors.push(match d {
                    Some(d) => not_written(d, &reason),
                    None => dump.error(Some(line), error),
                });
            }
        }
    }
}

/// Counts `docs`, which the reading of their dump did not reach: errors, but those dropped.
fn unreached(docs: &[DatasetDoc], how: &Writing, written: &mut Written) {
    for d in docs.iter().filter(|d| !how.drops(d)) {
        let reason = "the dump ended before the row";
        written.errors.push(not_written(d, reason));
    }
    written.dropped += docs.iter().filter(|d| how.drops(d)).count() as u64;
}

/// The 1-based line (or Parquet row) of a dump record.
fn line_of(d: &DatasetDoc) -> u64 {
    d.file.record.as_ref().map_or(0, |r| r.line)
}

/// Which rows of `batch` are written: every row but those of `docs` (all within `batch`, in
/// order) dropped or changed, as a mask over the batch and the rows with their documents. A row
/// that is no document (a null or empty text) is written as it is.
fn select<'d, 'a>(
    docs: &'d [DatasetDoc<'a>],
    batch: &RowBatch,
    how: &Writing,
    written: &mut Written,
) -> (Vec<bool>, Vec<RowOf<'d, 'a>>) {
    let rows = batch.batch.num_rows() as u64;
    let mut keep = vec![true; rows as usize];
    let mut kept = rows_of(batch.first..=batch.first + rows - 1, docs);
    for (k, (_, d)) in kept.iter().enumerate() {
        let Some(d) = d else { continue };
        if how.drops(d) {
            written.dropped += 1;
            keep[k] = false;
        } else if batch
            .text(k)
            .is_none_or(|t| xxh3_128(t.as_bytes()) != d.hash)
        {
            (written.errors).push(not_written(d, "file changed during the scan"));
            keep[k] = false;
        }
    }
    // A document whose row is not in the batch (the dump changed) is not written.
    let within = |d: &DatasetDoc| (batch.first..batch.first + rows).contains(&line_of(d));
    for d in docs.iter().filter(|d| !within(d) && !how.drops(d)) {
        (written.errors).push(not_written(d, "file changed during the scan"));
    }
    written.dropped += docs.iter().filter(|d| !within(d) && how.drops(d)).count() as u64;
    let mut k = 0;
    kept.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    (keep, kept)
}

#[cfg(test)]
mod tests;
