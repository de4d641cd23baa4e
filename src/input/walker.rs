//! Walker: one tree below a root → its regular files in walk order → admitted, one entry per
//! inode, within the size limits.
//!
//! A walker visits the entries walkdir yields (filtered by `--exclude`, `--include` and the
//! directories never entered), counts what it does not keep, and records what cannot be read.
//! The files it keeps wait in walk order for their metadata, which [`super::walk::walk`] takes
//! in parallel and hands back to [`Walker::admit`]. It does not check the roots; a root walked
//! by its listings rather than by walkdir is walked in `walk_split.rs`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::input::walk::{inode, lexical_absolute, FileEntry, WalkOptions, Walked};
use crate::input::walk_rules::{Rules, Verdict};
use crate::messages::{display_path, InputError, Messages};

/// True when `path` (below `root`) is left out by `--exclude`, or is a directory never entered.
pub(super) fn excluded(opts: &WalkOptions, root: &Path, path: &Path, is_dir: bool) -> bool {
    if let Some(exclude) = &opts.exclude {
        if exclude.is_match(below_root(root, path)) {
            return true;
        }
    }
    is_dir && is_skipped(&opts.skip_dirs, path)
}

/// `path` relative to `root` (`path` itself when it is not below it). The walk makes its paths
/// by joining entry names to the root, so the bytes after the root's and a separator are that
/// path: found so, not by `Path::strip_prefix`, which takes both paths apart component by
/// component and so took a fifth of the walk's time, judging every entry by the ignore rules.
pub(super) fn below_root<'p>(root: &Path, path: &'p Path) -> &'p Path {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let root = root.as_os_str().as_bytes();
        let rest = path.as_os_str().as_bytes().strip_prefix(root);
        let tail = match rest {
            Some([b'/', tail @ ..]) => Some(tail),
            Some(tail) if root.ends_with(b"/") => Some(tail),
            _ => None,
        };
        // A tail starting with a separator is left to `strip_prefix`, which skips it.
        if let Some(tail) = tail.filter(|t| t.first() != Some(&b'/')) {
            return Path::new(std::ffi::OsStr::from_bytes(tail));
        }
    }
    path.strip_prefix(root).unwrap_or(path)
}

/// The name of a walked entry, as bytes: its path after the last separator. For the paths
/// walkdir builds (a directory joined with one entry's name) that is `file_name`, without
/// `Path`'s parsing of components from the end, which took a tenth of the walk when sorting
/// each directory's entries called it for both sides of every comparison.
pub(super) fn entry_name(path: &Path) -> &[u8] {
    let bytes = path.as_os_str().as_encoded_bytes();
    let start = bytes
        .iter()
        .rposition(|&b| std::path::is_separator(char::from(b)))
        .map_or(0, |i| i + 1);
    &bytes[start..]
}

/// Names `-e` also matches with one of these after the extension: files dupfind decompresses.
const COMPRESSED: [&str; 6] = ["gz", "zst", "zstd", "bz2", "xz", "lz4"];

/// True when no extension is asked for, or the name of `path` ends in `.EXT` for one of
/// `extensions` (lowercase, without the dot), ignoring ASCII case, possibly followed by one
/// compression suffix (`-e txt` keeps `a.txt.gz`, which is read as its text).
pub(super) fn has_extension(extensions: &[String], path: &Path) -> bool {
    if extensions.is_empty() {
        return true;
    }
    let name = entry_name(path);
    let ends_with = |name: &[u8], ext: &[u8]| {
        name.len() > ext.len() + 1
            && name[name.len() - ext.len() - 1] == b'.'
            && name[name.len() - ext.len()..].eq_ignore_ascii_case(ext)
    };
    let stem = COMPRESSED
        .iter()
        .find(|c| ends_with(name, c.as_bytes()))
        .map(|c| &name[..name.len() - c.len() - 1]);
    extensions.iter().any(|ext| {
        ends_with(name, ext.as_bytes()) || stem.is_some_and(|s| ends_with(s, ext.as_bytes()))
    })
}

/// True when `dir` is one of `skip` (compared by name first, so most directories cost no
/// system call).
fn is_skipped(skip: &[PathBuf], dir: &Path) -> bool {
    skip.iter().any(|s| {
        s.file_name() == dir.file_name() && std::fs::canonicalize(dir).is_ok_and(|c| &c == s)
    })
}

