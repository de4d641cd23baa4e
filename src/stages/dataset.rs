//! `stage dataset --shard I/N` (with `--write-dataset`): writes shard I's part of the
//! deduplicated dataset, `DIR/part-I.jsonl`: its documents with text but those the verify
//! partitions listed as duplicates, as `scan --write-dataset` writes them; the parts in shard
//! order are `scan`'s one part. `dataset/shard-I.json` holds the counts and the documents that
//! changed since they were signed (errors of the run, which the report lists). A run without
//! `--write-dataset` has nothing to write, and the stage does nothing.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::dataset::{self, DatasetDoc};
use crate::ingest;

use super::docs;
use super::files;
use super::lineage::{Lineage, Place};
use super::plan::Plan;
use super::sign::docs_input;
use super::summary::{ErrorRec, LineageOnly};
use super::verify::VerifySummary;
use super::Tasks;

/// The shard's summary.
pub fn summary_path(work: &Path, shard: u32) -> PathBuf {
    work.join("dataset").join(format!("shard-{shard:06}.json"))
}

/// `dataset/shard-I.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DatasetSummary {
    /// Where it comes from.
    pub lineage: super::lineage::Lineage,
    /// The shard.
    pub shard: u32,
    /// Records written.
    pub kept: u64,
    /// Duplicates left out.
    pub dropped: u64,
    /// Documents not written because they changed.
    pub errors: Vec<ErrorRec>,
}

/// Writes shard `shard`'s part of the dataset.
pub fn dataset(work: &Path, shard: u32) -> Result<()> {
    let plan = Plan::read(work)?;
    let cfg = plan.config()?;
    plan.shard(shard)?;
    let Some(dir) = cfg.dataset.clone() else {
        return Ok(());
    };
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, Place::shard("dataset", shard));
    let sign: LineageOnly = super::consume(work, &plan, &mut lineage, Tasks::Sign, shard)?;
    let mut dropped = Vec::new();
    for part in 0..plan.parts {
        let v: VerifySummary = super::consume(work, &plan, &mut lineage, Tasks::Verify, part)?;
        dropped.extend(
            v.dropped
                .into_iter()
                .filter(|&d| d >> 32 == i64::from(shard)),
        );
    }
    dropped.sort_unstable();
    let mut rows = Vec::new();
    let docs_file = docs_input(work, shard, &sign.lineage);
    for b in files::read_parquet(&docs_file, "its shard was not signed")? {
        rows.extend(docs::from_batch(&b?)?);
    }
    let docs: Vec<DatasetDoc> = (rows.iter())
        .map(|r| DatasetDoc {
            file: &r.file,
            hash: r.hash,
            dropped: dropped.binary_search(&r.doc).is_ok(),
        })
        .collect();
    let engine = ingest::engine(&cfg, None);
    let path = dataset::part_path(&dir, shard);
    let written = dataset::write(&path, &docs, &cfg, &engine)?;
    cfg.messages.note(&format!(
        "dataset: {} records written to {}, {} duplicates left out",
        written.kept,
        crate::messages::display_path(&path),
        written.dropped
    ));
    let summary = DatasetSummary {
        lineage,
        shard,
        kept: written.kept,
        dropped: written.dropped,
        errors: written.errors.iter().map(ErrorRec::from).collect(),
    };
    files::write_json(&summary_path(work, shard), &summary)
}
