//! Rows: an open Parquet dump → its rows as documents, bad rows or the failure that ended the
//! reading ([`Rows`]), or the texts of chosen rows read again ([`Texts`]). One row group is open
//! at a time and decoded a batch at a time; a failure (I/O, a damaged page, a panic inside the
//! parquet crate) ends the reading with the row group and the rows read before it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, RowSelection, RowSelector};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::writer::SerializedRowGroupWriter;
use parquet::schema::types::SchemaDescriptor;

use super::chunks::{print_of, Positioned, Print};
use super::{columns, guarded, Leaves, ParquetDump, Picked, TextPrint};
use crate::budget::{human, Budget, SharedPin};
use crate::input::field_value::FieldValue;

/// One row of a Parquet dump.
#[derive(Debug)]
pub enum Row {
    /// A document: its 1-based row number, its id if it has one, its text.
    Doc {
        line: u64,
        id: Option<String>,
        text: String,
        keep: Option<FieldValue>,
    },
    /// A row that holds no document (null text, text too long), with why.
    Bad { line: u64, reason: String },
    /// The reading failed after `line` rows; iteration ends after this.
    Failed { line: u64, reason: String },
    /// Rows `first..=last`, a row group too large to decode under the memory budget, with why;
    /// the rows after them are read.
    Unread {
        first: u64,
        last: u64,
        reason: String,
    },
}

impl Row {
    /// Its text's length (0 when it has none).
    pub fn text_len(&self) -> usize {
        match self {
            Row::Doc { text, .. } => text.len(),
            _ => 0,
        }
    }
}

/// The arrays of one batch along the paths of the [`Picked`] columns.
pub(crate) struct Arrays {
    text: Vec<ArrayRef>,
    id: Option<Vec<ArrayRef>>,
    keep: Option<Vec<ArrayRef>>,
}

impl Picked {
    /// The arrays of `batch` its rows are read from.
    pub(crate) fn arrays(&self, batch: &RecordBatch) -> Result<Arrays, String> {
        let text = columns::arrays_at(batch, &self.text)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("the batch has no column \"{}\"", self.text_name))?;
        Ok(Arrays {
            text,
            id: (self.id.as_ref()).and_then(|p| columns::arrays_at(batch, p)),
            keep: (self.keep.as_ref()).and_then(|p| columns::arrays_at(batch, p)),
        })
    }

    /// Row `k` of the batch of `arrays`, numbered `line`: a document, or a row that holds none.
    pub(crate) fn row(&self, arrays: &Arrays, k: usize, line: u64) -> Result<Row, String> {
        let Some(column) = arrays.text.last() else {
            return Err(format!("the batch has no column \"{}\"", self.text_name));
        };
        Ok(match columns::text_at(column.as_ref(), k) {
            _ if columns::is_null_at(&arrays.text, k) => Row::Bad {
                line,
                reason: format!("\"{}\" is null", self.text_name),
            },
            Some(t) if t.len() as u64 > self.max_text => Row::Bad {
                line,
                reason: format!("\"{}\" longer than {} bytes", self.text_name, self.max_text),
            },
            Some(t) => Row::Doc {
                line,
                id: arrays.id.as_deref().and_then(|a| columns::id_at(a, k)),
                text: t.to_string(),
                keep: arrays.keep.as_deref().and_then(|a| columns::value_at(a, k)),
            },
            None => return Err(format!("column \"{}\" is not a string", self.text_name)),
        })
    }
}

/// Every row of a dump, in order ([`ParquetDump::rows`]).
pub struct Rows {
    dump: ParquetDump,
    starts: Vec<u64>,
    /// The row group being read, and its reader.
    group: usize,
    reader: Option<ParquetRecordBatchReader>,
    /// Rows handed out so far: the number of the last.
    line: u64,
    queue: VecDeque<Row>,
    done: bool,
    /// Where the row groups' prints go, and the print of the one being read.
    prints: Option<Arc<Mutex<Vec<TextPrint>>>>,
    print: Option<Arc<Print>>,
    /// The budget a row group's decoding is charged to, and what the reader's pin covers.
    budget: Option<(Arc<Budget>, u64)>,
    /// What the row group being read needs beyond that.
    extra: Option<SharedPin>,
}

