//! Format 1: the single-file index of earlier builds, `index.dfx`. This build reads it (a scan
//! against it holds its records in memory, as those builds did) and upgrades it to segments
//! (format 2) on its first update or with `dupfind index upgrade`; it writes format 1 only in
//! tests, to make indexes to read. The types `IndexParams` and `Entry` are shared with
//! format 2.
//!
//! A format-1 index is a directory holding `index.dfx` (the data), `lock` (locked by a writer while it
//! commits) and, after an interrupted commit, a leftover `index.dfx.<random>.tmp`. A commit
//! writes the whole new generation to a temporary file created exclusively under a fresh name
//! ([`super::dir`]), fsyncs it, renames it over `index.dfx` and fsyncs the directory. The rename
//! is the single commit point, so a writer killed at any moment leaves the old file or the new
//! one, never a mix; a temporary file is never read, and the next commit removes it. A reader needs no lock: its one `open()` pins one generation, which
//! stays readable through its handle even after a commit replaces the name. A `CURRENT` pointer
//! naming one data file per generation (as LevelDB does) would add a second rename and a window
//! between reading the pointer and opening the file it names; it pays only once a generation
//! spans several files, which would come with a new format version.
//!
//! Open checks the header, the file length and the checksums of params and records, and keeps
//! records in memory without their sets (about 600 bytes a document at K = 128, against ~8 KiB
//! for a set); a set is read, and its checksum checked, on demand. Unix only: paths are stored
//! as raw bytes and sets are read with `pread`.

mod format;
#[cfg(test)]
mod tests;

use std::fmt::Display;
use std::fs::File;
#[cfg(test)]
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
#[cfg(test)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::dir::IndexDir;

use format::{decode_records, le64, read_header, read_section, HEADER_LEN};
#[cfg(test)]
use format::{encode_entry, Header};

/// Version of the `index.dfx` layout this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The data file of a format-1 index.
pub const DATA: &str = "index.dfx";
#[cfg(test)]
const LOCK: &str = "lock";

/// True for the name of a generation being written: `index.dfx.<random>.tmp`, or the fixed
/// `index.dfx.tmp` of earlier builds. One left behind was written by a killed writer.
fn is_temp(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.starts_with(b"index.dfx.") && name.ends_with(b".tmp")
}

/// Parameters that shaped the index; scanning with different ones is an error. Fields that do
/// not apply to the method (bands for SimHash) should hold a fixed value such as 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexParams {
    /// "minhash" or "simhash".
    pub method: String,
    /// "word" or "char".
    pub shingle: String,
    /// Shingle length.
    pub ngram: u32,
    /// MinHash signature length K.
    pub num_perm: u32,
    /// MinHash sketch: "oph" or "kperm".
    pub sketch: String,
    /// LSH bands b.
    pub bands: u32,
    /// Rows per band r.
    pub rows: u32,
    /// Hash seed.
    pub seed: u64,
    /// Version of the hash functions (token, shingle, signature, content) that made the stored
    /// values: an index made by a dupfind that hashed differently would silently match nothing.
    pub hashing: u32,
    /// SimHash: the largest distance the stored piece keys find (0 for MinHash, and in format 1,
    /// which stored no keys).
    #[serde(default)]
    pub max_distance: u32,
    /// `--normalize`'s steps as [`crate::sketch::normalize::Normalize::name`] spells them, or
    /// "none". Written only when there are steps, so an index without them is written as
    /// before; one without the field (made before the option existed) has none.
    #[serde(default = "no_steps", skip_serializing_if = "is_no_steps")]
    pub normalize: String,
}

fn no_steps() -> String {
    "none".to_string()
}

fn is_no_steps(steps: &str) -> bool {
    steps == "none"
}

/// One indexed document without its shingle set: what an open index keeps in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path's exact bytes (Unix `OsStr` bytes).
    pub path: Vec<u8>,
    /// Line number, for a document from a JSON Lines dump.
    pub line: Option<u64>,
    /// Id, for a document from a dump.
    pub id: Option<String>,
    /// File size in bytes (cache key; of a dump record, the dump's size).
    pub size: u64,
    /// The document's own size in bytes (of a dump record, its text's).
    pub bytes: u64,
    /// Modification time in nanoseconds since the epoch (cache key).
    pub mtime_ns: i128,
    /// Status change time in nanoseconds since the epoch (cache key); 0 when not recorded
    /// (format 1).
    pub ctime_ns: i128,
    /// Device number (cache key).
    pub dev: u64,
    /// Inode number (cache key).
    pub inode: u64,
    /// xxh3-128 of the document bytes, for exact duplicates.
    pub content_hash: u128,
    /// MinHash values, `num_perm` long; empty for SimHash.
    pub signature: Vec<u32>,
    /// SimHash fingerprint.
    pub simhash: u64,
}

