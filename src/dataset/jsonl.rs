//! The dataset as JSON Lines (`--dataset-format jsonl`): one file per shard,
//! `part-SSSSS.jsonl`, one JSON object a line: a record of a JSON Lines dump as its original
//! line (with `--annotate`, the added fields before its closing brace), a row of a Parquet dump
//! as an object of all its columns (as arrow-json writes them, nulls included), a file as
//! `{"path", "text"}` (and `path_bytes` when the path is not UTF-8).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use xxhash_rust::xxh3::xxh3_128;

use super::annotate::{self, Annotation};
use super::layout::Inputs;
use super::{file_text, line_of, not_written, DatasetDoc, DumpRows, Writing, Written};
use crate::atomic::Pending;
use crate::ingest::dumps::{open_records, Opened};
use crate::ingest::worker::DocWorker;
use crate::input::jsonl::{Line, RawLine};
use crate::input::parquet::ParquetDump;
use crate::input::walk::FileEntry;
use crate::messages::display_path;
use crate::report::path_fields;

/// The dataset's JSON Lines file of a scan, or of shard `part` of a staged run.
pub(super) fn part_path(dir: &Path, part: u32) -> PathBuf {
    dir.join(format!("part-{part:05}.jsonl"))
}

/// The part at `path`: the records of `inputs` that are written, one line each.
pub(super) fn write(
    path: &Path,
    inputs: Inputs,
    how: &Writing,
    worker: &mut DocWorker,
    written: &mut Written,
) -> Result<()> {
    let pending = Pending::new(path)?;
    // A write that fails (a full disk) names the part.
    let what = || format!("writing {}", display_path(path));
    let mut out = std::io::BufWriter::new(pending.file());
    for input in inputs {
        let input = input?;
        if let Some(dump) = input.dump {
            write_records(&mut out, dump, input.docs, how, written).with_context(what)?;
            continue;
        }
        for d in input.docs {
            if let Some(text) = file_text(worker, d, how, written) {
                write_file(&mut out, d, &text, how).with_context(what)?;
                written.kept += 1;
            }
        }
    }
    out.flush().with_context(what)?;
    drop(out);
    written.parts.push(super::commit_part(pending)?);
    Ok(())
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

/// The records of `dump`, each its original line unless it is one of `docs` (its documents)
/// dropped (with the added fields when annotating).
fn write_records(
    out: &mut impl Write,
    dump: &FileEntry,
    docs: &[DatasetDoc],
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    let cfg = how.cfg;
    let fail = |written: &mut Written, d: &DatasetDoc, reason: &str| {
        written.errors.push(not_written(d, reason));
    };
    let mut reader = match open_records(dump, &cfg.jsonl) {
        Ok(Opened::Jsonl(mut r, _)) => {
            r.keep_long_lines();
            r
        }
        Ok(Opened::Parquet(rows)) => return write_rows(out, (dump, docs), rows, how, written),
        // `embed::scan_table` refuses --write-dataset: the caller adds the columns itself.
        Ok(Opened::Table(_)) => bail!("a table in memory is not written as a dataset"),
        Err(reason) => {
            docs.iter()
                .filter(|d| !how.drops(d))
                .for_each(|d| fail(written, d, &reason));
            return Ok(());
        }
    };
    let mut at = 0;
    while let Some(raw) = reader.next_raw() {
        // A line longer than --max-size (no bytes here) is no document of the scan, yet a
        // record of the dump.
        let (line, bytes) = match raw {
            RawLine::Json { line, bytes, .. } => (line, Some(bytes)),
            RawLine::Done(Line::Bad { line, .. }) => (line, None),
            // The stream failed: the records not reached are not written.
            RawLine::Done(Line::Failed { .. }) => break,
            RawLine::Done(Line::Doc { .. }) => continue,
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
            let Some(bytes) = bytes else {
                let long = reader.long_line().context("a line too long is kept")?;
                let place = || format!("{}:{line}", display_path(&dump.path));
                written.kept += u64::from(copy_long(out, long, how, place)?);
                continue;
            };
            // A record that is no document (a null, missing or empty text) is written as it
            // is; a line that is not a JSON object is the bad line the scan reported.
            let object = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>;
            if object(&bytes).is_err() {
                continue;
            }
            let record = match how.annotate {
                None => Some(bytes),
                Some(prefix) => {
                    if let Some(name) = annotate::clash_in_line(&bytes, prefix) {
                        let place = format!("{}:{line}", display_path(&dump.path));
                        bail!("{}", annotate::clash_message(&place, &name));
                    }
                    annotate::splice(&bytes, prefix, &Annotation::of(None))
                }
            };
            if let Some(record) = record {
                out.write_all(&record)?;
                out.write_all(b"\n")?;
                written.kept += 1;
            }
            continue;
        }
        let d = &docs[at];
        at += 1;
        if how.drops(d) {
            written.dropped += 1;
            continue;
        }
        let Some(bytes) = bytes else {
            fail(written, d, "file changed during the scan");
            continue;
        };
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

/// Copies `long`, a line of a dump longer than `--max-size` (no document of the scan), to `out`
/// as it is (with the added fields when annotating) when it is a JSON object, as a shorter
/// record that holds no document is written; false when it is not one (the scan's bad line).
/// It passes through a temporary file while its JSON is checked: such a line is never held in
/// memory, whose bound `--max-size` is.
fn copy_long(
    out: &mut impl Write,
    long: impl std::io::Read,
    how: &Writing,
    place: impl Fn() -> String,
) -> Result<bool> {
    let what = || format!("{}: copying a line longer than --max-size", place());
    let mut copy = Copy {
        from: long,
        to: std::io::BufWriter::new(tempfile::tempfile().with_context(what)?),
        len: 0,
        solid: 0,
        last: 0,
    };
    let object = {
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(&mut copy));
        let keys = serde::Deserializer::deserialize_map(&mut de, TopKeys(how.annotate));
        keys.and_then(|keys| de.end().map(|()| keys))
    };
    let (keys, clash) = match object {
        Ok(keys) => keys,
        // Not a JSON object, or the line could not be read (the dump changed, or its stream
        // failed: the next read says so).
        Err(_) => return Ok(false),
    };
    if let Some(name) = clash {
        bail!("{}", annotate::clash_message(&place(), &name));
    }
    let Copy {
        to,
        len,
        solid,
        last,
        ..
    } = copy;
    let mut file = to
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(what)?;
    std::io::Seek::rewind(&mut file).with_context(what)?;
    // Without the CR of a CRLF line end, as a shorter line is written.
    let len = len - u64::from(last == b'\r');
    // `solid` is past the closing brace.
    let mut line = std::io::Read::take(file, len);
    match how.annotate {
        None => {
            std::io::copy(&mut line, out).with_context(what)?;
        }
        Some(prefix) => {
            std::io::copy(&mut std::io::Read::take(&mut line, solid - 1), out)
                .with_context(what)?;
            if keys > 0 {
                out.write_all(b",")?;
            }
            out.write_all(&Annotation::of(None).json_fields(prefix))?;
            std::io::copy(&mut line, out).with_context(what)?;
        }
    }
    out.write_all(b"\n")?;
    Ok(true)
}

/// A line too long, read from `from` and copied to `to` as it is read: where it ends.
struct Copy<R> {
    from: R,
    to: std::io::BufWriter<std::fs::File>,
    /// Bytes copied.
    len: u64,
    /// Where the last byte that is not whitespace ends.
    solid: u64,
    /// The last byte.
    last: u8,
}

impl<R: std::io::Read> std::io::Read for Copy<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.from.read(buf)?;
        let read = &buf[..n];
        self.to.write_all(read)?;
        if let Some(at) = read.iter().rposition(|b| !b.is_ascii_whitespace()) {
            self.solid = self.len + at as u64 + 1;
        }
        self.len += n as u64;
        self.last = read.last().copied().unwrap_or(self.last);
        Ok(n)
    }
}

