//! The work directory's files: written atomically (a fresh temporary name in the same directory,
//! fsync, rename, fsync of the directory), so a stage killed at any moment leaves the old file
//! or the new one and a re-run of a failed shard or partition simply replaces its outputs; read
//! back only when their lineage (`lineage.rs`) is the one their producer's summary records, so
//! a file left by another run or attempt, in another task's place, made with other options or
//! damaged is an error naming it rather than a wrong answer.
//!
//! The work directory may be a URL (`s3://bucket/run1`): each file is then an object, sent
//! whole when complete (`crate::atomic`) and read whole, one version of it, into a local
//! temporary file (`open_work_file`). The checks are the same.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::ColumnPath;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::atomic::Pending;
use crate::input::parquet::chunks::{At, Positioned};
use crate::messages::display_path;

use super::lineage::{self, Lineage, Place, Tag, Written};

/// The key-value metadata entry of every Parquet file a stage writes: the run it belongs to.
const RUN_KEY: &str = "dupfind.run";

/// The key-value metadata entry of every Parquet file a stage writes: its [`Tag`] as JSON.
const LINEAGE_KEY: &str = "dupfind.lineage";

/// Columns of random values, stored uncompressed (`aux` and `fingerprint` are mostly 0 and
/// compress).
const RANDOM: &[&str] = &["key", "hash_hi", "hash_lo", "signature", "bottom", "blob"];

/// Rows per row group: a reader holds one at a time.
pub const ROW_GROUP: usize = 64 * 1024;

/// Writes `value` as indented JSON to `path`, atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write_json_as(path, value, true)
}

/// Writes `value` as JSON on one line to `path`, atomically: for files as large as the
/// report, which are read by stages, not people.
pub fn write_json_line<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write_json_as(path, value, false)
}

fn write_json_as<T: Serialize>(path: &Path, value: &T, pretty: bool) -> Result<()> {
    let json = if pretty {
        serde_json::to_vec_pretty(value)?
    } else {
        serde_json::to_vec(value)?
    };
    write_bytes(path, &lineage::seal(&json, pretty))
}

/// Writes `bytes` to `path`, atomically.
fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let pending = Pending::new(path)?;
    let mut out = pending.file();
    out.write_all(bytes)
        .with_context(|| format!("writing {}", display_path(path)))?;
    pending.commit()
}

/// Reads the sealed JSON summary a stage wrote; `what` names the stage that should have
/// written it.
pub fn read_summary_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let bytes = read_bytes(path, what)?;
    if let Err(why) = lineage::check_seal(&bytes) {
        bail!(
            "{} is damaged ({why}: not the summary a stage wrote)",
            display_path(path)
        );
    }
    parse_json(path, &bytes)
}

/// Reads the JSON file a stage wrote; `what` names the stage that should have written it.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let bytes = read_bytes(path, what)?;
    parse_json(path, &bytes)
}

fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).with_context(|| {
        format!(
            "{} is damaged (not the JSON a stage writes)",
            display_path(path)
        )
    })
}

fn read_bytes(path: &Path, what: &str) -> Result<Vec<u8>> {
    match crate::store::read_whole(path)? {
        Some(bytes) => Ok(bytes),
        None => bail!("{} is missing: {what}", display_path(path)),
    }
}

/// A work file's URL as the store takes it.
fn url_of(path: &Path) -> Result<String> {
    path.to_str()
        .map(str::to_string)
        .with_context(|| format!("{}: a URL must be UTF-8", display_path(path)))
}

/// True when the work file at `path` exists (on a store: one HEAD request).
pub fn exists(path: &Path) -> Result<bool> {
    if crate::store::is_url(path) {
        return crate::store::exists(&url_of(path)?)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("reading {}", display_path(path)));
    }
    Ok(path.exists())
}

