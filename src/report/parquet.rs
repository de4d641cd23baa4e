//! `--format parquet`: the report as one table for joins in DuckDB, Spark or polars, a row per
//! clustered document, in cluster order and, in a cluster, in member order (path order). Its
//! columns are named as the JSON report names the same values: the cluster's `id` (here
//! `cluster`) and `size`, the member's `path`, `path_bytes` (binary: the exact bytes, where the
//! JSON has their base64), `line`, `id`, `bytes` and `indexed`, whether it is the
//! `representative` or one of the `duplicates` (`duplicate`), and as a duplicate or linked
//! member its `similarity` and `exact`. The schema version and the parameters are in the
//! file's key-value metadata. Parquet is written front to back (its footer last), so it goes to
//! a pipe as well as to a file, a row group at a time.

use std::io::Write;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::clusters::{ClusterOut, DuplicateOut};
use super::model::Report;

/// The table's columns: name, type, nullable.
const COLUMNS: [(&str, DataType, bool); 12] = [
    ("cluster", DataType::Int64, false),
    ("size", DataType::Int64, false),
    ("path", DataType::Utf8, false),
    ("path_bytes", DataType::Binary, true),
    ("line", DataType::Int64, true),
    ("id", DataType::Utf8, true),
    ("bytes", DataType::Int64, false),
    ("indexed", DataType::Boolean, false),
    ("representative", DataType::Boolean, false),
    ("duplicate", DataType::Boolean, false),
    ("similarity", DataType::Float64, true),
    ("exact", DataType::Boolean, true),
];

/// Rows per row group: the table is written a row group at a time, so writing it holds one
/// row group, not the table (a report of fewer rows is one row group, as it always was).
const ROWS_PER_GROUP: usize = 64 * 1024;

/// Writes the report's table to `out`.
pub fn write(report: &Report, out: &mut dyn Write) -> Result<()> {
    let schema = Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|(name, t, null)| Field::new(*name, t.clone(), *null))
            .collect::<Vec<_>>(),
    ));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(
                "dupfind.schema_version".to_string(),
                report.schema_version.to_string(),
            ),
            KeyValue::new(
                "dupfind.params".to_string(),
                serde_json::to_string(&report.params)?,
            ),
        ]))
        .build();
    // ArrowWriter wants a writer it owns that can cross threads: it writes into a buffer, which
    // goes out after each row group (the writer counts the offsets itself).
    let mut writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))?;
    let mut rows = Columns::default();
    let mut write_group = |rows: &mut Columns, writer: &mut ArrowWriter<Vec<u8>>| -> Result<()> {
        let batch = RecordBatch::try_new(schema.clone(), std::mem::take(rows).finish())?;
        writer.write(&batch)?;
        writer.flush()?;
        writer.sync()?;
        out.write_all(writer.inner_mut())?;
        writer.inner_mut().clear();
        Ok(())
    };
    report.clusters.each(|c| {
        rows.push(c);
        if rows.len() >= ROWS_PER_GROUP {
            write_group(&mut rows, &mut writer)?;
        }
        Ok(())
    })?;
    if rows.len() > 0 || writer.flushed_row_groups().is_empty() {
        write_group(&mut rows, &mut writer)?;
    }
    let footer = writer.into_inner()?;
    out.write_all(&footer)?;
    Ok(())
}

/// The columns of clustered documents being gathered for a row group, in [`COLUMNS`]' order.
#[derive(Default)]
struct Columns {
    cluster: Int64Builder,
    size: Int64Builder,
    path: StringBuilder,
    path_bytes: BinaryBuilder,
    line: Int64Builder,
    id: StringBuilder,
    bytes: Int64Builder,
    indexed: BooleanBuilder,
    representative: BooleanBuilder,
    duplicate: BooleanBuilder,
    similarity: Float64Builder,
    exact: BooleanBuilder,
}

impl Columns {
    /// Rows gathered.
    fn len(&self) -> usize {
        self.cluster.len()
    }

    /// A row per member of `c`.
    fn push(&mut self, c: &ClusterOut) {
        // Each member's entry among the duplicates (true) or the linked members (false).
        let mut role: Vec<Option<(&DuplicateOut, bool)>> = vec![None; c.members.len()];
        for (list, listed) in [(&c.linked, false), (&c.duplicates, true)] {
            for d in list.iter() {
                if let Some(slot) = role.get_mut(d.member as usize) {
                    *slot = Some((d, listed));
                }
            }
        }
        for (at, m) in c.members.iter().enumerate() {
            self.cluster.append_value(c.id as i64);
            self.size.append_value(c.size as i64);
            self.path.append_value(&m.path);
            self.path_bytes.append_option(m.path_bytes());
            self.line.append_option(m.line().map(|l| l as i64));
            self.id.append_option(m.id());
            self.bytes.append_value(m.bytes as i64);
            self.indexed.append_value(m.indexed);
            self.representative
                .append_value(c.kept && at == c.representative);
            self.duplicate.append_value(role[at].is_some_and(|r| r.1));
            self.similarity
                .append_option(role[at].map(|r| r.0.similarity));
            self.exact.append_option(role[at].map(|r| r.0.exact));
        }
    }

    fn finish(mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.cluster.finish()) as ArrayRef,
            Arc::new(self.size.finish()),
            Arc::new(self.path.finish()),
            Arc::new(self.path_bytes.finish()),
            Arc::new(self.line.finish()),
            Arc::new(self.id.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.indexed.finish()),
            Arc::new(self.representative.finish()),
            Arc::new(self.duplicate.finish()),
            Arc::new(self.similarity.finish()),
            Arc::new(self.exact.finish()),
        ]
    }
}