/// One document as written: its entry and its sorted, deduplicated shingle hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Everything but the set.
    pub entry: Entry,
    /// Shingle hashes, for exact Jaccard.
    pub set: Vec<u64>,
}

/// A SimHash fingerprint's bits: the most pieces it can be cut into.
const FINGERPRINT_BITS: u32 = 64;

impl IndexParams {
    /// Signature values per document.
    pub fn lanes(&self) -> usize {
        if self.method == "simhash" {
            0
        } else {
            self.num_perm as usize
        }
    }

    /// Refuses parameters no dupfind writes. The keys are cut with them before any segment is
    /// read (one table per band or SimHash piece), so a forged index declaring billions of bands
    /// would be an allocation of that size, not an error.
    pub fn check(&self) -> Result<()> {
        match self.method.as_str() {
            "simhash" if self.max_distance < FINGERPRINT_BITS => Ok(()),
            "simhash" => bail!(
                "its SimHash distance {} is beyond a {FINGERPRINT_BITS}-bit fingerprint",
                self.max_distance
            ),
            "minhash"
                if self.num_perm as usize <= crate::config::MAX_NUM_PERM
                    && u64::from(self.bands) * u64::from(self.rows) <= u64::from(self.num_perm) =>
            {
                Ok(())
            }
            "minhash" => bail!(
                "its MinHash parameters (--num-perm {}, --bands {}, --rows {}) are not ones \
                 dupfind builds with",
                self.num_perm,
                self.bands,
                self.rows
            ),
            other => bail!("its method {other:?} is not minhash or simhash"),
        }
    }
}

/// Fails naming every parameter that differs between the index and this run.
pub fn check_compatible(stored: &IndexParams, wanted: &IndexParams) -> Result<()> {
    if stored.hashing != wanted.hashing {
        bail!(
            "index was built by a dupfind that hashes differently (hash scheme {}, this one uses \
             {}); build it again",
            stored.hashing,
            wanted.hashing
        );
    }
    if stored.method != wanted.method {
        // The other parameters of another method mean nothing here.
        bail!(
            "index was built with --method {}, this scan uses --method {}",
            stored.method,
            wanted.method
        );
    }
    let mut diffs = Vec::new();
    let mut check = |flag: &str, old: &dyn Display, new: &dyn Display| {
        let (old, new) = (old.to_string(), new.to_string());
        if old != new {
            diffs.push(format!(
                "index was built with {flag} {old}, this scan uses {flag} {new}"
            ));
        }
    };
    check("--shingle", &stored.shingle, &wanted.shingle);
    check("--ngram", &stored.ngram, &wanted.ngram);
    check("--normalize", &stored.normalize, &wanted.normalize);
    check("--num-perm", &stored.num_perm, &wanted.num_perm);
    check("--sketch", &stored.sketch, &wanted.sketch);
    // Bands and rows are not compared: the bands are cut from the stored signatures at every
    // scan, so an index serves any --threshold, --bands or --rows.
    check("--seed", &stored.seed, &wanted.seed);
    if diffs.is_empty() {
        return Ok(());
    }
    bail!("{}", diffs.join("; "))
}

/// An open, validated generation of an index.
pub struct Index {
    path: PathBuf,
    file: File,
    generation: u64,
    stamp: u64,
    params: IndexParams,
    entries: Vec<Entry>,
    sets: Vec<SetRef>,
}

/// Where a record's set lies in the file, its length in values and its checksum.
struct SetRef {
    offset: u64,
    len: u64,
    sum: u64,
}

impl Index {
    /// Opens the index in `dir`, checking its header, length and the params and records
    /// checksums.
    pub fn open(dir: &Path) -> Result<Index> {
        Index::open_in(&open_dir(dir)?)
    }

