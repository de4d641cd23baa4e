//! Who may write a dataset's directory. Of two runs given one directory at once, one writes it
//! and the other is refused before writing anything: the writer claims the directory with
//! `DIR/_dupfind_run` (a marker, as Spark's `_SUCCESS` is, skipped by dataset readers and by the
//! walk), created only where none is (on an object store, a conditional PUT). A staged run's
//! `stage init` claims it for the run (its id and work directory), as its tasks write it long
//! after the check, and `stage dataset` writes only into a directory that names its own run;
//! `stage report`, every part written, removes it. A scan claims it (its process id) from its
//! start until its dataset is written, or until it fails or is interrupted. The parts refuse
//! the directory to another run from then on; a run whose claim came after another's ended
//! finds that one's parts, and is refused too.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::input::walk::DATASET_CLAIM;
use crate::interrupt::HeldTemp;
use crate::messages::display_path;

/// What the marker holds.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    /// The run's id (`run.json`'s `run`; a scan's, drawn when it claims).
    run: String,
    /// The run's work directory, as `stage init` was given it (a scan has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    work: String,
    /// A scan's process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scan: Option<u32>,
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
    if !crate::store::is_url(dir) && dir.exists() && !dir.is_dir() {
        bail!(
            "--write-dataset: {} is not a directory; name a directory (made if missing) for the \
             dataset's parts",
            display_path(dir)
        );
    }
    let claim = read(dir)?;
    match (claim, writer) {
        (Some(c), Writer::Run(run)) if c.run == run => Ok(()),
        (
            Some(Claim {
                scan: Some(pid), ..
            }),
            _,
        ) => bail!(
            "--write-dataset: {} is being written by another scan (process {pid}); nothing was \
             written. Write the dataset to another directory, or, if no scan is writing it (a \
             scan that was killed leaves its claim), remove {}",
            display_path(dir),
            display_path(&marker(dir))
        ),
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
        (None, Writer::New) => super::refuse_existing(dir, None),
    }
}

/// Claims `dir` for the staged run `run` (work directory `work`) at `stage init`'s start, where
/// a scan claims it: held as a scan's claim is until init ends, kept for the run's later stages
/// by [`HeldClaim::keep`] with `run.json`'s write.
pub fn claim_run(dir: &Path, run: &str, work: &Path) -> Result<HeldClaim> {
    hold(
        dir,
        Claim {
            run: run.to_string(),
            work: display_path(work),
            scan: None,
        },
    )
}

/// Claims `dir` for a scan, until its dataset is written ([`HeldClaim::release`]).
pub fn claim_scan(dir: &Path) -> Result<HeldClaim> {
    hold(
        dir,
        Claim {
            run: format!("{:016x}", crate::token::fresh_token()),
            work: String::new(),
            scan: Some(std::process::id()),
        },
    )
}

/// A claim on a dataset's directory by a scan or by `stage init`, ended when dropped (the run
/// failed); an interrupt, which ends the process at once, removes the marker as it removes the
/// temporary files being written.
pub struct HeldClaim {
    dir: PathBuf,
    run: String,
    held: Option<HeldTemp>,
    /// The directory was made for the marker: a run that fails leaves none behind.
    made: bool,
}

/// Claims `dir` with `claim`, refused as [`refuse_held`] refuses it (before anything else that
/// could fail: a directory that cannot be made is the error said).
fn hold(dir: &Path, claim: Claim) -> Result<HeldClaim> {
    refuse_held(dir, Writer::New)?;
    let made = !crate::store::is_url(dir) && !dir.exists();
    let held = put(dir, &claim)?;
    Ok(HeldClaim {
        dir: dir.to_path_buf(),
        run: claim.run,
        held,
        made,
    })
}

impl HeldClaim {
    /// Ends the claim, the dataset written.
    pub fn release(mut self) -> Result<()> {
        // Out of the interrupt's hands first: once removed, the marker may be another run's.
        self.held.take();
        release(&self.dir, &self.run)
    }

