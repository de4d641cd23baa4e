//! `--keep-by FIELD`: what the first pass saw of the field, and the two mistakes refused: a
//! field asked of inputs that have none (files, not dump records; `--text-field` and
//! `--id-field` too), and a field no record has.
//! `scan` checks both; the staged pipeline checks the first in `stage init` and the second in
//! `stage components` (the first task after every shard is signed; `stage report` again), with
//! the same words.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::input::walk::FileEntry;

/// What the first pass saw of the `--keep-by` field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeepSeen {
    /// Dump records read.
    pub records: u64,
    /// Of them, those with a value.
    pub values: u64,
    /// The fields the first dump read has (its first record's, or its columns), for the error
    /// when no record has the field.
    pub hint: Option<String>,
}

impl KeepSeen {
    /// Adds what a later part of the inputs saw (`later`: the next shard's).
    pub fn add(&mut self, later: &KeepSeen) {
        self.records += later.records;
        self.values += later.values;
        if self.hint.is_none() {
            self.hint.clone_from(&later.hint);
        }
    }
}

/// Refuses `--keep-by`, and `--text-field`/`--id-field` given another name than their
/// default, when no input is a dump: files have no fields, so the option would be ignored.
pub fn check_inputs(cfg: &Config, files: &[FileEntry]) -> Result<()> {
    if files.is_empty() || files.iter().any(|f| f.dump) {
        return Ok(());
    }
    const NONE: &str = "the inputs are files, which have no fields;";
    const DUMPS: &str = "of the records of JSON Lines or Parquet dumps";
    if let Some(by) = &cfg.keep_by {
        bail!(
            "--keep-by {}: {NONE} --keep-by compares a field {DUMPS} (for files, --keep chooses \
             by time, size or path)",
            by.name()
        );
    }
    let jsonl = &cfg.jsonl;
    for (option, path, default, what) in [
        (
            "--text-field",
            &jsonl.text_field,
            "text",
            "holding the text",
        ),
        ("--id-field", &jsonl.id_field, "id", "naming the record"),
    ] {
        // Given the default's name, the option restates what applies anyway: not refused.
        if *path != [default] {
            bail!(
                "{option} {}: {NONE} {option} names the field {what} {DUMPS} (a dump is a \
                 *.jsonl, *.ndjson or *.parquet file, or standard input with --jsonl)",
                path.join(".")
            );
        }
    }
    Ok(())
}

/// Refuses `--keep-by` when records were read and none has a value of the field.
pub fn check_seen(cfg: &Config, seen: &KeepSeen) -> Result<()> {
    let Some(by) = &cfg.keep_by else {
        return Ok(());
    };
    if seen.records > 0 && seen.values == 0 {
        let field = crate::messages::escape_controls(&by.field.join("."));
        let mut message = format!(
            "--keep-by {}: no record has a \"{field}\" field with a value to compare (a number, \
             string, boolean, timestamp or date)",
            by.name()
        );
        if let Some(hint) = &seen.hint {
            message.push_str("; ");
            message.push_str(hint);
        }
        bail!(message);
    }
    Ok(())
}
