//! Walk: the roots → a sorted list of regular files, one entry per inode.
//!
//! walkdir keeps its own stack of directories, so depth is not limited by the call stack; a
//! directory that cannot be read (permissions, a path longer than the OS allows) is recorded as
//! an error, never dropped in silence. Entries are visited in file-name order, so the document
//! ids, and the whole report, are the same on every run.
//!
//! Only regular files become documents. FIFOs, sockets and devices are counted and never opened
//! (opening a FIFO would block). Symbolic links are not followed unless `follow_links`; then
//! walkdir detects loops, and a link whose target lies outside every root is skipped, so the
//! walk stays inside the roots. Hard links (and, with `-L`, several links to one file) are one
//! document: the first path in walk order names it, the others are its aliases.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use globset::GlobSet;
use rayon::prelude::*;
use walkdir::WalkDir;

use crate::messages::{display_path, InputError, Messages};

/// What to walk and which files to keep.
#[derive(Clone, Debug, Default)]
pub struct WalkOptions {
    /// Directories or files to scan, in the order given.
    pub roots: Vec<PathBuf>,
    /// Follow symbolic links (`-L`).
    pub follow_links: bool,
    /// Keep only files whose path below the root matches one of these.
    pub include: Option<GlobSet>,
    /// Skip files and directories whose path below the root matches one of these.
    pub exclude: Option<GlobSet>,
    /// Skip files smaller than this many bytes.
    pub min_size: u64,
    /// Skip files larger than this many bytes (JSON Lines dumps excepted: the limit applies to
    /// each of their lines).
    pub max_size: u64,
    /// Which files are JSON Lines dumps.
    pub dumps: DumpNames,
    /// Directories never entered, canonical: the index of `--against` or `index build`.
    pub skip_dirs: Vec<PathBuf>,
    /// Inputs listed by `--files-from`: walked like roots, but one that is missing or of the
    /// wrong type is an input error, not a fatal one.
    pub listed: Vec<PathBuf>,
    /// Leave a plain file's size, inode and time to its read, which takes them from the open
    /// handle anyway, when nothing needs them earlier (no index) and no two paths can name one
    /// file except through hard links (one root, no `-L`). Saves a `stat` per file, the larger
    /// part of walking a tree of small files; hard links are then found when read (see
    /// [`crate::ingest`]).
    pub defer_metadata: bool,
}

/// Which files are read as JSON Lines dumps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DumpNames {
    /// Files named `*.jsonl` or `*.ndjson`, optionally followed by `.gz`, `.zst` or `.zstd`.
    #[default]
    ByName,
    /// Every file (`--jsonl`).
    All,
}

impl DumpNames {
    /// True when `path` is read as a JSON Lines dump.
    pub fn is_dump(self, path: &Path) -> bool {
        if self == DumpNames::All {
            return true;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        // Compared in place, without a lowercase copy: this runs for every file of the walk.
        let stem = [".gz", ".zst", ".zstd"]
            .iter()
            .find_map(|ext| strip_suffix_ignoring_case(name, ext))
            .unwrap_or(name);
        [".jsonl", ".ndjson"]
            .iter()
            .any(|ext| strip_suffix_ignoring_case(stem, ext).is_some())
    }
}

/// `name` without `suffix`, compared ignoring ASCII case, when it ends with it.
fn strip_suffix_ignoring_case<'a>(name: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = name.len().checked_sub(suffix.len())?;
    let (stem, tail) = (name.get(..cut)?, name.get(cut..)?);
    tail.eq_ignore_ascii_case(suffix).then_some(stem)
}

/// One document-to-be: a regular file and the other names of its inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// The first path of this inode in walk order.
    pub path: PathBuf,
    /// Other paths of the same inode (hard links, or links followed with `-L`).
    pub aliases: Vec<PathBuf>,
    /// Size in bytes when walked.
    pub size: u64,
    /// Device and inode number (0 on platforms without them).
    pub id: (u64, u64),
    /// Modification time when walked, if the platform has one.
    pub modified: Option<std::time::SystemTime>,
    /// A JSON Lines dump (many documents), not one document.
    pub dump: bool,
    /// For a document that is one line of a dump: which line, and its id.
    pub record: Option<Box<Record>>,
    /// `size`, `id` and `modified` are not known yet: the walk deferred them to the read
    /// ([`WalkOptions::defer_metadata`]).
    pub deferred: bool,
}

