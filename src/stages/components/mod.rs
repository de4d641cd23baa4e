//! `stage components`: the one single-node step. Reads every partition's buckets; splits the
//! content table's buckets into byte-identical groups (by the whole content hash), whose first
//! document is the group's unit and the others its copies; keeps of each band bucket its units
//! (what `scan` buckets); joins units sharing a bucket, and copies to their unit, into candidate
//! components (union-find, linear in the buckets' documents); and deals the components out to
//! the verify partitions, largest first, each to the least loaded.
//!
//! Writes, per partition K, its band buckets (`components/part-K.parquet`, in table and key
//! order) and its copies (`components/part-K.copies.parquet`); per shard I, where each of its
//! documents goes (`components/assign-I.parquet`); and the counts (`components/summary.json`,
//! last).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::builder::{Int32Builder, Int64Builder, ListBuilder};
use arrow_array::{Int32Array, Int64Array, RecordBatch};
use rayon::prelude::*;

use crate::pairs::UnionFind;

use super::columns::{arc, batch, column, Int64Lists};
use super::files;
use super::group::{buckets_path, summary_path_of, GroupSummary};
use super::plan::Plan;
use super::sign::CONTENT_TABLE;
use super::summary::ComponentsSummary;

/// Partition K's band buckets.
pub fn part_path(work: &Path, part: u32) -> PathBuf {
    work.join("components")
        .join(format!("part-{part:06}.parquet"))
}

/// Partition K's copies.
pub fn copies_path(work: &Path, part: u32) -> PathBuf {
    work.join("components")
        .join(format!("part-{part:06}.copies.parquet"))
}

/// Where shard I's documents go.
pub fn assign_path(work: &Path, shard: u32) -> PathBuf {
    work.join("components")
        .join(format!("assign-{shard:06}.parquet"))
}

/// The summary, written last.
pub fn summary_path(work: &Path) -> PathBuf {
    work.join("components").join("summary.json")
}

/// A band bucket.
struct Bucket {
    table: i32,
    key: i64,
    docs: Vec<i64>,
}

/// Finds the candidate components and deals them out.
pub fn components(work: &Path) -> Result<()> {
    let plan = Plan::read(work)?;
    for part in 0..plan.parts {
        let path = summary_path_of(work, part);
        let what = format!(
            "partition {part} has not been grouped (run `dupfind stage group --part {part}/{}`)",
            plan.parts
        );
        let s: GroupSummary = files::read_json(&path, &what)?;
        super::check_run(&path, &s.run, &plan.run)?;
    }
    let (mut bands, groups) = read_buckets(work, &plan)?;
    // A copy is never bucketed: its unit stands for it, as in `scan`.
    let mut copies: Vec<(i64, i64)> = groups
        .iter()
        .flat_map(|g| g[1..].iter().map(move |&c| (c, g[0])))
        .collect();
    copies.par_sort_unstable();
    let is_copy = |d: &i64| copies.binary_search_by_key(d, |c| c.0).is_ok();
    bands
        .par_iter_mut()
        .for_each(|b| b.docs.retain(|d| !is_copy(d)));
    bands.retain(|b| b.docs.len() >= 2);
    bands.par_sort_unstable_by_key(|b| (b.table, b.key));
    let largest_bucket = bands.iter().map(|b| b.docs.len() as u64).max().unwrap_or(0);

    let mut ids: Vec<i64> = (bands.iter().flat_map(|b| b.docs.iter().copied()))
        .chain(groups.iter().flatten().copied())
        .collect();
    ids.par_sort_unstable();
    ids.dedup();
    let index = |d: i64| ids.binary_search(&d).unwrap_or_default() as u32;
    let mut uf = UnionFind::new(ids.len());
    for b in &bands {
        b.docs.windows(2).for_each(|w| {
            uf.union(index(w[0]), index(w[1]));
        });
    }
    // Measured before the copies join: a copy is not bucketed, its unit stands for it.
    let largest_component = (bands.iter().flat_map(|b| b.docs.iter()))
        .map(|&d| u64::from(uf.set_size(index(d))))
        .max()
        .unwrap_or(0);
    for g in &groups {
        g[1..].iter().for_each(|&c| {
            uf.union(index(g[0]), index(c));
        });
    }
    let part_of = deal(&mut uf, &ids, plan.parts);
    write_parts(work, &plan, &bands, &copies, &ids, &part_of, index)?;
    let roots: std::collections::HashSet<u32> = (0..ids.len() as u32).map(|i| uf.find(i)).collect();
    let summary = ComponentsSummary {
        run: plan.run.clone(),
        exact_groups: groups.len() as u64,
        exact_copies: copies.len() as u64,
        components: roots.len() as u64,
        largest_component,
        largest_bucket,
    };
    files::write_json(&summary_path(work), &summary)
}

