//! Writing a segment: documents are added in row order, each with its blob; the segment file
//! and its document table are written under fresh temporary names in the index directory and
//! synced, ready to be renamed into place.
//!
//! Blobs stream into the segment file as they come; rows and strings stream into two unnamed
//! scratch files (made in the index directory and unlinked at once, so a killed writer leaves
//! nothing of them) and are copied in at the end, once the number of documents is known. The
//! keys are gathered in memory, 16 bytes per document per table (352 bytes a document at 19
//! bands), up to [`KEY_BUDGET`] entries; past that, each table's keys are sorted and spilled to a
//! scratch file as a run, and the runs are merged when the segment is finished. A build or a
//! compaction of any size therefore holds at most [`KEY_BUDGET`] keys, and writes the same bytes
//! as if it had held them all. Identical contents share one blob (remembered a million distinct
//! contents at a time, [`SHARED_MAX`]).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use anyhow::{bail, Context, Result};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::codec::BlobKind;
use crate::index::dir::{sum_file, IndexDir};
use crate::index::keys::{IndexKeying, Keying};
use crate::index::store::Entry;

use super::layout::{
    encode_row, row_width, BlobRef, Header, Row, Section, Span, BLOCK, ENTRY, HEADER_LEN, SECTIONS,
};
use super::table::TableWriter;
use super::{data_name, table_name};

/// Bytes buffered per stream before a write.
const BUFFER: usize = 1 << 20;

/// Keys (all tables together) held in memory before they are spilled as sorted runs: 32 MiB.
pub const KEY_BUDGET: usize = 2 << 20;

/// Distinct contents remembered for sharing blobs (about 70 MiB); past that the memory starts
/// afresh, so a later copy of a content seen before then is stored again.
const SHARED_MAX: usize = 1 << 20;

/// Bytes read at a time from each run while merging.
const RUN_BUFFER: usize = 64 << 10;

/// What a segment is made of besides its documents.
pub struct Plan {
    /// Its number in the index (never reused).
    pub number: u64,
    /// The index it belongs to.
    pub index_id: u128,
    /// Signature values per document.
    pub lanes: usize,
    /// How its documents are keyed.
    pub keying: Keying,
    /// Its zstd dictionaries.
    pub dicts: Vec<Vec<u8>>,
    /// Documents of older segments it removes: (segment number, row), sorted and distinct.
    pub tombstones: Vec<(u64, u32)>,
    /// The mode of the manifest its files join ([`crate::index::dir::new_file_mode`]; None:
    /// 0666 less the umask).
    pub mode: Option<u32>,
}

/// A segment written and synced under temporary names.
#[derive(Clone, Debug)]
pub struct Written {
    pub number: u64,
    /// Temporary name of the segment file, and its final name.
    pub temp: String,
    pub name: String,
    /// Temporary and final names of its document table.
    pub table_temp: String,
    pub table_name: String,
    pub bytes: u64,
    pub header_sum: u64,
    pub table_bytes: u64,
    pub table_sum: u64,
    pub docs: u64,
    pub tombstones: u64,
    /// Bytes written in all (segment and table).
    pub written: u64,
}

/// A stream of bytes written at increasing offsets of a file.
struct Stream {
    file: File,
    at: u64,
    buf: Vec<u8>,
}