impl FileEntry {
    /// A plain file whose size, id and modification time the read will take.
    fn with_deferred_metadata(path: PathBuf) -> FileEntry {
        FileEntry {
            path,
            aliases: Vec::new(),
            size: 0,
            id: (0, 0),
            modified: None,
            dump: false,
            record: None,
            deferred: true,
        }
    }

    /// An input error about this document (at `line` of a dump, or at its own record's line).
    pub fn error(&self, line: Option<u64>, error: String) -> InputError {
        InputError {
            path: self.path.clone(),
            line: line.or_else(|| self.record.as_ref().map(|r| r.line)),
            error,
        }
    }
}

/// Where in a dump a document is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line number.
    pub line: u64,
    /// The record's id field, when it has one.
    pub id: Option<String>,
    /// The dump's size in bytes (the document's own is `FileEntry::size`).
    pub file_size: u64,
    /// Where the record's JSON lies in the dump (offset, length), when the dump is not
    /// compressed: verification reads it from there again.
    pub at: Option<(u64, u64)>,
}

/// Counts of files the walk saw but did not keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkSkips {
    /// FIFOs, sockets, devices.
    pub not_regular: u64,
    /// Symbolic links not followed (no `-L`).
    pub symlink: u64,
    /// Links followed with `-L` that point outside every root, or into a loop.
    pub outside_roots: u64,
    /// Smaller than `--min-size`.
    pub too_short: u64,
    /// Larger than `--max-size`.
    pub too_large: u64,
}

impl WalkSkips {
    fn add(&mut self, other: WalkSkips) {
        self.not_regular += other.not_regular;
        self.symlink += other.symlink;
        self.outside_roots += other.outside_roots;
        self.too_short += other.too_short;
        self.too_large += other.too_large;
    }
}

/// The walk's result.
#[derive(Debug, Default)]
pub struct Walked {
    /// Regular files in walk order, one per inode.
    pub files: Vec<FileEntry>,
    /// Non-directory entries that passed the include/exclude filters (aliases included).
    pub files_seen: u64,
    /// Entries seen but not kept.
    pub skipped: WalkSkips,
    /// Entries that could not be read.
    pub errors: Vec<InputError>,
}

/// Walks every root. A root that does not exist, or is not a directory or regular file, is a
/// fatal error; problems below a root are recorded in the result.
pub fn walk(opts: &WalkOptions, msgs: &Messages) -> Result<Walked> {
    let mut canonical_roots = Vec::new();
    for root in &opts.roots {
        let meta = std::fs::metadata(root)
            .with_context(|| format!("cannot scan {}", display_path(root)))?;
        check_root_type(root, &meta)?;
        canonical_roots.push(std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()));
    }
    let mut out = Walked::default();
    let mut listed = Vec::new();
    for path in &opts.listed {
        let checked = std::fs::metadata(path)
            .map_err(|e| crate::messages::io_reason(&e))
            .and_then(|meta| check_root_type(path, &meta).map_err(|e| e.to_string()));
        match checked {
            Ok(()) => {
                canonical_roots.push(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()));
                listed.push(path);
            }
            Err(reason) => {
                msgs.warn(&format!("{}: {reason}", display_path(path)));
                out.errors.push(InputError {
                    path: path.clone(),
                    line: None,
                    error: reason,
                });
            }
        }
    }
    let roots: Vec<&PathBuf> = opts.roots.iter().chain(listed).collect();
    let roots_count = roots.len();
    let defer = opts.defer_metadata && !opts.follow_links && roots.len() == 1;
    let mut w = Walker::new(opts, msgs, roots.len() > 1);
    w.out = out;
    // Splitting needs one root (several may overlap) and no links followed (a link into
    // another subdirectory would be walked by two walkers).
    let split = defer && rayon::current_num_threads() > 1;
    for root in roots {
        w.walk_root(root, &canonical_roots, split);
    }
    // One stat per file is most of the walk's time; done in parallel, then admitted in walk
    // order so that which name of an inode comes first does not depend on threads.
    // Documents are numbered in path order (component by component, so a directory's files
    // stay together), whatever the order of the roots; the first path of an inode names it.
    // One root's walk (file-name order, each directory's entries before its next sibling) is
    // that order already; comparing 10,000 paths component by component took 1 ms.
    let several = roots_count > 1;
    let mut pending = std::mem::take(&mut w.pending);
    if several {
        pending.sort_unstable();
    }
    debug_assert!(pending.is_sorted(), "the walk is in path order");
    w.out.files.reserve(pending.len());
    if defer && !pending.par_iter().any(|p| opts.dumps.is_dump(p)) {
        // Built in parallel: at 10k files this loop took 2 ms on one thread, mostly taking
        // each name apart to look for a dump and first touching the entries' pages.
        w.out.files.par_extend(
            pending
                .into_par_iter()
                .map(FileEntry::with_deferred_metadata),
        );
    } else if defer {
        // Only dumps are stat-ed (their size sizes the set cache and goes into their records'
        // reports); there are few, so one at a time. A vector of every file's metadata, mostly
        // empty, would be 160 bytes a file.
        for path in pending {
            if opts.dumps.is_dump(&path) {
                let meta = std::fs::metadata(&path);
                w.admit(path, meta);
                continue;
            }
            w.out.files.push(FileEntry::with_deferred_metadata(path));
        }
    } else {
        let metas: Vec<std::io::Result<std::fs::Metadata>> =
            pending.par_iter().map(std::fs::metadata).collect();
        for (path, meta) in pending.into_iter().zip(metas) {
            w.admit(path, meta);
        }
    }
    if opts.include.is_some() && w.out.files_seen == 0 {
        msgs.warn("--include matched no file below the roots");
    }
    Ok(w.out)
}

