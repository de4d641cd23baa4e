//! Dump: a JSON Lines export, plain or compressed → a stream of documents.
//!
//! Compression is recognised by its magic bytes, never by the file name: gzip (`1f 8b`, any
//! number of concatenated members) and zstd (`28 b5 2f fd`, any number of frames, skippable
//! frames skipped, content checksums checked). A corrupt or truncated stream is an
//! `io::Error` saying so, never a panic.
//!
//! Records stream through one reused line buffer, so memory is bounded by the longest line
//! accepted (`max_line`), not by the dump: a longer line is discarded as it is read. Each line
//! yields a document, a bad line with its reason, or the failure that ended the stream. The
//! module reads; it does not decide what a bad line costs the scan.

use std::fmt;
use std::io::{self, BufRead, BufReader, Cursor, ErrorKind, Read};

use anyhow::{bail, Result};
use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::error::Category;
use serde_json::Value;

/// Buffer size for reading a dump and for its decompressed stream.
const BUF_SIZE: usize = 256 * 1024;

/// How a stream is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed (or in no format recognised).
    None,
    /// gzip, one member or several.
    Gzip,
    /// Zstandard, one frame or several.
    Zstd,
}

impl Compression {
    /// The lowercase name, for messages and the report.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Recognises a compression format from the first bytes of a stream (4 are enough).
pub fn sniff(prefix: &[u8]) -> Compression {
    match prefix {
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        // A skippable frame (magic 0x184D2A50..=0x184D2A5F) opens every file `pzstd` writes.
        [b, 0x2a, 0x4d, 0x18, ..] if b & 0xf0 == 0x50 => Compression::Zstd,
        _ => Compression::None,
    }
}

/// Sniffs `inner` and returns its format with a buffered reader of the decompressed bytes.
pub fn open_stream<R: Read + Send + 'static>(
    mut inner: R,
) -> io::Result<(Compression, Box<dyn BufRead + Send>)> {
    let mut prefix = [0u8; 4];
    let mut filled = 0;
    while filled < prefix.len() {
        match inner.read(&mut prefix[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let compression = sniff(&prefix[..filled]);
    let raw = BufReader::with_capacity(
        BUF_SIZE,
        Cursor::new(prefix[..filled].to_vec()).chain(inner),
    );
    let stream: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => decoded(flate2::bufread::MultiGzDecoder::new(raw), "gzip"),
        Compression::Zstd => {
            let frame = FrameDecoder::new();
            decoded(ZstdFrames { source: raw, frame }, "zstd")
        }
    };
    Ok((compression, stream))
}

fn decoded<R: Read + Send + 'static>(inner: R, format: &'static str) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::with_capacity(
        BUF_SIZE,
        Labelled { inner, format },
    ))
}

/// Reads all of `reader` into `buf`, but never more than `limit + 1` bytes, so a small file
/// that decompresses to gigabytes cannot exhaust memory. False when the content exceeds
/// `limit` (`buf` then holds its first `limit + 1` bytes).
pub fn read_limited(reader: &mut dyn Read, limit: u64, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    reader.take(limit.saturating_add(1)).read_to_end(buf)?;
    Ok(buf.len() as u64 <= limit)
}

/// Names the format in the errors a decoder raises on bad data; other I/O errors pass as they are.
struct Labelled<R> {
    inner: R,
    format: &'static str,
}

impl<R: Read> Read for Labelled<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| match e.kind() {
            ErrorKind::InvalidData | ErrorKind::InvalidInput | ErrorKind::UnexpectedEof => {
                let message = format!("{} stream is corrupt or truncated: {e}", self.format);
                io::Error::new(ErrorKind::InvalidData, message)
            }
            _ => e,
        })
    }
}

/// A zstd stream of any number of frames. ruzstd's `StreamingDecoder` stops after the first
/// frame, and `zstd` writes one frame per input when files are concatenated.
struct ZstdFrames<R> {
    source: R,
    frame: FrameDecoder,
}

