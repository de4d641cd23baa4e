//! The byte layout of a segment file (`seg-NNNNNN.dfs`), all integers little-endian.
//!
//! | part | size | what |
//! |---|---|---|
//! | header | 288 | magic `DUPFSEG2`, version, the index's id, the segment's number, counts, the section table, xxh3-64 of bytes 0..280 |
//! | sets | variable | each document's blob ([`crate::index::codec`]), in row order; identical contents share one |
//! | rows | N × W | one fixed-width row per document ([`Row`]), W = 152 + 4K |
//! | strings | variable | each row's path then id bytes, in row order |
//! | keys | T × N × 12 | per table, the (key u64, row u32) entries sorted by key then row |
//! | fences | T × ⌈N/256⌉ × 16 | per block of 256 entries: its first key and the xxh3-64 of its bytes |
//! | tables | T × 24 | per table: id u32, 0 u32, entries u64, first fence u64 |
//! | dicts | variable | u32 count, count × u64 lengths, the zstd dictionaries |
//! | tombstones | X × 12 | (segment number u64, row u32) of older documents this segment removes, sorted |
//!
//! Integrity: the header's checksum (which the manifest also records), the tables, fences,
//! dicts and tombstones sections' checksums (in the section table, checked on open), each key
//! block's checksum (in its fence, checked when the block is read), each row's checksum
//! (covering its bytes, path and id, checked when the row is read) and each blob's (in its row,
//! checked when the blob is read). Every length and count is checked against the file's length
//! before anything of that size is allocated.

use anyhow::{bail, Context, Result};
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use crate::index::codec::BlobKind;
use crate::index::store::Entry;

/// The first bytes of a segment.
pub const MAGIC: &[u8; 8] = b"DUPFSEG2";
/// The segment layout's version.
pub const VERSION: u32 = 2;
/// Bytes of the header.
pub const HEADER_LEN: u64 = 288;
/// Key entries per block (a fence per block is kept in memory).
pub const BLOCK: u64 = 256;
/// Bytes of a key entry.
pub const ENTRY: u64 = 12;
/// Bytes of a fence.
pub const FENCE: u64 = 16;
/// Bytes of a table's directory entry.
pub const TABLE: u64 = 24;
/// Bytes of a tombstone.
pub const TOMB: u64 = 12;
/// Bytes of a row before its signature.
pub const ROW_FIXED: usize = 144;
/// No dictionary.
pub const NO_DICT: u16 = u16::MAX;

/// The sections, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Sets,
    Rows,
    Strings,
    Keys,
    Fences,
    Tables,
    Dicts,
    Tombstones,
}

/// Every section, in file order.
pub const SECTIONS: [Section; 8] = [
    Section::Sets,
    Section::Rows,
    Section::Strings,
    Section::Keys,
    Section::Fences,
    Section::Tables,
    Section::Dicts,
    Section::Tombstones,
];

/// Where a section lies and its checksum (0 for sections checked piece by piece).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
    pub sum: u64,
}

impl Span {
    /// The end offset (checked on decode not to overflow).
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// A segment's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub index_id: u128,
    pub number: u64,
    pub docs: u64,
    /// Signature values per row (K; 0 for SimHash).
    pub lanes: u32,
    pub tables: u32,
    pub dicts: u32,
    pub tombstones: u64,
    pub spans: [Span; 8],
}

/// Row width for `lanes` signature values.
pub fn row_width(lanes: usize) -> usize {
    ROW_FIXED + 4 * lanes + 8
}

impl Header {
    /// The span of `s`.
    pub fn span(&self, s: Section) -> Span {
        self.spans[s as usize]
    }

