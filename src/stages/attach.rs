//! `stage attach` (once, with `--against`): the indexed documents that take part in the run, as
//! `scan --against` attaches them. Unions what every sign task met in the index, drops those
//! the changed inputs supersede and those whose files are gone (with scan's message), and
//! writes the rest as one more shard, numbered first (id shard 0) in path order: their
//! document table (`attach/docs.parquet`), where each lies in the index (`attach/refs.parquet`:
//! `doc`, `seg`, `row`, for the verify tasks that read their stored sets) and their keys for each
//! group partition (`attach/keys-J.parquet`), as a sign task writes a shard's. Its cost grows
//! with the indexed documents met, not with the index. `attach/summary.json`, last.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::builder::Int64Builder;
use arrow_array::{Array, BinaryArray, Int64Array};
use serde::{Deserialize, Serialize};

use crate::candidates::identical;
use crate::messages::display_path;

use super::against::{Attached, IndexSide, IndexedRef, Recorded};

use super::columns::{arc, batch, column};
use super::files::{self, Input, Output};
use super::init::index_path;
use super::lineage::{Lineage, Place, Written};
use super::plan::Plan;
use super::sign::{met_path, write_docs, write_keys, KeysOf};
use super::summary::{LineageOnly, WalkSummary};
use super::Tasks;

/// Attach's place: it runs once.
pub const PLACE: Place = Place {
    stage: "attach",
    shard: None,
    part: None,
};

/// The indexed documents' table.
pub fn docs_path(work: &Path) -> PathBuf {
    work.join("attach").join("docs.parquet")
}

/// Where each lies in the index.
pub fn refs_path(work: &Path) -> PathBuf {
    work.join("attach").join("refs.parquet")
}

/// Their keys of group partition `part`.
pub fn keys_path(work: &Path, part: u32) -> PathBuf {
    work.join("attach").join(format!("keys-{part:06}.parquet"))
}

/// The summary, written last.
pub fn summary_path(work: &Path) -> PathBuf {
    work.join("attach").join("summary.json")
}

/// `attach/summary.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachSummary {
    /// Where it comes from.
    pub lineage: Lineage,
    /// Indexed documents attached.
    pub documents: u64,
    /// Indexed documents met whose files are gone (left out).
    pub gone: u64,
}

/// Attaches the indexed documents the run's new ones meet.
pub fn attach(work: &Path, plan: &Plan, index: &dyn IndexSide) -> Result<()> {
    let cfg = plan.config()?;
    let pin = (plan.against.as_ref())
        .context("this run compares with no index (no --against): it has no attach stage")?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, PLACE);
    let walk: WalkSummary = super::consume(work, plan, &mut lineage, Tasks::Init, 0)?;
    let recorded = read_join(work, &walk.lineage)?;
    let signs: Vec<LineageOnly> = super::consume_all(work, plan, &mut lineage, Tasks::Sign)?;
    let mut met = Vec::new();
    for (shard, s) in (0..plan.shards).zip(&signs) {
        let place = Place::shard("sign", shard);
        let input = Input::new(work, met_path(work, shard), &s.lineage, place);
        for b in files::read_parquet(&input, "its shard was not signed completely")? {
            let b = b?;
            let (seg, row) = (
                column::<Int64Array>(&b, "seg")?,
                column::<Int64Array>(&b, "row")?,
            );
            for k in 0..b.num_rows() {
                met.push(doc_ref(seg.value(k), row.value(k))?);
            }
        }
    }
    let Attached {
        mut corpus,
        refs,
        gone,
    } = index.attach(&cfg, pin, recorded, met)?;
    let found = identical::group(&mut corpus);
    let texts: Vec<usize> = (0..corpus.len()).collect();
    let id = |d: usize| d as i64;
    let minhash = !cfg.method.is_simhash();
    let out = Output::new(work, docs_path(work), &lineage, PLACE);
    lineage.wrote(write_docs(
        &out,
        &corpus,
        &found.canon,
        &texts,
        minhash,
        id,
    )?);
    let out = Output::new(work, refs_path(work), &lineage, PLACE);
    lineage.wrote(write_refs(&out, &refs)?);
    let keys = KeysOf {
        corpus: &corpus,
        canon: &found.canon,
        texts: &texts,
    };
    let dest = |part| (keys_path(work, part), PLACE.with_part(part));
    for written in write_keys(work, plan, &cfg, &lineage, &keys, id, dest)? {
        lineage.wrote(written);
    }
    let summary = AttachSummary {
        lineage,
        documents: corpus.len() as u64,
        gone,
    };
    files::write_json(&summary_path(work), &summary)
}