impl<R: BufRead> ZstdFrames<R> {
    fn check_checksum(&self) -> io::Result<()> {
        match (
            self.frame.get_checksum_from_data(),
            self.frame.get_calculated_checksum(),
        ) {
            (Some(stored), Some(computed)) if stored != computed => {
                Err(io::Error::new(ErrorKind::InvalidData, "checksum mismatch"))
            }
            _ => Ok(()),
        }
    }

    fn next_frame(&mut self) -> io::Result<()> {
        match self.frame.reset(&mut self.source) {
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let skip = u64::from(length);
                if io::copy(&mut (&mut self.source).take(skip), &mut io::sink())? < skip {
                    return Err(io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "skippable frame cut short",
                    ));
                }
                Ok(())
            }
            other => other.map_err(zstd_error),
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.frame.can_collect() > 0 {
                return self.frame.read(buf);
            }
            if !self.frame.is_finished() {
                self.frame
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(zstd_error)?;
                continue;
            }
            // The frame is decoded and drained (or none was started): check it, then go on to
            // the next one if any bytes are left.
            self.check_checksum()?;
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.next_frame()?;
        }
    }
}

/// The decoder's error in words: its own messages print nested debug structures.
fn zstd_error(e: FrameDecoderError) -> io::Error {
    let detail = format!("{e:?}");
    let message = if detail.contains("UnexpectedEof") || detail.contains("fill whole buffer") {
        "the stream ends in the middle of a frame".to_string()
    } else {
        match detail.split_once('(') {
            Some((kind, _)) => format!("invalid frame data ({kind})"),
            None => format!("invalid frame data ({detail})"),
        }
    };
    io::Error::new(ErrorKind::InvalidData, message)
}

/// Where a document's text and id are found in each JSON Lines record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlOptions {
    /// Path to the text field, one segment per nested object (`["body", "text"]`).
    pub text_field: Vec<String>,
    /// Path to the id field.
    pub id_field: Vec<String>,
    /// Longest line accepted, in bytes, not counting the line end.
    pub max_line: u64,
}

/// Splits a dotted field name (`meta.url`) into its path segments.
pub fn field_path(dotted: &str) -> Result<Vec<String>> {
    if dotted.is_empty() {
        bail!("the field name is empty");
    }
    if dotted.split('.').any(str::is_empty) {
        bail!("field name {dotted:?} has an empty segment");
    }
    Ok(dotted.split('.').map(str::to_owned).collect())
}

/// One line of a JSON Lines stream, as read.
#[derive(Debug)]
pub enum Line {
    /// A document: 1-based line number, the id if the id field is present, the text, and where
    /// the record's JSON lies in the (decompressed) stream: offset and length.
    Doc {
        line: u64,
        id: Option<String>,
        text: String,
        at: (u64, u64),
    },
    /// A line that holds no document, with why.
    Bad { line: u64, reason: BadLine },
    /// The stream failed (I/O or decompression error) after `line` complete lines; iteration
    /// ends after this.
    Failed { line: u64, error: io::Error },
}

/// Why a line holds no document. Field names are dotted, as the user gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadLine {
    /// Not JSON: serde_json's message.
    InvalidJson(String),
    /// JSON, but not an object.
    NotAnObject,
    /// The text field is absent.
    MissingText(String),
    /// The text field is present but not a string.
    TextNotString(String),
    /// The line is not UTF-8.
    InvalidUtf8,
    /// The line is longer than this many bytes.
    TooLong(u64),
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadLine::InvalidJson(message) => write!(f, "invalid JSON: {message}"),
            BadLine::NotAnObject => f.write_str("not a JSON object"),
            BadLine::MissingText(field) => write!(f, "no \"{field}\" field"),
            BadLine::TextNotString(field) => write!(f, "\"{field}\" is not a string"),
            BadLine::InvalidUtf8 => f.write_str("not valid UTF-8"),
            BadLine::TooLong(max) => write!(f, "line longer than {max} bytes"),
        }
    }
}

/// Iterates over the lines of a JSON Lines stream. Blank lines are skipped but counted.
pub struct JsonlReader<R: BufRead> {
    reader: R,
    opts: JsonlOptions,
    buf: Vec<u8>,
    line: u64,
    /// Bytes of the stream consumed so far.
    pos: u64,
    /// Where the line in `buf` starts in the stream.
    line_start: u64,
    done: bool,
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads records from `reader` (already decompressed: see [`open_stream`]).
    pub fn new(reader: R, opts: JsonlOptions) -> Self {
        JsonlReader {
            reader,
            opts,
            buf: Vec::new(),
            line: 0,
            pos: 0,
            line_start: 0,
            done: false,
        }
    }

