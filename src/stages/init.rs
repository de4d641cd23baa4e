//! `stage init`: checks the options as `scan` does, walks the inputs once (as `scan` walks them:
//! path order, one entry per inode), and writes the plan, the input list and the walk's counts.
//! Shards are contiguous ranges of the sorted inputs, cut where the bytes are about equal, so
//! the run-wide document ids (shard, then position) are in `scan`'s order.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder,
};
use arrow_array::{
    Array, BinaryArray, BooleanArray, Int32Array, Int64Array, ListArray, RecordBatch,
};

use crate::cli::ScanArgs;
use crate::config::Config;
use crate::input::walk::{walk, FileEntry, Walked};
use crate::messages::display_path;

use super::against::{IndexSide, Recorded};
use super::columns::{arc, batch, column, time_from_parts, time_parts};
use super::files::{self, Input, Output};
use super::lineage::{self, Lineage, Place, Written};
use super::plan::{path_to_b64, AgainstPlan, Plan, LAYOUT};
use super::summary::{ErrorRec, WalkSummary};

/// Inputs per batch of the input list.
const BATCH: usize = 64 * 1024;

/// Init's place: it runs once.
pub const PLACE: Place = Place {
    stage: "init",
    shard: None,
    part: None,
};

/// Starts a run in `work` with `shards` shards and `parts` partitions.
pub fn init(
    work: &Path,
    shards: u32,
    parts: u32,
    args: ScanArgs,
    against: Option<crate::config::IndexUse>,
    index: &dyn IndexSide,
) -> Result<()> {
    if shards == 0 || parts == 0 {
        bail!("--shards and --parts must be at least 1");
    }
    if shards > 1 << 20 || parts > 1 << 20 {
        bail!("--shards and --parts must be at most 1048576");
    }
    let plan_path = work.join("run.json");
    if files::exists(&plan_path)? {
        bail!(
            "{} already holds a run ({} exists); start a new run in an empty directory",
            display_path(work),
            display_path(&plan_path)
        );
    }
    if args.output.is_some() {
        bail!("-o applies to `dupfind scan`; `dupfind stage report` prints the report on stdout");
    }
    // The options as stored (without the inputs), then the config from the whole command line.
    let mut options = stored_options(&args)?;
    let dataset = args.write_dataset.as_deref().map(path_to_b64);
    let mut cfg = Config::from_args(args)?;
    if let Some(index) = against {
        cfg.use_index(index, "--against")?;
    }
    refuse_unsupported(&cfg)?;
    // Every shard must see the same entries, one per inode: the walk stats every file, leaving
    // the size limits where scan's walk would have left them (to the read, which warns in
    // document order). The work directory is never an input, even inside a root.
    cfg.walk.stat_deferred = true;
    if cfg.stdin {
        anyhow::bail!("`-` (standard input) cannot be staged: every stage reads the inputs again");
    }
    let work_dir = match crate::store::is_url(work) {
        true => work.to_path_buf(),
        false => crate::config::inputs::absolute_dir(work),
    };
    cfg.walk.skip_dirs.push(work_dir.clone());
    // Claimed where scan claims it, before the walk: a directory refused, or one that cannot be
    // made, is all that is said, as by scan. Ended if init fails, kept once run.json is written.
    let run = format!("{:016x}", crate::token::fresh_token());
    let claim = (cfg.dataset.as_deref())
        .map(|dir| crate::dataset::claim_run(dir, &run, &work_dir))
        .transpose()?;
    let Walked {
        files,
        files_seen,
        skipped,
        errors,
    } = walk(&cfg.walk, &cfg.messages)?;
    crate::ingest::keep_by::check_inputs(&cfg, &files)?;
    // The dataset's format is chosen here, from every input, so that each shard writes the same.
    if cfg.dataset.is_some() {
        options.dataset_format = Some(match crate::dataset::check_inputs(&cfg, &files)? {
            crate::config::DatasetFormat::Parquet => crate::cli::DatasetFormatArg::Parquet,
            crate::config::DatasetFormat::Jsonl => crate::cli::DatasetFormatArg::Jsonl,
        });
    }
    // With --against: the inputs the index holds unchanged are not signed (scan does not read
    // them either); the index's side of the run is recorded for the stages that open it.
    let (files, joined) = match &cfg.against {
        Some(a) => {
            let mut j = index.join(&cfg, files)?;
            if a.update && j.legacy {
                bail!(
                    "index {} is of format 1, which a staged run does not update: run `dupfind \
                     index upgrade {}` first",
                    display_path(&a.dir),
                    display_path(&a.dir)
                );
            }
            (std::mem::take(&mut j.to_read), Some(j))
        }
        None => (files, None),
    };
    let against = (cfg.against.as_ref())
        .zip(joined.as_ref())
        .map(|(a, j)| AgainstPlan {
            dir: path_to_b64(&a.dir),
            identity: format!("{:032x}", j.identity),
            generation: j.generation,
            update: a.update,
            prune: a.prune,
        });
    let files = &files;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let mut plan = Plan {
        layout: LAYOUT,
        run,
        dupfind_version: env!("CARGO_PKG_VERSION").to_string(),
        hashing: crate::sketch::shingle::HASH_SCHEME,
        cwd: path_to_b64(&cwd),
        shards,
        parts,
        shard_starts: shard_starts(files, shards, cfg.walk.max_size),
        options,
        dataset,
        roots: cfg.walk.roots.iter().map(|r| path_to_b64(r)).collect(),
        against,
        digest: String::new(),
    };
    plan.digest = plan.compute_digest()?;
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, PLACE);
    let out = Output::new(work, inputs_path(work), &lineage, PLACE);
    lineage.wrote(write_inputs(&out, files)?);
    if let Some(j) = &joined {
        let out = Output::new(work, index_path(work), &lineage, PLACE);
        lineage.wrote(write_index_side(&out, &j.recorded)?);
    }
    let summary = WalkSummary {
        lineage,
        files_seen,
        not_regular: skipped.not_regular,
        symlink: skipped.symlink,
        outside_roots: skipped.outside_roots,
        too_short: skipped.too_short,
        too_large: skipped.too_large,
        hidden: skipped.hidden,
        ignored: skipped.ignored,
        errors: errors.iter().map(ErrorRec::from).collect(),
        inputs: files.len() as u64,
        unchanged: joined.as_ref().map_or(0, |j| j.unchanged),
        indexed: joined.as_ref().map_or(0, |j| j.documents),
    };
    files::write_json(&walk_path(work), &summary)?;
    // Last: a directory with run.json holds a complete start, and the run's claim with it (a
    // run that never starts leaves none).
    let start = || files::write_json(&plan_path, &plan);
    match claim {
        Some(claim) => claim.keep(start),
        None => start(),
    }
}

