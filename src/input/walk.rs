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
//!
//! Below a root, hidden and ignored entries are skipped as ripgrep skips them (`walk_rules.rs`);
//! the roots themselves were named, and are walked whatever their names.
//!
//! This module holds what a walk is given and what it gives back, checks the roots and strings
//! the steps together; the admission of files, and a tree's traversal by walkdir, are in
//! `walker.rs`, its traversal by listing each directory (in parallel near the root) in
//! `walk_split.rs`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use globset::GlobSet;
use rayon::prelude::*;

use crate::input::walk_rules::Rules;
use crate::input::walker::Walker;
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
    /// Walk hidden entries too (`--hidden`; never `.git`).
    pub hidden: bool,
    /// Leave ignore files unread (`--no-ignore`).
    pub no_ignore: bool,
    /// The memory budget (`--max-memory`): the ignore files that apply to one directory may
    /// take half of it (see `walk_rules.rs`). None: no limit.
    pub max_memory: Option<u64>,
    /// Walk at most this many levels below each root (0: the roots alone).
    pub max_depth: Option<usize>,
    /// Keep only files whose name ends in one of these extensions (lowercase, no dot), possibly
    /// followed by a compression suffix.
    pub extensions: Vec<String>,
    /// Skip files smaller than this many bytes.
    pub min_size: u64,
    /// Skip files larger than this many bytes (dumps excepted: the limit applies to each of
    /// their records).
    pub max_size: u64,
    /// Which files are dumps.
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
    /// Stat every file all the same (the staged pipeline's plan needs every inode), but where
    /// the metadata would have been deferred, leave the size limits to the read as well, so
    /// that a file over `--max-size` is skipped, and warned about, where `scan` skips it.
    pub stat_deferred: bool,
}

/// Which files are read as dumps (many documents): JSON Lines, or Parquet (a dump that starts
/// with Parquet's magic bytes is read as Parquet, see [`crate::input::parquet`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DumpNames {
    /// Files named `*.jsonl` or `*.ndjson`, optionally followed by a compressed file's suffix
    /// ([`COMPRESSED_SUFFIXES`]), and files named `*.parquet`.
    #[default]
    ByName,
    /// Every file (`--jsonl`, `--dumps always`).
    All,
    /// No file (`--dumps never`): each is one document.
    None,
}

impl DumpNames {
    /// True when `path` is read as a dump.
    pub fn is_dump(self, path: &Path) -> bool {
        match self {
            DumpNames::All => return true,
            DumpNames::None => return false,
            DumpNames::ByName => {}
        }
        // This runs for every file of the walk, twice: the name is found as the bytes after
        // the last '/' and its extensions compared in place, where `Path::file_name` took the
        // path apart component by component and every suffix was tried (900 instructions a
        // file, 0.8 % of a default scan's). A name ending in '.' or '/' takes that slow way.
        let bytes = path.as_os_str().as_encoded_bytes();
        let name = match bytes.last() {
            Some(b'.' | b'/') | None => match path.file_name() {
                Some(name) => name.as_encoded_bytes(),
                None => return false,
            },
            Some(_) => bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes),
        };
        let ext = |stem: &[u8]| -> Option<(usize, bool)> {
            let dot = stem.iter().rposition(|&b| b == b'.')?;
            let ext = &stem[dot..];
            let dump = [".jsonl", ".ndjson", ".parquet"]
                .iter()
                .any(|e| ext.eq_ignore_ascii_case(e.as_bytes()));
            Some((dot, dump))
        };
        let dump = match ext(name) {
            None => false,
            Some((_, true)) => true,
            Some((dot, false)) => {
                let compressed = &name[dot..];
                COMPRESSED_SUFFIXES
                    .iter()
                    .any(|c| compressed.eq_ignore_ascii_case(c.as_bytes()))
                    && ext(&name[..dot]).is_some_and(|(inner, dump)| {
                        // `.parquet.gz` is not a dump: Parquet compresses its own pages.
                        dump && !name[inner..dot].eq_ignore_ascii_case(b".parquet")
                    })
            }
        };
        // A name that is not UTF-8 was never a dump (its name could not be compared).
        dump && std::str::from_utf8(name).is_ok()
    }
}

/// The suffixes of compressed files that may follow `.jsonl` in a dump's name. What a file
/// holds is decided by its magic bytes; these only make it a dump.
pub const COMPRESSED_SUFFIXES: [&str; 10] = [
    ".gz", ".zst", ".zstd", ".bz2", ".xz", ".lzma", ".lz4", ".z", ".lz", ".lzo",
];

/// True when a file's name says it is Parquet: `*.parquet`, ignoring case (compressed as a
/// whole it would not be: Parquet compresses its pages).
pub fn is_parquet_name(name: &str) -> bool {
    strip_suffix_ignoring_case(name, ".parquet").is_some()
}

/// The file a staged run's `stage init` leaves in its dataset's directory, naming the run that
/// writes it (`crate::dataset`'s claim): a marker, as Spark's `_SUCCESS` is.
pub const DATASET_CLAIM: &str = "_dupfind_run";

