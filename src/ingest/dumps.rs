//! Dumps in the first pass: a JSON Lines or Parquet dump streamed (one thread reads,
//! decompresses and cuts lines, or decodes row groups; the workers parse and sketch a batch of
//! records at a time, so a dump of any size passes through a bounded amount of memory), and the
//! texts of its records made readable again for verification ([`spill_records`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use rayon::prelude::*;

use crate::input::decompress::{decoder_cost, open_stream, Compression};
use crate::input::field_value::FieldValue;
use crate::input::jsonl::{field_names, BadLine, JsonlOptions, JsonlReader, Line, RawLine};
use crate::input::parquet::{self, ParquetDump, Row};
use crate::input::source::Source;
use crate::input::spill::InDumps;
use crate::input::table::TableDump;
use crate::input::walk::{FileEntry, Record};
use crate::messages::{display_path, escape_controls};

use super::pool::Workers;
use super::worker::{Claims, Engine};
use super::{Ingest, Ingested, KeepSeen};

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
        let opened = match open_records(file, self.jsonl) {
            Ok(r) => r,
            Err(reason) => {
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(None, reason));
                return;
            }
        };
        // Held while the dump is read: its decoder and the batches alive at once (`stream`).
        // Pinned, since this thread waits for the workers sketching its records while it holds
        // it: their own costs must fit in what it leaves.
        let decoder = match &opened {
            Opened::Jsonl(_, true) | Opened::Table(_) => 0,
            _ => decoder_cost(Compression::Zstd).max(decoder_cost(Compression::Lz4)),
        };
        // An object's read windows (a Parquet dump's ranges; a stream holds one chunk).
        let windows = if crate::store::is_url(&file.path) {
            crate::store::Object::buffered()
        } else {
            0
        };
        let _pinned = match self
            .engine
            .budget
            .pin(decoder + windows + 3 * BATCH_BYTES as u64)
        {
            Ok(g) => g,
            Err(over) => {
                let reason = over.reason();
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(None, reason));
                return;
            }
        };
        let mut bad = BadLines::default();
        // The names of the first record's fields, for the hint when no record has the text one.
        let mut first_names: Option<Option<Vec<String>>> = None;
        let text_field = self.jsonl.text_field.clone();
        let errors_before = out.errors.len();
        let documents_before = out.entries.len();
        let mut batch: Vec<Pending> = Vec::new();
        match opened {
            Opened::Jsonl(mut reader, plain) => {
                let opts = reader.options().clone();
                let lines = std::iter::from_fn(move || reader.next_raw());
                stream(lines, RawLine::len, |raw| {
                    if first_names.is_none() {
                        let first = raw.iter().find_map(|r| match r {
                            RawLine::Json { bytes, .. } => Some(bytes),
                            _ => None,
                        });
                        if let Some(bytes) = first {
                            first_names = Some(field_names(bytes, &opts.text_field));
                            keep_hint(&mut out.keep_seen, &opts, || {
                                let field = opts.keep_field.as_deref()?;
                                let names = field_names(bytes, field)?;
                                Some(format!(
                                    "the first record of {} has {}",
                                    display_path(&file.path),
                                    listed(field, &names)
                                ))
                            });
                        }
                    }
                    // The reader only cuts lines; the workers parse them, kept in line order.
                    let lines: Vec<Line> = raw.into_par_iter().map(|r| r.parse(&opts)).collect();
                    for line in lines {
                        self.take_line(file, line, plain, &mut batch, &mut bad, out);
                    }
                    self.sketch_records(file, &mut batch, claims, workers, out, bottom)
                });
            }
            Opened::Table(table) => {
                keep_hint(&mut out.keep_seen, self.jsonl, || {
                    Some(format!("the table has the columns {}", table.columns()))
                });
                stream(table.rows(), Row::text_len, |rows| {
                    for row in rows {
                        self.take_row(file, row, &mut batch, &mut bad, out);
                    }
                    self.sketch_records(file, &mut batch, claims, workers, out, bottom)
                });
            }
            Opened::Parquet(dump) => {
                keep_hint(&mut out.keep_seen, self.jsonl, || {
                    Some(format!(
                        "{} has the columns {}",
                        display_path(&file.path),
                        dump.columns()
                    ))
                });
                let prints = self.print_texts.then(Default::default);
                let rows = match &prints {
                    Some(prints) => dump.rows_printed(Arc::clone(prints)),
                    None => dump.rows(),
                };
                let rows = rows.charged(Arc::clone(&self.engine.budget), decoder);
                stream(rows, Row::text_len, |rows| {
                    for row in rows {
                        self.take_row(file, row, &mut batch, &mut bad, out);
                    }
                    self.sketch_records(file, &mut batch, claims, workers, out, bottom)
                });
                if let Some(prints) = prints.and_then(|p| Arc::into_inner(p)?.into_inner().ok()) {
                    out.prints.insert(file.path.clone(), prints);
                }
            }
        }
        if bad.count > WARN_BAD_LINES {
            self.msgs.warn(&format!(
                "{}: {} more bad lines (listed in the report's errors)",
                display_path(&file.path),
                bad.count - WARN_BAD_LINES
            ));
        }
        if out.entries.len() == documents_before && bad.missing_text > 0 {
            let mut hint = missing_field_hint(&text_field, first_names.flatten().as_deref());
            let path = display_path(&file.path);
            if bad.held.is_empty() {
                self.msgs.warn(&format!("{path}: {hint}"));
            } else {
                // Every record lacks the field: one error for the dump, not one per line.
                let n = bad.held.len() as u64;
                bad.count += n;
                hint.push_str(&format!(
                    "; none of its {n} records is read (give --text-field the field that holds \
                     the text, or --dumps never to read the file as one document)"
                ));
                self.msgs.warn(&format!("{path}: {hint}"));
                out.errors.push(file.error(None, hint));
            }
        }
        out.bad_lines += bad.count;
        if let Some(grown) = std::fs::metadata(&file.path)
            .ok()
            .filter(|m| m.len() > file.size)
        {
            self.msgs.warn(&format!(
                "{}: grew to {} bytes while being read; read as far as its {} bytes when the \
                 scan reached it",
                display_path(&file.path),
                grown.len(),
                file.size
            ));
        }
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
        bad: &mut BadLines,
        out: &mut Ingested,
    ) {
        if !matches!(
            &line,
            Line::Bad {
                reason: BadLine::MissingText(_),
                ..
            }
        ) {
            self.release(file, bad, out);
        }
        match line {
            Line::Doc {
                line,
                id,
                text,
                at,
                keep,
            } => batch.push(Pending {
                line,
                id,
                text,
                at: plain.then_some(at),
                keep,
            }),
            Line::Bad { line, reason } => {
                if matches!(reason, BadLine::MissingText(_)) {
                    bad.missing_text += 1;
                    if !bad.mixed {
                        bad.held.push(line);
                        bad.held_reason = Some(reason.to_string());
                        return;
                    }
                }
                self.bad_record(file, line, reason.to_string(), bad, out)
            }
            Line::Failed { line, error } => {
                self.failed(file, line, crate::messages::io_reason(&error), false, out)
            }
        }
    }

    /// Adds a document row of a Parquet dump to `batch`; reports any other.
    fn take_row(
        &self,
        file: &FileEntry,
        row: Row,
        batch: &mut Vec<Pending>,
        bad: &mut BadLines,
        out: &mut Ingested,
    ) {
        match row {
            Row::Doc {
                line,
                id,
                text,
                keep,
            } => batch.push(Pending {
                line,
                id,
                text,
                at: None,
                keep,
            }),
            Row::Bad { line, reason } => self.bad_record(file, line, reason, bad, out),
            Row::Failed { line, reason } => self.failed(file, line, reason, true, out),
            Row::Unread {
                first,
                last,
                reason,
            } => {
                // One warning for the rows of a row group; each is an error of its own, so
                // that the report and the summary count the rows lost.
                let rows = match last - first {
                    0 => format!("row {first}"),
                    _ => format!("rows {first}-{last}"),
                };
                self.msgs.warn(&format!(
                    "{}: {rows} not read: {reason} (the rows after them are read)",
                    display_path(&file.path)
                ));
                for line in first..=last {
                    out.errors.push(file.error(Some(line), reason.clone()));
                }
            }
        }
    }

    /// A record that holds no document: counted, listed, and warned about (the first few).
    fn bad_record(
        &self,
        file: &FileEntry,
        line: u64,
        reason: String,
        bad: &mut BadLines,
        out: &mut Ingested,
    ) {
        bad.count += 1;
        if bad.count <= WARN_BAD_LINES {
            self.msgs
                .warn(&format!("{}:{line}: {reason}", display_path(&file.path)));
        }
        out.errors.push(file.error(Some(line), reason));
    }

    /// Reports the records held for lacking the text field, one by one, now that the dump has
    /// something else too (a document, another bad line): the field is then no mistyped name.
    fn release(&self, file: &FileEntry, bad: &mut BadLines, out: &mut Ingested) {
        if std::mem::replace(&mut bad.mixed, true) {
            return;
        }
        let reason = bad.held_reason.take().unwrap_or_default();
        for line in std::mem::take(&mut bad.held) {
            self.bad_record(file, line, reason.clone(), bad, out);
        }
    }

    /// The dump could not be read past record `line` (a line, or a Parquet `row`).
    fn failed(&self, file: &FileEntry, line: u64, reason: String, row: bool, out: &mut Ingested) {
        let unit = if row { "row" } else { "line" };
        let before = match line {
            0 if row => "no row before it was read".to_string(),
            0 => "no line before it was complete".to_string(),
            1 => format!("{unit} 1 before it was read"),
            n => format!("{unit}s 1-{n} before it were read"),
        };
        let reason = format!("{reason} ({before})");
        self.msgs
            .warn(&format!("{}: {reason}", display_path(&file.path)));
        out.errors.push(file.error(Some(line + 1), reason));
    }

    fn sketch_records(
        &self,
        file: &FileEntry,
        batch: &mut Vec<Pending>,
        claims: &Claims,
        workers: &Workers,
        out: &mut Ingested,
        bottom: &mut Vec<u64>,
    ) -> bool {
        out.over_budget = self.over_budget(out.docs.len() + batch.len(), true);
        if out.over_budget.is_some() {
            return false;
        }
        let docs = self.sketch_each(batch, workers, &mut out.sigs, bottom, |w, _, p, sig| {
            (w.process_text(&p.text, sig, claims, self.cache), ())
        });
        for (pending, (doc, ())) in batch.drain(..).zip(docs) {
            let Pending {
                line,
                id,
                text,
                at,
                keep,
            } = pending;
            out.keep_seen.records += 1;
            out.keep_seen.values += u64::from(keep.is_some());
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
                    keep: keep.map(Box::new),
                })),
                deferred: false,
            });
            out.docs.push(doc);
        }
        true
    }
}

