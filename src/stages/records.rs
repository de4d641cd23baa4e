//! Cluster records between `verify` and `report`: each partition's clusters, built by the same
//! code as `scan`'s, stored field for field and read back into the report's own types, so the
//! report prints them byte for byte as `scan` would. Similarities travel as the bits of their
//! `f64`, so no decimal round trip can change one.

use serde::{Deserialize, Serialize};

use crate::report::{ClusterOut, DuplicateOut, FileOut, MemberMore, MemberOut, PairMore, PairOut};

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

    /// Its members.
    pub fn size(&self) -> usize {
        self.size
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
/// numbered, and for each partition the number of each of its clusters.
pub fn numbered(parts: Vec<Vec<ClusterRec>>) -> (Vec<ClusterOut>, Vec<Vec<u32>>) {
    let mut numbers: Vec<Vec<u32>> = parts.iter().map(|p| vec![0; p.len()]).collect();
    let mut recs: Vec<(usize, usize, ClusterRec)> = (parts.into_iter().enumerate())
        .flat_map(|(part, recs)| (recs.into_iter().enumerate()).map(move |(i, c)| (part, i, c)))
        .collect();
    recs.sort_by_key(|(_, _, c)| c.first);
    let clusters = (recs.into_iter().enumerate())
        .map(|(id, (part, i, c))| {
            numbers[part][i] = id as u32;
            c.into_cluster(id)
        })
        .collect();
    (clusters, numbers)
}