impl Rows {
    pub(super) fn new(dump: ParquetDump, prints: Option<Arc<Mutex<Vec<TextPrint>>>>) -> Rows {
        Rows {
            starts: dump.group_starts(),
            dump,
            group: 0,
            reader: None,
            line: 0,
            queue: VecDeque::new(),
            done: false,
            prints,
            print: None,
            budget: None,
            extra: None,
        }
    }

    /// Charges the decoding of a row group that needs more than `covered` (what the reader's
    /// own pin holds for it) to `budget` while it is read; a group the budget cannot hold is
    /// left unread ([`Row::Unread`]).
    pub fn charged(mut self, budget: Arc<Budget>, covered: u64) -> Rows {
        self.budget = Some((budget, covered));
        self
    }

    /// Adds the print of the row group just read whole, if it has one.
    fn printed(&mut self) {
        let (Some(prints), Some(print)) = (&self.prints, self.print.take()) else {
            return;
        };
        let first = self.starts[self.group];
        let print = (print.digest()).and_then(|h| self.dump.text_print(self.group, first, h));
        if let (Some(print), Ok(mut prints)) = (print, prints.lock()) {
            prints.push(print);
        }
    }

    /// Decodes the next batch into the queue, opening the next row group when one ends.
    fn fill(&mut self) -> Result<(), String> {
        let Some(reader) = &mut self.reader else {
            if self.group == self.dump.groups() {
                self.done = true;
                return Ok(());
            }
            // Numbered by the footer, so that a row group that ended early cannot shift the
            // numbers of the rows after it.
            self.line = self.starts[self.group];
            self.print = (self.prints.as_ref())
                .and_then(|_| self.dump.text_chunk(self.group))
                .map(|(start, len)| Print::new(start, len));
            let print = self.print.clone();
            let charged = match self.dump.sized(self.group, Leaves::TextAndId)? {
                Ok((batch, need)) => self.charge(need).map(|()| batch),
                Err(too_big) => Err(too_big),
            };
            let batch = match charged {
                Ok(batch) => batch,
                Err(reason) => {
                    let (first, last) = (self.starts[self.group] + 1, self.starts[self.group + 1]);
                    self.print = None;
                    self.group += 1;
                    if first <= last {
                        self.queue.push_back(Row::Unread {
                            first,
                            last,
                            reason: format!("row group {}: {reason}", self.group - 1),
                        });
                    }
                    return Ok(());
                }
            };
            self.reader =
                Some(
                    self.dump
                        .open_group(self.group, Leaves::TextAndId, batch, None, print)?,
                );
            return Ok(());
        };
        match guarded(|| reader.next().transpose().map_err(super::reason))? {
            Some(batch) => self.take(&batch),
            None => {
                self.reader = None;
                self.extra = None;
                self.printed();
                self.group += 1;
                Ok(())
            }
        }
    }

    /// Pins what a row group's reader needs beyond what is covered, for as long as it is read.
    fn charge(&mut self, need: u64) -> Result<(), String> {
        self.extra = None;
        let Some((budget, covered)) = &self.budget else {
            return Ok(());
        };
        if need > *covered {
            let pin = budget.pin_shared(need - covered);
            self.extra = Some(pin.map_err(|_| {
                format!(
                    "needs about {} of memory to decode a row with its pages and dictionaries, \
                     more than --max-memory ({}) leaves beside what is held; raise \
                     --max-memory, or rewrite the file with smaller row groups",
                    human(need),
                    human(budget.limit())
                )
            })?);
        }
        Ok(())
    }

