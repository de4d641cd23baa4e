//! Dumps in the first pass: a JSON Lines dump streamed (one thread reads, decompresses and cuts
//! lines; the workers parse and sketch a batch of records at a time, so a dump of any size
//! passes through a bounded amount of memory), and the texts of its records made readable again
//! for verification ([`spill_records`]).

use std::collections::BTreeMap;
use std::fs::File;

use rayon::prelude::*;

use crate::input::decompress::{open_stream, Compression};
use crate::input::jsonl::{JsonlOptions, JsonlReader, Line, RawLine};
use crate::input::spill::InDumps;
use crate::input::walk::{FileEntry, Record};
use crate::messages::display_path;

use super::pool::Workers;
use super::worker::{Claims, Engine};
use super::{Ingest, Ingested};

/// Records sketched together: enough to keep every thread busy, few enough that the texts of
/// one batch stay small. A batch ends at this many records or [`BATCH_BYTES`] of lines,
/// whichever comes first, so its memory does not grow with the documents' length.
const BATCH_RECORDS: usize = 4096;
/// Bytes of one batch's lines (their JSON, about the size of the text), at most (plus one
/// record).
const BATCH_BYTES: usize = 8 << 20;
/// Bad lines of one dump warned about on stderr; the report lists them all.
const WARN_BAD_LINES: u64 = 10;

impl Ingest<'_> {
    /// Streams one dump, sketching its records a batch at a time.
    pub(super) fn dump(
        &self,
        file: &FileEntry,
        claims: &Claims,
        workers: &Workers,
        out: &mut Ingested,
        bottom: &mut Vec<u64>,
    ) {
        let (reader, plain) = match open_dump(file, self.jsonl) {
            Ok(r) => r,
            Err(reason) => {
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(None, reason));
                return;
            }
        };
        let mut bad = 0u64;
        let errors_before = out.errors.len();
        let documents_before = out.entries.len();
        let mut batch: Vec<Pending> = Vec::new();
        // One thread reads, decompresses and cuts the dump into lines while the workers parse
        // and sketch the batch before: at most three batches are alive (being read, waiting,
        // being parsed and sketched).
        let opts = reader.options().clone();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<RawLine>>(1);
        std::thread::scope(|scope| {
            scope.spawn(move || read_batches(reader, tx));
            for raw in rx {
                // The reader only cuts lines; the workers parse them, results kept in line order.
                let lines: Vec<Line> = raw.into_par_iter().map(|r| r.parse(&opts)).collect();
                for line in lines {
                    self.take_line(file, line, plain, &mut batch, &mut bad, out);
                }
                self.sketch_records(file, &mut batch, claims, workers, out, bottom);
            }
        });
        if bad > WARN_BAD_LINES {
            self.msgs.warn(&format!(
                "{}: {} more bad lines (listed in the report's errors)",
                display_path(&file.path),
                bad - WARN_BAD_LINES
            ));
        }
        out.bad_lines += bad;
        // A dump without a single record (and no bad line) is an empty input, like an empty file.
        if out.entries.len() == documents_before && out.errors.len() == errors_before {
            out.empty_dumps += 1;
        }
    }

    /// Adds a document line to `batch`; reports any other.
    fn take_line(
        &self,
        file: &FileEntry,
        line: Line,
        plain: bool,
        batch: &mut Vec<Pending>,
        bad: &mut u64,
        out: &mut Ingested,
    ) {
        match line {
            Line::Doc { line, id, text, at } => batch.push(Pending {
                line,
                id,
                text,
                at: plain.then_some(at),
            }),
            Line::Bad { line, reason } => {
                *bad += 1;
                if *bad <= WARN_BAD_LINES {
                    self.msgs
                        .warn(&format!("{}:{line}: {reason}", display_path(&file.path)));
                }
                out.errors.push(file.error(Some(line), reason.to_string()));
            }
            Line::Failed { line, error } => {
                let before = match line {
                    0 => "no line before it was complete".to_string(),
                    1 => "line 1 before it was read".to_string(),
                    n => format!("lines 1-{n} before it were read"),
                };
                let reason = format!("{} ({before})", crate::messages::io_reason(&error));
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(Some(line + 1), reason));
            }
        }
    }

    fn sketch_records(
        &self,
        file: &FileEntry,
        batch: &mut Vec<Pending>,
        claims: &Claims,
        workers: &Workers,
        out: &mut Ingested,
        bottom: &mut Vec<u64>,
    ) {
        let docs = self.sketch_each(batch, workers, &mut out.sigs, bottom, |w, _, p, sig| {
            (w.process_text(&p.text, sig, claims, self.cache), ())
        });
        for (Pending { line, id, text, at }, (doc, ())) in batch.drain(..).zip(docs) {
            out.entries.push(FileEntry {
                path: file.path.clone(),
                aliases: Vec::new(),
                size: text.len() as u64,
                id: file.id,
                modified: file.modified,
                changed: file.changed,
                dump: false,
                record: Some(Box::new(Record {
                    line,
                    id,
                    file_size: file.size,
                    at,
                })),
                deferred: false,
            });
            out.docs.push(doc);
        }
    }
}