impl Stream {
    fn new(file: File, at: u64) -> Stream {
        Stream {
            file,
            at,
            buf: Vec::with_capacity(BUFFER),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all_at(&self.buf, self.at)?;
        self.at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Offset of the next byte.
    fn position(&self) -> u64 {
        self.at + self.buf.len() as u64
    }
}

/// A segment being written.
pub struct SegmentWriter<'a> {
    dir: &'a IndexDir,
    plan: Plan,
    temp: String,
    file: File,
    table_temp: String,
    table: Option<TableWriter>,
    table_file: File,
    sets: Stream,
    rows: Stream,
    strings: Stream,
    keys: Vec<Vec<(u64, u32)>>,
    /// Keys held in `keys`, all tables together.
    held: usize,
    /// Keys held at most before they are spilled.
    budget: usize,
    /// Sorted runs of keys spilled so far (a scratch file, made at the first spill), and per
    /// table the (offset, entries) of each of its runs.
    runs: Option<Stream>,
    run_spans: Vec<Vec<(u64, u64)>>,
    count: u32,
    shared: HashMap<(u128, u8, u16), BlobRef>,
    key_buf: Vec<u64>,
    row_buf: Vec<u8>,
    /// Set once the files are complete: until then, dropping the writer removes them.
    done: bool,
}

impl Drop for SegmentWriter<'_> {
    fn drop(&mut self) {
        if !self.done {
            // A failed write gives its space back; a killed one leaves the files for the next
            // writer to remove.
            let _ = self.dir.remove(&self.temp);
            let _ = self.dir.remove(&self.table_temp);
        }
    }
}

