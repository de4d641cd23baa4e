//! `stage dataset --shard I/N` (with `--write-dataset`): writes shard I's part of the
//! deduplicated dataset (`DIR/part-I.jsonl`, or `DIR/part-I-N-STEM.parquet` a part per input,
//! numbered by the shard's inputs as `init` listed them): its
//! documents with text but those the verify partitions listed as duplicates (with `--annotate`:
//! all of them, each with its cluster numbered as the report numbers it), as `scan
//! --write-dataset` writes them; the parts in name order are `scan`'s. `dataset/shard-I.json`
//! holds the counts and the documents that changed since they were signed (errors of the run,
//! which the report lists). A run without `--write-dataset` has nothing to write, and the stage
//! does nothing.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::dataset::{self, DatasetDoc, Fate, Mark};
use crate::ingest;

use super::docs;
use super::files;
use super::lineage::{Lineage, Place};
use super::plan::{path_from_b64, path_to_b64, Plan};
use super::records;
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
    /// The parts it wrote, so that one lost or changed since marks the shard to run again.
    #[serde(default)]
    pub parts: Vec<PartRec>,
}

/// A part of the dataset as `stage dataset` wrote it.
#[derive(Debug, Serialize, Deserialize)]
pub struct PartRec {
    /// Its path below the dataset's directory, as exact bytes (base64).
    pub path: String,
    /// Its bytes.
    pub size: u64,
    /// Their CRC-32, as the work files' lineage records theirs.
    pub crc: String,
    /// On an object store, the ETag it gave the part (without quotes), which one listing of
    /// the dataset's directory shows for every part (`stage status`, `stage report`); absent on
    /// a local disk and from earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
}

impl PartRec {
    fn of(dir: &Path, part: &dataset::PartFile) -> PartRec {
        let below = part.path.strip_prefix(dir).unwrap_or(&part.path);
        PartRec {
            path: path_to_b64(below),
            size: part.size,
            crc: format!("{:08x}", part.crc),
            etag: part.e_tag.clone(),
        }
    }

    /// Checks that the part is in `dir` with the size recorded; with `whole`, that its bytes
    /// are those written too. On a store, `listed` (one listing of `dir`) shows its size and,
    /// when recorded, its ETag; otherwise the part is looked at (a stat or a HEAD) and, with
    /// `whole`, read for its CRC-32. `Err` says what is wrong, naming the part.
    pub fn check(&self, dir: &Path, whole: bool, listed: Option<&files::Listing>) -> Result<()> {
        let below = path_from_b64(&self.path)?;
        let path = dir.join(&below);
        let shown = crate::messages::display_path(&path);
        let missing = || format!("{shown}, a part of the dataset it wrote, is missing");
        if let (Some(listed), Some(name)) = (listed, below.to_str()) {
            match listed.seen(name, Some(self.size), self.etag.as_deref()) {
                files::Seen::Missing => bail!("{}", missing()),
                files::Seen::Changed(why) => {
                    bail!("{shown}, a part of the dataset it wrote, changed since: {why}")
                }
                files::Seen::Same => return Ok(()),
                // Its size is the one written, and no more was asked.
                files::Seen::Unknown if !whole => return Ok(()),
                files::Seen::Unknown => {}
            }
        }
        let Some((size, crc)) = files::open_part(&path, whole)? else {
            bail!("{}", missing());
        };
        if size != self.size {
            bail!(
                "{shown}, a part of the dataset it wrote, has {size} bytes, {} when written: it \
                 changed since",
                self.size
            );
        }
        if let Some(crc) = crc {
            let got = format!("{crc:08x}");
            if got != self.crc {
                bail!(
                    "{shown}, a part of the dataset it wrote, changed since: its CRC-32 is {got}, \
                     {} when written",
                    self.crc
                );
            }
        }
        Ok(())
    }
}

/// Writes shard `shard`'s part of the dataset.
pub fn dataset(work: &Path, plan: &Plan, shard: u32) -> Result<()> {
    let cfg = plan.config()?;
    let (start, end) = plan.shard(shard)?;
    let Some(dir) = cfg.dataset.clone() else {
        return Ok(());
    };
    // `stage init` chose it from every shard's inputs.
    let format = cfg
        .dataset_format
        .context("run.json names no dataset format: the run was planned by another dupfind")?;
    // `stage init` claimed the directory for this run; another run may have it since.
    dataset::refuse_held(&dir, dataset::Writer::Run(&plan.run))?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, Place::shard("dataset", shard));
    let sign: LineageOnly = super::consume(work, plan, &mut lineage, Tasks::Sign, shard)?;
    // Every partition's clusters, numbered as the report numbers them, and this shard's marks.
    let mut recs = Vec::new();
    let mut marks = Vec::new();
    for part in 0..plan.parts {
        let v: VerifySummary = super::consume(work, plan, &mut lineage, Tasks::Verify, part)?;
        recs.push(Box::new(records::read_clusters(work, &v.lineage, part)?) as records::RecStream);
        let shard_marks = records::read_marks(work, &v.lineage, part)?
            .into_iter()
            .filter(|m| m.doc >> 32 == plan.id_shard(shard));
        marks.extend(shard_marks.map(|m| (m.doc, part as usize, m)));
    }
    let (clusters, numbers) = records::numbered(recs)?;
    marks.sort_unstable_by_key(|m| m.0);
    let mut rows = Vec::new();
    let docs_file = docs_input(work, shard, &sign.lineage);
    for b in files::read_parquet(&docs_file, "its shard was not signed")? {
        rows.extend(docs::from_batch(&b?)?);
    }
    let fate = |doc: i64| {
        let i = marks.binary_search_by_key(&doc, |m| m.0).ok()?;
        let (_, part, m) = &marks[i];
        let mark = Mark {
            cluster: numbers[*part][m.cluster as usize],
            duplicate: m.duplicate,
        };
        Some(Fate::of(mark, &clusters))
    };
    // The stage's engine holds no text: each file is read again, each dump's records too.
    let docs: Vec<DatasetDoc> = (rows.iter().enumerate())
        .map(|(i, r)| DatasetDoc {
            doc: i as u32,
            file: &r.file,
            hash: r.hash,
            fate: fate(r.doc),
        })
        .collect();
    // The shard's inputs, as scan takes its own: a dump without a document is written too,
    // and a Parquet dataset's parts are numbered by them.
    let inputs = super::init::read_inputs(work, plan, &mut lineage, start, end)?;
    let layout = dataset::Layout::of(&inputs);
    drop(inputs);
    let engine = ingest::engine(&cfg, None);
    // No prints: the sign stage does not keep them, so a row group copied whole is checked by
    // decoding its text column.
    let prints = Default::default();
    let to = (format, &layout);
    let written = dataset::write(&dir, shard, to, &docs, &cfg, &engine, &prints)?;
    let summary = DatasetSummary {
        lineage,
        shard,
        kept: written.kept,
        dropped: written.dropped,
        errors: written.errors.iter().map(ErrorRec::from).collect(),
        parts: (written.parts.iter())
            .map(|p| PartRec::of(&dir, p))
            .collect(),
    };
    files::write_json(&summary_path(work, shard), &summary)
}
