//! `stage sign --shard I/N`: reads, hashes, shingles and sketches the shard's inputs with
//! `scan`'s first pass, then writes its documents (`sign/shard-I.docs.parquet`), its keys for
//! each group partition (`sign/shard-I.keys-J.parquet`) and its counts (`sign/shard-I.json`,
//! last: the shard is complete when it exists).
//!
//! Keys: every document with text gives one row in the content table (table −1: the high half
//! of its content hash, the low half beside it), so byte-identical documents meet in one bucket
//! whatever shard they are in. The first document of each content in the shard (its *unit*
//! there) gives one row per band (MinHash) or piece (SimHash); a later copy would only repeat
//! them. Each row goes to the partition its key hashes to.

use std::path::{Path, PathBuf};

use anyhow::Result;
use arrow_array::builder::Int32Builder;
use arrow_array::builder::Int64Builder;
use arrow_array::RecordBatch;

use crate::candidates::identical;
use crate::candidates::keys::Keying;
use crate::config::Config;
use crate::ingest;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::Outcome;
use crate::sketch::minhash::mix64;

use super::against::{IndexSide, IndexedRef};
use super::columns::{arc, batch, key_to_i64};
use super::docs::{self, DocRow};
use super::files::{self, Input, Output};
use super::init::read_inputs;
use super::lineage::{Lineage, Place, Written};
use super::plan::Plan;
use super::summary::{ErrorRec, SignSummary};

/// The content table's number in the key files.
pub const CONTENT_TABLE: i32 = -1;

/// Documents per batch of the document file.
const BATCH: usize = 16 * 1024;

/// A shard's file names.
pub fn docs_path(work: &Path, shard: u32) -> PathBuf {
    work.join("sign")
        .join(format!("shard-{shard:06}.docs.parquet"))
}

/// The keys shard `shard` gave partition `part`.
/// Shard `shard`'s document file, written by the sign attempt `sign`, as a stage reads it.
pub fn docs_input<'a>(work: &Path, shard: u32, sign: &'a Lineage) -> Input<'a> {
    Input::new(
        work,
        docs_path(work, shard),
        sign,
        Place::shard("sign", shard),
    )
}

pub fn keys_path(work: &Path, shard: u32, part: u32) -> PathBuf {
    work.join("sign")
        .join(format!("shard-{shard:06}.keys-{part:06}.parquet"))
}

/// With `--update`: the shard's documents packed as the index will hold them
/// (`index::shard`), for `stage report` to commit.
pub fn packed_path(work: &Path, shard: u32) -> PathBuf {
    work.join("sign")
        .join(format!("shard-{shard:06}.index.parquet"))
}

/// With `--against`: the indexed documents the shard's documents met (`seg`, `row`).
pub fn met_path(work: &Path, shard: u32) -> PathBuf {
    work.join("sign")
        .join(format!("shard-{shard:06}.indexed.parquet"))
}

fn write_met(out: &Output, met: &[IndexedRef]) -> Result<Written> {
    let (mut seg, mut row) = (Int64Builder::new(), Int64Builder::new());
    for &(s, r) in met {
        seg.append_value(i64::from(s));
        row.append_value(i64::from(r));
    }
    let b = batch(vec![("seg", arc(seg.finish())), ("row", arc(row.finish()))])?;
    files::write_parquet(out, b.schema(), &[b])
}

/// The shard's summary, written last.
pub fn summary_path(work: &Path, shard: u32) -> PathBuf {
    work.join("sign").join(format!("shard-{shard:06}.json"))
}

/// The group partition of a key of `table`: its hash, so partitions get keys evenly.
pub fn partition(table: i32, key: u64, parts: u32) -> u32 {
    (mix64(key ^ (u64::from(table as u32) << 32)) % u64::from(parts)) as u32
}