impl<'a> SegmentWriter<'a> {
    /// Starts segment `plan.number` in `dir`.
    pub fn new(dir: &'a IndexDir, plan: Plan) -> Result<SegmentWriter<'a>> {
        if !plan.keying.fits(plan.lanes) {
            bail!("the index's bands do not fit in its signatures");
        }
        if plan.dicts.len() >= usize::from(super::layout::NO_DICT) {
            bail!("too many dictionaries for one segment");
        }
        let (temp, file) = dir.create_temp(&data_name(plan.number), plan.mode)?;
        let (table_temp, table_file) = dir.create_temp(&table_name(plan.number), plan.mode)?;
        let scratch = |what: &str| -> Result<File> {
            let (name, f) = dir.create_temp(&format!("{}.{what}", data_name(plan.number)), None)?;
            dir.remove(&name)?;
            Ok(f)
        };
        let rows = Stream::new(scratch("rows")?, 0);
        let strings = Stream::new(scratch("strings")?, 0);
        let sets = Stream::new(file.try_clone().context("opening a segment")?, HEADER_LEN);
        let tables = plan.keying.table_ids().len();
        let table_copy = table_file.try_clone().context("opening a segment")?;
        Ok(SegmentWriter {
            dir,
            table: Some(TableWriter::new(table_copy, plan.index_id, plan.number)),
            table_file,
            plan,
            temp,
            file,
            table_temp,
            sets,
            rows,
            strings,
            keys: vec![Vec::new(); tables],
            held: 0,
            budget: KEY_BUDGET,
            runs: None,
            run_spans: vec![Vec::new(); tables],
            count: 0,
            shared: HashMap::new(),
            key_buf: Vec::new(),
            row_buf: Vec::new(),
            done: false,
        })
    }

    /// Adds a document whose blob is `blob` of `kind`, compressed with dictionary `dict` of
    /// this segment. A blob of the same content, kind and dictionary is stored once.
    pub fn add(
        &mut self,
        entry: &Entry,
        kind: BlobKind,
        dict: Option<u16>,
        blob: &[u8],
    ) -> Result<()> {
        let io = |e: std::io::Error| anyhow::Error::new(e).context("writing a segment");
        if self.count == u32::MAX {
            bail!("a segment holds at most {} documents", u32::MAX);
        }
        if dict.is_some_and(|d| usize::from(d) >= self.plan.dicts.len()) {
            bail!("a blob names a dictionary the segment does not hold");
        }
        let key = (entry.content_hash, kind.code(), dict.unwrap_or(u16::MAX));
        let blob_ref = match self.shared.get(&key) {
            Some(r) => *r,
            None => {
                let r = BlobRef {
                    kind,
                    offset: self.sets.position() - HEADER_LEN,
                    len: blob.len() as u64,
                    sum: xxh3_64(blob),
                    dict,
                };
                self.sets.write(blob).map_err(io)?;
                if self.shared.len() >= SHARED_MAX {
                    self.shared.clear();
                }
                self.shared.insert(key, r);
                r
            }
        };
        let row = Row {
            entry: entry.clone(),
            blob: blob_ref,
        };
        self.row_buf.clear();
        encode_row(
            &row,
            self.strings.position(),
            self.plan.lanes,
            &mut self.row_buf,
        )?;
        self.rows.write(&self.row_buf).map_err(io)?;
        self.strings.write(&entry.path).map_err(io)?;
        self.strings
            .write(entry.id.as_deref().unwrap_or("").as_bytes())
            .map_err(io)?;
        self.key_buf.clear();
        self.plan.keying.entry_keys(entry, &mut self.key_buf);
        for (table, &k) in self.keys.iter_mut().zip(&self.key_buf) {
            table.push((k, self.count));
        }
        self.held += self.key_buf.len();
        if let Some(t) = &mut self.table {
            t.add(self.count, entry)?;
        }
        self.count += 1;
        if self.held >= self.budget {
            self.spill_keys().map_err(io)?;
        }
        Ok(())
    }

    /// Adds a dictionary blobs may name (a staged run's shards each bring theirs), unless the
    /// segment holds the same one already; returns its number in the segment.
    pub fn add_dict(&mut self, dict: Vec<u8>) -> Result<u16> {
        if let Some(at) = self.plan.dicts.iter().position(|d| *d == dict) {
            return Ok(at as u16);
        }
        if self.plan.dicts.len() + 1 >= usize::from(super::layout::NO_DICT) {
            bail!("too many dictionaries for one segment");
        }
        self.plan.dicts.push(dict);
        Ok((self.plan.dicts.len() - 1) as u16)
    }

    /// Sorts each table's keys held in memory and appends them to the runs file as one run.
    fn spill_keys(&mut self) -> std::io::Result<()> {
        if self.runs.is_none() {
            let (name, f) = self
                .dir
                .create_temp(&format!("{}.keys", data_name(self.plan.number)), None)
                .map_err(std::io::Error::other)?;
            self.dir.remove(&name).map_err(std::io::Error::other)?;
            self.runs = Some(Stream::new(f, 0));
        }
        let Some(runs) = self.runs.as_mut() else {
            return Ok(());
        };
        for (keys, spans) in self.keys.iter_mut().zip(&mut self.run_spans) {
            if keys.is_empty() {
                continue;
            }
            keys.sort_unstable();
            spans.push((runs.position(), keys.len() as u64));
            let mut bytes = Vec::with_capacity(keys.len() * ENTRY as usize);
            for &(k, row) in keys.iter() {
                bytes.extend_from_slice(&k.to_le_bytes());
                bytes.extend_from_slice(&row.to_le_bytes());
            }
            runs.write(&bytes)?;
            keys.clear();
        }
        self.held = 0;
        runs.flush()
    }

    /// Holds at most `budget` keys in memory (tests: many runs from few documents).
    #[cfg(test)]
    pub fn with_key_budget(mut self, budget: usize) -> Self {
        self.budget = budget.max(1);
        self
    }

    /// Completes the segment file and its table, syncs both, and returns what was written. The
    /// files keep their temporary names.
    pub fn finish(mut self) -> Result<Written> {
        let io = |e: std::io::Error| anyhow::Error::new(e).context("writing a segment");
        self.sets.flush().map_err(io)?;
        self.rows.flush().map_err(io)?;
        self.strings.flush().map_err(io)?;
        let docs = u64::from(self.count);
        let mut spans = [Span::default(); 8];
        let mut at = self.sets.position();
        spans[Section::Sets as usize] = Span {
            offset: HEADER_LEN,
            len: at - HEADER_LEN,
            sum: 0,
        };
        let mut out = Stream::new(self.file.try_clone().map_err(io)?, at);
        for (section, scratch) in [
            (Section::Rows, &self.rows),
            (Section::Strings, &self.strings),
        ] {
            copy(&scratch.file, scratch.position(), &mut out).map_err(io)?;
            spans[section as usize] = Span {
                offset: at,
                len: out.position() - at,
                sum: 0,
            };
            at = out.position();
        }
        debug_assert_eq!(
            spans[Section::Rows as usize].len,
            docs * row_width(self.plan.lanes) as u64
        );
        let tables = self.plan.keying.table_ids();
        let (mut fences, mut directory) = (Vec::new(), Vec::new());
        let runs = self.runs.as_ref().map(|r| &r.file);
        for ((id, keys), spans) in tables.iter().zip(&mut self.keys).zip(&self.run_spans) {
            keys.sort_unstable();
            directory.extend_from_slice(&id.to_le_bytes());
            directory.extend_from_slice(&0u32.to_le_bytes());
            directory.extend_from_slice(&docs.to_le_bytes());
            directory.extend_from_slice(&((fences.len() / 16) as u64).to_le_bytes());
            let held = std::mem::take(keys);
            let written = match runs {
                Some(file) if !spans.is_empty() => {
                    write_table(merge_runs(file, spans, held), &mut out, &mut fences)
                }
                _ => write_table(held.into_iter().map(Ok), &mut out, &mut fences),
            }
            .map_err(io)?;
            if written != docs {
                bail!("a key table of {written} entries for {docs} documents");
            }
        }
        let mut dicts = Vec::new();
        dicts.extend_from_slice(&(self.plan.dicts.len() as u32).to_le_bytes());
        for d in &self.plan.dicts {
            dicts.extend_from_slice(&(d.len() as u64).to_le_bytes());
        }
        for d in &self.plan.dicts {
            dicts.extend_from_slice(d);
        }
        let mut tombstones = Vec::new();
        for &(segment, row) in &self.plan.tombstones {
            tombstones.extend_from_slice(&segment.to_le_bytes());
            tombstones.extend_from_slice(&row.to_le_bytes());
        }
        let keys_at = at;
        spans[Section::Keys as usize] = Span {
            offset: keys_at,
            len: out.position() - keys_at,
            sum: 0,
        };
        at = out.position();
        for (section, bytes) in [
            (Section::Fences, &fences),
            (Section::Tables, &directory),
            (Section::Dicts, &dicts),
            (Section::Tombstones, &tombstones),
        ] {
            out.write(bytes).map_err(io)?;
            spans[section as usize] = Span {
                offset: at,
                len: bytes.len() as u64,
                sum: xxh3_64(bytes),
            };
            at += bytes.len() as u64;
        }
        out.flush().map_err(io)?;
        debug_assert_eq!(SECTIONS.len(), spans.len());
        let header = Header {
            index_id: self.plan.index_id,
            number: self.plan.number,
            docs,
            lanes: self.plan.lanes as u32,
            tables: tables.len() as u32,
            dicts: self.plan.dicts.len() as u32,
            tombstones: self.plan.tombstones.len() as u64,
            spans,
        };
        let head = header.encode();
        self.file.write_all_at(&head, 0).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        if let Some(t) = self.table.take() {
            t.finish()?;
        }
        self.table_file.sync_all().map_err(io)?;
        let table_bytes = self.table_file.metadata().map_err(io)?.len();
        let table_sum = sum_file(&self.table_file, table_bytes).map_err(io)?;
        self.done = true;
        Ok(Written {
            number: self.plan.number,
            name: data_name(self.plan.number),
            temp: self.temp.clone(),
            table_name: table_name(self.plan.number),
            table_temp: self.table_temp.clone(),
            bytes: at,
            header_sum: xxh3_64(&head),
            table_bytes,
            table_sum,
            docs,
            tombstones: header.tombstones,
            written: at + table_bytes,
        })
    }
}

/// Writes a table's sorted entries as blocks of [`BLOCK`], each fenced by its first key and
/// checksum; returns how many there were.
fn write_table(
    entries: impl Iterator<Item = std::io::Result<(u64, u32)>>,
    out: &mut Stream,
    fences: &mut Vec<u8>,
) -> std::io::Result<u64> {
    let mut block = Vec::with_capacity((BLOCK * ENTRY) as usize);
    let mut first = 0u64;
    let mut count = 0u64;
    let mut end_block = |block: &mut Vec<u8>, first: u64, out: &mut Stream| {
        fences.extend_from_slice(&first.to_le_bytes());
        fences.extend_from_slice(&xxh3_64(block).to_le_bytes());
        let r = out.write(block);
        block.clear();
        r
    };
    for entry in entries {
        let (k, row) = entry?;
        if block.is_empty() {
            first = k;
        }
        block.extend_from_slice(&k.to_le_bytes());
        block.extend_from_slice(&row.to_le_bytes());
        count += 1;
        if count.is_multiple_of(BLOCK) {
            end_block(&mut block, first, out)?;
        }
    }
    if !block.is_empty() {
        end_block(&mut block, first, out)?;
    }
    Ok(count)
}

/// A run of sorted entries in the runs file, read a buffer at a time.
struct Run<'f> {
    file: &'f File,
    at: u64,
    left: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Run<'_> {
    fn next(&mut self) -> std::io::Result<Option<(u64, u32)>> {
        if self.pos == self.buf.len() {
            if self.left == 0 {
                return Ok(None);
            }
            let n = self.left.min((RUN_BUFFER as u64) / ENTRY);
            self.buf.resize((n * ENTRY) as usize, 0);
            self.file.read_exact_at(&mut self.buf, self.at)?;
            self.at += n * ENTRY;
            self.left -= n;
            self.pos = 0;
        }
        let e = &self.buf[self.pos..self.pos + ENTRY as usize];
        self.pos += ENTRY as usize;
        let k = u64::from_le_bytes(e[..8].try_into().unwrap_or_default());
        let row = u32::from_le_bytes(e[8..12].try_into().unwrap_or_default());
        Ok(Some((k, row)))
    }
}

