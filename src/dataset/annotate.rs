//! Where each document stands in the report ([`Mark`], [`Fate`]), and `--annotate`'s five
//! values made from it: added as columns to a Parquet batch, or as fields to a JSON Lines
//! record (after its original bytes, which stay as they were).
//!
//! The values come from the report's clusters alone (which member is kept, which are listed as
//! duplicates, their similarities), so whatever chooses the representative, the dataset
//! follows the report.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde_json::Value;

use crate::cluster::Found;
use crate::report::{ClusterOut, DuplicateOut, MemberOut};

/// The added columns' names after the prefix, in the order they are added.
const NAMES: [&str; 5] = [
    "cluster",
    "cluster_size",
    "keep",
    "duplicate_of",
    "similarity",
];

/// A document's place in the report: its cluster (index in the report's clusters) and, when
/// it is listed as a duplicate, its index in the cluster's `duplicates`. Eight bytes a
/// document, so that the marks of a whole corpus stay small; the names and similarities are
/// looked up in the cluster when written.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    pub cluster: u32,
    pub duplicate: Option<u32>,
}

/// The mark of each of `n` documents (None: in no cluster), from the clusters `found` and
/// their records `clusters`.
pub fn marks(found: &[Found], clusters: &[ClusterOut], n: usize) -> Vec<Option<Mark>> {
    let mut marks = vec![None; n];
    for (i, (f, c)) in found.iter().zip(clusters).enumerate() {
        for &d in &f.cluster.members {
            marks[d as usize] = Some(Mark {
                cluster: i as u32,
                duplicate: None,
            });
        }
        for (k, d) in c.duplicates.iter().enumerate() {
            marks[f.cluster.members[d.member as usize] as usize] = Some(Mark {
                cluster: i as u32,
                duplicate: Some(k as u32),
            });
        }
    }
    marks
}

/// A mark resolved against the clusters it indexes.
#[derive(Clone, Copy)]
pub struct Fate<'a> {
    pub cluster: &'a ClusterOut,
    /// Its entry in the cluster's `duplicates`, when it is one.
    pub duplicate: Option<&'a DuplicateOut>,
}

impl<'a> Fate<'a> {
    pub fn of(mark: Mark, clusters: &'a [ClusterOut]) -> Fate<'a> {
        let cluster = &clusters[mark.cluster as usize];
        Fate {
            cluster,
            duplicate: mark.duplicate.map(|k| &cluster.duplicates[k as usize]),
        }
    }
}

/// `--annotate`'s values for one document.
#[derive(Debug, PartialEq)]
pub struct Annotation {
    cluster: Option<i64>,
    size: Option<i64>,
    keep: bool,
    duplicate_of: Option<String>,
    similarity: Option<f64>,
}

impl Annotation {
    pub fn of(fate: Option<Fate>) -> Annotation {
        let duplicate = fate.and_then(|f| f.duplicate.map(|d| (f.cluster, d)));
        Annotation {
            cluster: fate.map(|f| f.cluster.id as i64),
            size: fate.map(|f| f.cluster.size as i64),
            keep: duplicate.is_none(),
            // With `--keep none` no member is kept: a duplicate is of none of them.
            duplicate_of: (duplicate.filter(|(c, _)| c.kept))
                .map(|(c, _)| name(c.representative())),
            similarity: duplicate.map(|(_, d)| d.similarity),
        }
    }

    /// The fields as JSON, in column order, nulls written, without braces:
    /// `"dupfind_cluster":3,…`.
    pub(super) fn json_fields(&self, prefix: &str) -> Vec<u8> {
        let values: [Value; 5] = [
            self.cluster.into(),
            self.size.into(),
            self.keep.into(),
            self.duplicate_of.clone().into(),
            self.similarity.into(),
        ];
        let mut out = Vec::new();
        for (name, value) in names(prefix).iter().zip(&values) {
            if !out.is_empty() {
                out.push(b',');
            }
            // Strings and JSON values always serialize.
            out.extend(serde_json::to_vec(name).unwrap_or_default());
            out.push(b':');
            out.extend(serde_json::to_vec(value).unwrap_or_default());
        }
        out
    }
}

/// How a representative is named in `duplicate_of`: its id, else its path (with `:LINE` for a
/// record of a dump, whose path alone names every record of it).
fn name(m: &MemberOut) -> String {
    match (m.id(), m.line()) {
        (Some(id), _) => id.to_string(),
        (None, Some(line)) => format!("{}:{line}", m.path),
        (None, None) => m.path.to_string(),
    }
}

/// The added columns' names.
pub fn names(prefix: &str) -> [String; 5] {
    NAMES.map(|n| format!("{prefix}{n}"))
}

/// The first of `existing` that is also an added column's name.
pub fn clash<'a>(prefix: &str, mut existing: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let names = names(prefix);
    existing.find(|e| names.iter().any(|n| n == e))
}

