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
//! Every output is written atomically and carries its lineage (`lineage.rs`): the run, the
//! stage, its shard or partition, the attempt that wrote it and the digest of the run's
//! options. A failed shard or partition is simply run again; a file of another run or attempt,
//! in another task's place, made with other options or damaged, is refused by name; and a
//! summary made from a producer written again since is stale (`stage status` says what to run).

pub(crate) mod against;
mod attach;
pub(crate) mod columns;
mod components;
mod dataset;
pub(crate) mod docs;
pub(crate) mod files;
mod group;
mod init;
pub(crate) mod lineage;
pub(crate) mod plan;
mod records;
pub(crate) mod report;
mod resume;
mod route;
mod sign;
mod status;
mod summary;
mod verify;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::cli::{StageCommand, StageTask};
use crate::exit::ExitCode;
use crate::messages::display_path;

/// Runs one stage.
pub fn run(mut cmd: StageCommand, index: &dyn against::IndexSide) -> Result<ExitCode> {
    match &mut cmd {
        StageCommand::Sign { task, .. }
        | StageCommand::Route { task, .. }
        | StageCommand::Verify { task, .. }
        | StageCommand::Dataset { task, .. } => task.work = seen_from_init_dir(&task.work),
        // components reads the run's options (for --keep-by), which enters init's directory.
        StageCommand::Components { task } => task.work = seen_from_init_dir(&task.work),
        StageCommand::Report { work } => *work = seen_from_init_dir(work),
        _ => {}
    }
    // Ctrl-C ends a task with 130 as it ends a scan, its temporary files removed and its uploads
    // aborted: death by the signal left both (an unfinished upload's parts stay, billed).
    if !matches!(cmd, StageCommand::Status { .. }) {
        crate::interrupt::install();
    }
    match cmd {
        StageCommand::Init(args) => {
            let against = args.against.map(|dir| crate::config::IndexUse {
                dir,
                update: args.update,
                create: false,
                prune: args.prune,
            });
            if args.resume && files::exists(&args.work.join("run.json"))? {
                resume::same_run(
                    &args.work,
                    args.shards,
                    args.parts,
                    args.scan,
                    against.as_ref(),
                )?;
            } else {
                init::init(
                    &args.work,
                    args.shards,
                    args.parts,
                    args.scan,
                    against,
                    index,
                )?;
            }
        }
        StageCommand::Sign { task, shard } => {
            let plan = counted(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, &plan, || {
                sign::sign(&task.work, &plan, shard.0, index)
            })?;
        }
        StageCommand::Group { task, part } => {
            let plan = counted(&task.work, "--part", part.1, |p| p.parts)?;
            in_pool(&task, &plan, || group::group(&task.work, &plan, part.0))?;
        }
        StageCommand::Attach { task } => {
            let plan = plan::Plan::read(&task.work)?;
            in_pool(&task, &plan, || attach::attach(&task.work, &plan, index))?;
        }
        StageCommand::Components { task } => {
            let plan = plan::Plan::read(&task.work)?;
            in_pool(&task, &plan, || components::components(&task.work, &plan))?;
        }
        StageCommand::Route { task, shard } => {
            let plan = counted(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, &plan, || route::route(&task.work, &plan, shard.0))?;
        }
        StageCommand::Verify { task, part } => {
            let plan = counted(&task.work, "--part", part.1, |p| p.parts)?;
            in_pool(&task, &plan, || {
                verify::verify(&task.work, &plan, part.0, index)
            })?;
        }
        StageCommand::Dataset { task, shard } => {
            let plan = counted(&task.work, "--shard", shard.1, |p| p.shards)?;
            in_pool(&task, &plan, || {
                dataset::dataset(&task.work, &plan, shard.0)
            })?;
        }
        StageCommand::Status { work, todo } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            status::print(&work, todo.as_deref(), index, &mut out)?;
            std::io::Write::flush(&mut out)?;
        }
        StageCommand::Report { work } => {
            let (report, code, cfg, commit) = report::report(&work, index)?;
            // Delivered in a pool of the run's threads, as scan's report is: its clusters are
            // rendered by the pool's threads.
            return cfg.pool()?.install(move || match commit {
                Some(commit) => crate::deliver::deliver_then_commit(&report, code, &cfg, commit),
                None => crate::deliver::deliver(&report, code, &cfg),
            });
        }
    }
    Ok(ExitCode::Success)
}