/// Reads a JSON object's top-level keys, not their values: how many there are, and the first
/// that is an added column's name (with `--annotate`'s prefix).
struct TopKeys<'p>(Option<&'p str>);

impl<'de> serde::de::Visitor<'de> for TopKeys<'_> {
    type Value = (usize, Option<String>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let names = self.0.map(annotate::names).unwrap_or_default();
        let (mut keys, mut clash) = (0, None);
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<serde::de::IgnoredAny>()?;
            keys += 1;
            if clash.is_none() && names.contains(&key) {
                clash = Some(key);
            }
        }
        Ok((keys, clash))
    }
}

/// The rows of Parquet dump `rows` (`dump`, whose documents are `docs`), each as a JSON object
/// of all its columns (and the added ones when annotating) unless dropped.
fn write_rows(
    out: &mut impl Write,
    (dump, docs): (&FileEntry, &[DatasetDoc]),
    rows: ParquetDump,
    how: &Writing,
    written: &mut Written,
) -> Result<()> {
    // Written to memory first, so that a column arrow-json cannot write leaves no half line;
    // the one buffer serves every batch, which a new one each time would fault in afresh (a
    // megabyte a batch).
    let mut buf = Vec::new();
    DumpRows::open(rows, dump, false, how)?.write(docs, how, written, |rows| {
        buf.clear();
        let mut w = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .with_encoder_factory(Arc::new(QuickStrings))
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

/// String columns written as arrow-json writes them (through serde_json), byte for byte, but
/// eight bytes at a time where no byte needs escaping: on the 100k benchmark dump serde_json's
/// byte-by-byte loop over the 380 MB of text was a fifth of what the JSON Lines dataset cost
/// (docs/performance.md).
#[derive(Debug)]
struct QuickStrings;

impl arrow_json::EncoderFactory for QuickStrings {
    fn make_default_encoder<'a>(
        &self,
        _field: &'a arrow_schema::FieldRef,
        array: &'a dyn arrow_array::Array,
        _options: &'a arrow_json::EncoderOptions,
    ) -> Result<Option<arrow_json::writer::NullableEncoder<'a>>, arrow_schema::ArrowError> {
        use arrow_array::cast::AsArray;
        use arrow_json::writer::NullableEncoder;
        let encoder: Box<dyn arrow_json::Encoder + 'a> = match array.data_type() {
            arrow_schema::DataType::Utf8 => Box::new(StrEncoder(array.as_string::<i32>())),
            arrow_schema::DataType::LargeUtf8 => Box::new(StrEncoder(array.as_string::<i64>())),
            arrow_schema::DataType::Utf8View => Box::new(StrEncoder(array.as_string_view())),
            _ => return Ok(None),
        };
        Ok(Some(NullableEncoder::new(encoder, array.nulls().cloned())))
    }
}