    /// Opens the index of an open directory.
    pub fn open_in(dir: &IndexDir) -> Result<Index> {
        let path = dir.join(DATA);
        let file = open_data(dir)?;
        let h = read_header(&file, &path)?;
        let corrupt = || format!("{}: corrupt index", crate::messages::display_path(&path));
        let params = read_section(&file, &path, HEADER_LEN, h.params_len, h.params_sum)?;
        let params: IndexParams = serde_json::from_slice(&params).with_context(corrupt)?;
        params.check().with_context(corrupt)?;
        let records_at = HEADER_LEN + h.params_len + h.sets_len;
        let records = read_section(&file, &path, records_at, h.records_len, h.records_sum)?;
        let (entries, sets) =
            decode_records(&records, h.count, HEADER_LEN + h.params_len, h.sets_len)
                .with_context(corrupt)?;
        Ok(Index {
            path,
            file,
            generation: h.generation,
            stamp: h.params_sum ^ h.records_sum.rotate_left(1) ^ h.count,
            params,
            entries,
            sets,
        })
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// The generation, 1 for a new index and one more at each commit.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// A value that a rebuild changes (format 1 has no identity): from the header's checksums.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The documents in stored order, without their sets.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Frees the signatures held in memory, once the caller has copied what it needs (an open
    /// index then costs its records without their signatures).
    pub fn drop_signatures(&mut self) {
        for e in &mut self.entries {
            e.signature = Vec::new();
        }
    }

    /// Reads the shingle set of document `i` and checks its checksum.
    pub fn read_set(&self, i: usize) -> Result<Vec<u64>> {
        let set = self.sets.get(i).with_context(|| {
            format!(
                "{} has no record {i}",
                crate::messages::display_path(&self.path)
            )
        })?;
        let mut buf = vec![0; (set.len * 8) as usize];
        self.file
            .read_exact_at(&mut buf, set.offset)
            .with_context(|| format!("reading {}", crate::messages::display_path(&self.path)))?;
        if xxh3_64(&buf) != set.sum {
            bail!(
                "{}: corrupt index: checksum mismatch in the set of record {i}",
                crate::messages::display_path(&self.path)
            );
        }
        Ok(buf.chunks_exact(8).map(le64).collect())
    }

    /// Every record with its set, read one at a time: what `replace` takes to carry the index
    /// over into the next generation.
    pub fn records(&self) -> impl Iterator<Item = Result<Record>> + '_ {
        (self.entries.iter().enumerate()).map(|(i, e)| {
            Ok(Record {
                entry: e.clone(),
                set: self.read_set(i)?,
            })
        })
    }
}

#[cfg(test)]
/// Creates a new index in `dir` (made if missing) as generation 1. Refuses a directory that
/// holds anything but the leftovers of an interrupted `create`, including an existing index.
pub fn create<I>(dir: &Path, params: &IndexParams, records: I) -> Result<()>
where
    I: IntoIterator<Item = Result<Record>>,
{
    // Checked before taking the lock, which creates a file, and again under it.
    check_fresh(dir)?;
    let dir = IndexDir::create(dir)?;
    let _lock = dir.lock(LOCK)?;
    check_fresh_dir(&dir)?;
    commit(&dir, 1, params, records, None, None)
}

#[cfg(test)]
/// Replaces the index in `dir` with `records` as the next generation, which it returns. Fails,
/// changing nothing, if the index is not at `expected_generation` or another writer holds it.
pub fn replace<I>(
    dir: &Path,
    expected_generation: u64,
    params: &IndexParams,
    records: I,
) -> Result<u64>
where
    I: IntoIterator<Item = Result<Record>>,
{
    let path = dir.join(DATA);
    let dir = open_dir(dir)?;
    read_header(&open_data(&dir)?, &path)?;
    let _lock = dir.lock(LOCK)?;
    let data = open_data(&dir)?;
    let current = read_header(&data, &path)?.generation;
    if current != expected_generation {
        bail!(
            "index {} changed during this run (generation {current}, expected {expected_generation}); run again",
            dir.path().display()
        );
    }
    // The next generation keeps the read and write bits of the file it replaces (an index made
    // private stays so), as `new_file_mode` says.
    let mode = data
        .metadata()
        .with_context(|| format!("reading {}", crate::messages::display_path(&path)))?
        .mode();
    commit(&dir, current + 1, params, records, Some(mode), None)?;
    Ok(current + 1)
}

