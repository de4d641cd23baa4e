//! `stage group --part J/M`: the shuffle. Reads every shard's keys of partition J, sorts them by
//! (table, key, document) and writes each bucket of two or more documents
//! (`group/part-J.parquet`: table, key, the documents in increasing order and, for the content
//! table, their hashes' low halves). A sort and one pass: a bucket of 10,000 documents costs
//! what 10,000 keys cost, never their pairs. `group/part-J.json`, last, marks it complete.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::builder::{Int32Builder, Int64Builder, ListBuilder};
use arrow_array::{Int32Array, Int64Array, RecordBatch};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::messages::display_path;

use super::columns::{arc, batch, column, key_from_i64};
use super::files::{self, Input, Output};
use super::lineage::{Lineage, Place};
use super::plan::Plan;
use super::sign::{keys_path, partition, CONTENT_TABLE};
use super::summary::LineageOnly;
use super::Tasks::{Attach as ATTACH, Sign as SIGN};

/// The buckets of partition `part`.
pub fn buckets_path(work: &Path, part: u32) -> PathBuf {
    work.join("group").join(format!("part-{part:06}.parquet"))
}

/// The partition's summary, written last.
pub fn summary_path_of(work: &Path, part: u32) -> PathBuf {
    work.join("group").join(format!("part-{part:06}.json"))
}

/// `group/part-J.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Where it comes from.
    pub lineage: super::lineage::Lineage,
    /// The partition.
    pub part: u32,
    /// Key rows read.
    pub keys: u64,
    /// Buckets of two or more documents written.
    pub buckets: u64,
    /// Documents of the largest.
    pub largest: u64,
}

/// Groups partition `part`.
pub fn group(work: &Path, part: u32) -> Result<()> {
    let plan = Plan::read(work)?;
    let part = plan.part(part)?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, Place::part("group", part));
    let signed = super::consume_all::<LineageOnly>(work, &plan, &mut lineage, SIGN)?;
    // With --against, the indexed documents' keys first: one more shard, id shard 0.
    let attached = super::consume_all::<LineageOnly>(work, &plan, &mut lineage, ATTACH)?;
    let mut sources: Vec<(PathBuf, Place, &Lineage, i64, String)> = (attached.iter())
        .map(|a| {
            let again = "run `dupfind stage attach` again".to_string();
            let place = super::attach::PLACE.with_part(part);
            (
                super::attach::keys_path(work, part),
                place,
                &a.lineage,
                0,
                again,
            )
        })
        .collect();
    for (shard, sign) in (0..plan.shards).zip(&signed) {
        let again = format!(
            "run `dupfind stage sign --shard {shard}/{}` again",
            plan.shards
        );
        let place = Place::shard("sign", shard).with_part(part);
        let id_shard = plan.id_shard(shard);
        sources.push((
            keys_path(work, shard, part),
            place,
            &sign.lineage,
            id_shard,
            again,
        ));
    }
    let mut rows: Vec<(i32, i64, i64, i64)> = Vec::new();
    for (path, place, producer, id_shard, again) in sources {
        let input = Input::new(work, path.clone(), producer, place);
        for b in files::read_parquet(&input, "its shard was not signed completely")? {
            let b = b?;
            let damaged = || format!("{} is damaged", display_path(&path));
            let table = column::<Int32Array>(&b, "table").with_context(damaged)?;
            let key = column::<Int64Array>(&b, "key").with_context(damaged)?;
            let doc = column::<Int64Array>(&b, "doc").with_context(damaged)?;
            let aux = column::<Int64Array>(&b, "aux").with_context(damaged)?;
            for k in 0..b.num_rows() {
                let row = (table.value(k), key.value(k), doc.value(k), aux.value(k));
                // A row of another shard or partition would be grouped silently: refuse it.
                if row.2 >> 32 != id_shard
                    || partition(row.0, key_from_i64(row.1), plan.parts) != part
                {
                    bail!(
                        "{}: row {k} (document {:#x}, table {}) belongs to another shard or \
                         partition; {again}",
                        display_path(&path),
                        row.2,
                        row.0,
                    );
                }
                rows.push(row);
            }
        }
    }
    let keys = rows.len() as u64;
    rows.par_sort_unstable();
    let mut out = BucketsOut::default();
    let (mut buckets, mut largest) = (0u64, 0u64);
    for run in rows.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        if run.len() < 2 {
            continue;
        }
        buckets += 1;
        largest = largest.max(run.len() as u64);
        out.push(run);
    }
    let b = out.finish()?;
    let place = Place::part("group", part);
    let out = Output::new(work, buckets_path(work, part), &lineage, place);
    lineage.wrote(files::write_parquet(&out, b.schema(), &[b])?);
    let summary = GroupSummary {
        lineage,
        part,
        keys,
        buckets,
        largest,
    };
    files::write_json(&summary_path_of(work, part), &summary)
}

#[derive(Default)]
struct BucketsOut {
    table: Int32Builder,
    key: Int64Builder,
    docs: ListBuilder<Int64Builder>,
    aux: ListBuilder<Int64Builder>,
}

impl BucketsOut {
    fn push(&mut self, run: &[(i32, i64, i64, i64)]) {
        self.table.append_value(run[0].0);
        self.key.append_value(run[0].1);
        for r in run {
            self.docs.values().append_value(r.2);
            if r.0 == CONTENT_TABLE {
                self.aux.values().append_value(r.3);
            }
        }
        self.docs.append(true);
        self.aux.append(true);
    }

    fn finish(&mut self) -> Result<RecordBatch> {
        batch(vec![
            ("table", arc(self.table.finish())),
            ("key", arc(self.key.finish())),
            ("docs", arc(self.docs.finish())),
            ("aux", arc(self.aux.finish())),
        ])
    }
}