/// True for a file that Spark, Hadoop, pyarrow or a staged run ([`DATASET_CLAIM`]) write beside
/// a dataset's parts and that holds no record: the job's markers (`_SUCCESS`, `_committed_*`,
/// `_started_*`), the summary footers (`_metadata`, `_common_metadata`) and checksums
/// (`.*.crc`). Never an input, as a dataset reader never reads them: an empty `_SUCCESS` would
/// otherwise be a file that is not Parquet, and make the dataset JSON Lines.
pub fn is_dataset_marker(name: &[u8]) -> bool {
    matches!(name, b"_SUCCESS" | b"_metadata" | b"_common_metadata")
        || name == DATASET_CLAIM.as_bytes()
        || name.starts_with(b"_committed_")
        || name.starts_with(b"_started_")
        || (name.starts_with(b".") && name.ends_with(b".crc"))
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
    /// Status change time (ctime) when walked, if known: the index compares it, as git does, so
    /// that a rewrite keeping the size and restoring the modification time is still noticed.
    pub changed: Option<std::time::SystemTime>,
    /// A dump (JSON Lines or Parquet: many documents), not one document.
    pub dump: bool,
    /// For a document that is one line of a dump: which line, and its id.
    pub record: Option<Box<Record>>,
    /// `size`, `id` and `modified` are not known yet: the walk deferred them to the read
    /// ([`WalkOptions::defer_metadata`]).
    pub deferred: bool,
}

impl FileEntry {
    /// A dump the walk did not find, of `size` bytes, without an inode or times: a table in
    /// memory ([`crate::input::table`]), or a test's file.
    pub fn unwalked_dump(path: PathBuf, size: u64) -> FileEntry {
        FileEntry {
            path,
            aliases: Vec::new(),
            size,
            id: (0, 0),
            modified: None,
            changed: None,
            dump: true,
            record: None,
            deferred: false,
        }
    }

