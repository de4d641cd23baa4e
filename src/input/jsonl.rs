//! JSON Lines: a decompressed stream → one document, bad line or failure per line.
//!
//! Records stream through one reused line buffer, so memory is bounded by the longest line
//! accepted (`max_line`), not by the dump: a longer line is discarded as it is read. Each line
//! yields a document, a bad line with its reason, or the failure that ended the stream. Lines
//! are cut here (sequential, cheap) and parsed by [`parse_record`] (the costly part, which callers
//! may run on several threads). The module reads; it neither decompresses (see
//! [`crate::input::decompress`]) nor decides what a bad line costs the scan.

use std::fmt;
use std::io::{self, BufRead, Read};

use anyhow::{bail, Result};

use crate::input::field_value::FieldValue;

mod names;
mod record;

pub use names::field_names;
pub use record::{parse_fields, parse_record};

/// Where a document's text and id are found in each JSON Lines record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlOptions {
    /// Path to the text field, one segment per nested object (`["body", "text"]`).
    pub text_field: Vec<String>,
    /// Path to the id field.
    pub id_field: Vec<String>,
    /// Path to the `--keep-by` field, when given.
    pub keep_field: Option<Vec<String>>,
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

/// True when `text` holds JSON Lines: its first two lines that are not blank are each one whole
/// JSON value (a pretty-printed document's first line, `{`, is not; one line alone is not).
pub fn looks_like_json_lines(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let value = |l: Option<&str>| {
        l.is_some_and(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok())
    };
    value(lines.next()) && value(lines.next())
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
        keep: Option<FieldValue>,
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
    /// A line too long is kept for [`JsonlReader::long_line`] rather than skipped at once
    /// ([`JsonlReader::keep_long_lines`]).
    keep_long: bool,
    /// The line in `buf` is the head of a line too long, whose rest is still unread.
    long_rest: bool,
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads records from `reader` (already decompressed: see
    /// [`crate::input::decompress::open_stream`]).
    pub fn new(reader: R, opts: JsonlOptions) -> Self {
        JsonlReader {
            reader,
            opts,
            buf: Vec::new(),
            line: 0,
            pos: 0,
            line_start: 0,
            done: false,
            keep_long: false,
            long_rest: false,
        }
    }

    /// Keeps each line too long to be a record for [`JsonlReader::long_line`], which reads it
    /// whole through a stream, rather than skipping it unread: the dataset writes such a line
    /// as it is, without holding it in memory.
    pub fn keep_long_lines(&mut self) {
        self.keep_long = true;
    }

    /// Reads the next line, without its line end, into `buf`. None at the end of the stream;
    /// false when the line is too long, in which case the rest of it has been skipped unread.
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        if std::mem::take(&mut self.long_rest) {
            self.pos += self.reader.skip_until(b'\n')? as u64;
        }
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
            if self.keep_long {
                self.long_rest = true;
                return Ok(Some(false));
            }
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

    /// The line parsed: a document, or why it is none.
    pub fn parse(self, opts: &JsonlOptions) -> Line {
        match self {
            RawLine::Json {
                line,
                offset,
                bytes,
            } => match parse_fields(&bytes, opts) {
                Ok(f) => Line::Doc {
                    line,
                    id: f.id,
                    text: f.text,
                    at: (offset, bytes.len() as u64),
                    keep: f.keep,
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

impl<R: BufRead> JsonlReader<R> {
    /// The line [`JsonlReader::next_raw`] just gave as too long, whole, as a stream up to its
    /// line end (not included; on line 1, without a UTF-8 BOM); None unless lines too long are
    /// kept ([`JsonlReader::keep_long_lines`]) and the last line was one. What it leaves unread
    /// is skipped by the next line's read.
    pub fn long_line(&mut self) -> Option<LongLine<'_, R>> {
        if !self.long_rest {
            return None;
        }
        let bom = self.line == 1 && self.buf.starts_with(b"\xEF\xBB\xBF");
        Some(LongLine {
            head: if bom { 3 } else { 0 },
            from: self,
        })
    }
}

/// A line too long, read whole ([`JsonlReader::long_line`]): the head the reader holds, then the
/// rest from the stream, up to the line end.
pub struct LongLine<'r, R: BufRead> {
    from: &'r mut JsonlReader<R>,
    /// How much of the head has been read.
    head: usize,
}

impl<R: BufRead> Read for LongLine<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let from = &mut *self.from;
        if let Some(head) = from.buf.get(self.head..).filter(|h| !h.is_empty()) {
            let n = head.len().min(out.len());
            out[..n].copy_from_slice(&head[..n]);
            self.head += n;
            return Ok(n);
        }
        if !from.long_rest {
            return Ok(0);
        }
        let available = from.reader.fill_buf()?;
        let (n, end) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at.min(out.len()), at <= out.len()),
            None => (available.len().min(out.len()), available.is_empty()),
        };
        out[..n].copy_from_slice(&available[..n]);
        // The line end, reached, is consumed with the bytes before it.
        let taken = n + usize::from(end && n < available.len());
        from.reader.consume(taken);
        from.pos += taken as u64;
        if end {
            from.long_rest = false;
        }
        Ok(n)
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        let raw = self.next_raw()?;
        Some(raw.parse(&self.opts))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::input::decompress::open_stream;

    fn opts(text: &str, id: &str, max_line: u64) -> JsonlOptions {
        let (text_field, id_field) = (field_path(text).unwrap(), field_path(id).unwrap());
        JsonlOptions {
            text_field,
            id_field,
            keep_field: None,
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
        let (_, stream) = open_stream(Cursor::new(Vec::new())).unwrap();
        assert!(show(JsonlReader::new(stream, opts("text", "id", 100))).is_empty());
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
    fn a_line_too_long_kept_is_read_whole_through_a_stream_or_skipped_unread() {
        // Line 1 (a BOM, then too long, CRLF) read whole in small reads; line 3 too long and
        // left unread; the lines after each are where they were.
        let long = |c: u8| {
            let mut l = b"{\"text\":\"".to_vec();
            l.extend(std::iter::repeat_n(c, 5_000));
            l.extend(b"\"}");
            l
        };
        let mut input = b"\xEF\xBB\xBF".to_vec();
        input.extend(long(b'x'));
        input.extend(b"\r\n{\"text\":\"a\"}\n");
        input.extend(long(b'y'));
        input.extend(b"\n{\"text\":\"b\"}");
        let mut reader = JsonlReader::new(&input[..], opts("text", "id", 16));
        reader.keep_long_lines();
        let mut seen = Vec::new();
        while let Some(raw) = reader.next_raw() {
            let line = match raw.parse(&opts("text", "id", 16)) {
                Line::Doc { line, text, at, .. } => {
                    let (offset, len) = (at.0 as usize, at.1 as usize);
                    assert!(input[offset..offset + len].ends_with(b"\"}"));
                    format!("{line} {text}")
                }
                Line::Bad { line, reason } => format!("{line} {reason}"),
                Line::Failed { .. } => panic!("failed"),
            };
            if line.starts_with("1 ") {
                let mut whole: Vec<u8> = Vec::new();
                let mut stream = reader.long_line().unwrap();
                let mut chunk = [0; 7];
                loop {
                    let n = std::io::Read::read(&mut stream, &mut chunk).unwrap();
                    if n == 0 {
                        break;
                    }
                    whole.extend(&chunk[..n]);
                }
                assert_eq!(whole, [&long(b'x')[..], b"\r"].concat());
            }
            seen.push(line);
        }
        let want = [
            "1 line longer than 16 bytes",
            "2 a",
            "3 line longer than 16 bytes",
            "4 b",
        ];
        assert_eq!(seen, want);
        // Without keep_long_lines, no line is kept.
        let mut reader = JsonlReader::new(&input[..], opts("text", "id", 16));
        assert!(reader.next_raw().is_some() && reader.long_line().is_none());
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