/// A dump record waiting in a batch to be sketched.
struct Pending {
    line: u64,
    id: Option<String>,
    text: String,
    /// Where its JSON lies in the dump file, when the dump is not compressed.
    at: Option<(u64, u64)>,
}

/// Sends the dump's lines, unparsed, in batches until it ends or the receiver is gone.
fn read_batches(
    mut reader: JsonlReader<Box<dyn std::io::BufRead + Send>>,
    tx: std::sync::mpsc::SyncSender<Vec<RawLine>>,
) {
    let mut lines = Vec::new();
    let mut bytes = 0;
    while let Some(line) = reader.next_raw() {
        bytes += line.len();
        lines.push(line);
        if lines.len() == BATCH_RECORDS || bytes >= BATCH_BYTES {
            if tx.send(std::mem::take(&mut lines)).is_err() {
                return;
            }
            bytes = 0;
        }
    }
    if !lines.is_empty() {
        let _ = tx.send(lines);
    }
}

/// Opens a dump for reading its records, and says whether it is plain (not compressed), in
/// which case a record's offset in the stream is its offset in the file.
pub(crate) fn open_dump(
    file: &FileEntry,
    jsonl: &JsonlOptions,
) -> Result<(JsonlReader<Box<dyn std::io::BufRead + Send>>, bool), String> {
    let f = open_dump_file(file)?;
    let (compression, stream) = open_stream(f).map_err(|e| crate::messages::io_reason(&e))?;
    Ok((
        JsonlReader::new(stream, jsonl.clone()),
        compression == Compression::None,
    ))
}

/// Opens a dump, checking it is still the file the walk saw.
fn open_dump_file(file: &FileEntry) -> Result<File, String> {
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    let f = File::open(&file.path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if file.id != (0, 0) && crate::input::walk::inode(&meta) != file.id {
        return Err("file was replaced during the scan".into());
    }
    Ok(f)
}

/// Makes the texts of the dump records among `wanted` (document ids) readable again through
/// the engine's spill. A record of a plain dump is read back from the dump itself, at the
/// offset the first pass saw; the records of a compressed dump are copied to the spill's
/// temporary file by streaming the dump once more, as far as its last wanted line. A dump that
/// can no longer be read, or whose records changed, makes its records unavailable:
/// verification reports them as errors.
pub fn spill_records(
    engine: &Engine,
    entries: &[FileEntry],
    wanted: &[u32],
    jsonl: &JsonlOptions,
) -> std::io::Result<()> {
    // Dump (by its first document) → (line → document), in document order, so dumps are
    // streamed in input order.
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
    let mut direct = InDumps {
        dumps: Vec::new(),
        records: Vec::new(),
        opts: jsonl.clone(),
    };
    // Which of `direct.dumps` a dump's first document opened, if it could be opened.
    let mut opened: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    for &d in wanted {
        let Some(r) = &entries[d as usize].record else {
            continue;
        };
        let first = dump_of[d as usize];
        match r.at {
            Some((offset, len)) => {
                let dump = *opened.entry(first).or_insert_with(|| {
                    let file = open_dump_file(&entries[first as usize]).ok()?;
                    direct.dumps.push(file);
                    Some(direct.dumps.len() as u32 - 1)
                });
                if let Some(dump) = dump {
                    direct.records.push((d, dump, offset, len));
                }
            }
            None => {
                by_dump.entry(first).or_default().insert(r.line, d);
            }
        }
    }
    let texts = by_dump.into_iter().flat_map(|(first, lines)| {
        let entry = &entries[first as usize];
        let reader = open_dump(entry, jsonl);
        let mut lines = lines;
        let stream: Box<dyn Iterator<Item = std::io::Result<(u32, Vec<u8>)>>> = match reader {
            Err(_) => Box::new(std::iter::empty()),
            // Read only as far as the last wanted line.
            Ok((mut reader, _)) => Box::new(std::iter::from_fn(move || {
                while !lines.is_empty() {
                    if let Line::Doc { line, text, .. } = reader.next()? {
                        if let Some(d) = lines.remove(&line) {
                            return Some(Ok((d, text.into_bytes())));
                        }
                    }
                }
                None
            })),
        };
        stream
    });
    engine.spill.fill(texts, direct)
}
