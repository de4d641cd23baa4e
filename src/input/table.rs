//! A table in memory as an input: Arrow record batches that the program the engine runs in
//! hands over (the Python package's `dedup`, through the Arrow C stream interface), read as the
//! rows of a Parquet dump are, without a file between them.
//!
//! The batches are the caller's: their buffers are read where they lie, never copied whole.
//! The scan copies one reader's batch of texts at a time for the workers to sign, as it copies
//! a Parquet dump's decoded rows, and a candidate's text while verification shingles it (read
//! from the table, not from a spill file).
//!
//! A scan reaches its table by a name (`<table N>`, unique in the process) that is registered
//! while the scan runs ([`register`]): the dump readers look a path up here before opening a
//! file ([`find`]), as standard input's copy is looked up by `-`. The table is read apart from
//! the walk ([`crate::config::Config::table`]), so the name never reaches the file system.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;

use crate::input::jsonl::JsonlOptions;
use crate::input::parquet::{columns, Arrays, Picked, Row};
use crate::input::walk::FileEntry;

/// A table handed over in memory.
pub struct Table {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    /// The rows before each batch, and the total after the last.
    starts: Vec<u64>,
    /// The column naming its rows (`id_column`); without one, a row is named by its number.
    id: Option<Vec<String>>,
    /// Bytes of its buffers, as the size of the input.
    bytes: u64,
}

impl Table {
    /// The table of `batches` (each of `schema`), its rows named by the column `id` (a dotted
    /// path) or, without one, by their numbers from 0. The columns the scan reads are checked as
    /// Arrow's readers check what they read (offsets in bounds, strings UTF-8): the buffers come
    /// from another program, and the readers trust a checked array.
    pub fn new(
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        id: Option<&str>,
        opts: &JsonlOptions,
    ) -> Result<Table> {
        let id = id.map(crate::input::jsonl::field_path).transpose()?;
        // Only the columns the scan reads are checked (a wide table's others are left alone);
        // columns it cannot read are the scan's error for the table, reported as a dump's.
        let read: Vec<String> = match Picked::find(schema.fields(), &with_id(opts, &id)) {
            Ok(cols) => [Some(cols.text), cols.id, cols.keep]
                .into_iter()
                .flatten()
                .filter_map(|path| path.first().cloned())
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut starts = vec![0u64];
        let mut bytes = 0u64;
        for (b, batch) in batches.iter().enumerate() {
            if batch.schema().fields() != schema.fields() {
                anyhow::bail!("batch {b} of the table does not have the table's columns");
            }
            for (column, field) in batch.columns().iter().zip(schema.fields()) {
                if read.contains(field.name()) {
                    column
                        .to_data()
                        .validate_full()
                        .with_context(|| format!("column \"{}\" of the table", field.name()))?;
                }
                bytes += column.get_array_memory_size() as u64;
            }
            let last = starts.last().copied().unwrap_or(0);
            starts.push(last + batch.num_rows() as u64);
        }
        Ok(Table {
            schema,
            batches,
            starts,
            id,
            bytes,
        })
    }

    /// Its rows.
    pub fn rows(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }
}

/// `opts` with the table's id column (`--id-field` names a dump's): a row is named by the
/// table's own, or by its number.
fn with_id(opts: &JsonlOptions, id: &Option<Vec<String>>) -> JsonlOptions {
    JsonlOptions {
        id_field: id.clone().unwrap_or_default(),
        ..opts.clone()
    }
}

/// The tables of the scans running now, by name.
static TABLES: Mutex<Vec<(PathBuf, Arc<Table>)>> = Mutex::new(Vec::new());
/// The number in the next table's name.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A table registered under its name while a scan reads it; unregistered when dropped.
pub struct Registered {
    name: PathBuf,
}

impl Registered {
    /// The name the scan reads the table by.
    pub fn name(&self) -> &Path {
        &self.name
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut tables) = TABLES.lock() {
            tables.retain(|(name, _)| *name != self.name);
        }
    }
}

