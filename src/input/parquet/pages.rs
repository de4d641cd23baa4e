//! Pages: what decoding a row group's columns holds, read from their page headers before the
//! parquet crate decodes them, so that a batch is sized by what it decodes to rather than by the
//! bytes it is stored in.
//!
//! A footer states a column chunk's encoded size, which bounds nothing decoded: a row of a
//! dictionary-encoded page is a key of a bit or two that decodes to its whole dictionary entry
//! (a 1 KB file whose 5,000 rows all point at one 4 MiB entry decodes to 20 GB, 4 GiB a batch of
//! 1024 rows), and a `DELTA_BYTE_ARRAY` value can repeat the value before it for a byte. So every
//! page header of the chunk is read (the sizes the crate allocates are the headers', not the
//! footer's), a byte-array dictionary is decoded to find its longest entry, and a row is costed
//! at its share of the pages that decode to about their own size plus, per value, the most a
//! dictionary or delta value can decode to. A row group whose pages, dictionaries and one row
//! need more than a decoder may hold under `--max-memory` is not decoded: the error says how
//! much it needs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parquet::basic::Type as Physical;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

use super::thrift::{Compact, I32, STRUCT};
use crate::budget::human;
use crate::input::decompress::DEFAULT_WINDOW_LIMIT;
use crate::input::source::Source;

/// Bytes one decoded batch holds, about: the arrays of one batch are what a reader holds beside
/// its pages and dictionaries.
pub const DECODE_BYTES: u64 = 1 << 20;
/// Rows of one decoded batch, at most (arrow's default).
const DECODE_ROWS: u64 = 1024;

/// The first read of a page header: a header is a few dozen bytes, more only with statistics,
/// which writers cut to a few KB.
const HEADER_READ: u64 = 4 << 10;
/// The longest page header read; a longer one is damage.
const MAX_HEADER: u64 = 16 << 20;

/// Page types and encodings (parquet.thrift) the census tells apart.
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const DATA_PAGE_V2: i32 = 3;
const PLAIN_DICTIONARY: i32 = 2;
const DELTA_BYTE_ARRAY: i32 = 7;
const RLE_DICTIONARY: i32 = 8;

/// What decoding one column chunk holds, from its page headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    /// The dictionary, decompressed (0 without one): the crate holds it for the whole chunk.
    dictionary: u64,
    /// The largest page, decompressed, with its compressed bytes: the crate reads one page at
    /// a time, both at once while it decompresses it.
    page: u64,
    /// Bytes of the data pages that decode to about their own size.
    plain: u64,
    /// Values (levels) of the data pages: one a row, more in a repeated column.
    values: u64,
    /// The most one value of a dictionary-indexed or delta-encoded page decodes to.
    value: u64,
}

impl Chunk {
    /// Bytes a row of a group of `rows` decodes to: its share of the plain pages, and for each
    /// of its values the most a dictionary or delta value can be. A bound where encodings
    /// amplify; elsewhere an average, as the bytes are all there in the file.
    fn per_row(&self, rows: u64) -> u64 {
        let rows = rows.max(1);
        let values = self.values.div_ceil(rows).max(1);
        (self.plain.div_ceil(rows)).saturating_add(values.saturating_mul(self.value))
    }

    /// Bytes held beside the decoded batch.
    fn held(&self) -> u64 {
        self.dictionary.saturating_add(self.page)
    }
}

/// The most a Parquet reader may hold, its pages, dictionaries and a decoded batch together:
/// set once, before any input is read, from the memory budget (`budget::decode_limit`). A
/// process-wide setting, as the window limit is (`decompress::window_limit`), because every
/// reader of a dump (the first pass, verification's re-reads, the dataset) must obey it.
static DECODE_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_WINDOW_LIMIT + (1 << 20));

/// Sets the most a Parquet reader may hold.
pub fn set_decode_limit(bytes: u64) {
    DECODE_LIMIT.store(bytes.max(1 << 20), Ordering::Relaxed);
}

fn allowance() -> u64 {
    DECODE_LIMIT.load(Ordering::Relaxed)
}