/// True when `path` (below `root`) is left out by `--exclude`, or is a directory never entered.
fn excluded(opts: &WalkOptions, root: &Path, path: &Path, is_dir: bool) -> bool {
    if let Some(exclude) = &opts.exclude {
        if exclude.is_match(path.strip_prefix(root).unwrap_or(path)) {
            return true;
        }
    }
    is_dir && is_skipped(&opts.skip_dirs, path)
}

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

/// The name of a walked entry, as bytes: its path after the last separator. For the paths
/// walkdir builds (a directory joined with one entry's name) that is `file_name`, without
/// `Path`'s parsing of components from the end, which took a tenth of the walk when sorting
/// each directory's entries called it for both sides of every comparison.
fn entry_name(path: &Path) -> &[u8] {
    let bytes = path.as_os_str().as_encoded_bytes();
    let start = bytes
        .iter()
        .rposition(|&b| std::path::is_separator(char::from(b)))
        .map_or(0, |i| i + 1);
    &bytes[start..]
}

/// True when `dir` is one of `skip` (compared by name first, so most directories cost no
/// system call).
fn is_skipped(skip: &[PathBuf], dir: &Path) -> bool {
    skip.iter().any(|s| {
        s.file_name() == dir.file_name() && std::fs::canonicalize(dir).is_ok_and(|c| &c == s)
    })
}

fn check_root_type(root: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let ft = meta.file_type();
    if !ft.is_dir() && !ft.is_file() {
        bail!(
            "cannot scan {}: not a directory or regular file (a FIFO, socket or device)",
            display_path(root)
        );
    }
    Ok(())
}

struct Walker<'a> {
    opts: &'a WalkOptions,
    msgs: &'a Messages,
    out: Walked,
    by_inode: HashMap<(u64, u64), usize>,
    /// Regular files found, in walk order, waiting for their metadata.
    pending: Vec<PathBuf>,
    /// With several roots, the paths visited so far: overlapping roots (`x x`, `x x/sub`)
    /// reach one path twice, which is one entry, not an alias of itself.
    seen: Option<HashSet<PathBuf>>,
    /// Inodes skipped as too large, so that their other names are not warned about again.
    too_large: HashSet<(u64, u64)>,
}

impl<'a> Walker<'a> {
    fn new(opts: &'a WalkOptions, msgs: &'a Messages, several_roots: bool) -> Self {
        Walker {
            opts,
            msgs,
            out: Walked::default(),
            by_inode: HashMap::new(),
            pending: Vec::new(),
            seen: several_roots.then(HashSet::new),
            too_large: HashSet::new(),
        }
    }