    /// The header's bytes, its checksum last.
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut h = [0u8; HEADER_LEN as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[16..32].copy_from_slice(&self.index_id.to_le_bytes());
        h[32..40].copy_from_slice(&self.number.to_le_bytes());
        h[40..48].copy_from_slice(&self.docs.to_le_bytes());
        h[48..52].copy_from_slice(&(row_width(self.lanes as usize) as u32).to_le_bytes());
        h[52..56].copy_from_slice(&self.lanes.to_le_bytes());
        h[56..60].copy_from_slice(&self.tables.to_le_bytes());
        h[60..64].copy_from_slice(&self.dicts.to_le_bytes());
        h[64..72].copy_from_slice(&self.tombstones.to_le_bytes());
        for (i, s) in self.spans.iter().enumerate() {
            let at = 80 + 24 * i;
            h[at..at + 8].copy_from_slice(&s.offset.to_le_bytes());
            h[at + 8..at + 16].copy_from_slice(&s.len.to_le_bytes());
            h[at + 16..at + 24].copy_from_slice(&s.sum.to_le_bytes());
        }
        let sum = xxh3_64(&h[..280]);
        h[280..].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// Decodes and checks a header against the file's length: the magic, version and checksum,
    /// and that the sections lie in order inside the file with the sizes the counts give.
    pub fn decode(h: &[u8], file_len: u64) -> Result<Header> {
        if h.len() < 8 || &h[..8] != MAGIC {
            bail!("not a dupfind index segment (bad magic)");
        }
        if h.len() < HEADER_LEN as usize {
            bail!("truncated inside the header");
        }
        if le64(&h[280..288]) != xxh3_64(&h[..280]) {
            bail!("header checksum mismatch");
        }
        let version = le32(&h[8..12]);
        if version != VERSION {
            bail!("segment layout version {version} is not supported (this build reads {VERSION})");
        }
        let mut spans = [Span::default(); 8];
        for (i, s) in spans.iter_mut().enumerate() {
            let at = 80 + 24 * i;
            *s = Span {
                offset: le64(&h[at..at + 8]),
                len: le64(&h[at + 8..at + 16]),
                sum: le64(&h[at + 16..at + 24]),
            };
        }
        let header = Header {
            index_id: u128::from_le_bytes(array(&h[16..32])),
            number: le64(&h[32..40]),
            docs: le64(&h[40..48]),
            lanes: le32(&h[52..56]),
            tables: le32(&h[56..60]),
            dicts: le32(&h[60..64]),
            tombstones: le64(&h[64..72]),
            spans,
        };
        if le32(&h[48..52]) as usize != row_width(header.lanes as usize) {
            bail!("impossible row width");
        }
        header.check_spans(file_len)?;
        Ok(header)
    }

    /// The sections follow one another from the header to the end of the file, with the sizes
    /// the counts imply.
    fn check_spans(&self, file_len: u64) -> Result<()> {
        let mut at = HEADER_LEN;
        for s in SECTIONS {
            let span = self.span(s);
            if span.offset != at {
                bail!("the {s:?} section is not where it belongs");
            }
            at = at
                .checked_add(span.len)
                .filter(|&end| end <= file_len)
                .with_context(|| format!("the {s:?} section runs past the end of the file"))?;
        }
        if at != file_len {
            bail!("{} bytes past the last section", file_len - at);
        }
        let n = self.docs;
        let t = u64::from(self.tables);
        let width = row_width(self.lanes as usize) as u64;
        let want = |what: &str, got: u64, want: Option<u64>| -> Result<()> {
            match want {
                Some(w) if w == got => Ok(()),
                _ => bail!("the {what} section's length does not match the counts"),
            }
        };
        want("rows", self.span(Section::Rows).len, n.checked_mul(width))?;
        let entries = n.checked_mul(t);
        want(
            "keys",
            self.span(Section::Keys).len,
            entries.and_then(|e| e.checked_mul(ENTRY)),
        )?;
        let fences = n.div_ceil(BLOCK).checked_mul(t);
        want(
            "fences",
            self.span(Section::Fences).len,
            fences.and_then(|f| f.checked_mul(FENCE)),
        )?;
        want(
            "tables",
            self.span(Section::Tables).len,
            t.checked_mul(TABLE),
        )?;
        let tombs = self.tombstones.checked_mul(TOMB);
        want("tombstones", self.span(Section::Tombstones).len, tombs)?;
        Ok(())
    }
}

/// Where a row's blob lies in the sets section, what it holds and its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobRef {
    pub kind: BlobKind,
    pub offset: u64,
    pub len: u64,
    pub sum: u64,
    /// Index in the segment's dictionaries.
    pub dict: Option<u16>,
}

/// One document as a segment stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub entry: Entry,
    pub blob: BlobRef,
}

/// The fixed part of a row, before its path and id are read.
#[derive(Clone, Copy, Debug)]
pub struct RowHead {
    pub strings_at: u64,
    pub path_len: u32,
    pub id_len: u32,
}

