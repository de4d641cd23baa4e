//! `stage route --shard I/N`: sends each of the shard's documents that belongs to a candidate
//! component to its verify partition (`route/part-K/shard-I.parquet`), a dump record with its
//! content read again when verification needs it (exact or edit verification, `--pairs`): a
//! record of a plain dump from its offset, the records of a compressed dump by streaming it
//! once. The content must hash as it did when signed, or the record carries the reason instead.
//! A file's content is not carried: the verify task reads it from its path, as `scan` reads it
//! again, which costs what reading it here would and saves compressing, writing and reading it
//! back twice (route's file, then verify's spill). `route/shard-I.json`, last, lists the
//! partitions written.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::{Int32Array, Int64Array};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Config, Verify};
use crate::ingest::{self, worker::DocWorker};
use crate::input::walk::FileEntry;

use super::columns::column;
use super::components::assign_path;
use super::docs::{self, DocRow};
use super::files::{self, Input, Output};
use super::lineage::{Lineage, Place};
use super::plan::Plan;
use super::sign::docs_input;
use super::summary::LineageOnly;
use super::Tasks;

/// Documents per batch of a route file.
const BATCH: usize = 4096;

/// What shard I sent partition K.
pub fn route_path(work: &Path, part: u32, shard: u32) -> PathBuf {
    work.join("route")
        .join(format!("part-{part:06}"))
        .join(format!("shard-{shard:06}.parquet"))
}

/// The shard's summary, written last.
pub fn summary_path(work: &Path, shard: u32) -> PathBuf {
    work.join("route").join(format!("shard-{shard:06}.json"))
}

/// `route/shard-I.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct RouteSummary {
    /// Where it comes from.
    pub lineage: super::lineage::Lineage,
    /// The shard.
    pub shard: u32,
    /// Documents routed.
    pub routed: u64,
    /// The partitions it wrote a file for.
    pub parts: Vec<u32>,
}

/// True when verification reads documents' contents: exact and edit verification, and the
/// evidence of `--pairs`.
pub fn needs_texts(cfg: &Config) -> bool {
    cfg.pairs || matches!(cfg.verify(), Some(Verify::Exact | Verify::Edit))
}

/// Routes shard `shard`.
pub fn route(work: &Path, plan: &Plan, shard: u32) -> Result<()> {
    let cfg = plan.config()?;
    plan.shard(shard)?;
    let place = Place::shard("route", shard);
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, place);
    let comps: LineageOnly = super::consume(work, plan, &mut lineage, Tasks::Components, 0)?;
    let sign: LineageOnly = super::consume(work, plan, &mut lineage, Tasks::Sign, shard)?;
    let assign = read_assign(work, plan, &comps.lineage, shard)?;
    let mut rows = Vec::new();
    let docs = docs_input(work, shard, &sign.lineage);
    for b in files::read_parquet(&docs, "its shard was not signed")? {
        for row in docs::from_batch(&b?)? {
            if let Ok(i) = assign.binary_search_by_key(&row.doc, |a| a.0) {
                rows.push((assign[i].2, assign[i].1, row));
            }
        }
    }
    if needs_texts(&cfg) {
        read_texts(&cfg, &mut rows)?;
    }
    // By partition, documents in order within each.
    rows.sort_by_key(|r| (r.0, r.2.doc));
    let mut parts = Vec::new();
    for run in rows.chunk_by(|x, y| x.0 == y.0) {
        let part = run[0].0;
        let first = docs::to_batch(&[], true)?;
        let file = Output::new(
            work,
            route_path(work, part, shard),
            &lineage,
            place.with_part(part),
        );
        let mut out = files::ParquetOut::create(&file, first.schema())?;
        for chunk in run.chunks(BATCH) {
            let chunk: Vec<DocRow> = chunk.iter().map(|r| r.2.clone()).collect();
            out.write(&docs::to_batch(&chunk, true)?)?;
        }
        lineage.wrote(out.commit()?);
        parts.push(part);
    }
    let summary = RouteSummary {
        lineage,
        shard,
        routed: rows.len() as u64,
        parts,
    };
    files::write_json(&summary_path(work, shard), &summary)
}

/// (document, its unit, its partition) for every document of the shard in a component.
fn read_assign(
    work: &Path,
    plan: &Plan,
    comps: &Lineage,
    shard: u32,
) -> Result<Vec<(i64, i64, u32)>> {
    let path = assign_path(work, shard);
    let input = Input::new(work, path.clone(), comps, Place::shard("components", shard));
    let mut out = Vec::new();
    for b in files::read_parquet(&input, "run `dupfind stage components` first")? {
        let b = b?;
        let damaged = || format!("{} is damaged", crate::messages::display_path(&path));
        let doc = column::<Int64Array>(&b, "doc").with_context(damaged)?;
        let canon = column::<Int64Array>(&b, "canon").with_context(damaged)?;
        let part = column::<Int32Array>(&b, "part").with_context(damaged)?;
        for k in 0..b.num_rows() {
            let row = (doc.value(k), canon.value(k), part.value(k));
            if row.0 >> 32 != plan.id_shard(shard) || !(0..plan.parts as i32).contains(&row.2) {
                bail!(
                    "{}: row {k} (document {:#x}, partition {}) is not of shard {shard} or of \
                     this run's partitions; run `dupfind stage components` again",
                    crate::messages::display_path(&path),
                    row.0,
                    row.2
                );
            }
            out.push((row.0, row.1, row.2 as u32));
        }
    }
    Ok(out)
}

/// Reads the contents of the dump records among the units of `rows` ((partition, unit, row)):
/// a copy's content is its unit's, which verification takes instead. A record is carried
/// because a verify task would have to stream a compressed dump from its start to reach it.
fn read_texts(cfg: &Config, rows: &mut [(u32, i64, DocRow)]) -> Result<()> {
    let units: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].1 == rows[i].2.doc && rows[i].2.file.record.is_some())
        .collect();
    let entries: Vec<FileEntry> = units.iter().map(|&i| rows[i].2.file.clone()).collect();
    let engine = ingest::engine(cfg, None);
    let records: Vec<u32> = (0..entries.len() as u32).collect();
    ingest::spill_records(&engine, &entries, &records, &cfg.jsonl)
        .context("cannot store the texts of dump records in a temporary file")?;
    let texts: Vec<Result<Vec<u8>, String>> = (0..entries.len())
        .into_par_iter()
        .map_init(
            || DocWorker::new(&engine),
            |w, l| w.content(l as u32, &entries[l], rows_hash(rows, &units, l)),
        )
        .collect();
    for (&i, text) in units.iter().zip(texts) {
        match text {
            Ok(t) => rows[i].2.text = Some(t),
            Err(e) => rows[i].2.text_error = Some(e),
        }
    }
    Ok(())
}

fn rows_hash(rows: &[(u32, i64, DocRow)], units: &[usize], l: usize) -> u128 {
    rows[units[l]].2.hash
}
