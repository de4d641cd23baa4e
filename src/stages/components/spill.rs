//! The band buckets on their way to the partitions' files, spilled to one unnamed temporary
//! file: the merge hands them out in (table, key) order mixed across partitions, and a Parquet
//! file is written a whole row group at a time, so writing them all as they came would hold a
//! row group of every partition (megabytes each). Spilled, each partition costs a buffer, which
//! goes to the file as a block of whole buckets when full; after the merge each partition's
//! file is written from its blocks. The merge's threads each spill a range of the buckets
//! through a writer of their own, into the one file; a partition's buckets are read back
//! writer after writer, so in the merge's order.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};

use crate::messages::display_path;

/// Bytes buffered per partition before they go to the file, shared by the writers of a stage
/// (each of T writers buffers a T-th, at least [`MIN_BUFFER`]), so that threads do not
/// multiply the memory a partition costs.
pub const BUFFER: usize = 32 * 1024;

/// The least a writer buffers per partition: blocks smaller than this would cost a read each.
const MIN_BUFFER: usize = 4 * 1024;

/// The spill file, written by any number of [`SpillWriter`]s at once: each block goes at an
/// offset reserved for it, so writers never wait on each other.
pub struct Spill {
    dir: PathBuf,
    file: File,
    end: AtomicU64,
}

/// A partition's buckets from one writer: blocks in the file (offset, length), then those
/// still buffered.
#[derive(Default)]
struct Part {
    blocks: Vec<(u64, usize)>,
    buffer: Vec<u8>,
}

/// One writer's buckets, by partition: a range of the merged buckets.
pub struct SpillWriter<'a> {
    spill: &'a Spill,
    parts: Vec<Part>,
    buffer: usize,
}

/// What a writer spilled, to read back after the others.
pub struct Spilled {
    parts: Vec<Part>,
}

/// One partition's spilled buckets, read back writer after writer, each in the order it wrote
/// them.
pub struct SpillReader<'a> {
    spill: &'a Spill,
    /// The partition's share of each writer, in order.
    parts: Vec<&'a Part>,
    /// The writer being read, and its next block; its buffer is its last.
    writer: usize,
    next: usize,
    bytes: Vec<u8>,
    at: usize,
    docs: Vec<i64>,
}

impl Spill {
    /// A spill file in `dir` (made if missing), deleted when dropped.
    pub fn new(dir: &Path) -> Result<Spill> {
        let what = || format!("creating a temporary file in {}", display_path(dir));
        std::fs::create_dir_all(dir).with_context(what)?;
        Ok(Spill {
            dir: dir.to_path_buf(),
            file: tempfile::tempfile_in(dir).with_context(what)?,
            end: AtomicU64::new(0),
        })
    }

    /// A writer of `parts` partitions, one of `writers`.
    pub fn writer(&self, parts: u32, writers: usize) -> SpillWriter<'_> {
        SpillWriter {
            spill: self,
            parts: (0..parts).map(|_| Part::default()).collect(),
            buffer: (BUFFER / writers.max(1)).max(MIN_BUFFER),
        }
    }

    /// Partition `part`'s buckets, from `spilled` in order (none for a partition out of range).
    pub fn reader<'a>(&'a self, spilled: &'a [Spilled], part: u32) -> Option<SpillReader<'a>> {
        let parts = spilled.iter().map(|s| s.parts.get(part as usize));
        Some(SpillReader {
            spill: self,
            parts: parts.collect::<Option<_>>()?,
            writer: 0,
            next: 0,
            bytes: Vec::new(),
            at: 0,
            docs: Vec::new(),
        })
    }
}

impl SpillWriter<'_> {
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
        if p.buffer.len() >= self.buffer {
            let spill = self.spill;
            let at = spill
                .end
                .fetch_add(p.buffer.len() as u64, Ordering::Relaxed);
            (spill.file.write_all_at(&p.buffer, at)).with_context(|| {
                format!("writing a temporary file in {}", display_path(&spill.dir))
            })?;
            p.blocks.push((at, p.buffer.len()));
            p.buffer.clear();
        }
        Ok(())
    }

    /// Its buckets, for [`Spill::reader`].
    pub fn finish(self) -> Spilled {
        Spilled { parts: self.parts }
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

    /// Loads the next block (a block holds whole buckets); false after the last writer's last.
    fn load(&mut self) -> Result<bool> {
        self.bytes.clear();
        self.at = 0;
        let Some(part) = self.parts.get(self.writer) else {
            return Ok(false);
        };
        if let Some(&(offset, len)) = part.blocks.get(self.next) {
            self.bytes.resize(len, 0);
            (self.spill.file.read_exact_at(&mut self.bytes, offset)).with_context(|| {
                format!(
                    "reading a temporary file in {}",
                    display_path(&self.spill.dir)
                )
            })?;
            self.next += 1;
        } else {
            self.bytes.extend_from_slice(&part.buffer);
            self.writer += 1;
            self.next = 0;
        }
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
        let spill = Spill::new(&dir.path().join("components")).unwrap();
        let mut want: Vec<Vec<Row>> = vec![Vec::new(); 4];
        // Three writers, as three threads of the merge would, each a range of the buckets.
        let mut writers: Vec<SpillWriter> = (0..3).map(|_| spill.writer(4, 3)).collect();
        for i in 0..5000i64 {
            let spill = &mut writers[i as usize * 3 / 5000];
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
        let spilled: Vec<Spilled> = writers.into_iter().map(SpillWriter::finish).collect();
        let mut got: Vec<Vec<Row>> = Vec::new();
        for part in 0..4 {
            let mut r = spill.reader(&spilled, part).unwrap();
            let mut rows = Vec::new();
            while let Some((t, k, d)) = r.next_bucket().unwrap() {
                rows.push((t, k, d.to_vec()));
            }
            got.push(rows);
        }
        assert_eq!(got, want);
        assert!(spill.reader(&spilled, 4).is_none());
    }

    #[test]
    fn a_partition_out_of_range_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path()).unwrap();
        let e = (spill.writer(2, 1).push(2, 0, 0, &[1, 2]).unwrap_err()).to_string();
        assert!(e.contains("no partition 2"), "{e}");
    }
}