/// Signs shard `shard`.
pub fn sign(work: &Path, plan: &Plan, shard: u32, index: &dyn IndexSide) -> Result<()> {
    let cfg = plan.config()?;
    let (start, end) = plan.shard(shard)?;
    let place = Place::shard("sign", shard);
    let mut lineage = Lineage::attempt(&plan.run, &plan.digest, place);
    let inputs = read_inputs(work, plan, &mut lineage, start, end)?;
    let engine = ingest::engine(&cfg, None);
    let signed = ingest::sign(&cfg, inputs, &engine, false)?;
    let mut corpus = signed.corpus;
    // With --against: the indexed documents this shard's documents meet, looked up as scan
    // looks them up, before the shard's copies are grouped (as scan's are, after it).
    if let Some(pin) = &plan.against {
        let met = index.met(&cfg, pin, &corpus)?;
        let out = Output::new(work, met_path(work, shard), &lineage, place);
        lineage.wrote(write_met(&out, &met)?);
    }
    let outcomes = corpus.outcomes(cfg.walk.max_size, &cfg.messages);
    let found = identical::group(&mut corpus);
    let id_shard = plan.id_shard(shard);
    let id = |d: usize| (id_shard << 32) | d as i64;
    let texts: Vec<usize> = (0..corpus.len())
        .filter(|&d| {
            matches!(
                corpus.docs[d].outcome,
                Outcome::Sketched | Outcome::Duplicate
            )
        })
        .collect();
    let minhash = !cfg.method.is_simhash();
    let out = Output::new(work, docs_path(work, shard), &lineage, place);
    lineage.wrote(write_docs(
        &out,
        &corpus,
        &found.canon,
        &texts,
        minhash,
        id,
    )?);
    let keys = KeysOf {
        corpus: &corpus,
        canon: &found.canon,
        texts: &texts,
    };
    let dest = |part| {
        let place = Place::shard("sign", shard).with_part(part);
        (keys_path(work, shard, part), place)
    };
    for written in write_keys(work, plan, &cfg, &lineage, &keys, id, dest)? {
        lineage.wrote(written);
    }
    // With --update: the documents read again and packed for the index now, in the shard,
    // where `scan --update` packs them after its report is made; `stage report` copies them in.
    let (mut to_index, mut not_indexed) = (None, Vec::new());
    if let Some(pin) = plan.against.as_ref().filter(|a| a.update) {
        ingest::keep_record_texts(&cfg, &engine, &corpus, Vec::new)?;
        let out = Output::new(work, packed_path(work, shard), &lineage, place);
        let packed = index.pack(&cfg, pin, &engine, (&corpus, &found.canon), &out)?;
        lineage.wrote(packed.written);
        to_index = Some(packed.documents);
        not_indexed = packed.failed.iter().map(ErrorRec::from).collect();
    }
    let mut errors: Vec<ErrorRec> = signed.summary.errors.iter().map(ErrorRec::from).collect();
    errors.extend(outcomes.errors.iter().map(ErrorRec::from));
    let summary = SignSummary {
        lineage,
        shard,
        documents: found.documents,
        bytes: found.bytes,
        empty: found.empty,
        binary: outcomes.binary,
        not_regular: outcomes.not_regular,
        too_short: outcomes.too_short,
        too_large: outcomes.too_large,
        bad_lines: signed.summary.bad_lines,
        empty_dumps: signed.summary.empty_dumps,
        kmv_k: signed.summary.distinct.k(),
        kmv: signed.summary.distinct.kept().into_owned(),
        errors,
        keep_seen: signed.summary.keep_seen,
        to_index,
        not_indexed,
    };
    files::write_json(&summary_path(work, shard), &summary)
}

