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
//!
//! It streams: the group files are read a record batch at a time, four times over (the
//! content table; the candidate documents; the unions; the merge that writes the buckets), so
//! that what it holds is per candidate document (its id, 8 bytes; its union-find entry, 8,
//! half of which then holds its partition), per copy (16 bytes), a batch of each group file,
//! a buffer of each partition's spilled buckets and a row group of the file being written,
//! never the buckets.

mod buckets;
mod copies;
mod ids;
mod spill;
mod write;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::pairs::UnionFind;

use super::files::{self, Output};
use super::group::GroupSummary;
use super::lineage::{Lineage, Place, Written};
use super::plan::Plan;
use super::sign::CONTENT_TABLE;
use super::summary::ComponentsSummary;

use buckets::{GroupFile, Merge};
use copies::Copies;
use ids::{Ids, IdsBuilder};
use spill::Spill;
use write::{AssignRows, BucketRows, CopyRows, Sink};

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

/// Finds the candidate components and deals them out.
pub fn components(work: &Path) -> Result<()> {
    let plan = Plan::read(work)?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, PLACE);
    let groups: Vec<GroupSummary> =
        super::consume_all(work, &plan, &mut lineage, super::Tasks::Group)?;
    let run = Run {
        work,
        plan: &plan,
        groups: &groups,
    };
    let copies = Copies::read(work, &plan, &groups)?;
    let (ids, largest_bucket) = candidates(&run, &copies)?;
    let mut sets = UnionFind::new(ids.as_slice().len());
    for_each_band(&run, &copies, |units| {
        let mut prev = index(&ids, units[0])?;
        for &d in &units[1..] {
            let i = index(&ids, d)?;
            sets.union(prev, i);
            prev = i;
        }
        Ok(())
    })?;
    // Measured before the copies join: a copy is not bucketed, its unit stands for it. Only
    // bucketed documents are in sets of two or more yet.
    let largest_component = Some(sets.largest()).filter(|&s| s >= 2).unwrap_or(0);
    for &(c, u) in copies.pairs() {
        sets.union(index(&ids, u)?, index(&ids, c)?);
    }
    let (part_of, components) = sets.deal(plan.parts);
    let dealt = Dealt {
        copies: &copies,
        ids: &ids,
        part_of: &part_of,
    };
    let written = [
        write_buckets(&run, &lineage, &dealt)?,
        write_copies(&run, &lineage, &dealt)?,
        write_assign(&run, &lineage, &dealt)?,
    ];
    for w in written.into_iter().flatten() {
        lineage.wrote(w);
    }
    let summary = ComponentsSummary {
        lineage,
        exact_groups: copies.groups,
        exact_copies: copies.pairs().len() as u64,
        components,
        largest_component: u64::from(largest_component),
        largest_bucket,
    };
    files::write_json(&summary_path(work), &summary)
}

/// Calls `f` with the units of every band bucket that has two or more, file by file.
/// Components' place: it runs once.
const PLACE: Place = Place {
    stage: "components",
    shard: None,
    part: None,
};

/// What the stage reads: the run and the group attempts it read the summaries of.
struct Run<'a> {
    work: &'a Path,
    plan: &'a Plan,
    groups: &'a [GroupSummary],
}

impl Run<'_> {
    fn group_file(&self, part: u32) -> Result<GroupFile> {
        let g = &self.groups[part as usize].lineage;
        GroupFile::open(self.work, self.plan, g, part)
    }

    fn output(&self, lineage: &Lineage, path: PathBuf, place: Place) -> Output {
        Output::new(self.work, path, lineage, place)
    }
}

/// The components dealt out: the copies, the candidate documents and each one's partition.
struct Dealt<'a> {
    copies: &'a Copies,
    ids: &'a Ids,
    part_of: &'a [u32],
}

fn for_each_band(
    run: &Run<'_>,
    copies: &Copies,
    mut f: impl FnMut(&[i64]) -> Result<()>,
) -> Result<()> {
    let mut units = Vec::new();
    for part in 0..run.plan.parts {
        let mut file = run.group_file(part)?;
        while let Some(b) = file.next_bucket()? {
            if b.table != CONTENT_TABLE {
                copies.units_of(b.docs, &mut units);
                if units.len() >= 2 {
                    f(&units)?;
                }
            }
        }
    }
    Ok(())
}