    /// Queues the rows of a decoded batch.
    fn take(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let cols = &self.dump.cols;
        let arrays = cols.arrays(batch)?;
        let end = self.starts[self.group + 1];
        for k in 0..batch.num_rows() {
            // Rows are numbered by the footer; a row group whose pages hold more rows than it
            // says would number its last rows as the next group's, and reading them again
            // (which finds a row by the footer's numbers) would find other rows.
            if self.line == end {
                return Err(format!(
                    "more rows than the footer's {}",
                    end - self.starts[self.group]
                ));
            }
            self.line += 1;
            self.queue.push_back(cols.row(&arrays, k, self.line)?);
        }
        Ok(())
    }

    /// Where a failure happened: the row group and the rows it holds.
    fn place(&self) -> String {
        let (first, end) = (self.starts[self.group] + 1, self.starts[self.group + 1]);
        format!("row group {} (rows {first}-{end})", self.group)
    }
}

impl Iterator for Rows {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        loop {
            if let Some(row) = self.queue.pop_front() {
                return Some(row);
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                self.done = true;
                // After the rows of the batch read before the failure, which the queue holds.
                let reason = format!("{}: {e}", self.place());
                self.queue.push_back(Row::Failed {
                    line: self.line,
                    reason,
                });
            }
        }
    }
}

/// A row group's reader of chosen rows, and the documents of those still to come.
type TextReader = (ParquetRecordBatchReader, std::vec::IntoIter<u32>);

/// The texts of chosen rows ([`ParquetDump::texts`]): (document, text), in row order.
pub struct Texts {
    dump: ParquetDump,
    /// The row groups still to read, each with its wanted rows (numbered within the group) and
    /// their documents, in order.
    groups: std::vec::IntoIter<(usize, Vec<(u64, u32)>)>,
    /// The open group's reader, and the documents of its selected rows still to come.
    reader: Option<TextReader>,
    queue: VecDeque<(u32, Vec<u8>)>,
}

impl Texts {
    pub(super) fn new(dump: ParquetDump, wanted: BTreeMap<u64, u32>) -> Texts {
        let starts = dump.group_starts();
        let mut groups: Vec<(usize, Vec<(u64, u32)>)> = Vec::new();
        for (line, doc) in wanted {
            let row = line.wrapping_sub(1);
            // The group holding `row`: the last that starts at or before it.
            let g = starts.partition_point(|&s| s <= row).saturating_sub(1);
            if line == 0 || g >= dump.groups() {
                continue;
            }
            match groups.last_mut() {
                Some((last, rows)) if *last == g => rows.push((row - starts[g], doc)),
                _ => groups.push((g, vec![(row - starts[g], doc)])),
            }
        }
        Texts {
            dump,
            groups: groups.into_iter(),
            reader: None,
            queue: VecDeque::new(),
        }
    }

    /// A reader of only the `rows` wanted of `group`, with their documents; None when the row
    /// group cannot be read.
    fn open(&self, group: usize, rows: Vec<(u64, u32)>) -> Option<TextReader> {
        let mut selectors = Vec::new();
        let mut at = 0u64;
        for &(row, _) in &rows {
            if row > at {
                selectors.push(RowSelector::skip((row - at) as usize));
            }
            selectors.push(RowSelector::select(1));
            at = row + 1;
        }
        let selection = RowSelection::from(selectors);
        let reader = self
            .dump
            .reader(group, Leaves::Text, Some(selection), None)
            .ok()?;
        let docs: Vec<u32> = rows.into_iter().map(|(_, d)| d).collect();
        Some((reader, docs.into_iter()))
    }