/// Reads the page headers of the column chunk `c`, whose bytes `start..start + len` are known to
/// lie in `file`, and for a byte-array column whose pages index a dictionary, the dictionary's
/// longest entry. A dictionary page larger than a reader may hold is an error before anything
/// is decompressed.
pub fn census(
    file: &Source,
    c: &ColumnChunkMetaData,
    start: u64,
    len: u64,
) -> Result<Chunk, String> {
    let mut chunk = Chunk::default();
    let (mut indexed, mut at, end) = (false, start, start + len);
    let mut buf = Vec::new();
    while at < end {
        let (h, used) = header_at(file, at, end, &mut buf)?;
        at += used;
        let (size, compressed) = (h.uncompressed as u64, h.compressed as u64);
        if compressed > end - at {
            return Err("a page reaches past its column chunk".into());
        }
        at += compressed;
        chunk.page = chunk.page.max(size.saturating_add(compressed));
        match h.kind {
            DICTIONARY_PAGE => chunk.dictionary = chunk.dictionary.max(size),
            DATA_PAGE | DATA_PAGE_V2 => {
                chunk.values += h.values.max(0) as u64;
                match h.encoding {
                    PLAIN_DICTIONARY | RLE_DICTIONARY => indexed = true,
                    DELTA_BYTE_ARRAY => chunk.value = chunk.value.max(delta_value(c, size)),
                    _ => chunk.plain += size,
                }
            }
            // Index pages, which the crate skips, and types it refuses itself.
            _ => {}
        }
    }
    // A dictionary over the allowance is not read for its longest entry: the row group is
    // refused by its size alone ([`batch_rows`]).
    if indexed && chunk.held() <= allowance() {
        let entry = match c.column_type() {
            Physical::BYTE_ARRAY => longest_entry(file, c)?,
            _ => fixed_width(c),
        };
        chunk.value = chunk.value.max(entry);
    }
    Ok(chunk)
}

/// Rows per decoded batch of a row group of `rows` rows whose decoded columns are `chunks`, as
/// many as [`DECODE_BYTES`] holds, at least one; and what the reader holds then, its pages,
/// dictionaries and a batch. An error, why the group is not decoded, when the chunks' pages and
/// dictionaries and a single row need more than a reader may hold.
pub fn batch_rows(chunks: &[Chunk], rows: u64) -> Result<(usize, u64), String> {
    let held: u64 = chunks.iter().map(Chunk::held).sum();
    let per_row: u64 = chunks.iter().map(|c| c.per_row(rows)).sum();
    let one = held.saturating_add(per_row);
    if one > allowance() {
        return Err(too_big(one));
    }
    let room = DECODE_BYTES.min(allowance() - held);
    let batch = (room / per_row.max(1)).clamp(1, DECODE_ROWS);
    Ok((
        batch as usize,
        held.saturating_add(per_row.saturating_mul(batch)),
    ))
}

/// Why a row group is not decoded, and what would decode it.
fn too_big(need: u64) -> String {
    format!(
        "needs about {} of memory to decode a row with its pages and dictionaries, more than \
         --max-memory leaves a Parquet decoder ({}, a quarter of it); raise --max-memory, or \
         rewrite the file with smaller row groups",
        human(need),
        human(allowance())
    )
}

/// The most one value of a `DELTA_BYTE_ARRAY` page of `size` bytes decodes to: a value is its
/// predecessor's prefix and its own suffix, so no longer than the page (or the column's fixed
/// width).
fn delta_value(c: &ColumnChunkMetaData, size: u64) -> u64 {
    match c.column_type() {
        Physical::FIXED_LEN_BYTE_ARRAY => fixed_width(c),
        _ => size,
    }
}

/// The width of a fixed-width column's values, as arrow holds them (a decimal as 16 bytes, or
/// 32 when over 38 digits).
fn fixed_width(c: &ColumnChunkMetaData) -> u64 {
    match c.column_type() {
        Physical::BOOLEAN => 1,
        Physical::INT32 | Physical::FLOAT | Physical::INT64 | Physical::DOUBLE => 16,
        Physical::INT96 => 16,
        Physical::FIXED_LEN_BYTE_ARRAY => (c.column_descr().type_length().max(0) as u64).max(32),
        Physical::BYTE_ARRAY => 0,
    }
}

