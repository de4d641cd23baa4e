//! `--format parquet`: the report as one table for joins in DuckDB, Spark or polars, a row per
//! clustered document, in cluster order and, in a cluster, in member order (path order). Its
//! columns are named as the JSON report names the same values: the cluster's `id` (here
//! `cluster`) and `size`, the member's `path`, `path_bytes` (binary: the exact bytes, where the
//! JSON has their base64), `line`, `id`, `bytes` and `indexed`, whether it is the
//! `representative` or one of the `duplicates` (`duplicate`), and as a duplicate or linked
//! member its `similarity` and `exact`. The schema version and the parameters are in the
//! file's key-value metadata. Parquet is written front to back (its footer last), so it goes to
//! a pipe as well as to a file; the table is built in memory, as the report is.

use std::io::Write;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
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

/// Writes the report's table to `out`.
pub fn write(report: &Report, out: &mut dyn Write) -> Result<()> {
    let schema = Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|(name, t, null)| Field::new(*name, t.clone(), *null))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(schema.clone(), columns(&report.clusters))?;
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
    // ArrowWriter wants a writer it owns that can cross threads; the bytes go out whole.
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(props))?;
    writer.write(&batch)?;
    writer.close()?;
    out.write_all(&bytes)?;
    Ok(())
}

/// The columns of every clustered document, in [`COLUMNS`]' order.
fn columns(clusters: &[ClusterOut]) -> Vec<ArrayRef> {
    let rows: usize = clusters.iter().map(|c| c.members.len()).sum();
    let int = || Int64Builder::with_capacity(rows);
    let flag = || BooleanBuilder::with_capacity(rows);
    let (mut cluster, mut size, mut line, mut bytes) = (int(), int(), int(), int());
    let (mut path, mut id) = (StringBuilder::new(), StringBuilder::new());
    let mut path_bytes = BinaryBuilder::new();
    let (mut indexed, mut representative, mut duplicate, mut exact) =
        (flag(), flag(), flag(), flag());
    let mut similarity = Float64Builder::with_capacity(rows);
    for c in clusters {
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
            cluster.append_value(c.id as i64);
            size.append_value(c.size as i64);
            path.append_value(&m.path);
            path_bytes.append_option(m.path_bytes());
            line.append_option(m.line().map(|l| l as i64));
            id.append_option(m.id());
            bytes.append_value(m.bytes as i64);
            indexed.append_value(m.indexed);
            representative.append_value(c.kept && at == c.representative);
            duplicate.append_value(role[at].is_some_and(|r| r.1));
            similarity.append_option(role[at].map(|r| r.0.similarity));
            exact.append_option(role[at].map(|r| r.0.exact));
        }
    }
    vec![
        Arc::new(cluster.finish()) as ArrayRef,
        Arc::new(size.finish()),
        Arc::new(path.finish()),
        Arc::new(path_bytes.finish()),
        Arc::new(line.finish()),
        Arc::new(id.finish()),
        Arc::new(bytes.finish()),
        Arc::new(indexed.finish()),
        Arc::new(representative.finish()),
        Arc::new(duplicate.finish()),
        Arc::new(similarity.finish()),
        Arc::new(exact.finish()),
    ]
}