/// What one listing of a directory on an object store shows of the objects below it, by their
/// names below it (`/`-separated): their sizes and ETags. `stage status` compares them with
/// what the store said when each file was written (`lineage::ObjectRec`), so that a run's files
/// are checked with a request per thousand of them (a page of the listing) instead of one GET
/// each.
pub(super) struct Listing(std::collections::HashMap<String, (u64, Option<String>)>);

/// What a listing says of an object, against the size and ETag recorded when it was written.
pub(super) enum Seen {
    /// It is not there.
    Missing,
    /// It is the object written (same size and ETag).
    Same,
    /// It changed since: why.
    Changed(String),
    /// The listing cannot tell (no ETag recorded, or none listed): its bytes must be read.
    Unknown,
}

impl Listing {
    /// True when `name` is listed.
    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// What the listing shows of `name` against `size` and, if recorded, `etag`.
    pub(super) fn seen(&self, name: &str, size: Option<u64>, etag: Option<&str>) -> Seen {
        let Some((got_size, got_etag)) = self.0.get(name) else {
            return Seen::Missing;
        };
        if let Some(size) = size.filter(|s| s != got_size) {
            return Seen::Changed(format!("it has {got_size} bytes, {size} when written"));
        }
        match (etag, got_etag) {
            // S3's ETag is the MD5 of the bytes (of each part's, for an upload in parts): an
            // object written again, or copied in, with other bytes has another. The same bytes
            // copied in are the same file to a reader; which run and place wrote them, the
            // summary that records the ETag says, and its own checks stand.
            (Some(want), Some(got)) if want == got => Seen::Same,
            (Some(want), Some(got)) => {
                Seen::Changed(format!("its ETag is {got}, {want} when written"))
            }
            _ => Seen::Unknown,
        }
    }
}

/// The objects below `dir` when it is on an object store (one listing, paged); None for a local
/// directory, whose files are read instead.
pub(super) fn listing(dir: &Path) -> Result<Option<Listing>> {
    if !crate::store::is_url(dir) {
        return Ok(None);
    }
    let url = format!("{}/", url_of(dir)?.trim_end_matches('/'));
    let listed = crate::store::list(&url)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("listing {}", display_path(dir)))?;
    let found = (listed.unwrap_or_default().into_iter())
        .filter(|l| l.unreadable.is_none())
        .map(|l| (l.below, (l.size, l.e_tag)))
        .collect();
    Ok(Some(Listing(found)))
}

/// The work file at `path` opened for reading; None when there is none. One in a store is
/// fetched whole, once (one GET), into an unnamed temporary file in `TMPDIR`: its CRC-32 and
/// its pages are then read from that one version of it, which a task writing it again cannot
/// change midway, and a file read twice (its check, then its row groups) costs one request.
pub(super) fn open_work_file(path: &Path) -> Result<Option<File>> {
    if !crate::store::is_url(path) {
        return match File::open(path) {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("opening {}", display_path(path))),
        };
    }
    let what = || format!("reading {}", display_path(path));
    let mut file = tempfile::tempfile().with_context(|| {
        format!(
            "creating a temporary file in {} to read {} into",
            display_path(&std::env::temp_dir()),
            display_path(path)
        )
    })?;
    let mut out = std::io::BufWriter::new(&mut file);
    let got = crate::store::download(&url_of(path)?, &mut out)
        .map_err(anyhow::Error::msg)
        .with_context(what)?;
    out.flush().with_context(what)?;
    drop(out);
    if got.is_none() {
        return Ok(None);
    }
    std::io::Seek::rewind(&mut file).with_context(what)?;
    Ok(Some(file))
}