#[cfg(test)]
/// Writes `generation` and makes it live; the caller holds the lock. Each step ends at a state a
/// killed writer can leave behind; `stop_after` ends the commit there, for the tests. `mode`:
/// the mode of the file it replaces (`new_file_mode`; None: 0666 less the umask).
fn commit<I>(
    dir: &IndexDir,
    generation: u64,
    params: &IndexParams,
    records: I,
    mode: Option<u32>,
    stop_after: Option<u32>,
) -> Result<()>
where
    I: IntoIterator<Item = Result<Record>>,
{
    // Under the lock, any other generation being written was left by a killed writer.
    for name in dir.names()? {
        if is_temp(&name) {
            if let Some(name) = name.to_str() {
                dir.remove(name)?;
            }
        }
    }
    // 1: the new generation is complete and durable under a fresh temporary name.
    let (temp, file) = dir.create_temp(DATA, mode)?;
    if let Err(e) = write_data(&file, &dir.join(&temp), generation, params, records) {
        // A failed write (a full disk, a set that would not read) gives its space back; a
        // killed one leaves the file for the next commit to remove.
        let _ = dir.remove(&temp);
        return Err(e);
    }
    if stop_after == Some(1) {
        return Ok(());
    }
    // 2: it is live.
    dir.rename(&temp, DATA)?;
    if stop_after == Some(2) {
        return Ok(());
    }
    // 3: the rename survives a power loss.
    dir.sync()
}

#[cfg(test)]
fn write_data<I>(
    file: &File,
    path: &Path,
    generation: u64,
    params: &IndexParams,
    records: I,
) -> Result<()>
where
    I: IntoIterator<Item = Result<Record>>,
{
    let io = || format!("writing {}", crate::messages::display_path(path));
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let params = serde_json::to_vec(params)?;
    // The header is written last, once the lengths and checksums are known.
    out.write_all(&[0; HEADER_LEN as usize]).with_context(io)?;
    out.write_all(&params).with_context(io)?;
    let (mut recs, mut set, mut sets_len, mut count) = (Vec::new(), Vec::new(), 0u64, 0u64);
    for record in records {
        let record = record?;
        set.clear();
        record
            .set
            .iter()
            .for_each(|v| set.extend_from_slice(&v.to_le_bytes()));
        out.write_all(&set).with_context(io)?;
        encode_entry(&record.entry, &mut recs)?;
        recs.extend_from_slice(&(record.set.len() as u64).to_le_bytes());
        recs.extend_from_slice(&xxh3_64(&set).to_le_bytes());
        sets_len += set.len() as u64;
        count += 1;
    }
    out.write_all(&recs).with_context(io)?;
    out.flush().with_context(io)?;
    drop(out);
    let header = Header {
        generation,
        count,
        params_len: params.len() as u64,
        sets_len,
        records_len: recs.len() as u64,
        params_sum: xxh3_64(&params),
        records_sum: xxh3_64(&recs),
    };
    file.write_all_at(&header.encode(), 0).with_context(io)?;
    file.sync_all().with_context(io)
}

#[cfg(test)]
/// Refuses a directory holding anything but an interrupted `create`'s leftovers; makes a
/// missing one.
pub fn check_fresh(dir: &Path) -> Result<()> {
    check_fresh_dir(&IndexDir::create(dir)?)
}

#[cfg(test)]
fn check_fresh_dir(dir: &IndexDir) -> Result<()> {
    for name in dir.names()? {
        if name == DATA {
            bail!(
                "{} already holds an index; not creating another over it",
                dir.path().display()
            );
        }
        if !is_temp(&name) && name != LOCK {
            bail!(
                "{} is not a dupfind index and is not empty (it holds {}); not creating an index there",
                dir.path().display(),
                Path::new(&name).display()
            );
        }
    }
    Ok(())
}

/// The index directory, which must exist.
fn open_dir(dir: &Path) -> Result<IndexDir> {
    IndexDir::open(dir)?.with_context(|| {
        format!(
            "{} is not a dupfind index (no such directory)",
            dir.display()
        )
    })
}

fn open_data(dir: &IndexDir) -> Result<File> {
    if let Some(file) = dir.open_file(DATA)? {
        return Ok(file);
    }
    let interrupted = dir.names()?.iter().any(|n| is_temp(n));
    let why = if interrupted {
        format!("it has no {DATA}: building it was interrupted; build it again")
    } else {
        format!("it has no {DATA}")
    };
    bail!("{} is not a dupfind index ({why})", dir.path().display())
}
