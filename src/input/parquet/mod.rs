//! Parquet dumps: a Parquet file → one document per row, its text and id taken from the columns
//! named like JSON Lines fields (`--text-field body.text` reaches into the struct column `body`).
//!
//! A file is opened by its footer (its schema and row groups), the text and id columns are
//! checked against the schema once, and then only those columns are read (projection), row group
//! by row group, a decoded batch of about [`pages::DECODE_BYTES`] at a time, sized from the page
//! headers by what the rows decode to (dictionaries included), so a file of any size passes
//! through a bounded amount of memory. A record's "line" is its 1-based row
//! number in the file, counting across row groups. Reading the texts of some rows again
//! ([`ParquetDump::texts`]) decodes only the row groups that hold them, and in those only the text
//! column. The module reads; it does not decide what a bad row costs the scan (see
//! [`crate::ingest`]).

pub(crate) mod chunks;
pub(crate) mod columns;
pub(crate) mod footer;
mod pages;
mod rows;
mod thrift;

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Compression as Codec;

use crate::input::jsonl::JsonlOptions;
use crate::input::source::Source;
pub use pages::set_decode_limit;
pub(crate) use rows::Arrays;
pub use rows::{RawGroup, Row, RowBatch, Rows, Texts, WholeRows};

/// The four bytes a Parquet file starts (and ends) with.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// True when `file` starts with [`MAGIC`]. Read at offset 0 without moving the file's cursor.
pub fn starts_with_magic(file: &Source) -> std::io::Result<bool> {
    let mut head = [0u8; 4];
    match file.read_exact_at(&mut head, 0) {
        Ok(()) => Ok(&head == MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a reading of a row group's text column chunk saw, to tell later from the chunk's raw
/// bytes alone, without decoding them, that the group's texts are those read
/// ([`WholeRows::text_print`]): the group, where its rows are, the chunk's codec and the hash of
/// its bytes. The same bytes in the same codec decode to the same texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextPrint {
    group: usize,
    /// Rows before the group, and in it (as the footer says: rows are numbered by it).
    first: u64,
    rows: u64,
    codec: Codec,
    hash: u128,
}

impl TextPrint {
    /// The row group it is of.
    pub fn group(&self) -> usize {
        self.group
    }
}

/// The prints of the row groups the first pass read whole, by dump.
pub type TextPrints = HashMap<PathBuf, Vec<TextPrint>>;

/// An open Parquet dump whose text (and id) columns were found.
pub struct ParquetDump {
    file: Source,
    meta: ArrowReaderMetadata,
    /// The columns rows are read from.
    cols: Picked,
    /// The leaf columns of the text, and of the text and id.
    text_leaves: Vec<usize>,
    all_leaves: Vec<usize>,
}

/// The columns a dump's documents are read from, found in its Arrow schema by [`Picked::find`]:
/// a Parquet file's, or a table's handed over in memory ([`crate::input::table`]).
pub struct Picked {
    /// Path to the text column (column names, which may hold a dot: [`columns::resolve`]), and
    /// the name as given (for messages).
    pub(crate) text: Vec<String>,
    pub(crate) text_name: String,
    /// Path to the id column; None when there is no such column (no record has an id).
    pub(crate) id: Option<Vec<String>>,
    /// Path to the `--keep-by` column; None when not given or there is no such column.
    pub(crate) keep: Option<Vec<String>>,
    /// Longest text accepted, in bytes.
    pub(crate) max_text: u64,
}

impl Picked {
    /// Finds the columns `opts` names among `fields`: the text column must be a string column
    /// (`string`, `large_string` or `string_view`), or of type `null` (every row's text null:
    /// [`columns::holds_text`]); an id column that is missing gives no ids.
    /// The error names what is wrong and lists the columns there are.
    pub fn find(fields: &arrow_schema::Fields, opts: &JsonlOptions) -> Result<Picked, String> {
        let text_name = opts.text_field.join(".");
        let columns = || columns::listing(fields);
        let (text, text_field) = columns::resolve(fields, &opts.text_field)?
            .ok_or_else(|| format!("no column \"{text_name}\" (columns: {})", columns()))?;
        let text_type = text_field.data_type();
        if !columns::holds_text(text_type) {
            return Err(format!(
                "column \"{text_name}\" is {}, not a string (columns: {})",
                type_name(text_type),
                columns()
            ));
        }
        let id = match columns::resolve(fields, &opts.id_field)? {
            Some((_, f)) if !columns::is_id(f.data_type()) => {
                return Err(format!(
                    "column \"{}\" is {}, which cannot name a document (strings, numbers, \
                     booleans, and lists and structs of them can)",
                    opts.id_field.join("."),
                    type_name(f.data_type())
                ))
            }
            Some((p, _)) => Some(p),
            None => None,
        };
        let keep = match opts.keep_field.as_deref() {
            Some(p) => match columns::resolve(fields, p)? {
                Some((_, f)) if !columns::is_comparable(f.data_type()) => {
                    return Err(format!(
                        "column \"{}\" is {}, which --keep-by cannot compare (numbers, \
                         strings, booleans, timestamps and dates can)",
                        p.join("."),
                        type_name(f.data_type())
                    ))
                }
                found => found.map(|(p, _)| p),
            },
            None => None,
        };
        Ok(Picked {
            text,
            text_name,
            id,
            keep,
            max_text: opts.max_line,
        })
    }
}

impl ParquetDump {
    /// Reads the footer of `file` and finds the columns `opts` names ([`Picked::find`]).
    pub fn open(file: impl Into<Source>, opts: &JsonlOptions) -> Result<ParquetDump, String> {
        let file: Source = file.into();
        // Types from the Parquet schema alone, not from the Arrow schema a writer may embed:
        // pyarrow stores a categorical column's strings as a dictionary there, and they are
        // strings all the same.
        let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
        footer::check(&file)?;
        let meta = guarded(|| {
            ArrowReaderMetadata::load(&file, options)
                .map_err(|e| format!("not a readable Parquet file: {e}"))
        })?;
        let cols = Picked::find(meta.schema().fields(), opts)?;
        let schema = meta.parquet_schema();
        let text_leaves = leaves_under(schema, &cols.text);
        let mut all_leaves = text_leaves.clone();
        all_leaves.extend(cols.id.iter().flat_map(|p| leaves_under(schema, p)));
        all_leaves.extend(cols.keep.iter().flat_map(|p| leaves_under(schema, p)));
        // A column on two paths (the id is the keep-by field) is read once.
        all_leaves.sort_unstable();
        all_leaves.dedup();
        Ok(ParquetDump {
            file,
            meta,
            cols,
            text_leaves,
            all_leaves,
        })
    }

    /// Its columns, struct fields by their dotted names (for a message).
    pub fn columns(&self) -> String {
        columns::listing(self.meta.schema().fields())
    }

    /// Every row, in order: a document, a bad row, or the failure that ended the reading.
    pub fn rows(self) -> Rows {
        Rows::new(self, None)
    }

    /// As [`ParquetDump::rows`], and the [`TextPrint`] of each row group read whole added to
    /// `prints` (in order) as its reading ends.
    pub fn rows_printed(self, prints: Arc<std::sync::Mutex<Vec<TextPrint>>>) -> Rows {
        Rows::new(self, Some(prints))
    }

    /// Where row group `group`'s text column chunk lies (start, length), when the text is a
    /// single leaf column and the footer places it in the file.
    fn text_chunk(&self, group: usize) -> Option<(u64, u64)> {
        let [leaf] = self.text_leaves[..] else {
            return None;
        };
        let file_len = self.file.len().ok()?;
        chunk_range(self.meta.metadata().row_group(group).column(leaf), file_len).ok()
    }

    /// Row group `group`'s print with `hash`, its chunk's hash; `first` rows come before it.
    fn text_print(&self, group: usize, first: u64, hash: u128) -> Option<TextPrint> {
        let [leaf] = self.text_leaves[..] else {
            return None;
        };
        let rg = self.meta.metadata().row_group(group);
        Some(TextPrint {
            group,
            first,
            rows: rg.num_rows().max(0) as u64,
            codec: rg.column(leaf).compression(),
            hash,
        })
    }

    /// Every row with all its columns, a decoded batch at a time, for writing the rows out again
    /// (`--write-dataset`); with `typed`, typed as the writer's Arrow schema says
    /// ([`ParquetDump::typed`]), else as the Parquet schema does (time zones as UTC offsets,
    /// which arrow-json writes, where it cannot write a named zone).
    pub fn whole_rows(mut self, typed: bool) -> WholeRows {
        if typed {
            self.meta = self.typed();
        }
        WholeRows::new(self)
    }

    /// The file's metadata with the types of the Arrow schema its writer embedded, as pyarrow
    /// reads it (time zones, large, view and dictionary types, field metadata), so that rows
    /// written out again keep them; the Parquet schema's own when there is none, when it does
    /// not fit the file, or when it makes the text column something other than a string, a
    /// dictionary of strings (which the rows' texts are decoded from: `rows::text_arrays`) or
    /// `null`.
    fn typed(&self) -> ArrowReaderMetadata {
        let metadata = self.meta.metadata().clone();
        let typed = guarded(|| {
            ArrowReaderMetadata::try_new(metadata, ArrowReaderOptions::new())
                .map_err(|e| e.to_string())
        });
        let text = |t: &DataType| match t {
            DataType::Dictionary(_, values) => columns::is_text(values),
            t => columns::holds_text(t),
        };
        match typed {
            Ok(m)
                if columns::find(m.schema().fields(), &self.cols.text)
                    .is_some_and(|f| text(f.data_type())) =>
            {
                m
            }
            _ => self.meta.clone(),
        }
    }

    /// The Arrow schema rows are read with.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        self.meta.schema().clone()
    }

    /// The texts of the rows whose 1-based numbers are the keys of `wanted` (each given with the
    /// document it is), read again; a row that is null now, or lies beyond the end of the file,
    /// or in a row group that can no longer be read, is left out.
    pub fn texts(self, wanted: BTreeMap<u64, u32>) -> Texts {
        Texts::new(self, wanted)
    }

    fn groups(&self) -> usize {
        self.meta.metadata().num_row_groups()
    }

    /// The number of rows before each row group, and the total after the last.
    fn group_starts(&self) -> Vec<u64> {
        let groups = self.meta.metadata().row_groups();
        let mut starts = vec![0u64];
        for g in groups {
            let last = starts.last().copied().unwrap_or(0);
            starts.push(last + g.num_rows().max(0) as u64);
        }
        starts
    }

    /// A reader of row group `group` (of the `leaves` asked for), a batch of about
    /// [`pages::DECODE_BYTES`] decoded at a time, of the rows `selection` picks.
    /// With `print`, the bytes read of the chunk it is of are hashed.
    fn reader(
        &self,
        group: usize,
        leaves: Leaves,
        selection: Option<RowSelection>,
        print: Option<Arc<chunks::Print>>,
    ) -> Result<ParquetRecordBatchReader, String> {
        let (batch, _) = self.sized(group, leaves)??;
        self.open_group(group, leaves, batch, selection, print)
    }

    /// The leaf columns `leaves` names.
    fn leaves(&self, leaves: Leaves) -> std::borrow::Cow<'_, [usize]> {
        match leaves {
            Leaves::Text => (&self.text_leaves[..]).into(),
            Leaves::TextAndId => (&self.all_leaves[..]).into(),
            Leaves::Every => (0..self.meta.parquet_schema().num_columns())
                .collect::<Vec<_>>()
                .into(),
        }
    }

    /// The rows of a decoded batch of row group `group` (of the `leaves` asked for), and what
    /// its reader holds then ([`pages::batch_rows`]), from the census of its pages: inside,
    /// why the group is too large to decode; outside, a failure to read it.
    fn sized(&self, group: usize, leaves: Leaves) -> Result<Result<(usize, u64), String>, String> {
        let leaves = self.leaves(leaves);
        let rg = self.meta.metadata().row_group(group);
        let file_len = self.file.len().map_err(|e| e.to_string())?;
        let ranges = leaves
            .iter()
            .map(|&l| chunk_range(rg.column(l), file_len))
            .collect::<Result<Vec<_>, String>>()?;
        // The census reads only page headers: an object fetches a small window at each (a
        // small chunk whole, which the decoding then finds fetched).
        self.file.want(&ranges, true);
        let mut chunks = Vec::with_capacity(leaves.len());
        for &l in leaves.iter() {
            let c = rg.column(l);
            let name = || c.column_path().string();
            let (start, len) = chunk_range(c, file_len)?;
            if let Some(codec) = unread_codec(c.compression()) {
                return Err(format!(
                    "column \"{}\" is compressed with {codec}, which dupfind does not read \
                     (it reads snappy, zstd and gzip)",
                    name()
                ));
            }
            let chunk = pages::census(&self.file, c, start, len)
                .map_err(|e| format!("column \"{}\": {e}", name()))?;
            chunks.push(chunk);
        }
        // The decoding reads the column chunks whole: an object fetches them, and nothing
        // between them, in windows.
        self.file.want(&ranges, false);
        Ok(pages::batch_rows(&chunks, rg.num_rows().max(0) as u64))
    }

    /// A reader of row group `group` (of the `leaves` asked for), `batch` rows decoded at a
    /// time ([`ParquetDump::sized`]), of the rows `selection` picks.
    fn open_group(
        &self,
        group: usize,
        leaves: Leaves,
        batch: usize,
        selection: Option<RowSelection>,
        print: Option<Arc<chunks::Print>>,
    ) -> Result<ParquetRecordBatchReader, String> {
        let leaves = self.leaves(leaves);
        let file = self.file.try_clone().map_err(|e| e.to_string())?;
        guarded(|| {
            let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                chunks::Pages(file, print),
                self.meta.clone(),
            )
            .with_projection(ProjectionMask::leaves(
                self.meta.parquet_schema(),
                leaves.iter().copied(),
            ))
            .with_row_groups(vec![group])
            .with_batch_size(batch);
            if let Some(selection) = selection {
                builder = builder.with_row_selection(selection);
            }
            builder.build().map_err(|e| e.to_string())
        })
    }
}