    /// Reads the next line, without its line end, into `buf`. None at the end of the stream;
    /// false when the line is too long, in which case the rest of it has been skipped unread.
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        self.buf.clear();
        self.line_start = self.pos;
        // Room for the longest line accepted plus "\r\n": a line that fills it without ending
        // is too long.
        let cap = self.opts.max_line.saturating_add(2);
        let n = (&mut self.reader)
            .take(cap)
            .read_until(b'\n', &mut self.buf)?;
        self.pos += n as u64;
        if n == 0 {
            return Ok(None);
        }
        let ended = self.buf.last() == Some(&b'\n');
        if !ended && n as u64 == cap {
            self.pos += self.reader.skip_until(b'\n')? as u64;
            self.buf.clear();
            return Ok(Some(false));
        }
        if ended {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(self.buf.len() as u64 <= self.opts.max_line))
    }
}

/// A line as [`JsonlReader::next_raw`] cuts it, before its JSON is parsed: splitting lines is
/// cheap and sequential, parsing is the costly part and can run on several threads.
#[derive(Debug)]
pub enum RawLine {
    /// A line that is not blank, without its line end (and, on line 1, without a UTF-8 BOM),
    /// and where those bytes start in the stream.
    Json {
        line: u64,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// A line already known to hold no document, or the end of a failed stream.
    Done(Line),
}

impl RawLine {
    /// Its bytes' length (0 when there is nothing to parse).
    pub fn len(&self) -> usize {
        match self {
            RawLine::Json { bytes, .. } => bytes.len(),
            RawLine::Done(_) => 0,
        }
    }

    /// True when there is nothing to parse.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The line parsed: a document, or why it is none.
    pub fn parse(self, opts: &JsonlOptions) -> Line {
        match self {
            RawLine::Json {
                line,
                offset,
                bytes,
            } => match parse_record(&bytes, opts) {
                Ok((id, text)) => Line::Doc {
                    line,
                    id,
                    text,
                    at: (offset, bytes.len() as u64),
                },
                Err(reason) => Line::Bad { line, reason },
            },
            RawLine::Done(line) => line,
        }
    }
}

impl<R: BufRead> JsonlReader<R> {
    /// The options lines are parsed with.
    pub fn options(&self) -> &JsonlOptions {
        &self.opts
    }

