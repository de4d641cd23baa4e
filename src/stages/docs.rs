//! The document table: one row per document with text, as `sign` writes it and `route` carries
//! it (then with the text, for verification). Everything a later stage needs of a document is
//! here: where it is (path, aliases, dump line and id, offset in a plain dump), what the keep
//! policies compare (size, modification time, the `--keep-by` value as
//! [`FieldValue::to_bytes`] writes it), its content hash, and its sketches.

use std::path::PathBuf;

use anyhow::{Context, Result};
use arrow_array::builder::{
    BinaryBuilder, Int32Builder, Int64Builder, LargeBinaryBuilder, ListBuilder, StringBuilder,
};
use arrow_array::{
    Array, BinaryArray, Int32Array, Int64Array, LargeBinaryArray, ListArray, RecordBatch,
    StringArray,
};

use crate::input::field_value::FieldValue;
use crate::input::walk::{FileEntry, Record};

use super::columns::{
    arc, batch, column, time_from_parts, time_parts, u32s_from_le, u32s_le, u64s_from_le, u64s_le,
};

/// One document.
#[derive(Clone, Debug, PartialEq)]
pub struct DocRow {
    /// Its run-wide id: shard << 32 | position in the shard's inputs (dump records expanded).
    pub doc: i64,
    /// The document of its shard holding its content's sketches (itself unless it is a
    /// byte-identical copy of an earlier one in its shard).
    pub canon: i64,
    /// Where it came from.
    pub file: FileEntry,
    /// Its size in bytes (of a dump record: of its text).
    pub bytes: u64,
    /// xxh3-128 of its content.
    pub hash: u128,
    /// Its file's names (hard links) when read; 0 for a dump record.
    pub links: u32,
    /// The bytes its file took on disk when read (st_blocks × 512); 0 for a dump record.
    pub disk: u64,
    /// SimHash fingerprint.
    pub fingerprint: u64,
    /// Distinct shingles (`--containment`).
    pub shingles: u64,
    /// MinHash signature (units only).
    pub signature: Option<Vec<u32>>,
    /// Bottom-k sketch (units only, `--sketch bottom-k`).
    pub bottom: Option<Vec<u64>>,
    /// Its content as verification reads it again (route files only).
    pub text: Option<Vec<u8>>,
    /// Why its content could not be read again (route files only).
    pub text_error: Option<String>,
}

fn path_bytes(p: &std::path::Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes()
}