/// Where column chunk `c` lies in a file of `file_len` bytes: its start and length, checked.
fn chunk_range(
    c: &parquet::file::metadata::ColumnChunkMetaData,
    file_len: u64,
) -> Result<(u64, u64), String> {
    // parquet's `byte_range` asserts, rather than reports, a negative offset or length.
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
    let len = c.compressed_size();
    if start < 0 || len < 0 || (start as u64).saturating_add(len as u64) > file_len {
        let name = c.column_path().string();
        return Err(format!(
            "the footer places column \"{name}\" outside the file"
        ));
    }
    Ok((start as u64, len as u64))
}

/// The leaf columns a reader decodes.
#[derive(Clone, Copy)]
enum Leaves {
    Text,
    TextAndId,
    Every,
}

/// The name of a page codec that is not read, None for one that is. Read are those the parquet
/// crate is built with (Cargo.toml): snappy (the default of Spark, DuckDB and pyarrow), zstd,
/// and gzip (Hive's); LZ4 and Brotli are rare enough to leave out.
fn unread_codec(codec: Codec) -> Option<&'static str> {
    match codec {
        Codec::UNCOMPRESSED | Codec::SNAPPY | Codec::ZSTD(_) | Codec::GZIP(_) => None,
        Codec::LZ4 => Some("LZ4"),
        Codec::LZ4_RAW => Some("LZ4_RAW"),
        Codec::BROTLI(_) => Some("Brotli"),
        Codec::LZO => Some("LZO"),
    }
}

