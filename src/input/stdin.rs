//! `-` as an input: standard input, one document (or with `--jsonl`, one dump).
//!
//! Standard input can be read only once, and a document is read twice (signed, then verified)
//! and a dump's records may be streamed again, so it is copied first to a temporary file in
//! `TMPDIR`, deleted when the scan ends. A document's copy stops one byte past `--max-size` (it
//! is then skipped as too large); a dump is copied whole, as a dump file on disk is read whole.
//! It is reported as `-`, and comes before every other input. Everything that opens an input
//! by its path opens the copy for `-` through [`resolve`]; it is sniffed for compression as any
//! file is.

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::input::walk::{inode, FileEntry, WalkOptions, WalkSkips};
use crate::messages::{display_path, Messages};

/// How standard input is named, on the command line and in reports.
pub const NAME: &str = "-";

/// The copy of standard input, while a scan holds one.
static COPY: Mutex<Option<PathBuf>> = Mutex::new(None);

/// True when `path` means standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == NAME
}

/// Where to open `path`: the copy of standard input for `-`, else `path` itself.
pub fn resolve(path: &Path) -> Cow<'_, Path> {
    if is_stdin(path) {
        if let Some(copy) = COPY.lock().ok().and_then(|c| c.clone()) {
            return Cow::Owned(copy);
        }
    }
    Cow::Borrowed(path)
}

/// Standard input copied to a temporary file; deleted when dropped.
pub struct Captured {
    _file: tempfile::TempPath,
    meta: std::fs::Metadata,
}

impl Drop for Captured {
    fn drop(&mut self) {
        if let Ok(mut copy) = COPY.lock() {
            *copy = None;
        }
    }
}

/// Copies standard input when `-` is among the inputs (`stdin`).
pub fn capture(stdin: bool, opts: &WalkOptions) -> Result<Option<Captured>> {
    if !stdin {
        return Ok(None);
    }
    let dump = opts.dumps.is_dump(Path::new(NAME));
    let limit = if dump {
        u64::MAX
    } else {
        opts.max_size.saturating_add(1)
    };
    let mut file = tempfile::Builder::new()
        .prefix("dupfind-stdin-")
        .tempfile()
        .context("cannot create a temporary file for standard input")?;
    std::io::copy(&mut std::io::stdin().lock().take(limit), file.as_file_mut())
        .context("cannot read standard input")?;
    let meta = file
        .as_file()
        .metadata()
        .context("cannot read standard input's copy")?;
    let path = file.into_temp_path();
    if let Ok(mut copy) = COPY.lock() {
        *copy = Some(path.to_path_buf());
    }
    Ok(Some(Captured { _file: path, meta }))
}

impl Captured {
    /// Puts standard input first among the walk's `files`, within the size limits as the walk
    /// applies them.
    pub fn admit(
        &self,
        opts: &WalkOptions,
        msgs: &Messages,
        files: &mut Vec<FileEntry>,
        files_seen: &mut u64,
        skipped: &mut WalkSkips,
    ) {
        *files_seen += 1;
        let path = PathBuf::from(NAME);
        let size = self.meta.len();
        let dump = opts.dumps.is_dump(&path);
        if size < opts.min_size {
            skipped.too_short += 1;
            return;
        }
        if size > opts.max_size && !dump {
            skipped.too_large += 1;
            msgs.warn(&format!(
                "{}: skipped, more than --max-size {} bytes",
                display_path(&path),
                opts.max_size
            ));
            return;
        }
        files.insert(
            0,
            FileEntry {
                path,
                aliases: Vec::new(),
                size,
                id: inode(&self.meta),
                modified: self.meta.modified().ok(),
                changed: crate::input::read::changed(&self.meta),
                dump,
                record: None,
                deferred: false,
            },
        );
    }
}