    /// Walks one root. With `split`, the root's own entries are listed first (by `read_dir`:
    /// walkdir reads a directory's entries as soon as it meets it, even at its maximum depth)
    /// and its subdirectories are then walked in parallel, each by a walker of its own, their
    /// files spliced in at the place of their directory: the same files in the same order, with
    /// the directory reading (most of a walk that does not stat) on every thread.
    fn walk_root(&mut self, root: &Path, canonical_roots: &[PathBuf], split: bool) {
        let Some(entries) = split.then(|| list_dir(root)).flatten() else {
            self.walk_tree(root, root, canonical_roots);
            return;
        };
        let mut subdirs = Vec::new();
        for entry in entries {
            match entry {
                Ok((path, ft)) => {
                    if excluded(self.opts, root, &path, ft.is_dir()) {
                        continue;
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
                sub.walk_tree(dir, root, canonical_roots);
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

    /// Walks `start` (the root or, for a split walk, one of its subdirectories) with the
    /// filters of `root`.
    fn walk_tree(&mut self, start: &Path, root: &Path, canonical_roots: &[PathBuf]) {
        let opts = self.opts;
        let mut outside = 0u64;
        let mut walk = WalkDir::new(start)
            .follow_links(opts.follow_links)
            .sort_by(|a, b| entry_name(a.path()).cmp(entry_name(b.path())));
        if start != root {
            walk = walk.min_depth(1);
        }
        let iter = walk.into_iter().filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            if excluded(opts, root, e.path(), e.file_type().is_dir()) {
                return false;
            }
            if opts.follow_links && e.path_is_symlink() {
                let inside = std::fs::canonicalize(e.path())
                    .map(|t| canonical_roots.iter().any(|r| t.starts_with(r)))
                    .unwrap_or(true);
                if !inside {
                    outside += 1;
                    return false;
                }
            }
            true
        });
        for item in iter {
            match item {
                Ok(entry) => {
                    let (ft, depth) = (entry.file_type(), entry.depth());
                    self.visit(root, entry.into_path(), ft, depth);
                }
                Err(err) => self.walk_error(err),
            }
        }
        self.out.skipped.outside_roots += outside;
    }

    fn walk_error(&mut self, err: walkdir::Error) {
        let path = err.path().map(Path::to_path_buf).unwrap_or_default();
        if err.loop_ancestor().is_some() {
            self.out.skipped.outside_roots += 1;
            self.msgs.warn(&format!(
                "{}: symbolic link loop, not followed",
                display_path(&path)
            ));
            return;
        }
        let reason = err
            .io_error()
            .map(crate::messages::io_reason)
            .unwrap_or_else(|| err.to_string());
        self.entry_error(path, reason);
    }

    /// An entry that could not be read: warned about and recorded.
    fn entry_error(&mut self, path: PathBuf, reason: String) {
        self.msgs
            .warn(&format!("{}: {reason}", display_path(&path)));
        self.out.errors.push(InputError {
            path,
            line: None,
            error: reason,
        });
    }

    /// One entry `depth` levels below the root: a regular file is kept for its metadata.
    fn visit(&mut self, root: &Path, path: PathBuf, mut ft: std::fs::FileType, depth: usize) {
        if depth == 0 && ft.is_symlink() {
            // A root is followed whatever `-L` says: the user named it. walkdir already
            // descends into a linked root directory; a linked root file is read as a file.
            match std::fs::metadata(&path) {
                Ok(meta) => ft = meta.file_type(),
                Err(e) => {
                    self.entry_error(path, crate::messages::io_reason(&e));
                    return;
                }
            }
        }
        if ft.is_dir() {
            return;
        }
        if let Some(include) = &self.opts.include {
            // A file is included when its path, or a directory above it, matches.
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let included = rel.as_os_str().is_empty()
                || rel
                    .ancestors()
                    .any(|a| !a.as_os_str().is_empty() && include.is_match(a));
            if !included {
                return;
            }
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert(path.clone()) {
                return;
            }
        }
        self.out.files_seen += 1;
        if ft.is_symlink() {
            self.out.skipped.symlink += 1;
            return;
        }
        if !ft.is_file() {
            self.out.skipped.not_regular += 1;
            return;
        }
        self.pending.push(path);
    }

    /// Dedups a regular file by inode and applies the size limits.
    fn admit(&mut self, path: PathBuf, meta: std::io::Result<std::fs::Metadata>) {
        let meta = match meta {
            Ok(m) => m,
            Err(e) => {
                let reason = crate::messages::io_reason(&e);
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&path)));
                self.out.errors.push(InputError {
                    path,
                    line: None,
                    error: reason,
                });
                return;
            }
        };
        let id = inode(&meta);
        if id != (0, 0) {
            if let Some(&i) = self.by_inode.get(&id) {
                let first = &mut self.out.files[i];
                if same_entry(&first.path, &path) {
                    // One directory entry reached through two spellings of a root (`x`, `./x`).
                    self.out.files_seen -= 1;
                } else {
                    first.aliases.push(path);
                }
                return;
            }
        }
        let size = meta.len();
        if size < self.opts.min_size {
            self.out.skipped.too_short += 1;
            return;
        }
        let dump = self.opts.dumps.is_dump(&path);
        if size > self.opts.max_size && !dump {
            if id != (0, 0) && !self.too_large.insert(id) {
                return; // another name of a file already skipped and warned about
            }
            self.out.skipped.too_large += 1;
            self.msgs.warn(&format!(
                "{}: skipped, {size} bytes is over --max-size {}",
                display_path(&path),
                self.opts.max_size
            ));
            return;
        }
        if id != (0, 0) {
            self.by_inode.insert(id, self.out.files.len());
        }
        self.out.files.push(FileEntry {
            path,
            aliases: Vec::new(),
            size,
            id,
            modified: meta.modified().ok(),
            dump,
            record: None,
            deferred: false,
        });
    }
}