/// The longest entry of the chunk's dictionary (PLAIN byte arrays: a 4-byte length and the
/// bytes), decoded by the crate as its reader will decode it; 0 when the chunk has none.
fn longest_entry(file: &Source, c: &ColumnChunkMetaData) -> Result<u64, String> {
    let file = file.try_clone().map_err(|e| e.to_string())?;
    let pages = Arc::new(super::chunks::Pages(file, None));
    super::guarded(|| {
        let mut reader = SerializedPageReader::new(pages, c, 0, None).map_err(|e| e.to_string())?;
        let page = reader.get_next_page().map_err(|e| e.to_string())?;
        let Some(Page::DictionaryPage { buf, .. }) = page else {
            return Ok(0);
        };
        let (mut at, mut longest) = (0usize, 0u64);
        while let Some(head) = buf.get(at..at + 4) {
            let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
            // A length past the page is damage the crate reports; the page bounds it meanwhile.
            let n = n.min(buf.len() - at - 4);
            longest = longest.max(n as u64);
            at += 4 + n;
        }
        Ok(longest)
    })
}

/// A page header: its type, sizes, values and encoding.
struct Header {
    kind: i32,
    uncompressed: i32,
    compressed: i32,
    values: i32,
    encoding: i32,
}

/// The page header at `at` (before `end`) and its length, read into `buf`: a few KB first, more
/// while it is cut short, up to [`MAX_HEADER`].
fn header_at(file: &Source, at: u64, end: u64, buf: &mut Vec<u8>) -> Result<(Header, u64), String> {
    let mut want = HEADER_READ;
    loop {
        let n = want.min(end - at);
        buf.resize(n as usize, 0);
        file.read_exact_at(buf, at).map_err(|e| e.to_string())?;
        let mut r = Compact::new(buf, "page header");
        match r.page_header() {
            Ok(h) => return Ok((h, r.used() as u64)),
            Err(_) if n < end - at && n < MAX_HEADER => want *= 16,
            Err(e) => return Err(format!("a damaged page header: {e}")),
        }
    }
}