    /// The next line, cut but not parsed. Blank lines are skipped but counted.
    pub fn next_raw(&mut self) -> Option<RawLine> {
        while !self.done {
            let fits = match self.read_line() {
                Ok(Some(fits)) => fits,
                Ok(None) => break,
                Err(error) => {
                    self.done = true;
                    return Some(RawLine::Done(Line::Failed {
                        line: self.line,
                        error,
                    }));
                }
            };
            self.line += 1;
            let line = self.line;
            if !fits {
                return Some(RawLine::Done(Line::Bad {
                    line,
                    reason: BadLine::TooLong(self.opts.max_line),
                }));
            }
            let mut bytes = &self.buf[..];
            if line == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            if bytes.trim_ascii().is_empty() {
                continue;
            }
            return Some(RawLine::Json {
                line,
                offset: self.line_start + (self.buf.len() - bytes.len()) as u64,
                bytes: bytes.to_vec(),
            });
        }
        self.done = true;
        None
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        let raw = self.next_raw()?;
        Some(raw.parse(&self.opts))
    }
}

/// The id and text of one record (one line's bytes, without the line end).
pub fn parse_record(
    bytes: &[u8],
    opts: &JsonlOptions,
) -> Result<(Option<String>, String), BadLine> {
    let text_name = || opts.text_field.join(".");
    let json = std::str::from_utf8(bytes).map_err(|_| BadLine::InvalidUtf8)?;
    let mut de = serde_json::Deserializer::from_str(json);
    let picked = de
        .deserialize_map(Fields { opts })
        .and_then(|picked| de.end().map(|()| picked))
        .map_err(|e| match e.classify() {
            // The one type error: the line does not open an object. Say so only if it is JSON.
            Category::Data => match serde_json::from_str::<IgnoredAny>(json) {
                Ok(_) => BadLine::NotAnObject,
                Err(e) => json_error(e),
            },
            _ => json_error(e),
        })?;
    let text = match picked.text {
        Some(Value::String(text)) => text,
        Some(_) => return Err(BadLine::TextNotString(text_name())),
        None => return Err(BadLine::MissingText(text_name())),
    };
    let id = match picked.id {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(other) => Some(other.to_string()),
    };
    Ok((id, text))
}

/// serde_json's message without "line 1": a record is always one line.
fn json_error(e: serde_json::Error) -> BadLine {
    let message = e.to_string();
    BadLine::InvalidJson(match message.rsplit_once(" at line ") {
        Some((head, _)) => format!("{head} at column {}", e.column()),
        None => message,
    })
}

/// The values found at the text and id paths.
#[derive(Default)]
struct Picked {
    text: Option<Value>,
    id: Option<Value>,
}

/// Visits a record's top-level object and builds only the members the text and id paths go
/// through; the parser skips the rest without building it, which on pages with large
/// metadata is most of the line.
struct Fields<'a> {
    opts: &'a JsonlOptions,
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picked, A::Error> {
        let (text_path, id_path) = (&self.opts.text_field, &self.opts.id_field);
        let keys = KeyMatch {
            text: text_path.first(),
            id: id_path.first(),
        };
        let mut picked = Picked::default();
        while let Some((on_text, on_id)) = map.next_key_seed(keys)? {
            if !on_text && !on_id {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // Either path matched here, so it has a first segment and `[1..]` is in bounds.
            let value: Value = map.next_value()?;
            if on_id {
                picked.id = lookup(&value, &id_path[1..]).cloned();
            }
            if on_text {
                picked.text = match text_path.len() {
                    1 => Some(value),
                    _ => lookup(&value, &text_path[1..]).cloned(),
                };
            }
        }
        Ok(picked)
    }
}

fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key.as_str()))
}

