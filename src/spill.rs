//! Spill: the texts of dump records that verification needs, in an unnamed temporary file.
//!
//! A file document is read again when its shingle set is needed; a line of a compressed dump
//! cannot be reached without decompressing everything before it. So once the candidates are
//! known, each dump that holds one is streamed a second time, and the texts of the records that
//! are candidates (or have exact copies) are appended to one temporary file, whose offsets are
//! kept by document id. Memory stays that of the offsets; the disk holds only candidates' text.
//! The file has no name (it is unlinked as soon as it is created), so nothing is left behind
//! however the process ends.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::sync::OnceLock;

/// Texts of dump records by document id, filled once after the candidates are known.
#[derive(Debug, Default)]
pub struct Spill {
    inner: OnceLock<Filled>,
}

#[derive(Debug)]
struct Filled {
    file: File,
    at: HashMap<u32, (u64, u64)>,
}

impl Spill {
    /// Stores `texts` (document id, text) and makes them readable. Only the first call fills
    /// the spill; a second is an error.
    pub fn fill<I>(&self, texts: I) -> std::io::Result<()>
    where
        I: IntoIterator<Item = std::io::Result<(u32, String)>>,
    {
        let mut file = tempfile::tempfile()?;
        let mut at = HashMap::new();
        let mut offset = 0u64;
        {
            let mut out = BufWriter::new(&mut file);
            for item in texts {
                let (doc, text) = item?;
                out.write_all(text.as_bytes())?;
                at.insert(doc, (offset, text.len() as u64));
                offset += text.len() as u64;
            }
            out.flush()?;
        }
        file.rewind()?;
        self.inner
            .set(Filled { file, at })
            .map_err(|_| std::io::Error::other("the spill was filled twice"))
    }

    /// The text of `doc`, read into `buf`. An error when it was never stored.
    pub fn read(&self, doc: u32, buf: &mut Vec<u8>) -> Result<(), String> {
        let filled = self.inner.get().ok_or("record text is not available")?;
        let &(offset, len) = filled.at.get(&doc).ok_or("record text is not available")?;
        buf.clear();
        buf.resize(len as usize, 0);
        read_at(&filled.file, buf, offset).map_err(|e| crate::messages::io_reason(&e))
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

    #[test]
    fn stores_and_reads_back_by_document() {
        let spill = Spill::default();
        let mut buf = Vec::new();
        assert!(spill.read(1, &mut buf).is_err());
        spill
            .fill(vec![
                Ok((7, "seven".to_string())),
                Ok((3, String::new())),
                Ok((1, "one".into())),
            ])
            .unwrap_or_else(|e| panic!("{e}"));
        for (doc, text) in [(7, "seven"), (3, ""), (1, "one")] {
            spill.read(doc, &mut buf).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(buf, text.as_bytes());
        }
        assert!(spill.read(2, &mut buf).is_err());
        assert!(spill.fill(Vec::new()).is_err());
    }
}