/// The size of the dataset's part at `path` (on a store: one HEAD) and, when `whole`, the
/// CRC-32 of its bytes (on a store: one GET); None when there is no such part.
pub(super) fn open_part(path: &Path, whole: bool) -> Result<Option<(u64, Option<u32>)>> {
    let size = if crate::store::is_url(path) {
        let listed = crate::store::list(&url_of(path)?)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("reading {}", display_path(path)))?;
        // A prefix of that name (objects below it) is no part either.
        match listed.as_deref() {
            Some([one]) if one.below.is_empty() => one.size,
            _ => return Ok(None),
        }
    } else {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => m.len(),
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", display_path(path))),
        }
    };
    if !whole {
        return Ok(Some((size, None)));
    }
    let Some(file) = open_work_file(path)? else {
        return Ok(None);
    };
    Ok(Some((size, Some(crc_of(file, path)?))))
}

/// A Parquet file a stage is to write: where, and the tag it carries.
pub struct Output {
    path: PathBuf,
    rel: String,
    tag: Tag,
}

impl Output {
    /// The file at `path` in `work`, written by the attempt `lineage` for `place`.
    pub fn new(work: &Path, path: PathBuf, lineage: &Lineage, place: Place) -> Output {
        Output {
            rel: lineage::rel(work, &path),
            path,
            tag: lineage.tag_for(place),
        }
    }
}

/// A Parquet file a stage is to read: where, the summary of the attempt that wrote it, and the
/// place it must have been written for.
pub struct Input<'a> {
    path: PathBuf,
    rel: String,
    producer: &'a Lineage,
    place: Place,
}