fn path_of(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

/// The rows as one batch; `text` adds the text column (route files).
pub fn to_batch(rows: &[DocRow], text: bool) -> Result<RecordBatch> {
    let i64s = |f: &dyn Fn(&DocRow) -> i64| {
        let mut b = Int64Builder::with_capacity(rows.len());
        rows.iter().for_each(|r| b.append_value(f(r)));
        arc(b.finish())
    };
    let opt_i64s = |f: &dyn Fn(&DocRow) -> Option<i64>| {
        let mut b = Int64Builder::with_capacity(rows.len());
        rows.iter().for_each(|r| b.append_option(f(r)));
        arc(b.finish())
    };
    let mut paths = BinaryBuilder::new();
    let mut aliases = ListBuilder::new(BinaryBuilder::new());
    let mut ids = StringBuilder::new();
    let mut nanos = Int32Builder::new();
    let (mut sigs, mut bottoms) = (BinaryBuilder::new(), BinaryBuilder::new());
    let mut texts = LargeBinaryBuilder::new();
    let mut text_errors = StringBuilder::new();
    let mut keeps = BinaryBuilder::new();
    for r in rows {
        paths.append_value(path_bytes(&r.file.path));
        for a in &r.file.aliases {
            aliases.values().append_value(path_bytes(a));
        }
        aliases.append(true);
        ids.append_option(r.file.record.as_ref().and_then(|rec| rec.id.as_deref()));
        nanos.append_option(r.file.modified.map(|t| time_parts(t).1));
        sigs.append_option(r.signature.as_deref().map(u32s_le));
        bottoms.append_option(r.bottom.as_deref().map(u64s_le));
        texts.append_option(r.text.as_deref());
        text_errors.append_option(r.text_error.as_deref());
        let keep = r.file.record.as_ref().and_then(|rec| rec.keep.as_deref());
        keeps.append_option(keep.map(FieldValue::to_bytes));
    }
    let record = |r: &DocRow| r.file.record.as_deref().cloned();
    let mut columns = vec![
        ("doc", i64s(&|r| r.doc)),
        ("canon", i64s(&|r| r.canon)),
        ("path", arc(paths.finish())),
        ("aliases", arc(aliases.finish())),
        ("size", i64s(&|r| r.file.size as i64)),
        ("dev", i64s(&|r| r.file.id.0 as i64)),
        ("inode", i64s(&|r| r.file.id.1 as i64)),
        (
            "modified_secs",
            opt_i64s(&|r| r.file.modified.map(|t| time_parts(t).0)),
        ),
        ("modified_nanos", arc(nanos.finish())),
        ("line", opt_i64s(&|r| record(r).map(|x| x.line as i64))),
        ("record_id", arc(ids.finish())),
        (
            "file_size",
            opt_i64s(&|r| record(r).map(|x| x.file_size as i64)),
        ),
        (
            "at_offset",
            opt_i64s(&|r| record(r).and_then(|x| x.at).map(|a| a.0 as i64)),
        ),
        (
            "at_len",
            opt_i64s(&|r| record(r).and_then(|x| x.at).map(|a| a.1 as i64)),
        ),
        ("keep_value", arc(keeps.finish())),
        ("bytes", i64s(&|r| r.bytes as i64)),
        ("hash_hi", i64s(&|r| (r.hash >> 64) as i64)),
        ("hash_lo", i64s(&|r| r.hash as u64 as i64)),
        ("links", i64s(&|r| i64::from(r.links))),
        ("disk", i64s(&|r| r.disk as i64)),
        ("fingerprint", i64s(&|r| r.fingerprint as i64)),
        ("shingles", i64s(&|r| r.shingles as i64)),
        ("signature", arc(sigs.finish())),
        ("bottom", arc(bottoms.finish())),
    ];
    if text {
        columns.push(("text", arc(texts.finish())));
        columns.push(("text_error", arc(text_errors.finish())));
    }
    batch(columns)
}

/// The rows of a batch [`to_batch`] made.
pub fn from_batch(b: &RecordBatch) -> Result<Vec<DocRow>> {
    let i = |name| column::<Int64Array>(b, name);
    let (doc, canon, size, dev, inode) =
        (i("doc")?, i("canon")?, i("size")?, i("dev")?, i("inode")?);
    let (secs, line, file_size) = (i("modified_secs")?, i("line")?, i("file_size")?);
    let (at_offset, at_len, bytes) = (i("at_offset")?, i("at_len")?, i("bytes")?);
    let (hi, lo, fp, shingles) = (
        i("hash_hi")?,
        i("hash_lo")?,
        i("fingerprint")?,
        i("shingles")?,
    );
    let (links, disk) = (i("links")?, i("disk")?);
    let nanos = column::<Int32Array>(b, "modified_nanos")?;
    let paths = column::<BinaryArray>(b, "path")?;
    let aliases = column::<ListArray>(b, "aliases")?;
    let ids = column::<StringArray>(b, "record_id")?;
    let keeps = column::<BinaryArray>(b, "keep_value")?;
    let sigs = column::<BinaryArray>(b, "signature")?;
    let bottoms = column::<BinaryArray>(b, "bottom")?;
    let texts = b
        .column_by_name("text")
        .and_then(|c| c.as_any().downcast_ref::<LargeBinaryArray>());
    let text_errors =
        (b.column_by_name("text_error")).and_then(|c| c.as_any().downcast_ref::<StringArray>());
    let opt = |a: &Int64Array, k: usize| (!a.is_null(k)).then(|| a.value(k));
    let mut out = Vec::with_capacity(b.num_rows());
    for k in 0..b.num_rows() {
        let alias_list = aliases.value(k);
        let alias_bytes = alias_list
            .as_any()
            .downcast_ref::<BinaryArray>()
            .context("column `aliases` is not a list of byte strings")?;
        let record = opt(line, k).map(|l| {
            Box::new(Record {
                line: l as u64,
                id: (!ids.is_null(k)).then(|| ids.value(k).to_string()),
                file_size: opt(file_size, k).unwrap_or(0) as u64,
                at: opt(at_offset, k)
                    .zip(opt(at_len, k))
                    .map(|(o, n)| (o as u64, n as u64)),
                keep: (!keeps.is_null(k))
                    .then(|| FieldValue::from_bytes(keeps.value(k)))
                    .flatten()
                    .map(Box::new),
            })
        });
        let modified = opt(secs, k).and_then(|s| time_from_parts(s, nanos.value(k)));
        out.push(DocRow {
            doc: doc.value(k),
            canon: canon.value(k),
            file: FileEntry {
                path: path_of(paths.value(k)),
                aliases: (0..alias_bytes.len())
                    .map(|j| path_of(alias_bytes.value(j)))
                    .collect(),
                size: size.value(k) as u64,
                id: (dev.value(k) as u64, inode.value(k) as u64),
                modified,
                changed: None,
                dump: false,
                record,
                deferred: false,
            },
            bytes: bytes.value(k) as u64,
            hash: (u128::from(hi.value(k) as u64) << 64) | u128::from(lo.value(k) as u64),
            links: u32::try_from(links.value(k)).unwrap_or(u32::MAX),
            disk: disk.value(k) as u64,
            fingerprint: fp.value(k) as u64,
            shingles: shingles.value(k) as u64,
            signature: (!sigs.is_null(k)).then(|| u32s_from_le(sigs.value(k))),
            bottom: (!bottoms.is_null(k)).then(|| u64s_from_le(bottoms.value(k))),
            text: texts.filter(|t| !t.is_null(k)).map(|t| t.value(k).to_vec()),
            text_error: text_errors
                .filter(|t| !t.is_null(k))
                .map(|t| t.value(k).to_string()),
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rows_round_trip_through_a_batch() {
        use std::os::unix::ffi::OsStrExt;
        let file = FileEntry {
            path: PathBuf::from(std::ffi::OsStr::from_bytes(b"dir/caf\xe9.jsonl")),
            aliases: vec![PathBuf::from("x"), PathBuf::from("y")],
            size: 42,
            id: (u64::MAX, 7),
            modified: Some(UNIX_EPOCH + Duration::new(1_700_000_000, 5)),
            changed: None,
            dump: false,
            record: Some(Box::new(Record {
                line: 3,
                id: Some("doc-3".into()),
                file_size: 1000,
                at: Some((100, 42)),
                keep: Some(Box::new(FieldValue::Text("2026-01-02".into()))),
            })),
            deferred: false,
        };
        let unit = DocRow {
            doc: (2 << 32) | 5,
            canon: (2 << 32) | 5,
            file,
            bytes: 42,
            hash: u128::MAX - 3,
            links: 2,
            disk: 4096,
            fingerprint: u64::MAX,
            shingles: 9,
            signature: Some(vec![1, u32::MAX, 3]),
            bottom: Some(vec![u64::MAX, 2]),
            text: Some(b"text \xff".to_vec()),
            text_error: None,
        };
        let copy = DocRow {
            doc: (2 << 32) | 6,
            file: FileEntry {
                aliases: Vec::new(),
                modified: None,
                changed: None,
                record: None,
                ..unit.file.clone()
            },
            signature: None,
            bottom: None,
            text: None,
            text_error: Some("file changed during the scan".into()),
            ..unit.clone()
        };
        let rows = vec![unit, copy];
        assert_eq!(from_batch(&to_batch(&rows, true).unwrap()).unwrap(), rows);
        let without: Vec<DocRow> = (rows.iter().cloned())
            .map(|r| DocRow {
                text: None,
                text_error: None,
                ..r
            })
            .collect();
        assert_eq!(
            from_batch(&to_batch(&rows, false).unwrap()).unwrap(),
            without
        );
    }
}