/// One walker's state: what it found and what it admitted so far.
pub(super) struct Walker<'a> {
    pub(super) opts: &'a WalkOptions,
    pub(super) msgs: &'a Messages,
    pub(super) out: Walked,
    by_inode: HashMap<(u64, u64), usize>,
    /// Regular files found, in walk order, waiting for their metadata.
    pub(super) pending: Vec<PathBuf>,
    /// With several roots, the paths visited so far: overlapping roots (`x x`, `x x/sub`)
    /// reach one path twice, which is one entry, not an alias of itself.
    seen: Option<HashSet<PathBuf>>,
    /// Inodes skipped as too large, so that their other names are not warned about again.
    too_large: HashSet<(u64, u64)>,
}

impl<'a> Walker<'a> {
    pub(super) fn new(opts: &'a WalkOptions, msgs: &'a Messages, several_roots: bool) -> Self {
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

    /// Walks `root` with walkdir; `rules` has entered it and every directory above it.
    pub(super) fn walk_tree(&mut self, root: &Path, canonical_roots: &[PathBuf], mut rules: Rules) {
        let opts = self.opts;
        let msgs = self.msgs;
        let (mut outside, mut hidden, mut ignored) = (0u64, 0u64, 0u64);
        let mut errors = Vec::new();
        let mut walk = WalkDir::new(root)
            .follow_links(opts.follow_links)
            .sort_by(|a, b| entry_name(a.path()).cmp(entry_name(b.path())));
        if let Some(max) = opts.max_depth {
            walk = walk.max_depth(max);
        }
        let iter = walk.into_iter().filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            let is_dir = e.file_type().is_dir();
            if excluded(opts, root, e.path(), is_dir) {
                return false;
            }
            let depth = e.depth();
            match rules.judge(below_root(root, e.path()), depth, is_dir) {
                Verdict::Keep => {}
                Verdict::Hidden => {
                    hidden += 1;
                    return false;
                }
                Verdict::Ignored => {
                    ignored += 1;
                    return false;
                }
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
            // A directory at the maximum depth is not entered: its ignore files would judge nothing.
            if is_dir && opts.max_depth.is_none_or(|max| depth < max) {
                rules.enter(e.path(), depth, msgs, &mut errors);
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
        self.out.skipped.hidden += hidden;
        self.out.skipped.ignored += ignored;
        self.out.errors.extend(errors);
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
    pub(super) fn entry_error(&mut self, path: PathBuf, reason: String) {
        self.msgs
            .warn(&format!("{}: {reason}", display_path(&path)));
        self.out.errors.push(InputError {
            path,
            line: None,
            error: reason,
        });
    }

    /// One entry `depth` levels below the root: a regular file is kept for its metadata.
    pub(super) fn visit(
        &mut self,
        root: &Path,
        path: PathBuf,
        mut ft: std::fs::FileType,
        depth: usize,
    ) {
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
            let rel = below_root(root, &path);
            let included = rel.as_os_str().is_empty()
                || rel
                    .ancestors()
                    .any(|a| !a.as_os_str().is_empty() && include.is_match(a));
            if !included {
                return;
            }
        }
        if depth > 0 && !has_extension(&self.opts.extensions, &path) {
            return;
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
    pub(super) fn admit(&mut self, path: PathBuf, meta: std::io::Result<std::fs::Metadata>) {
        self.admit_sized(path, meta.map(|m| Meta::from(&m)), true);
    }

    /// [`Walker::admit`], applying the size limits only when `sized` (else the read does).
    pub(super) fn admit_sized(&mut self, path: PathBuf, meta: std::io::Result<Meta>, sized: bool) {
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
        let id = meta.id;
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
        let size = meta.size;
        if sized && size < self.opts.min_size {
            self.out.skipped.too_short += 1;
            return;
        }
        let dump = self.opts.dumps.is_dump(&path);
        if sized && size > self.opts.max_size && !dump {
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
            modified: meta.modified,
            changed: meta.changed,
            dump,
            record: None,
            deferred: false,
        });
    }
}

/// What the walk keeps of a file's status.
#[derive(Debug, PartialEq)]
pub(super) struct Meta {
    size: u64,
    id: (u64, u64),
    modified: Option<std::time::SystemTime>,
    changed: Option<std::time::SystemTime>,
}

impl From<&std::fs::Metadata> for Meta {
    fn from(meta: &std::fs::Metadata) -> Meta {
        Meta {
            size: meta.len(),
            id: inode(meta),
            modified: meta.modified().ok(),
            changed: crate::input::read::changed(meta),
        }
    }
}

/// Files of one directory stated from one opening of it, at most: a directory of a million
/// files is still stated on every thread.
const STAT_RUN: usize = 1024;

/// Paths this long or longer are stated whole, as before: one whose directory is shorter than
/// the system's limit but which is not would be stated from its directory, and fail only when
/// read (1024 is macOS's limit, Linux's is 4096).
const LONG_PATH: usize = 1024;

/// The status of each of `paths` (links followed), as `std::fs::metadata` gives it, in order:
/// each directory's files looked up from the directory, opened once, rather than each path
/// from the root again, which took a third of the system time of a walk that stats every file
/// (`stage init`, 100,000 files four levels below `/`). Runs of files of one directory, as the
/// walk lists them, are stated in parallel.
pub(super) fn stat_all(paths: &[PathBuf]) -> Vec<std::io::Result<Meta>> {
    use rayon::prelude::*;
    let mut runs: Vec<&[PathBuf]> = Vec::new();
    let mut rest = paths;
    while let Some(first) = rest.first() {
        let dir = dir_of(first);
        let n = (rest.iter().take(STAT_RUN))
            .take_while(|p| dir_of(p) == dir)
            .count();
        let (run, tail) = rest.split_at(n);
        runs.push(run);
        rest = tail;
    }
    runs.par_iter().flat_map_iter(|run| stat_run(run)).collect()
}

/// The bytes of `path` before its entry name: its directory, with the separator.
fn dir_of(path: &Path) -> &[u8] {
    let bytes = path.as_os_str().as_encoded_bytes();
    &bytes[..bytes.len() - entry_name(path).len()]
}

/// `std::fs::metadata` of `path`, as the walk keeps it.
fn stat_path(path: &Path) -> std::io::Result<Meta> {
    std::fs::metadata(path).map(|m| Meta::from(&m))
}

/// [`stat_all`] of files of one directory.
#[cfg(unix)]
fn stat_run(run: &[PathBuf]) -> Vec<std::io::Result<Meta>> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let Some(first) = run.first() else {
        return Vec::new();
    };
    let dir = match dir_of(first) {
        b"" => &b"."[..],
        dir => dir,
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
        // The directory's error is each file's to report, as its own stat reports it.
        return run.iter().map(|p| stat_path(p)).collect();
    };
    run.iter()
        .map(|p| match entry_name(p) {
            _ if p.as_os_str().len() >= LONG_PATH => stat_path(p),
            b"" | b"." | b".." => stat_path(p),
            name => rustix::fs::statat(&fd, name, AtFlags::empty())
                .map(|st| meta_of(&st))
                .map_err(std::io::Error::from),
        })
        .collect()
}

#[cfg(not(unix))]
fn stat_run(run: &[PathBuf]) -> Vec<std::io::Result<Meta>> {
    run.iter().map(|p| stat_path(p)).collect()
}

/// [`Meta`] of a status, its fields as `std::fs::Metadata` and [`crate::input::read::changed`]
/// give them.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
fn meta_of(st: &rustix::fs::Stat) -> Meta {
    use crate::input::read::time_of;
    // A modification time whose nanoseconds are out of range is none (`Metadata::modified`
    // fails); a status change time's carry into its seconds (`read::changed`).
    let mtime_nsec = st.st_mtime_nsec as i64;
    let modified = (0..1_000_000_000)
        .contains(&mtime_nsec)
        .then(|| time_of(st.st_mtime as i64, mtime_nsec))
        .flatten();
    let changed = time_of(st.st_ctime as i64, st.st_ctime_nsec as i64);
    Meta {
        size: st.st_size as u64,
        id: (st.st_dev as u64, st.st_ino as u64),
        modified,
        changed,
    }
}

/// True when two paths are spellings of one path (`x/a`, `./x/a`, `/abs/x/a`): compared
/// lexically after making them absolute, so a link followed with `-L` stays an alias.
fn same_entry(a: &Path, b: &Path) -> bool {
    a.file_name() == b.file_name()
        && lexical_absolute(a).is_some_and(|la| lexical_absolute(b) == Some(la))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn statting_from_each_directory_gives_what_statting_each_path_gives() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("a.txt"), "alpha").unwrap();
        std::fs::write(d.join("sub/b.txt"), "beta beta").unwrap();
        std::fs::hard_link(d.join("a.txt"), d.join("sub/c.txt")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("sub/b.txt"), d.join("sub/link")).unwrap();
        let mut paths = vec![
            d.join("a.txt"),
            d.join("missing"),
            d.join("sub/b.txt"),
            d.join("sub/c.txt"),
            d.join("sub/link"),
            d.join("sub/missing"),
            d.join("gone/x.txt"),
            d.join("a.txt/x"),
            PathBuf::from("Cargo.toml"),
            d.join("sub/.."),
        ];
        paths.extend((0..STAT_RUN + 50).map(|i| d.join(format!("sub/{i}"))));
        std::fs::write(d.join(format!("sub/{}", STAT_RUN + 7)), "past a run").unwrap();
        // Past LONG_PATH (Linux takes paths to 4096 bytes).
        #[cfg(target_os = "linux")]
        {
            let mut deep = d.join("l".repeat(200));
            while deep.as_os_str().len() < LONG_PATH + 300 {
                deep = deep.join("n".repeat(200));
            }
            std::fs::create_dir_all(&deep).unwrap();
            std::fs::write(deep.join("f.txt"), "deep").unwrap();
            paths.push(deep.join("f.txt"));
        }
        let got = stat_all(&paths);
        assert_eq!(got.len(), paths.len());
        for (p, got) in paths.iter().zip(got) {
            match (got, stat_path(p)) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", p.display()),
                (Err(a), Err(b)) => {
                    assert_eq!(a.raw_os_error(), b.raw_os_error(), "{}", p.display())
                }
                (a, b) => panic!("{}: {a:?} but {b:?}", p.display()),
            }
        }
        let linked = stat_all(&[d.join("a.txt"), d.join("sub/c.txt")]);
        let ids: Vec<_> = linked.iter().map(|m| m.as_ref().unwrap().id).collect();
        assert_eq!(ids[0], ids[1], "a hard link is one inode");
    }

