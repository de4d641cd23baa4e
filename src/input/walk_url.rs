//! A URL root walked: its prefix listed (`crate::store::list`), each key taken apart into the
//! directories above it, and the same filters as a directory's walk applied to the path below
//! the root: `--exclude` (on the file and every directory above it), hidden names, `--include`,
//! `-e`, `--max-depth` and the size limits, and the ignore files below the root (`.ignore`,
//! `.gitignore` and `.git/info/exclude` inside a repository: a prefix holding `.git/`), read
//! where the listing shows them and judged as on disk (`walk_rules`); a root's parents are not
//! listed, so their ignore files are not read.
//!
//! An object is one document (or one dump); it has no inode, so no aliases, and its size and
//! time come from the listing. Its path is its URL: the root's, joined with the key below it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::walk_rules::{Present, Rules, Verdict};
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
    // A staged run's work directory below the root is never an input, as on disk.
    let skipped: Vec<String> = (opts.skip_dirs.iter())
        .filter(|d| crate::store::is_url(d))
        .map(|d| format!("{}/", d.to_string_lossy().trim_end_matches('/')))
        .collect();
    let mut tree = Tree {
        url,
        rules: Rules::new(opts),
        present: presence(&listed),
        entered: Vec::new(),
        dropped: None,
        errors: Vec::new(),
    };
    tree.rules
        .enter_listed(root, 0, tree.present_in(""), msgs, &mut tree.errors);
    for l in &listed {
        if !skipped.is_empty() {
            let url = join(url, &l.below);
            let url = url.to_string_lossy();
            if skipped.iter().any(|s| url.starts_with(s.as_str())) {
                continue;
            }
        }
        match tree.judge(opts, &l.below, msgs) {
            Judged::Keep => {}
            Judged::Left => continue,
            Judged::Hidden => {
                out.skipped.hidden += 1;
                continue;
            }
            Judged::Ignored => {
                out.skipped.ignored += 1;
                continue;
            }
        }
        out.files_seen += 1;
        let path = join(url, &l.below);
        if let Some(reason) = &l.unreadable {
            msgs.warn(&format!("{}: {reason}", display_path(&path)));
            out.errors.push(InputError {
                path,
                line: None,
                error: reason.clone(),
            });
            continue;
        }
        if l.marker && l.size > 0 {
            // Never read: a key ending in `/` names no document (the client cannot even ask
            // for it). Skipped as a disk's walk skips what is no regular file, and said, as
            // its bytes would otherwise be left out unseen.
            out.skipped.not_regular += 1;
            msgs.warn(&format!(
                "{}/: skipped: a folder marker (its key ends in '/'), not a document, though \
                 it holds {}; copy them to a key without the '/' to scan them",
                display_path(&path),
                crate::messages::count(l.size, "byte")
            ));
            continue;
        }
        admit(path, l, opts, msgs, out);
    }
    out.errors.append(&mut tree.errors);
}

/// Which ignore files (and `.git`) each directory below the root holds, from the listing: the
/// rules open only those.
fn presence(listed: &[Listed]) -> HashMap<&str, Present> {
    let mut present: HashMap<&str, Present> = HashMap::new();
    for l in listed {
        let key = l.below.as_str();
        let mut dir_end = 0;
        for (start, name) in components(key) {
            let dir = &key[..dir_end];
            let last = start + name.len() == key.len();
            let entry = || Present::of(std::iter::empty());
            if name.eq_ignore_ascii_case(".git") {
                present.entry(dir).or_insert_with(entry).git_dir = true;
                break;
            }
            if last && name.eq_ignore_ascii_case(".ignore") {
                present.entry(dir).or_insert_with(entry).ignore = true;
            }
            if last && name.eq_ignore_ascii_case(".gitignore") {
                present.entry(dir).or_insert_with(entry).gitignore = true;
            }
            dir_end = start + name.len();
        }
    }
    present
}

/// The `/`-separated names of `key`, each with the byte it starts at.
fn components(key: &str) -> impl Iterator<Item = (usize, &str)> {
    key.split('/')
        .scan(0, |at, name| {
            let start = *at;
            *at += name.len() + 1;
            Some((start, name))
        })
        .filter(|(_, name)| !name.is_empty())
}

/// Where the walk of a listing stands. Keys come in order, so the keys below a directory come
/// together: a directory is judged and entered (its ignore files read) once, at its first key,
/// and a directory left out takes the keys below it along, counted once, as a disk's walk does.
struct Tree<'a> {
    url: &'a str,
    rules: Rules,
    present: HashMap<&'a str, Present>,
    /// The directories entered, by depth (1 first), as paths below the root.
    entered: Vec<&'a str>,
    /// The last directory judged hidden or ignored.
    dropped: Option<&'a str>,
    errors: Vec<InputError>,
}

impl<'a> Tree<'a> {
    fn present_in(&self, dir: &str) -> Present {
        (self.present.get(dir).copied()).unwrap_or_else(|| Present::of(std::iter::empty()))
    }

    /// Judges the key `below` and every directory above it that was not judged before.
    fn judge(&mut self, opts: &WalkOptions, below: &'a str, msgs: &Messages) -> Judged {
        if let Some(d) = self.dropped {
            if below.strip_prefix(d).is_some_and(|r| r.starts_with('/')) {
                return Judged::Left;
            }
        }
        let depth = components(below).count();
        for (i, (start, name)) in components(below).enumerate() {
            // The entry at this depth: past --max-depth it is never seen, as walkdir never
            // yields it.
            if opts.max_depth.is_some_and(|max| i + 1 > max) {
                return Judged::Left;
            }
            let upto = &below[..start + name.len()];
            let is_dir = i + 1 < depth;
            if is_dir && self.entered.get(i) == Some(&upto) {
                continue;
            }
            if opts.exclude.as_ref().is_some_and(|x| x.is_match(upto)) {
                return Judged::Left;
            }
            let verdict = self.rules.judge(Path::new(upto), i + 1, is_dir);
            if verdict != Verdict::Keep {
                self.dropped = is_dir.then_some(upto);
                return match verdict {
                    Verdict::Hidden => Judged::Hidden,
                    _ => Judged::Ignored,
                };
            }
            if is_dir {
                self.entered.truncate(i);
                self.entered.push(upto);
                // A directory at the maximum depth is not entered: its ignore files would
                // judge nothing.
                if opts.max_depth.is_none_or(|max| i + 1 < max) {
                    let dir = join(self.url, upto);
                    let present = self.present_in(upto);
                    (self.rules).enter_listed(&dir, i + 1, present, msgs, &mut self.errors);
                }
            }
        }
        let below = Path::new(below);
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
    /// Hidden: a name starting with '.' (without `--hidden`), or `.git`.
    Hidden,
    /// Matched by an ignore file.
    Ignored,
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
