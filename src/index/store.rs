//! Index store: the on-disk form of an incremental index (`dupfind index build`,
//! `dupfind scan --against`). Only storage lives here: the types, their encoding, validation on
//! open and an atomic commit. What to index, the cache lookups and the comparisons belong to
//! the scan.
//!
//! An index is a directory holding `index.dfx` (the data), `lock` (locked by a writer while it
//! commits) and, after an interrupted commit, a leftover `index.dfx.tmp`. A commit writes the
//! whole new generation to `index.dfx.tmp`, fsyncs it, renames it over `index.dfx` and fsyncs
//! the directory. The rename is the single commit point, so a writer killed at any moment leaves
//! the old file or the new one, never a mix; the temp file is never read, and the next commit
//! truncates and reuses it. A reader needs no lock: its one `open()` pins one generation, which
//! stays readable through its handle even after a commit replaces the name. A `CURRENT` pointer
//! naming one data file per generation (as LevelDB does) would add a second rename and a window
//! between reading the pointer and opening the file it names; it pays only once a generation
//! spans several files, which would come with a new format version.
//!
//! `index.dfx`, all integers little-endian; the file is exactly 80 + P + S + R bytes:
//!
//! | bytes   | field                                                                  |
//! |---------|------------------------------------------------------------------------|
//! | 0..8    | magic `DUPFINDX`                                                       |
//! | 8..12   | format version, u32 (1)                                                |
//! | 12..16  | low 32 bits of xxh3-64 of bytes 0..12 (kept by every version)          |
//! | 16..24  | generation, u64                                                        |
//! | 24..32  | record count, u64                                                      |
//! | 32..56  | section lengths P, S, R, u64 each                                      |
//! | 56..72  | xxh3-64 of the params section, then of the records section             |
//! | 72..80  | xxh3-64 of bytes 0..72                                                 |
//! | P bytes | params: `IndexParams` as JSON                                          |
//! | S bytes | sets: each record's shingle set in record order, u64 values            |
//! | R bytes | records, one per document                                              |
//!
//! A record: path (u32 length + bytes), flags (u8: 1 = line, 2 = id), line (u64, if flagged),
//! id (u32 length + UTF-8, if flagged), size and bytes (u64 each), mtime_ns (i128), dev, inode (u64),
//! content_hash (u128), simhash (u64), signature (u32 count + u32 values), set count (u64) and
//! the xxh3-64 of the set's bytes. Sets come before records so a writer can stream them and keep
//! only the small records in memory; set offsets are the running sum of the set lengths.
//!
//! Open checks the header, the file length and the checksums of params and records, and keeps
//! records in memory without their sets (about 600 bytes a document at K = 128, against ~8 KiB
//! for a set); a set is read, and its checksum checked, on demand. Unix only: paths are stored
//! as raw bytes and sets are read with `pread`.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::dir::IndexDir;

/// Version of the `index.dfx` layout this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

