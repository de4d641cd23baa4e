//! Split walk: one root's subdirectories walked in parallel, each by a walker of its own.
//!
//! Used when the walk has one root, follows no links and has more than one thread (see
//! [`super::walk::walk`]); otherwise a root is walked by one walker. The split changes
//! nothing in the result, only which thread reads which directory. Only the root's first level
//! is split: what each subdirectory holds is walked as usual ([`Walker::walk_tree`]).

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::input::walk_rules::{Rules, Verdict};
use crate::input::walker::{below_root, entry_name, excluded, Walker};

/// A directory entry with its type, or the path and error of one that could not be read.
type Listed = Result<(PathBuf, std::fs::FileType), (PathBuf, std::io::Error)>;

/// The entries of `dir` in file-name order, as walkdir visits them, with their types from the
/// directory listing; `None` when `dir` cannot be listed (the walk then reports it).
fn list_dir(dir: &Path) -> Option<Vec<Listed>> {
    let mut entries: Vec<Listed> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| {
            let e = e.map_err(|err| (dir.to_path_buf(), err))?;
            let path = e.path();
            match e.file_type() {
                Ok(ft) => Ok((path, ft)),
                Err(err) => Err((path, err)),
            }
        })
        .collect();
    // The same key as walkdir's sort in `walk_tree`: a split walk must list the root's
    // entries in the order an unsplit one does.
    fn name(e: &Listed) -> &[u8] {
        match e {
            Ok((p, _)) | Err((p, _)) => entry_name(p),
        }
    }
    entries.sort_by(|a, b| name(a).cmp(name(b)));
    Some(entries)
}

impl Walker<'_> {
    /// Walks one root. With `split`, the root's own entries are listed first (by `read_dir`:
    /// walkdir reads a directory's entries as soon as it meets it, even at its maximum depth)
    /// and its subdirectories are then walked in parallel, each by a walker of its own, their
    /// files spliced in at the place of their directory: the same files in the same order, with
    /// the directory reading (most of a walk that does not stat) on every thread.
    pub(super) fn walk_root(
        &mut self,
        root: &Path,
        canonical_roots: &[PathBuf],
        split: bool,
        mut rules: Rules,
    ) {
        let Some(entries) = split.then(|| list_dir(root)).flatten() else {
            self.walk_tree(root, root, canonical_roots, rules);
            return;
        };
        let mut subdirs = Vec::new();
        for entry in entries {
            match entry {
                Ok((path, ft)) => {
                    if excluded(self.opts, root, &path, ft.is_dir()) {
                        continue;
                    }
                    match rules.judge(below_root(root, &path), 1, ft.is_dir()) {
                        Verdict::Keep => {}
                        Verdict::Hidden => {
                            self.out.skipped.hidden += 1;
                            continue;
                        }
                        Verdict::Ignored => {
                            self.out.skipped.ignored += 1;
                            continue;
                        }
                    }
                    if ft.is_dir() {
                        subdirs.push((self.pending.len(), path));
                    } else {
                        self.visit(root, path, ft, 1);
                    }
                }
                Err((path, e)) => self.entry_error(path, crate::messages::io_reason(&e)),
            }
        }
        let walked: Vec<Walker> = subdirs
            .par_iter()
            .map(|(_, dir)| {
                let mut sub = Walker::new(self.opts, self.msgs, false);
                let mut rules = rules.clone();
                rules.enter(dir, 1, self.msgs, &mut sub.out.errors);
                sub.walk_tree(dir, root, canonical_roots, rules);
                sub
            })
            .collect();
        let own = std::mem::take(&mut self.pending);
        let total = own.len() + walked.iter().map(|w| w.pending.len()).sum::<usize>();
        let mut own = own.into_iter();
        let mut taken = 0;
        self.pending.reserve(total);
        for ((at, _), sub) in subdirs.iter().zip(walked) {
            self.pending.extend(own.by_ref().take(at - taken));
            taken = *at;
            self.pending.extend(sub.pending);
            self.out.skipped.add(sub.out.skipped);
            self.out.files_seen += sub.out.files_seen;
            self.out.errors.extend(sub.out.errors);
        }
        self.pending.extend(own);
    }
}
