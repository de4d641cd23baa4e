//! The band buckets on their way to the partitions' files, spilled to one unnamed temporary
//! file per partition: the merge hands them out in (table, key) order mixed across partitions,
//! and a Parquet file is written a whole row group at a time, so writing them all as they come
//! would hold a row group of every partition (megabytes each); spilled, each partition costs a
//! buffer, and its file is written from its spill after the merge, one at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::messages::display_path;

/// Bytes buffered per partition.
const BUFFER: usize = 32 * 1024;

/// One spill file per partition, being written.
pub struct Spill {
    dir: PathBuf,
    files: Vec<BufWriter<File>>,
}

/// One partition's spilled buckets, read back in the order they were written.
pub struct SpillReader {
    dir: PathBuf,
    file: BufReader<File>,
    bytes: Vec<u8>,
    docs: Vec<i64>,
}

impl Spill {
    /// `parts` empty spill files in `dir` (made if missing), deleted when dropped.
    pub fn new(dir: &Path, parts: u32) -> Result<Spill> {
        let what = || format!("creating a temporary file in {}", display_path(dir));
        std::fs::create_dir_all(dir).with_context(what)?;
        let files = (0..parts)
            .map(|_| {
                Ok(BufWriter::with_capacity(
                    BUFFER,
                    tempfile::tempfile_in(dir)?,
                ))
            })
            .collect::<std::io::Result<_>>()
            .with_context(what)?;
        Ok(Spill {
            dir: dir.to_path_buf(),
            files,
        })
    }

    /// Appends a bucket to partition `part`'s spill.
    pub fn push(&mut self, part: u32, table: i32, key: i64, docs: &[i64]) -> Result<()> {
        let len = u32::try_from(docs.len()).context("a bucket of more than 2³² documents")?;
        let dir = &self.dir;
        let out = (self.files.get_mut(part as usize))
            .with_context(|| format!("no partition {part} to spill to"))?;
        let mut write = || -> std::io::Result<()> {
            out.write_all(&table.to_le_bytes())?;
            out.write_all(&key.to_le_bytes())?;
            out.write_all(&len.to_le_bytes())?;
            docs.iter()
                .try_for_each(|d| out.write_all(&d.to_le_bytes()))
        };
        write().with_context(|| format!("writing a temporary file in {}", display_path(dir)))
    }

    /// Each partition's spill, in partition order, read back.
    pub fn into_readers(self) -> impl Iterator<Item = Result<SpillReader>> {
        let dir = self.dir;
        self.files.into_iter().map(move |out| {
            let what = || format!("reading a temporary file in {}", display_path(&dir));
            let mut file = out
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(what)?;
            file.seek(SeekFrom::Start(0)).with_context(what)?;
            Ok(SpillReader {
                dir: dir.clone(),
                file: BufReader::with_capacity(BUFFER, file),
                bytes: Vec::new(),
                docs: Vec::new(),
            })
        })
    }
}

impl SpillReader {
    /// The next bucket (table, key, documents), or none at the end.
    pub fn next_bucket(&mut self) -> Result<Option<(i32, i64, &[i64])>> {
        let what = || format!("reading a temporary file in {}", display_path(&self.dir));
        if self.file.fill_buf().with_context(what)?.is_empty() {
            return Ok(None);
        }
        let mut head = [0u8; 16];
        self.file.read_exact(&mut head).with_context(what)?;
        let [t0, t1, t2, t3, k0, k1, k2, k3, k4, k5, k6, k7, n0, n1, n2, n3] = head;
        let table = i32::from_le_bytes([t0, t1, t2, t3]);
        let key = i64::from_le_bytes([k0, k1, k2, k3, k4, k5, k6, k7]);
        let len = u32::from_le_bytes([n0, n1, n2, n3]) as usize;
        self.bytes.resize(len * 8, 0);
        self.file.read_exact(&mut self.bytes).with_context(what)?;
        self.docs.clear();
        self.docs.extend(self.bytes.chunks_exact(8).map(|b| {
            let mut d = [0u8; 8];
            d.copy_from_slice(b);
            i64::from_le_bytes(d)
        }));
        Ok(Some((table, key, &self.docs)))
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
        for r in spill.into_readers() {
            let mut r = r.unwrap();
            let mut rows = Vec::new();
            while let Some((t, k, d)) = r.next_bucket().unwrap() {
                rows.push((t, k, d.to_vec()));
            }
            got.push(rows);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn a_partition_out_of_range_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(dir.path(), 2).unwrap();
        let e = spill.push(2, 0, 0, &[1, 2]).unwrap_err().to_string();
        assert!(e.contains("no partition 2"), "{e}");
    }
}