    /// Runs `last`, the write that starts a staged run (`run.json`), and, if it succeeds,
    /// leaves the claim to the run, which `stage report` ends.
    pub fn keep(mut self, last: impl FnOnce() -> Result<()>) -> Result<()> {
        match &self.held {
            Some(held) => held.keep(last)?,
            None => last()?,
        }
        self.held = None;
        Ok(())
    }
}

impl Drop for HeldClaim {
    fn drop(&mut self) {
        if self.held.take().is_some() {
            // The run's own error is the one said.
            let _ = release(&self.dir, &self.run);
            if self.made {
                // Only if empty: a part written is kept.
                let _ = std::fs::remove_dir(&self.dir);
            }
        }
    }
}

/// Writes `claim`'s marker in `dir` where none is (held for the interrupt), then checks that
/// `dir` holds no dataset: one written by a run whose claim ended between [`refuse_held`] and
/// this one's.
fn put(dir: &Path, claim: &Claim) -> Result<Option<HeldTemp>> {
    let path = marker(dir);
    let pending = crate::atomic::Pending::new(&path)?;
    serde_json::to_writer(pending.file(), claim)
        .with_context(|| format!("writing {}", display_path(&path)))?;
    let held = HeldTemp::commit(&path, || pending.commit_new())?;
    if held.is_none() {
        // Claimed since the check: say by whom.
        refuse_held(dir, Writer::Run(&claim.run))?;
    }
    if let Err(e) = super::refuse_existing(dir, Some(DATASET_CLAIM)) {
        drop(held);
        release(dir, &claim.run)?;
        return Err(e);
    }
    Ok(held)
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
    let Some(bytes) = crate::store::read_whole(&path)? else {
        return Ok(None);
    };
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
        let run = |run: &str, work: &str| Claim {
            run: run.into(),
            work: work.into(),
            scan: None,
        };
        refuse_held(&dir, Writer::New).unwrap();
        let first = put(&dir, &run("aaaa", "/runs/a")).unwrap();
        let second = put(&dir, &run("bbbb", "/runs/b")).err().unwrap();
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
        drop(first);
    }

    #[test]
    fn a_staged_runs_claim_is_kept_once_run_json_is_written_and_ended_if_that_fails() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ds");
        let failed = claim_run(&dir, "aaaa", Path::new("/runs/a")).unwrap();
        assert!(marker(&dir).exists());
        assert!(failed.keep(|| anyhow::bail!("no space left")).is_err());
        // The directory made for the claim goes with it.
        assert!(!dir.exists());
        let kept = claim_run(&dir, "bbbb", Path::new("/runs/b")).unwrap();
        kept.keep(|| Ok(())).unwrap();
        refuse_held(&dir, Writer::Run("bbbb")).unwrap();
        assert!(refuse_held(&dir, Writer::New).is_err());
    }

    #[test]
    fn a_scan_whose_claim_follows_another_runs_finished_dataset_is_refused_and_claims_nothing() {
        // Both checked before either claimed; the first wrote its part and ended its claim
        // before the second claimed.
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ds");
        refuse_held(&dir, Writer::New).unwrap();
        let first = claim_scan(&dir).unwrap();
        assert!(claim_scan(&dir).is_err());
        std::fs::write(dir.join("part-00000.jsonl"), "{}\n").unwrap();
        first.release().unwrap();
        let late = Claim {
            run: "bbbb".into(),
            work: String::new(),
            scan: Some(1),
        };
        let said = format!("{:#}", put(&dir, &late).err().unwrap());
        assert!(said.contains("already holds a dataset"), "{said}");
        assert!(!marker(&dir).exists());
        // Dropped, a claim ends too.
        std::fs::remove_file(dir.join("part-00000.jsonl")).unwrap();
        drop(claim_scan(&dir).unwrap());
        assert!(!marker(&dir).exists());
    }
}
