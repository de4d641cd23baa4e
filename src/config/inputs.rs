//! What the command line points at, read or resolved before the scan: a `--files-from` list,
//! the `--include`/`--exclude` globs, the index directory's absolute form.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// `dir` made canonical, or, when it does not exist yet, its parent's canonical form joined
/// with its name.
pub(crate) fn absolute_dir(dir: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(dir) {
        return c;
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), dir.file_name()) {
        (Ok(p), Some(name)) => p.join(name),
        _ => dir.to_path_buf(),
    }
}

/// The inputs named in a `--files-from` list (`-` is standard input): one per line, or
/// NUL-separated with `-0`. Empty entries are skipped; names are taken byte for byte.
pub(super) fn read_list(list: &Path, null: bool) -> Result<Vec<PathBuf>> {
    let shown = || crate::messages::display_path(list);
    if list == Path::new("-") {
        let stdin = std::io::stdin();
        return names(stdin.lock(), null)
            .context("cannot read the --files-from list from standard input");
    }
    let file = std::fs::File::open(list)
        .with_context(|| format!("cannot read the --files-from list {}", shown()))?;
    names(std::io::BufReader::new(file), null)
        .with_context(|| format!("cannot read the --files-from list {}", shown()))
}

/// Longest name a list may hold: far above any path a system accepts (4 KiB on Linux), so that
/// a list that is no list (`/dev/zero`, a binary file) is refused instead of read into memory.
const MAX_NAME: u64 = 64 << 10;

/// The names of a list, read a name at a time.
fn names(mut reader: impl std::io::BufRead, null: bool) -> Result<Vec<PathBuf>> {
    let sep = if null { 0 } else { b'\n' };
    let mut out = Vec::new();
    let mut name = Vec::new();
    for n in 1u64.. {
        name.clear();
        if (&mut reader)
            .take(MAX_NAME + 1)
            .read_until(sep, &mut name)?
            == 0
        {
            break;
        }
        if name.last() == Some(&sep) {
            name.pop();
        } else if name.len() as u64 > MAX_NAME {
            anyhow::bail!(
                "name {n} is longer than {} KiB: is it a list of names (NUL-separated ones \
                 need -0)?",
                MAX_NAME >> 10
            );
        }
        // A list written on Windows ends its lines in CR LF; no sane file name ends in CR.
        if !null && name.last() == Some(&b'\r') {
            name.pop();
        }
        if !name.is_empty() {
            out.push(path_from_bytes(&name));
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// Builds a glob set with the rules of `--include`/`--exclude`: like .gitignore, a pattern
/// without '/' matches a file or directory name at any depth, one with '/' the whole path below
/// the root (a leading '/' is dropped), and '*' never matches '/'.
pub(crate) fn globs(patterns: &[String], flag: &str) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let anchored = match p.strip_prefix('/') {
            Some(rest) => rest.to_string(),
            None if p.contains('/') => p.clone(),
            None => format!("**/{p}"),
        };
        let glob = GlobBuilder::new(&anchored)
            .literal_separator(true)
            .build()
            .with_context(|| format!("{flag} {p:?} is not a valid glob"))?;
        b.add(glob);
    }
    Ok(Some(
        b.build()
            .with_context(|| format!("building {flag} patterns"))?,
    ))
}