    /// A plain file whose size, id and modification time the read will take.
    fn with_deferred_metadata(path: PathBuf) -> FileEntry {
        FileEntry {
            path,
            aliases: Vec::new(),
            size: 0,
            id: (0, 0),
            modified: None,
            changed: None,
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
    /// Its value of the `--keep-by` field, when it has one (an indexed document has none: the
    /// index stores no fields). Boxed: most records of most runs have none, and every dump
    /// record has a `Record`.
    pub keep: Option<Box<crate::input::field_value::FieldValue>>,
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
    /// Hidden entries (a name starting with '.'; `.git` even with `--hidden`), not walked.
    pub hidden: u64,
    /// Entries matched by an ignore file, not walked.
    pub ignored: u64,
}

impl WalkSkips {
    /// Adds the counts of another walker (one subdirectory of a split walk).
    pub(super) fn add(&mut self, other: WalkSkips) {
        self.not_regular += other.not_regular;
        self.symlink += other.symlink;
        self.outside_roots += other.outside_roots;
        self.too_short += other.too_short;
        self.too_large += other.too_large;
        self.hidden += other.hidden;
        self.ignored += other.ignored;
    }
}

/// The walk's result.
#[derive(Debug, Default)]
pub struct Walked {
    /// Regular files in walk order, one per inode.
    pub files: Vec<FileEntry>,
    /// Non-directory entries that passed the filters (aliases included): neither hidden nor
    /// ignored, within `--max-depth`, matching `--include`, `--exclude` and `-e`.
    pub files_seen: u64,
    /// Entries seen but not kept.
    pub skipped: WalkSkips,
    /// Entries that could not be read.
    pub errors: Vec<InputError>,
}

/// Walks every root. A root, or an input of `--files-from`, that does not exist or is not a
/// directory or regular file is an input error, warned about, and the others are walked;
/// problems below a root are recorded in the result.
pub fn walk(opts: &WalkOptions, msgs: &Messages) -> Result<Walked> {
    let mut canonical_roots = Vec::new();
    let mut out = Walked::default();
    let mut roots = Vec::new();
    let mut urls = Vec::new();
    for path in opts.roots.iter().chain(&opts.listed) {
        if crate::store::is_url(path) {
            urls.push(path);
            continue;
        }
        let checked = std::fs::metadata(path)
            .map_err(|e| crate::messages::io_reason(&e))
            .and_then(|meta| check_root_type(&meta).map(|()| meta.is_dir()));
        match checked {
            Ok(is_dir) => {
                let canonical = std::fs::canonicalize(path)
                    .ok()
                    .or_else(|| lexical_absolute(path))
                    .unwrap_or_else(|| path.clone());
                canonical_roots.push(canonical.clone());
                roots.push((path, canonical, is_dir));
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
    let roots_count = roots.len();
    let defer = opts.defer_metadata && !opts.follow_links && roots.len() == 1;
    let mut w = Walker::new(opts, msgs, roots.len() > 1);
    w.out = out;
    // A root is walked by its listings (`walk_split.rs`) when no link is followed (walkdir
    // finds the loops of followed links) and its entries are walked at all. In parallel with
    // one root (several may overlap, which the walker finds in walk order) and no links (a
    // link into another subdirectory would be walked by two walkers).
    let listed = !opts.follow_links && opts.max_depth.is_none_or(|d| d >= 1);
    let parallel = defer && rayon::current_num_threads() > 1;
    for (root, canonical, is_dir) in roots {
        let mut errors = Vec::new();
        let rules = Rules::for_root(root, &canonical, is_dir, opts, msgs, &mut errors);
        w.out.errors.extend(errors);
        w.walk_root(root, &canonical_roots, (listed, parallel), rules);
    }
    admit_pending(&mut w, opts, roots_count > 1, defer);
    if !urls.is_empty() {
        let several = roots_count > 0 || urls.len() > 1;
        for url in &urls {
            crate::input::walk_url::walk_url(url, opts, msgs, &mut w.out);
        }
        if several {
            // Documents are numbered in path order whatever the order of the roots, as
            // `admit_pending` numbers a disk's; a key listed under two roots is one document.
            w.out.files.sort_by(|a, b| a.path.cmp(&b.path));
            w.out.files.dedup_by(|a, b| a.path == b.path);
        }
    }
    if opts.include.is_some() && w.out.files_seen == 0 {
        msgs.warn("--include matched no file below the roots");
    }
    Ok(w.out)
}

/// Takes the metadata of the regular files `w` found (unless the read will take it) and admits
/// them: one entry per inode, within the size limits.
fn admit_pending(w: &mut Walker, opts: &WalkOptions, several: bool, defer: bool) {
    // One stat per file is most of the walk's time; done in parallel, then admitted in walk
    // order so that which name of an inode comes first does not depend on threads.
    // Documents are numbered in path order (component by component, so a directory's files
    // stay together), whatever the order of the roots; the first path of an inode names it.
    // One root's walk (file-name order, each directory's entries before its next sibling) is
    // that order already; comparing 10,000 paths component by component took 1 ms.
    let mut pending = std::mem::take(&mut w.pending);
    if several {
        pending.sort_unstable();
    }
    debug_assert!(pending.is_sorted(), "the walk is in path order");
    w.out.files.reserve(pending.len());
    let stat = opts.stat_deferred;
    if defer && !stat && !pending.par_iter().any(|p| opts.dumps.is_dump(p)) {
        // Built in parallel: at 10k files this loop took 2 ms on one thread, mostly taking
        // each name apart to look for a dump and first touching the entries' pages.
        w.out.files.par_extend(
            pending
                .into_par_iter()
                .map(FileEntry::with_deferred_metadata),
        );
    } else if defer && !stat {
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
        let metas = crate::input::walker::stat_all(&pending);
        for (path, meta) in pending.into_iter().zip(metas) {
            w.admit_sized(path, meta, !defer);
        }
    }
}

fn check_root_type(meta: &std::fs::Metadata) -> std::result::Result<(), String> {
    let ft = meta.file_type();
    if !ft.is_dir() && !ft.is_file() {
        return Err("not a directory or regular file (a FIFO, socket or device)".to_string());
    }
    Ok(())
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
    fn dumps_are_recognised_by_name_or_all_with_jsonl() {
        let by_name = DumpNames::ByName;
        for dump in [
            "a.jsonl",
            "a.ndjson",
            "A.JSONL",
            "x/a.jsonl.gz",
            "x/a.jsonl.xz",
            "x/a.ndjson.bz2",
            "x/a.jsonl.lz4",
            "x/a.jsonl.lzma",
            "x/a.jsonl.Z",
            "a.ndjson.zst",
            "a.jsonl.zstd",
            "b.NDJSON.Gz",
            "é.jsonl",
            "part-00000.parquet",
            "x/A.PARQUET",
        ] {
            assert!(by_name.is_dump(Path::new(dump)), "{dump}");
        }
        for plain in [
            "a.json",
            "a.txt",
            "a.jsonl.txt",
            "a.gz",
            "jsonl",
            "a.jsonl.rar",
            "a.jsonl.gz.txt",
            "é",
            ".gz",
            "a.parquet.gz",
            "a.parq",
            "x.jsonl/a",
            "x/a.jsonl/..",
        ] {
            assert!(!by_name.is_dump(Path::new(plain)), "{plain}");
            assert!(DumpNames::All.is_dump(Path::new(plain)), "{plain}");
        }
        // A name is the last component, as `Path::file_name` has it.
        for dump in [".jsonl", "x/a.jsonl/", "x/a.ndjson/.", "x//b.JSONL.zst"] {
            assert!(by_name.is_dump(Path::new(dump)), "{dump}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let not_utf8 = std::ffi::OsStr::from_bytes(b"x/\xff.jsonl");
            assert!(!by_name.is_dump(Path::new(not_utf8)));
        }
    }
}