/// `--work` as it must be named once a stage has entered the directory `stage init` ran in
/// ([`plan::Plan::config`]): as given when run from there, else absolute, so that `--work .`
/// inside the work directory still names it. A work directory without a readable plan is left
/// as given, for the stage to say what is wrong with it.
fn seen_from_init_dir(work: &Path) -> PathBuf {
    if work.is_absolute() || crate::store::is_url(work) {
        return work.to_path_buf();
    }
    let init_dir = plan::Plan::read(work)
        .ok()
        .and_then(|p| plan::path_from_b64(&p.cwd).ok());
    match (std::env::current_dir(), init_dir) {
        (Ok(here), Some(there)) if here != there => here.join(work),
        _ => work.to_path_buf(),
    }
}

/// Runs `f` on a pool of the task's `--threads`, else the plan's.
fn in_pool(
    task: &StageTask,
    plan: &plan::Plan,
    f: impl FnOnce() -> Result<()> + Send,
) -> Result<()> {
    let threads = task.threads.or(plan.options.threads).map(|t| t as usize);
    crate::config::pool(threads)?.install(f)
}

/// The plan in `work`, read once for the whole task (on a store each read is a GET), after
/// refusing an `I/N` whose N is not the plan's.
fn counted(work: &Path, flag: &str, n: u32, of: impl Fn(&plan::Plan) -> u32) -> Result<plan::Plan> {
    let plan = plan::Plan::read(work)?;
    if of(&plan) != n {
        bail!(
            "{flag} .../{n}: the run in {} has {} (see its run.json)",
            display_path(work),
            of(&plan)
        );
    }
    Ok(plan)
}

/// A stage's summary file: sealed JSON carrying its lineage.
trait Summary: serde::de::DeserializeOwned {
    fn lineage(&self) -> &lineage::Lineage;
}

macro_rules! summaries {
    ($($t:ty),*) => {$(
        impl Summary for $t {
            fn lineage(&self) -> &lineage::Lineage {
                &self.lineage
            }
        }
    )*};
}

summaries!(
    summary::WalkSummary,
    summary::SignSummary,
    attach::AttachSummary,
    summary::ComponentsSummary,
    summary::LineageOnly,
    group::GroupSummary,
    route::RouteSummary,
    verify::VerifySummary,
    dataset::DatasetSummary,
    report::Committed
);

/// Reads the summary of `place` at `path`, checked against the run, the options of `run.json`
/// and its place; `missing` says what to run when there is none.
fn read_summary<T: Summary>(
    path: &Path,
    missing: &str,
    plan: &plan::Plan,
    place: lineage::Place,
) -> Result<T> {
    let s: T = files::read_summary_json(path, missing)?;
    s.lineage().check(path, &plan.run, &plan.digest, place)?;
    Ok(s)
}

/// Reads the summary of task `i` of `tasks`, checked against its place.
fn read_task<T: Summary>(work: &Path, plan: &plan::Plan, tasks: Tasks, i: u32) -> Result<T> {
    let path = tasks.summary(work, i);
    read_summary(&path, &tasks.missing(plan, i), plan, tasks.place(i))
}

/// [`read_task`] for every task of `tasks`, in order.
fn read_tasks<T: Summary>(work: &Path, plan: &plan::Plan, tasks: Tasks) -> Result<Vec<T>> {
    (0..tasks.count(plan))
        .map(|i| read_task(work, plan, tasks, i))
        .collect()
}

/// [`read_task`] for the attempt `reader`, which records that it read the summary (and which
/// attempt wrote it).
fn consume<T: Summary>(
    work: &Path,
    plan: &plan::Plan,
    reader: &mut lineage::Lineage,
    tasks: Tasks,
    i: u32,
) -> Result<T> {
    let s: T = read_task(work, plan, tasks, i)?;
    reader.read(&lineage::rel(work, &tasks.summary(work, i)), s.lineage());
    Ok(s)
}

