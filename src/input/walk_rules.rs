//! Hidden and ignored entries, skipped as ripgrep skips them by default.
//!
//! Below a root (never the root itself: it was named), an entry is judged by the ignore files of
//! the directories above it, from its own directory up to the file system's root (the root's own
//! ancestors included, as ripgrep's parent ignore files are): for each kind of file, `.ignore`
//! (anywhere), `.gitignore` and the repository's `.git/info/exclude` (only inside a git
//! repository: a directory with a `.git` at or above it, and only up to the nearest such
//! directory), the deepest file with a matching pattern decides, and `!` whitelists. `.ignore`
//! takes precedence over `.gitignore`, which takes precedence over `exclude`. An entry no pattern
//! matches is hidden when its name starts with '.', and a whitelisted one is not. An entry named
//! `.git` is never walked, even with `--hidden`.
//!
//! Matchers are `ignore`'s `Gitignore`, the one ripgrep uses; the walk stays walkdir's. One
//! [`Rules`] stack per walker: the ancestors of the root, then one level per directory from the
//! root down to the entries being judged. A matcher takes kilobytes a pattern (a regex for each
//! one with wildcards), so the ignore files that apply to one directory may take at most half of
//! `--max-memory` together, estimated before they are built ([`pattern_cost`]); one that would
//! take more is an input error naming it, and its patterns are not applied.

use std::borrow::Cow;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use crate::budget::human;
use crate::input::walk::WalkOptions;
use crate::messages::{display_path, io_reason, InputError, Messages};

/// Git refuses ignore files larger than this (100 MB); so do we, which bounds the memory one
/// can take.
const MAX_IGNORE_FILE: u64 = 100 * 1000 * 1000;

/// Why an entry is not walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Keep,
    /// A name starting with '.', or `.git`.
    Hidden,
    /// Matched by an ignore file.
    Ignored,
}

/// Which of the names an ignore level reads a directory may hold. A directory walked by its
/// listing holds only the names listed: looking for the others cost a failed path lookup each
/// (three per directory, a third of the walk's system time on a tree of small directories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Present {
    /// `.ignore`.
    pub(super) ignore: bool,
    /// `.gitignore`.
    pub(super) gitignore: bool,
    /// `.git` (a directory, or a worktree's or submodule's file).
    pub(super) git_dir: bool,
}

impl Present {
    /// Unknown: every name is looked for.
    pub(super) const ALL: Present = Present {
        ignore: true,
        gitignore: true,
        git_dir: true,
    };

    /// What a directory whose entries have these names may hold. A name equal but for ASCII
    /// case is looked for too: a file system that ignores case (macOS's, a FAT volume) opens
    /// `.GITIGNORE` for `.gitignore`, as looking for every name did.
    pub(super) fn of<'n>(names: impl IntoIterator<Item = &'n [u8]>) -> Present {
        let mut p = Present {
            ignore: false,
            gitignore: false,
            git_dir: false,
        };
        for name in names {
            p.ignore |= name.eq_ignore_ascii_case(b".ignore");
            p.gitignore |= name.eq_ignore_ascii_case(b".gitignore");
            p.git_dir |= name.eq_ignore_ascii_case(b".git");
        }
        p
    }
}

/// The ignore files of one directory.
#[derive(Debug, Default)]
struct Level {
    /// `.ignore`.
    dot: Option<Gitignore>,
    /// `.gitignore`.
    git: Option<Gitignore>,
    /// The repository's `info/exclude`, when this directory holds a `.git`.
    exclude: Option<Gitignore>,
    /// This directory holds a `.git` (directory, or a worktree's or submodule's file).
    has_git: bool,
    /// For an ancestor of the root: the root's canonical path below it, which entries' paths
    /// are matched under.
    above: Option<PathBuf>,
    /// What its matchers take, about ([`pattern_cost`]).
    cost: u64,
}

impl Level {
    fn is_empty(&self) -> bool {
        self.dot.is_none() && self.git.is_none() && self.exclude.is_none()
    }
}

/// Where the walk stands: what it skips, and the ignore files of the directories above.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    /// `--hidden`: walk hidden entries too.
    hidden: bool,
    /// Honour ignore files (no `--no-ignore`).
    ignore: bool,
    /// The root's ancestors (`above` of them), then one level per directory entered.
    levels: Vec<Arc<Level>>,
    above: usize,
    /// What the ignore files of the levels in force may take together.
    limit: u64,
    /// An entry's path below an ancestor of the root, built here for every entry that ancestor's
    /// ignore files judge: `Path::join` allocated a `PathBuf` and parsed both paths each time
    /// (6 M instructions of a 10k scan under a repository's `.gitignore`, issue 26).
    scratch: OsString,
}