/// The leaf columns at or below `path` in the Parquet schema.
fn leaves_under(schema: &parquet::schema::types::SchemaDescriptor, path: &[String]) -> Vec<usize> {
    (schema.columns().iter().enumerate())
        .filter(|(_, c)| {
            let parts = c.path().parts();
            parts.len() >= path.len() && parts.iter().zip(path).all(|(a, b)| a == b)
        })
        .map(|(i, _)| i)
        .collect()
}

/// A column type as Parquet users know it (`binary`, `int64`, `struct`), else Arrow's name.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "binary".into(),
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary({n})"),
        DataType::Struct(_) => "a struct".into(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => "a list".into(),
        DataType::Map(..) => "a map".into(),
        other => other.to_string().to_lowercase(),
    }
}

/// An error of the reader, without the "Parquet argument error" arrow wraps around parquet's.
fn reason(e: arrow_schema::ArrowError) -> String {
    match e {
        arrow_schema::ArrowError::ParquetError(message) => message,
        other => other.to_string(),
    }
}

/// Runs `f`, turning a panic into an error: on malformed input the parquet crate has panicked
/// rather than returned an error in some versions (an out-of-range dictionary index, a
/// miscounted page), and a damaged file must not end the scan.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = (panic.downcast_ref::<&str>().copied())
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Err(format!("malformed Parquet (the reader failed: {message})"))
    })
}

#[cfg(test)]
mod tests;
