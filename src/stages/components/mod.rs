//! `stage components`: the one single-node step. Reads every partition's buckets; splits the
//! content table's buckets into byte-identical groups (by the whole content hash), whose first
//! document is the group's unit and the others its copies; keeps of each band bucket its units
//! (what `scan` buckets); joins units sharing a bucket, and copies to their unit, into candidate
//! components (a concurrent union-find, linear in the buckets' documents); and deals the
//! components out to the verify partitions, largest first, each to the least loaded.
//!
//! Writes, per partition K, its band buckets (`components/part-K.parquet`, in table and key
//! order) and its copies (`components/part-K.copies.parquet`); per shard I, where each of its
//! documents goes (`components/assign-I.parquet`); and the counts (`components/summary.json`,
//! last).
//!
//! It streams: the group files are read a record batch at a time, four times over (the
//! content table; the candidate documents; the unions; the merge that writes the buckets), so
//! that what it holds is per candidate document (its id, 8 bytes; its union-find entry, 8,
//! half of which then holds its partition; 16 past 2³² candidates), per copy (16 bytes), a
//! batch of each group file per thread, a buffer of each partition's spilled buckets and a row
//! group of each file being written, never the buckets.
//!
//! Every pass runs on all the stage's threads (`-j`), and the files are the same whatever
//! their number: the candidates and the unions take the files' row groups in any order (the
//! union-find's sets and roots do not depend on it, see `forest.rs`); the merge runs as one
//! range of the (table, key) order per thread, read back range after range; the partitions'
//! and shards' files are written in parallel, each by one thread.

mod buckets;
mod copies;
mod forest;
mod ids;
mod spill;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64};

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::files::{self, Output};
use super::group::GroupSummary;
use super::lineage::{Lineage, Place, Written};
use super::plan::Plan;
use super::sign::CONTENT_TABLE;
use super::summary::{ComponentsSummary, SignSummary};

use buckets::{GroupParts, Ranges};
use copies::Copies;
use forest::{Forest, Parts, Slot};
use ids::{Ids, IdsBuilder};
use spill::{Spill, Spilled};
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

/// With `--against`: where the indexed documents go (those `stage attach` numbered).
pub fn assign_index_path(work: &Path) -> PathBuf {
    work.join("components").join("assign-index.parquet")
}

/// The summary, written last.
pub fn summary_path(work: &Path) -> PathBuf {
    work.join("components").join("summary.json")
}

/// Finds the candidate components and deals them out.
pub fn components(work: &Path, plan: &Plan) -> Result<()> {
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, PLACE);
    let groups: Vec<GroupSummary> =
        super::consume_all(work, plan, &mut lineage, super::Tasks::Group)?;
    // `scan` refuses a --keep-by field no record has before it writes anything; this is the
    // first task that runs once after every shard is signed, so the refusal is said once,
    // before any dataset part (which would be kept by --keep instead) is written.
    let cfg = plan.config()?;
    if cfg.keep_by.is_some() {
        let signs: Vec<SignSummary> = super::read_tasks(work, plan, super::Tasks::Sign)?;
        SignSummary::check_keep_by(&cfg, &signs)?;
    }
    let run = Run {
        work,
        plan,
        files: (0..plan.parts)
            .into_par_iter()
            .map(|p| GroupParts::open(work, plan, &groups[p as usize].lineage, p))
            .collect::<Result<_>>()?,
    };
    let copies = Copies::read(&run.files)?;
    let (ids, largest_bucket) = candidates(&run, &copies)?;
    let found = if Wide::needed(ids.len()) {
        join::<AtomicU64>(&run, &lineage, &copies, &ids)?
    } else {
        join::<AtomicU32>(&run, &lineage, &copies, &ids)?
    };
    for w in found.written {
        lineage.wrote(w);
    }
    let (exact_groups, exact_copies) = copies.counts(run.first_new());
    let summary = ComponentsSummary {
        lineage,
        exact_groups,
        exact_copies,
        components: found.components,
        largest_component: found.largest_component,
        largest_bucket,
    };
    files::write_json(&summary_path(work), &summary)
}

/// Whether a run's candidates need 64-bit union-find entries.
struct Wide;

impl Wide {
    /// True past the 4.29 billion candidates that `u32` indices number.
    fn needed(candidates: usize) -> bool {
        candidates as u64 > <AtomicU32 as Slot>::MAX + 1
    }
}

/// What [`join`] found and wrote.
struct Found {
    written: Vec<Written>,
    components: u64,
    largest_component: u64,
}