/// Registers `table` under a name of its own for as long as the guard lives.
pub fn register(table: Arc<Table>) -> Registered {
    let name = PathBuf::from(format!("<table {}>", NEXT.fetch_add(1, Ordering::Relaxed)));
    if let Ok(mut tables) = TABLES.lock() {
        tables.push((name.clone(), table));
    }
    Registered { name }
}

/// The table registered as `path`, if one is.
pub fn find(path: &Path) -> Option<Arc<Table>> {
    let tables = TABLES.lock().ok()?;
    (tables.iter().find(|(name, _)| name == path)).map(|(_, t)| Arc::clone(t))
}

/// The input entry of the table registered as `name`: one dump, the only input.
pub fn entry(name: &Path) -> Option<FileEntry> {
    let table = find(name)?;
    Some(FileEntry::unwalked_dump(name.to_path_buf(), table.bytes))
}

/// A table opened for reading its documents: the columns `opts` names, found in its schema as
/// a Parquet dump's are (the same checks and messages).
pub struct TableDump {
    table: Arc<Table>,
    cols: Picked,
}

impl TableDump {
    pub fn open(table: Arc<Table>, opts: &JsonlOptions) -> Result<TableDump, String> {
        let cols = Picked::find(table.schema.fields(), &with_id(opts, &table.id))?;
        Ok(TableDump { table, cols })
    }

    /// Its columns, struct fields by their dotted names (for a message).
    pub fn columns(&self) -> String {
        columns::listing(self.table.schema.fields())
    }

    /// Every row, in order, as a Parquet dump's: a row's "line" is its number from 1. A row
    /// without an id (no id column, or a null id) is named by its number from 0, the place it
    /// has in the caller's table. Each row's text is copied as the row is taken, so that the
    /// reader's bounded batches hold what a table's (perhaps single, huge) batch would not.
    pub fn rows(self) -> TableRows {
        TableRows {
            dump: self,
            batch: 0,
            k: 0,
            arrays: None,
        }
    }

    /// Copies the text of the row numbered `line` from 1 into `buf`; None when it is null or
    /// there is no such row.
    pub fn text_into(&self, line: u64, buf: &mut Vec<u8>) -> Option<()> {
        let row = line.checked_sub(1)?;
        // The batch holding `row`: the last that starts at or before it.
        let b = self
            .table
            .starts
            .partition_point(|&s| s <= row)
            .checked_sub(1)?;
        let batch = self.table.batches.get(b)?;
        let k = usize::try_from(row - self.table.starts[b]).ok()?;
        if k >= batch.num_rows() {
            return None;
        }
        let arrays = columns::arrays_at(batch, &self.cols.text)?;
        let text = columns::text_of(&arrays, k)?;
        buf.clear();
        buf.extend_from_slice(text.as_bytes());
        Some(())
    }
}

impl std::fmt::Debug for TableDump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableDump")
            .field("rows", &self.table.rows())
            .field("text", &self.cols.text)
            .finish()
    }
}

/// The rows of a table ([`TableDump::rows`]).
pub struct TableRows {
    dump: TableDump,
    /// The batch being read, its next row, and its arrays along the columns read.
    batch: usize,
    k: usize,
    arrays: Option<Arrays>,
}

