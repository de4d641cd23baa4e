//! Writing a segment: documents are added in row order, each with its blob; the segment file
//! and its document table are written under fresh temporary names in the index directory and
//! synced, ready to be renamed into place.
//!
//! Blobs stream into the segment file as they come; rows and strings stream into two unnamed
//! scratch files (made in the index directory and unlinked at once, so a killed writer leaves
//! nothing of them) and are copied in at the end, once the number of documents is known. The
//! keys are held in memory, 12 bytes per document per table (about 260 bytes a document at
//! 19 bands), and sorted table by table.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use anyhow::{bail, Context, Result};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::codec::BlobKind;
use crate::index::dir::IndexDir;
use crate::index::keys::Keying;
use crate::index::store::Entry;

use super::layout::{
    encode_row, row_width, BlobRef, Header, Row, Section, Span, BLOCK, ENTRY, HEADER_LEN, SECTIONS,
};
use super::table::TableWriter;
use super::{data_name, table_name};

/// Bytes buffered per stream before a write.
const BUFFER: usize = 1 << 20;

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
    /// The mode of its files (None: 0666 less the umask).
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
        let tables = plan.keying.tables().len();
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
        self.plan.keying.keys(entry, &mut self.key_buf);
        for (table, &k) in self.keys.iter_mut().zip(&self.key_buf) {
            table.push((k, self.count));
        }
        if let Some(t) = &mut self.table {
            t.add(self.count, entry)?;
        }
        self.count += 1;
        Ok(())
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
        let tables = self.plan.keying.tables();
        let (mut fences, mut directory) = (Vec::new(), Vec::new());
        for (id, keys) in tables.iter().zip(&mut self.keys) {
            keys.sort_unstable();
            directory.extend_from_slice(&id.to_le_bytes());
            directory.extend_from_slice(&0u32.to_le_bytes());
            directory.extend_from_slice(&(keys.len() as u64).to_le_bytes());
            directory.extend_from_slice(&((fences.len() / 16) as u64).to_le_bytes());
            let mut block = Vec::with_capacity((BLOCK * ENTRY) as usize);
            for chunk in keys.chunks(BLOCK as usize) {
                block.clear();
                for &(k, row) in chunk {
                    block.extend_from_slice(&k.to_le_bytes());
                    block.extend_from_slice(&row.to_le_bytes());
                }
                fences.extend_from_slice(&chunk[0].0.to_le_bytes());
                fences.extend_from_slice(&xxh3_64(&block).to_le_bytes());
                out.write(&block).map_err(io)?;
            }
            *keys = Vec::new();
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

/// The xxh3-64 of a whole file of `len` bytes, read a block at a time.
pub fn sum_file(file: &File, len: u64) -> std::io::Result<u64> {
    sum_range(file, 0, len)
}

/// The xxh3-64 of `len` bytes of `file` from `at`, read a block at a time.
pub fn sum_range(file: &File, at: u64, len: u64) -> std::io::Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0u8; BUFFER.min(len as usize)];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(BUFFER as u64) as usize;
        file.read_exact_at(&mut buf[..n], at + done)?;
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h.digest())
}