/// Joins the candidates into components in a forest of `S` entries, deals them out and writes
/// the partitions' files.
fn join<S: Slot>(run: &Run<'_>, lineage: &Lineage, copies: &Copies, ids: &Ids) -> Result<Found> {
    let mut forest = Forest::<S>::new(ids.len());
    let f = &forest;
    par_each_band(
        run,
        copies,
        &run.row_groups(),
        || (),
        |(), units| {
            let mut prev = index(ids, units[0])?;
            for &d in &units[1..] {
                let i = index(ids, d)?;
                f.union(prev, i);
                prev = i;
            }
            Ok(())
        },
    )?;
    // Measured before the copies join: a copy is not bucketed, its unit stands for it. Only
    // bucketed documents are in sets of two or more yet.
    let largest_component = Some(forest.count()).filter(|&s| s >= 2).unwrap_or(0);
    let f = &forest;
    (copies.pairs().par_iter()).try_for_each(|&(c, u)| -> Result<()> {
        f.union(index(ids, u)?, index(ids, c)?);
        Ok(())
    })?;
    let parts = forest.deal(run.plan.parts);
    let dealt = Dealt {
        copies,
        ids,
        parts: &parts,
    };
    let (buckets, (copied, assigned)) = rayon::join(
        || write_buckets(run, lineage, &dealt),
        || {
            rayon::join(
                || write_copies(run, lineage, &dealt),
                || write_assign(run, lineage, &dealt),
            )
        },
    );
    Ok(Found {
        written: [buckets?, copied?, assigned?]
            .into_iter()
            .flatten()
            .collect(),
        components: parts.count,
        largest_component,
    })
}

/// Components' place: it runs once.
const PLACE: Place = Place {
    stage: "components",
    shard: None,
    part: None,
};

/// What the stage reads: the run and its group files.
struct Run<'a> {
    work: &'a Path,
    plan: &'a Plan,
    files: Vec<GroupParts>,
}

impl Run<'_> {
    /// The least id of a new document: 0, or with `--against` the first past the indexed
    /// documents (id shard 0).
    fn first_new(&self) -> i64 {
        self.plan.id_shard(0) << 32
    }

    /// Whether a band bucket of `units` (increasing) is kept, as `scan` keeps them: two or
    /// more, and with an index one of them new (pairs of indexed documents were reported when
    /// they were new).
    fn keeps(&self, units: &[i64]) -> bool {
        units.len() >= 2 && units.last().is_some_and(|&u| u >= self.first_new())
    }

    fn output(&self, lineage: &Lineage, path: PathBuf, place: Place) -> Output {
        Output::new(self.work, path, lineage, place)
    }

    /// Every row group of every group file, the unit of work of the passes that read them in
    /// any order.
    fn row_groups(&self) -> Vec<(usize, usize)> {
        (self.files.iter().enumerate())
            .flat_map(|(f, file)| (0..file.row_groups()).map(move |rg| (f, rg)))
            .collect()
    }
}

/// The components dealt out: the copies, the candidate documents and each one's partition.
struct Dealt<'a, S: Slot> {
    copies: &'a Copies,
    ids: &'a Ids,
    parts: &'a Parts<S>,
}

impl<S: Slot> Dealt<'_, S> {
    fn part_of(&self, doc: i64) -> Result<u32> {
        Ok(self.parts.part(index(self.ids, doc)?))
    }
}

/// Calls `f` with the units of every band bucket that has two or more, the row `groups` of the
/// group files (file, row group) on every thread in any order; `f`'s state (from `init`) is per row group, and
/// what it returns at the end of one is handed back, in no particular order.
fn par_each_band<T: Send>(
    run: &Run<'_>,
    copies: &Copies,
    groups: &[(usize, usize)],
    init: impl Fn() -> T + Sync + Send,
    f: impl Fn(&mut T, &[i64]) -> Result<()> + Sync + Send,
) -> Result<Vec<T>> {
    (groups.par_iter())
        .map(|&(file, rg)| {
            let mut state = init();
            let mut units = Vec::new();
            let mut file = run.files[file].reader(Some(vec![rg]))?;
            while let Some(b) = file.next_bucket()? {
                if b.table != CONTENT_TABLE {
                    copies.units_of(b.docs, &mut units);
                    if run.keeps(&units) {
                        f(&mut state, &units)?;
                    }
                }
            }
            Ok(state)
        })
        .collect()
}

/// The candidate documents (the units of the band buckets that keep two or more, and the
/// members of the byte-identical groups), and the units of the largest band bucket. The row
/// groups are read two per thread at a time, then their documents added to the ids (sorted
/// on every thread as they are merged in).
fn candidates(run: &Run<'_>, copies: &Copies) -> Result<(Ids, u64)> {
    let mut ids = IdsBuilder::default();
    let mut largest = 0;
    let all = run.row_groups();
    let wave = 2 * rayon::current_num_threads();
    for groups in all.chunks(wave) {
        let got = par_each_band(
            run,
            copies,
            groups,
            || (Vec::new(), 0),
            |(docs, largest), units| {
                *largest = (*largest).max(units.len() as u64);
                docs.extend_from_slice(units);
                Ok(())
            },
        )?;
        for (docs, l) in got {
            largest = largest.max(l);
            ids.extend(&docs)?;
        }
    }
    for &(c, u) in copies.pairs() {
        ids.extend(&[c, u])?;
    }
    Ok((ids.finish()?, largest))
}

/// The union-find index of `doc`, which the gathering of candidates saw.
fn index(ids: &Ids, doc: i64) -> Result<u64> {
    ids.index(doc).with_context(|| {
        format!(
            "document {doc} was not in the group files when they were first read: did a group \
             stage run again while stage components ran?"
        )
    })
}

