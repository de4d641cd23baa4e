//! Who may write a dataset's directory. A scan writes it in one process, after checking it holds
//! no dataset; a staged run writes it from many tasks, long after `stage init` checked it, so
//! init claims it for its run: `DIR/_dupfind_run` (a marker, as Spark's `_SUCCESS` is, skipped
//! by dataset readers and by the walk) names the run and its work directory, created only where
//! none is (on an object store, a conditional PUT). Another run's init, and a scan, are refused
//! a directory that holds it, and `stage dataset` writes only into a directory that names its
//! own run: of two runs given one directory, the second is refused rather than replacing the
//! first's parts. `stage report`, every part written, removes it: the parts refuse the
//! directory to another run from then on.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::input::walk::DATASET_CLAIM;
use crate::messages::display_path;

/// What the marker holds.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    /// The run's id (`run.json`'s `run`).
    run: String,
    /// The run's work directory, as `stage init` was given it.
    work: String,
}

/// Who is about to write the dataset in a directory.
#[derive(Clone, Copy, Debug)]
pub enum Writer<'a> {
    /// A scan, or `stage init` before it claims the directory: it must hold no dataset and be
    /// claimed by no run.
    New,
    /// `stage dataset` of the run with this id: the directory must be claimed by it.
    Run(&'a str),
}

/// Refuses `dir` (a directory or a URL) to `writer` unless it may write the dataset there: the
/// one check of `scan`, `stage init` and `stage dataset`.
pub fn refuse_held(dir: &Path, writer: Writer) -> Result<()> {
    let claim = read(dir)?;
    match (claim, writer) {
        (Some(c), Writer::Run(run)) if c.run == run => Ok(()),
        (Some(c), _) => bail!(
            "--write-dataset: {} is claimed by the staged run {} (work directory {}); nothing \
             was written. Write the dataset to another directory, or remove {} if that run is \
             abandoned",
            display_path(dir),
            c.run,
            c.work,
            display_path(&marker(dir))
        ),
        (None, Writer::Run(_)) => bail!(
            "--write-dataset: {} no longer names this run ({} is gone since `stage init` \
             claimed the directory); nothing was written. Start the run again",
            display_path(dir),
            display_path(&marker(dir))
        ),
        (None, Writer::New) => super::refuse_existing(dir),
    }
}

/// Claims `dir` for the run `run` (work directory `work`), after [`refuse_held`] let it: refused
/// when another run claimed it meanwhile.
pub fn claim(dir: &Path, run: &str, work: &Path) -> Result<()> {
    let path = marker(dir);
    let claim = Claim {
        run: run.to_string(),
        work: display_path(work),
    };
    let pending = crate::atomic::Pending::new(&path)?;
    serde_json::to_writer(pending.file(), &claim)
        .with_context(|| format!("writing {}", display_path(&path)))?;
    if !pending.commit_new()? {
        // Claimed since the check: say by whom.
        refuse_held(dir, Writer::Run(run))?;
    }
    Ok(())
}

/// Ends the claim of the run `run` on `dir`, its dataset whole (`stage report`): the directory
/// then holds the parts alone, as a scan's does (a reader that takes every file of a directory,
/// as polars does, refuses one that is not Parquet), and its parts refuse it to another run. A
/// claim of another run is left.
pub fn release(dir: &Path, run: &str) -> Result<()> {
    if read(dir)?.is_none_or(|c| c.run != run) {
        return Ok(());
    }
    let path = marker(dir);
    let what = || format!("removing {}", display_path(&path));
    if crate::store::is_url(&path) {
        return crate::store::delete(&path.to_string_lossy())
            .map_err(anyhow::Error::msg)
            .with_context(what);
    }
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).with_context(what),
        _ => Ok(()),
    }
}

/// The marker's path in `dir`.
fn marker(dir: &Path) -> PathBuf {
    dir.join(DATASET_CLAIM)
}

/// The claim on `dir`, if any.
fn read(dir: &Path) -> Result<Option<Claim>> {
    let path = marker(dir);
    let what = || format!("reading {}", display_path(&path));
    let bytes = if crate::store::is_url(&path) {
        let mut bytes = Vec::new();
        let found = crate::store::download(&path.to_string_lossy(), &mut bytes)
            .map_err(anyhow::Error::msg)
            .with_context(what)?;
        found.map(|_| bytes)
    } else {
        match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(what),
        }
    };
    let Some(bytes) = bytes else { return Ok(None) };
    let claim = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a staged run's claim", display_path(&path)))?;
    Ok(Some(claim))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn of_two_runs_claiming_one_directory_at_once_the_second_is_refused() {
        // Both checked before either claimed: the claim itself refuses the second.
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ds");
        refuse_held(&dir, Writer::New).unwrap();
        claim(&dir, "aaaa", Path::new("/runs/a")).unwrap();
        let second = claim(&dir, "bbbb", Path::new("/runs/b")).unwrap_err();
        let said = format!("{second:#}");
        assert!(
            said.contains("claimed by the staged run aaaa (work directory /runs/a)"),
            "{said}"
        );
        refuse_held(&dir, Writer::Run("aaaa")).unwrap();
        assert!(refuse_held(&dir, Writer::Run("bbbb")).is_err());
        // Released by its own run alone.
        release(&dir, "bbbb").unwrap();
        assert!(refuse_held(&dir, Writer::New).is_err());
        release(&dir, "aaaa").unwrap();
        refuse_held(&dir, Writer::New).unwrap();
    }
}
