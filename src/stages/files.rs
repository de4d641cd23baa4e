//! The work directory's files: written atomically (a fresh temporary name in the same directory,
//! fsync, rename, fsync of the directory), so a stage killed at any moment leaves the old file
//! or the new one and a re-run of a failed shard or partition simply replaces its outputs; read
//! back only when they belong to this run (each carries the run's id), so a file left by another
//! run, or signed with other options, is an error naming it rather than a wrong answer.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::messages::display_path;

/// The key-value metadata entry of every Parquet file a stage writes: the run it belongs to.
const RUN_KEY: &str = "dupfind.run";

/// Columns of random values, stored uncompressed (`aux` and `fingerprint` are mostly 0 and
/// compress).
const RANDOM: &[&str] = &["key", "hash_hi", "hash_lo", "signature", "bottom"];

/// Rows per row group: a reader holds one at a time.
pub const ROW_GROUP: usize = 64 * 1024;

/// A file being written under a temporary name, made visible by [`Pending::commit`].
struct Pending {
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Pending {
    fn new(path: &Path) -> Result<Pending> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
        // 0666 less the umask, as for any new file (tempfile's default is 0600).
        let temp = tempfile::Builder::new()
            .prefix(".dupfind-")
            .suffix(".tmp")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| format!("creating a file in {}", display_path(dir)))?;
        Ok(Pending {
            temp,
            path: path.to_path_buf(),
        })
    }

    fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// Makes the file durable under its name: fsync, rename over any older one, fsync the
    /// directory (the rename is the commit point).
    fn commit(self) -> Result<()> {
        let what = || format!("writing {}", display_path(&self.path));
        self.temp.as_file().sync_all().with_context(what)?;
        let path = self.path.clone();
        self.temp
            .persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("renaming into {}", display_path(&path)))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        File::open(dir.unwrap_or(Path::new(".")))
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing the directory of {}", display_path(&path)))
    }
}

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
    let pending = Pending::new(path)?;
    let mut out = std::io::BufWriter::new(pending.file());
    if pretty {
        serde_json::to_writer_pretty(&mut out, value)?;
    } else {
        serde_json::to_writer(&mut out, value)?;
    }
    out.write_all(b"\n")?;
    out.flush()
        .with_context(|| format!("writing {}", display_path(path)))?;
    drop(out);
    pending.commit()
}

/// Reads the JSON file a stage wrote; `what` names the stage that should have written it.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{} is missing: {what}", display_path(path))
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", display_path(path))),
    };
    serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is damaged (not the JSON a stage writes)",
            display_path(path)
        )
    })
}

/// A Parquet file being written a batch at a time.
pub struct ParquetOut {
    writer: ArrowWriter<File>,
    pending: Pending,
}

impl ParquetOut {
    /// Starts `path` with `schema`, tagged with the run's id.
    pub fn create(path: &Path, schema: Arc<Schema>, run: &str) -> Result<ParquetOut> {
        let pending = Pending::new(path)?;
        let file = pending
            .file()
            .try_clone()
            .with_context(|| format!("writing {}", display_path(path)))?;
        let props = properties(RUN_KEY, run)?;
        let writer = ArrowWriter::try_new(file, schema, Some(props))
            .with_context(|| format!("writing {}", display_path(path)))?;
        Ok(ParquetOut { writer, pending })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer
            .write(batch)
            .with_context(|| format!("writing {}", display_path(&self.pending.path)))
    }

    /// Finishes the file and makes it visible.
    pub fn commit(self) -> Result<()> {
        let path = self.pending.path.clone();
        self.writer
            .close()
            .with_context(|| format!("writing {}", display_path(&path)))?;
        self.pending.commit()
    }
}

/// How every Parquet file dupfind writes is written, tagged with `key` = `value` in its key-value
/// metadata (the index's document tables use these too).
pub fn properties(key: &str, value: &str) -> Result<WriterProperties> {
    // Hashes, keys and signatures are random: compressing them, or trying a dictionary of their
    // values, costs time for nothing (a tenth of signing, measured on the 100k corpus). Paths,
    // ids and texts compress well.
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_dictionary_enabled(false);
    for column in RANDOM {
        props = props.set_column_compression(ColumnPath::from(*column), Compression::UNCOMPRESSED);
    }
    Ok(props
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            key.to_string(),
            value.to_string(),
        )]))
        .build())
}

/// Writes `batches` (one schema) to `path` atomically.
pub fn write_parquet(
    path: &Path,
    schema: Arc<Schema>,
    batches: &[RecordBatch],
    run: &str,
) -> Result<()> {
    let mut out = ParquetOut::create(path, schema, run)?;
    for b in batches {
        out.write(b)?;
    }
    out.commit()
}

/// Reads a Parquet file a stage of this run wrote, batch by batch. `what` names the stage that
/// should have written it, for the error when it is missing.
pub fn read_parquet(
    path: &Path,
    run: &str,
    what: &str,
) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{} is missing: {what}", display_path(path))
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", display_path(path))),
    };
    let damaged = || {
        format!(
            "{} is damaged or truncated (not a Parquet file a stage wrote)",
            display_path(path)
        )
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).with_context(damaged)?;
    let tag = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|e| e.key == RUN_KEY))
        .and_then(|e| e.value.clone());
    match tag {
        Some(t) if t == run => {}
        Some(t) => bail!(
            "{} belongs to another run (run {t}; this work directory's run is {run}): it was \
             written with other options or inputs; run that stage again",
            display_path(path)
        ),
        None => bail!("{} was not written by a dupfind stage", display_path(path)),
    }
    let reader = builder.build().with_context(damaged)?;
    let path = path.to_path_buf();
    Ok(reader.map(move |b| {
        b.with_context(|| {
            format!(
                "{} is damaged or truncated (not a Parquet file a stage wrote)",
                display_path(&path)
            )
        })
    }))
}
