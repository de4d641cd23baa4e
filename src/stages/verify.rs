//! `stage verify --part K/M`: verifies partition K's candidate components and builds their
//! clusters, with `scan`'s own stages: the partition's documents become a corpus of their own
//! (numbered in run-wide order, so every ordering is `scan`'s), its buckets the candidates, its
//! copies the byte-identical groups, the records' carried contents what verification reads
//! again (a file it reads from its path, as `scan` does); then verify, cluster and cluster
//! records run unchanged. Writes the cluster records with the run-wide id of their first
//! member and the clustered documents' marks (`records`), then `verify/part-K.json`: the
//! counts and errors.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::{Int32Array, Int64Array};
use serde::{Deserialize, Serialize};

use crate::candidates::buckets::Buckets;
use crate::candidates::identical::Identical;
use crate::candidates::keys::Keying;
use crate::candidates::Candidates;
use crate::conclude::{conclude, Concluded};
use crate::config::Config;
use crate::ingest;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{DocResult, Outcome};
use crate::pairs::Pair;
use crate::report::Counts;
use crate::sketch::bottomk::Sketches;
use crate::verify::Judge;

use super::columns::{column, key_from_i64, Int64Lists};
use super::components::{copies_path, part_path};
use super::docs::{self, DocRow};
use super::files::{self, Input};
use super::lineage::{Lineage, Place};
use super::plan::Plan;
use super::records::{self, ClusterRec, MarkRec};
use super::route::{route_path, RouteSummary};
use super::summary::{ErrorRec, LineageOnly};
use super::Tasks;

/// The partition's result.
pub fn verified_path(work: &Path, part: u32) -> PathBuf {
    work.join("verify").join(format!("part-{part:06}.json"))
}

/// `verify/part-K.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct VerifySummary {
    /// Where it comes from.
    pub lineage: super::lineage::Lineage,
    /// The partition.
    pub part: u32,
    /// Distinct candidate pairs checked.
    pub checked: u64,
    /// Checked pairs that passed.
    pub passed: u64,
    /// `--verify edit`: pairs judged by Jaccard instead.
    pub fallbacks: Option<u64>,
    /// Documents that could not be read again.
    pub errors: Vec<ErrorRec>,
    /// Its clusters (the records are in `verify/part-K.clusters.parquet`).
    pub clusters: u64,
    /// Their members.
    pub clustered: u64,
    /// What removing their duplicates would free on disk (`stats.reclaimable_bytes`).
    pub reclaimable: u64,
    /// Clusters whose representative is new (None: every one, as in a run without an index).
    #[serde(default)]
    pub originals: Option<u64>,
}

impl VerifySummary {
    /// The partition's share of the report's counts: its pairs and clusters (with an index,
    /// `clustered` and `originals` count the new documents only, as `scan` counts them).
    pub fn counts(&self) -> Counts {
        Counts {
            candidate_pairs: self.checked,
            verified_pairs: self.passed,
            edit_fallbacks: self.fallbacks,
            clusters: self.clusters,
            clustered: self.clustered,
            originals: self.originals.unwrap_or(self.clusters),
            reclaimable: self.reclaimable,
            ..Counts::default()
        }
    }
}