/// Every partition's buckets: the band buckets, and the byte-identical groups (sorted
/// documents, the unit first) from the content table's.
fn read_buckets(work: &Path, plan: &Plan) -> Result<(Vec<Bucket>, Vec<Vec<i64>>)> {
    let (mut bands, mut groups) = (Vec::new(), Vec::new());
    for part in 0..plan.parts {
        let path = buckets_path(work, part);
        for b in files::read_parquet(&path, &plan.run, "its partition was not grouped completely")?
        {
            let b = b?;
            let damaged = || format!("{} is damaged", crate::messages::display_path(&path));
            let table = column::<Int32Array>(&b, "table").with_context(damaged)?;
            let key = column::<Int64Array>(&b, "key").with_context(damaged)?;
            let docs = Int64Lists::of(&b, "docs").with_context(damaged)?;
            let aux = Int64Lists::of(&b, "aux").with_context(damaged)?;
            for k in 0..b.num_rows() {
                let list = |l: &Int64Lists<'_>| -> Result<Vec<i64>> {
                    Ok(l.get(k).with_context(damaged)?.to_vec())
                };
                if table.value(k) == CONTENT_TABLE {
                    let (aux, docs) = (list(&aux)?, list(&docs)?);
                    if aux.len() != docs.len() {
                        bail!("{}: `aux` is not parallel to `docs`", damaged());
                    }
                    let mut by_hash: Vec<(i64, i64)> = aux.into_iter().zip(docs).collect();
                    // Contents that share the hash's high half are told apart by the low half.
                    by_hash.sort_unstable();
                    for run in by_hash.chunk_by(|x, y| x.0 == y.0) {
                        if run.len() >= 2 {
                            groups.push(run.iter().map(|x| x.1).collect());
                        }
                    }
                } else {
                    bands.push(Bucket {
                        table: table.value(k),
                        key: key.value(k),
                        docs: list(&docs)?,
                    });
                }
            }
        }
    }
    Ok((bands, groups))
}

/// The partition of each document of `ids` (by index): its component's. Components are dealt
/// largest first (ties: first member first) to the partition with the fewest members so far.
fn deal(uf: &mut UnionFind, ids: &[i64], parts: u32) -> Vec<u32> {
    let n = ids.len() as u32;
    let roots: Vec<u32> = (0..n).map(|i| uf.find(i)).collect();
    // Each component once, at its first member (ids are in increasing order).
    let mut seen = vec![false; ids.len()];
    let mut comps: Vec<(Reverse<u32>, u32, u32)> = Vec::new();
    for i in 0..n {
        let r = roots[i as usize];
        if !seen[r as usize] {
            seen[r as usize] = true;
            comps.push((Reverse(uf.set_size(i)), i, r));
        }
    }
    comps.sort_unstable();
    let mut load: BinaryHeap<Reverse<(u64, u32)>> = (0..parts).map(|p| Reverse((0, p))).collect();
    let mut part_of_root = vec![0u32; ids.len()];
    for (Reverse(size), _, r) in comps {
        if let Some(Reverse((l, p))) = load.pop() {
            part_of_root[r as usize] = p;
            load.push(Reverse((l + u64::from(size), p)));
        }
    }
    roots.iter().map(|&r| part_of_root[r as usize]).collect()
}

fn write_parts(
    work: &Path,
    plan: &Plan,
    bands: &[Bucket],
    copies: &[(i64, i64)],
    ids: &[i64],
    part_of: &[u32],
    index: impl Fn(i64) -> u32 + Sync,
) -> Result<()> {
    let run = &plan.run;
    // Buckets and copies in partition order (then table and key, or document), one pass each.
    let mut by_part: Vec<(u32, usize)> = (bands.par_iter().enumerate())
        .map(|(i, b)| (part_of[index(b.docs[0]) as usize], i))
        .collect();
    by_part.par_sort_unstable();
    let mut copies_by_part: Vec<(u32, i64, i64)> = (copies.par_iter())
        .map(|&(c, u)| (part_of[index(c) as usize], c, u))
        .collect();
    copies_by_part.par_sort_unstable();
    let (mut at, mut at_copy) = (0, 0);
    for part in 0..plan.parts {
        let mut table = Int32Builder::new();
        let mut key = Int64Builder::new();
        let mut docs = ListBuilder::new(Int64Builder::new());
        while at < by_part.len() && by_part[at].0 == part {
            let b = &bands[by_part[at].1];
            table.append_value(b.table);
            key.append_value(b.key);
            b.docs.iter().for_each(|&d| docs.values().append_value(d));
            docs.append(true);
            at += 1;
        }
        let b = batch(vec![
            ("table", arc(table.finish())),
            ("key", arc(key.finish())),
            ("docs", arc(docs.finish())),
        ])?;
        files::write_parquet(&part_path(work, part), b.schema(), &[b], run)?;
        let mut mine = Vec::new();
        while at_copy < copies_by_part.len() && copies_by_part[at_copy].0 == part {
            mine.push((copies_by_part[at_copy].1, copies_by_part[at_copy].2));
            at_copy += 1;
        }
        let b = pairs_batch(&mine, "canon")?;
        files::write_parquet(&copies_path(work, part), b.schema(), &[b], run)?;
    }
    let canon = |d: i64| {
        copies
            .binary_search_by_key(&d, |c| c.0)
            .map_or(d, |i| copies[i].1)
    };
    for shard in 0..plan.shards {
        let (lo, hi) = (i64::from(shard) << 32, (i64::from(shard) + 1) << 32);
        let (from, to) = (
            ids.partition_point(|&d| d < lo),
            ids.partition_point(|&d| d < hi),
        );
        let mut doc = Int64Builder::new();
        let mut unit = Int64Builder::new();
        let mut part = Int32Builder::new();
        for i in from..to {
            doc.append_value(ids[i]);
            unit.append_value(canon(ids[i]));
            part.append_value(part_of[i] as i32);
        }
        let b = batch(vec![
            ("doc", arc(doc.finish())),
            ("canon", arc(unit.finish())),
            ("part", arc(part.finish())),
        ])?;
        files::write_parquet(&assign_path(work, shard), b.schema(), &[b], run)?;
    }
    Ok(())
}

fn pairs_batch(rows: &[(i64, i64)], second: &str) -> Result<RecordBatch> {
    let (mut a, mut b) = (Int64Builder::new(), Int64Builder::new());
    for r in rows {
        a.append_value(r.0);
        b.append_value(r.1);
    }
    batch(vec![("doc", arc(a.finish())), (second, arc(b.finish()))])
}