/// The entries of a table's spilled runs (`spans` in `file`) and of those still `held`, merged
/// in order.
fn merge_runs<'f>(
    file: &'f File,
    spans: &[(u64, u64)],
    mut held: Vec<(u64, u32)>,
) -> impl Iterator<Item = std::io::Result<(u64, u32)>> + 'f {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut runs: Vec<Run<'f>> = spans
        .iter()
        .map(|&(at, n)| Run {
            file,
            at,
            left: n,
            buf: Vec::new(),
            pos: 0,
        })
        .collect();
    // The keys still in memory are one more run, already sorted.
    held.reverse();
    let mut heap: BinaryHeap<Reverse<((u64, u32), usize)>> = BinaryHeap::new();
    let mut failed: Option<std::io::Error> = None;
    for (i, r) in runs.iter_mut().enumerate() {
        match r.next() {
            Ok(Some(e)) => heap.push(Reverse((e, i))),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
    }
    let mem = runs.len();
    if let Some(e) = held.pop() {
        heap.push(Reverse((e, mem)));
    }
    std::iter::from_fn(move || {
        if let Some(e) = failed.take() {
            return Some(Err(e));
        }
        let Reverse((entry, from)) = heap.pop()?;
        let next = if from == mem {
            Ok(held.pop())
        } else {
            runs[from].next()
        };
        match next {
            Ok(Some(e)) => heap.push(Reverse((e, from))),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
        Some(Ok(entry))
    })
}

/// Copies the first `len` bytes of `from` onto `out`.
fn copy(from: &File, len: u64, out: &mut Stream) -> std::io::Result<()> {
    let mut buf = vec![0u8; BUFFER];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(BUFFER as u64) as usize;
        from.read_exact_at(&mut buf[..n], at)?;
        out.write(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::index::segment::{Expected, Segment};

    fn entry(i: u64) -> Entry {
        Entry {
            path: format!("/d/{i:04}.txt").into_bytes(),
            line: None,
            id: None,
            size: 100 + i,
            bytes: 100 + i,
            mtime_ns: i128::from(i),
            ctime_ns: i128::from(i) + 1,
            dev: 1,
            inode: 1000 + i,
            // Some contents shared, some keys equal across documents.
            content_hash: u128::from(i % 37) << 64 | u128::from(i % 37),
            signature: (0..8).map(|j| ((i % 13) * 31 + j) as u32).collect(),
            simhash: i,
        }
    }

    fn write(dir: &IndexDir, number: u64, budget: Option<usize>, n: u64) -> Written {
        let plan = Plan {
            number,
            index_id: 42,
            lanes: 8,
            keying: Keying::Bands { bands: 4, rows: 2 },
            dicts: Vec::new(),
            tombstones: vec![(1, 3)],
            mode: None,
        };
        let mut w = SegmentWriter::new(dir, plan).unwrap();
        if let Some(b) = budget {
            w = w.with_key_budget(b);
        }
        for i in 0..n {
            let blob = format!("content {}", i % 37);
            w.add(&entry(i), BlobKind::Plain, None, blob.as_bytes())
                .unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn keys_spilled_in_sorted_runs_give_the_same_segment_as_keys_held_whole() {
        let t = tempfile::tempdir().unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        for n in [0, 1, 255, 256, 257, 1000] {
            let whole = write(&dir, 2, None, n);
            // 7 keys: a spill every document (7 tables), runs of one entry per table.
            for budget in [7, 50, 1000] {
                let spilled = write(&dir, 2, Some(budget), n);
                let a = std::fs::read(t.path().join(&whole.temp)).unwrap();
                let b = std::fs::read(t.path().join(&spilled.temp)).unwrap();
                assert!(
                    a == b,
                    "{n} documents, budget {budget}: the segments differ"
                );
                dir.remove(&spilled.temp).unwrap();
                dir.remove(&spilled.table_temp).unwrap();
            }
            // And it reads back: every document is found under each of its keys.
            dir.rename(&whole.temp, &whole.name).unwrap();
            let keying = Keying::Bands { bands: 4, rows: 2 };
            let want = Expected {
                number: 2,
                bytes: whole.bytes,
                header_sum: whole.header_sum,
                index_id: 42,
                lanes: 8,
            };
            let seg = Segment::open(&dir, &want, &keying).unwrap();
            let mut keys = Vec::new();
            for i in 0..n {
                keys.clear();
                keying.entry_keys(&entry(i), &mut keys);
                for (t, &k) in keys.iter().enumerate() {
                    let mut out = Vec::new();
                    seg.lookup(t, &[k], &mut out).unwrap();
                    assert!(out.contains(&(k, i as u32)), "{n}: document {i}, table {t}");
                }
            }
            dir.remove(&whole.name).unwrap();
            dir.remove(&whole.table_temp).unwrap();
        }
        // No scratch file is left behind.
        let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_row_past_the_last_is_an_error_up_to_the_largest_row_number() {
        let t = tempfile::tempdir().unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        let w = write(&dir, 2, None, 3);
        dir.rename(&w.temp, &w.name).unwrap();
        let want = Expected {
            number: 2,
            bytes: w.bytes,
            header_sum: w.header_sum,
            index_id: 42,
            lanes: 8,
        };
        let seg = Segment::open(&dir, &want, &Keying::Bands { bands: 4, rows: 2 }).unwrap();
        assert_eq!(seg.row(2).unwrap().entry, entry(2));
        for r in [3, u32::MAX - 1, u32::MAX] {
            assert!(seg.row(r).is_err(), "row {r}");
        }
        assert!(seg.rows(2, 4).is_err());
    }
}
