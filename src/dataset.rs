//! The deduplicated dataset (`--write-dataset DIR`): every document with text that is not
//! listed as a duplicate, each field kept, as JSON Lines: a record of a JSON Lines dump as its
//! original line (every field of the record, byte for byte), a row of a Parquet dump as a JSON
//! object of all its columns (as arrow-json writes them, nulls included), a file as `{"path", "text"}` (and
//! `path_bytes` when the path is not UTF-8). The filter step people run after deduplicating,
//! made safe: only `duplicates` (verified against a representative that is kept) are left out,
//! never `linked` members. Documents without text (empty, binary, unreadable, bad lines) carry
//! nothing and are left out too.
//!
//! The inputs are read a second time, in input order, each dump streamed once; a document whose
//! content no longer hashes as it did when it was scanned is not written and is an error of the
//! run, like a file that changed during the scan.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xxhash_rust::xxh3::xxh3_128;

use crate::cluster::Found;
use crate::config::Config;
use crate::ingest::dumps::{open_records, Opened};
use crate::ingest::worker::{DocWorker, Engine};
use crate::input::jsonl::{Line, RawLine};
use crate::input::parquet::{ParquetDump, RowBatch};
use crate::input::read::{decode, Decoded};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError};
use crate::report::{path_fields, ClusterOut};

/// One document of the dataset's inputs.
pub struct DatasetDoc<'a> {
    /// Where it is.
    pub file: &'a FileEntry,
    /// Its content hash when it was scanned.
    pub hash: u128,
    /// Listed as a duplicate: left out.
    pub dropped: bool,
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

/// Which of `n` documents are listed as a duplicate in `clusters` (the records of `found`).
pub fn dropped(found: &[Found], clusters: &[ClusterOut], n: usize) -> Vec<bool> {
    let mut dropped = vec![false; n];
    for (f, c) in found.iter().zip(clusters) {
        for d in &c.duplicates {
            dropped[f.cluster.members[d.member as usize] as usize] = true;
        }
    }
    dropped
}

/// The dataset's file of a scan, or of shard `part` of a staged run.
pub fn part_path(dir: &Path, part: u32) -> PathBuf {
    dir.join(format!("part-{part:05}.jsonl"))
}

/// Writes `docs` (in input order; a dump's records one after another) that are not dropped to
/// `path`, atomically.
pub fn write(path: &Path, docs: &[DatasetDoc], cfg: &Config, engine: &Engine) -> Result<Written> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
    let temp = tempfile::Builder::new()
        .prefix(".dupfind-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", display_path(dir)))?;
    let mut out = std::io::BufWriter::new(temp.as_file());
    let mut written = Written::default();
    let mut worker = DocWorker::new(engine);
    let mut i = 0;
    while i < docs.len() {
        if docs[i].file.record.is_none() {
            write_file(&mut out, &mut worker, i as u32, &docs[i], &mut written)?;
            i += 1;
            continue;
        }
        // The records of one dump, streamed once.
        let same = |d: &DatasetDoc| {
            d.file.record.is_some()
                && d.file.path == docs[i].file.path
                && d.file.id == docs[i].file.id
        };
        let end = i + docs[i..].iter().take_while(|d| same(d)).count();
        write_records(&mut out, &docs[i..end], cfg, &mut written)?;
        i = end;
    }
    out.flush()
        .with_context(|| format!("writing {}", display_path(path)))?;
    drop(out);
    temp.as_file()
        .sync_all()
        .with_context(|| format!("writing {}", display_path(path)))?;
    temp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into {}", display_path(path)))?;
    Ok(written)
}

fn write_file(
    out: &mut impl Write,
    worker: &mut DocWorker,
    doc: u32,
    d: &DatasetDoc,
    written: &mut Written,
) -> Result<()> {
    if d.dropped {
        written.dropped += 1;
        return Ok(());
    }
    let bytes = match worker.content(doc, d.file, d.hash) {
        Ok(b) => b,
        Err(reason) => {
            written
                .errors
                .push(d.file.error(None, format!("not in the dataset: {reason}")));
            return Ok(());
        }
    };
    let Decoded::Text(text) = decode(&bytes) else {
        return Ok(());
    };
    let (path, path_bytes) = path_fields(&d.file.path);
    let mut record = serde_json::json!({"path": path, "text": text});
    if let Some(b) = path_bytes {
        record["path_bytes"] = b.into();
    }
    serde_json::to_writer(&mut *out, &record)?;
    out.write_all(b"\n")?;
    written.kept += 1;
    Ok(())
}