/// The scan options as run.json stores them (without the inputs, and the dataset's format not
/// yet chosen).
pub(super) fn stored_options(args: &ScanArgs) -> Result<ScanArgs> {
    let mut options: ScanArgs = serde_json::from_value(serde_json::to_value(args)?)?;
    // -0 stays for the paths `stage report` prints; the --files-from list is read here.
    options.null &= options.format == Some(crate::cli::Format::Paths);
    Ok(options)
}

/// What the staged pipeline does not do yet, refused before anything is written.
fn refuse_unsupported(cfg: &Config) -> Result<()> {
    if cfg.containment() {
        bail!(
            "--containment is not supported by the staged pipeline (its candidates are gathered \
             per document over every size class); use `dupfind scan`"
        );
    }
    Ok(())
}

/// Where each shard's inputs start (and the end last), a file counted as at most `max_size`
/// (one over it is skipped when read). The shards are runs of the walk order whose largest
/// holds as few bytes as any such cut allows, and none is empty while another holds two files:
/// with fewer inputs than shards, the first shards hold one each and the last are empty.
fn shard_starts(files: &[FileEntry], shards: u32, max_size: u64) -> Vec<u64> {
    let weights: Vec<u128> = files
        .iter()
        .map(|f| u128::from(f.size.clamp(1, max_size.max(1))))
        .collect();
    let (n, k) = (weights.len(), shards.max(1) as usize);
    if n <= k {
        let mut starts: Vec<u64> = (0..=n as u64).collect();
        starts.resize(k + 1, n as u64);
        return starts;
    }
    // The least capacity with which a greedy fill in walk order needs at most k shards: the
    // least largest shard of any cut into runs (a greedy fill is optimal for a given capacity).
    let runs = |cap: u128| {
        let (mut count, mut held) = (1usize, 0u128);
        for &w in &weights {
            if held + w > cap && held > 0 {
                count += 1;
                held = 0;
            }
            held += w;
        }
        count
    };
    let (mut lo, mut hi) = (
        weights.iter().copied().max().unwrap_or(1),
        weights.iter().sum::<u128>(),
    );
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if runs(mid) <= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // Cut where the fill reaches the capacity, and once the files left are as many as the
    // shards left to start, before every file: each then holds at most the largest file.
    let mut starts = vec![0u64];
    let mut held = 0u128;
    for (i, &w) in weights.iter().enumerate() {
        let left_to_start = k.saturating_sub(starts.len());
        if i > 0 && left_to_start > 0 && (held + w > lo || n - i == left_to_start) {
            starts.push(i as u64);
            held = 0;
        }
        held += w;
    }
    starts.push(n as u64);
    starts
}