    /// Decodes the next batch into the queue, opening the next row group when one ends; false
    /// when no row group is left. A row group that fails is left for the next: its rows stay
    /// unavailable.
    fn fill(&mut self) -> bool {
        let Some((reader, docs)) = &mut self.reader else {
            let Some((group, rows)) = self.groups.next() else {
                return false;
            };
            self.reader = self.open(group, rows);
            return true;
        };
        let batch = match guarded(|| reader.next().transpose().map_err(super::reason)) {
            Ok(Some(batch)) => batch,
            Ok(None) | Err(_) => {
                self.reader = None;
                return true;
            }
        };
        let text = columns::arrays_at(&batch, &self.dump.cols.text);
        let Some(column) = text.as_ref().and_then(|t| t.last()) else {
            self.reader = None;
            return true;
        };
        for k in 0..batch.num_rows() {
            let Some(doc) = docs.next() else { break };
            let null = text.as_deref().is_some_and(|t| columns::is_null_at(t, k));
            if let Some(t) = columns::text_at(column.as_ref(), k).filter(|_| !null) {
                self.queue.push_back((doc, t.as_bytes().to_vec()));
            }
        }
        true
    }
}

impl Iterator for Texts {
    type Item = (u32, Vec<u8>);

    fn next(&mut self) -> Option<(u32, Vec<u8>)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if !self.fill() {
                return None;
            }
        }
    }
}

/// Every row of a dump with all its columns ([`ParquetDump::whole_rows`]): each decoded batch
/// with the 1-based number of its first row and its text column, in order; an error ends the
/// iteration (the rows after it are not read).
pub struct WholeRows {
    dump: ParquetDump,
    starts: Vec<u64>,
    group: usize,
    reader: Option<ParquetRecordBatchReader>,
    /// The number of the next row.
    line: u64,
    done: bool,
}

/// A decoded batch of whole rows: the number of its first row, the rows, and the arrays along
/// the text column's path.
pub struct RowBatch {
    pub first: u64,
    pub batch: RecordBatch,
    pub text: Vec<ArrayRef>,
}

impl RowBatch {
    /// The text of row `k` of the batch; None when it is null.
    pub fn text(&self, k: usize) -> Option<&str> {
        columns::text_of(&self.text, k)
    }
}

/// The arrays along the text column's path in `batch`, the text itself as plain strings: rows
/// typed as the dump's writer wrote them ([`ParquetDump::whole_rows`]) may hold it as a
/// dictionary, which the rows written keep, while the texts are hashed as the scan read them.
fn text_arrays(batch: &RecordBatch, dump: &ParquetDump) -> Result<Vec<ArrayRef>, String> {
    let mut text = columns::arrays_at(batch, &dump.cols.text)
        .ok_or_else(|| format!("the batch has no column \"{}\"", dump.cols.text_name))?;
    let plain = match text.last().and_then(|a| a.as_any_dictionary_opt()) {
        Some(d) => Some(
            arrow_select::take::take(d.values().as_ref(), d.keys(), None)
                .map_err(|e| format!("decoding the dictionary of the text column: {e}"))?,
        ),
        None => None,
    };
    if let (Some(plain), Some(last)) = (plain, text.last_mut()) {
        *last = plain;
    }
    Ok(text)
}

impl WholeRows {
    pub(super) fn new(dump: ParquetDump) -> WholeRows {
        WholeRows {
            starts: dump.group_starts(),
            dump,
            group: 0,
            reader: None,
            line: 1,
            done: false,
        }
    }

    /// The schema of every batch: the file's columns, typed as written.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        self.dump.schema()
    }

    fn next_batch(&mut self) -> Result<Option<RowBatch>, String> {
        loop {
            let Some(reader) = &mut self.reader else {
                if self.group == self.dump.groups() {
                    return Ok(None);
                }
                self.line = self.starts[self.group] + 1;
                self.reader = Some(self.dump.reader(self.group, Leaves::Every, None, None)?);
                continue;
            };
            let Some(batch) = guarded(|| reader.next().transpose().map_err(super::reason))? else {
                self.reader = None;
                self.group += 1;
                continue;
            };
            let text = text_arrays(&batch, &self.dump)?;
            let first = self.line;
            self.line += batch.num_rows() as u64;
            return Ok(Some(RowBatch { first, batch, text }));
        }
    }
}

impl Iterator for WholeRows {
    type Item = Result<RowBatch, String>;

