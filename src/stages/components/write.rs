//! The stage's Parquet files, written a row group at a time: rows are gathered until a row
//! group is full, then written as one batch. The writer cuts row groups at the same count
//! whatever the batches, so a file's bytes are those of the whole file written as one batch
//! (as the stage wrote it when it held every bucket in memory), and a file being written holds
//! at most one row group in memory.

use anyhow::Result;
use arrow_array::builder::{ArrayBuilder, Int32Builder, Int64Builder, ListBuilder};
use arrow_array::RecordBatch;

use crate::stages::columns::{arc, batch};
use crate::stages::files::{Output, ParquetOut, ROW_GROUP};
use crate::stages::lineage::Written;

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
    file: Output,
    rows: R,
    out: Option<ParquetOut>,
}

impl<R: Rows> Sink<R> {
    /// The file `file`.
    pub fn new(file: Output) -> Sink<R> {
        Sink {
            file,
            rows: R::default(),
            out: None,
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: R::Row<'_>) -> Result<()> {
        self.rows.push(row);
        if self.rows.rows() >= ROW_GROUP {
            self.out = Some(self.write()?);
        }
        Ok(())
    }

    /// Writes the rows left and makes the file visible; returns its name and CRC-32.
    pub fn commit(mut self) -> Result<Written> {
        let out = self.write()?;
        out.commit()
    }

    /// Writes the rows gathered; returns the file, created at the first call.
    fn write(&mut self) -> Result<ParquetOut> {
        let b = self.rows.finish()?;
        let mut out = match self.out.take() {
            Some(out) => out,
            None => ParquetOut::create(&self.file, b.schema())?,
        };
        out.write(&b)?;
        Ok(out)
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
    use crate::stages::lineage::{Lineage, Place};
    use std::path::Path;

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
        let lineage = Lineage::attempt("run", "digest", Place::once("components"));
        let out = |p: &Path| {
            Output::new(
                dir.path(),
                p.to_path_buf(),
                &lineage,
                Place::once("components"),
            )
        };
        let mut sink: Sink<BucketRows> = Sink::new(out(&a));
        let mut one = BucketRows::default();
        for (t, k, d) in rows(n) {
            sink.push((t, k, &d)).unwrap();
            one.push((t, k, &d));
        }
        sink.commit().unwrap();
        let one = one.finish().unwrap();
        files::write_parquet(&out(&b), one.schema(), &[one]).unwrap();
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