impl RowHead {
    /// Bytes of path and id.
    pub fn strings_len(&self) -> u64 {
        u64::from(self.path_len) + u64::from(self.id_len)
    }
}

/// Appends `row`'s bytes (its checksum covering `row`'s path and id) to `out`; its strings lie
/// at `strings_at` in the strings section.
pub fn encode_row(row: &Row, strings_at: u64, lanes: usize, out: &mut Vec<u8>) -> Result<()> {
    let e = &row.entry;
    let start = out.len();
    let len32 = |n: usize| u32::try_from(n).context("a path or id is over 4 GiB");
    out.extend_from_slice(&e.content_hash.to_le_bytes());
    out.extend_from_slice(&e.size.to_le_bytes());
    out.extend_from_slice(&e.bytes.to_le_bytes());
    out.extend_from_slice(&e.mtime_ns.to_le_bytes());
    out.extend_from_slice(&e.ctime_ns.to_le_bytes());
    out.extend_from_slice(&e.dev.to_le_bytes());
    out.extend_from_slice(&e.inode.to_le_bytes());
    out.extend_from_slice(&e.line.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&e.simhash.to_le_bytes());
    out.extend_from_slice(&strings_at.to_le_bytes());
    out.extend_from_slice(&len32(e.path.len())?.to_le_bytes());
    let id = e.id.as_deref().unwrap_or("");
    out.extend_from_slice(&len32(id.len())?.to_le_bytes());
    out.extend_from_slice(&row.blob.offset.to_le_bytes());
    out.extend_from_slice(&row.blob.len.to_le_bytes());
    out.extend_from_slice(&row.blob.sum.to_le_bytes());
    out.push(u8::from(e.line.is_some()) | u8::from(e.id.is_some()) << 1);
    out.push(row.blob.kind.code());
    out.extend_from_slice(&row.blob.dict.unwrap_or(NO_DICT).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    debug_assert_eq!(out.len() - start, ROW_FIXED);
    if e.signature.len() != lanes {
        bail!(
            "a signature of {} values in an index of {lanes}",
            e.signature.len()
        );
    }
    e.signature
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    let sum = row_sum(&out[start..], &e.path, id.as_bytes());
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(())
}

fn row_sum(row: &[u8], path: &[u8], id: &[u8]) -> u64 {
    let mut h = Xxh3Default::new();
    h.update(row);
    h.update(path);
    h.update(id);
    h.digest()
}

/// Where a row's path and id lie.
pub fn row_head(row: &[u8]) -> RowHead {
    RowHead {
        strings_at: le64(&row[96..104]),
        path_len: le32(&row[104..108]),
        id_len: le32(&row[108..112]),
    }
}

/// Decodes a row whose bytes (`row`, one row width long) and strings were read; checks its
/// checksum.
pub fn decode_row(row: &[u8], strings: &[u8], lanes: usize) -> Result<Row> {
    let width = row_width(lanes);
    if row.len() != width {
        bail!("a row is cut short");
    }
    let head = row_head(row);
    if strings.len() as u64 != head.strings_len() {
        bail!("a row's path and id are cut short");
    }
    let (path, id) = strings.split_at(head.path_len as usize);
    if le64(&row[width - 8..]) != row_sum(&row[..width - 8], path, id) {
        bail!("row checksum mismatch");
    }
    let flags = row[136];
    if flags > 3 {
        bail!("unknown row flags {flags:#x}");
    }
    let kind = BlobKind::from_code(row[137]).context("unknown blob kind")?;
    let dict = u16::from_le_bytes([row[138], row[139]]);
    let id = match flags & 2 {
        0 => None,
        _ => Some(String::from_utf8(id.to_vec()).context("a row's id is not UTF-8")?),
    };
    let signature = row[ROW_FIXED..width - 8]
        .chunks_exact(4)
        .map(le32)
        .collect();
    Ok(Row {
        entry: Entry {
            path: path.to_vec(),
            line: (flags & 1 != 0).then(|| le64(&row[80..88])),
            id,
            size: le64(&row[16..24]),
            bytes: le64(&row[24..32]),
            mtime_ns: i128::from_le_bytes(array(&row[32..48])),
            ctime_ns: i128::from_le_bytes(array(&row[48..64])),
            dev: le64(&row[64..72]),
            inode: le64(&row[72..80]),
            content_hash: u128::from_le_bytes(array(&row[0..16])),
            signature,
            simhash: le64(&row[88..96]),
        },
        blob: BlobRef {
            kind,
            offset: le64(&row[112..120]),
            len: le64(&row[120..128]),
            sum: le64(&row[128..136]),
            dict: (dict != NO_DICT).then_some(dict),
        },
    })
}

/// Little-endian u64 of 8 bytes.
pub fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(array(b))
}