/// [`consume`] for every task of `tasks`, in order.
fn consume_all<T: Summary>(
    work: &Path,
    plan: &plan::Plan,
    reader: &mut lineage::Lineage,
    tasks: Tasks,
) -> Result<Vec<T>> {
    (0..tasks.count(plan))
        .map(|i| consume(work, plan, reader, tasks, i))
        .collect()
}

/// The stages, as the tasks whose summaries a run holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Tasks {
    Init,
    Sign,
    Attach,
    Group,
    Components,
    Route,
    Verify,
    Dataset,
}

impl Tasks {
    /// Every stage that leaves a summary, in the order they run.
    const ALL: [Tasks; 8] = [
        Tasks::Init,
        Tasks::Sign,
        Tasks::Attach,
        Tasks::Group,
        Tasks::Components,
        Tasks::Route,
        Tasks::Verify,
        Tasks::Dataset,
    ];

    fn name(self) -> &'static str {
        match self {
            Tasks::Init => "init",
            Tasks::Sign => "sign",
            Tasks::Group => "group",
            Tasks::Attach => "attach",
            Tasks::Components => "components",
            Tasks::Route => "route",
            Tasks::Verify => "verify",
            Tasks::Dataset => "dataset",
        }
    }

    /// By shard (`Some(true)`), by partition (`Some(false)`) or once (`None`).
    fn per_shard(self) -> Option<bool> {
        match self {
            Tasks::Sign | Tasks::Route | Tasks::Dataset => Some(true),
            Tasks::Group | Tasks::Verify => Some(false),
            Tasks::Init | Tasks::Attach | Tasks::Components => None,
        }
    }

    /// How many tasks the stage has in `plan` (none for `dataset` without `--write-dataset`).
    fn count(self, plan: &plan::Plan) -> u32 {
        match self.per_shard() {
            _ if self == Tasks::Dataset && plan.dataset.is_none() => 0,
            _ if self == Tasks::Attach && plan.against.is_none() => 0,
            Some(true) => plan.shards,
            Some(false) => plan.parts,
            None => 1,
        }
    }

    /// Task `i`'s place.
    fn place(self, i: u32) -> lineage::Place {
        match self.per_shard() {
            Some(true) => lineage::Place::shard(self.name(), i),
            Some(false) => lineage::Place::part(self.name(), i),
            None => lineage::Place::once(self.name()),
        }
    }

    /// Task `i`'s summary: the last file it writes.
    fn summary(self, work: &Path, i: u32) -> std::path::PathBuf {
        match self {
            Tasks::Init => init::walk_path(work),
            Tasks::Sign => sign::summary_path(work, i),
            Tasks::Group => group::summary_path_of(work, i),
            Tasks::Attach => attach::summary_path(work),
            Tasks::Components => components::summary_path(work),
            Tasks::Route => route::summary_path(work, i),
            Tasks::Verify => verify::verified_path(work, i),
            Tasks::Dataset => dataset::summary_path(work, i),
        }
    }

    /// The command that runs task `i`.
    fn command(self, plan: &plan::Plan, i: u32) -> String {
        match self.per_shard() {
            Some(true) => format!("dupfind stage {} --shard {i}/{}", self.name(), plan.shards),
            Some(false) => format!("dupfind stage {} --part {i}/{}", self.name(), plan.parts),
            None if self == Tasks::Init => "dupfind stage init".to_string(),
            None => format!("dupfind stage {}", self.name()),
        }
    }

    /// What to run when task `i` left no summary: "shard 3 has not been signed (run `dupfind
    /// stage sign --shard 3/4`)", "partition 1 has not been grouped (…--part 1/2`)".
    fn missing(self, plan: &plan::Plan, i: u32) -> String {
        let done = match self {
            Tasks::Init | Tasks::Attach | Tasks::Components => {
                return format!("run `{}` first", self.command(plan, i));
            }
            Tasks::Dataset => {
                return format!(
                    "shard {i}'s part of the dataset has not been written (run `{}`)",
                    self.command(plan, i)
                );
            }
            Tasks::Sign => "signed",
            Tasks::Group => "grouped",
            Tasks::Route => "routed",
            Tasks::Verify => "verified",
        };
        let noun = if self.per_shard() == Some(true) {
            "shard"
        } else {
            "partition"
        };
        format!(
            "{noun} {i} has not been {done} (run `{}`)",
            self.command(plan, i)
        )
    }
}
