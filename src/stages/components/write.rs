//! The stage's Parquet files, written a row group at a time: rows are gathered until a row
//! group is full, then written as one batch. The writer cuts row groups at the same count
//! whatever the batches, so a file's bytes are those of the whole file written as one batch
//! (as the stage wrote it when it held every bucket in memory), and a file being written holds
//! at most one row group in memory.

use std::path::{Path, PathBuf};

use anyhow::Result;
use arrow_array::builder::{ArrayBuilder, Int32Builder, Int64Builder, ListBuilder};
use arrow_array::RecordBatch;

use crate::stages::columns::{arc, batch};
use crate::stages::files::{ParquetOut, ROW_GROUP};

/// The rows of one kind of file, as they are built.
pub trait Rows: Default {
    /// One row.
    type Row<'a>;
    /// Appends a row.
    fn push(&mut self, row: Self::Row<'_>);
    /// Rows appended since the last [`Rows::finish`].
    fn rows(&self) -> usize;
    /// The rows appended as a batch, leaving none.
    fn finish(&mut self) -> Result<RecordBatch>;
}

/// A file being written a row group at a time; created on disk at its first full row group,
/// so that a small file is not held open while the others are written.
pub struct Sink<R: Rows> {
    path: PathBuf,
    run: String,
    rows: R,
    out: Option<ParquetOut>,
}

impl<R: Rows> Sink<R> {
    /// A file at `path`, tagged with `run`.
    pub fn new(path: &Path, run: &str) -> Sink<R> {
        Sink {
            path: path.to_path_buf(),
            run: run.to_string(),
            rows: R::default(),
            out: None,
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: R::Row<'_>) -> Result<()> {
        self.rows.push(row);
        if self.rows.rows() >= ROW_GROUP {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the rows left and makes the file visible.
    pub fn commit(mut self) -> Result<()> {
        self.write()?;
        self.out.map_or(Ok(()), ParquetOut::commit)
    }

    fn write(&mut self) -> Result<()> {
        let b = self.rows.finish()?;
        let out = match &mut self.out {
            Some(out) => out,
            none => none.insert(ParquetOut::create(&self.path, b.schema(), &self.run)?),
        };
        out.write(&b)
    }
}

/// Band buckets: `table`, `key`, `docs`.
#[derive(Default)]
pub struct BucketRows {
    table: Int32Builder,
    key: Int64Builder,
    docs: ListBuilder<Int64Builder>,
}

impl Rows for BucketRows {
    type Row<'a> = (i32, i64, &'a [i64]);

    fn push(&mut self, (table, key, docs): Self::Row<'_>) {
        self.table.append_value(table);
        self.key.append_value(key);
        self.docs.values().append_slice(docs);
        self.docs.append(true);
    }

    fn rows(&self) -> usize {
        self.table.len()
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        batch(vec![
            ("table", arc(self.table.finish())),
            ("key", arc(self.key.finish())),
            ("docs", arc(self.docs.finish())),
        ])
    }
}

/// Copies and their units: `doc`, `canon`.
#[derive(Default)]
pub struct CopyRows {
    doc: Int64Builder,
    canon: Int64Builder,
}

impl Rows for CopyRows {
    type Row<'a> = (i64, i64);

    fn push(&mut self, (doc, canon): Self::Row<'_>) {
        self.doc.append_value(doc);
        self.canon.append_value(canon);
    }

    fn rows(&self) -> usize {
        self.doc.len()
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        batch(vec![
            ("doc", arc(self.doc.finish())),
            ("canon", arc(self.canon.finish())),
        ])
    }
}

/// Where documents go: `doc`, `canon`, `part`.
#[derive(Default)]
pub struct AssignRows {
    doc: Int64Builder,
    canon: Int64Builder,
    part: Int32Builder,
}

impl Rows for AssignRows {
    type Row<'a> = (i64, i64, i32);

    fn push(&mut self, (doc, canon, part): Self::Row<'_>) {
        self.doc.append_value(doc);
        self.canon.append_value(canon);
        self.part.append_value(part);
    }

    fn rows(&self) -> usize {
        self.doc.len()
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        batch(vec![
            ("doc", arc(self.doc.finish())),
            ("canon", arc(self.canon.finish())),
            ("part", arc(self.part.finish())),
        ])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stages::files;

    fn rows(n: i64) -> Vec<(i32, i64, Vec<i64>)> {
        (0..n)
            .map(|i| {
                (
                    i as i32 % 19,
                    i * 7919,
                    (0..2 + i % 3).map(|d| i * 4 + d).collect(),
                )
            })
            .collect()
    }

    /// The same rows through a [`Sink`] and as one batch, as the stage wrote them before.
    fn both_ways(n: i64) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            dir.path().join("sink.parquet"),
            dir.path().join("one.parquet"),
        );
        let mut sink: Sink<BucketRows> = Sink::new(&a, "run");
        let mut one = BucketRows::default();
        for (t, k, d) in rows(n) {
            sink.push((t, k, &d)).unwrap();
            one.push((t, k, &d));
        }
        sink.commit().unwrap();
        let one = one.finish().unwrap();
        files::write_parquet(&b, one.schema(), &[one], "run").unwrap();
        (std::fs::read(a).unwrap(), std::fs::read(b).unwrap())
    }

    #[test]
    fn a_file_written_a_row_group_at_a_time_equals_one_written_as_one_batch() {
        for n in [0, 5, ROW_GROUP as i64, 2 * ROW_GROUP as i64 + 77] {
            let (sink, one) = both_ways(n);
            assert!(
                sink == one,
                "{n} rows: {} and {} bytes",
                sink.len(),
                one.len()
            );
        }
    }
}