impl Rules {
    /// The rules of a root: its ancestors' ignore files and, for a directory, its own.
    pub(super) fn for_root(
        root: &Path,
        canonical: &Path,
        is_dir: bool,
        opts: &WalkOptions,
        msgs: &Messages,
        errors: &mut Vec<InputError>,
    ) -> Rules {
        let mut rules = Rules::new(opts);
        if !rules.ignore || !is_dir {
            return rules;
        }
        let ancestors: Vec<&Path> = canonical.ancestors().skip(1).collect();
        for dir in ancestors.into_iter().rev() {
            let mut level = rules.read_level(dir, Present::ALL, msgs, errors);
            if !level.is_empty() {
                level.above = canonical.strip_prefix(dir).ok().map(Path::to_path_buf);
            }
            rules.levels.push(Arc::new(level));
        }
        rules.above = rules.levels.len();
        rules.enter(root, 0, msgs, errors);
        rules
    }

    /// The rules before any level is read: a URL root's (`walk_url`), whose parents' ignore
    /// files are not read (a prefix's parents are not listed); [`Rules::enter_listed`] enters
    /// the root and each directory of its keys.
    pub(super) fn new(opts: &WalkOptions) -> Rules {
        Rules {
            hidden: opts.hidden,
            ignore: !opts.no_ignore,
            levels: Vec::new(),
            above: 0,
            limit: opts.max_memory.map_or(u64::MAX, |m| m / 2),
            scratch: OsString::new(),
        }
    }

    /// Enters the directory `dir`, `depth` levels below the root: its ignore files apply to
    /// the entries below it.
    pub(super) fn enter(
        &mut self,
        dir: &Path,
        depth: usize,
        msgs: &Messages,
        errors: &mut Vec<InputError>,
    ) {
        self.enter_listed(dir, depth, Present::ALL, msgs, errors);
    }

    /// [`Rules::enter`] for a directory whose listing says which ignore files it holds: only
    /// those are opened.
    pub(super) fn enter_listed(
        &mut self,
        dir: &Path,
        depth: usize,
        present: Present,
        msgs: &Messages,
        errors: &mut Vec<InputError>,
    ) {
        if !self.ignore {
            return;
        }
        self.levels.truncate(self.above + depth);
        let level = self.read_level(dir, present, msgs, errors);
        self.levels.push(Arc::new(level));
    }

    /// The ignore files of `dir` (those `present` may hold), within what the levels in force
    /// leave of the limit.
    fn read_level(
        &self,
        dir: &Path,
        present: Present,
        msgs: &Messages,
        errors: &mut Vec<InputError>,
    ) -> Level {
        let mut held: u64 = self.levels.iter().map(|l| l.cost).sum();
        let mut load = |path: &Path| {
            let (gi, cost) = load(path, (held, self.limit), msgs, errors)?;
            held += cost;
            Some((gi, cost))
        };
        let git_dir = dir.join(".git");
        // A prefix's listing says whether it holds a `.git`, and never a worktree's file.
        let url = crate::store::is_url(dir);
        let git_meta = (present.git_dir && !url)
            .then(|| std::fs::metadata(&git_dir).ok())
            .flatten();
        let dot = (present.ignore)
            .then(|| load(&dir.join(".ignore")))
            .flatten();
        let git = (present.gitignore)
            .then(|| load(&dir.join(".gitignore")))
            .flatten();
        let exclude = match &git_meta {
            _ if url && present.git_dir => load(&git_dir.join("info").join("exclude")),
            Some(meta) => {
                let common = if meta.is_file() {
                    common_dir(dir, &git_dir)
                } else {
                    Some(git_dir)
                };
                common.and_then(|c| load(&c.join("info").join("exclude")))
            }
            None => None,
        };
        let cost = [&dot, &git, &exclude]
            .iter()
            .flat_map(|f| f.as_ref())
            .map(|f| f.1)
            .sum();
        Level {
            dot: dot.map(|f| f.0),
            git: git.map(|f| f.0),
            exclude: exclude.map(|f| f.0),
            has_git: git_meta.is_some() || (url && present.git_dir),
            above: None,
            cost,
        }
    }

