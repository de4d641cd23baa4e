//! The byte layout of `index.dfx` (format version 1): the header, and the encoding of one
//! record.
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

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use xxhash_rust::xxh3::xxh3_64;

use super::{Entry, SetRef, FORMAT_VERSION};

const MAGIC: &[u8; 8] = b"DUPFINDX";
/// Bytes of the header.
pub(super) const HEADER_LEN: u64 = 80;

pub(super) struct Header {
    pub(super) generation: u64,
    pub(super) count: u64,
    pub(super) params_len: u64,
    pub(super) sets_len: u64,
    pub(super) records_len: u64,
    pub(super) params_sum: u64,
    pub(super) records_sum: u64,
}

#[cfg(test)]
impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER_LEN as usize] {
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

pub(super) fn read_header(file: &File, path: &Path) -> Result<Header> {
    let len = file
        .metadata()
        .with_context(|| format!("reading {}", crate::messages::display_path(path)))?
        .len();
    let mut h = vec![0; len.min(HEADER_LEN) as usize];
    file.read_exact_at(&mut h, 0)
        .with_context(|| format!("reading {}", crate::messages::display_path(path)))?;
    let p = crate::messages::display_path(path);
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

/// Reads a section whose bounds the header has checked against the file length. It is hashed
/// a block at a time first, and held in memory only once it matches its checksum: a header
/// declaring a huge section of a sparse file costs a read, not an allocation of that size.
pub(super) fn read_section(
    file: &File,
    path: &Path,
    at: u64,
    len: u64,
    sum: u64,
) -> Result<Vec<u8>> {
    let shown = || format!("reading {}", crate::messages::display_path(path));
    let hashed = crate::index::dir::sum_range(file, at, len).with_context(shown)?;
    if hashed != sum {
        bail!(
            "{}: corrupt index: checksum mismatch in the section at byte {at}",
            crate::messages::display_path(path)
        );
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, at).with_context(shown)?;
    Ok(buf)
}

#[cfg(test)]
pub(super) fn encode_entry(e: &Entry, out: &mut Vec<u8>) -> Result<()> {
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
pub(super) fn decode_records(
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
        ctime_ns: 0,
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
pub(super) fn le64(b: &[u8]) -> u64 {
    let mut a = [0; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
}