/// Compares an object key with the first text and id segments without allocating it.
#[derive(Clone, Copy)]
struct KeyMatch<'a> {
    text: Option<&'a String>,
    id: Option<&'a String>,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = (bool, bool);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(bool, bool), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = (bool, bool);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<(bool, bool), E> {
        let is = |segment: Option<&String>| segment.is_some_and(|s| s == key);
        Ok((is(self.text), is(self.id)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;

    use super::*;

    fn opts(text: &str, id: &str, max_line: u64) -> JsonlOptions {
        let (text_field, id_field) = (field_path(text).unwrap(), field_path(id).unwrap());
        JsonlOptions {
            text_field,
            id_field,
            max_line,
        }
    }

    /// Each line as one string, so a test states the whole outcome at once.
    fn show(lines: impl Iterator<Item = Line>) -> Vec<String> {
        lines
            .map(|line| match line {
                Line::Doc { line, id, text, .. } => format!("{line} {id:?} {text}"),
                Line::Bad { line, reason } => format!("{line} bad: {reason}"),
                Line::Failed { line, error } => format!("{line} failed: {error}"),
            })
            .collect()
    }

    fn read(input: &[u8]) -> Vec<String> {
        show(JsonlReader::new(input, opts("text", "id", 1 << 20)))
    }

    fn read_stream(input: Vec<u8>) -> (Compression, Vec<String>) {
        let (compression, stream) = open_stream(Cursor::new(input)).unwrap();
        (
            compression,
            show(JsonlReader::new(stream, opts("text", "id", 1 << 20))),
        )
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    const TWO: &[u8] = b"{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n";

    #[test]
    fn reads_string_numeric_missing_and_other_ids() {
        let input = br#"{"id":"a","text":"x"}
{"text":"y","id":42}
{"text":"z"}
{"id":null,"text":"w"}
{"id":[1,{"k":true}],"text":"v","other":{"deep":[1,2]}}
"#;
        let want = [
            r#"1 Some("a") x"#,
            r#"2 Some("42") y"#,
            "3 None z",
            "4 None w",
            r#"5 Some("[1,{\"k\":true}]") v"#,
        ];
        assert_eq!(read(input), want);
    }

    #[test]
    fn follows_nested_field_paths() {
        let input = br#"{"meta":{"url":"u1"},"body":{"text":"hello"}}
{"meta":"flat","body":{"text":"t"}}
{"body":"t"}
{"body":{"text":7}}
"#;
        let want = [
            r#"1 Some("u1") hello"#,
            "2 None t",
            r#"3 bad: no "body.text" field"#,
            r#"4 bad: "body.text" is not a string"#,
        ];
        let lines = JsonlReader::new(&input[..], opts("body.text", "meta.url", 1 << 20));
        assert_eq!(show(lines), want);
    }

    #[test]
    fn same_field_for_text_and_id() {
        let lines = JsonlReader::new(&br#"{"t":"x"}"#[..], opts("t", "t", 100));
        assert_eq!(show(lines), [r#"1 Some("x") x"#]);
    }

    #[test]
    fn strips_crlf_and_skips_blank_lines_keeping_numbers() {
        let input = b"\xEF\xBB\xBF\r\n   \n{\"text\":\"a\"}\r\n\n\t\r\n{\"text\":\"b\"}";
        assert_eq!(read(input), ["3 None a", "6 None b"]);
    }

    #[test]
    fn empty_input_yields_nothing() {
        assert!(read(b"").is_empty());
        assert!(read(b"\n \n").is_empty());
        assert!(read_stream(Vec::new()).1.is_empty());
    }

    #[test]
    fn reports_bad_lines_and_reads_on() {
        let input = b"{\"text\":\"a\"}\n{\"text\": }\n{\"text\":1}\n{\"id\":\"x\"}\n[1,2]\n\
            {\"text\":\"\xff\"}\n{\"text\":\"b\"} x\n[1,2\n\"s\"\n{\"text\":\"c\"}\n";
        let want = [
            "1 None a",
            "2 bad: invalid JSON: expected value at column 10",
            r#"3 bad: "text" is not a string"#,
            r#"4 bad: no "text" field"#,
            "5 bad: not a JSON object",
            "6 bad: not valid UTF-8",
            "7 bad: invalid JSON: trailing characters at column 14",
            "8 bad: invalid JSON: EOF while parsing a list at column 4",
            "9 bad: not a JSON object",
            "10 None c",
        ];
        assert_eq!(read(input), want);
    }

    #[test]
    fn records_say_where_their_json_lies_in_the_stream() {
        // A BOM, CRLF and LF ends, a blank line, a too-long line and a bad line before records.
        let input = b"\xEF\xBB\xBF{\"text\":\"a\"}\r\n\n  \n{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n\
                      not json\n {\"id\":7,\"text\":\"b\\nc\"} \r\n{\"text\":\"d\"}";
        let mut seen = Vec::new();
        for line in JsonlReader::new(&input[..], opts("text", "id", 24)) {
            if let Line::Doc { line, text, at, .. } = line {
                let (offset, len) = (at.0 as usize, at.1 as usize);
                let (_, again) =
                    parse_record(&input[offset..offset + len], &opts("text", "id", 24))
                        .unwrap_or_else(|e| panic!("line {line}: {e}"));
                assert_eq!(again, text, "line {line}");
                seen.push((line, text));
            }
        }
        let want = [(1, "a"), (6, "b\nc"), (7, "d")];
        let want: Vec<(u64, String)> = want.iter().map(|&(l, t)| (l, t.to_string())).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn skips_too_long_line_without_buffering_it() {
        let mut input = b"{\"text\":\"abcde\"}\r\n{\"text\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend(b"\"}\n{\"text\":\"abcdef\"}\n{\"text\":\"ok\"}\n\"12345678901234567");
        let mut reader = JsonlReader::new(&input[..], opts("text", "id", 16));
        let first = show(reader.by_ref().take(2));
        assert!(reader.buf.capacity() < 1024, "{}", reader.buf.capacity());
        let want = [
            "1 None abcde",
            "2 bad: line longer than 16 bytes",
            "3 bad: line longer than 16 bytes",
            "4 None ok",
            "5 bad: line longer than 16 bytes",
        ];
        assert_eq!([first, show(reader)].concat(), want);
    }

    #[test]
    fn reads_gzip_including_concatenated_members() {
        assert_eq!(read_stream(gzip(TWO)), (Compression::Gzip, read(TWO)));
        let (first, second) = TWO.split_at(10);
        let members = [gzip(first), gzip(second)].concat();
        assert_eq!(read_stream(members), (Compression::Gzip, read(TWO)));
    }

    #[test]
    fn reads_zstd_including_several_and_skippable_frames() {
        assert_eq!(read_stream(zstd(TWO)), (Compression::Zstd, read(TWO)));
        let (first, second) = TWO.split_at(10);
        let skippable = [
            &[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9][..],
            &zstd(first),
        ];
        let frames = [skippable.concat(), zstd(second)].concat();
        assert_eq!(read_stream(frames), (Compression::Zstd, read(TWO)));
    }

    #[test]
    fn truncated_gzip_fails_after_the_lines_read() {
        let data = gzip(TWO);
        let (compression, lines) = read_stream(data[..data.len() - 4].to_vec());
        assert_eq!(compression, Compression::Gzip);
        assert_eq!(&lines[..2], &read(TWO)[..]);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("2 failed: gzip stream is corrupt or truncated: "));
    }

    #[test]
    fn corrupt_zstd_fails_and_ends_iteration() {
        let mut data = zstd(TWO);
        let last = data.len() - 1;
        data[last] ^= 0xff;
        let failed = "2 failed: zstd stream is corrupt or truncated: checksum mismatch";
        assert_eq!(
            read_stream(data).1,
            [read(TWO), vec![failed.into()]].concat()
        );
        let data = zstd(TWO);
        let (_, lines) = read_stream(data[..data.len() - 6].to_vec());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("0 failed: zstd stream is corrupt or truncated: "));
    }

    #[test]
    fn sniffs_short_prefixes() {
        assert_eq!(sniff(b""), Compression::None);
        assert_eq!(sniff(b"\x1f"), Compression::None);
        assert_eq!(sniff(b"\x1f\x8b\x08"), Compression::Gzip);
        assert_eq!(sniff(b"\x28\xb5\x2f"), Compression::None);
        assert_eq!(sniff(b"\x28\xb5\x2f\xfd"), Compression::Zstd);
        assert_eq!(Compression::Zstd.name(), "zstd");
        let (compression, mut stream) = open_stream(Cursor::new(b"x".to_vec())).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        assert_eq!((compression, text.as_str()), (Compression::None, "x"));
    }

    /// Hands out one byte per read, like a pipe under load.
    struct Trickle(Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn sniffs_through_short_reads() {
        let (compression, stream) = open_stream(Trickle(Cursor::new(gzip(TWO)))).unwrap();
        assert_eq!(compression, Compression::Gzip);
        assert_eq!(
            show(JsonlReader::new(stream, opts("text", "id", 100))),
            read(TWO)
        );
    }

    #[test]
    fn read_limited_stops_one_byte_past_the_limit() {
        let mut buf = Vec::new();
        assert!(read_limited(&mut &b"12345"[..], 5, &mut buf).unwrap());
        assert_eq!(buf, b"12345");
        assert!(!read_limited(&mut &b"123456789"[..], 5, &mut buf).unwrap());
        assert_eq!(buf, b"123456");
        let bomb = gzip(&vec![0; 10 << 20]);
        assert!(bomb.len() < 64 << 10);
        let (_, mut stream) = open_stream(Cursor::new(bomb)).unwrap();
        assert!(!read_limited(&mut stream, 1 << 20, &mut buf).unwrap());
        assert_eq!(buf.len(), (1 << 20) + 1);
    }

    #[test]
    fn field_path_splits_on_dots() {
        assert_eq!(field_path("meta.url").unwrap(), ["meta", "url"]);
        assert_eq!(field_path("text").unwrap(), ["text"]);
        for bad in ["", "a..b", ".a", "a."] {
            assert!(field_path(bad).is_err(), "{bad:?}");
        }
    }
}
