//! Where a Parquet dataset's parts go (`--dataset-format parquet`): a part per input, numbered
//! by the input's place among the shard's inputs, named after it, in the hive partition
//! directories it was in.
//!
//! A hive-partitioned dump (`crawl/lang=en/day=01/part-0.parquet`, as Spark, pyarrow and DuckDB
//! write them) holds some of its columns in its directories' names, not in the file: a reader
//! given `partitioning="hive"` (pyarrow) or `hive_partitioning` (DuckDB) adds them. Its part is
//! written under the same `key=value` directories (`DIR/lang=en/day=01/…`), so that the same
//! reader gives the dataset the same columns. Only the `key=value` directories right above the
//! input are taken, not its path below the root it was found under: the layout is then the same
//! whether the inputs were named as a directory, one by one or in a `--files-from` list, and
//! the staged pipeline, whose shards see only their own inputs, places them alike. A directory
//! a reader skips (a name starting with `.` or `_`) is no partition.
//!
//! A part's name says which input it holds: `part-SSSSS-NNNNN-STEM.parquet`, SSSSS the shard
//! (0 for a scan), NNNNN the input's number among the shard's inputs in walk order, STEM the
//! dump's file name without its extension; a run of plain files in one partition directory is
//! one input, and its part has no STEM (its rows have their paths). The number counts every
//! input, those that give no part too (no row, unreadable), so a part's
//! name does not depend on what the inputs before it held; and no two inputs share a number,
//! so no two share a part, whatever their names. Said in the name rather than in the part's
//! key-value metadata, which pyarrow reads as the schema's: that stays the dump's.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xxhash_rust::xxh3::xxh3_64;

use crate::input::walk::FileEntry;
use crate::messages::display_path;

/// The most bytes of a dump's name kept in its part's name: with the rest of the name, within
/// the 255 bytes most file systems allow.
const STEM_BYTES: usize = 200;

/// True for a directory name that is a hive partition: `key=value`, the key not empty, and not
/// a name dataset readers skip (`.` or `_` first).
pub fn is_partition(name: &OsStr) -> bool {
    let name = name.as_bytes();
    !matches!(name.first(), None | Some(b'.' | b'_'))
        && name
            .iter()
            .position(|&b| b == b'=')
            .is_some_and(|at| at > 0)
}

/// The hive partition directories right above `input` (`lang=en/day=01` for
/// `crawl/lang=en/day=01/part-0.parquet`), empty when its directory is none. Taken from the
/// directory as it is on disk ([`located`]), not as the input was spelled: `part-0.parquet`,
/// `./part-0.parquet` or `.` named inside `lang=en/` are in `lang=en` too.
pub fn partition(input: &Path) -> PathBuf {
    let Some(parent) = input.parent() else {
        return PathBuf::new();
    };
    let parent = located(parent);
    let base = (parent.ancestors())
        .find(|a| !a.file_name().is_some_and(is_partition))
        .unwrap_or(Path::new(""));
    parent
        .strip_prefix(base)
        .unwrap_or(Path::new(""))
        .to_path_buf()
}

/// `dir` with the names of the directories it is in: a relative path from the working
/// directory (whose own name `""` or `.` leave out), `..` resolved by the file system (a link
/// may lead elsewhere than the name before it). A URL, or a directory that cannot be found, as
/// it is.
fn located(dir: &Path) -> std::borrow::Cow<'_, Path> {
    use std::path::Component;
    let lexical = dir.is_absolute()
        && !(dir.components()).any(|c| matches!(c, Component::CurDir | Component::ParentDir));
    if lexical || crate::store::is_url(dir) {
        return dir.into();
    }
    let found = match dir.components().any(|c| c == Component::ParentDir) {
        true => std::fs::canonicalize(dir),
        false if dir.as_os_str().is_empty() => std::env::current_dir(),
        false => std::path::absolute(dir),
    };
    found.map_or(dir.into(), Into::into)
}

/// The part of shard `shard` in `dir` for its input number `n`, whose first document is in
/// `input` (a dump when `dump`).
pub fn part_path(dir: &Path, shard: u32, n: u32, input: &Path, dump: bool) -> PathBuf {
    let mut name = OsString::from(format!("part-{shard:05}-{n:05}"));
    if let Some(stem) = input.file_stem().filter(|_| dump) {
        name.push("-");
        name.push(shortened(stem));
    }
    name.push(".parquet");
    dir.join(partition(input)).join(name)
}

/// `stem`, cut to [`STEM_BYTES`] (at a character's start when it is UTF-8).
fn shortened(stem: &OsStr) -> &OsStr {
    let bytes = stem.as_bytes();
    let mut end = bytes.len().min(STEM_BYTES);
    if let Ok(text) = std::str::from_utf8(bytes) {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
    }
    OsStr::from_bytes(&bytes[..end])
}