/// Verifies partition `part`.
pub fn verify(
    work: &Path,
    plan: &Plan,
    part: u32,
    index: &dyn super::against::IndexSide,
) -> Result<()> {
    let cfg = plan.config()?;
    let part = plan.part(part)?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, Place::part("verify", part));
    let comps: LineageOnly = super::consume(work, plan, &mut lineage, Tasks::Components, 0)?;
    let comps = &comps.lineage;
    // With --against, the partition's indexed documents first (id shard 0), then the new ones.
    let (mut rows, refs) = read_indexed(work, plan, &mut lineage, comps, part)?;
    let indexed = rows.len() as u32;
    rows.extend(read_routed(work, plan, &mut lineage, part)?);
    let ids: Vec<i64> = rows.iter().map(|r| r.doc).collect();
    check_count(part, ids.len())?;
    let local = |d: i64| -> Result<u32> {
        ids.binary_search(&d)
            .map(|i| i as u32)
            .ok()
            .with_context(|| format!("document {d:#x} of partition {part} was not routed to it"))
    };
    let copies = read_copies(work, comps, part)?;
    let (corpus, texts) = corpus_of(&cfg, rows, &copies);
    let corpus = corpus.with_indexed(indexed);
    let identical = identical_of(&corpus, &copies, &local)?;
    let candidates = candidates_of(work, comps, &cfg, part, &local)?;
    let mut engine = ingest::engine(&cfg, None);
    if let Some(pin) = &plan.against {
        engine.indexed = Some(index.sets(&cfg, pin, &refs)?);
    }
    engine
        .spill
        .fill_carried(texts)
        .context("cannot store the carried texts in a temporary file")?;
    let kept = vec![None; corpus.len()];
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let Concluded {
        verified,
        found,
        clusters,
        late_errors,
    } = conclude(&cfg, &judge, &engine, &corpus, kept, &identical, candidates);
    let errors = verified.errors.iter().chain(&late_errors);
    let recs: Vec<ClusterRec> = (found.iter().zip(&clusters))
        .map(|(f, c)| ClusterRec::new(ids[f.cluster.members[0] as usize], c))
        .collect();
    let marks: Vec<MarkRec> = (crate::dataset::marks(&found, &clusters, ids.len()).iter())
        .zip(&ids)
        .filter_map(|(m, &doc)| {
            m.map(|m| MarkRec {
                doc,
                cluster: m.cluster,
                duplicate: m.duplicate,
            })
        })
        .collect();
    records::write(work, &mut lineage, part, &recs, &marks)?;
    let summary = VerifySummary {
        lineage,
        part,
        checked: verified.checked,
        passed: verified.passed,
        fallbacks: verified.fallbacks,
        errors: errors.map(ErrorRec::from).collect(),
        clusters: recs.len() as u64,
        clustered: (found.iter().flat_map(|f| &f.cluster.members))
            .filter(|&&d| corpus.is_new(d))
            .count() as u64,
        originals: Some(
            (found.iter())
                .filter(|f| corpus.is_new(f.representative))
                .count() as u64,
        ),
        reclaimable: crate::report::reclaimable(&clusters),
    };
    files::write_json_line(&verified_path(work, part), &summary)
}

/// Refuses a partition of more documents than `u32` numbers: verification numbers them as
/// `scan` numbers a run's (its `DocId`), 4 bytes where its per-document vectors are hot. Not
/// reached in practice: a partition holds what `scan` would, some kilobytes per document
/// (docs/scale.md), so memory ends it far sooner; a run passes 2³² candidates with more
/// partitions.
fn check_count(part: u32, n: usize) -> Result<()> {
    if n > u32::MAX as usize {
        bail!(
            "partition {part} holds {n} documents: verify numbers a partition's documents with \
             32 bits, so a partition can have at most {}; run `dupfind stage init` again with \
             more --parts",
            u32::MAX
        );
    }
    Ok(())
}

