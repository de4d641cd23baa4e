//! The band buckets on their way to the partitions' files, spilled to one unnamed temporary
//! file: the merge hands them out in (table, key) order mixed across partitions, and a Parquet
//! file is written a whole row group at a time, so writing them all as they came would hold a
//! row group of every partition (megabytes each). Spilled, each partition costs a buffer, which
//! goes to the file as a block of whole buckets when full; after the merge each partition's
//! file is written from its blocks, one partition at a time.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::messages::display_path;

/// Bytes buffered per partition before they go to the file.
const BUFFER: usize = 32 * 1024;

/// The spill file being written.
pub struct Spill {
    dir: PathBuf,
    file: File,
    end: u64,
    parts: Vec<Part>,
}

/// A partition's buckets: blocks in the file (offset, length), then those still buffered.
#[derive(Default)]
struct Part {
    blocks: Vec<(u64, usize)>,
    buffer: Vec<u8>,
}

/// One partition's spilled buckets, read back in the order they were written.
pub struct SpillReader<'a> {
    spill: &'a Spill,
    part: &'a Part,
    /// The next block to read; the buffer is the last.
    next: usize,
    bytes: Vec<u8>,
    at: usize,
    docs: Vec<i64>,
}

impl Spill {
    /// A spill of `parts` partitions in `dir` (made if missing), deleted when dropped.
    pub fn new(dir: &Path, parts: u32) -> Result<Spill> {
        let what = || format!("creating a temporary file in {}", display_path(dir));
        std::fs::create_dir_all(dir).with_context(what)?;
        Ok(Spill {
            dir: dir.to_path_buf(),
            file: tempfile::tempfile_in(dir).with_context(what)?,
            end: 0,
            parts: (0..parts).map(|_| Part::default()).collect(),
        })
    }

    /// Appends a bucket to partition `part`.
    pub fn push(&mut self, part: u32, table: i32, key: i64, docs: &[i64]) -> Result<()> {
        let len = u32::try_from(docs.len()).context("a bucket of more than 2³² documents")?;
        let p = (self.parts.get_mut(part as usize))
            .with_context(|| format!("no partition {part} to spill to"))?;
        p.buffer.extend_from_slice(&table.to_le_bytes());
        p.buffer.extend_from_slice(&key.to_le_bytes());
        p.buffer.extend_from_slice(&len.to_le_bytes());
        docs.iter()
            .for_each(|d| p.buffer.extend_from_slice(&d.to_le_bytes()));
        if p.buffer.len() >= BUFFER {
            (self.file.write_all(&p.buffer)).with_context(|| {
                format!("writing a temporary file in {}", display_path(&self.dir))
            })?;
            p.blocks.push((self.end, p.buffer.len()));
            self.end += p.buffer.len() as u64;
            p.buffer.clear();
        }
        Ok(())
    }

    /// Partition `part`'s buckets (none for a partition out of range).
    pub fn reader(&self, part: u32) -> Option<SpillReader<'_>> {
        Some(SpillReader {
            spill: self,
            part: self.parts.get(part as usize)?,
            next: 0,
            bytes: Vec::new(),
            at: 0,
            docs: Vec::new(),
        })
    }
}

impl SpillReader<'_> {
    /// The next bucket (table, key, documents), or none at the end.
    pub fn next_bucket(&mut self) -> Result<Option<(i32, i64, &[i64])>> {
        while self.at == self.bytes.len() {
            if !self.load()? {
                return Ok(None);
            }
        }
        let what = || {
            format!(
                "a temporary file in {} is damaged",
                display_path(&self.spill.dir)
            )
        };
        let head = (self.bytes.get(self.at..self.at + 16)).with_context(what)?;
        let word = |i: usize| head.get(i..i + 8).and_then(|b| b.try_into().ok());
        let half = |i: usize| head.get(i..i + 4).and_then(|b| b.try_into().ok());
        let (table, key, len) = match (half(0), word(4), half(12)) {
            (Some(t), Some(k), Some(n)) => (
                i32::from_le_bytes(t),
                i64::from_le_bytes(k),
                u32::from_le_bytes(n) as usize,
            ),
            _ => bail!(what()),
        };
        let start = self.at + 16;
        let docs = (self.bytes.get(start..start + len * 8)).with_context(what)?;
        self.docs.clear();
        for d in docs.chunks_exact(8) {
            self.docs
                .push(i64::from_le_bytes(d.try_into().with_context(what)?));
        }
        self.at = start + len * 8;
        Ok(Some((table, key, &self.docs)))
    }

    /// Loads the next block (a block holds whole buckets); false after the last.
    fn load(&mut self) -> Result<bool> {
        let (blocks, buffer) = (&self.part.blocks, &self.part.buffer);
        self.bytes.clear();
        self.at = 0;
        if let Some(&(offset, len)) = blocks.get(self.next) {
            self.bytes.resize(len, 0);
            (self.spill.file.read_exact_at(&mut self.bytes, offset)).with_context(|| {
                format!(
                    "reading a temporary file in {}",
                    display_path(&self.spill.dir)
                )
            })?;
        } else if self.next == blocks.len() {
            self.bytes.extend_from_slice(buffer);
        } else {
            return Ok(false);
        }
        self.next += 1;
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    type Row = (i32, i64, Vec<i64>);

    #[test]
    fn each_partition_reads_back_its_buckets_in_order_and_an_empty_one_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(&dir.path().join("components"), 4).unwrap();
        let mut want: Vec<Vec<Row>> = vec![Vec::new(); 4];
        for i in 0..5000i64 {
            // Partition 2 gets none; one bucket is larger than the buffer.
            let part = [0, 1, 3][i as usize % 3];
            let n = if i == 77 { 3 * BUFFER as i64 } else { i % 5 };
            let row: Row = (
                i as i32 - 1,
                i * -7919,
                (0..n).map(|d| i << 20 | d).collect(),
            );
            spill.push(part, row.0, row.1, &row.2).unwrap();
            want[part as usize].push(row);
        }
        let mut got: Vec<Vec<Row>> = Vec::new();
        for part in 0..4 {
            let mut r = spill.reader(part).unwrap();
            let mut rows = Vec::new();
            while let Some((t, k, d)) = r.next_bucket().unwrap() {
                rows.push((t, k, d.to_vec()));
            }
            got.push(rows);
        }
        assert_eq!(got, want);
        assert!(spill.reader(4).is_none());
    }

    #[test]
    fn a_partition_out_of_range_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(dir.path(), 2).unwrap();
        let e = spill.push(2, 0, 0, &[1, 2]).unwrap_err().to_string();
        assert!(e.contains("no partition 2"), "{e}");
    }
}
