//! What is checked before a scan reads anything, so that a dataset that cannot be written is
//! refused at once rather than after the scan: the output directory holds no dataset yet, the
//! format (`--dataset-format`, or its default from the inputs) fits them, and no input already
//! has a column `--annotate` adds.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{annotate, layout};
use crate::config::{Config, DatasetFormat};
use crate::input::jsonl::JsonlOptions;
use crate::input::parquet::{self, ParquetDump};
use crate::input::walk::FileEntry;
use crate::messages::display_path;

/// Refuses `dir` when it holds a dataset already (a `part-*.jsonl` or `part-*.parquet` file, in
/// it or in its hive partition directories, where Parquet parts go): nothing of it is
/// overwritten. A prefix holds one when it holds any object but the claim `but`.
pub fn refuse_existing(dir: &Path, but: Option<&str>) -> Result<()> {
    if crate::store::is_url(dir) {
        let url = dir.to_string_lossy();
        let held = crate::store::check_writable(&url, false, but)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("--write-dataset: listing {url}"))?;
        if held {
            bail!(
                "--write-dataset: {url} already holds objects; nothing was written. Remove \
                 them, or write the dataset to another prefix"
            );
        }
        return Ok(());
    }
    // The directories to look in, partitions found on the way added.
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(at) = dirs.pop() {
        let entries = match std::fs::read_dir(&at) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", display_path(&at))),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", display_path(&at)))?;
            let name = entry.file_name();
            if layout::is_partition(&name) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path());
                continue;
            }
            let name = name.to_string_lossy();
            if name.starts_with("part-") && (name.ends_with(".jsonl") || name.ends_with(".parquet"))
            {
                let held = entry.path();
                let held = held.strip_prefix(dir).unwrap_or(&held);
                bail!(
                    "--write-dataset: {} already holds a dataset ({}); nothing was written. \
                     Remove it, or write the dataset to another directory",
                    display_path(dir),
                    display_path(held)
                );
            }
        }
    }
    Ok(())
}

/// The dataset's format for `files` (the walk's inputs), checked against them:
/// `--dataset-format`, else Parquet when every input is a Parquet dump and JSON Lines
/// otherwise. Parquet refuses JSON Lines dumps (their records have no schema); `--annotate`
/// refuses a Parquet dump with a column of an added name, and files when the prefix makes
/// `path` or `text` one.
pub fn check_inputs(cfg: &Config, files: &[FileEntry]) -> Result<DatasetFormat> {
    let prefix = cfg.annotate.as_deref();
    let mut all_parquet = !files.is_empty();
    for f in files {
        let kind = kind(f, &cfg.jsonl, prefix)?;
        all_parquet &= matches!(kind, Kind::Parquet | Kind::Unreadable);
        if kind == Kind::Jsonl && cfg.dataset_format == Some(DatasetFormat::Parquet) {
            bail!(
                "--dataset-format parquet: {} is a JSON Lines dump, whose records have no schema \
                 to keep; write the dataset as JSON Lines (--dataset-format jsonl)",
                display_path(&f.path)
            );
        }
        // Once the format is known and nothing is left to check, the rest are not opened.
        if prefix.is_none() && !all_parquet && cfg.dataset_format != Some(DatasetFormat::Parquet) {
            break;
        }
    }
    let format = cfg.dataset_format.unwrap_or(if all_parquet {
        DatasetFormat::Parquet
    } else {
        DatasetFormat::Jsonl
    });
    if let (Some(prefix), DatasetFormat::Parquet) = (prefix, format) {
        refuse_partition_clash(files, prefix)?;
    }
    Ok(format)
}

/// Refuses an input in a hive partition directory (`key=value`, where a Parquet dataset's part
/// goes too) whose key is the name of a column `--annotate` adds: a reader told the layout is
/// hive adds that column as well, and cannot read the dataset.
fn refuse_partition_clash(files: &[FileEntry], prefix: &str) -> Result<()> {
    let mut last = None;
    for f in files {
        let dirs = layout::partition(&f.path);
        if last.as_ref() == Some(&dirs) {
            continue;
        }
        let keys = dirs
            .iter()
            .filter_map(|d| d.to_str()?.split_once('=').map(|kv| kv.0));
        if let Some(name) = annotate::clash(prefix, keys) {
            bail!(
                "--annotate: {} is in a hive partition directory {name}=…, which a reader adds \
                 as a column \"{name}\", one --annotate adds; choose another prefix for the \
                 added columns with --annotate-prefix",
                display_path(&f.path)
            );
        }
        last = Some(dirs);
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Jsonl,
    Parquet,
    /// A dump that cannot be opened now: the scan says why (and it takes no part in the
    /// default format).
    Unreadable,
}

/// What `f` is, and with `--annotate` (`prefix`) whether its columns clash with the added ones.
fn kind(f: &FileEntry, jsonl: &JsonlOptions, prefix: Option<&str>) -> Result<Kind> {
    if !f.dump {
        if let Some(name) =
            prefix.and_then(|p| annotate::clash(p, ["path", "text", "path_bytes"].into_iter()))
        {
            bail!("{}", annotate::clash_message("a file's record", name));
        }
        return Ok(Kind::File);
    }
    let Ok(file) = crate::input::source::Source::open(&f.path, f.size) else {
        return Ok(Kind::Unreadable);
    };
    if !parquet::starts_with_magic(&file).unwrap_or(false) {
        return Ok(Kind::Jsonl);
    }
    let Some(prefix) = prefix else {
        return Ok(Kind::Parquet);
    };
    // Only the footer is read.
    let Ok(dump) = ParquetDump::open(file, jsonl) else {
        return Ok(Kind::Unreadable);
    };
    let schema = dump.schema();
    if let Some(name) = super::input_clash(&schema, prefix) {
        bail!("{}", annotate::clash_message(&display_path(&f.path), name));
    }
    Ok(Kind::Parquet)
}