/// The candidate documents (the units of the band buckets that keep two or more, and the
/// members of the byte-identical groups), and the units of the largest band bucket.
fn candidates(run: &Run<'_>, copies: &Copies) -> Result<(Ids, u64)> {
    let mut ids = IdsBuilder::default();
    let mut largest = 0;
    for_each_band(run, copies, |units| {
        largest = largest.max(units.len() as u64);
        ids.extend(units)
    })?;
    for &(c, u) in copies.pairs() {
        ids.extend(&[c, u])?;
    }
    Ok((ids.finish()?, largest))
}

/// The union-find index of `doc`, which the gathering of candidates saw.
fn index(ids: &Ids, doc: i64) -> Result<u32> {
    ids.index(doc).with_context(|| {
        format!(
            "document {doc} was not in the group files when they were first read: did a group \
             stage run again while stage components ran?"
        )
    })
}

/// Each partition's band buckets, in (table, key) order: the group files merged, each bucket
/// spilled to its partition's temporary file, then each partition's file written from it.
fn write_buckets(run: &Run<'_>, lineage: &Lineage, dealt: &Dealt<'_>) -> Result<Vec<Written>> {
    let (plan, work) = (run.plan, run.work);
    let Dealt {
        copies,
        ids,
        part_of,
    } = *dealt;
    let files = (0..plan.parts).map(|p| run.group_file(p));
    let mut merged = Merge::new(files.collect::<Result<_>>()?)?;
    let mut spill = Spill::new(&work.join("components"), plan.parts)?;
    let mut units = Vec::new();
    while let Some(b) = merged.next_bucket()? {
        if b.table == CONTENT_TABLE {
            continue;
        }
        copies.units_of(b.docs, &mut units);
        if units.len() >= 2 {
            // Every unit of a bucket is in its first's component.
            let part = part_of[index(ids, units[0])? as usize];
            spill.push(part, b.table, b.key, &units)?;
        }
    }
    drop(merged);
    let mut written = Vec::with_capacity(plan.parts as usize);
    for part in 0..plan.parts {
        let mut spilled = spill.reader(part).context("no such partition")?;
        let file = run.output(lineage, part_path(work, part), PLACE.with_part(part));
        let mut out: Sink<BucketRows> = Sink::new(file);
        while let Some(row) = spilled.next_bucket()? {
            out.push(row)?;
        }
        written.push(out.commit()?);
    }
    Ok(written)
}

/// Each partition's copies, by copy.
fn write_copies(run: &Run<'_>, lineage: &Lineage, dealt: &Dealt<'_>) -> Result<Vec<Written>> {
    let mut out: Vec<Sink<CopyRows>> = (0..run.plan.parts)
        .map(|p| {
            let path = copies_path(run.work, p);
            Sink::new(run.output(lineage, path, PLACE.with_part(p)))
        })
        .collect();
    for &(c, u) in dealt.copies.pairs() {
        out[dealt.part_of[index(dealt.ids, c)? as usize] as usize].push((c, u))?;
    }
    out.into_iter().map(Sink::commit).collect()
}

/// Where each shard's candidate documents go.
fn write_assign(run: &Run<'_>, lineage: &Lineage, dealt: &Dealt<'_>) -> Result<Vec<Written>> {
    let (plan, work) = (run.plan, run.work);
    let (copies, part_of) = (dealt.copies, dealt.part_of);
    let ids = dealt.ids.as_slice();
    let mut written = Vec::with_capacity(plan.shards as usize);
    for shard in 0..plan.shards {
        let (lo, hi) = (i64::from(shard) << 32, (i64::from(shard) + 1) << 32);
        let (from, to) = (
            ids.partition_point(|&d| d < lo),
            ids.partition_point(|&d| d < hi),
        );
        let file = Place::shard("components", shard);
        let mut out: Sink<AssignRows> =
            Sink::new(run.output(lineage, assign_path(work, shard), file));
        for i in from..to {
            out.push((ids[i], copies.canon(ids[i]), part_of[i] as i32))?;
        }
        written.push(out.commit()?);
    }
    Ok(written)
}