/// `init/walk.json`, the walk's counts: init's summary, written last but for `run.json`.
pub fn walk_path(work: &Path) -> PathBuf {
    work.join("init").join("walk.json")
}

/// `init/inputs.parquet`, the inputs in walk order.
fn inputs_path(work: &Path) -> PathBuf {
    work.join("init").join("inputs.parquet")
}

/// `init/index.parquet` (with `--against`): what the later stages need of the join with the
/// index: the indexed documents the changed inputs supersede (`seg`, `row`; null `path`) and
/// the walked paths (`path`, as the index keys them; null `seg` and `row`), which exist.
pub fn index_path(work: &Path) -> PathBuf {
    work.join("init").join("index.parquet")
}

fn write_index_side(out: &Output, recorded: &Recorded) -> Result<Written> {
    let superseded = &recorded.superseded;
    let mut walked: Vec<&Vec<u8>> = recorded.walked.iter().collect();
    walked.sort_unstable();
    let (mut seg, mut row) = (Int64Builder::new(), Int64Builder::new());
    let mut path = BinaryBuilder::new();
    for &(s, r) in superseded {
        seg.append_value(i64::from(s));
        row.append_value(i64::from(r));
        path.append_null();
    }
    for p in walked {
        seg.append_null();
        row.append_null();
        path.append_value(p);
    }
    let b = batch(vec![
        ("seg", arc(seg.finish())),
        ("row", arc(row.finish())),
        ("path", arc(path.finish())),
    ])?;
    files::write_parquet(out, b.schema(), &[b])
}

fn write_inputs(out: &Output, files: &[FileEntry]) -> Result<Written> {
    let first = inputs_batch(&files[..0])?;
    let mut w = files::ParquetOut::create(out, first.schema())?;
    for chunk in files.chunks(BATCH) {
        w.write(&inputs_batch(chunk)?)?;
    }
    w.commit()
}

