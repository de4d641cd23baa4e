//! A segment's document table, `seg-NNNNNN.docs.parquet`: its documents in the staged
//! pipeline's document-table schema (docs/staged.md, `sign/shard-I.docs.parquet`) but for
//! `links` and `disk`, so that DuckDB or Spark can query what an index holds with the queries
//! they run on a staged run, plus `changed_secs` and `changed_nanos` (the status change time
//! the index compares) and `segment` and `row` (where the document lies in the segment file).
//!
//! dupfind itself never reads it (lookups go through the segment file's sorted keys); it is
//! written beside each segment and removed with it. Its `signature` column is null: the
//! signatures are stored once, in the segment's rows, where a lookup reads one with a single
//! `pread` (a second copy would add a tenth of the text's size to the index).

use std::fs::File;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::builder::{Int32Builder, Int64Builder};
use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;

use crate::index::paths::{entry_as_file, from_mtime_ns, path_from_bytes};
use crate::index::store::Entry;
use crate::stages::columns::{arc, time_parts};
use crate::stages::docs::{to_batch, DocRow};
use crate::stages::files::properties;

/// The key-value metadata entry naming the index a table belongs to.
const INDEX_KEY: &str = "dupfind.index";

/// Rows buffered before they are written as a batch.
const BATCH: usize = 4096;

/// A row of the table: its row in the segment, the staged columns, and its status change time
/// as (seconds, nanoseconds).
type TableRow = (u32, DocRow, Option<(i64, i32)>);

/// A document table being written.
pub struct TableWriter {
    writer: Option<ArrowWriter<File>>,
    file: File,
    index_id: u128,
    segment: u64,
    rows: Vec<TableRow>,
}

impl TableWriter {
    /// Starts the table of segment `segment` of index `index_id` in `file`.
    pub fn new(file: File, index_id: u128, segment: u64) -> TableWriter {
        TableWriter {
            writer: None,
            file,
            index_id,
            segment,
            rows: Vec::with_capacity(BATCH),
        }
    }

    /// Appends document `row` of the segment.
    pub fn add(&mut self, row: u32, e: &Entry) -> Result<()> {
        // A record's size is its text's, a file's its own; the ctime goes in columns of its own.
        let size = if e.line.is_some() { e.bytes } else { e.size };
        let file = entry_as_file(e, path_from_bytes(&e.path), size, None);
        let doc = ((self.segment as i64) << 32) | i64::from(row);
        let changed = from_mtime_ns(e.ctime_ns).map(time_parts);
        let doc_row = DocRow {
            doc,
            canon: doc,
            file,
            bytes: e.bytes,
            hash: e.content_hash,
            // Not kept by the index (and not written to its table).
            links: 0,
            disk: 0,
            fingerprint: e.simhash,
            shingles: 0,
            signature: None,
            bottom: None,
            text: None,
            text_error: None,
        };
        self.rows.push((row, doc_row, changed));
        if self.rows.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.rows);
        let docs: Vec<DocRow> = rows.iter().map(|(_, d, _)| d.clone()).collect();
        let mut segment = Int64Builder::with_capacity(rows.len());
        let mut row = Int64Builder::with_capacity(rows.len());
        let mut secs = Int64Builder::with_capacity(rows.len());
        let mut nanos = Int32Builder::with_capacity(rows.len());
        for (r, _, changed) in &rows {
            segment.append_value(self.segment as i64);
            row.append_value(i64::from(*r));
            secs.append_option(changed.map(|c| c.0));
            nanos.append_option(changed.map(|c| c.1));
        }
        let mut fields: Vec<Arc<Field>> = Vec::new();
        let base = to_batch(&docs, false)?;
        // The staged table's `links` and `disk` describe a file as a scan read it, for the
        // report; the index keeps no such thing, so its table leaves them out.
        let kept: Vec<usize> = (base.schema().fields().iter().enumerate())
            .filter(|(_, f)| !matches!(f.name().as_str(), "links" | "disk"))
            .map(|(i, _)| i)
            .collect();
        let base = base.project(&kept)?;
        fields.extend(base.schema().fields().iter().cloned());
        let mut columns = base.columns().to_vec();
        for (name, column) in [
            ("changed_secs", arc(secs.finish())),
            ("changed_nanos", arc(nanos.finish())),
            ("segment", arc(segment.finish())),
            ("row", arc(row.finish())),
        ] {
            fields.push(Arc::new(Field::new(name, column.data_type().clone(), true)));
            columns.push(column);
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        let writer = match &mut self.writer {
            Some(w) => w,
            None => {
                let file = self.file.try_clone().context("writing a document table")?;
                let props = properties(INDEX_KEY, &format!("{:032x}", self.index_id))?;
                self.writer
                    .insert(ArrowWriter::try_new(file, batch.schema(), Some(props))?)
            }
        };
        writer.write(&batch).context("writing a document table")
    }

    /// Writes what is buffered and the file's footer (an empty table still has its schema);
    /// the caller syncs the file.
    pub fn finish(mut self) -> Result<()> {
        if !self.rows.is_empty() || self.writer.is_none() {
            self.flush()?;
        }
        if let Some(w) = self.writer.take() {
            w.close().context("writing a document table")?;
        }
        Ok(())
    }
}
