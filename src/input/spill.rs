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
    /// The tables in memory records are read back from, where they lie, never copied.
    pub tables: Vec<crate::input::table::TableDump>,
    /// (document, index in `tables`, row from 1) of each record of a table.
    pub in_tables: Vec<(u32, u32, u64)>,
}

#[derive(Debug)]
struct Filled {
    /// The copied texts; None when nothing was copied.
    file: Option<File>,
    at: HashMap<u32, Place>,
    /// The plain dumps records are read back from (none for carried texts).
    direct: Option<InDumps>,
    /// Why a document's text could not be copied, by document.
    failed: HashMap<u32, String>,
}

/// Where a document's text is.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// In the spill's file: offset and length of the text.
    Copied(u64, u64),
    /// In dump `direct.dumps[i]`: offset and length of the record's JSON.
    InDump(u32, u64, u64),
    /// In table `direct.tables[i]`: the row, from 1.
    InTable(u32, u64),
    /// Not available: the reason is in `failed`.
    Failed,
}

impl Spill {
    /// Stores `texts` (document id, text) in a temporary file and makes them, and the records
    /// of `direct`, readable. Only the first call fills the spill; a second is an error.
    pub fn fill<I>(&self, texts: I, direct: InDumps) -> std::io::Result<()>
    where
        I: IntoIterator<Item = std::io::Result<(u32, Vec<u8>)>>,
    {
        let mut at: HashMap<u32, Place> = direct
            .records
            .iter()
            .map(|&(doc, dump, offset, len)| (doc, Place::InDump(dump, offset, len)))
            .collect();
        at.extend(
            (direct.in_tables.iter()).map(|&(doc, table, row)| (doc, Place::InTable(table, row))),
        );
        let file = copy(texts, &mut at)?;
        self.set(Filled {
            file,
            at,
            direct: Some(direct),
            failed: HashMap::new(),
        })
    }

    /// Stores texts carried from another process (the staged pipeline's route stage), each a
    /// document's content or the reason it could not be read, which [`Spill::read`] then gives.
    pub fn fill_carried<I>(&self, texts: I) -> std::io::Result<()>
    where
        I: IntoIterator<Item = (u32, Result<Vec<u8>, String>)>,
    {
        let (mut at, mut failed) = (HashMap::new(), HashMap::new());
        let readable = texts.into_iter().filter_map(|(doc, text)| match text {
            Ok(t) => Some(Ok((doc, t))),
            Err(reason) => {
                failed.insert(doc, reason);
                None
            }
        });
        let file = copy(readable, &mut at)?;
        at.extend(failed.keys().map(|&d| (d, Place::Failed)));
        self.set(Filled {
            file,
            at,
            direct: None,
            failed,
        })
    }

    fn set(&self, filled: Filled) -> std::io::Result<()> {
        self.inner
            .set(filled)
            .map_err(|_| std::io::Error::other("the spill was filled twice"))
    }

    /// True when the spill holds `doc`'s text (for a document of a file, as the staged pipeline
    /// carries them; a scan stores only records').
    pub fn holds(&self, doc: u32) -> bool {
        self.inner.get().is_some_and(|f| f.at.contains_key(&doc))
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
                let direct = filled.direct.as_ref().ok_or(MISSING)?;
                let file = direct.dumps.get(dump as usize).ok_or(MISSING)?;
                (file, offset, len)
            }
            Place::InTable(table, row) => {
                let direct = filled.direct.as_ref().ok_or(MISSING)?;
                let table = direct.tables.get(table as usize).ok_or(MISSING)?;
                table.text_into(row, buf).ok_or(MISSING)?;
                return Ok(());
            }
            Place::Failed => {
                return Err(filled.failed.get(&doc).map_or(MISSING, |r| r).to_string())
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
        if let (Place::InDump(..), Some(direct)) = (place, &filled.direct) {
            let (_, text) = parse_record(buf, &direct.opts).map_err(|_| changed.to_string())?;
            *buf = text.into_bytes();
        }
        Ok(())
    }
}

/// Appends `texts` to a new unnamed temporary file (None when there is none), noting where each
/// lies in `at`.
fn copy<I>(texts: I, at: &mut HashMap<u32, Place>) -> std::io::Result<Option<File>>
where
    I: IntoIterator<Item = std::io::Result<(u32, Vec<u8>)>>,
{
    let mut texts = texts.into_iter().peekable();
    if texts.peek().is_none() {
        return Ok(None);
    }
    let mut file = tempfile::tempfile()?;
    let mut offset = 0u64;
    {
        let mut out = BufWriter::new(&mut file);
        for item in texts {
            let (doc, text) = item?;
            out.write_all(&text)?;
            at.insert(doc, Place::Copied(offset, text.len() as u64));
            offset += text.len() as u64;
        }
        out.flush()?;
    }
    file.rewind()?;
    Ok(Some(file))
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
                keep_field: None,
                max_line: 1 << 20,
            },
            tables: Vec::new(),
            in_tables: Vec::new(),
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
                    Ok((7, b"seven".to_vec())),
                    Ok((3, Vec::new())),
                    Ok((1, b"one".to_vec())),
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
            .fill(vec![Ok((2, b"copied".to_vec()))], direct)
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
