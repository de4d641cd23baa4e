//! Listed walk: a root's tree walked by listing each directory once, then reading only the
//! ignore files its listing holds; near the root, subdirectories are walked in parallel.
//!
//! Used when no links are followed (see [`super::walk::walk`]); otherwise walkdir walks the
//! root ([`Walker::walk_tree`]), as it does a root that cannot be listed (a file). The result is
//! walkdir's: each directory's entries in file-name order (those that failed to be read first),
//! the tree below a directory before its next sibling, the same filters and errors. Hidden and
//! ignored directories are not listed at all (walkdir read each directory it met, then dropped
//! what the filter skipped).
//!
//! With more than one thread (and one root: with several, which may overlap, the walker's
//! `seen` needs them in order), the subdirectories of the top [`PAR_DEPTH`] levels are walked in
//! parallel, each by a walker of its own, their files spliced in at the place of their
//! directory: the same files in the same order, with the directory reading (most of a walk that
//! does not stat) on every thread. Below, and on one thread, a tree is walked with an explicit
//! stack of listings, so its depth is not limited by the call stack.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::input::walk_rules::{Present, Rules, Verdict};
use crate::input::walker::{below_root, entry_name, excluded, Walker};
use crate::messages::io_reason;

/// A directory entry with its type, or the path and error of one that could not be read.
type Listed = Result<(PathBuf, std::fs::FileType), (PathBuf, std::io::Error)>;

/// The levels below the root whose subdirectories are walked in parallel. Splitting the root's
/// first level alone left a tree whose work lies a few levels down (a package registry: one
/// directory at the root, its packages below) on one thread; four levels reach the packages,
/// and bound the recursion of the parallel part.
const PAR_DEPTH: usize = 4;

/// The entries of `dir` in walkdir's order (see `walk_tree`: by name, those that failed first),
/// with their types from the directory listing.
fn list_dir(dir: &Path) -> std::io::Result<Vec<Listed>> {
    let mut entries: Vec<Listed> = std::fs::read_dir(dir)?
        .map(|e| {
            let e = e.map_err(|err| (dir.to_path_buf(), err))?;
            let path = e.path();
            match e.file_type() {
                Ok(ft) => Ok((path, ft)),
                Err(err) => Err((path, err)),
            }
        })
        .collect();
    entries.sort_by(|a, b| match (a, b) {
        (Ok((a, _)), Ok((b, _))) => entry_name(a).cmp(entry_name(b)),
        (Err(_), Err(_)) => Ordering::Equal,
        (Ok(_), Err(_)) => Ordering::Greater,
        (Err(_), Ok(_)) => Ordering::Less,
    });
    Ok(entries)
}

impl Walker<'_> {
    /// Walks one root: by its listings when `listed` and it can be listed (in parallel when
    /// `parallel`), else with walkdir.
    pub(super) fn walk_root(
        &mut self,
        root: &Path,
        canonical_roots: &[PathBuf],
        (listed, parallel): (bool, bool),
        mut rules: Rules,
    ) {
        match listed.then(|| list_dir(root)) {
            Some(Ok(entries)) => self.walk_listed(root, entries, 0, &mut rules, parallel),
            _ => self.walk_tree(root, canonical_roots, rules),
        }
    }

    /// Walks the entries of a directory `depth` levels below `root` (listed in `entries`, its
    /// rules entered) and the trees below them.
    fn walk_listed(
        &mut self,
        root: &Path,
        entries: Vec<Listed>,
        depth: usize,
        rules: &mut Rules,
        parallel: bool,
    ) {
        if parallel && depth < PAR_DEPTH {
            self.walk_split(root, entries, depth, rules);
            return;
        }
        let mut stack = vec![(entries.into_iter(), depth)];
        while let Some((listing, dir_depth)) = stack.last_mut() {
            let depth = *dir_depth + 1;
            let Some(entry) = listing.next() else {
                stack.pop();
                continue;
            };
            if let Some(dir) = self.judge_entry(root, entry, depth, rules) {
                if let Some(entries) = self.open_dir(&dir, depth, rules) {
                    stack.push((entries.into_iter(), depth));
                }
            }
        }
    }

    /// [`Walker::walk_listed`] with the subdirectories walked in parallel, each by a walker of
    /// its own, their files spliced in at the place of their directory.
    fn walk_split(&mut self, root: &Path, entries: Vec<Listed>, depth: usize, rules: &mut Rules) {
        let mut subdirs = Vec::new();
        for entry in entries {
            if let Some(dir) = self.judge_entry(root, entry, depth + 1, rules) {
                subdirs.push((self.pending.len(), dir));
            }
        }
        let rules: &Rules = rules;
        let walked: Vec<Walker> = subdirs
            .par_iter()
            .map(|(_, dir)| {
                let mut sub = Walker::new(self.opts, self.msgs, false);
                let mut rules = rules.clone();
                if let Some(entries) = sub.open_dir(dir, depth + 1, &mut rules) {
                    sub.walk_listed(root, entries, depth + 1, &mut rules, true);
                }
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

    /// One listed entry `depth` levels below the root, judged as walkdir's filter in
    /// `walk_tree` judges it: a file is visited; a directory to enter is given back.
    fn judge_entry(
        &mut self,
        root: &Path,
        entry: Listed,
        depth: usize,
        rules: &mut Rules,
    ) -> Option<PathBuf> {
        let (path, ft) = match entry {
            Ok(entry) => entry,
            Err((path, e)) => {
                self.entry_error(path, io_reason(&e));
                return None;
            }
        };
        let is_dir = ft.is_dir();
        if excluded(self.opts, root, &path, is_dir) {
            return None;
        }
        match rules.judge(below_root(root, &path), depth, is_dir) {
            Verdict::Keep => {}
            Verdict::Hidden => {
                self.out.skipped.hidden += 1;
                return None;
            }
            Verdict::Ignored => {
                self.out.skipped.ignored += 1;
                return None;
            }
        }
        if !is_dir {
            self.visit(root, path, ft, depth);
            return None;
        }
        // A directory at the maximum depth is not entered: nothing below it is walked.
        (self.opts.max_depth)
            .is_none_or(|max| depth < max)
            .then_some(path)
    }

    /// Lists the directory `dir`, `depth` levels below the root, and enters its rules with the
    /// ignore files its listing holds. One that cannot be listed is an error; its rules are
    /// entered all the same (looking for each ignore file), for the warnings walkdir's filter
    /// gave before reading it failed.
    fn open_dir(&mut self, dir: &Path, depth: usize, rules: &mut Rules) -> Option<Vec<Listed>> {
        match list_dir(dir) {
            Ok(entries) => {
                let names = (entries.iter().flatten()).map(|(p, _)| entry_name(p));
                let present = Present::of(names);
                rules.enter_listed(dir, depth, present, self.msgs, &mut self.out.errors);
                Some(entries)
            }
            Err(e) => {
                rules.enter(dir, depth, self.msgs, &mut self.out.errors);
                self.entry_error(dir.to_path_buf(), io_reason(&e));
                None
            }
        }
    }
}
