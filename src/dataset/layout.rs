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
//! input, those that give no part too (unreadable, or files without text), so a part's name
//! does not depend on what the inputs before it held; and no two inputs share a number, so no
//! two share a part, whatever their names. A dump none of whose records is a document has no
//! place in the documents the writer is given: the layout, which lists every input, gives it
//! ([`Layout::inputs`]), so that its records are written (a dump without rows, a part of its
//! schema and none). Said in the name rather than in the part's
//! key-value metadata, which pyarrow reads as the schema's: that stays the dump's.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xxhash_rust::xxh3::xxh3_64;

use super::DatasetDoc;
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
/// `crawl/lang=en/day=01/part-0.parquet`), empty when its directory is none.
pub fn partition(input: &Path) -> &Path {
    let Some(parent) = input.parent() else {
        return Path::new("");
    };
    let base = (parent.ancestors())
        .find(|a| !a.file_name().is_some_and(is_partition))
        .unwrap_or(Path::new(""));
    parent.strip_prefix(base).unwrap_or(Path::new(""))
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

/// A shard's inputs in walk order: each one's part number, and a dump's entry.
pub struct Layout {
    inputs: Vec<Placed>,
}

/// One input file of a [`Layout`].
struct Placed {
    /// Its path hashed (xxh3-64: a few bytes an input, where the paths would be some hundred).
    path: u64,
    /// Its part's number.
    part: u32,
    /// A dump's entry as walked: a dump none of whose records is a document (every text null
    /// or empty, or no row at all) is written all the same, and only the inputs name it.
    dump: Option<Box<FileEntry>>,
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
            inputs.push(Placed {
                path: hashed(&f.path),
                part: n,
                dump: f.dump.then(|| Box::new(f.clone())),
            });
        }
        Layout { inputs }
    }

    /// The inputs with the documents `docs` (in walk order, a dump's records one after
    /// another), each dump once, with its documents or none.
    pub(super) fn inputs<'d, 'a>(&'d self, docs: &'d [DatasetDoc<'a>]) -> Inputs<'d, 'a> {
        Inputs {
            inputs: &self.inputs,
            at: 0,
            docs,
            next: 0,
        }
    }
}

/// One input of the dataset and its documents.
pub(super) struct Input<'d, 'a> {
    /// Its part's number.
    pub part: u32,
    /// A dump (its first document's entry, else the walk's), or None for files.
    pub dump: Option<&'d FileEntry>,
    /// Its documents, in order: a dump's records that are documents (maybe none), or files of
    /// one part (at least one).
    pub docs: &'d [DatasetDoc<'a>],
}

/// The inputs of a [`Layout`] with their documents, in walk order (see [`Layout::inputs`]).
pub(super) struct Inputs<'d, 'a> {
    inputs: &'d [Placed],
    /// The first input not given yet.
    at: usize,
    docs: &'d [DatasetDoc<'a>],
    /// The first document not given yet.
    next: usize,
}

impl Inputs<'_, '_> {
    /// Where the input at `path` is, at or after the one given last.
    fn place(&self, path: &Path) -> Result<usize> {
        let h = hashed(path);
        let ahead = (self.inputs[self.at..].iter())
            .position(|i| i.path == h)
            .with_context(|| {
                format!(
                    "{} is not among the inputs the dataset's parts were numbered from",
                    display_path(path)
                )
            })?;
        Ok(self.at + ahead)
    }
}

impl<'d, 'a> Iterator for Inputs<'d, 'a> {
    type Item = Result<Input<'d, 'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let docs = self.docs;
        let first = docs.get(self.next);
        let found = match first.map(|d| self.place(&d.file.path)).transpose() {
            Ok(found) => found.unwrap_or(self.inputs.len()),
            Err(e) => {
                // Nothing after it can be placed either.
                (self.at, self.next) = (self.inputs.len(), docs.len());
                return Some(Err(e));
            }
        };
        // A dump before it without a document.
        let before = &self.inputs[self.at..found];
        if let Some(k) = before.iter().position(|i| i.dump.is_some()) {
            let placed = &before[k];
            self.at += k + 1;
            let dump = placed.dump.as_deref();
            let docs = &docs[self.next..self.next];
            return Some(Ok(Input {
                part: placed.part,
                dump,
                docs,
            }));
        }
        let first = first?;
        let part = self.inputs[found].part;
        let start = self.next;
        if first.file.record.is_some() {
            let same = |d: &DatasetDoc| {
                d.file.record.is_some()
                    && d.file.path == first.file.path
                    && d.file.id == first.file.id
            };
            self.next += docs[start..].iter().take_while(|d| same(d)).count();
            self.at = found + 1;
            return Some(Ok(Input {
                part,
                dump: Some(first.file),
                docs: &docs[start..self.next],
            }));
        }
        // Files while they are of this part: its inputs follow one another, and a dump between
        // two files has a number of its own.
        self.at = found + 1;
        self.next += 1;
        while let Some(d) = docs.get(self.next).filter(|d| d.file.record.is_none()) {
            let h = hashed(&d.file.path);
            let run = self.inputs[self.at..].iter().take_while(|i| i.part == part);
            let Some(k) = run.into_iter().position(|i| i.path == h) else {
                break;
            };
            self.at += k + 1;
            self.next += 1;
        }
        Some(Ok(Input {
            part,
            dump: None,
            docs: &docs[start..self.next],
        }))
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
            entry("in/z/h.parquet", true),
        ];
        let layout = Layout::of(&files);
        // e.parquet's two records are documents, d.parquet's and h.parquet's none.
        let record = |line| FileEntry {
            record: Some(Box::new(crate::input::walk::Record {
                line,
                id: None,
                file_size: 0,
                at: None,
                keep: None,
            })),
            ..files[4].clone()
        };
        let records = [record(1), record(3)];
        let doc = |file| DatasetDoc {
            doc: 0,
            file,
            hash: 0,
            fate: None,
        };
        let docs: Vec<DatasetDoc> = [&files[0], &files[1], &files[2]]
            .into_iter()
            .chain(&records)
            .chain([&files[5], &files[6]])
            .map(doc)
            .collect();
        let got: Vec<(u32, Option<&Path>, usize)> = (layout.inputs(&docs))
            .map(|i| i.unwrap())
            .map(|i| (i.part, i.dump.map(|d| d.path.as_path()), i.docs.len()))
            .collect();
        let dump = |p: &'static str| Some(Path::new(p));
        assert_eq!(
            got,
            [
                (0, None, 2),
                (1, None, 1),
                (2, dump("in/k=1/d.parquet"), 0),
                (3, dump("in/k=1/e.parquet"), 2),
                (4, None, 1),
                (5, None, 1),
                (6, dump("in/z/h.parquet"), 0),
            ]
        );
        // The dumps before a document come first; a document out of order (or of no input) is an
        // error, and nothing follows it.
        let docs = [doc(&files[5]), doc(&files[0])];
        let got: Vec<Result<u32>> = layout.inputs(&docs).map(|i| i.map(|i| i.part)).collect();
        assert!(matches!(got[..], [Ok(2), Ok(3), Ok(4), Err(_)]), "{got:?}");
    }
}