fn inputs_batch(files: &[FileEntry]) -> Result<RecordBatch> {
    use std::os::unix::ffi::OsStrExt;
    let mut paths = BinaryBuilder::new();
    let mut aliases = ListBuilder::new(BinaryBuilder::new());
    let (mut size, mut dev, mut inode, mut secs) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    let mut nanos = Int32Builder::new();
    let (mut changed_secs, mut changed_nanos) = (Int64Builder::new(), Int32Builder::new());
    let mut dump = BooleanBuilder::new();
    for f in files {
        paths.append_value(f.path.as_os_str().as_bytes());
        for a in &f.aliases {
            aliases.values().append_value(a.as_os_str().as_bytes());
        }
        aliases.append(true);
        size.append_value(f.size as i64);
        dev.append_value(f.id.0 as i64);
        inode.append_value(f.id.1 as i64);
        let t = f.modified.map(time_parts);
        secs.append_option(t.map(|t| t.0));
        nanos.append_option(t.map(|t| t.1));
        let c = f.changed.map(time_parts);
        changed_secs.append_option(c.map(|c| c.0));
        changed_nanos.append_option(c.map(|c| c.1));
        dump.append_value(f.dump);
    }
    batch(vec![
        ("path", arc(paths.finish())),
        ("aliases", arc(aliases.finish())),
        ("size", arc(size.finish())),
        ("dev", arc(dev.finish())),
        ("inode", arc(inode.finish())),
        ("modified_secs", arc(secs.finish())),
        ("modified_nanos", arc(nanos.finish())),
        ("changed_secs", arc(changed_secs.finish())),
        ("changed_nanos", arc(changed_nanos.finish())),
        ("dump", arc(dump.finish())),
    ])
}

