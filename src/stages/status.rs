//! The state of a run, task by task, from the summaries' lineage (`lineage.rs`): done, missing,
//! invalid (damaged, of another run, in another task's place, made with other options) or
//! stale (made from a summary written again since, or from one that is not done itself). Every
//! task needs exactly the summaries its stage reads. `stage report` refuses a run that is not
//! all done; `stage status` prints the table, and `--todo STAGE` the tasks of one stage to run
//! again, for `run-local.sh --resume`.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};

use super::dataset::{DatasetSummary, PartRec};
use super::files::{self, Listing, Seen};
use super::lineage::{self, Lineage};
use super::plan::Plan;
use super::summary::LineageOnly;
use super::{Summary, Tasks};

/// A task's state.
pub enum State {
    /// Its summary is in place and everything it was made from is current.
    Done(Lineage),
    /// It has not run (what to run).
    Missing(String),
    /// Its summary is damaged, of another run or place, or made with other options (why).
    Invalid(String),
    /// It was made from a summary that changed since or is not done itself (why).
    Stale(String),
}

/// One task of a run.
pub struct Task {
    /// Its stage.
    pub tasks: Tasks,
    /// Its shard or partition (0 for a stage that runs once).
    pub index: u32,
    /// Its state.
    pub state: State,
}

/// The summaries task `i` of `tasks` must have read (work-relative names).
fn needs(work: &Path, plan: &Plan, tasks: Tasks, i: u32) -> Vec<String> {
    let all = |t: Tasks| -> Vec<String> {
        (0..t.count(plan))
            .map(|j| lineage::rel(work, &t.summary(work, j)))
            .collect()
    };
    let one = |t: Tasks, j: u32| vec![lineage::rel(work, &t.summary(work, j))];
    match tasks {
        Tasks::Init => Vec::new(),
        Tasks::Sign => one(Tasks::Init, 0),
        Tasks::Attach => [one(Tasks::Init, 0), all(Tasks::Sign)].concat(),
        Tasks::Group => [all(Tasks::Sign), all(Tasks::Attach)].concat(),
        Tasks::Components => all(Tasks::Group),
        Tasks::Route => [one(Tasks::Components, 0), one(Tasks::Sign, i)].concat(),
        Tasks::Verify => [
            one(Tasks::Components, 0),
            all(Tasks::Route),
            all(Tasks::Attach),
        ]
        .concat(),
        // The dataset is written by the shard's inputs, which init listed: a dump without a
        // document is one, and a Parquet dataset's parts are numbered by them.
        Tasks::Dataset => [one(Tasks::Init, 0), one(Tasks::Sign, i), all(Tasks::Verify)].concat(),
    }
}

/// A summary as `survey` reads it: its lineage and, of `stage dataset`, the parts it wrote.
type Read = (Lineage, Vec<PartRec>);

/// Every task of the run in `work`, in the order the stages run.
/// Every Parquet file a done task wrote is checked against what its summary recorded, so that a
/// damaged or lost file marks its producer to run again (`--todo`, `run-local.sh --resume`)
/// rather than failing each consumer anew: on a local disk it is read whole for its CRC-32; on
/// an object store one listing of the work directory gives every file's size and ETag, compared
/// with those the store gave it when it was written (a file whose summary recorded none, as an
/// earlier build's, is fetched for its CRC-32). The dataset's parts likewise. `stage report`
/// does not (`check`): the stages it follows checked each file they read. Only the tasks of
/// `stages` are surveyed: a task's state depends on its own stage and those before it.
pub fn survey(work: &Path, plan: &Plan, stages: &[Tasks]) -> Result<Vec<Task>> {
    // The dataset's directory, whose parts `stage dataset` recorded as its other files (not
    // from `plan.config()`, which enters init's directory, where a relative --work is not).
    let dataset = plan.dataset_dir().ok().flatten();
    // Every summary first, then the listings: a file the listing shows is then at least as new
    // as the summary that lists it, and one written again since its summary is told changed,
    // as a GET after the summary would tell it.
    let mut read: HashMap<(Tasks, u32), Result<Read>> = HashMap::new();
    for &tasks in stages {
        for i in 0..tasks.count(plan) {
            let summary = match (tasks, &dataset) {
                (Tasks::Dataset, Some(_)) => super::read_task(work, plan, tasks, i)
                    .map(|s: DatasetSummary| (s.lineage, s.parts)),
                _ => lineage_of(work, plan, tasks, i).map(|l| (l, Vec::new())),
            };
            read.insert((tasks, i), summary);
        }
    }
    let listed = files::listing(work)?;
    let parts_listed = match &dataset {
        Some(dir) => files::listing(dir)?,
        None => None,
    };
    let check = |tasks: Tasks, i: u32| {
        let (lineage, parts) = read
            .remove(&(tasks, i))
            .unwrap_or_else(|| Err(anyhow::anyhow!("{} {i} was not read", tasks.name())))?;
        files_intact(work, &lineage, listed.as_ref())?;
        if let Some(dir) = &dataset {
            for part in &parts {
                part.check(dir, true, parts_listed.as_ref())?;
            }
        }
        Ok(lineage)
    };
    // On a store the listing tells a summary missing (a HEAD each otherwise).
    let absent = |path: &Path, rel: &str| match &listed {
        Some(listed) => !listed.has(rel),
        None => is_absent(path),
    };
    Ok(survey_with(work, plan, stages, check, absent))
}

