//! The plan of a staged run (`run.json` in the work directory): the scan options every stage
//! runs with, the number of shards and partitions, where each shard's inputs start, the
//! directory the inputs are relative to, and the run's id, which tags every file of the run.
//! Written once by `stage init`; every other stage reads it, so no stage can run with options
//! of its own.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::ScanArgs;
use crate::config::Config;
use crate::messages::display_path;

use super::files;

/// Version of the work directory's layout; a stage refuses any other. 2: every file carries
/// its lineage (`lineage.rs`) and `run.json` its digest. 3: the document table has the
/// `--keep-by` value (`keep_value`), sign summaries what they saw of it, cluster records
/// whether a member is kept.
pub const LAYOUT: u32 = 3;

/// The run's settings.
#[derive(Debug, Serialize, Deserialize)]
pub struct Plan {
    /// [`LAYOUT`].
    pub layout: u32,
    /// A random id, in every file's metadata.
    pub run: String,
    /// The dupfind that wrote the plan; every stage must be the same build of it.
    pub dupfind_version: String,
    /// The hash scheme (stages of another scheme would sign differently).
    pub hashing: u32,
    /// The working directory of `stage init`, whose relative input paths are relative to it
    /// (its bytes, base64).
    pub cwd: String,
    /// Shards the inputs are signed in.
    pub shards: u32,
    /// Partitions of the band keys and of the candidate components.
    pub parts: u32,
    /// Index in the input list where each shard starts, and the list's length last.
    pub shard_starts: Vec<u64>,
    /// The scan options (inputs excluded).
    pub options: ScanArgs,
    /// `--write-dataset`: where the deduplicated dataset goes (its bytes, base64).
    pub dataset: Option<String>,
    /// The roots given to `stage init` (each its bytes, base64), which the report names as
    /// `scan`'s does.
    pub roots: Vec<String>,
    /// `--against`: the index the run compares with, as `stage init` opened it (absent
    /// without one, so the plans of other runs are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<AgainstPlan>,
    /// The digest of everything above (xxh3-128 of its JSON): every work file names the digest
    /// it was made with, so a `run.json` edited after a stage ran is refused, and a file made
    /// with other options is named.
    #[serde(default)]
    pub digest: String,
}

/// The index of a run `--against` one: which index, at which generation, and what to do with it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgainstPlan {
    /// The index directory (its bytes, base64).
    pub dir: String,
    /// The index's identity (32 hex digits): a rebuilt index is another index even at the same
    /// generation.
    pub identity: String,
    /// The generation `stage init` opened; every task that opens the index must find it still.
    pub generation: u64,
    /// `--update`.
    pub update: bool,
    /// `--prune`.
    pub prune: bool,
}

impl Plan {
    /// The plan in `work`, checked against this build.
    pub fn read(work: &Path) -> Result<Plan> {
        let path = work.join("run.json");
        let plan: Plan = files::read_json(&path, "run `dupfind stage init` first")?;
        if plan.layout != LAYOUT {
            bail!(
                "{}: work directory layout {} is not supported (this build uses {LAYOUT})",
                display_path(&path),
                plan.layout
            );
        }
        let here = env!("CARGO_PKG_VERSION");
        if plan.dupfind_version != here || plan.hashing != crate::sketch::shingle::HASH_SCHEME {
            bail!(
                "{} was written by dupfind {} (hash scheme {}); this is dupfind {here} (hash \
                 scheme {}): every stage of a run must be the same build",
                display_path(&path),
                plan.dupfind_version,
                plan.hashing,
                crate::sketch::shingle::HASH_SCHEME
            );
        }
        let digest = plan.compute_digest()?;
        if plan.digest != digest {
            bail!(
                "{} was changed after `stage init` (its contents no longer match its digest): a \
                 run's options cannot change once it has started; start a new run with `dupfind \
                 stage init` in an empty directory",
                display_path(&path)
            );
        }
        let starts = &plan.shard_starts;
        if plan.shards == 0
            || plan.parts == 0
            || starts.len() != plan.shards as usize + 1
            || starts.windows(2).any(|w| w[0] > w[1])
        {
            bail!(
                "{} is damaged (its shards do not add up)",
                display_path(&path)
            );
        }
        Ok(plan)
    }