    /// Judges the entry `rel` (its path below the root, `depth` ≥ 1 components) whose
    /// directory, and every one above it, was entered.
    pub(super) fn judge(&mut self, rel: &Path, depth: usize, is_dir: bool) -> Verdict {
        let name = super::walker::entry_name(rel);
        if name == b".git" || (!is_dir && super::walk::is_dataset_marker(name)) {
            return Verdict::Hidden;
        }
        if self.ignore {
            self.levels.truncate(self.above + depth);
            match self.matched(rel, is_dir) {
                Match::Ignore(()) => return Verdict::Ignored,
                Match::Whitelist(()) => return Verdict::Keep,
                Match::None => {}
            }
        }
        if !self.hidden && name.first() == Some(&b'.') {
            return Verdict::Hidden;
        }
        Verdict::Keep
    }

    /// The decision of the ignore files above `rel`, as ripgrep's `Ignore::matched_ignore`.
    fn matched(&mut self, rel: &Path, is_dir: bool) -> Match<()> {
        if self.levels.iter().all(|l| l.is_empty()) {
            return Match::None;
        }
        let in_git = self.levels.iter().any(|l| l.has_git);
        let (mut dot, mut git, mut exclude) = (Match::None, Match::None, Match::None);
        let mut saw_git = false;
        for (i, level) in self.levels.iter().enumerate().rev() {
            if !level.is_empty() {
                let path: Cow<Path> = match &level.above {
                    // `below` is relative and not empty, `rel` relative: the two joined by a
                    // separator are what `below.join(rel)` makes.
                    Some(below) => {
                        self.scratch.clear();
                        self.scratch.push(below);
                        self.scratch.push(std::path::MAIN_SEPARATOR_STR);
                        self.scratch.push(rel);
                        Cow::Borrowed(Path::new(&self.scratch))
                    }
                    None => {
                        let mut c = rel.components();
                        for _ in 0..i - self.above {
                            c.next();
                        }
                        Cow::Borrowed(c.as_path())
                    }
                };
                let check = |m: &mut Match<()>, gi: &Option<Gitignore>| {
                    if let (true, Some(gi)) = (m.is_none(), gi) {
                        *m = gi.matched(&path, is_dir).map(|_| ());
                    }
                };
                check(&mut dot, &level.dot);
                if in_git && !saw_git {
                    check(&mut git, &level.git);
                    check(&mut exclude, &level.exclude);
                }
            }
            saw_git |= level.has_git;
        }
        dot.or(git).or(exclude)
    }
}

/// The repository directory that holds `info/exclude` for a `.git` file (a worktree's or a
/// submodule's): its `gitdir: ` line, then that directory's `commondir` when it has one (as git
/// resolves it; ripgrep reads no exclude file when there is none).
fn common_dir(dir: &Path, git_file: &Path) -> Option<PathBuf> {
    let text = read_bounded(git_file).ok()??;
    let line = String::from_utf8_lossy(&text);
    let git_dir = dir.join(line.lines().next()?.strip_prefix("gitdir: ")?.trim_end());
    match read_bounded(&git_dir.join("commondir")) {
        Ok(Some(common)) => {
            let common = String::from_utf8_lossy(&common);
            Some(git_dir.join(common.lines().next()?.trim_end()))
        }
        _ => Some(git_dir),
    }
}