fn doc_ref(seg: i64, row: i64) -> Result<IndexedRef> {
    let out_of_range = "a document of the index is out of range";
    Ok((
        u32::try_from(seg).context(out_of_range)?,
        u32::try_from(row).context(out_of_range)?,
    ))
}

/// The join's side `stage init` recorded: the superseded documents and the walked paths.
pub(super) fn read_join(work: &Path, init: &Lineage) -> Result<Recorded> {
    let path = index_path(work);
    let input = Input::new(work, path.clone(), init, super::init::PLACE);
    let mut recorded = Recorded::default();
    for b in files::read_parquet(&input, "run `dupfind stage init` again")? {
        let b = b?;
        let damaged = || format!("{} is damaged", display_path(&path));
        let seg = column::<Int64Array>(&b, "seg").with_context(damaged)?;
        let row = column::<Int64Array>(&b, "row").with_context(damaged)?;
        let paths = column::<BinaryArray>(&b, "path").with_context(damaged)?;
        for k in 0..b.num_rows() {
            if paths.is_null(k) {
                (recorded.superseded).push(doc_ref(seg.value(k), row.value(k))?);
            } else {
                recorded.walked.insert(paths.value(k).to_vec());
            }
        }
    }
    Ok(recorded)
}

fn write_refs(out: &Output, refs: &[IndexedRef]) -> Result<Written> {
    let (mut doc, mut seg, mut row) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    for (d, &(s, r)) in refs.iter().enumerate() {
        doc.append_value(d as i64);
        seg.append_value(i64::from(s));
        row.append_value(i64::from(r));
    }
    let b = batch(vec![
        ("doc", arc(doc.finish())),
        ("seg", arc(seg.finish())),
        ("row", arc(row.finish())),
    ])?;
    files::write_parquet(out, b.schema(), &[b])
}

/// The indexed documents of the run (their rows, with no text) and where each lies in the
/// index, in id order, for the attempt `reader`.
pub fn read_attached(
    work: &Path,
    plan: &Plan,
    reader: &mut Lineage,
) -> Result<(Vec<super::docs::DocRow>, Vec<IndexedRef>)> {
    let s: AttachSummary = super::consume(work, plan, reader, Tasks::Attach, 0)?;
    let mut rows = Vec::new();
    let input = Input::new(work, docs_path(work), &s.lineage, PLACE);
    for b in files::read_parquet(&input, "run `dupfind stage attach` again")? {
        rows.extend(super::docs::from_batch(&b?)?);
    }
    let mut refs = Vec::new();
    let input = Input::new(work, refs_path(work), &s.lineage, PLACE);
    for b in files::read_parquet(&input, "run `dupfind stage attach` again")? {
        let b = b?;
        let (seg, row) = (
            column::<Int64Array>(&b, "seg")?,
            column::<Int64Array>(&b, "row")?,
        );
        for k in 0..b.num_rows() {
            refs.push(doc_ref(seg.value(k), row.value(k))?);
        }
    }
    if refs.len() != rows.len() {
        anyhow::bail!(
            "{} and {} disagree; run `dupfind stage attach` again",
            display_path(&docs_path(work)),
            display_path(&refs_path(work))
        );
    }
    Ok((rows, refs))
}