/// The part number of each of a shard's inputs, in walk order.
pub struct Layout {
    /// Each input's path hashed (xxh3-64: 12 bytes an input, where the paths would be some
    /// hundred), and its part's number.
    inputs: Vec<(u64, u32)>,
}

impl Layout {
    /// The numbers of `files`, a shard's inputs in walk order: one per dump, one per run of
    /// plain files in one partition directory.
    pub fn of(files: &[FileEntry]) -> Layout {
        let mut inputs = Vec::with_capacity(files.len());
        let mut n = 0u32;
        for (i, f) in files.iter().enumerate() {
            let before = i.checked_sub(1).map(|b| &files[b]);
            let same_run = before
                .is_some_and(|b| !b.dump && !f.dump && partition(&b.path) == partition(&f.path));
            if before.is_some() && !same_run {
                n += 1;
            }
            inputs.push((hashed(&f.path), n));
        }
        Layout { inputs }
    }

    /// Looks the inputs up in walk order.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            inputs: &self.inputs,
            at: 0,
        }
    }
}

/// The inputs of a [`Layout`] looked up one after another, in walk order, as the documents
/// come.
pub struct Cursor<'l> {
    inputs: &'l [(u64, u32)],
    at: usize,
}

impl Cursor<'_> {
    /// The part number of the input at `path`, at or after the one looked up last.
    pub fn part_of(&mut self, path: &Path) -> Result<u32> {
        let h = hashed(path);
        let ahead = (self.inputs[self.at..].iter())
            .position(|i| i.0 == h)
            .with_context(|| {
                format!(
                    "{} is not among the inputs the dataset's parts were numbered from",
                    display_path(path)
                )
            })?;
        self.at += ahead;
        Ok(self.inputs[self.at].1)
    }
}

fn hashed(path: &Path) -> u64 {
    xxh3_64(path.as_os_str().as_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_is_the_key_value_directories_right_above_the_input() {
        for (input, want) in [
            ("crawl/lang=en/day=01/part-0.parquet", "lang=en/day=01"),
            ("lang=en/day=01/a.parquet", "lang=en/day=01"),
            ("/lang=en/a.parquet", "lang=en"),
            ("./lang=en/a.parquet", "lang=en"),
            ("s3://bkt/crawl/lang=en/a.parquet", "lang=en"),
            ("a=1/raw/b=2/a.parquet", "b=2"),
            ("a=1/raw/a.parquet", ""),
            ("crawl/_tmp=1/a.parquet", ""),
            ("crawl/.k=v/a.parquet", ""),
            ("crawl/=v/a.parquet", ""),
            ("crawl/k=/a.parquet", "k="),
            ("a.parquet", ""),
            ("k=v", ""),
        ] {
            assert_eq!(partition(Path::new(input)), Path::new(want), "{input}");
        }
    }

    #[test]
    fn a_part_is_named_after_its_shard_number_and_dump() {
        let dir = Path::new("out");
        let path = |n, input, dump| part_path(dir, 3, n, Path::new(input), dump);
        assert_eq!(
            path(7, "in/lang=en/x.snappy.parquet", true),
            Path::new("out/lang=en/part-00003-00007-x.snappy.parquet")
        );
        assert_eq!(
            path(0, "in/a.txt", false),
            Path::new("out/part-00003-00000.parquet")
        );
        let long = format!("in/{}.parquet", "é".repeat(150));
        let name = path(1, &long, true);
        let name = name.file_name().unwrap().len();
        assert!(name <= 255 && name > STEM_BYTES, "{name}");
    }

    #[test]
    fn inputs_are_numbered_in_order_a_run_of_files_in_one_partition_once() {
        let entry = |p: &str, dump: bool| FileEntry {
            dump,
            ..FileEntry::unwalked_dump(PathBuf::from(p), 0)
        };
        let files = [
            entry("in/a.txt", false),
            entry("in/b.txt", false),
            entry("in/k=1/c.txt", false),
            entry("in/k=1/d.parquet", true),
            entry("in/k=1/e.parquet", true),
            entry("in/k=1/f.txt", false),
            entry("in/z/g.txt", false),
        ];
        let layout = Layout::of(&files);
        let mut cursor = layout.cursor();
        let parts: Vec<u32> = ["in/a.txt", "in/b.txt", "in/k=1/c.txt", "in/k=1/e.parquet"]
            .iter()
            .chain(&["in/k=1/f.txt", "in/z/g.txt"])
            .map(|p| cursor.part_of(Path::new(p)).unwrap())
            .collect();
        assert_eq!(parts, [0, 0, 1, 3, 4, 5]);
        assert!(cursor.part_of(Path::new("in/k=1/d.parquet")).is_err());
    }
}
