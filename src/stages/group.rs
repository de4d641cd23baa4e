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

use super::columns::{arc, batch, column, key_from_i64, key_to_i64};
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
pub fn group(work: &Path, plan: &Plan, part: u32) -> Result<()> {
    let part = plan.part(part)?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, Place::part("group", part));
    let signed = super::consume_all::<LineageOnly>(work, plan, &mut lineage, SIGN)?;
    // With --against, the indexed documents' keys first: one more shard, id shard 0.
    let attached = super::consume_all::<LineageOnly>(work, plan, &mut lineage, ATTACH)?;
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
    let mut rows = Rows::default();
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
                if !rows.push(row) {
                    bail!(
                        "{}: row {k} (document {:#x}) has table {}, which no stage writes; \
                         {again}",
                        display_path(&path),
                        row.2,
                        row.0,
                    );
                }
            }
        }
    }
    let keys = rows.docs.len() as u64;
    let mut out = BucketsOut::default();
    let (mut buckets, mut largest) = (0u64, 0u64);
    for run in rows
        .sorted()
        .chunk_by(|x, y| x >> PLACE_BITS == y >> PLACE_BITS)
    {
        if run.len() < 2 {
            continue;
        }
        buckets += 1;
        largest = largest.max(run.len() as u64);
        out.push(&rows, run);
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
    /// Appends the bucket of the sorted words `run` (one table and key, two rows or more).
    fn push(&mut self, rows: &Rows, run: &[u128]) {
        let (table, key) = Rows::table_key(run[0]);
        self.table.append_value(table);
        self.key.append_value(key);
        for &w in run {
            let at = (w & PLACE_MASK) as usize;
            self.docs.values().append_value(rows.docs[at]);
            if table == CONTENT_TABLE {
                self.aux.values().append_value(rows.aux[at]);
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

/// Bits of a sort word below its table and key: the row's place in the order read.
const PLACE_BITS: u32 = 128 - 64 - TABLE_BITS;
const PLACE_MASK: u128 = (1 << PLACE_BITS) - 1;

/// Bits of a table number in a sort word: the content table (−1) and at most
/// [`crate::config::MAX_NUM_PERM`] bands or pieces, counted from 0.
const TABLE_BITS: u32 = 11;

/// A partition's key rows, sorted as 128-bit words, (table, key) above the row's place, where
/// a sort of (table, key, doc, aux) tuples of 32 bytes took half of the stage. The place orders a
/// bucket's documents as their ids do: the rows come in document order (every key file is
/// written in document order, and read in shard order), or, when they do not, the words are
/// ordered by their documents too.
#[derive(Default)]
struct Rows {
    words: Vec<u128>,
    docs: Vec<i64>,
    aux: Vec<i64>,
    in_order: bool,
}

impl Rows {
    /// Adds a row; false when its table cannot be one (a file no stage wrote).
    fn push(&mut self, (table, key, doc, aux): (i32, i64, i64, i64)) -> bool {
        let t = i64::from(table) + 1;
        if !(0..1 << TABLE_BITS).contains(&t) {
            return false;
        }
        if self.docs.is_empty() {
            self.in_order = true;
        }
        self.in_order &= self.docs.last().is_none_or(|&last| last <= doc);
        let place = self.docs.len() as u128 & PLACE_MASK;
        self.words.push(
            (t as u128) << (128 - TABLE_BITS) | u128::from(key_from_i64(key)) << PLACE_BITS | place,
        );
        self.docs.push(doc);
        self.aux.push(aux);
        true
    }

    /// The words in (table, key, document, aux) order.
    fn sorted(&mut self) -> Vec<u128> {
        let mut words = std::mem::take(&mut self.words);
        if self.in_order {
            words.par_sort_unstable();
        } else {
            let (docs, aux) = (&self.docs, &self.aux);
            words.par_sort_unstable_by_key(|&w| {
                let at = (w & PLACE_MASK) as usize;
                (w >> PLACE_BITS, docs[at], aux[at])
            });
        }
        words
    }

    /// The table and key (as stored) of a sort word.
    fn table_key(w: u128) -> (i32, i64) {
        let table = (w >> (128 - TABLE_BITS)) as i32 - 1;
        (table, key_to_i64((w >> PLACE_BITS) as u64))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The rows `rows` holds, in the order of its sort words.
    fn sorted(rows: &[(i32, i64, i64, i64)]) -> Vec<(i32, i64, i64, i64)> {
        let mut r = Rows::default();
        for &row in rows {
            assert!(r.push(row));
        }
        r.sorted()
            .iter()
            .map(|&w| {
                let (table, key) = Rows::table_key(w);
                let at = (w & PLACE_MASK) as usize;
                (table, key, r.docs[at], r.aux[at])
            })
            .collect()
    }

    #[test]
    fn sort_words_order_rows_as_tuples_in_document_order_or_not() {
        let mut rows = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for doc in 0..2000i64 {
            x = crate::sketch::minhash::mix64(x);
            // Few keys, so that buckets form; the extremes of each field too.
            let key = match doc % 7 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => (x % 50) as i64 - 25,
            };
            let table = [CONTENT_TABLE, 0, 1, 1023][(x >> 40) as usize % 4];
            let aux = if table == CONTENT_TABLE {
                (x >> 3) as i64
            } else {
                0
            };
            rows.push((table, key, (3 << 32) | doc, aux));
        }
        let mut want = rows.clone();
        want.sort_unstable();
        assert_eq!(sorted(&rows), want, "rows in document order");
        let mut shuffled = rows.clone();
        shuffled.reverse();
        shuffled.swap(10, 1500);
        assert_eq!(sorted(&shuffled), want, "rows out of document order");
    }

    #[test]
    fn a_table_no_stage_writes_is_refused() {
        let mut r = Rows::default();
        assert!(!r.push((-2, 0, 0, 0)));
        assert!(!r.push((2047, 0, 0, 0)));
        assert!(r.push((2046, 0, 0, 0)));
        assert!(r.push((CONTENT_TABLE, 0, 0, 0)));
    }
}