/// The message refusing an input that already has the column `name`.
pub fn clash_message(input: &str, name: &str) -> String {
    format!(
        "--annotate: {input} already has a column \"{name}\", which --annotate would add; \
         choose another prefix for the added columns with --annotate-prefix"
    )
}

/// `schema` with the added columns after its own (its metadata kept).
pub fn schema(schema: &Schema, prefix: &str) -> SchemaRef {
    let types = [
        (DataType::Int64, true),
        (DataType::Int64, true),
        (DataType::Boolean, false),
        (DataType::Utf8, true),
        (DataType::Float64, true),
    ];
    let added = (names(prefix).into_iter().zip(types)).map(|(n, (t, null))| Field::new(n, t, null));
    let fields: Vec<Field> = (schema.fields().iter().map(|f| f.as_ref().clone()))
        .chain(added)
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with the columns of `values` (one per row) added, under `schema` (from [`schema`]).
pub fn append(
    batch: &RecordBatch,
    schema: &SchemaRef,
    values: &[Annotation],
) -> Result<RecordBatch, String> {
    let columns = batch
        .columns()
        .iter()
        .cloned()
        .chain(columns(values))
        .collect();
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())
}

/// The added columns alone, of `values` (one per row), under the last fields of `schema` (from
/// [`schema`]).
pub fn added(schema: &SchemaRef, values: &[Annotation]) -> Result<RecordBatch, String> {
    let fields = &schema.fields()[schema.fields().len().saturating_sub(NAMES.len())..];
    let schema = Arc::new(Schema::new(fields.to_vec()));
    RecordBatch::try_new(schema, columns(values).to_vec()).map_err(|e| e.to_string())
}

fn columns(values: &[Annotation]) -> [ArrayRef; 5] {
    [
        Arc::new(Int64Array::from_iter(values.iter().map(|a| a.cluster))),
        Arc::new(Int64Array::from_iter(values.iter().map(|a| a.size))),
        Arc::new(BooleanArray::from_iter(values.iter().map(|a| Some(a.keep)))),
        Arc::new(StringArray::from_iter(
            values.iter().map(|a| a.duplicate_of.as_deref()),
        )),
        Arc::new(Float64Array::from_iter(values.iter().map(|a| a.similarity))),
    ]
}

/// A JSON object `line` (a JSON Lines record, or a file's record) with the fields of `a` added before its closing
/// brace, every byte before it as it was; None when the line does not end with `}`.
pub fn splice(line: &[u8], prefix: &str, a: &Annotation) -> Option<Vec<u8>> {
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if line[end] != b'}' {
        return None;
    }
    let body = &line[..end];
    let empty = body.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let fields = a.json_fields(prefix);
    let mut out = Vec::with_capacity(line.len() + fields.len());
    out.extend_from_slice(body);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&fields);
    out.extend_from_slice(&line[end..]);
    Some(out)
}

/// The top-level field names of a JSON object `line` that are added columns' names.
pub fn clash_in_line(line: &[u8], prefix: &str) -> Option<String> {
    let names = names(prefix);
    let keys: std::collections::BTreeMap<String, serde::de::IgnoredAny> =
        serde_json::from_slice(line).ok()?;
    keys.into_keys().find(|k| names.contains(k))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kept() -> Annotation {
        Annotation {
            cluster: None,
            size: None,
            keep: true,
            duplicate_of: None,
            similarity: None,
        }
    }

    #[test]
    fn a_record_keeps_its_bytes_and_gains_the_fields_before_its_brace() {
        let a = Annotation {
            cluster: Some(3),
            size: Some(2),
            keep: false,
            duplicate_of: Some("d.jsonl:1".into()),
            similarity: Some(0.875),
        };
        let out = splice(br#"{"id": 1,  "text":"x" } "#, "dupfind_", &a).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"id": 1,  "text":"x" ,"dupfind_cluster":3,"dupfind_cluster_size":2,"dupfind_keep":false,"dupfind_duplicate_of":"d.jsonl:1","dupfind_similarity":0.875} "#
        );
        let out = splice(b"{ }", "p_", &kept()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{ "p_cluster":null,"p_cluster_size":null,"p_keep":true,"p_duplicate_of":null,"p_similarity":null}"#
        );
        assert!(splice(b"[1]", "p_", &kept()).is_none());
    }

    #[test]
    fn a_clash_names_the_field() {
        let line = br#"{"text":"x","dupfind_keep":1}"#;
        assert_eq!(
            clash_in_line(line, "dupfind_").as_deref(),
            Some("dupfind_keep")
        );
        assert_eq!(clash_in_line(line, "dd_"), None);
        let cols = ["a", "x_similarity"];
        assert_eq!(clash("x_", cols.into_iter()), Some("x_similarity"));
    }
}