    fn next(&mut self) -> Option<Result<RowBatch, String>> {
        if self.done {
            return None;
        }
        let next = self.next_batch();
        self.done = !matches!(next, Ok(Some(_)));
        next.transpose()
    }
}

/// One row group of a dump read whole ([`WholeRows::group`]): its decoded batches, in order.
pub struct GroupRows<'d> {
    dump: &'d ParquetDump,
    reader: ParquetRecordBatchReader,
    line: u64,
}

impl Iterator for GroupRows<'_> {
    type Item = Result<RowBatch, String>;

    fn next(&mut self) -> Option<Result<RowBatch, String>> {
        let batch = match guarded(|| self.reader.next().transpose().map_err(super::reason)) {
            Ok(Some(batch)) => batch,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        let text = match text_arrays(&batch, self.dump) {
            Ok(text) => text,
            Err(e) => return Some(Err(e)),
        };
        let first = self.line;
        self.line += batch.num_rows() as u64;
        Some(Ok(RowBatch { first, batch, text }))
    }
}

/// A row group's column chunks as the file has them, to be copied into another file without
/// decoding them ([`WholeRows::raw_group`]).
pub struct RawGroup {
    pages: super::chunks::Positioned,
    group: RowGroupMetaData,
}

impl RawGroup {
    /// Appends the chunks to `to`, a row group of a file whose leading columns are described as
    /// this file's are (else the parquet crate refuses them).
    pub fn append_to<W: std::io::Write + Send>(
        &self,
        to: &mut SerializedRowGroupWriter<'_, W>,
    ) -> parquet::errors::Result<()> {
        let rows = self.group.num_rows().max(0) as u64;
        for c in self.group.columns() {
            let close = ColumnCloseResult {
                bytes_written: c.compressed_size().max(0) as u64,
                rows_written: rows,
                metadata: c.clone(),
                bloom_filter: None,
                column_index: None,
                offset_index: None,
            };
            to.append_column(&self.pages, close)?;
        }
        Ok(())
    }
}

impl WholeRows {
    /// The number of rows before each row group, and the total after the last.
    pub fn group_starts(&self) -> Vec<u64> {
        self.dump.group_starts()
    }

    /// The file's Parquet schema.
    pub fn parquet_schema(&self) -> &SchemaDescriptor {
        self.dump.meta.parquet_schema()
    }

    /// Row group `group`, a decoded batch at a time: every column, or with `text_only` only the
    /// text column's (to check the rows before copying them raw).
    pub fn group(&self, group: usize, text_only: bool) -> Result<GroupRows<'_>, String> {
        let leaves = if text_only {
            Leaves::Text
        } else {
            Leaves::Every
        };
        Ok(GroupRows {
            dump: &self.dump,
            reader: self.dump.reader(group, leaves, None, None)?,
            line: self.dump.group_starts()[group] + 1,
        })
    }

    /// Row group `group`'s [`TextPrint`] as the file is now, from its text column chunk's raw
    /// bytes; None when it has none or the chunk cannot be read.
    pub fn text_print(&self, group: usize) -> Option<TextPrint> {
        let (start, len) = self.dump.text_chunk(group)?;
        let file = Positioned(self.dump.file.try_clone().ok()?);
        let hash = print_of(
            parquet::file::reader::ChunkReader::get_read(&file, start).ok()?,
            len,
        );
        let first = *self.starts.get(group)?;
        self.dump.text_print(group, first, hash.ok()?)
    }

    /// Row group `group`'s column chunks, their places in the file checked.
    pub fn raw_group(&self, group: usize) -> Result<RawGroup, String> {
        let file_len = self.dump.file.len().map_err(|e| e.to_string())?;
        let rg = self.dump.meta.metadata().row_group(group);
        for c in rg.columns() {
            super::chunk_range(c, file_len)?;
        }
        Ok(RawGroup {
            pages: Positioned(self.dump.file.try_clone().map_err(|e| e.to_string())?),
            group: rg.clone(),
        })
    }
}