/// With `--against`: the partition's indexed documents (as `stage attach` wrote them) and where
/// each lies in the index, in id order; none without.
fn read_indexed(
    work: &Path,
    plan: &Plan,
    lineage: &mut Lineage,
    comps: &Lineage,
    part: u32,
) -> Result<(Vec<DocRow>, Vec<super::against::IndexedRef>)> {
    if plan.against.is_none() {
        return Ok((Vec::new(), Vec::new()));
    }
    let (rows, refs) = super::attach::read_attached(work, plan, lineage)?;
    let path = super::components::assign_index_path(work);
    let input = Input::new(work, path.clone(), comps, Place::once("components"));
    let mut mine = Vec::new();
    for b in files::read_parquet(&input, "run `dupfind stage components` again")? {
        let b = b?;
        let doc = column::<Int64Array>(&b, "doc")?;
        let p = column::<Int32Array>(&b, "part")?;
        for k in 0..b.num_rows() {
            if p.value(k) == part as i32 {
                let d = usize::try_from(doc.value(k))
                    .ok()
                    .filter(|&d| d < rows.len())
                    .with_context(|| {
                        format!(
                            "{}: document {:#x} was not attached; run `dupfind stage \
                             components` again",
                            crate::messages::display_path(&path),
                            doc.value(k)
                        )
                    })?;
                mine.push(d);
            }
        }
    }
    mine.sort_unstable();
    let picked_refs = mine.iter().map(|&d| refs[d]).collect();
    let mut rows: Vec<Option<DocRow>> = rows.into_iter().map(Some).collect();
    let picked = mine.iter().filter_map(|&d| rows[d].take()).collect();
    Ok((picked, picked_refs))
}

/// Every document routed to the partition, in run-wide order.
fn read_routed(work: &Path, plan: &Plan, lineage: &mut Lineage, part: u32) -> Result<Vec<DocRow>> {
    let mut rows = Vec::new();
    for shard in 0..plan.shards {
        let s: RouteSummary = super::consume(work, plan, lineage, Tasks::Route, shard)?;
        if !s.parts.contains(&part) {
            continue;
        }
        let path = route_path(work, part, shard);
        let place = Place::shard("route", shard).with_part(part);
        let input = Input::new(work, path.clone(), &s.lineage, place);
        for b in files::read_parquet(&input, "its shard was not routed completely")? {
            for row in docs::from_batch(&b?)? {
                if row.doc >> 32 != plan.id_shard(shard) {
                    bail!(
                        "{}: document {:#x} is not of shard {shard}; run `dupfind stage route \
                         --shard {shard}/{}` again",
                        crate::messages::display_path(&path),
                        row.doc,
                        plan.shards
                    );
                }
                rows.push(row);
            }
        }
    }
    rows.sort_by_key(|r| r.doc);
    if rows.windows(2).any(|w| w[0].doc == w[1].doc) {
        bail!("partition {part}: a document was routed twice (a route file of another plan?)");
    }
    Ok(rows)
}

/// (copy, unit) of the partition's byte-identical copies.
fn read_copies(work: &Path, comps: &Lineage, part: u32) -> Result<Vec<(i64, i64)>> {
    let place = Place::once("components").with_part(part);
    let input = Input::new(work, copies_path(work, part), comps, place);
    let mut out = Vec::new();
    for b in files::read_parquet(&input, "run `dupfind stage components` first")? {
        let b = b?;
        let doc = column::<Int64Array>(&b, "doc")?;
        let canon = column::<Int64Array>(&b, "canon")?;
        out.extend((0..b.num_rows()).map(|k| (doc.value(k), canon.value(k))));
    }
    Ok(out)
}

type Texts = Vec<(u32, Result<Vec<u8>, String>)>;