    /// The digest of the plan's contents (all but the digest itself).
    pub fn compute_digest(&self) -> Result<String> {
        let mut value = serde_json::to_value(self)?;
        if let Some(o) = value.as_object_mut() {
            o.remove("digest");
        }
        let bytes = serde_json::to_vec(&value)?;
        Ok(format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes)))
    }

    /// The configuration every stage runs with, from the stored options. Also moves the
    /// process into `stage init`'s working directory, so that relative input paths open and
    /// print as they did there.
    pub fn config(&self) -> Result<Config> {
        let cwd = path_from_b64(&self.cwd)?;
        // A task on a machine (a pod) without that directory runs where it is when no path
        // of the run is relative to it.
        if let Err(e) = std::env::set_current_dir(&cwd) {
            if !self.opens_anywhere()? {
                return Err(e).with_context(|| {
                    format!(
                        "cannot enter {}, the directory `stage init` ran in, which its relative \
                         paths are relative to: run the task where that directory is, or start \
                         the run with absolute paths or URLs",
                        display_path(&cwd)
                    )
                });
            }
        }
        let options = serde_json::to_value(&self.options)?;
        let args: ScanArgs = serde_json::from_value(options)?;
        let mut cfg = Config::from_args(args)?;
        cfg.dataset = self.dataset.as_deref().map(path_from_b64).transpose()?;
        cfg.against = (self.against.as_ref())
            .map(|a| -> Result<_> {
                Ok(crate::config::IndexUse {
                    dir: path_from_b64(&a.dir)?,
                    update: a.update,
                    create: false,
                    prune: a.prune,
                })
            })
            .transpose()?;
        // Not walked again (the stages read the input list): only the report names them.
        cfg.walk.roots = (self.roots.iter())
            .map(|r| path_from_b64(r))
            .collect::<Result<_>>()?;
        Ok(cfg)
    }

    /// The `--write-dataset` directory, for a task that has not entered `stage init`'s
    /// directory ([`Plan::config`] does): a relative one is taken relative to that directory.
    pub fn dataset_dir(&self) -> Result<Option<PathBuf>> {
        let Some(dir) = self.dataset.as_deref().map(path_from_b64).transpose()? else {
            return Ok(None);
        };
        if dir.is_absolute() || crate::store::is_url(&dir) {
            return Ok(Some(dir));
        }
        Ok(Some(path_from_b64(&self.cwd)?.join(dir)))
    }

    /// True when every path of the run is absolute or a URL (and no `--files-from` list,
    /// whose entries may be relative, named the inputs): it opens the same from any directory.
    fn opens_anywhere(&self) -> Result<bool> {
        let anywhere = |b64: &String| -> Result<bool> {
            let p = path_from_b64(b64)?;
            Ok(p.is_absolute() || crate::store::is_url(&p))
        };
        let paths = (self.roots.iter())
            .chain(&self.dataset)
            .chain(self.against.as_ref().map(|a| &a.dir));
        for p in paths {
            if !anywhere(p)? {
                return Ok(false);
            }
        }
        Ok(self.options.files_from.is_none())
    }

    /// The high half of shard `shard`'s document ids (`id_shard << 32 | position`): the shard
    /// itself, or one more with `--against`, whose indexed documents are numbered first (id
    /// shard 0), in path order, as scan numbers them ahead of the new ones.
    pub fn id_shard(&self, shard: u32) -> i64 {
        i64::from(shard) + i64::from(self.against.is_some())
    }

    /// The shard `shard` (0-based), checked.
    pub fn shard(&self, shard: u32) -> Result<(u64, u64)> {
        if shard >= self.shards {
            bail!(
                "--shard {shard} is out of range: this run has {} shards (0 to {})",
                self.shards,
                self.shards - 1
            );
        }
        let i = shard as usize;
        Ok((self.shard_starts[i], self.shard_starts[i + 1]))
    }

    /// The partition `part` (0-based), checked.
    pub fn part(&self, part: u32) -> Result<u32> {
        if part >= self.parts {
            bail!(
                "--part {part} is out of range: this run has {} partitions (0 to {})",
                self.parts,
                self.parts - 1
            );
        }
        Ok(part)
    }
}

/// A path's exact bytes as base64, and back.
pub fn path_to_b64(p: &Path) -> String {
    use base64::Engine;
    use std::os::unix::ffi::OsStrExt;
    base64::engine::general_purpose::STANDARD.encode(p.as_os_str().as_bytes())
}

/// The path whose bytes `s` holds in base64.
pub fn path_from_b64(s: &str) -> Result<PathBuf> {
    use base64::Engine;
    use std::os::unix::ffi::OsStrExt;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .context("a path in the work directory is damaged")?;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
}
