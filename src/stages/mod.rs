//! The staged pipeline: `scan`'s stages as separate processes over files in a work directory,
//! so that job arrays and Spark can run them on many machines, with the same report as `scan`
//! (docs/staged.md has the file contract):
//!
//! ```text
//! init                       options checked, inputs walked once, the run planned
//! sign       per shard       documents + their band keys, by key partition
//! group      per partition   the shuffle: buckets of two or more documents
//! components once            byte-identical groups, candidate components, dealt to partitions
//! route      per shard       each candidate, with its content, to its partition
//! verify     per partition   scan's verify, cluster and records on the partition
//! report     once            the counts added up, the clusters in order: scan's report
//! ```
//!
//! Every output is written atomically and tagged with the run's id, so a failed shard or
//! partition is simply run again, and a file of another run is refused by name.

pub(crate) mod columns;
mod components;
mod dataset;
pub(crate) mod docs;
pub(crate) mod files;
mod group;
mod init;
mod plan;
mod records;
mod report;
mod route;
mod sign;
mod summary;
mod verify;

use std::path::Path;

use anyhow::{bail, Result};

use crate::cli::{StageCommand, StageTask};
use crate::exit::ExitCode;
use crate::messages::display_path;

/// Runs one stage.
pub fn run(cmd: StageCommand) -> Result<ExitCode> {
    match cmd {
        StageCommand::Init(args) => {
            init::init(&args.work, args.shards, args.parts, args.scan)?;
        }
        StageCommand::Sign { task, shard } => {
            check_count(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, || sign::sign(&task.work, shard.0))?;
        }
        StageCommand::Group { task, part } => {
            check_count(&task.work, "--part", part.1, |p| p.parts)?;
            in_pool(&task, || group::group(&task.work, part.0))?;
        }
        StageCommand::Components { task } => {
            in_pool(&task, || components::components(&task.work))?;
        }
        StageCommand::Route { task, shard } => {
            check_count(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, || route::route(&task.work, shard.0))?;
        }
        StageCommand::Verify { task, part } => {
            check_count(&task.work, "--part", part.1, |p| p.parts)?;
            in_pool(&task, || verify::verify(&task.work, part.0))?;
        }
        StageCommand::Dataset { task, shard } => {
            check_count(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, || dataset::dataset(&task.work, shard.0))?;
        }
        StageCommand::Report { work } => {
            crate::interrupt::install();
            let (report, code, cfg) = report::report(&work)?;
            return crate::deliver::deliver(&report, code, &cfg);
        }
    }
    Ok(ExitCode::Success)
}

/// Runs `f` on a pool of the task's `--threads`, else the plan's.
fn in_pool(task: &StageTask, f: impl FnOnce() -> Result<()> + Send) -> Result<()> {
    let threads = match task.threads {
        Some(t) => t as usize,
        None => plan::Plan::read(&task.work)?
            .options
            .threads
            .map_or(0, |t| t as usize),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?
        .install(f)
}

/// Refuses an `I/N` whose N is not the plan's.
fn check_count(work: &Path, flag: &str, n: u32, of: impl Fn(&plan::Plan) -> u32) -> Result<()> {
    let plan = plan::Plan::read(work)?;
    if of(&plan) != n {
        bail!(
            "{flag} .../{n}: the run in {} has {} (see its run.json)",
            display_path(work),
            of(&plan)
        );
    }
    Ok(())
}

/// A stage's summary file: JSON naming the run it belongs to.
trait Summary: serde::de::DeserializeOwned {
    fn run(&self) -> &str;
}

macro_rules! summaries {
    ($($t:ty),*) => {$(
        impl Summary for $t {
            fn run(&self) -> &str {
                &self.run
            }
        }
    )*};
}

summaries!(
    summary::WalkSummary,
    summary::SignSummary,
    summary::ComponentsSummary,
    group::GroupSummary,
    route::RouteSummary,
    verify::VerifySummary,
    dataset::DatasetSummary
);

/// Reads the summary at `path`, refusing one of another run; `missing` says what to run when
/// there is none.
fn read_summary<T: Summary>(path: &Path, missing: &str, plan: &plan::Plan) -> Result<T> {
    let s: T = files::read_json(path, missing)?;
    if s.run() != plan.run {
        bail!(
            "{} belongs to another run (run {}; this work directory's run is {}); run that \
             stage again",
            display_path(path),
            s.run(),
            plan.run
        );
    }
    Ok(s)
}

/// The tasks of a stage: one per shard, or one per partition.
#[derive(Clone, Copy)]
enum Task {
    Shard,
    Part,
}

/// What to run when task `i` of `n` of `stage` left no summary: "shard 3 has not been signed
/// (run `dupfind stage sign --shard 3/4`)", "partition 1 has not been grouped (…--part 1/2`)".
fn not_run(task: Task, i: u32, n: u32, done: &str, stage: &str) -> String {
    let (noun, flag) = match task {
        Task::Shard => ("shard", "shard"),
        Task::Part => ("partition", "part"),
    };
    format!("{noun} {i} has not been {done} (run `dupfind stage {stage} --{flag} {i}/{n}`)")
}
