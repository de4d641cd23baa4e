//! Segments: the immutable files an index grows by. A segment holds some documents (their
//! identities, signatures and blobs, [`layout`]), the sorted keys that find them, and the
//! tombstones of older documents it removes. Opening one reads its header and the small
//! sections (table directory, fences, dictionaries, tombstones), checked against the manifest
//! and the file's length; rows, key blocks and blobs are read when asked for, one `pread` each,
//! and checked then.

pub mod layout;
mod table;
pub mod write;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use xxhash_rust::xxh3::xxh3_64;
use zstd_safe::DDict;

use crate::index::codec;
use crate::index::dir::IndexDir;
use crate::index::keys::{IndexKeying, Keying};
use crate::messages::display_path;

use layout::{
    decode_row, le32, le64, row_head, row_width, BlobRef, Header, Row, Section, Span, BLOCK, ENTRY,
    FENCE, HEADER_LEN, TABLE, TOMB,
};

/// The file name of segment `number`.
pub fn data_name(number: u64) -> String {
    format!("seg-{number:06}.dfs")
}

/// The file name of segment `number`'s document table.
pub fn table_name(number: u64) -> String {
    format!("seg-{number:06}.docs.parquet")
}

/// True for the name of a segment's file or table, whatever its number (`seg-*`).
pub fn is_segment_file(name: &str) -> bool {
    name.starts_with("seg-")
}

/// What the manifest says a segment file must be.
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    pub number: u64,
    pub bytes: u64,
    pub header_sum: u64,
    pub index_id: u128,
    pub lanes: usize,
}

/// An open segment.
pub struct Segment {
    path: PathBuf,
    file: File,
    header: Header,
    /// Blocks per table.
    blocks: u64,
    /// Each block's first key and checksum, table after table.
    fences: Vec<(u64, u64)>,
    dicts: Vec<Vec<u8>>,
    ddicts: Vec<DDict<'static>>,
    tombstones: Vec<(u64, u32)>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Segment({})", self.path.display())
    }
}

impl Segment {
    /// Opens segment `want.number` of `dir` and checks it against the manifest's record of it
    /// and `keying`.
    pub fn open(dir: &IndexDir, want: &Expected, keying: &Keying) -> Result<Segment> {
        let name = data_name(want.number);
        let path = dir.join(&name);
        let shown = display_path(&path);
        let file = dir.open_file(&name)?.with_context(|| {
            format!("{shown} is missing: the index's manifest lists it (corrupt index)")
        })?;
        let corrupt = |why: String| anyhow!("{shown}: corrupt index segment: {why}");
        let len = file
            .metadata()
            .with_context(|| format!("reading {shown}"))?
            .len();
        if len != want.bytes {
            return Err(corrupt(format!(
                "{len} bytes where the manifest records {} (truncated or replaced)",
                want.bytes
            )));
        }
        let mut head = vec![0u8; len.min(HEADER_LEN) as usize];
        file.read_exact_at(&mut head, 0)
            .with_context(|| format!("reading {shown}"))?;
        let header = Header::decode(&head, len).map_err(|e| corrupt(format!("{e:#}")))?;
        if xxh3_64(&head) != want.header_sum {
            return Err(corrupt(
                "its header is not the one the manifest records (replaced)".into(),
            ));
        }
        if header.index_id != want.index_id {
            return Err(corrupt("it belongs to another index".into()));
        }
        if header.number != want.number || header.lanes as usize != want.lanes {
            return Err(corrupt(
                "its number or signature length is not the manifest's".into(),
            ));
        }
        let tables = keying.table_ids();
        if header.tables as usize != tables.len() {
            return Err(corrupt(
                "it has another number of key tables than the index".into(),
            ));
        }
        let mut seg = Segment {
            path,
            file,
            blocks: header.docs.div_ceil(BLOCK),
            header,
            fences: Vec::new(),
            dicts: Vec::new(),
            ddicts: Vec::new(),
            tombstones: Vec::new(),
        };
        seg.load_small_sections(&tables)
            .map_err(|e| corrupt(format!("{e:#}")))?;
        Ok(seg)
    }

    fn load_small_sections(&mut self, tables: &[u32]) -> Result<()> {
        let directory = self.section(Section::Tables)?;
        let docs = self.header.docs;
        for (i, (&id, d)) in tables
            .iter()
            .zip(directory.chunks_exact(TABLE as usize))
            .enumerate()
        {
            if le32(&d[0..4]) != id
                || le64(&d[8..16]) != docs
                || le64(&d[16..24]) != i as u64 * self.blocks
            {
                bail!("its key tables are not the index's");
            }
        }
        let fences = self.section(Section::Fences)?;
        self.fences = fences
            .chunks_exact(FENCE as usize)
            .map(|f| (le64(&f[..8]), le64(&f[8..])))
            .collect();
        let dicts = self.section(Section::Dicts)?;
        self.dicts = parse_dicts(&dicts, self.header.dicts)?;
        self.ddicts = self.dicts.iter().map(|d| codec::ddict(d)).collect();
        let tombs = self.section(Section::Tombstones)?;
        self.tombstones = tombs
            .chunks_exact(TOMB as usize)
            .map(|t| (le64(&t[..8]), le32(&t[8..12])))
            .collect();
        Ok(())
    }