/// The bad lines of one dump.
#[derive(Default)]
struct BadLines {
    count: u64,
    /// Of them, the records without the text field.
    missing_text: u64,
    /// The lines of the records without the text field, held while the dump has nothing else:
    /// when every record lacks it, the dump is one error, not one per line.
    held: Vec<u64>,
    /// Why they are bad (the same for all).
    held_reason: Option<String>,
    /// Something other than a record without the text field was seen: each is reported.
    mixed: bool,
}

/// The warning for a dump whose records all lack the text field: the names its first record
/// has (`first`: None when it was no JSON object), so that a mistyped `--text-field` shows.
fn missing_field_hint(text_field: &[String], first: Option<&[String]>) -> String {
    let field = escape_controls(&text_field.join("."));
    let mut hint = format!("no record has a \"{field}\" field (--text-field)");
    match first {
        Some([]) => hint.push_str("; the first record is an empty object"),
        Some(names) => {
            hint.push_str("; the first record has ");
            hint.push_str(&listed(text_field, names));
        }
        None => {}
    }
    hint
}

/// [`quoted`] `names`, the first record's, for the message that no record has `field`: when
/// they list the field's very name, it is a key with dots in it, which a dotted name cannot reach,
/// and the message says so rather than contradict itself.
fn listed(field: &[String], names: &[String]) -> String {
    let mut out = quoted(names);
    let name = field.join(".");
    if field.len() > 1 && names.contains(&name) {
        out.push_str(&format!(
            " (in JSON Lines a dotted name is a path into nested objects: a key that itself holds \
             a dot, as \"{}\" does, cannot be named; rename the key)",
            escape_controls(&name)
        ));
    }
    out
}

