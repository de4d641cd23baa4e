//! Cluster records between `verify` and `report`: each partition's clusters, built by the same
//! code as `scan`'s, stored field for field and read back into the report's own types, so the
//! report prints them byte for byte as `scan` would. Similarities travel as the bits of their
//! `f64`, so no decimal round trip can change one.
//!
//! A partition's records go in `verify/part-K.clusters.parquet`, a row per cluster in order of
//! its first member (`first`, and the record as JSON in `record`), in row groups of
//! [`CLUSTERS_PER_GROUP`]; where its clustered documents stand goes in
//! `verify/part-K.marks.parquet` (`doc`, `cluster`, `duplicate`), read by `stage dataset`.
//! `stage report` merges the partitions' files in order of `first`, a row group of each at a
//! time, so its memory grows with the partitions, not with the clusters.

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use serde::{Deserialize, Serialize};

use crate::report::{
    ClusterOut, ClusterStream, DuplicateOut, FileOut, MemberMore, MemberOut, PairMore, PairOut,
};

use super::columns::column;
use super::files::{self, Input, Output, ParquetOut};
use super::lineage::{Lineage, Place};

/// A cluster, and the run-wide id of its first member (clusters are reported in that order).
#[derive(Debug, Serialize, Deserialize)]
pub struct ClusterRec {
    /// The run-wide id of the first member.
    pub first: i64,
    size: usize,
    min_similarity: u64,
    max_similarity: u64,
    representative: usize,
    kept: bool,
    duplicates: Vec<DuplicateRec>,
    linked: Vec<DuplicateRec>,
    members: Vec<MemberRec>,
    pairs: Vec<PairRec>,
}

#[derive(Debug, Serialize, Deserialize)]
struct MemberRec {
    path: String,
    bytes: u64,
    indexed: bool,
    path_bytes: Option<String>,
    line: Option<u64>,
    id: Option<String>,
    aliases: Vec<String>,
    aliases_bytes: Option<Vec<Option<String>>>,
    more: bool,
    /// The content hash's high and low halves (JSON numbers are exact to 64 bits here).
    hash: (u64, u64),
    file: Option<FileOut>,
}