/// The document file: every document with text, its sketches on its shard's unit only
/// (`minhash`: with a signature).
pub(super) fn write_docs(
    out: &Output,
    corpus: &Corpus,
    canon: &[u32],
    texts: &[usize],
    minhash: bool,
    id: impl Fn(usize) -> i64,
) -> Result<Written> {
    let lanes = corpus.lanes;
    let row = |d: usize| {
        let c = canon[d] as usize;
        let (doc, unit) = (&corpus.docs[d], &corpus.docs[c]);
        let signature =
            (c == d && minhash).then(|| corpus.sigs[d * lanes..(d + 1) * lanes].to_vec());
        DocRow {
            doc: id(d),
            canon: id(c),
            file: corpus.files[d].clone(),
            bytes: doc.bytes,
            hash: doc.hash,
            links: doc.links,
            disk: doc.disk,
            fingerprint: unit.fingerprint,
            shingles: unit.shingles,
            signature,
            bottom: (c == d && corpus.bottom.is_on()).then(|| corpus.bottom.get(d as u32).to_vec()),
            text: None,
            text_error: None,
        }
    };
    let empty = docs::to_batch(&[], false)?;
    let mut w = files::ParquetOut::create(out, empty.schema())?;
    for chunk in texts.chunks(BATCH) {
        let rows: Vec<DocRow> = chunk.iter().map(|&d| row(d)).collect();
        w.write(&docs::to_batch(&rows, false)?)?;
    }
    w.commit()
}

/// The documents whose keys a shard writes.
pub(super) struct KeysOf<'a> {
    pub corpus: &'a Corpus,
    pub canon: &'a [u32],
    pub texts: &'a [usize],
}

/// One row of a key file.
struct KeyRow {
    table: i32,
    key: u64,
    doc: i64,
    aux: i64,
}

/// The key files, one per group partition (empty ones too, so a partition can tell a shard with
/// nothing for it from one not signed).
/// `dest` names each partition's file and its place.
pub(super) fn write_keys(
    work: &Path,
    plan: &Plan,
    cfg: &Config,
    lineage: &Lineage,
    keys: &KeysOf<'_>,
    id: impl Fn(usize) -> i64,
    dest: impl Fn(u32) -> (PathBuf, Place),
) -> Result<Vec<Written>> {
    let KeysOf {
        corpus,
        canon,
        texts,
    } = *keys;
    let parts = plan.parts;
    let mut rows: Vec<Vec<KeyRow>> = (0..parts).map(|_| Vec::new()).collect();
    let mut push = |table: i32, key: u64, doc: i64, aux: i64| {
        rows[partition(table, key, parts) as usize].push(KeyRow {
            table,
            key,
            doc,
            aux,
        });
    };
    let lanes = corpus.lanes;
    let keying = Keying::of(&cfg.method);
    for &d in texts {
        let hash = corpus.docs[d].hash;
        push(
            CONTENT_TABLE,
            (hash >> 64) as u64,
            id(d),
            hash as u64 as i64,
        );
        if canon[d] as usize != d {
            continue;
        }
        let (sig, fp) = (
            &corpus.sigs[d * lanes..(d + 1) * lanes],
            corpus.docs[d].fingerprint,
        );
        for t in 0..keying.tables() {
            push(t as i32, keying.key(t, sig, fp), id(d), 0);
        }
    }
    let mut written = Vec::with_capacity(rows.len());
    for (part, rows) in rows.into_iter().enumerate() {
        let b = key_batch(&rows)?;
        let (path, place) = dest(part as u32);
        let out = Output::new(work, path, lineage, place);
        written.push(files::write_parquet(&out, b.schema(), &[b])?);
    }
    Ok(written)
}

fn key_batch(rows: &[KeyRow]) -> Result<RecordBatch> {
    let mut table = Int32Builder::with_capacity(rows.len());
    let (mut key, mut doc, mut aux) = (
        Int64Builder::with_capacity(rows.len()),
        Int64Builder::with_capacity(rows.len()),
        Int64Builder::with_capacity(rows.len()),
    );
    for r in rows {
        table.append_value(r.table);
        key.append_value(key_to_i64(r.key));
        doc.append_value(r.doc);
        aux.append_value(r.aux);
    }
    batch(vec![
        ("table", arc(table.finish())),
        ("key", arc(key.finish())),
        ("doc", arc(doc.finish())),
        ("aux", arc(aux.finish())),
    ])
}