/// A record's field names for a message: `"a", "b"` (and how many more beyond a few; a record
/// of hundreds of keys would bury the message), or "no field" for an empty object.
fn quoted(names: &[String]) -> String {
    /// Names listed at most.
    const MAX_NAMES: usize = 20;
    if names.is_empty() {
        return "no field".to_string();
    }
    let list: Vec<String> = (names.iter().take(MAX_NAMES))
        .map(|n| format!("\"{}\"", escape_controls(n)))
        .collect();
    let mut out = list.join(", ");
    if names.len() > MAX_NAMES {
        out.push_str(&format!(" and {} more", names.len() - MAX_NAMES));
    }
    out
}

/// With `--keep-by`, the first dump read says which fields it has (`hint`), for the error when
/// no record has the field.
fn keep_hint(seen: &mut KeepSeen, opts: &JsonlOptions, hint: impl FnOnce() -> Option<String>) {
    if opts.keep_field.is_some() && seen.hint.is_none() {
        seen.hint = hint();
    }
}

/// A dump record waiting in a batch to be sketched.
struct Pending {
    line: u64,
    id: Option<String>,
    text: String,
    /// Where its JSON lies in the dump file, when the dump is not compressed.
    at: Option<(u64, u64)>,
    /// Its `--keep-by` value.
    keep: Option<FieldValue>,
}