/// What one group-file reader of the merge holds, at most: a record batch and the page being
/// decoded. Each range of the merge reads every file, so its readers are ranges × partitions,
/// kept within an eighth of the memory budget (`--max-memory`): at the default budget of a
/// 24 GB machine, 1,100 readers (2 partitions: every thread; 1,000 partitions: one range).
const READER_BYTES: u64 = 2 << 20;

/// The ranges the merge may run as, at most, by the memory budget (see [`READER_BYTES`]).
fn merge_ranges(plan: &Plan) -> usize {
    let budget = (plan.options.max_memory).unwrap_or_else(crate::budget::default_limit);
    let readers = budget / 8 / READER_BYTES;
    (readers / u64::from(plan.parts.max(1))).max(1) as usize
}

/// Each partition's band buckets, in (table, key) order: the group files merged, each bucket
/// spilled to its partition, then each partition's file written from what was spilled. With
/// T threads the merge runs as up to T ranges of the (table, key) order at once (fewer with
/// many partitions: [`READER_BYTES`]), each over the row groups that hold some of its tables
/// (from the files' statistics; every row group where a file has none), and a partition's
/// buckets are read back range after range: the same buckets in the same order whatever T.
/// The partitions' files are written in parallel.
fn write_buckets<S: Slot>(
    run: &Run<'_>,
    lineage: &Lineage,
    dealt: &Dealt<'_, S>,
) -> Result<Vec<Written>> {
    let (plan, work) = (run.plan, run.work);
    // Beside the outputs on a local disk; in TMPDIR when they go to an object store.
    let spill = match crate::store::is_url(work) {
        true => Spill::new(&std::env::temp_dir())?,
        false => Spill::new(&work.join("components"))?,
    };
    let n = rayon::current_num_threads().min(merge_ranges(plan));
    let ranges = Ranges::new(&run.files, n);
    let n = ranges.len();
    let spilled: Vec<Spilled> = (0..n)
        .into_par_iter()
        .map(|k| {
            let mut out = spill.writer(plan.parts, n);
            let mut units = Vec::new();
            ranges.each(k, |b| {
                dealt.copies.units_of(b.docs, &mut units);
                if run.keeps(&units) {
                    // Every unit of a bucket is in its first's component.
                    out.push(dealt.part_of(units[0])?, b.table, b.key, &units)?;
                }
                Ok(())
            })?;
            Ok(out.finish())
        })
        .collect::<Result<_>>()?;
    (0..plan.parts)
        .into_par_iter()
        .map(|part| {
            let mut spilled = spill.reader(&spilled, part).context("no such partition")?;
            let file = run.output(lineage, part_path(work, part), PLACE.with_part(part));
            let mut out: Sink<BucketRows> = Sink::new(file);
            while let Some(row) = spilled.next_bucket()? {
                out.push(row)?;
            }
            out.commit()
        })
        .collect()
}

/// Each partition's copies, by copy.
fn write_copies<S: Slot>(
    run: &Run<'_>,
    lineage: &Lineage,
    dealt: &Dealt<'_, S>,
) -> Result<Vec<Written>> {
    let mut out: Vec<Sink<CopyRows>> = (0..run.plan.parts)
        .map(|p| {
            let path = copies_path(run.work, p);
            Sink::new(run.output(lineage, path, PLACE.with_part(p)))
        })
        .collect();
    for &(c, u) in dealt.copies.pairs() {
        out[dealt.part_of(c)? as usize].push((c, u))?;
    }
    out.into_iter().map(Sink::commit).collect()
}

/// Where each shard's candidate documents go, the shards in parallel.
fn write_assign<S: Slot>(
    run: &Run<'_>,
    lineage: &Lineage,
    dealt: &Dealt<'_, S>,
) -> Result<Vec<Written>> {
    let (plan, work) = (run.plan, run.work);
    let ids = dealt.ids.as_slice();
    // Each shard's file, and with --against the indexed documents' (id shard 0).
    let mut files: Vec<(PathBuf, Place, i64)> = (0..plan.shards)
        .map(|s| {
            let place = Place::shard("components", s);
            (assign_path(work, s), place, plan.id_shard(s))
        })
        .collect();
    if plan.against.is_some() {
        files.push((assign_index_path(work), PLACE, 0));
    }
    files
        .into_par_iter()
        .map(|(path, file, id_shard)| {
            let (lo, hi) = (id_shard << 32, (id_shard + 1) << 32);
            let (from, to) = (
                ids.partition_point(|&d| d < lo),
                ids.partition_point(|&d| d < hi),
            );
            let mut out: Sink<AssignRows> = Sink::new(run.output(lineage, path, file));
            for (i, &doc) in ids.iter().enumerate().take(to).skip(from) {
                let part = dealt.parts.part(i as u64) as i32;
                out.push((doc, dealt.copies.canon(doc), part))?;
            }
            out.commit()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_wide_only_past_what_u32_numbers() {
        assert!(!Wide::needed(0));
        assert!(!Wide::needed(u32::MAX as usize + 1));
        assert!(Wide::needed(u32::MAX as usize + 2));
    }
}