    #[test]
    fn an_extension_ends_the_name_in_any_case_or_precedes_a_compression_suffix() {
        let exts = ["txt".to_string(), "tar.gz".to_string()];
        for kept in [
            "a.txt",
            "d/B.TXT",
            "a.txt.gz",
            "a.TXT.Zst",
            "x.tar.gz",
            "..txt",
        ] {
            assert!(has_extension(&exts, Path::new(kept)), "{kept}");
        }
        for left in [
            "txt",
            ".txt",
            "a.txtx",
            "a.gz",
            "a.txt.gz.bak",
            "a_txt",
            "txt/a",
        ] {
            assert!(!has_extension(&exts, Path::new(left)), "{left}");
        }
        assert!(has_extension(&[], Path::new("anything")));
    }

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
    fn a_path_below_its_root_is_what_strip_prefix_gives() {
        let cases = [
            ("root", "root/a/b.txt"),
            ("root/", "root/a"),
            ("./root", "./root/a/.b"),
            (".", "./a"),
            ("./", "./a/b"),
            ("/", "/etc/a"),
            ("a//b", "a//b/c"),
            ("a/./b", "a/./b/c"),
            ("root", "root"),
            ("root/", "root/"),
            ("root", "rootless/a"),
            ("root", "other/a"),
            ("root", "root//a"),
        ];
        for (root, path) in cases {
            let (r, p) = (Path::new(root), Path::new(path));
            // The same bytes, not only the same components: ignore patterns match bytes.
            let expected = p.strip_prefix(r).unwrap_or(p).as_os_str();
            assert_eq!(
                below_root(r, p).as_os_str(),
                expected,
                "{path} below {root}"
            );
        }
    }
}
