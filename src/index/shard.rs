//! A staged run's new documents on their way into the index (`--update`): each `stage sign`
//! task packs its shard's documents as a segment stores them ([`crate::index::add::pack`]: the
//! contents read again, checked and compressed) into `sign/shard-I.index.parquet` in the work
//! directory, never into the index; `stage report` copies every shard's file, in shard order,
//! into the one new segment it commits ([`crate::index::update::update_staged`]). The blobs
//! are copied as they are (nothing is compressed twice), so the report's part is a copy, and the
//! index is written only under its lock, once the report is ready.
//!
//! A row per document, in the shard's document order: its entry (`path` as the index keys it,
//! `line`, `record_id`, `size`, `bytes`, `mtime_ns` and `ctime_ns` as 16 little-endian bytes
//! of an i128, `dev`, `inode`, `hash_hi`, `hash_lo`, `signature` as little-endian u32s,
//! `fingerprint`), its blob (`kind`: the blob kind's code; `zstd_dict`: compressed with the
//! shard's dictionary; `blob`), and on the first row only, the shard's zstd dictionary
//! (`dictionary`): the index's newest, or one trained on the shard's first documents.

use anyhow::{bail, Context, Result};
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, LargeBinaryBuilder, StringBuilder,
};
use arrow_array::{
    Array, BinaryArray, BooleanArray, Int32Array, Int64Array, LargeBinaryArray, StringArray,
};

use crate::index::add::{pack, NewDocs};
use crate::index::codec::BlobKind;
use crate::index::segment::write::SegmentWriter;
use crate::index::store::Entry;
use crate::messages::display_path;
use crate::stages::against::Packed;
use crate::stages::columns::{arc, batch, column, u32s_from_le, u32s_le};
use crate::stages::files::{self, Input, Output, ParquetOut};

/// Documents per row group: at most what one batch of contents read again holds.
const ROWS: usize = 1024;
/// Bytes of blobs per row group, at most (one larger blob is a row group of its own).
const BYTES: usize = 32 << 20;

/// One packed document.
struct Row {
    entry: Entry,
    kind: BlobKind,
    zstd_dict: bool,
    blob: Vec<u8>,
}

/// The file being written, a row group at a time.
struct Rows {
    out: ParquetOut,
    dict: Option<Vec<u8>>,
    rows: Vec<Row>,
    bytes: usize,
}

impl Rows {
    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let b = to_batch(&self.rows, self.dict.take())?;
        self.out.write(&b)?;
        self.out.end_row_group()?;
        self.rows.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// Packs `new`'s documents into `out`, with `inherited` (the index's newest dictionary) or one
/// trained on the first of them.
pub fn write(new: &NewDocs, inherited: Option<Vec<u8>>, out: &Output) -> Result<Packed> {
    let ids = new.ids();
    let mut failed = Vec::new();
    let schema = to_batch(&[], None)?.schema();
    let start = |dict: Option<Vec<u8>>| -> Result<Rows> {
        Ok(Rows {
            out: ParquetOut::create(out, schema)?,
            dict,
            rows: Vec::new(),
            bytes: 0,
        })
    };
    let add = |r: &mut Rows, e: &Entry, kind, zstd_dict, blob: &[u8]| {
        r.bytes += blob.len();
        r.rows.push(Row {
            entry: e.clone(),
            kind,
            zstd_dict,
            blob: blob.to_vec(),
        });
        if r.rows.len() >= ROWS || r.bytes >= BYTES {
            r.flush()?;
        }
        Ok(())
    };
    let mut rows = pack(new, &ids, inherited, start, add, &mut failed)?;
    rows.flush()?;
    Ok(Packed {
        written: rows.out.commit()?,
        documents: ids.len() as u64,
        failed,
    })
}

/// `rows` as a batch, `dict` on the first.
fn to_batch(rows: &[Row], dict: Option<Vec<u8>>) -> Result<arrow_array::RecordBatch> {
    let n = rows.len();
    let mut path = BinaryBuilder::new();
    let mut record_id = StringBuilder::new();
    let (mut mtime, mut ctime, mut signature) = (
        BinaryBuilder::new(),
        BinaryBuilder::new(),
        BinaryBuilder::new(),
    );
    let mut kind = Int32Builder::with_capacity(n);
    let mut zstd_dict = BooleanBuilder::with_capacity(n);
    let mut blob = LargeBinaryBuilder::new();
    let mut dictionary = BinaryBuilder::new();
    let i64s = |f: &dyn Fn(&Entry) -> i64| {
        let mut b = Int64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_value(f(&r.entry)));
        arc(b.finish())
    };
    let mut line = Int64Builder::with_capacity(n);
    for (i, r) in rows.iter().enumerate() {
        let e = &r.entry;
        path.append_value(&e.path);
        line.append_option(e.line.map(|l| l as i64));
        record_id.append_option(e.id.as_deref());
        mtime.append_value(e.mtime_ns.to_le_bytes());
        ctime.append_value(e.ctime_ns.to_le_bytes());
        signature.append_value(u32s_le(&e.signature));
        kind.append_value(i32::from(r.kind.code()));
        zstd_dict.append_value(r.zstd_dict);
        blob.append_value(&r.blob);
        dictionary.append_option(dict.as_deref().filter(|_| i == 0));
    }
    batch(vec![
        ("path", arc(path.finish())),
        ("line", arc(line.finish())),
        ("record_id", arc(record_id.finish())),
        ("size", i64s(&|e| e.size as i64)),
        ("bytes", i64s(&|e| e.bytes as i64)),
        ("mtime_ns", arc(mtime.finish())),
        ("ctime_ns", arc(ctime.finish())),
        ("dev", i64s(&|e| e.dev as i64)),
        ("inode", i64s(&|e| e.inode as i64)),
        ("hash_hi", i64s(&|e| (e.content_hash >> 64) as u64 as i64)),
        ("hash_lo", i64s(&|e| e.content_hash as u64 as i64)),
        ("signature", arc(signature.finish())),
        ("fingerprint", i64s(&|e| e.simhash as i64)),
        ("kind", arc(kind.finish())),
        ("zstd_dict", arc(zstd_dict.finish())),
        ("blob", arc(blob.finish())),
        ("dictionary", arc(dictionary.finish())),
    ])
}

