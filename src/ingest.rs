//! Ingest: the walked inputs → documents with their signatures, in parallel.
//!
//! A plain file is one document. A JSON Lines dump is many: it is streamed (decompressed on the
//! fly when it is gzip or zstd) and its records are sketched a batch at a time, so a dump of
//! any size passes through a bounded amount of memory. Documents are numbered in input order,
//! a dump's records in line order at the dump's place, so the numbering (and the report) does
//! not depend on threads. A bad line (invalid JSON, no text field, text not a string, too long)
//! is an input error naming the dump and the line; the records around it are kept.

use std::collections::BTreeMap;
use std::fs::File;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::doc::{Claims, DocResult, DocWorker, Engine};
use crate::dump::{open_stream, JsonlOptions, JsonlReader, Line};
use crate::kmv::{Kmv, DEFAULT_KMV_K};
use crate::messages::{display_path, InputError, Messages};
use crate::set_cache::SetCache;
use crate::walk::{FileEntry, Record};

/// Records sketched together: enough to keep every thread busy, few enough that the texts of
/// one batch (at most this many lines) stay small.
const BATCH_RECORDS: usize = 4096;
/// Bad lines of one dump warned about on stderr; the report lists them all.
const WARN_BAD_LINES: u64 = 10;

/// What the first pass produced.
pub struct Ingested {
    /// One entry per document, by document id (a dump's records carry their line and id).
    pub entries: Vec<FileEntry>,
    /// The per-document results, by document id.
    pub docs: Vec<DocResult>,
    /// Signatures, `lanes` values per document.
    pub sigs: Vec<u32>,
    /// The corpus's distinct shingles, estimated.
    pub distinct: Kmv,
    /// Dump lines that held no document, and dumps that could not be read to the end.
    pub errors: Vec<InputError>,
    /// Number of bad lines.
    pub bad_lines: u64,
}

/// How the first pass runs.
pub struct Ingest<'a> {
    /// The per-document work.
    pub engine: &'a Engine,
    /// Signature values per document.
    pub lanes: usize,
    /// Where a record's text and id are.
    pub jsonl: &'a JsonlOptions,
    /// Whose shingles to keep (exact MinHash verification), sized for `documents`.
    pub cache: Option<&'a SetCache>,
    /// Diagnostics.
    pub msgs: &'a Messages,
}

impl Ingest<'_> {
    /// Sketches every input: plain files in parallel, dumps record by record.
    pub fn run(&self, files: &[FileEntry]) -> Ingested {
        let distinct = Mutex::new(Kmv::new(DEFAULT_KMV_K));
        let claims = Claims::default();
        let mut out = Ingested {
            entries: Vec::with_capacity(files.len()),
            docs: Vec::with_capacity(files.len()),
            sigs: Vec::new(),
            distinct: Kmv::new(DEFAULT_KMV_K),
            errors: Vec::new(),
            bad_lines: 0,
        };
        let bar = self.msgs.progress_bar(files.len() as u64, "reading");
        let mut start = 0;
        while start < files.len() {
            if files[start].dump {
                self.dump(&files[start], &claims, &distinct, &mut out);
                bar.inc(1);
                start += 1;
                continue;
            }
            let end = files[start..]
                .iter()
                .position(|f| f.dump)
                .map_or(files.len(), |p| start + p);
            let run = &files[start..end];
            let first = out.sigs.len();
            out.sigs.resize(first + run.len() * self.lanes, 0);
            let docs: Vec<DocResult> = run
                .par_iter()
                .zip(out.sigs[first..].par_chunks_mut(self.lanes))
                .map_init(
                    || DocWorker::counting(self.engine, &distinct),
                    |w, (file, sig)| {
                        let r = w.process(file, sig, &claims, self.cache);
                        bar.inc(1);
                        r
                    },
                )
                .collect();
            out.docs.extend(docs);
            out.entries.extend_from_slice(run);
            start = end;
        }
        bar.finish_and_clear();
        out.distinct = distinct.into_inner().unwrap_or_else(|e| e.into_inner());
        out
    }

    /// Streams one dump, sketching its records a batch at a time.
    fn dump(&self, file: &FileEntry, claims: &Claims, distinct: &Mutex<Kmv>, out: &mut Ingested) {
        let reader = match open_dump(file, self.jsonl) {
            Ok(r) => r,
            Err(reason) => {
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(None, reason));
                return;
            }
        };
        let mut bad = 0u64;
        let mut batch: Vec<(u64, Option<String>, String)> = Vec::new();
        for line in reader {
            match line {
                Line::Doc { line, id, text } => {
                    batch.push((line, id, text));
                    if batch.len() == BATCH_RECORDS {
                        self.sketch_records(file, &mut batch, claims, distinct, out);
                    }
                }
                Line::Bad { line, reason } => {
                    bad += 1;
                    if bad <= WARN_BAD_LINES {
                        self.msgs
                            .warn(&format!("{}:{line}: {reason}", display_path(&file.path)));
                    }
                    out.errors.push(file.error(Some(line), reason.to_string()));
                }
                Line::Failed { line, error } => {
                    let reason = format!(
                        "{} (after line {line}; the lines before it were read)",
                        crate::messages::io_reason(&error)
                    );
                    self.msgs
                        .warn(&format!("{}: {reason}", display_path(&file.path)));
                    out.errors.push(file.error(Some(line + 1), reason));
                }
            }
        }
        self.sketch_records(file, &mut batch, claims, distinct, out);
        if bad > WARN_BAD_LINES {
            self.msgs.warn(&format!(
                "{}: {} more bad lines (listed in the report's errors)",
                display_path(&file.path),
                bad - WARN_BAD_LINES
            ));
        }
        out.bad_lines += bad;
    }

    fn sketch_records(
        &self,
        file: &FileEntry,
        batch: &mut Vec<(u64, Option<String>, String)>,
        claims: &Claims,
        distinct: &Mutex<Kmv>,
        out: &mut Ingested,
    ) {
        let first = out.sigs.len();
        out.sigs.resize(first + batch.len() * self.lanes, 0);
        let docs: Vec<DocResult> = batch
            .par_iter()
            .zip(out.sigs[first..].par_chunks_mut(self.lanes))
            .map_init(
                || DocWorker::counting(self.engine, distinct),
                |w, ((_, _, text), sig)| w.process_text(text, sig, claims, self.cache),
            )
            .collect();
        for ((line, id, text), doc) in batch.drain(..).zip(docs) {
            out.entries.push(FileEntry {
                path: file.path.clone(),
                aliases: Vec::new(),
                size: text.len() as u64,
                id: file.id,
                modified: file.modified,
                dump: false,
                record: Some(Box::new(Record {
                    line,
                    id,
                    file_size: file.size,
                })),
            });
            out.docs.push(doc);
        }
    }
}