impl<'a> Input<'a> {
    /// The file at `path` in `work`, written for `place` by the attempt `producer`.
    pub fn new(work: &Path, path: PathBuf, producer: &'a Lineage, place: Place) -> Input<'a> {
        Input {
            rel: lineage::rel(work, &path),
            path,
            producer,
            place,
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A writer that keeps the CRC-32 of what passes through it.
struct Crc<W> {
    inner: W,
    hasher: crc32fast::Hasher,
}

impl<W: Write> Write for Crc<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A Parquet file being written a batch at a time.
pub struct ParquetOut {
    writer: ArrowWriter<Crc<std::io::BufWriter<File>>>,
    pending: Pending,
    rel: String,
}

impl ParquetOut {
    /// Starts `out` with `schema`, tagged with its lineage.
    pub fn create(out: &Output, schema: Arc<Schema>) -> Result<ParquetOut> {
        let path = &out.path;
        let pending = Pending::new(path)?;
        let file = pending
            .file()
            .try_clone()
            .with_context(|| format!("writing {}", display_path(path)))?;
        let file = Crc {
            inner: std::io::BufWriter::new(file),
            hasher: crc32fast::Hasher::new(),
        };
        // Snappy, not the index's zstd: a work file is read once or twice, by later stages, and
        // zstd's compression and decompression were a twentieth of a staged run's CPU for a
        // tenth fewer bytes (measured on the 100k corpus). Snappy is also Spark's own codec.
        let props = properties_kv(
            vec![
                KeyValue::new(RUN_KEY.to_string(), out.tag.run.clone()),
                KeyValue::new(LINEAGE_KEY.to_string(), serde_json::to_string(&out.tag)?),
            ],
            Compression::SNAPPY,
        )?;
        let writer = ArrowWriter::try_new(file, schema, Some(props))
            .with_context(|| format!("writing {}", display_path(path)))?;
        Ok(ParquetOut {
            writer,
            pending,
            rel: out.rel.clone(),
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer
            .write(batch)
            .with_context(|| format!("writing {}", display_path(self.pending.path())))
    }

    /// Ends the row group being written, so that a reader holds no more than what was written
    /// since the last one.
    pub fn end_row_group(&mut self) -> Result<()> {
        self.writer
            .flush()
            .with_context(|| format!("writing {}", display_path(self.pending.path())))
    }

    /// Finishes the file and makes it visible; returns its name, CRC-32 and (on a store) what
    /// the store said of it, for the summary.
    pub fn commit(self) -> Result<Written> {
        let what = || format!("writing {}", display_path(self.pending.path()));
        let mut crc = self.writer.into_inner().with_context(what)?;
        crc.flush().with_context(what)?;
        let Crc { inner, hasher } = crc;
        drop(inner);
        let crc = hasher.finalize();
        // On a local disk, no ETag: the file's CRC-32 is its only record.
        let object = lineage::ObjectRec::of(&self.pending.commit_stored()?);
        Ok(Written {
            rel: self.rel,
            crc,
            object,
        })
    }
}

/// How the index's document tables are written, tagged with `key` = `value` in their key-value
/// metadata: as a stage's work files, but zstd level 1, for a file that is kept.
pub fn properties(key: &str, value: &str) -> Result<WriterProperties> {
    properties_kv(
        vec![KeyValue::new(key.to_string(), value.to_string())],
        Compression::ZSTD(ZstdLevel::try_new(1)?),
    )
}

/// How a Parquet file dupfind writes is written: key-value metadata `kv`, pages compressed with
/// `codec`.
fn properties_kv(kv: Vec<KeyValue>, codec: Compression) -> Result<WriterProperties> {
    // Hashes, keys and signatures are random: compressing them, or trying a dictionary of their
    // values, costs time for nothing (a tenth of signing, measured on the 100k corpus). Paths,
    // ids and texts compress well.
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_dictionary_enabled(false);
    for column in RANDOM {
        props = props.set_column_compression(ColumnPath::from(*column), Compression::UNCOMPRESSED);
    }
    Ok(props
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_key_value_metadata(Some(kv))
        .build())
}

/// Writes `batches` (one schema) to `out` atomically.
pub fn write_parquet(
    out: &Output,
    schema: Arc<Schema>,
    batches: &[RecordBatch],
) -> Result<Written> {
    let mut w = ParquetOut::create(out, schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.commit()
}

/// Reads a Parquet file a stage of this run wrote, batch by batch, once its tag and CRC-32 are
/// those its producer's summary records. `what` names the stage that should have written it,
/// for the error when it is missing.
pub fn read_parquet(
    input: &Input<'_>,
    what: &str,
) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    let checked = CheckedParquet::open(input, what)?;
    checked.batches(None)
}

/// A Parquet file a stage of this run wrote, its tag and CRC-32 checked once, whose row groups
/// can then be read separately (by several threads at once).
pub struct CheckedParquet {
    path: PathBuf,
    /// Shared by every reader of the file: one descriptor however many read it (a merge of
    /// many partitions on many threads would otherwise hold threads × partitions).
    file: Arc<Positioned>,
    meta: ArrowReaderMetadata,
}

impl CheckedParquet {
    /// Opens and checks `input`, as [`read_parquet`].
    pub fn open(input: &Input<'_>, what: &str) -> Result<CheckedParquet> {
        let path = input.path.as_path();
        let Some(file) = open_work_file(path)? else {
            bail!("{} is missing: {what}", display_path(path))
        };
        let damaged = || damaged(path);
        let crc_file = file
            .try_clone()
            .with_context(|| format!("opening {}", display_path(path)))?;
        // Before the crate decodes the footer, which is not yet known to be the producer's: the
        // parquet crate reserves what its schema declares (16 GiB for 2³¹ children in 47 bytes).
        let file = crate::input::source::Source::from(file);
        crate::input::parquet::footer::check(&file)
            .map_err(anyhow::Error::msg)
            .with_context(damaged)?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::default())
            .with_context(damaged)?;
        let kv = meta.metadata().file_metadata().key_value_metadata();
        let value = |key: &str| {
            kv.and_then(|kv| kv.iter().find(|e| e.key == key))
                .and_then(|e| e.value.clone())
        };
        let tag = match value(LINEAGE_KEY) {
            Some(t) => Some(serde_json::from_str::<Tag>(&t).with_context(damaged)?),
            // A file of an older layout (or another tool) says only its run: name that first.
            None => value(RUN_KEY).map(|run| Tag {
                run,
                stage: String::new(),
                shard: None,
                part: None,
                attempt: String::new(),
                digest: String::new(),
            }),
        };
        input
            .producer
            .check_file(path, &input.rel, tag.as_ref(), input.place, || {
                crc_of(crc_file, path)
            })?;
        Ok(CheckedParquet {
            path: path.to_path_buf(),
            file: Arc::new(Positioned(file)),
            meta,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its row groups.
    pub fn row_groups(&self) -> usize {
        self.meta.metadata().num_row_groups()
    }

    /// The least and greatest value of the `i32` column `name` in row group `rg`, where the
    /// file records them.
    pub fn i32_range(&self, rg: usize, name: &str) -> Option<(i32, i32)> {
        let rg = self.meta.metadata().row_groups().get(rg)?;
        let col = rg
            .columns()
            .iter()
            .find(|c| c.column_path().string() == name)?;
        match col.statistics()? {
            parquet::file::statistics::Statistics::Int32(s) => Some((*s.min_opt()?, *s.max_opt()?)),
            _ => None,
        }
    }

    /// The batches of row groups `groups` (all, when none), in order.
    pub fn batches(
        &self,
        groups: Option<Vec<usize>>,
    ) -> Result<impl Iterator<Item = Result<RecordBatch>> + Send + 'static> {
        let file = Buffered(Arc::clone(&self.file));
        let mut builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone());
        if let Some(groups) = groups {
            builder = builder.with_row_groups(groups);
        }
        let reader = builder.build().with_context(|| damaged(&self.path))?;
        let path = self.path.clone();
        Ok(reader.map(move |b| b.with_context(|| damaged(&path))))
    }
}

/// A file read at offsets, so that readers on several threads never move each other's cursor
/// (a `File`'s clones share one), its page headers through a buffer as a `File`'s are.
struct Buffered(Arc<Positioned>);

impl Length for Buffered {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl ChunkReader for Buffered {
    type T = std::io::BufReader<At>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(std::io::BufReader::new(self.0.get_read(start)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

fn damaged(path: &Path) -> String {
    format!(
        "{} is damaged or truncated (not a Parquet file a stage wrote)",
        display_path(path)
    )
}

/// The CRC-32 of the whole of `file`.
pub(super) fn crc_of(mut file: File, path: &Path) -> Result<u32> {
    use std::io::{Read, Seek};
    file.rewind()
        .with_context(|| format!("reading {}", display_path(path)))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", display_path(path)))?;
        if n == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buf[..n]);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_tells_a_file_missing_changed_or_the_one_written_and_else_cannot_tell() {
        let listing = Listing(
            [
                ("a".to_string(), (10, Some("e1".to_string()))),
                ("b".to_string(), (10, None)),
            ]
            .into_iter()
            .collect(),
        );
        assert!(matches!(
            listing.seen("a", Some(10), Some("e1")),
            Seen::Same
        ));
        assert!(matches!(
            listing.seen("c", Some(10), Some("e1")),
            Seen::Missing
        ));
        let changed = |s: Seen| match s {
            Seen::Changed(why) => why,
            _ => String::new(),
        };
        assert_eq!(
            changed(listing.seen("a", Some(10), Some("e2"))),
            "its ETag is e1, e2 when written"
        );
        assert_eq!(
            changed(listing.seen("a", Some(9), Some("e1"))),
            "it has 10 bytes, 9 when written"
        );
        // No ETag recorded, or none listed: the bytes must be read.
        assert!(matches!(listing.seen("a", None, None), Seen::Unknown));
        assert!(matches!(
            listing.seen("b", Some(10), Some("e1")),
            Seen::Unknown
        ));
    }

    #[test]
    fn an_etag_is_compared_without_its_quotes() {
        for raw in ["\"d41d8\"", "d41d8", "W/\"d41d8\"", " \"d41d8\" "] {
            assert_eq!(crate::store::etag(raw), "d41d8", "{raw}");
        }
    }
}