/// True when two paths are spellings of one path (`x/a`, `./x/a`, `/abs/x/a`): compared
/// lexically after making them absolute, so a link followed with `-L` stays an alias.
fn same_entry(a: &Path, b: &Path) -> bool {
    a.file_name() == b.file_name()
        && lexical_absolute(a).is_some_and(|la| lexical_absolute(b) == Some(la))
}

/// `p` made absolute against the working directory, lexically: `.` dropped, `..` taking back
/// the component before it, no symbolic link resolved and no system call but the working
/// directory's. None when there is no working directory.
pub fn lexical_absolute(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = std::env::current_dir().ok()?;
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            // A root or prefix replaces what was pushed before.
            other => out.push(other),
        }
    }
    Some(out)
}

/// (device, inode) of a file, the identity shared by its hard links.
#[cfg(unix)]
pub fn inode(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// No inode identity on this platform: every path is its own document.
#[cfg(not(unix))]
pub fn inode(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_name_is_its_file_name() {
        for path in ["dir/sub/a.txt", "a.txt", "/a", "dir/.hidden", "x/y z"] {
            let p = Path::new(path);
            assert_eq!(
                entry_name(p),
                p.file_name().map_or(&b""[..], |n| n.as_encoded_bytes()),
                "{path}"
            );
        }
        // Not UTF-8, below a directory whose name holds a backslash (no separator on Unix).
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = Path::new(std::ffi::OsStr::from_bytes(b"d\\xff/caf\xe9"));
            assert_eq!(entry_name(p), b"caf\xe9");
        }
    }

    #[test]
    fn dumps_are_recognised_by_name_or_all_with_jsonl() {
        let by_name = DumpNames::ByName;
        for dump in [
            "a.jsonl",
            "a.ndjson",
            "A.JSONL",
            "x/a.jsonl.gz",
            "a.ndjson.zst",
            "a.jsonl.zstd",
            "b.NDJSON.Gz",
            "é.jsonl",
        ] {
            assert!(by_name.is_dump(Path::new(dump)), "{dump}");
        }
        for plain in [
            "a.json",
            "a.txt",
            "a.jsonl.txt",
            "a.gz",
            "jsonl",
            "a.jsonl.bz2",
            "a.jsonl.gz.txt",
            "é",
            ".gz",
        ] {
            assert!(!by_name.is_dump(Path::new(plain)), "{plain}");
            assert!(DumpNames::All.is_dump(Path::new(plain)), "{plain}");
        }
    }
}