/// Reads `records` on one thread and hands them to `take` in batches on this one, until it
/// returns false: at most three batches are alive (being read, waiting, being parsed and
/// sketched).
fn stream<T: Send>(
    records: impl Iterator<Item = T> + Send,
    len: fn(&T) -> usize,
    mut take: impl FnMut(Vec<T>) -> bool,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(1);
    std::thread::scope(|scope| {
        scope.spawn(move || read_batches(records, len, tx));
        for batch in rx {
            if !take(batch) {
                // Dropping the receiver stops the reader at its next batch.
                break;
            }
        }
    });
}

/// Sends the dump's records (lines unparsed, or rows) in batches until it ends or the receiver
/// is gone.
fn read_batches<T>(
    records: impl Iterator<Item = T>,
    len: fn(&T) -> usize,
    tx: std::sync::mpsc::SyncSender<Vec<T>>,
) {
    let mut batch = Vec::new();
    let mut bytes = 0;
    for record in records {
        bytes += len(&record);
        batch.push(record);
        if batch.len() == BATCH_RECORDS || bytes >= BATCH_BYTES {
            if tx.send(std::mem::take(&mut batch)).is_err() {
                return;
            }
            bytes = 0;
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}

/// A dump opened for reading its records.
pub(crate) enum Opened {
    /// JSON Lines, and whether it is plain ([`open_dump`]).
    Jsonl(JsonlReader<Box<dyn std::io::BufRead + Send>>, bool),
    Parquet(ParquetDump),
    /// A table handed over in memory ([`crate::input::table`]).
    Table(TableDump),
}

/// Opens a dump for reading its records: Parquet when it starts with Parquet's magic bytes
/// (whatever its name, so `--jsonl` reads Parquet files too; a file named `*.parquet` that does
/// not is an error), else JSON Lines.
pub(crate) fn open_records(file: &FileEntry, jsonl: &JsonlOptions) -> Result<Opened, String> {
    if let Some(table) = crate::input::table::find(&file.path) {
        return TableDump::open(table, jsonl).map(Opened::Table);
    }
    let f = open_dump_file(file)?;
    if parquet::starts_with_magic(&f).map_err(|e| crate::messages::io_reason(&e))? {
        return ParquetDump::open(f, jsonl).map(Opened::Parquet);
    }
    let name = file.path.file_name().and_then(|n| n.to_str());
    if name.is_some_and(crate::input::walk::is_parquet_name) {
        return Err("not a Parquet file (it does not start with PAR1)".into());
    }
    let (reader, plain) = open_dump(file, jsonl)?;
    Ok(Opened::Jsonl(reader, plain))
}

/// Opens a dump for reading its records, and says whether it is plain (not compressed), in
/// which case a record's offset in the stream is its offset in the file.
pub(crate) fn open_dump(
    file: &FileEntry,
    jsonl: &JsonlOptions,
) -> Result<(JsonlReader<Box<dyn std::io::BufRead + Send>>, bool), String> {
    let f = open_dump_file(file)?;
    // A Parquet dump's records are rows, not lines ([`open_records`] reads both).
    if parquet::starts_with_magic(&f).map_err(|e| crate::messages::io_reason(&e))? {
        return Err("a Parquet file, not JSON Lines".into());
    }
    // Read as far as the size the walk saw: a dump still being appended to would otherwise be
    // read for as long as it grows (the rest is for the next run; [`Ingest::dump`] says so).
    let size = file.record.as_ref().map_or(file.size, |r| r.file_size);
    // An object's records are read again by streaming it (as a compressed dump's are), never
    // by a range request each.
    let local = matches!(f, Source::File(_));
    let read = f
        .stream_from(0)
        .map_err(|e| crate::messages::io_reason(&e))?;
    let (compression, stream) =
        open_stream(read.take(size)).map_err(|e| crate::messages::io_reason(&e))?;
    Ok((
        JsonlReader::new(stream, jsonl.clone()),
        local && compression == Compression::None,
    ))
}

/// Opens a dump, checking it is still the file the walk saw: never blocking on a FIFO put in
/// its place, and refusing anything but a regular file.
fn open_dump_file(file: &FileEntry) -> Result<Source, String> {
    if crate::store::is_url(&file.path) {
        let size = file.record.as_ref().map_or(file.size, |r| r.file_size);
        return Source::object(&file.path, size);
    }
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    let f = crate::input::read::open_nonblocking(&file.path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err("no longer a regular file (replaced during the scan)".into());
    }
    if file.id != (0, 0) && crate::input::walk::inode(&meta) != file.id {
        return Err("file was replaced during the scan".into());
    }
    Ok(Source::File(f))
}

/// Makes the texts of the dump records among `wanted` (document ids) readable again through
/// the engine's spill. A record of a plain dump is read back from the dump itself, at the
/// offset the first pass saw; the records of a compressed dump are copied to the spill's
/// temporary file by streaming the dump once more, as far as its last wanted line, and those of
/// a Parquet dump by decoding the text column of the row groups that hold them. A dump that
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
        tables: Vec::new(),
        in_tables: Vec::new(),
    };
    // Which of `direct.dumps` a dump's first document opened, if it could be opened.
    let mut opened: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    // Which of `direct.tables` a dump's first document is, if it is a table in memory.
    let mut tables: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    for &d in wanted {
        let Some(r) = &entries[d as usize].record else {
            continue;
        };
        let first = dump_of[d as usize];
        // A table's texts are read where they lie, not copied to the spill's file.
        let table = *tables.entry(first).or_insert_with(|| {
            let table = crate::input::table::find(&entries[first as usize].path)?;
            direct.tables.push(TableDump::open(table, jsonl).ok()?);
            Some(direct.tables.len() as u32 - 1)
        });
        if let Some(table) = table {
            direct.in_tables.push((d, table, r.line));
            continue;
        }
        match r.at {
            Some((offset, len)) => {
                let dump = *opened.entry(first).or_insert_with(|| {
                    // Only a plain dump on disk has its records' offsets (`open_dump`).
                    let Source::File(file) = open_dump_file(&entries[first as usize]).ok()? else {
                        return None;
                    };
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
        let reader = open_records(entry, jsonl);
        let mut lines = lines;
        let stream: Box<dyn Iterator<Item = std::io::Result<(u32, Vec<u8>)>>> = match reader {
            Err(_) => Box::new(std::iter::empty()),
            // Only the row groups that hold wanted rows, and only their text column.
            Ok(Opened::Parquet(dump)) => Box::new(dump.texts(lines).map(Ok)),
            // Read where they lie (`direct.tables`); only a table that could not be opened,
            // whose records are then unavailable, comes here.
            Ok(Opened::Table(_)) => Box::new(std::iter::empty()),
            // Read only as far as the last wanted line.
            Ok(Opened::Jsonl(mut reader, _)) => Box::new(std::iter::from_fn(move || {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;

    fn entry(path: &Path, size: u64) -> FileEntry {
        FileEntry::unwalked_dump(path.to_path_buf(), size)
    }

    fn opts() -> JsonlOptions {
        JsonlOptions {
            text_field: vec!["text".into()],
            id_field: vec!["id".into()],
            keep_field: None,
            max_line: 1 << 20,
        }
    }

    #[test]
    fn a_dump_is_read_as_far_as_the_size_the_walk_saw() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let first = "{\"text\": \"one two three\"}\n";
        std::fs::write(&path, format!("{first}{{\"text\": \"appended later\"}}\n")).unwrap();
        let (mut reader, plain) = open_dump(&entry(&path, first.len() as u64), &opts()).unwrap();
        assert!(plain);
        let mut lines = 0;
        while let Some(raw) = reader.next_raw() {
            assert!(matches!(raw, RawLine::Json { line: 1, .. }), "{raw:?}");
            lines += 1;
        }
        assert_eq!(lines, 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_a_dump_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = open_dump(&entry(&path, 10), &opts()).err().unwrap();
        assert!(err.contains("regular file"), "{err}");
        let err = open_records(&entry(&path, 10), &opts()).err().unwrap();
        assert!(err.contains("regular file"), "{err}");
    }
}