/// The records `docs` of one dump, each its original line unless dropped.
fn write_records(
    out: &mut impl Write,
    docs: &[DatasetDoc],
    cfg: &Config,
    written: &mut Written,
) -> Result<()> {
    let fail = |written: &mut Written, d: &DatasetDoc, reason: &str| {
        let reason = format!("not in the dataset: {reason}");
        written.errors.push(d.file.error(None, reason));
    };
    let mut reader = match open_records(docs[0].file, &cfg.jsonl) {
        Ok(Opened::Jsonl(r, _)) => r,
        Ok(Opened::Parquet(dump)) => return write_rows(out, docs, dump, written),
        Err(reason) => {
            docs.iter()
                .filter(|d| !d.dropped)
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
            if docs[at].dropped {
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
        if d.dropped {
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
        out.write_all(&bytes)?;
        out.write_all(b"\n")?;
        written.kept += 1;
    }
    for d in docs[at..].iter().filter(|d| !d.dropped) {
        fail(written, d, "the dump ended before the record");
    }
    written.dropped += docs[at..].iter().filter(|d| d.dropped).count() as u64;
    Ok(())
}

/// The rows `docs` of one Parquet dump, each as a JSON object of all its columns unless dropped.
fn write_rows(
    out: &mut impl Write,
    docs: &[DatasetDoc],
    dump: ParquetDump,
    written: &mut Written,
) -> Result<()> {
    let mut at = 0;
    for batch in dump.whole_rows() {
        // A row group that fails ends the reading: the rows not reached are errors below.
        let Ok(batch) = batch else { break };
        let end = batch.first + batch.batch.num_rows() as u64;
        let start = at;
        while at < docs.len() && line_of(&docs[at]) < end {
            at += 1;
        }
        write_batch(out, &docs[start..at], &batch, written)?;
    }
    for d in docs[at..].iter().filter(|d| !d.dropped) {
        let reason = "not in the dataset: the dump ended before the row".to_string();
        written.errors.push(d.file.error(None, reason));
    }
    written.dropped += docs[at..].iter().filter(|d| d.dropped).count() as u64;
    Ok(())
}

/// The 1-based line (or Parquet row) of a dump record.
fn line_of(d: &DatasetDoc) -> u64 {
    d.file.record.as_ref().map_or(0, |r| r.line)
}

/// The rows of `docs` (all within `batch`, in order) that are kept and unchanged, written as
/// one JSON object a line.
fn write_batch(
    out: &mut impl Write,
    docs: &[DatasetDoc],
    batch: &RowBatch,
    written: &mut Written,
) -> Result<()> {
    let mut keep = vec![false; batch.batch.num_rows()];
    let mut kept = Vec::new();
    for d in docs {
        if d.dropped {
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
    if kept.is_empty() {
        return Ok(());
    }
    // Written to memory first, so that a column arrow-json cannot write leaves no half line.
    let json = arrow_select::filter::filter_record_batch(&batch.batch, &keep.into())
        .map_err(|e| e.to_string())
        .and_then(|rows| {
            let mut buf = Vec::new();
            let mut w = arrow_json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow_json::writer::LineDelimited>(&mut buf);
            w.write(&rows)
                .and_then(|()| w.finish())
                .map_err(|e| e.to_string())?;
            drop(w);
            Ok(buf)
        });
    match json {
        Ok(buf) => {
            out.write_all(&buf)?;
            written.kept += kept.len() as u64;
        }
        Err(e) => {
            for d in kept {
                let reason = format!("not in the dataset: its row cannot be written as JSON: {e}");
                written.errors.push(d.file.error(None, reason));
            }
        }
    }
    Ok(())
}