/// The strings of a string array, as JSON strings.
struct StrEncoder<A>(A);

impl<'a, A: arrow_array::ArrayAccessor<Item = &'a str>> arrow_json::Encoder for StrEncoder<A> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        json_string(self.0.value(idx), out);
    }
}

/// Appends `s` to `out` as serde_json writes a string: quoted, `"` and `\` escaped with a
/// backslash, the control characters below U+0020 as `\b \t \n \f \r` or `\u00xx`
/// (lowercase), every other character as it is.
fn json_string(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let (mut run, mut i) = (0, 0);
    let mut unicode = *b"\\u0000";
    while i < bytes.len() {
        // Sixteen bytes at a time (two words, one branch) to the first that needs escaping.
        if let Some(words) = bytes[i..].first_chunk::<16>() {
            let (lo, hi) = words.split_at(8);
            let (lo, hi) = (escapes(lo), escapes(hi));
            if lo | hi == 0 {
                i += 16;
                continue;
            }
            let first = if lo != 0 {
                lo.trailing_zeros()
            } else {
                64 + hi.trailing_zeros()
            };
            i += (first / 8) as usize;
        }
        let b = bytes[i];
        let escaped: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..=0x1f => {
                unicode[4] = HEX[usize::from(b >> 4)];
                unicode[5] = HEX[usize::from(b & 15)];
                &unicode
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escaped);
        i += 1;
        run = i;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// A mask of the bytes of `word` (eight, little-endian) that JSON escapes: `"`, `\` and those
/// below 0x20. Its lowest set bit is exact (the top bit of the first such byte); bits above it
/// may be set by a borrow, so only the first is taken from it.
fn escapes(word: &[u8]) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let Ok(word) = <[u8; 8]>::try_from(word) else {
        return HIGH;
    };
    let w = u64::from_le_bytes(word);
    // A byte below n: (w - n) borrows into its top bit, which !w says was clear (a byte of 0x80
    // or more, part of a longer character, never counts).
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    below(w, 0x20)
        | below(w ^ (ONES * u64::from(b'"')), 1)
        | below(w ^ (ONES * u64::from(b'\\')), 1)
}

/// Lowercase hexadecimal digits, as serde_json writes `\u00xx`.
const HEX: &[u8; 16] = b"0123456789abcdef";

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, StructArray, TimestampSecondArray};
    use arrow_schema::{DataType, Field, TimeUnit};

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them_at_every_offset() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain ascii text, longer than a word".into(),
            "caf\u{e9} \u{2028} \u{7f} \u{1f600} \u{ffff}".into(),
        ];
        // Every ASCII character, alone and at each offset of two words of filler (the escaper
        // reads eight bytes at a time).
        for c in (0u8..0x80).map(char::from) {
            for at in 0..17 {
                let mut s: String = "abcdefghijklmnopq".chars().take(at).collect();
                s.push(c);
                s.push_str("é0123456789");
                cases.push(s);
            }
        }
        cases.push("\"\\\u{0}\u{1f}\n\r\t\u{8}\u{c}".repeat(5));
        for s in cases {
            let mut out = Vec::new();
            json_string(&s, &mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&s).unwrap()
            );
        }
    }

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