fn open_dump(
    file: &FileEntry,
    jsonl: &JsonlOptions,
) -> Result<JsonlReader<Box<dyn std::io::BufRead + Send>>, String> {
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    let f = File::open(&file.path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if file.id != (0, 0) && crate::walk::inode(&meta) != file.id {
        return Err("file was replaced during the scan".into());
    }
    let (_, stream) = open_stream(f).map_err(io)?;
    Ok(JsonlReader::new(stream, jsonl.clone()))
}

/// Stores in the engine's spill the texts of the dump records among `wanted` (document ids),
/// streaming each dump that holds one once more. A dump that can no longer be read, or whose
/// records changed, makes its records unavailable: verification reports them as errors.
pub fn spill_records(
    engine: &Engine,
    entries: &[FileEntry],
    wanted: &[u32],
    jsonl: &JsonlOptions,
) -> std::io::Result<()> {
    // Dump → (line → document), in document order, so dumps are streamed in input order.
    let mut by_dump: BTreeMap<u32, BTreeMap<u64, u32>> = BTreeMap::new();
    let mut dump_of: Vec<u32> = Vec::new();
    let mut current = u32::MAX;
    let mut prev: Option<&FileEntry> = None;
    for (d, e) in entries.iter().enumerate() {
        if e.record.is_some() {
            let same = prev.is_some_and(|p| p.record.is_some() && p.path == e.path && p.id == e.id);
            if !same {
                current = d as u32;
            }
        }
        dump_of.push(current);
        prev = Some(e);
    }
    for &d in wanted {
        if let Some(r) = &entries[d as usize].record {
            by_dump
                .entry(dump_of[d as usize])
                .or_default()
                .insert(r.line, d);
        }
    }
    let texts = by_dump.into_iter().flat_map(|(first, lines)| {
        let entry = &entries[first as usize];
        let reader = open_dump(entry, jsonl);
        let mut lines = lines;
        let stream: Box<dyn Iterator<Item = std::io::Result<(u32, String)>>> = match reader {
            Err(_) => Box::new(std::iter::empty()),
            Ok(reader) => Box::new(reader.filter_map(move |l| match l {
                Line::Doc { line, text, .. } => lines.remove(&line).map(|d| Ok((d, text))),
                _ => None,
            })),
        };
        stream
    });
    engine.spill.fill(texts)
}