/// The inputs `[start, end)` of the run's list.
/// The inputs `start..end` of the walk, for the attempt `reader` (which records that it read
/// the walk's summary).
pub fn read_inputs(
    work: &Path,
    plan: &Plan,
    reader: &mut Lineage,
    start: u64,
    end: u64,
) -> Result<Vec<FileEntry>> {
    use std::os::unix::ffi::OsStrExt;
    let walk = walk_path(work);
    let summary: WalkSummary =
        super::read_summary(&walk, "run `dupfind stage init` first", plan, PLACE)?;
    reader.read(&lineage::rel(work, &walk), &summary.lineage);
    let path = inputs_path(work);
    let input = Input::new(work, path.clone(), &summary.lineage, PLACE);
    let mut out = Vec::new();
    let mut at = 0u64;
    for b in files::read_parquet(&input, "run `dupfind stage init` first")? {
        let b = b?;
        let n = b.num_rows() as u64;
        if at + n <= start || at >= end {
            at += n;
            continue;
        }
        let damaged = || format!("{} is damaged", display_path(&path));
        let paths = column::<BinaryArray>(&b, "path").with_context(damaged)?;
        let aliases = column::<ListArray>(&b, "aliases").with_context(damaged)?;
        let size = column::<Int64Array>(&b, "size").with_context(damaged)?;
        let dev = column::<Int64Array>(&b, "dev").with_context(damaged)?;
        let inode = column::<Int64Array>(&b, "inode").with_context(damaged)?;
        let secs = column::<Int64Array>(&b, "modified_secs").with_context(damaged)?;
        let nanos = column::<Int32Array>(&b, "modified_nanos").with_context(damaged)?;
        let changed_secs = column::<Int64Array>(&b, "changed_secs").with_context(damaged)?;
        let changed_nanos = column::<Int32Array>(&b, "changed_nanos").with_context(damaged)?;
        let dump = column::<BooleanArray>(&b, "dump").with_context(damaged)?;
        let path_of = |v: &[u8]| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(v));
        for k in 0..b.num_rows() {
            let i = at + k as u64;
            if i < start || i >= end {
                continue;
            }
            let list = aliases.value(k);
            let list = (list.as_any().downcast_ref::<BinaryArray>()).with_context(damaged)?;
            out.push(FileEntry {
                path: path_of(paths.value(k)),
                aliases: (0..list.len()).map(|j| path_of(list.value(j))).collect(),
                size: size.value(k) as u64,
                id: (dev.value(k) as u64, inode.value(k) as u64),
                modified: (!secs.is_null(k))
                    .then(|| time_from_parts(secs.value(k), nanos.value(k)))
                    .flatten(),
                changed: (!changed_secs.is_null(k))
                    .then(|| time_from_parts(changed_secs.value(k), changed_nanos.value(k)))
                    .flatten(),
                dump: dump.value(k),
                record: None,
                deferred: false,
            });
        }
        at += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sizes: &[u64]) -> Vec<FileEntry> {
        sizes
            .iter()
            .map(|&size| FileEntry {
                path: "x".into(),
                aliases: Vec::new(),
                size,
                id: (0, 0),
                modified: None,
                changed: None,
                dump: false,
                record: None,
                deferred: false,
            })
            .collect()
    }

    #[test]
    fn shards_cut_the_inputs_at_about_equal_bytes() {
        assert_eq!(shard_starts(&files(&[10; 8]), 4, u64::MAX), [0, 2, 4, 6, 8]);
        // One large dump takes a shard of its own.
        assert_eq!(
            shard_starts(&files(&[100, 1, 1, 1, 1]), 2, u64::MAX),
            [0, 1, 5]
        );
        // Fewer inputs than shards: the last shards are empty.
        assert_eq!(shard_starts(&files(&[5, 5]), 4, u64::MAX), [0, 1, 2, 2, 2]);
        // As many inputs as shards, of similar sizes: one each (cut at equal bytes, 8 files
        // over 8 shards left three shards empty and three with two files).
        assert_eq!(
            shard_starts(&files(&[90, 110, 95, 105, 100, 98, 102, 100]), 8, u64::MAX),
            [0, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        // The largest shard is the least any cut into runs gives: 1000 | 600 400 | 500 500.
        assert_eq!(
            shard_starts(&files(&[1000, 600, 400, 500, 500]), 3, u64::MAX),
            [0, 1, 3, 5]
        );
        assert_eq!(shard_starts(&files(&[]), 3, u64::MAX), [0, 0, 0, 0]);
        assert_eq!(shard_starts(&files(&[7; 5]), 1, u64::MAX), [0, 5]);
        // A file over --max-size (skipped when read) weighs what --max-size allows: it no
        // longer takes a shard of its own.
        assert_eq!(
            shard_starts(&files(&[1000, 10, 10]), 2, u64::MAX),
            [0, 1, 3]
        );
        assert_eq!(shard_starts(&files(&[1000, 10, 10]), 2, 10), [0, 2, 3]);
    }

    /// The least largest shard over every cut of `w` into `k` non-empty runs.
    fn best(w: &[u64], k: usize) -> u64 {
        if k == 1 {
            return w.iter().sum();
        }
        (1..=w.len() + 1 - k)
            .map(|cut| w[..cut].iter().sum::<u64>().max(best(&w[cut..], k - 1)))
            .min()
            .unwrap_or(0)
    }

    #[test]
    fn no_shard_is_empty_while_another_holds_two_and_the_largest_is_the_least_possible() {
        let mut state = 7u64;
        for case in 0..400 {
            let n = 1 + case % 9;
            let k = 1 + (case / 9) % 5;
            let w: Vec<u64> = (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    1 + (state >> 33) % 1000
                })
                .collect();
            let starts = shard_starts(&files(&w), k as u32, u64::MAX);
            assert_eq!(starts.len(), k + 1, "{w:?} {k}: {starts:?}");
            assert!(starts.windows(2).all(|p| p[0] <= p[1]), "{starts:?}");
            assert_eq!((starts[0], starts[k]), (0, n as u64));
            let sizes: Vec<u64> = starts
                .windows(2)
                .map(|p| w[p[0] as usize..p[1] as usize].iter().sum())
                .collect();
            let empty = starts.windows(2).filter(|p| p[0] == p[1]).count();
            assert_eq!(empty, k.saturating_sub(n), "{w:?} {k}: {starts:?}");
            let largest = sizes.iter().copied().max().unwrap_or(0);
            assert_eq!(largest, best(&w, k.min(n)), "{w:?} {k}: {starts:?}");
        }
    }
}
