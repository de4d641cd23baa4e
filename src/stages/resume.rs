//! `stage init --resume` on a work directory that holds a run: the run is left as it is when it
//! is the one these arguments would start (the same shards, partitions, scan options, inputs
//! and index), and refused naming what differs otherwise, so that a run resumed with other
//! options never reports those it was started with as if they were the ones asked for.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::cli::ScanArgs;
use crate::config::{Config, IndexUse};
use crate::messages::display_path;

use super::plan::{path_from_b64, path_to_b64, Plan};

/// Checks that the run in `work` is the one `stage init` would start with these arguments.
pub fn same_run(
    work: &Path,
    shards: u32,
    parts: u32,
    args: ScanArgs,
    against: Option<&IndexUse>,
) -> Result<()> {
    let plan = Plan::read(work)?;
    let mut differs = Vec::new();
    let mut differ = |what: &str, here: String, there: String| {
        if here != there {
            differs.push(format!("{what} {here} here, {there} in the run"));
        }
    };
    differ("--shards", shards.to_string(), plan.shards.to_string());
    differ("--parts", parts.to_string(), plan.parts.to_string());
    let mut options = super::init::stored_options(&args)?;
    // Init chooses it from the inputs when it is not given.
    if options.dataset_format.is_none() {
        options.dataset_format = plan.options.dataset_format;
    }
    let (Value::Object(here), Value::Object(there)) = (
        serde_json::to_value(&options)?,
        serde_json::to_value(&plan.options)?,
    ) else {
        bail!("scan options are not a JSON object");
    };
    for (name, value) in &here {
        let was = there.get(name).unwrap_or(&Value::Null);
        if value != was && !same_effect(&there, name, value) {
            differ(
                &format!("--{}", name.replace('_', "-")),
                shown(value),
                shown(was),
            );
        }
    }
    let asked = against.map(|a| (path_to_b64(&a.dir), a.update, a.prune));
    let was = (plan.against.as_ref()).map(|a| (a.dir.clone(), a.update, a.prune));
    if asked != was {
        let show = |index: Option<(String, bool, bool)>| -> Result<String> {
            let Some((dir, update, prune)) = index else {
                return Ok("none".to_string());
            };
            let dir = display_path(&path_from_b64(&dir)?).to_string();
            let update = if update { " --update" } else { "" };
            Ok(format!(
                "{dir}{update}{}",
                if prune { " --prune" } else { "" }
            ))
        };
        differ("--against", show(asked)?, show(was)?);
    }
    // The inputs, relative ones taken from the directory each command ran in.
    let cfg = Config::from_args(args)?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let then = path_from_b64(&plan.cwd)?;
    let roots: Vec<PathBuf> = (cfg.walk.roots.iter()).map(|r| rooted(&cwd, r)).collect();
    let run_roots = (plan.roots.iter())
        .map(|r| Ok(rooted(&then, &path_from_b64(r)?)))
        .collect::<Result<Vec<_>>>()?;
    if roots != run_roots {
        differ("the inputs", listed(&roots), listed(&run_roots));
    }
    if !differs.is_empty() {
        bail!(
            "{} holds a run started otherwise: {}. Resume it with its own settings (give no \
             options or inputs: they are in its run.json), or start a new run in another \
             directory",
            display_path(work),
            differs.join("; ")
        );
    }
    Ok(())
}

/// True when the run's options (`there`) with `name` set to `value` make the same scan: a
/// default given (`-t 0.8`) or left out is the same run.
fn same_effect(there: &serde_json::Map<String, Value>, name: &str, value: &Value) -> bool {
    let config = |options: serde_json::Map<String, Value>| {
        let args: ScanArgs = serde_json::from_value(Value::Object(options)).ok()?;
        Config::from_args(args).ok().map(|c| format!("{c:?}"))
    };
    let mut with = there.clone();
    with.insert(name.to_string(), value.clone());
    let (a, b) = (config(there.clone()), config(with));
    a.is_some() && a == b
}

/// An option's value as a message shows it.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "the default".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `root` from `cwd` when it is relative.
fn rooted(cwd: &Path, root: &Path) -> PathBuf {
    if crate::store::is_url(root) || root.is_absolute() {
        root.to_path_buf()
    } else {
        cwd.join(root)
    }
}

fn listed(roots: &[PathBuf]) -> String {
    let names: Vec<String> = roots.iter().map(|r| display_path(r).to_string()).collect();
    names.join(" ")
}