    /// Reads a checksummed section whole. Its length was checked against the file's; it is
    /// hashed a block at a time first and held in memory only once it matches its checksum, so
    /// a crafted header declaring a huge section of a sparse file costs a read, never an
    /// allocation of that size.
    fn section(&self, s: Section) -> Result<Vec<u8>> {
        let span = self.header.span(s);
        if s == Section::Dicts && span.len > MAX_DICT_BYTES {
            bail!(
                "{} bytes of dictionaries is more than a segment holds",
                span.len
            );
        }
        let sum = crate::index::dir::sum_range(&self.file, span.offset, span.len)
            .with_context(|| format!("reading {}", display_path(&self.path)))?;
        if sum != span.sum {
            bail!("checksum mismatch in the {s:?} section");
        }
        self.read(span.offset, span.len)
    }

    fn read(&self, at: u64, len: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, at)
            .with_context(|| format!("reading {}", display_path(&self.path)))?;
        Ok(buf)
    }

    fn corrupt(&self, why: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: corrupt index segment: {why}", display_path(&self.path))
    }

    /// The segment's path, for messages.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Its number.
    pub fn number(&self) -> u64 {
        self.header.number
    }

    /// Its documents (rows), removed ones included.
    pub fn docs(&self) -> u32 {
        self.header.docs as u32
    }

    /// The file's length.
    pub fn bytes(&self) -> u64 {
        self.header.span(Section::Tombstones).end()
    }

    /// Its dictionaries.
    pub fn dicts(&self) -> &[Vec<u8>] {
        &self.dicts
    }

    /// The documents of older segments it removes: (segment number, row).
    pub fn tombstones(&self) -> &[(u64, u32)] {
        &self.tombstones
    }

    /// The rows whose key in table `table` (its position in the keying's tables) is one of
    /// `keys` (sorted, distinct), appended to `out` as (key, row).
    pub fn lookup(&self, table: usize, keys: &[u64], out: &mut Vec<(u64, u32)>) -> Result<()> {
        let nb = self.blocks as usize;
        if nb == 0 {
            return Ok(());
        }
        let fences = &self.fences[table * nb..(table + 1) * nb];
        let mut cached: Option<(usize, Vec<(u64, u32)>)> = None;
        for &q in keys {
            let mut j = fences.partition_point(|f| f.0 < q).saturating_sub(1);
            loop {
                if cached.as_ref().is_none_or(|c| c.0 != j) {
                    cached = Some((j, self.block(table, j, fences[j].1)?));
                }
                if let Some((_, block)) = &cached {
                    out.extend(block.iter().filter(|e| e.0 == q).copied());
                }
                if j + 1 < nb && fences[j + 1].0 <= q {
                    j += 1;
                } else {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Key block `j` of table `table`, checked against its fence's checksum.
    fn block(&self, table: usize, j: usize, sum: u64) -> Result<Vec<(u64, u32)>> {
        let docs = self.header.docs;
        let first = j as u64 * BLOCK;
        let n = (docs - first).min(BLOCK);
        let keys = self.header.span(Section::Keys);
        let at = keys.offset + (table as u64 * docs + first) * ENTRY;
        let bytes = self.read(at, n * ENTRY)?;
        if xxh3_64(&bytes) != sum {
            return Err(self.corrupt(format!(
                "checksum mismatch in key block {j} of table {table}"
            )));
        }
        Ok(bytes
            .chunks_exact(ENTRY as usize)
            .map(|e| (le64(&e[..8]), le32(&e[8..12])))
            .collect())
    }

    /// Row `r`, checked.
    pub fn row(&self, r: u32) -> Result<Row> {
        // A key entry's row is not checked against the rows on open: u32::MAX is a stored value.
        let to = r
            .checked_add(1)
            .ok_or_else(|| self.corrupt(format!("no row {r}")))?;
        self.rows(r, to).map(|mut rows| rows.remove(0))
    }

    /// Rows `from..to`, checked, read with one `pread` for the rows and one for their strings.
    pub fn rows(&self, from: u32, to: u32) -> Result<Vec<Row>> {
        if from >= to || u64::from(to) > self.header.docs {
            return Err(self.corrupt(format!("no rows {from}..{to}")));
        }
        let lanes = self.header.lanes as usize;
        let width = row_width(lanes) as u64;
        let rows = self.header.span(Section::Rows);
        let bytes = self.read(
            rows.offset + u64::from(from) * width,
            u64::from(to - from) * width,
        )?;
        let strings = self.header.span(Section::Strings);
        let heads: Vec<_> = bytes.chunks_exact(width as usize).map(row_head).collect();
        let mut lo = u64::MAX;
        let mut hi = 0;
        for h in &heads {
            let end = h
                .strings_at
                .checked_add(h.strings_len())
                .filter(|&e| e <= strings.len)
                .ok_or_else(|| self.corrupt("a row's path runs past the strings section"))?;
            lo = lo.min(h.strings_at);
            hi = hi.max(end);
        }
        let text = self.read(strings.offset + lo, hi - lo)?;
        (bytes.chunks_exact(width as usize).zip(&heads))
            .enumerate()
            .map(|(i, (row, h))| {
                let at = (h.strings_at - lo) as usize;
                decode_row(row, &text[at..at + h.strings_len() as usize], lanes)
                    .map_err(|e| self.corrupt(format!("row {}: {e:#}", from as usize + i)))
            })
            .collect()
    }

    /// A row's blob, checked against its checksum. `bytes`: the document's size, which bounds
    /// what its blob can take (a content compressed, or as it is; a set of at most one hash a
    /// byte, ten bytes a hash).
    pub fn blob(&self, b: &BlobRef, bytes: u64) -> Result<Vec<u8>> {
        let sets: Span = self.header.span(Section::Sets);
        let end = b.offset.checked_add(b.len).filter(|&e| e <= sets.len);
        if end.is_none() {
            return Err(self.corrupt("a blob runs past the sets section"));
        }
        let most = bytes.saturating_mul(10).saturating_add(64);
        if b.len > most {
            return Err(self.corrupt(format!(
                "a blob of {} bytes for a document of {bytes}",
                b.len
            )));
        }
        let bytes = self.read(sets.offset + b.offset, b.len)?;
        if xxh3_64(&bytes) != b.sum {
            return Err(self.corrupt(format!(
                "checksum mismatch in the set at byte {}",
                sets.offset + b.offset
            )));
        }
        Ok(bytes)
    }

    /// The dictionary a blob names.
    pub fn ddict(&self, d: Option<u16>) -> Result<Option<&DDict<'static>>> {
        match d {
            None => Ok(None),
            Some(i) => self
                .ddicts
                .get(usize::from(i))
                .map(Some)
                .ok_or_else(|| self.corrupt("a row names a dictionary the segment lacks")),
        }
    }

    /// Reads and checks everything: every key block, row and blob (`index info`).
    pub fn verify(&self) -> Result<()> {
        let tables = self.header.tables as usize;
        let nb = self.blocks as usize;
        for t in 0..tables {
            for j in 0..nb {
                self.block(t, j, self.fences[t * nb + j].1)?;
            }
        }
        let mut seen = std::collections::HashSet::new();
        self.for_each_row(|_, row| {
            if seen.insert(row.blob.offset) {
                self.blob(&row.blob, row.entry.bytes)?;
            }
            Ok(())
        })
    }

    /// Calls `f` on every row with its number, in order, reading [`STREAM_ROWS`] rows at a
    /// time (never the whole segment at once).
    pub fn for_each_row(&self, mut f: impl FnMut(u32, Row) -> Result<()>) -> Result<()> {
        let docs = self.docs();
        let mut from = 0;
        while from < docs {
            let to = docs.min(from.saturating_add(STREAM_ROWS));
            for (row, r) in (from..).zip(self.rows(from, to)?) {
                f(row, r)?;
            }
            from = to;
        }
        Ok(())
    }
}

/// Bytes of dictionaries a segment may hold (a dictionary is 64 KiB; a merge of many segments
/// keeps each distinct one).
const MAX_DICT_BYTES: u64 = 64 << 20;

/// Rows read at a time when streaming a segment.
const STREAM_ROWS: u32 = 1024;

fn parse_dicts(b: &[u8], count: u32) -> Result<Vec<Vec<u8>>> {
    let n = le32(
        b.get(..4)
            .context("the dictionaries section is cut short")?,
    ) as usize;
    if n != count as usize {
        bail!("the dictionary count is not the header's");
    }
    let lens_end = n
        .checked_mul(8)
        .and_then(|l| l.checked_add(4))
        .filter(|&e| e <= b.len())
        .context("the dictionaries section is cut short")?;
    let mut at = lens_end;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let len = le64(&b[4 + 8 * i..12 + 8 * i]);
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| at.checked_add(l))
            .filter(|&e| e <= b.len())
            .context("a dictionary runs past its section")?;
        out.push(b[at..end].to_vec());
        at = end;
    }
    if at != b.len() {
        bail!("bytes after the last dictionary");
    }
    Ok(out)
}