/// True when there is no file at `path` (an error reading it is no proof).
fn is_absent(path: &Path) -> bool {
    !files::exists(path).unwrap_or(true)
}

/// Checks that every file `lineage` lists is in place and as written: as `listed` shows it
/// against the size and ETag recorded for it, else (on a local disk, or without them) read
/// whole against its CRC-32.
fn files_intact(work: &Path, lineage: &Lineage, listed: Option<&Listing>) -> Result<()> {
    for (rel, want) in &lineage.files {
        if let Some(listed) = listed {
            let object = lineage.objects.get(rel);
            let size = object.map(|o| o.size);
            match listed.seen(rel, size, object.map(|o| o.etag.as_str())) {
                Seen::Missing => bail!("{rel}, which it wrote, is missing"),
                Seen::Changed(why) => bail!("{rel}, which it wrote, is damaged: {why}"),
                Seen::Same => continue,
                Seen::Unknown => {}
            }
        }
        let path = work.join(rel);
        let file = match files::open_work_file(&path) {
            Ok(Some(f)) => f,
            Ok(None) => bail!("{rel}, which it wrote, is missing"),
            Err(e) => bail!("{rel}, which it wrote, cannot be read: {e:#}"),
        };
        let got = format!("{:08x}", files::crc_of(file, &path)?);
        if &got != want {
            bail!("{rel}, which it wrote, is damaged: its CRC-32 is {got}, {want} when written");
        }
    }
    Ok(())
}

/// Task `i`'s summary, read for its lineage alone.
fn lineage_of(work: &Path, plan: &Plan, tasks: Tasks, i: u32) -> Result<Lineage> {
    super::read_task::<LineageOnly>(work, plan, tasks, i).map(|s| s.lineage)
}

/// [`survey`], each summary's lineage from `read` (or why it cannot be read); a summary that
/// cannot be read is missing when `absent` says so (given its path and work-relative name).
fn survey_with(
    work: &Path,
    plan: &Plan,
    stages: &[Tasks],
    mut read: impl FnMut(Tasks, u32) -> Result<Lineage>,
    absent: impl Fn(&Path, &str) -> bool,
) -> Vec<Task> {
    // The attempt of each summary that is done; None for one that is not.
    let mut current: HashMap<String, Option<String>> = HashMap::new();
    let mut out = Vec::new();
    for &tasks in stages {
        for i in 0..tasks.count(plan) {
            let path = tasks.summary(work, i);
            let rel = lineage::rel(work, &path);
            let state = match read(tasks, i) {
                Err(_) if absent(&path, &rel) => State::Missing(tasks.missing(plan, i)),
                read => state_of(work, plan, (tasks, i), read, &rel, &current),
            };
            let attempt = match &state {
                State::Done(l) => Some(l.tag.attempt.clone()),
                _ => None,
            };
            current.insert(rel, attempt);
            out.push(Task {
                tasks,
                index: i,
                state,
            });
        }
    }
    out
}

fn state_of(
    work: &Path,
    plan: &Plan,
    (tasks, i): (Tasks, u32),
    read: Result<Lineage>,
    rel: &str,
    current: &HashMap<String, Option<String>>,
) -> State {
    let lineage = match read {
        Ok(l) => l,
        Err(e) => return State::Invalid(format!("{e:#}")),
    };
    let consumed = &lineage.consumed;
    let needed = needs(work, plan, tasks, i);
    for need in &needed {
        let Some(read) = consumed.get(need) else {
            return State::Invalid(format!(
                "{rel} does not say which attempt of {need} it was made from (not written by \
                 this build of a stage?)"
            ));
        };
        match current.get(need) {
            Some(Some(now)) if now == read => {}
            Some(Some(now)) => {
                return State::Stale(format!(
                    "{rel} was made from attempt {read} of {need}, which was written again \
                     since (attempt {now})"
                ))
            }
            _ => {
                return State::Stale(format!(
                    "{rel} was made from {need}, which is missing, damaged or stale now"
                ))
            }
        }
    }
    if consumed.len() != needed.len() {
        return State::Invalid(format!(
            "{rel} was made from summaries its stage does not read"
        ));
    }
    State::Done(lineage)
}

