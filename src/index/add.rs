//! The documents of a new segment: a scan's new documents (`--update`, `index build`), their
//! contents read again in batches, checked against the content hashes of the first pass and
//! compressed, with a zstd dictionary inherited from the index or trained on the first batch;
//! after those a writer carries over (an upgrade's).

use anyhow::Result;
use rayon::prelude::*;

use crate::config::Config;
use crate::index::codec::{self, BlobKind, Packer};
use crate::index::dir::IndexDir;
use crate::index::paths::{mtime_ns, path_key};
use crate::index::segment::write::{Plan, SegmentWriter, Written};
use crate::index::store::Entry;
use crate::ingest::corpus::Corpus;
use crate::ingest::worker::{DocResult, DocWorker, Engine, Outcome};
use crate::input::walk::FileEntry;
use crate::messages::InputError;

/// New documents read again together, at most.
const BATCH_DOCS: usize = 1024;
/// Bytes of new documents read again together, at most (one larger document is a batch of
/// its own).
const BATCH_BYTES: u64 = 64 << 20;

/// The scan's new documents, as an update writes them.
pub struct NewDocs<'a> {
    pub cfg: &'a Config,
    pub engine: &'a Engine,
    /// Every document of the scan: indexed ones first.
    pub corpus: &'a Corpus,
    /// For each document, the document holding its content's signature.
    pub canon: &'a [u32],
}

/// A document's blob and its kind, or why its content could not be read again.
type Packed = Result<(BlobKind, Vec<u8>), String>;

impl NewDocs<'_> {
    /// The new documents with text, in document order.
    pub fn ids(&self) -> Vec<u32> {
        (self.corpus.new_ids())
            .filter(|&d| matches!(self.doc(d).outcome, Outcome::Sketched | Outcome::Duplicate))
            .collect()
    }

    fn doc(&self, d: u32) -> &DocResult {
        &self.corpus.docs[d as usize]
    }

    fn file(&self, d: u32) -> &FileEntry {
        &self.corpus.files[d as usize]
    }

    fn entry(&self, d: u32) -> Entry {
        let (f, doc) = (self.file(d), self.doc(d));
        let canon = self.canon[d as usize];
        let (line, id, size) = match &f.record {
            Some(r) => (Some(r.line), r.id.clone(), r.file_size),
            None => (None, None, f.size),
        };
        let signature = if self.cfg.method.is_simhash() {
            Vec::new()
        } else {
            let (lanes, c) = (self.corpus.lanes, canon as usize);
            self.corpus.sigs[c * lanes..(c + 1) * lanes].to_vec()
        };
        Entry {
            path: path_key(&f.path),
            line,
            id,
            size,
            bytes: doc.bytes,
            mtime_ns: mtime_ns(f.modified),
            ctime_ns: mtime_ns(f.changed),
            dev: f.id.0,
            inode: f.id.1,
            content_hash: doc.hash,
            signature,
            simhash: self.doc(canon).fingerprint,
        }
    }

    /// Batches of at most [`BATCH_DOCS`] documents and [`BATCH_BYTES`] bytes.
    fn batches(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut bytes = 0u64;
        for &d in ids {
            let n = self.doc(d).bytes;
            match out.last_mut() {
                Some(b) if b.len() < BATCH_DOCS && bytes + n <= BATCH_BYTES => {
                    b.push(d);
                    bytes += n;
                }
                _ => {
                    out.push(vec![d]);
                    bytes = n;
                }
            }
        }
        out
    }

    /// The contents of `batch`, read again in parallel (each checked against its hash).
    fn contents(&self, batch: &[u32]) -> Vec<(u32, Result<Vec<u8>, String>)> {
        batch
            .par_iter()
            .map_init(
                || DocWorker::new(self.engine),
                |w, &d| (d, w.content(d, self.file(d), self.doc(d).hash)),
            )
            .collect()
    }
}

/// Writes a segment: `carry` adds documents first (an upgrade's), then `new`'s documents
/// `ids`. The dictionary is `inherited`, or trained on the first batch when there is none.
/// New documents that cannot be read again are left out and listed in `failed`.
pub fn write_segment(
    dir: &IndexDir,
    mut plan: Plan,
    inherited: Option<Vec<u8>>,
    new: Option<(&NewDocs, &[u32])>,
    carry: impl FnOnce(&mut SegmentWriter) -> Result<()>,
    failed: &mut Vec<InputError>,
) -> Result<Written> {
    let Some((new, ids)) = new else {
        plan.dicts = inherited.into_iter().collect();
        let mut writer = SegmentWriter::new(dir, plan)?;
        carry(&mut writer)?;
        return writer.finish();
    };
    let start = |dict: Option<Vec<u8>>| {
        plan.dicts = dict.into_iter().collect();
        let mut writer = SegmentWriter::new(dir, plan)?;
        carry(&mut writer)?;
        Ok(writer)
    };
    let add = |w: &mut SegmentWriter, e: &Entry, kind, with_dict: bool, blob: &[u8]| {
        w.add(e, kind, with_dict.then_some(0), blob)
    };
    pack(new, ids, inherited, start, add, failed)?.finish()
}

/// Packs `new`'s documents `ids` as a segment stores them, in order: their contents read again
/// in batches (each checked against its hash) and compressed with the dictionary, `inherited`
/// or trained on the first batch, which `start` receives before the first document. `add`
/// takes each document's entry, its blob's kind, whether the dictionary compressed it, and the
/// blob; a document that cannot be read again is left out and listed in `failed`. A staged run's
/// sign tasks pack their shard's documents so ([`crate::index::shard`]), `scan` its own.
pub fn pack<W>(
    new: &NewDocs,
    ids: &[u32],
    inherited: Option<Vec<u8>>,
    start: impl FnOnce(Option<Vec<u8>>) -> Result<W>,
    mut add: impl FnMut(&mut W, &Entry, BlobKind, bool, &[u8]) -> Result<()>,
    failed: &mut Vec<InputError>,
) -> Result<W> {
    let batches = new.batches(ids);
    let mut first = batches.first().map(|b| new.contents(b));
    let dict = inherited.or_else(|| {
        let samples: Vec<&[u8]> = first
            .iter()
            .flatten()
            .filter_map(|(_, c)| c.as_deref().ok())
            .scan(0usize, |total, c| {
                *total += c.len();
                (*total <= codec::SAMPLE_BYTES).then_some(c)
            })
            .collect();
        codec::train(&samples)
    });
    let cdict = dict.as_deref().map(codec::cdict);
    let mut writer = start(dict)?;
    for (i, batch) in batches.iter().enumerate() {
        let contents = match (i, first.take()) {
            (0, Some(c)) => c,
            _ => new.contents(batch),
        };
        let packed: Vec<(u32, Packed)> = contents
            .into_par_iter()
            .map_init(
                || Packer::new(cdict.as_ref()),
                |p, (d, content)| {
                    let blob = content.and_then(|c| p.pack(&c).map_err(|e| format!("{e:#}")));
                    (d, blob)
                },
            )
            .collect();
        for (d, blob) in packed {
            match blob {
                Ok((kind, bytes)) => {
                    let with_dict = kind == BlobKind::Zstd && cdict.is_some();
                    add(&mut writer, &new.entry(d), kind, with_dict, &bytes)?;
                }
                Err(reason) => {
                    failed.push(new.file(d).error(None, format!("not indexed: {reason}")))
                }
            }
        }
    }
    Ok(writer)
}