/// Little-endian u32 of 4 bytes.
pub fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(array(b))
}

/// The first N bytes of `b` (zeros where it is shorter).
pub fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0; N];
    let n = b.len().min(N);
    a[..n].copy_from_slice(&b[..n]);
    a
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    pub(crate) fn sample_row(lanes: usize) -> Row {
        Row {
            entry: Entry {
                path: b"/a/\xff.txt".to_vec(),
                line: Some(7),
                id: Some("r\u{e9}7".into()),
                size: 1 << 40,
                bytes: 12,
                mtime_ns: -1_500_000_001,
                ctime_ns: 1_700_000_000_123_456_789,
                dev: u64::MAX,
                inode: 3,
                content_hash: u128::MAX - 5,
                signature: (0..lanes as u32).map(|i| i * 7 + 1).collect(),
                simhash: 0xdead_beef,
            },
            blob: BlobRef {
                kind: BlobKind::Zstd,
                offset: 99,
                len: 5,
                sum: 77,
                dict: Some(1),
            },
        }
    }

    #[test]
    fn rows_round_trip_and_any_flipped_byte_is_caught() {
        for lanes in [0, 3] {
            let mut row = sample_row(lanes);
            for (line, id) in [(Some(7), Some("x".to_string())), (None, None)] {
                row.entry.line = line;
                row.entry.id = id;
                let mut b = Vec::new();
                encode_row(&row, 40, lanes, &mut b).unwrap();
                assert_eq!(b.len(), row_width(lanes));
                let head = row_head(&b);
                assert_eq!(head.strings_at, 40);
                let mut strings = row.entry.path.clone();
                strings.extend_from_slice(row.entry.id.as_deref().unwrap_or("").as_bytes());
                assert_eq!(decode_row(&b, &strings, lanes).unwrap(), row);
                for i in 0..b.len() {
                    let mut bad = b.clone();
                    bad[i] ^= 1;
                    let bad_strings = if !(96..112).contains(&i) {
                        &strings[..]
                    } else {
                        &[][..]
                    };
                    assert!(decode_row(&bad, bad_strings, lanes).is_err(), "byte {i}");
                }
                let mut bad = strings.clone();
                bad[0] ^= 1;
                assert!(decode_row(&b, &bad, lanes).is_err());
            }
        }
        let mut wrong = sample_row(3);
        wrong.entry.signature.pop();
        assert!(encode_row(&wrong, 0, 3, &mut Vec::new()).is_err());
    }

    #[test]
    fn headers_are_checked_against_the_file() {
        let mut spans = [Span::default(); 8];
        let lens = [
            10,
            2 * row_width(1) as u64,
            6,
            2 * 2 * ENTRY,
            2 * FENCE,
            2 * TABLE,
            4,
            TOMB,
        ];
        let mut at = HEADER_LEN;
        for (s, len) in spans.iter_mut().zip(lens) {
            *s = Span {
                offset: at,
                len,
                sum: 0,
            };
            at += len;
        }
        let h = Header {
            index_id: 5,
            number: 2,
            docs: 2,
            lanes: 1,
            tables: 2,
            dicts: 0,
            tombstones: 1,
            spans,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b, at).unwrap(), h);
        assert!(Header::decode(&b, at - 1).is_err(), "truncated");
        assert!(Header::decode(&b, at + 1).is_err(), "bytes past the end");
        assert!(Header::decode(&b[..100], at).is_err());
        for i in 0..HEADER_LEN as usize {
            let mut bad = b;
            bad[i] ^= 0x40;
            assert!(Header::decode(&bad, at).is_err(), "byte {i}");
        }
        // Counts that do not match the sections, however the checksum was forged.
        let mut more = h.clone();
        more.docs = 3;
        assert!(Header::decode(&more.encode(), at).is_err());
        let mut huge = h.clone();
        huge.docs = u64::MAX / 2;
        assert!(Header::decode(&huge.encode(), at).is_err());
    }
}
