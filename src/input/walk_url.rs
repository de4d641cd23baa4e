//! A URL root walked: its prefix listed (`crate::store::list`), each key taken apart into the
//! directories above it, and the same filters as a directory's walk applied to the path below
//! the root: `--exclude` (on the file and every directory above it), hidden names, `--include`,
//! `-e`, `--max-depth` and the size limits. Ignore files are not read below a URL root (a
//! listing has no directories to find them in as it goes); `--exclude` does their work.
//!
//! An object is one document (or one dump); it has no inode, so no aliases, and its size and
//! time come from the listing. Its path is its URL: the root's, joined with the key below it.

use std::path::{Path, PathBuf};

use crate::input::walk::{FileEntry, WalkOptions, Walked};
use crate::input::walker::has_extension;
use crate::messages::{display_path, InputError, Messages};
use crate::store::Listed;

/// Walks the URL `root` into `out.files` (its entries in key order).
pub(super) fn walk_url(root: &Path, opts: &WalkOptions, msgs: &Messages, out: &mut Walked) {
    let Some(url) = root.to_str() else {
        return root_error(root, "not a URL: not UTF-8".into(), msgs, out);
    };
    let listed = match crate::store::list(url) {
        Ok(Some(l)) => l,
        Ok(None) => {
            let reason = "no such object, nor objects below it".to_string();
            return root_error(root, reason, msgs, out);
        }
        Err(reason) => return root_error(root, reason, msgs, out),
    };
    let mut hidden_dirs: Vec<&str> = Vec::new();
    for l in &listed {
        let below = Path::new(&l.below);
        match judge(opts, below) {
            Judged::Keep => {}
            Judged::Left => continue,
            Judged::Hidden(top) => {
                // A hidden directory counts once, as the walk of a disk counts it.
                let top = &l.below[..top];
                if hidden_dirs.last() != Some(&top) {
                    hidden_dirs.push(top);
                    out.skipped.hidden += 1;
                }
                continue;
            }
        }
        out.files_seen += 1;
        let path = join(url, &l.below);
        admit(path, l, opts, msgs, out);
    }
}

/// The URL of `below` beneath the root `url`.
fn join(url: &str, below: &str) -> PathBuf {
    if below.is_empty() {
        return PathBuf::from(url);
    }
    let sep = if url.ends_with('/') { "" } else { "/" };
    PathBuf::from(format!("{url}{sep}{below}"))
}

enum Judged {
    Keep,
    /// Excluded, not included, past the depth or without the extension: not counted.
    Left,
    /// Hidden, at the component ending at this byte of the key below the root.
    Hidden(usize),
}

fn judge(opts: &WalkOptions, below: &Path) -> Judged {
    let depth = below.components().count();
    let bytes = below.as_os_str().as_encoded_bytes();
    let name = below.file_name().map(|n| n.as_encoded_bytes());
    if name.is_some_and(super::walk::is_dataset_marker) {
        return Judged::Hidden(bytes.len());
    }
    let mut end = 0;
    for (i, c) in below.components().enumerate() {
        // The entry at this depth: past --max-depth it is never seen, as walkdir never yields it.
        if opts.max_depth.is_some_and(|max| i + 1 > max) {
            return Judged::Left;
        }
        let name = c.as_os_str().as_encoded_bytes();
        end += name.len() + usize::from(i > 0);
        let upto = Path::new(std::str::from_utf8(&bytes[..end]).unwrap_or(""));
        if opts.exclude.as_ref().is_some_and(|x| x.is_match(upto)) {
            return Judged::Left;
        }
        if name == b".git" || (!opts.hidden && name.first() == Some(&b'.')) {
            return Judged::Hidden(end);
        }
    }
    if let Some(include) = &opts.include {
        let included = depth == 0
            || below
                .ancestors()
                .any(|a| !a.as_os_str().is_empty() && include.is_match(a));
        if !included {
            return Judged::Left;
        }
    }
    if depth > 0 && !has_extension(&opts.extensions, below) {
        return Judged::Left;
    }
    Judged::Keep
}

/// An object within the size limits becomes an entry.
fn admit(path: PathBuf, l: &Listed, opts: &WalkOptions, msgs: &Messages, out: &mut Walked) {
    if l.size < opts.min_size {
        out.skipped.too_short += 1;
        return;
    }
    let dump = opts.dumps.is_dump(&path);
    if l.size > opts.max_size && !dump {
        out.skipped.too_large += 1;
        msgs.warn(&format!(
            "{}: skipped, {} bytes is over --max-size {}",
            display_path(&path),
            l.size,
            opts.max_size
        ));
        return;
    }
    out.files.push(FileEntry {
        path,
        aliases: Vec::new(),
        size: l.size,
        id: (0, 0),
        modified: Some(l.modified),
        changed: None,
        dump,
        record: None,
        deferred: false,
    });
}

fn root_error(root: &Path, reason: String, msgs: &Messages, out: &mut Walked) {
    msgs.warn(&format!("{}: {reason}", display_path(root)));
    out.errors.push(InputError {
        path: root.to_path_buf(),
        line: None,
        error: reason,
    });
}