impl Compact<'_> {
    /// A `PageHeader`: type (1), sizes (2, 3), and the values and encoding of its data (5: v1),
    /// dictionary (7) or data v2 (8) header; the rest skipped.
    fn page_header(&mut self) -> Result<Header, String> {
        let (mut last, mut fields) = (0, [None; 3]);
        let (mut values, mut encoding) = (0, -1);
        while let Some((id, ty)) = self.field(last)? {
            match (id, ty) {
                (1..=3, I32) => fields[id as usize - 1] = Some(self.i32()?),
                (5 | 7, STRUCT) => (values, encoding) = self.values_and_encoding(2)?,
                (8, STRUCT) => (values, encoding) = self.values_and_encoding(4)?,
                _ => self.skip(ty, false, 1)?,
            }
            last = id;
        }
        let [Some(kind), Some(uncompressed), Some(compressed)] = fields else {
            return Err("a type or size missing".into());
        };
        if uncompressed < 0 || compressed < 0 {
            return Err("a negative size".into());
        }
        Ok(Header {
            kind,
            uncompressed,
            compressed,
            values,
            encoding,
        })
    }

    /// A page's own header: its values (field 1) and its encoding (field `encoding`).
    fn values_and_encoding(&mut self, encoding: i16) -> Result<(i32, i32), String> {
        let (mut last, mut out) = (0, (0, -1));
        while let Some((id, ty)) = self.field(last)? {
            match (id, ty) {
                (1, I32) => out.0 = self.i32()?,
                (e, I32) if e == encoding => out.1 = self.i32()?,
                _ => self.skip(ty, false, 2)?,
            }
            last = id;
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use parquet::basic::{Compression, Encoding};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    use super::*;
    use std::fs::File;

    /// One text column of `texts` written to a temporary file with `props`.
    fn write(texts: Vec<String>, props: WriterProperties) -> File {
        let column: ArrayRef = Arc::new(StringArray::from(texts));
        let batch = RecordBatch::try_from_iter([("text", column)]).unwrap();
        super::super::tests::written(&batch, props)
    }

    /// The census of the file's first column chunk.
    fn census_of(file: &File) -> Chunk {
        let meta = parquet::file::reader::FileReader::metadata(
            &parquet::file::serialized_reader::SerializedFileReader::new(file.try_clone().unwrap())
                .unwrap(),
        )
        .clone();
        let c = meta.row_group(0).column(0);
        let (start, len) = c.byte_range();
        census(&Source::from(file.try_clone().unwrap()), c, start, len).unwrap()
    }

    fn props() -> parquet::file::properties::WriterPropertiesBuilder {
        WriterProperties::builder().set_compression(Compression::ZSTD(Default::default()))
    }

    #[test]
    fn a_dictionary_row_is_costed_at_its_longest_entry_not_its_key() {
        // 200 rows, all one 512 KiB entry: a few KB on disk, in data pages of either version.
        let entry = "lorem ipsum ".repeat(512 << 10 >> 4);
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let props = props()
                .set_writer_version(version)
                .set_dictionary_page_size_limit(4 << 20);
            let file = write(vec![entry.clone(); 200], props.build());
            assert!(file.metadata().unwrap().len() < 16 << 10);
            let chunk = census_of(&file);
            assert_eq!(chunk.value, entry.len() as u64, "{version:?}");
            assert_eq!(chunk.values, 200);
            assert!(chunk.dictionary > entry.len() as u64, "{chunk:?}");
            assert!(chunk.plain < 1 << 10, "{chunk:?}");
            // Two rows a batch: a mebibyte, not the footer's few bytes a row.
            assert_eq!(batch_rows(&[chunk], 200).map(|b| b.0), Ok(2));
        }
    }

    #[test]
    fn plain_pages_are_costed_at_their_share_a_row() {
        let texts: Vec<String> = (0..4000).map(|i| format!("text number {i:05}")).collect();
        let file = write(texts, props().set_dictionary_enabled(false).build());
        let chunk = census_of(&file);
        assert_eq!((chunk.value, chunk.dictionary, chunk.values), (0, 0, 4000));
        // 4 bytes of length and 17 of text a row.
        assert_eq!(chunk.plain, 4000 * 21);
        assert_eq!(
            batch_rows(&[chunk], 4000).map(|b| b.0),
            Ok(DECODE_ROWS as usize)
        );
    }

    #[test]
    fn a_delta_value_may_be_as_long_as_its_page() {
        let texts: Vec<String> = (0..100).map(|i| format!("shared prefix {i:03}")).collect();
        let props = props()
            .set_dictionary_enabled(false)
            .set_encoding(Encoding::DELTA_BYTE_ARRAY)
            .build();
        let chunk = census_of(&write(texts, props));
        assert_eq!(chunk.plain, 0);
        // The page's decompressed size: a prefix may repeat all of the value before it.
        assert!(chunk.value >= 17 && chunk.value < chunk.page, "{chunk:?}");
    }

    #[test]
    fn batches_hold_about_a_mebibyte_and_a_row_over_the_allowance_is_refused() {
        let plain = |plain, values| Chunk {
            plain,
            values,
            ..Chunk::default()
        };
        assert_eq!(batch_rows(&[plain(100, 10)], 10).map(|b| b.0), Ok(1024));
        assert_eq!(batch_rows(&[plain(10 << 20, 10)], 10).map(|b| b.0), Ok(1));
        assert_eq!(batch_rows(&[plain(64 << 20, 512)], 512).map(|b| b.0), Ok(8));
        assert_eq!(batch_rows(&[plain(0, 0)], 0).map(|b| b.0), Ok(1024));
        // Text and id both count.
        assert_eq!(
            batch_rows(&[plain(32 << 20, 512); 2], 512).map(|b| b.0),
            Ok(8)
        );
        let bomb = Chunk {
            value: 4 << 20,
            values: 5000,
            dictionary: 4 << 20,
            page: 4 << 20,
            ..Chunk::default()
        };
        assert_eq!(batch_rows(&[bomb], 5000).map(|b| b.0), Ok(1));
        let over = Chunk {
            value: allowance(),
            ..bomb
        };
        let e = batch_rows(&[over], 5000).unwrap_err();
        // The allowance is process-wide, set by the scans other tests run meanwhile.
        assert!(
            e.starts_with("needs about ")
                && e.contains(" of memory to decode a row with its pages"),
            "{e}"
        );
        assert!(
            e.ends_with("rewrite the file with smaller row groups"),
            "{e}"
        );
    }
}