/// The partition's documents as a corpus (units sketched, copies their duplicates), and the
/// units' carried contents by local id.
fn corpus_of(cfg: &Config, rows: Vec<DocRow>, copies: &[(i64, i64)]) -> (Corpus, Texts) {
    let lanes = cfg.lanes();
    let n = rows.len();
    let bottom_k = cfg.method.bottom_k();
    let mut corpus = Corpus::new(
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        vec![0; n * lanes],
        lanes,
        Sketches::default(),
    );
    let mut bottoms = Vec::new();
    let mut texts = Vec::new();
    for (d, row) in rows.into_iter().enumerate() {
        let unit = copies.binary_search_by_key(&row.doc, |c| c.0).is_err();
        if let Some(sig) = row.signature.as_ref().filter(|_| unit) {
            corpus.sigs[d * lanes..(d + 1) * lanes].copy_from_slice(sig);
        }
        if let (Some(b), true) = (&row.bottom, unit) {
            bottoms.push((d, b.clone()));
        }
        if unit {
            match (row.text, row.text_error) {
                (Some(t), _) => texts.push((d as u32, Ok(t))),
                (None, Some(e)) => texts.push((d as u32, Err(e))),
                (None, None) => {}
            }
        }
        corpus.docs.push(DocResult {
            outcome: if unit {
                Outcome::Sketched
            } else {
                Outcome::Duplicate
            },
            bytes: row.bytes,
            hash: row.hash,
            fingerprint: row.fingerprint,
            set: None,
            shingles: row.shingles,
            links: row.links,
            disk: row.disk,
            json_lines: false,
        });
        corpus.files.push(row.file);
    }
    if let Some(k) = bottom_k {
        let mut slots = vec![0u64; n * (k + 1)];
        for (d, b) in bottoms {
            Sketches::fill(&mut slots[d * (k + 1)..(d + 1) * (k + 1)], &b);
        }
        corpus.bottom = Sketches::from_slots(k, slots);
    }
    (corpus, texts)
}

/// The byte-identical groups: each copy paired with its unit, in order of the units.
fn identical_of(
    corpus: &Corpus,
    copies: &[(i64, i64)],
    local: &impl Fn(i64) -> Result<u32>,
) -> Result<Identical> {
    let mut canon: Vec<u32> = (0..corpus.len() as u32).collect();
    let mut pairs = Vec::with_capacity(copies.len());
    for &(copy, unit) in copies {
        let (c, u) = (local(copy)?, local(unit)?);
        canon[c as usize] = u;
        // Copies among indexed documents were reported when they were new.
        if !corpus.is_new(c) {
            continue;
        }
        pairs.push(Pair {
            lo: u,
            hi: c,
            similarity: 1.0,
            distance: None,
            exact: true,
        });
    }
    pairs.sort_by_key(|p| (p.lo, p.hi));
    let units = (0..corpus.len() as u32)
        .filter(|&d| canon[d as usize] == d)
        .collect();
    Ok(Identical {
        pairs,
        units,
        canon,
        ..Identical::default()
    })
}

/// The partition's band (or piece) buckets as `scan`'s tables: every table, buckets in key
/// order, documents by local id.
fn candidates_of(
    work: &Path,
    comps: &Lineage,
    cfg: &Config,
    part: u32,
    local: &impl Fn(i64) -> Result<u32>,
) -> Result<Candidates> {
    let tables = Keying::of(&cfg.method).tables();
    let mut entries: Vec<Vec<(u64, u32)>> = vec![Vec::new(); tables];
    let path = part_path(work, part);
    let place = Place::once("components").with_part(part);
    let input = Input::new(work, path.clone(), comps, place);
    for b in files::read_parquet(&input, "run `dupfind stage components` first")? {
        let b = b?;
        let table = column::<Int32Array>(&b, "table")?;
        let key = column::<Int64Array>(&b, "key")?;
        let docs = Int64Lists::of(&b, "docs")?;
        for k in 0..b.num_rows() {
            let t = usize::try_from(table.value(k)).ok().filter(|&t| t < tables);
            let t = t.with_context(|| {
                format!(
                    "{}: table {} is out of range",
                    path.display(),
                    table.value(k)
                )
            })?;
            for &doc in docs.get(k)? {
                entries[t].push((key_from_i64(key.value(k)), local(doc)?));
            }
        }
    }
    // The skew counts are the components stage's, over the whole run.
    Ok(Candidates {
        tables: entries.into_iter().map(Buckets::from_keys).collect(),
        ruled_out: 0,
        largest_bucket: 0,
        largest_component: 0,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_of_more_documents_than_u32_numbers_is_refused_by_name() {
        assert!(check_count(3, u32::MAX as usize).is_ok());
        let e = check_count(3, u32::MAX as usize + 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("partition 3 holds 4294967296 documents"), "{e}");
        assert!(e.contains("more --parts"), "{e}");
    }
}