const MAGIC: &[u8; 8] = b"DUPFINDX";
const HEADER_LEN: u64 = 80;
const DATA: &str = "index.dfx";
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
        let path = dir.join(DATA);
        let file = open_data(&open_dir(dir)?)?;
        let h = read_header(&file, &path)?;
        let corrupt = || format!("{}: corrupt index", path.display());
        let params = read_section(&file, &path, HEADER_LEN, h.params_len, h.params_sum)?;
        let params = serde_json::from_slice(&params).with_context(corrupt)?;
        let records_at = HEADER_LEN + h.params_len + h.sets_len;
        let records = read_section(&file, &path, records_at, h.records_len, h.records_sum)?;
        let (entries, sets) =
            decode_records(&records, h.count, HEADER_LEN + h.params_len, h.sets_len)
                .with_context(corrupt)?;
        Ok(Index {
            path,
            file,
            generation: h.generation,
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
        let set = self
            .sets
            .get(i)
            .with_context(|| format!("{} has no record {i}", self.path.display()))?;
        let mut buf = vec![0; (set.len * 8) as usize];
        self.file
            .read_exact_at(&mut buf, set.offset)
            .with_context(|| format!("reading {}", self.path.display()))?;
        if xxh3_64(&buf) != set.sum {
            bail!(
                "{}: corrupt index: checksum mismatch in the set of record {i}",
                self.path.display()
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
    // The next generation keeps the mode of the file it replaces (an index made private stays
    // so), whatever the umask of this run.
    let mode = data
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .mode();
    commit(&dir, current + 1, params, records, Some(mode), None)?;
    Ok(current + 1)
}

/// Writes `generation` and makes it live; the caller holds the lock. Each step ends at a state a
/// killed writer can leave behind; `stop_after` ends the commit there, for the tests. `mode`:
/// the new file's permissions (None: 0666 less the umask).
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
    let io = || format!("writing {}", path.display());
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

/// Refuses a directory holding anything but an interrupted `create`'s leftovers; makes a
/// missing one.
pub fn check_fresh(dir: &Path) -> Result<()> {
    check_fresh_dir(&IndexDir::create(dir)?)
}

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

struct Header {
    generation: u64,
    count: u64,
    params_len: u64,
    sets_len: u64,
    records_len: u64,
    params_sum: u64,
    records_sum: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut h = [0; HEADER_LEN as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        let prefix_sum = xxh3_64(&h[..12]) as u32;
        h[12..16].copy_from_slice(&prefix_sum.to_le_bytes());
        let fields = [
            self.generation,
            self.count,
            self.params_len,
            self.sets_len,
            self.records_len,
            self.params_sum,
            self.records_sum,
        ];
        for (i, v) in fields.iter().enumerate() {
            h[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let sum = xxh3_64(&h[..72]);
        h[72..].copy_from_slice(&sum.to_le_bytes());
        h
    }
}

fn read_header(file: &File, path: &Path) -> Result<Header> {
    let len = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    let mut h = vec![0; len.min(HEADER_LEN) as usize];
    file.read_exact_at(&mut h, 0)
        .with_context(|| format!("reading {}", path.display()))?;
    let p = path.display();
    if h.len() < MAGIC.len() && !MAGIC.starts_with(&h)
        || h.len() >= MAGIC.len() && h[..8] != MAGIC[..]
    {
        bail!("{p} is not a dupfind index (bad magic)");
    }
    if h.len() < 16 {
        bail!("{p}: corrupt index: truncated inside the header");
    }
    if le64(&h[12..16]) as u32 != xxh3_64(&h[..12]) as u32 {
        bail!("{p}: corrupt index: header checksum mismatch");
    }
    let version = le64(&h[8..12]) as u32;
    if version != FORMAT_VERSION {
        bail!("{p}: index format version {version} is not supported; this build reads version {FORMAT_VERSION}");
    }
    if h.len() < HEADER_LEN as usize {
        bail!("{p}: corrupt index: truncated inside the header");
    }
    if le64(&h[72..]) != xxh3_64(&h[..72]) {
        bail!("{p}: corrupt index: header checksum mismatch");
    }
    let f = |i: usize| le64(&h[16 + 8 * i..24 + 8 * i]);
    let header = Header {
        generation: f(0),
        count: f(1),
        params_len: f(2),
        sets_len: f(3),
        records_len: f(4),
        params_sum: f(5),
        records_sum: f(6),
    };
    let want = [header.params_len, header.sets_len, header.records_len]
        .iter()
        .try_fold(HEADER_LEN, |sum, &n| sum.checked_add(n))
        .ok_or_else(|| anyhow!("{p}: corrupt index: impossible section lengths"))?;
    if len < want {
        bail!("{p}: corrupt index: truncated ({len} bytes of {want})");
    }
    if len > want {
        bail!("{p}: corrupt index: {} bytes past the end", len - want);
    }
    Ok(header)
}

/// Reads a section whose bounds the header has checked against the file length.
fn read_section(file: &File, path: &Path, at: u64, len: u64, sum: u64) -> Result<Vec<u8>> {
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, at)
        .with_context(|| format!("reading {}", path.display()))?;
    if xxh3_64(&buf) != sum {
        bail!(
            "{}: corrupt index: checksum mismatch in the section at byte {at}",
            path.display()
        );
    }
    Ok(buf)
}

fn encode_entry(e: &Entry, out: &mut Vec<u8>) -> Result<()> {
    let len32 = |n: usize| u32::try_from(n).context("a record field is over 4 GiB");
    out.extend_from_slice(&len32(e.path.len())?.to_le_bytes());
    out.extend_from_slice(&e.path);
    out.push(u8::from(e.line.is_some()) | u8::from(e.id.is_some()) << 1);
    if let Some(line) = e.line {
        out.extend_from_slice(&line.to_le_bytes());
    }
    if let Some(id) = &e.id {
        out.extend_from_slice(&len32(id.len())?.to_le_bytes());
        out.extend_from_slice(id.as_bytes());
    }
    out.extend_from_slice(&e.size.to_le_bytes());
    out.extend_from_slice(&e.bytes.to_le_bytes());
    out.extend_from_slice(&e.mtime_ns.to_le_bytes());
    out.extend_from_slice(&e.dev.to_le_bytes());
    out.extend_from_slice(&e.inode.to_le_bytes());
    out.extend_from_slice(&e.content_hash.to_le_bytes());
    out.extend_from_slice(&e.simhash.to_le_bytes());
    out.extend_from_slice(&len32(e.signature.len())?.to_le_bytes());
    e.signature
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    Ok(())
}

/// Decodes `count` records and places their sets, which must fill the sets section exactly.
fn decode_records(
    buf: &[u8],
    count: u64,
    sets_at: u64,
    sets_len: u64,
) -> Result<(Vec<Entry>, Vec<SetRef>)> {
    let mut c = Cursor { buf, pos: 0 };
    let (mut entries, mut sets, mut offset) = (Vec::new(), Vec::new(), sets_at);
    for _ in 0..count {
        entries.push(decode_entry(&mut c)?);
        let (len, sum) = (c.u64()?, c.u64()?);
        sets.push(SetRef { offset, len, sum });
        offset = len
            .checked_mul(8)
            .and_then(|n| n.checked_add(offset))
            .context("impossible set length")?;
    }
    if c.pos != buf.len() {
        bail!("{} bytes after the last record", buf.len() - c.pos);
    }
    if offset != sets_at + sets_len {
        bail!("the sets do not fill their section");
    }
    Ok((entries, sets))
}

fn decode_entry(c: &mut Cursor) -> Result<Entry> {
    let path = c.bytes32()?.to_vec();
    let flags = c.take(1)?[0];
    if flags > 3 {
        bail!("unknown record flags {flags:#x}");
    }
    let line = if flags & 1 != 0 { Some(c.u64()?) } else { None };
    let id = match flags & 2 {
        0 => None,
        _ => Some(String::from_utf8(c.bytes32()?.to_vec()).context("a record id is not UTF-8")?),
    };
    Ok(Entry {
        path,
        line,
        id,
        size: c.u64()?,
        bytes: c.u64()?,
        mtime_ns: i128::from_le_bytes(c.array()?),
        dev: c.u64()?,
        inode: c.u64()?,
        content_hash: u128::from_le_bytes(c.array()?),
        simhash: c.u64()?,
        signature: {
            let n = c.u32()? as usize;
            let bytes = c.take(n.saturating_mul(4))?;
            bytes.chunks_exact(4).map(|b| le64(b) as u32).collect()
        },
    })
}

/// Reads the records section front to back; running past its end is an error, not a panic.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = (self.pos.checked_add(n))
            .filter(|&end| end <= self.buf.len())
            .context("a record runs past the end of its section")?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn bytes32(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// Little-endian bytes (at most 8) as a u64.
fn le64(b: &[u8]) -> u64 {
    let mut a = [0; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn params() -> IndexParams {
        IndexParams {
            method: "minhash".into(),
            shingle: "word".into(),
            ngram: 5,
            num_perm: 4,
            sketch: "oph".into(),
            bands: 2,
            rows: 2,
            seed: 0,
            hashing: 1,
        }
    }

    fn record(
        path: &[u8],
        line: Option<u64>,
        id: Option<&str>,
        signature: &[u32],
        set: &[u64],
    ) -> Record {
        let entry = Entry {
            path: path.to_vec(),
            line,
            id: id.map(String::from),
            size: 10 + set.len() as u64,
            bytes: 5 + set.len() as u64,
            mtime_ns: -1_500_000_001,
            dev: 3,
            inode: u64::MAX - 1,
            content_hash: u128::MAX / 3,
            signature: signature.to_vec(),
            simhash: 0xdead_beef,
        };
        Record {
            entry,
            set: set.to_vec(),
        }
    }

    fn state_a() -> Vec<Record> {
        vec![
            record(
                b"a/\xff\xfe.txt",
                None,
                None,
                &[1, 2, 3, u32::MAX],
                &[1, 5, u64::MAX],
            ),
            record(b"dump.jsonl", Some(3), Some("doc-\u{e9}"), &[], &[]),
            record(b"", Some(0), None, &[7; 4], &[42]),
        ]
    }

    fn state_b() -> Vec<Record> {
        vec![record(b"b.txt", None, Some(""), &[9, 9, 9, 9], &[2, 3])]
    }

    fn ok(records: &[Record]) -> impl Iterator<Item = Result<Record>> + '_ {
        records.iter().cloned().map(Ok)
    }

    fn load(dir: &Path) -> Result<(u64, IndexParams, Vec<Record>)> {
        let index = Index::open(dir)?;
        let records = index.records().collect::<Result<_>>()?;
        Ok((index.generation(), index.params().clone(), records))
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = (fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn err(r: Result<impl Sized>) -> String {
        format!("{:#}", r.err().unwrap())
    }

    #[test]
    fn round_trips_params_and_records() {
        let dir = tempfile::tempdir().unwrap();
        let idx = dir.path().join("idx");
        create(&idx, &params(), ok(&state_a())).unwrap();
        assert_eq!(load(&idx).unwrap(), (1, params(), state_a()));
        let index = Index::open(&idx).unwrap();
        assert_eq!(index.entries()[1], state_a()[1].entry);
        assert_eq!(index.read_set(2).unwrap(), vec![42]);
        assert!(index.read_set(3).is_err());
        assert_eq!(names(&idx), ["index.dfx", "lock"]);
    }

    #[test]
    fn replace_bumps_generation_and_rejects_a_stale_one() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let old = Index::open(dir.path()).unwrap();
        assert_eq!(replace(dir.path(), 1, &params(), old.records()).unwrap(), 2);
        assert_eq!(
            replace(dir.path(), 2, &params(), ok(&state_b())).unwrap(),
            3
        );
        assert_eq!(load(dir.path()).unwrap(), (3, params(), state_b()));
        // A reader keeps the generation it opened.
        assert_eq!(
            old.records().collect::<Result<Vec<_>>>().unwrap(),
            state_a()
        );
        let stale = err(replace(dir.path(), 2, &params(), ok(&state_a())));
        assert!(
            stale.contains("changed during this run (generation 3, expected 2)"),
            "{stale}"
        );
        assert_eq!(load(dir.path()).unwrap(), (3, params(), state_b()));
        let again = err(create(dir.path(), &params(), ok(&state_a())));
        assert!(again.contains("already holds an index"), "{again}");
    }

    #[test]
    fn refuses_another_hash_scheme_or_method_first() {
        let other = IndexParams {
            hashing: 2,
            seed: 9,
            ..params()
        };
        let e = err(check_compatible(&params(), &other));
        assert!(
            e.contains("hashes differently (hash scheme 1, this one uses 2)"),
            "{e}"
        );
        let simhash = IndexParams {
            method: "simhash".into(),
            num_perm: 0,
            ..params()
        };
        assert_eq!(
            err(check_compatible(&params(), &simhash)),
            "index was built with --method minhash, this scan uses --method simhash"
        );
    }

    #[test]
    fn names_every_differing_parameter() {
        assert!(check_compatible(&params(), &params()).is_ok());
        let wanted = IndexParams {
            ngram: 3,
            seed: 7,
            ..params()
        };
        assert_eq!(
            err(check_compatible(&params(), &wanted)),
            "index was built with --ngram 5, this scan uses --ngram 3; \
             index was built with --seed 0, this scan uses --seed 7"
        );
    }

    #[test]
    fn reports_truncation_at_every_length() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let path = dir.path().join(DATA);
        let bytes = fs::read(&path).unwrap();
        for cut in 0..bytes.len() {
            fs::write(&path, &bytes[..cut]).unwrap();
            let msg = err(Index::open(dir.path()));
            assert!(msg.contains("truncated"), "cut at {cut}: {msg}");
        }
    }

    #[test]
    fn reports_a_flipped_byte_in_every_section() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let path = dir.path().join(DATA);
        let bytes = fs::read(&path).unwrap();
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            fs::write(&path, &bad).unwrap();
            let msg = err(load(dir.path()));
            let want = if at < 8 {
                "not a dupfind index"
            } else {
                "checksum mismatch"
            };
            assert!(msg.contains(want), "byte {at}: {msg}");
        }
    }

    #[test]
    fn refuses_a_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.txt"), "hello").unwrap();
        assert!(err(Index::open(dir.path())).contains("not a dupfind index"));
        assert!(err(create(dir.path(), &params(), ok(&state_a()))).contains("not a dupfind index"));
        assert!(
            err(replace(dir.path(), 1, &params(), ok(&state_a()))).contains("not a dupfind index")
        );
        fs::write(dir.path().join(DATA), "not an index at all").unwrap();
        assert!(err(Index::open(dir.path())).contains("not a dupfind index (bad magic)"));
        assert!(
            err(replace(dir.path(), 1, &params(), ok(&state_a()))).contains("not a dupfind index")
        );
        assert_eq!(names(dir.path()), ["index.dfx", "notes.txt"]);
        assert_eq!(
            fs::read(dir.path().join(DATA)).unwrap(),
            b"not an index at all"
        );
    }

    #[test]
    fn names_both_versions_for_a_future_format() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let path = dir.path().join(DATA);
        let mut bytes = fs::read(&path).unwrap();
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        let prefix_sum = xxh3_64(&bytes[..12]) as u32;
        bytes[12..16].copy_from_slice(&prefix_sum.to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        let msg = err(Index::open(dir.path()));
        assert!(
            msg.contains("version 2 is not supported; this build reads version 1"),
            "{msg}"
        );
    }

    #[test]
    fn a_killed_commit_leaves_the_old_or_the_new_state() {
        for stop in 1..=3 {
            let dir = tempfile::tempdir().unwrap();
            create(dir.path(), &params(), ok(&state_a())).unwrap();
            let idir = IndexDir::open(dir.path()).unwrap().unwrap();
            commit(&idir, 2, &params(), ok(&state_b()), None, Some(stop)).unwrap();
            let want = if stop == 1 {
                (1, state_a())
            } else {
                (2, state_b())
            };
            let (generation, _, records) = load(dir.path()).unwrap();
            assert_eq!((generation, records), want, "stopped after step {stop}");
            if stop == 1 {
                // Killed mid-write: a partial temp file is ignored just the same.
                let temp = (names(dir.path()).into_iter())
                    .find(|n| n.ends_with(".tmp"))
                    .map(|n| dir.path().join(n))
                    .unwrap();
                let len = fs::metadata(&temp).unwrap().len();
                fs::File::options()
                    .write(true)
                    .open(&temp)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
                assert_eq!(load(dir.path()).unwrap().2, state_a());
            }
            let next = replace(dir.path(), want.0, &params(), ok(&state_a())).unwrap();
            assert_eq!(load(dir.path()).unwrap(), (next, params(), state_a()));
            assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
        }
    }

    #[test]
    fn an_interrupted_create_can_be_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let idir = IndexDir::open(dir.path()).unwrap().unwrap();
        commit(&idir, 1, &params(), ok(&state_a()), None, Some(1)).unwrap();
        assert!(err(Index::open(dir.path())).contains("building it was interrupted"));
        create(dir.path(), &params(), ok(&state_b())).unwrap();
        assert_eq!(load(dir.path()).unwrap(), (1, params(), state_b()));
        assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
    }

    #[test]
    fn a_failed_write_changes_nothing_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let b = state_b();
        let bad = ok(&b).chain([Err(anyhow!("a set would not read"))]);
        assert!(err(replace(dir.path(), 1, &params(), bad)).contains("a set would not read"));
        assert_eq!(load(dir.path()).unwrap(), (1, params(), state_a()));
        assert_eq!(names(dir.path()), ["index.dfx", "lock"]);
    }

    #[test]
    fn a_second_writer_gets_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path(), &params(), ok(&state_a())).unwrap();
        let held = IndexDir::open(dir.path())
            .unwrap()
            .unwrap()
            .lock(LOCK)
            .unwrap();
        let msg = err(replace(dir.path(), 1, &params(), ok(&state_b())));
        assert!(msg.contains("is being updated by another process"), "{msg}");
        assert_eq!(load(dir.path()).unwrap().0, 1);
        drop(held);
        assert_eq!(
            replace(dir.path(), 1, &params(), ok(&state_b())).unwrap(),
            2
        );
    }
}