#[derive(Debug, Serialize, Deserialize)]
struct DuplicateRec {
    member: u32,
    similarity: u64,
    distance: Option<u32>,
    exact: bool,
    estimated: bool,
    containment: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PairRec {
    a: u32,
    b: u32,
    similarity: u64,
    distance: Option<u32>,
    exact: bool,
    more: Option<PairMoreRec>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PairMoreRec {
    contained: Option<u32>,
    container: Option<u32>,
    containment: Option<u64>,
    jaccard: Option<u64>,
    shared_shingles: Option<u64>,
    edit_similarity: Option<u64>,
    estimate: Option<u64>,
    band: Option<usize>,
    hamming: Option<u32>,
    cosine: Option<u64>,
    piece: Option<usize>,
}

fn bits(x: Option<f64>) -> Option<u64> {
    x.map(f64::to_bits)
}

fn float(x: Option<u64>) -> Option<f64> {
    x.map(f64::from_bits)
}

impl ClusterRec {
    /// The record of `c`, whose first member has run-wide id `first`.
    pub fn new(first: i64, c: &ClusterOut) -> ClusterRec {
        let dup = |d: &DuplicateOut| DuplicateRec {
            member: d.member,
            similarity: d.similarity.to_bits(),
            distance: d.distance,
            exact: d.exact,
            estimated: d.estimated,
            containment: bits(d.containment),
        };
        let member = |m: &MemberOut| {
            let more = m.more.as_deref();
            MemberRec {
                path: m.path.to_string(),
                bytes: m.bytes,
                indexed: m.indexed,
                path_bytes: more.and_then(|x| x.path_bytes.clone()),
                line: more.and_then(|x| x.line),
                id: more.and_then(|x| x.id.clone()),
                aliases: more.map(|x| x.aliases.clone()).unwrap_or_default(),
                aliases_bytes: more.and_then(|x| x.aliases_bytes.clone()),
                more: more.is_some(),
                hash: ((m.hash >> 64) as u64, m.hash as u64),
                file: m.file.as_deref().cloned(),
            }
        };
        let pair = |p: &PairOut| PairRec {
            a: p.a,
            b: p.b,
            similarity: p.similarity.to_bits(),
            distance: p.distance,
            exact: p.exact,
            more: p.more.as_deref().map(|m| PairMoreRec {
                contained: m.contained,
                container: m.container,
                containment: bits(m.containment),
                jaccard: bits(m.jaccard),
                shared_shingles: m.shared_shingles,
                edit_similarity: bits(m.edit_similarity),
                estimate: bits(m.estimate),
                band: m.band,
                hamming: m.hamming,
                cosine: bits(m.cosine),
                piece: m.piece,
            }),
        };
        ClusterRec {
            first,
            size: c.size,
            min_similarity: c.min_similarity.to_bits(),
            max_similarity: c.max_similarity.to_bits(),
            representative: c.representative,
            kept: c.kept,
            duplicates: c.duplicates.iter().map(dup).collect(),
            linked: c.linked.iter().map(dup).collect(),
            members: c.members.iter().map(member).collect(),
            pairs: c.pairs.iter().map(pair).collect(),
        }
    }

    /// The cluster again, as the report's `id`-th.
    pub fn into_cluster(self, id: usize) -> ClusterOut {
        let dup = |d: DuplicateRec| DuplicateOut {
            member: d.member,
            similarity: f64::from_bits(d.similarity),
            distance: d.distance,
            exact: d.exact,
            estimated: d.estimated,
            containment: float(d.containment),
        };
        let member = |m: MemberRec| MemberOut {
            path: m.path.into_boxed_str(),
            bytes: m.bytes,
            indexed: m.indexed,
            hash: (u128::from(m.hash.0) << 64) | u128::from(m.hash.1),
            file: m.file.map(Box::new),
            more: m.more.then(|| {
                Box::new(MemberMore {
                    path_bytes: m.path_bytes,
                    line: m.line,
                    id: m.id,
                    aliases: m.aliases,
                    aliases_bytes: m.aliases_bytes,
                })
            }),
        };
        let pair = |p: PairRec| PairOut {
            a: p.a,
            b: p.b,
            similarity: f64::from_bits(p.similarity),
            distance: p.distance,
            exact: p.exact,
            more: p.more.map(|m| {
                Box::new(PairMore {
                    contained: m.contained,
                    container: m.container,
                    containment: float(m.containment),
                    jaccard: float(m.jaccard),
                    shared_shingles: m.shared_shingles,
                    edit_similarity: float(m.edit_similarity),
                    estimate: float(m.estimate),
                    band: m.band,
                    hamming: m.hamming,
                    cosine: float(m.cosine),
                    piece: m.piece,
                })
            }),
        };
        ClusterOut {
            id,
            size: self.size,
            min_similarity: f64::from_bits(self.min_similarity),
            max_similarity: f64::from_bits(self.max_similarity),
            representative: self.representative,
            kept: self.kept,
            duplicates: self.duplicates.into_iter().map(dup).collect(),
            linked: self.linked.into_iter().map(dup).collect(),
            members: self.members.into_iter().map(member).collect(),
            pairs: self.pairs.into_iter().map(pair).collect(),
        }
    }
}

/// The partitions' clusters (`parts`, each in order of its first member) in the report's order,
/// numbered as [`merged`] numbers them, and for each partition the number of each of its
/// clusters, in its own order (for the marks, which name a cluster by its place in its
/// partition).
pub fn numbered(parts: Vec<RecStream>) -> Result<(Vec<ClusterOut>, Vec<Vec<u32>>)> {
    let mut numbers: Vec<Vec<u32>> = vec![Vec::new(); parts.len()];
    let mut clusters = Vec::new();
    for (id, next) in merge(parts).enumerate() {
        let (part, rec) = next?;
        numbers[part].push(u32::try_from(id).context("more than 2^32 clusters")?);
        clusters.push(rec.into_cluster(id));
    }
    Ok((clusters, numbers))
}

/// Clusters per row group of a clusters file: what a reader holds of each partition at a time.
const CLUSTERS_PER_GROUP: usize = 256;

/// A clustered document: its run-wide id, its cluster (index in the partition's clusters) and,
/// when it is listed as a duplicate, its index in the cluster's `duplicates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkRec {
    pub doc: i64,
    pub cluster: u32,
    pub duplicate: Option<u32>,
}

/// `verify/part-K.clusters.parquet`.
pub fn clusters_path(work: &Path, part: u32) -> PathBuf {
    work.join("verify")
        .join(format!("part-{part:06}.clusters.parquet"))
}

/// `verify/part-K.marks.parquet`.
pub fn marks_path(work: &Path, part: u32) -> PathBuf {
    work.join("verify")
        .join(format!("part-{part:06}.marks.parquet"))
}

fn place(part: u32) -> Place {
    Place::part("verify", part)
}

/// Writes partition `part`'s cluster records (in order of `first`) and marks, recorded in
/// `lineage`.
pub fn write(
    work: &Path,
    lineage: &mut Lineage,
    part: u32,
    recs: &[ClusterRec],
    marks: &[MarkRec],
) -> Result<()> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("first", DataType::Int64, false),
        Field::new("record", DataType::Utf8, false),
    ]));
    let out = Output::new(work, clusters_path(work, part), lineage, place(part));
    let mut file = ParquetOut::create(&out, schema.clone())?;
    for group in recs.chunks(CLUSTERS_PER_GROUP) {
        let mut first = Int64Builder::with_capacity(group.len());
        let mut record = StringBuilder::new();
        for r in group {
            first.append_value(r.first);
            record.append_value(serde_json::to_string(r)?);
        }
        let columns: Vec<ArrayRef> = vec![Arc::new(first.finish()), Arc::new(record.finish())];
        file.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
        file.end_row_group()?;
    }
    lineage.wrote(file.commit()?);

    let schema = Arc::new(Schema::new(vec![
        Field::new("doc", DataType::Int64, false),
        Field::new("cluster", DataType::Int64, false),
        Field::new("duplicate", DataType::Int64, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(marks.iter().map(|m| m.doc))),
        Arc::new(Int64Array::from_iter_values(
            marks.iter().map(|m| i64::from(m.cluster)),
        )),
        Arc::new(Int64Array::from_iter(
            marks.iter().map(|m| m.duplicate.map(i64::from)),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let out = Output::new(work, marks_path(work, part), lineage, place(part));
    lineage.wrote(files::write_parquet(&out, schema, &[batch])?);
    Ok(())
}

/// Partition `part`'s cluster records, in order of `first`, read a row group at a time from
/// the file its verify attempt `producer` wrote (checked whole before the first is returned).
pub fn read_clusters(
    work: &Path,
    producer: &Lineage,
    part: u32,
) -> Result<impl Iterator<Item = Result<ClusterRec>> + Send> {
    let input = Input::new(work, clusters_path(work, part), producer, place(part));
    let path = input.path().to_path_buf();
    let batches = files::read_parquet(&input, "its partition was not verified")?;
    let damaged = move || {
        format!(
            "{} holds a cluster record this dupfind cannot read",
            crate::messages::display_path(&path)
        )
    };
    Ok(batches.flat_map(move |b| {
        let damaged = damaged.clone();
        let recs: Vec<Result<ClusterRec>> = match b.and_then(|b| records_of(&b)) {
            Ok(recs) => recs
                .into_iter()
                .map(|r| serde_json::from_str(&r).with_context(damaged.clone()))
                .collect(),
            Err(e) => vec![Err(e)],
        };
        recs
    }))
}

/// The `record` column of a batch of a clusters file.
fn records_of(b: &RecordBatch) -> Result<Vec<String>> {
    let records = column::<StringArray>(b, "record")?;
    Ok((0..records.len())
        .map(|i| records.value(i).to_string())
        .collect())
}

/// Partition `part`'s marks, from the file its verify attempt `producer` wrote.
pub fn read_marks(work: &Path, producer: &Lineage, part: u32) -> Result<Vec<MarkRec>> {
    let input = Input::new(work, marks_path(work, part), producer, place(part));
    let mut out = Vec::new();
    for b in files::read_parquet(&input, "its partition was not verified")? {
        let b = b?;
        let doc = column::<Int64Array>(&b, "doc")?;
        let cluster = column::<Int64Array>(&b, "cluster")?;
        let duplicate = column::<Int64Array>(&b, "duplicate")?;
        for i in 0..b.num_rows() {
            let number = |x: i64| u32::try_from(x).context("a mark out of range");
            out.push(MarkRec {
                doc: doc.value(i),
                cluster: number(cluster.value(i))?,
                duplicate: if duplicate.is_null(i) {
                    None
                } else {
                    Some(number(duplicate.value(i))?)
                },
            });
        }
    }
    Ok(out)
}

/// A partition's cluster records, in order of `first`.
pub type RecStream = Box<dyn Iterator<Item = Result<ClusterRec>> + Send>;

/// The partitions' records (each stream in order of `first`) merged into the report's order
/// and numbered, as they are read.
pub fn merged(parts: Vec<RecStream>) -> ClusterStream {
    Box::new((merge(parts).enumerate()).map(|(id, next)| next.map(|(_, rec)| rec.into_cluster(id))))
}

/// The k-way merge of [`merged`] and [`numbered`]: each record with its partition, in order of
/// `first`, holding the next record of each partition; a partition's error ends it.
fn merge(parts: Vec<RecStream>) -> impl Iterator<Item = Result<(usize, ClusterRec)>> + Send {
    let mut streams = parts;
    let mut heads: BinaryHeap<Head> = BinaryHeap::new();
    let mut failed: Option<anyhow::Error> = None;
    for (part, s) in streams.iter_mut().enumerate() {
        match s.next() {
            Some(Ok(rec)) => heads.push(Head { part, rec }),
            Some(Err(e)) => {
                failed.get_or_insert(e);
            }
            None => {}
        }
    }
    std::iter::from_fn(move || {
        if let Some(e) = failed.take() {
            return Some(Err(e));
        }
        let Head { part, rec } = heads.pop()?;
        match streams[part].next() {
            Some(Ok(next)) => heads.push(Head { part, rec: next }),
            Some(Err(e)) => failed = Some(e),
            None => {}
        }
        Some(Ok((part, rec)))
    })
}

/// A partition's next record, ordered so that the heap's greatest is the least `first`.
struct Head {
    part: usize,
    rec: ClusterRec,
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.rec.first == other.rec.first
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> std::cmp::Ordering {
        other.rec.first.cmp(&self.rec.first)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rec(first: i64) -> ClusterRec {
        ClusterRec {
            first,
            // Carried through to the cluster, so a test can see which record came out where.
            size: first as usize,
            min_similarity: 0,
            max_similarity: 0,
            representative: 0,
            kept: true,
            duplicates: Vec::new(),
            linked: Vec::new(),
            members: Vec::new(),
            pairs: Vec::new(),
        }
    }

    fn stream(firsts: &[i64]) -> RecStream {
        Box::new(
            firsts
                .iter()
                .map(|&f| Ok(rec(f)))
                .collect::<Vec<_>>()
                .into_iter(),
        )
    }

    #[test]
    fn partitions_merge_in_order_of_their_first_member_and_are_numbered_so() {
        let parts = vec![
            stream(&[3, 1 << 32, (1 << 32) + 9]),
            stream(&[]),
            stream(&[0, 4, 5, (2 << 32) + 1]),
            stream(&[7]),
        ];
        let (mut ids, mut firsts) = (Vec::new(), Vec::new());
        for c in merged(parts) {
            let c = c.unwrap();
            ids.push(c.id);
            firsts.push(c.size as i64);
        }
        assert_eq!(ids, (0..8).collect::<Vec<_>>());
        let (a, b) = (1i64 << 32, 2i64 << 32);
        assert_eq!(firsts, vec![0, 3, 4, 5, 7, a, a + 9, b + 1]);
        // `numbered` gives each partition's clusters those numbers, in the partition's order.
        let again = vec![
            stream(&[3, 1 << 32, (1 << 32) + 9]),
            stream(&[]),
            stream(&[0, 4, 5, (2 << 32) + 1]),
            stream(&[7]),
        ];
        let (clusters, numbers) = numbered(again).unwrap();
        let ids: Vec<usize> = clusters.iter().map(|c| c.id).collect();
        assert_eq!(ids, (0..8).collect::<Vec<_>>());
        assert_eq!(
            numbers,
            vec![vec![1, 5, 6], vec![], vec![0, 2, 3, 7], vec![4]]
        );
    }

    #[test]
    fn a_partition_that_fails_midway_ends_the_merge_with_its_error() {
        let failing: RecStream =
            Box::new(vec![Ok(rec(2)), Err(anyhow::anyhow!("part 1 is truncated"))].into_iter());
        let out: Vec<Result<ClusterOut>> = merged(vec![stream(&[1, 3, 5]), failing]).collect();
        let firsts_ok = out.iter().take_while(|c| c.is_ok()).count();
        assert!(firsts_ok < out.len(), "the error is passed on");
        let err = out.iter().find_map(|c| c.as_ref().err()).unwrap();
        assert!(format!("{err}").contains("truncated"));
    }
}
