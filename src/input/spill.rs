//! Spill: the texts of dump records that verification needs, found again by document id.
//!
//! A file document is read again when its shingle set is needed. A record of a plain
//! (uncompressed) dump is too: the first pass noted where its JSON lies in the dump, and it is
//! read from there and parsed again. A line of a compressed dump cannot be reached without
//! decompressing everything before it, so once the candidates are known, each compressed dump
//! that holds one is streamed a second time, and the texts of the records that are candidates
//! (or have exact copies) are appended to one temporary file, whose offsets are kept by
//! document id. Memory stays that of the offsets; the disk holds only candidates' text. The
//! file has no name (it is unlinked as soon as it is created), so nothing is left behind
//! however the process ends. Either way the text must still hash as it did in the first pass
//! (`doc`), or the record counts as changed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::sync::OnceLock;

use crate::input::jsonl::{parse_record, JsonlOptions};

/// Texts of dump records by document id, filled once after the candidates are known.
#[derive(Debug, Default)]
pub struct Spill {
    inner: OnceLock<Filled>,
}

/// Records read back from the plain (uncompressed) dumps that hold them.
#[derive(Debug)]
pub struct InDumps {
    /// The dumps, open.
    pub dumps: Vec<File>,
    /// (document, index in `dumps`, offset, length) of each record's JSON.
    pub records: Vec<(u32, u32, u64, u64)>,
    /// How a record's text is found in its JSON.
    pub opts: JsonlOptions,
}

#[derive(Debug)]
struct Filled {
    /// The copied texts; None when nothing was copied.
    file: Option<File>,
    at: HashMap<u32, Place>,
    direct: InDumps,
}

/// Where a document's text is.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// In the spill's file: offset and length of the text.
    Copied(u64, u64),
    /// In dump `direct.dumps[i]`: offset and length of the record's JSON.
    InDump(u32, u64, u64),
}

impl Spill {
    /// Stores `texts` (document id, text) in a temporary file and makes them, and the records
    /// of `direct`, readable. Only the first call fills the spill; a second is an error.
    pub fn fill<I>(&self, texts: I, direct: InDumps) -> std::io::Result<()>
    where
        I: IntoIterator<Item = std::io::Result<(u32, String)>>,
    {
        let mut at: HashMap<u32, Place> = direct
            .records
            .iter()
            .map(|&(doc, dump, offset, len)| (doc, Place::InDump(dump, offset, len)))
            .collect();
        let mut texts = texts.into_iter().peekable();
        let file = match texts.peek() {
            None => None,
            Some(_) => {
                let mut file = tempfile::tempfile()?;
                let mut offset = 0u64;
                {
                    let mut out = BufWriter::new(&mut file);
                    for item in texts {
                        let (doc, text) = item?;
                        out.write_all(text.as_bytes())?;
                        at.insert(doc, Place::Copied(offset, text.len() as u64));
                        offset += text.len() as u64;
                    }
                    out.flush()?;
                }
                file.rewind()?;
                Some(file)
            }
        };
        self.inner
            .set(Filled { file, at, direct })
            .map_err(|_| std::io::Error::other("the spill was filled twice"))
    }

    /// The text of `doc`, read into `buf`. An error when it was never stored, or when a record
    /// read back from its dump no longer parses (the dump changed).
    pub fn read(&self, doc: u32, buf: &mut Vec<u8>) -> Result<(), String> {
        const MISSING: &str = "record text is not available";
        let filled = self.inner.get().ok_or(MISSING)?;
        let place = *filled.at.get(&doc).ok_or(MISSING)?;
        let io = |e: std::io::Error| crate::messages::io_reason(&e);
        let (file, offset, len) = match place {
            Place::Copied(offset, len) => (filled.file.as_ref().ok_or(MISSING)?, offset, len),
            Place::InDump(dump, offset, len) => {
                let file = filled.direct.dumps.get(dump as usize).ok_or(MISSING)?;
                (file, offset, len)
            }
        };
        buf.clear();
        buf.resize(len as usize, 0);
        let changed = "file changed during the scan";
        match (read_at(file, buf, offset), place) {
            (Ok(()), _) => {}
            (Err(e), Place::InDump(..)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(changed.to_string())
            }
            (Err(e), _) => return Err(io(e)),
        }
        if let Place::InDump(..) = place {
            let (_, text) =
                parse_record(buf, &filled.direct.opts).map_err(|_| changed.to_string())?;
            *buf = text.into_bytes();
        }
        Ok(())
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_dumps() -> InDumps {
        InDumps {
            dumps: Vec::new(),
            records: Vec::new(),
            opts: JsonlOptions {
                text_field: vec!["text".into()],
                id_field: vec!["id".into()],
                max_line: 1 << 20,
            },
        }
    }

    #[test]
    fn stores_and_reads_back_by_document() {
        let spill = Spill::default();
        let mut buf = Vec::new();
        assert!(spill.read(1, &mut buf).is_err());
        spill
            .fill(
                vec![
                    Ok((7, "seven".to_string())),
                    Ok((3, String::new())),
                    Ok((1, "one".into())),
                ],
                no_dumps(),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        for (doc, text) in [(7, "seven"), (3, ""), (1, "one")] {
            spill.read(doc, &mut buf).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(buf, text.as_bytes());
        }
        assert!(spill.read(2, &mut buf).is_err());
        assert!(spill.fill(Vec::new(), no_dumps()).is_err());
    }

    #[test]
    fn reads_records_back_from_plain_dumps() {
        let line1 = br#"{"text":"first"}"#;
        let line2 = br#"{"id":2,"text":"second\nline"}"#;
        let mut dump = tempfile::tempfile().unwrap_or_else(|e| panic!("{e}"));
        dump.write_all(&[&line1[..], b"\r\n", line2, b"\n"].concat())
            .unwrap_or_else(|e| panic!("{e}"));
        let second = line1.len() as u64 + 2;
        let mut direct = no_dumps();
        direct.dumps.push(dump);
        direct.records = vec![
            (4, 0, 0, line1.len() as u64),
            (9, 0, second, line2.len() as u64),
            // The dump changed: the bytes at the offset are no longer a record...
            (10, 0, 3, line1.len() as u64),
            // ...or the dump got shorter.
            (11, 0, second, 1000),
        ];
        let spill = Spill::default();
        spill
            .fill(vec![Ok((2, "copied".to_string()))], direct)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut buf = Vec::new();
        for (doc, text) in [(4, "first"), (9, "second\nline"), (2, "copied")] {
            spill.read(doc, &mut buf).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(String::from_utf8_lossy(&buf), text);
        }
        for doc in [10, 11] {
            assert_eq!(
                spill.read(doc, &mut buf),
                Err("file changed during the scan".to_string())
            );
        }
    }
}