/// Reads a small file that may be missing: opened non-blocking (a FIFO named `.gitignore`
/// must not hang the walk), and only when it is a regular file of at most
/// [`MAX_IGNORE_FILE`] bytes. `None` when there is no such file.
fn read_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::ErrorKind;
    if crate::store::is_url(path) {
        return read_object_bounded(path);
    }
    let file = match crate::input::read::open_nonblocking(path) {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        // A directory that cannot be searched is the walk's error to report, not its files'.
        Err(e)
            if e.kind() == ErrorKind::PermissionDenied
                && std::fs::symlink_metadata(path).is_err() =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > MAX_IGNORE_FILE {
        return Err(std::io::Error::other(format!(
            "an ignore file of {} bytes, over {MAX_IGNORE_FILE}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// [`read_bounded`] for an object of a store: one GET, refused past [`MAX_IGNORE_FILE`] bytes.
fn read_object_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    struct Bounded(Vec<u8>);
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > MAX_IGNORE_FILE as usize {
                return Err(std::io::Error::other(format!(
                    "an ignore file over {MAX_IGNORE_FILE} bytes"
                )));
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let url = path
        .to_str()
        .ok_or_else(|| std::io::Error::other("a URL must be UTF-8"))?;
    let mut out = Bounded(Vec::new());
    match crate::store::download(url, &mut out) {
        Ok(Some(_)) => Ok(Some(out.0)),
        Ok(None) => Ok(None),
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// The patterns of the ignore file `path`, if it exists and has any, with what their matcher
/// takes. One that cannot be read, or whose matcher would take more than `limit` beside the
/// `held` bytes of the ignore files above it, is an input error (its files might be scanned
/// against its wishes); a bad pattern, a warning.
fn load(
    path: &Path,
    (held, limit): (u64, u64),
    msgs: &Messages,
    errors: &mut Vec<InputError>,
) -> Option<(Gitignore, u64)> {
    let mut refuse = |error: String| {
        msgs.warn(&format!("{}: {error}", display_path(path)));
        errors.push(InputError {
            path: path.to_path_buf(),
            line: None,
            error,
        });
    };
    let bytes = match read_bounded(path) {
        Ok(b) => b?,
        Err(e) => {
            refuse(io_reason(&e));
            return None;
        }
    };
    let path_len = path.as_os_str().len();
    let (patterns, cost) = (lines(&bytes).map(|(_, l)| pattern_cost(l, path_len)))
        .filter(|&c| c > 0)
        .fold((0u64, 0u64), |(n, sum), c| (n + 1, sum.saturating_add(c)));
    if held.saturating_add(cost) > limit {
        refuse(over_limit(patterns, cost, held, limit));
        return None;
    }
    // Patterns are matched against paths relative to their directory; an absolute root is
    // never a prefix of those, so `Gitignore` strips nothing from them.
    let mut builder = GitignoreBuilder::new("/");
    for (i, line) in lines(&bytes) {
        if let Err(e) = builder.add_line(Some(path.to_path_buf()), &String::from_utf8_lossy(line)) {
            msgs.warn(&format!("{}:{}: {e}", display_path(path), i + 1));
        }
    }
    match builder.build() {
        Ok(gi) if gi.is_empty() => None,
        Ok(gi) => Some((gi, cost)),
        Err(e) => {
            msgs.warn(&format!("{}: {e}", display_path(path)));
            None
        }
    }
}

/// The lines of an ignore file, numbered from 0, without their `\r` and the first without a
/// byte-order mark.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    bytes.split(|&b| b == b'\n').enumerate().map(|(i, line)| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match i {
            0 => (i, line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line)),
            _ => (i, line),
        }
    })
}

/// About what the matcher of one line of an ignore file in `path_len` bytes of path takes, at
/// most (0 for a blank line or a comment). Measured with `ignore` 0.4.34 (a process's peak over
/// 10,000 to 100,000 patterns of one shape): a pattern without wildcards is kept as a string
/// (1.7 KB for `dir12/file000345.txt`, 20 KB for 400 bytes: 64 bytes a byte bounds it); one
/// with wildcards compiles to a regex (9 KB for `**/foo12/*000345.log`, 57 KB for 400 bytes
/// and a `*`, 87 KB for a hundred `*`, 53 KB for a hundred `?`): 160 bytes a byte and 1.5 KiB a
/// wildcard bound those. Each also keeps its file's path.
fn pattern_cost(line: &[u8], path_len: usize) -> u64 {
    if line.trim_ascii().is_empty() || line.first() == Some(&b'#') {
        return 0;
    }
    let len = line.len() as u64;
    let wildcards = line
        .iter()
        .filter(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
        .count() as u64;
    let matcher = match wildcards {
        0 => 64 * len,
        n => 160 * len + 1536 * n,
    };
    4096 + path_len as u64 + matcher
}

/// Why an ignore file's patterns are not applied, and what to do.
fn over_limit(patterns: u64, cost: u64, held: u64, limit: u64) -> String {
    let above = match held {
        0 => String::new(),
        _ => format!(
            " ({} with the ignore files above it)",
            human(held.saturating_add(cost))
        ),
    };
    format!(
        "an ignore file of {patterns} patterns, which need about {} of memory to match{above}, \
         more than the ignore files of a directory may take under --max-memory ({}, half of \
         it); its patterns are not applied: raise --max-memory, or pass --no-ignore to read \
         no ignore file",
        human(cost),
        human(limit)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(levels: Vec<Level>, above: usize, hidden: bool) -> Rules {
        Rules {
            hidden,
            ignore: true,
            levels: levels.into_iter().map(Arc::new).collect(),
            above,
            limit: u64::MAX,
            scratch: OsString::new(),
        }
    }

    fn gi(lines: &[&str]) -> Option<Gitignore> {
        let mut b = GitignoreBuilder::new("/");
        for l in lines {
            b.add_line(None, l).expect("a valid pattern");
        }
        Some(b.build().expect("valid patterns"))
    }

    #[test]
    fn the_deepest_match_decides_and_negation_whitelists() {
        let root = Level {
            git: gi(&["*.log", "build/"]),
            has_git: true,
            ..Level::default()
        };
        let sub = Level {
            git: gi(&["!keep.log", ".env"]),
            ..Level::default()
        };
        let mut r = rules(vec![root, sub], 0, false);
        let judge = |r: &mut Rules, p: &str, d, dir| r.judge(Path::new(p), d, dir);
        assert_eq!(judge(&mut r, "sub/keep.log", 2, false), Verdict::Keep);
        assert_eq!(judge(&mut r, "sub/other.log", 2, false), Verdict::Ignored);
        assert_eq!(judge(&mut r, "sub/.env", 2, false), Verdict::Ignored);
        assert_eq!(judge(&mut r, "sub/.other", 2, false), Verdict::Hidden);
        assert_eq!(judge(&mut r, "sub/.git", 2, true), Verdict::Hidden);
        // `build/` matches directories only.
        assert_eq!(judge(&mut r, "build", 1, false), Verdict::Keep);
        assert_eq!(judge(&mut r, "build", 1, true), Verdict::Ignored);
    }

    #[test]
    fn gitignore_needs_a_repository_and_stops_at_its_top() {
        let outer = Level {
            git: gi(&["*.txt"]),
            dot: gi(&["*.md"]),
            ..Level::default()
        };
        let mut r = rules(vec![outer], 0, false);
        assert_eq!(r.judge(Path::new("a.txt"), 1, false), Verdict::Keep);
        assert_eq!(r.judge(Path::new("a.md"), 1, false), Verdict::Ignored);

        // A repository inside: the outer .gitignore is beyond its top.
        let outer = Level {
            git: gi(&["*.txt"]),
            ..Level::default()
        };
        let repo = Level {
            has_git: true,
            exclude: gi(&["*.tmp"]),
            ..Level::default()
        };
        let mut r = rules(vec![outer, repo], 0, false);
        assert_eq!(r.judge(Path::new("repo/a.txt"), 2, false), Verdict::Keep);
        assert_eq!(r.judge(Path::new("repo/a.tmp"), 2, false), Verdict::Ignored);
    }

    #[test]
    fn an_ancestor_of_the_root_matches_the_path_below_it() {
        let top = Level {
            git: gi(&["/sub/gen/"]),
            has_git: true,
            above: Some(PathBuf::from("sub")),
            ..Level::default()
        };
        let mut r = rules(vec![top, Level::default()], 1, false);
        assert_eq!(r.judge(Path::new("gen"), 1, true), Verdict::Ignored);
        assert_eq!(r.judge(Path::new("gen"), 1, false), Verdict::Keep);
        let mut shown = rules(vec![Level::default()], 0, true);
        assert_eq!(shown.judge(Path::new(".env"), 1, false), Verdict::Keep);
        assert_eq!(shown.judge(Path::new(".git"), 1, true), Verdict::Hidden);
    }

    #[test]
    fn a_listing_names_the_ignore_files_to_open_in_any_ascii_case() {
        let names = |ns: &[&str]| Present::of(ns.iter().map(|n| n.as_bytes()));
        let none = Present {
            ignore: false,
            gitignore: false,
            git_dir: false,
        };
        assert_eq!(names(&["a.txt", "src", ".gitignore.bak", "x.ignore"]), none);
        assert_eq!(names(&[".git", ".gitignore", ".ignore"]), Present::ALL);
        let git = names(&["b", ".GITIGNORE"]);
        assert_eq!(
            (git.gitignore, git.ignore, git.git_dir),
            (true, false, false)
        );
        assert!(names(&[".Git"]).git_dir);
    }

    #[test]
    fn a_pattern_costs_more_with_wildcards_and_nothing_as_a_comment() {
        assert_eq!(pattern_cost(b"", 10), 0);
        assert_eq!(pattern_cost(b"   ", 10), 0);
        assert_eq!(pattern_cost(b"# a comment", 10), 0);
        // A fixed part and the path, then 64 bytes a byte without wildcards.
        assert_eq!(pattern_cost(b"target", 10), 4096 + 10 + 6 * 64);
        // 160 bytes a byte and 1.5 KiB a wildcard with them.
        assert_eq!(
            pattern_cost(b"**/dir7/*000001.log", 0),
            4096 + 19 * 160 + 3 * 1536
        );
        let lines: Vec<(usize, &[u8])> = lines(b"\xef\xbb\xbfa\r\nb\n").collect();
        assert_eq!(lines, [(0, &b"a"[..]), (1, b"b"), (2, b"")]);
    }
}