impl Iterator for TableRows {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        let table = &self.dump.table;
        loop {
            let batch = table.batches.get(self.batch)?;
            if self.k == batch.num_rows() {
                (self.batch, self.k, self.arrays) = (self.batch + 1, 0, None);
                continue;
            }
            let first = table.starts[self.batch];
            let arrays = match &self.arrays {
                Some(arrays) => arrays,
                None => match self.dump.cols.arrays(batch) {
                    Ok(arrays) => self.arrays.insert(arrays),
                    Err(reason) => {
                        // The schema was checked: no batch lacks the columns. Were one to,
                        // the reading ends there, as a damaged Parquet row group ends it.
                        self.batch = table.batches.len();
                        return Some(Row::Failed {
                            line: first,
                            reason,
                        });
                    }
                },
            };
            let line = first + self.k as u64 + 1;
            let row = match self.dump.cols.row(arrays, self.k, line) {
                Ok(Row::Doc {
                    line,
                    id,
                    text,
                    keep,
                }) => Row::Doc {
                    line,
                    id: id.or_else(|| Some((line - 1).to_string())),
                    text,
                    keep,
                },
                Ok(row) => row,
                Err(reason) => {
                    self.batch = table.batches.len();
                    Row::Failed {
                        line: line - 1,
                        reason,
                    }
                }
            };
            self.k += 1;
            return Some(row);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use arrow_array::cast::AsArray;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batches(texts: &[&[Option<&str>]]) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, true)]));
        let batches = (texts.iter())
            .map(|t| {
                let column: ArrayRef = Arc::new(StringArray::from(t.to_vec()));
                RecordBatch::try_new(schema.clone(), vec![column]).unwrap()
            })
            .collect();
        (schema, batches)
    }

    const ONE: &str = "the harbor bridge reopened on monday after two years of repairs";
    const TWO: &str = "knead the dough for ten minutes then let it rise for an hour";

    #[test]
    fn rows_are_numbered_across_batches_and_named_by_their_number_without_ids() {
        let (schema, batches) = batches(&[&[Some(ONE), None], &[Some(TWO), Some(ONE)]]);
        let opts = JsonlOptions {
            text_field: vec!["text".into()],
            id_field: vec!["id".into()],
            keep_field: None,
            max_line: 1 << 20,
        };
        let table = Arc::new(Table::new(schema, batches, None, &opts).unwrap());
        let rows: Vec<Row> = TableDump::open(table.clone(), &opts)
            .unwrap()
            .rows()
            .collect();
        let named: Vec<(u64, Option<String>)> = (rows.iter())
            .map(|r| match r {
                Row::Doc { line, id, .. } => (*line, id.clone()),
                Row::Bad { line, .. } => (*line, None),
                Row::Failed { .. } | Row::Unread { .. } => panic!("{r:?}"),
            })
            .collect();
        assert_eq!(
            named,
            [
                (1, Some("0".into())),
                (2, None),
                (3, Some("2".into())),
                (4, Some("3".into()))
            ]
        );
        let dump = TableDump::open(table, &opts).unwrap();
        let mut buf = Vec::new();
        assert!(dump.text_into(3, &mut buf).is_some());
        assert_eq!(buf, TWO.as_bytes());
        assert!(dump.text_into(2, &mut buf).is_none());
        assert!(dump.text_into(5, &mut buf).is_none());
    }

    #[test]
    fn a_scan_of_a_table_annotates_its_rows_in_order() {
        let (schema, batches) = batches(&[&[Some(ONE), None, Some(TWO)], &[Some(ONE)]]);
        let cli = crate::cli::try_parse_from(
            &["dupfind", "scan", "--quiet"].map(std::ffi::OsString::from),
        )
        .unwrap();
        let abandoned = AtomicBool::new(false);
        let (_, _, added) =
            crate::embed::scan_table(cli, (schema, batches), None, &abandoned).unwrap();
        assert_eq!(added.num_rows(), 4);
        let keep = added.column_by_name("dupfind_keep").unwrap().as_boolean();
        assert_eq!(
            keep.iter().collect::<Vec<_>>(),
            [Some(true); 3]
                .into_iter()
                .chain([Some(false)])
                .collect::<Vec<_>>()
        );
        let of = added
            .column_by_name("dupfind_duplicate_of")
            .unwrap()
            .as_string::<i32>();
        assert_eq!(of.iter().collect::<Vec<_>>(), [None, None, None, Some("0")]);
        // The name is no longer registered once the scan is over.
        assert!(find(Path::new("<table 1>")).is_none());
    }
}