/// Adds the documents of a shard's file `input` to `writer`, in order, with the shard's
/// dictionary; returns how many.
pub fn copy_into(input: &Input<'_>, writer: &mut SegmentWriter) -> Result<u64> {
    let what = "its shard was not signed completely: run its `stage sign` again";
    let damaged = || format!("{} is damaged", display_path(input.path()));
    let mut dict: Option<u16> = None;
    let mut count = 0u64;
    for b in files::read_parquet(input, what)? {
        let b = b?;
        let path = column::<BinaryArray>(&b, "path").with_context(damaged)?;
        let line = column::<Int64Array>(&b, "line").with_context(damaged)?;
        let record_id = column::<StringArray>(&b, "record_id").with_context(damaged)?;
        let i64s = |name: &str| column::<Int64Array>(&b, name).with_context(damaged);
        let (size, bytes, dev, inode) =
            (i64s("size")?, i64s("bytes")?, i64s("dev")?, i64s("inode")?);
        let (hash_hi, hash_lo, fingerprint) =
            (i64s("hash_hi")?, i64s("hash_lo")?, i64s("fingerprint")?);
        let mtime = column::<BinaryArray>(&b, "mtime_ns").with_context(damaged)?;
        let ctime = column::<BinaryArray>(&b, "ctime_ns").with_context(damaged)?;
        let signature = column::<BinaryArray>(&b, "signature").with_context(damaged)?;
        let kind = column::<Int32Array>(&b, "kind").with_context(damaged)?;
        let zstd_dict = column::<BooleanArray>(&b, "zstd_dict").with_context(damaged)?;
        let blob = column::<LargeBinaryArray>(&b, "blob").with_context(damaged)?;
        let dictionary = column::<BinaryArray>(&b, "dictionary").with_context(damaged)?;
        let time = |a: &BinaryArray, k: usize| -> Result<i128> {
            let v: [u8; 16] = a.value(k).try_into().ok().with_context(damaged)?;
            Ok(i128::from_le_bytes(v))
        };
        for k in 0..b.num_rows() {
            if count == 0 && !dictionary.is_null(k) {
                dict = Some(writer.add_dict(dictionary.value(k).to_vec())?);
            }
            let entry = Entry {
                path: path.value(k).to_vec(),
                line: (!line.is_null(k)).then(|| line.value(k) as u64),
                id: (!record_id.is_null(k)).then(|| record_id.value(k).to_string()),
                size: size.value(k) as u64,
                bytes: bytes.value(k) as u64,
                mtime_ns: time(mtime, k)?,
                ctime_ns: time(ctime, k)?,
                dev: dev.value(k) as u64,
                inode: inode.value(k) as u64,
                content_hash: (u128::from(hash_hi.value(k) as u64) << 64)
                    | u128::from(hash_lo.value(k) as u64),
                signature: u32s_from_le(signature.value(k)),
                simhash: fingerprint.value(k) as u64,
            };
            let Some(kind) = u8::try_from(kind.value(k))
                .ok()
                .and_then(BlobKind::from_code)
            else {
                bail!("{}", damaged());
            };
            let with = match (zstd_dict.value(k), dict) {
                (false, _) => None,
                (true, Some(d)) => Some(d),
                (true, None) => bail!("{}: a blob names no dictionary", damaged()),
            };
            writer.add(&entry, kind, with, blob.value(k))?;
            count += 1;
        }
    }
    Ok(count)
}