/// Refuses a run whose tasks are not all done, naming the first that is not and what to run.
/// The summaries of `keep` are read whole as they are checked, and returned in order, so that
/// they are read and parsed once.
pub fn check<T: Summary>(work: &Path, plan: &Plan, keep: Tasks) -> Result<Vec<T>> {
    let mut kept = Vec::new();
    let read = |tasks: Tasks, i: u32| {
        if tasks != keep {
            return lineage_of(work, plan, tasks, i);
        }
        let s: T = super::read_task(work, plan, tasks, i)?;
        let lineage = s.lineage().clone();
        kept.push(s);
        Ok(lineage)
    };
    let tasks = survey_with(work, plan, &Tasks::ALL, read, |path, _| is_absent(path));
    for t in tasks {
        let again = |why: &str| {
            format!(
                "{why}: run `{} --work {}` again, then the stages after it (`contrib/staged/\
                 run-local.sh --resume --work {}` runs exactly what is missing or stale)",
                t.tasks.command(plan, t.index),
                crate::messages::display_path(work),
                crate::messages::display_path(work)
            )
        };
        match t.state {
            State::Done(_) => {}
            State::Missing(why) => bail!(
                "{} is missing: {why}",
                crate::messages::display_path(&t.tasks.summary(work, t.index))
            ),
            State::Invalid(why) | State::Stale(why) => bail!("{}", again(&why)),
        }
    }
    Ok(kept)
}

/// Prints the run's state (`stage status`), or with `todo` the tasks of that stage that are
/// not done, one index a line.
pub fn print(
    work: &Path,
    todo: Option<&str>,
    index: &dyn super::against::IndexSide,
    out: &mut impl Write,
) -> Result<()> {
    let plan = Plan::read(work)?;
    if let Some(stage) = todo {
        let Some(which) = Tasks::ALL.iter().position(|t| t.name() == stage) else {
            let names: Vec<&str> = Tasks::ALL.iter().map(|t| t.name()).collect();
            bail!(
                "--todo {stage}: no such stage (the stages are {})",
                names.join(", ")
            );
        };
        // The stages after it are not read: `run-local.sh --resume` asks once a stage.
        let tasks = survey(work, &plan, &Tasks::ALL[..=which])?;
        for t in tasks.iter().filter(|t| t.tasks == Tasks::ALL[which]) {
            if !matches!(t.state, State::Done(_)) {
                writeln!(out, "{}", t.index)?;
            }
        }
        return Ok(());
    }
    let tasks = survey(work, &plan, &Tasks::ALL)?;
    writeln!(
        out,
        "run {}: {} shards, {} partitions",
        plan.run, plan.shards, plan.parts
    )?;
    let mut next = None;
    for stage in Tasks::ALL {
        let mine: Vec<&Task> = tasks.iter().filter(|t| t.tasks == stage).collect();
        if mine.is_empty() {
            continue;
        }
        let done = mine
            .iter()
            .filter(|t| matches!(t.state, State::Done(_)))
            .count();
        writeln!(out, "{:<11} {done} of {} done", stage.name(), mine.len())?;
        for t in &mine {
            let (what, why) = match &t.state {
                State::Done(_) => continue,
                State::Missing(_) => ("missing", None),
                State::Invalid(why) => ("invalid", Some(why)),
                State::Stale(why) => ("stale", Some(why)),
            };
            next.get_or_insert_with(|| t.tasks.command(&plan, t.index));
            match why {
                Some(why) => writeln!(out, "  {}: {what}: {why}", label(t))?,
                None => writeln!(out, "  {}: {what}", label(t))?,
            }
        }
    }
    // With --against: whether the index is still the generation the run compares with.
    let (mut stale, mut reported) = (false, false);
    if let Some(pin) = &plan.against {
        match super::report::committed(work, &plan) {
            Ok(Some(generation)) => {
                reported = true;
                writeln!(
                    out,
                    "index       updated by this run's report: generation {generation}"
                )?
            }
            _ => match index.check(pin) {
                Ok(()) => writeln!(out, "index       generation {}, as at init", pin.generation)?,
                Err(e) => {
                    stale = true;
                    writeln!(out, "index       stale: {e:#}")?;
                }
            },
        }
    }
    match next {
        _ if reported => writeln!(
            out,
            "the report was delivered and its documents added to the index: a new run \
             (`dupfind stage init` in an empty directory) reports again"
        )?,
        _ if stale => writeln!(
            out,
            "next: start a new run (`dupfind stage init` in an empty directory): the index \
             changed since this one's init"
        )?,
        Some(cmd) => writeln!(
            out,
            "next: {cmd} --work {} (or contrib/staged/run-local.sh --resume --work {})",
            crate::messages::display_path(work),
            crate::messages::display_path(work)
        )?,
        None => writeln!(
            out,
            "every task is done: dupfind stage report --work {}",
            crate::messages::display_path(work)
        )?,
    }
    Ok(())
}

fn label(t: &Task) -> String {
    match t.tasks.place(t.index) {
        p if p.shard.is_some() => format!("shard {}", t.index),
        p if p.part.is_some() => format!("partition {}", t.index),
        _ => t.tasks.name().to_string(),
    }
}
