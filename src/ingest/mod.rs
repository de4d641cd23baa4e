//! Ingest: the walked inputs → documents with their signatures, in parallel.
//!
//! A plain file is one document. A JSON Lines dump is many: it is streamed (decompressed on the
//! fly when it is gzip or zstd) and cut into lines by one thread, and the workers parse and
//! sketch its records a batch at a time, so a dump of any size passes through a bounded amount
//! of memory. Documents are numbered in input order, a dump's records in line order at the
//! dump's place, so the numbering (and the report) does not depend on threads. A bad line (invalid JSON, no text field, text not a string, too long)
//! is an input error naming the dump and the line; the records around it are kept.

pub mod corpus;
pub mod set_cache;
pub mod worker;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::candidates::identical::Identical;
use crate::candidates::Candidates;
use crate::config::{Config, MethodConfig, Verify};
use crate::index::against::IndexedSets;
use crate::ingest::set_cache::SetCache;
use crate::ingest::worker::Sketcher;
use crate::ingest::worker::{Claims, DocResult, DocWorker, Engine, Outcome};
use crate::input::dump::{open_stream, Compression, JsonlOptions, JsonlReader, Line, RawLine};
use crate::input::read::SizeLimits;
use crate::input::spill::InDumps;
use crate::input::walk::{FileEntry, Record};
use crate::messages::{display_path, InputError, Messages};
use crate::sketch::bottomk::Sketches;
use crate::sketch::kmv::{Kmv, DEFAULT_KMV_K};
use crate::sketch::minhash::MinHasher;
use corpus::Corpus;

/// The per-document work of a scan under `cfg`. With an index, `indexed` holds the indexed
/// documents' stored sets.
pub fn engine(cfg: &Config, indexed: Option<std::sync::Arc<IndexedSets>>) -> Engine {
    let sketcher = match &cfg.method {
        MethodConfig::MinHash {
            sketch, num_perm, ..
        } => Sketcher::MinHash {
            hasher: MinHasher::new(*sketch, *num_perm, cfg.seed),
        },
        MethodConfig::SimHash { .. } => Sketcher::SimHash { seed: cfg.seed },
    };
    Engine {
        shingle: cfg.shingle,
        ngram: cfg.ngram,
        limits: SizeLimits {
            min: cfg.walk.min_size,
            max: cfg.walk.max_size,
        },
        sizes: cfg.containment(),
        sketcher,
        spill: Default::default(),
        indexed,
    }
}

/// What signing produced besides the documents.
pub struct SignSummary {
    /// The corpus's distinct shingles, estimated.
    pub distinct: Kmv,
    /// Dump lines that held no document, and dumps that could not be read to the end.
    pub errors: Vec<InputError>,
    /// Number of bad lines.
    pub bad_lines: u64,
    /// Dumps that held no record at all.
    pub empty_dumps: u64,
}

/// The first pass's result.
pub struct Signed {
    /// The documents read now, with their signatures.
    pub corpus: Corpus,
    /// Counts and errors.
    pub summary: SignSummary,
}

/// Signs `files`: reads, hashes, shingles and sketches every document in parallel (a dump's
/// records a batch at a time).
pub fn sign(cfg: &Config, files: Vec<FileEntry>, engine: &Engine) -> Signed {
    // Only exact MinHash verification needs shingle sets again. A dump's documents are not
    // counted until it is read, so its share of the cache's bitmap is estimated from its size.
    let cache = match &cfg.method {
        MethodConfig::MinHash {
            banding,
            verify: Verify::Exact,
            ..
        } => {
            let documents: u64 = files
                .iter()
                .map(|f| if f.dump { f.size / 1024 + 1 } else { 1 })
                .sum();
            Some(SetCache::new(documents as usize, *banding))
        }
        _ => None,
    };
    let bottom_k = match &cfg.method {
        MethodConfig::MinHash {
            bottom_k: true,
            num_perm,
            ..
        } => Some((*num_perm, cfg.seed)),
        _ => None,
    };
    let lanes = cfg.lanes();
    let ingested = Ingest {
        engine,
        lanes,
        bottom_k,
        jsonl: &cfg.jsonl,
        cache: cache.as_ref(),
        msgs: &cfg.messages,
    }
    .run(files);
    Signed {
        corpus: Corpus {
            files: ingested.entries,
            docs: ingested.docs,
            sigs: ingested.sigs,
            lanes,
            bottom: ingested.bottom,
            first_new: 0,
        },
        summary: SignSummary {
            distinct: ingested.distinct,
            errors: ingested.errors,
            bad_lines: ingested.bad_lines,
            empty_dumps: ingested.empty_dumps,
        },
    }
}

/// Makes the texts of the new dump records that the rest of the scan reads again available
/// ([`spill_records`]): those of candidates and byte-identical groups when verification or
/// `--pairs` needs texts, every new record when an index is updated.
pub fn keep_record_texts(
    cfg: &Config,
    engine: &Engine,
    corpus: &Corpus,
    candidates: &Candidates,
    identical: &Identical,
) -> anyhow::Result<()> {
    let (files, first_new) = (&corpus.files, corpus.first_new);
    let updating = cfg.against.as_ref().is_some_and(|a| a.update);
    let new_records = || (first_new as usize..files.len()).filter(|&d| files[d].record.is_some());
    // Exact and edit verification and `--pairs` evidence read texts again.
    let needs_texts = cfg.pairs || matches!(cfg.verify(), Some(Verify::Exact | Verify::Edit));
    if new_records().next().is_none() || !(needs_texts || updating) {
        return Ok(());
    }
    let mut wanted: Vec<u32> = if updating {
        // Every new record goes into the index with its set.
        new_records().map(|d| d as u32).collect()
    } else {
        let mut w: Vec<u32> = (candidates.tables.iter())
            .flat_map(|t| t.docs().iter().copied())
            .collect();
        w.extend(identical.pairs.iter().map(|p| p.lo));
        w
    };
    wanted.retain(|&d| d >= first_new);
    wanted.sort_unstable();
    wanted.dedup();
    if let Err(e) = spill_records(engine, files, &wanted, &cfg.jsonl) {
        anyhow::bail!(
            "cannot store the texts of dump records for verification in a temporary file: {}",
            crate::messages::io_reason(&e)
        );
    }
    Ok(())
}

/// Records sketched together: enough to keep every thread busy, few enough that the texts of
/// one batch stay small. A batch ends at this many records or [`BATCH_BYTES`] of lines,
/// whichever comes first, so its memory does not grow with the documents' length.
const BATCH_RECORDS: usize = 4096;
/// Bytes of one batch's lines (their JSON, about the size of the text), at most (plus one
/// record).
const BATCH_BYTES: usize = 8 << 20;
/// Plain files sketched together (their results are held until the chunk ends).
const FILE_CHUNK: usize = 1 << 16;
/// Bad lines of one dump warned about on stderr; the report lists them all.
const WARN_BAD_LINES: u64 = 10;

/// What the first pass produced.
pub struct Ingested {
    /// One entry per document, by document id (a dump's records carry their line and id).
    pub entries: Vec<FileEntry>,
    /// The per-document results, by document id.
    pub docs: Vec<DocResult>,
    /// Signatures, `lanes` values per document.
    pub sigs: Vec<u32>,
    /// `--sketch bottom-k`: each document's sketch (empty when off).
    pub bottom: Sketches,
    /// The corpus's distinct shingles, estimated.
    pub distinct: Kmv,
    /// Dump lines that held no document, and dumps that could not be read to the end.
    pub errors: Vec<InputError>,
    /// Number of bad lines.
    pub bad_lines: u64,
    /// Dumps that held no record at all.
    pub empty_dumps: u64,
}

/// How the first pass runs.
pub struct Ingest<'a> {
    /// The per-document work.
    pub engine: &'a Engine,
    /// Signature values per document.
    pub lanes: usize,
    /// `--sketch bottom-k`: k and the seed, to sketch each document beside its signature.
    pub bottom_k: Option<(usize, u64)>,
    /// Where a record's text and id are.
    pub jsonl: &'a JsonlOptions,
    /// Whose shingles to keep (exact MinHash verification), sized for `documents`.
    pub cache: Option<&'a SetCache>,
    /// Diagnostics.
    pub msgs: &'a Messages,
}

impl Ingest<'_> {
    /// Sketches every input: plain files in parallel, dumps record by record. The walk's
    /// entries become [`Ingested::entries`]: updated in place when there is no dump, moved
    /// otherwise (at a million files, cloning them kept two copies of every path until the end
    /// of the pass, and moving them still kept two vectors of entries).
    pub fn run(&self, mut files: Vec<FileEntry>) -> Ingested {
        let distinct = Mutex::new(Kmv::new(DEFAULT_KMV_K));
        let workers = Workers::new(self.engine, &distinct);
        let claims = Claims::default();
        let mut out = Ingested {
            entries: Vec::new(),
            docs: Vec::with_capacity(files.len()),
            // Reserved for every file at once: growing it chunk by chunk moved it each time
            // (only the pages written are resident; a dump's records extend it further).
            sigs: with_huge_pages(Vec::with_capacity(files.len() * self.lanes)),
            bottom: Sketches::default(),
            distinct: Kmv::new(DEFAULT_KMV_K),
            errors: Vec::new(),
            bad_lines: 0,
            empty_dumps: 0,
        };
        let bar = self.msgs.progress_bar(files.len() as u64, "reading");
        let mut bottom = Vec::new();
        // Documents whose file has other names, found when read.
        let mut linked = Vec::new();
        let mut plain = |run: &mut [FileEntry], out: &mut Ingested, bottom: &mut Vec<u64>| {
            let docs = self.sketch_each(run, &workers, &mut out.sigs, bottom, |w, i, file, sig| {
                w.read_ahead((run.as_ptr() as usize, i, run.len()), |j| {
                    Some(&run[j].path)
                });
                let r = w.process(file, sig, &claims, self.cache);
                bar.inc(1);
                (r, w.take_meta())
            });
            for ((entry, (doc, meta)), d) in run.iter_mut().zip(docs).zip(out.docs.len()..) {
                if let Some(m) = meta.filter(|_| entry.deferred) {
                    entry.size = m.size;
                    entry.id = m.id;
                    entry.modified = m.modified;
                    entry.deferred = false;
                    if m.linked {
                        linked.push(d);
                    }
                }
                out.docs.push(doc);
            }
        };
        // A chunk at a time: a chunk's results wait beside the growing per-document vectors
        // until they are appended, and for a whole run of a million files they were 130 MB at
        // the peak.
        if !files.iter().any(|f| f.dump) {
            for run in files.chunks_mut(FILE_CHUNK) {
                plain(run, &mut out, &mut bottom);
            }
            out.entries = files;
        } else {
            out.entries.reserve(files.len());
            let mut pending = files.into_iter().peekable();
            while pending.peek().is_some() {
                if let Some(dump) = pending.next_if(|f| f.dump) {
                    self.dump(&dump, &claims, &workers, &mut out, &mut bottom);
                    bar.inc(1);
                    continue;
                }
                let mut run: Vec<FileEntry> = std::iter::from_fn(|| pending.next_if(|f| !f.dump))
                    .take(FILE_CHUNK)
                    .collect();
                plain(&mut run, &mut out, &mut bottom);
                out.entries.append(&mut run);
            }
        }
        bar.finish_and_clear();
        merge_links(&mut out, &mut bottom, &linked, self.lanes, self.slot_len());
        // The workers' distinct-shingle sketches are merged as they are dropped.
        drop(workers);
        out.distinct = distinct.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some((k, _)) = self.bottom_k {
            out.bottom = Sketches::from_slots(k, bottom);
        }
        out
    }

    /// Sketches `items` in parallel with `process`, appending their signatures to `sigs` and,
    /// with bottom-k, their sketches to `bottom`; the results (and whatever else `process`
    /// returns with them) come back in order. The one loop behind plain files and dump records.
    fn sketch_each<T: Sync, M: Send>(
        &self,
        items: &[T],
        workers: &Workers,
        sigs: &mut Vec<u32>,
        bottom: &mut Vec<u64>,
        process: impl Fn(&mut DocWorker, usize, &T, &mut [u32]) -> (DocResult, M) + Sync,
    ) -> Vec<(DocResult, M)> {
        let first = sigs.len();
        // Zeroed in parallel: the pages are first touched here.
        sigs.par_extend(rayon::iter::repeat_n(0, items.len() * self.lanes));
        let mut slots = self.bottom_slots(bottom, items.len());
        items
            .par_iter()
            .enumerate()
            .zip(sigs[first..].par_chunks_mut(self.lanes))
            .zip(slots.par_chunks_mut(self.slot_len()))
            .map_init(
                || workers.lease(),
                |lease, (((i, item), sig), slot)| {
                    let (w, scratch) = lease.get();
                    let r = process(w, i, item, sig);
                    self.sketch_bottom(w, &r.0, slot, scratch);
                    r
                },
            )
            .collect()
    }

    /// Values per document in the bottom-k slots (1 when bottom-k is off, so that chunks of
    /// an empty slice still line up with the documents).
    fn slot_len(&self) -> usize {
        self.bottom_k.map_or(1, |(k, _)| k + 1)
    }

    /// Room for `n` more documents' bottom-k sketches: a tail of `slots`, or scratch space of
    /// one value per document when bottom-k is off.
    fn bottom_slots<'s>(&self, slots: &'s mut Vec<u64>, n: usize) -> BottomSlots<'s> {
        match self.bottom_k {
            Some(_) => {
                let first = slots.len();
                slots.resize(first + n * self.slot_len(), 0);
                BottomSlots::Kept(&mut slots[first..])
            }
            None => BottomSlots::Unused(vec![0; n]),
        }
    }

    fn sketch_bottom(&self, w: &DocWorker, r: &DocResult, slot: &mut [u64], s: &mut Scratch) {
        if let Some((k, seed)) = self.bottom_k {
            if r.outcome == Outcome::Sketched {
                crate::sketch::bottomk::sketch_into(
                    w.shingles(),
                    k,
                    seed,
                    &mut s.sketch,
                    &mut s.scratch,
                );
                Sketches::fill(slot, &s.sketch);
            }
        }
    }

    /// Streams one dump, sketching its records a batch at a time.
    fn dump(
        &self,
        file: &FileEntry,
        claims: &Claims,
        workers: &Workers,
        out: &mut Ingested,
        bottom: &mut Vec<u64>,
    ) {
        let (reader, plain) = match open_dump(file, self.jsonl) {
            Ok(r) => r,
            Err(reason) => {
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(None, reason));
                return;
            }
        };
        let mut bad = 0u64;
        let errors_before = out.errors.len();
        let documents_before = out.entries.len();
        let mut batch: Vec<Pending> = Vec::new();
        // One thread reads, decompresses and cuts the dump into lines while the workers parse
        // and sketch the batch before: at most three batches are alive (being read, waiting,
        // being parsed and sketched).
        let opts = reader.options().clone();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<RawLine>>(1);
        std::thread::scope(|scope| {
            scope.spawn(move || read_batches(reader, tx));
            for raw in rx {
                // The reader only cuts lines; the workers parse them, results kept in line order.
                let lines: Vec<Line> = raw.into_par_iter().map(|r| r.parse(&opts)).collect();
                for line in lines {
                    self.take_line(file, line, plain, &mut batch, &mut bad, out);
                }
                self.sketch_records(file, &mut batch, claims, workers, out, bottom);
            }
        });
        if bad > WARN_BAD_LINES {
            self.msgs.warn(&format!(
                "{}: {} more bad lines (listed in the report's errors)",
                display_path(&file.path),
                bad - WARN_BAD_LINES
            ));
        }
        out.bad_lines += bad;
        // A dump without a single record (and no bad line) is an empty input, like an empty file.
        if out.entries.len() == documents_before && out.errors.len() == errors_before {
            out.empty_dumps += 1;
        }
    }

    /// Adds a document line to `batch`; reports any other.
    fn take_line(
        &self,
        file: &FileEntry,
        line: Line,
        plain: bool,
        batch: &mut Vec<Pending>,
        bad: &mut u64,
        out: &mut Ingested,
    ) {
        match line {
            Line::Doc { line, id, text, at } => batch.push(Pending {
                line,
                id,
                text,
                at: plain.then_some(at),
            }),
            Line::Bad { line, reason } => {
                *bad += 1;
                if *bad <= WARN_BAD_LINES {
                    self.msgs
                        .warn(&format!("{}:{line}: {reason}", display_path(&file.path)));
                }
                out.errors.push(file.error(Some(line), reason.to_string()));
            }
            Line::Failed { line, error } => {
                let before = match line {
                    0 => "no line before it was complete".to_string(),
                    1 => "line 1 before it was read".to_string(),
                    n => format!("lines 1-{n} before it were read"),
                };
                let reason = format!("{} ({before})", crate::messages::io_reason(&error));
                self.msgs
                    .warn(&format!("{}: {reason}", display_path(&file.path)));
                out.errors.push(file.error(Some(line + 1), reason));
            }
        }
    }

    fn sketch_records(
        &self,
        file: &FileEntry,
        batch: &mut Vec<Pending>,
        claims: &Claims,
        workers: &Workers,
        out: &mut Ingested,
        bottom: &mut Vec<u64>,
    ) {
        let docs = self.sketch_each(batch, workers, &mut out.sigs, bottom, |w, _, p, sig| {
            (w.process_text(&p.text, sig, claims, self.cache), ())
        });
        for (Pending { line, id, text, at }, (doc, ())) in batch.drain(..).zip(docs) {
            out.entries.push(FileEntry {
                path: file.path.clone(),
                aliases: Vec::new(),
                size: text.len() as u64,
                id: file.id,
                modified: file.modified,
                dump: false,
                record: Some(Box::new(Record {
                    line,
                    id,
                    file_size: file.size,
                    at,
                })),
                deferred: false,
            });
            out.docs.push(doc);
        }
    }
}

/// Makes the later names of each inode among `linked` (documents whose file has several
/// names, found when read because the walk did not stat them) aliases of its first name in walk
/// order, as the walk does when it stats. Both names were read, and the worker that claimed
/// their content first sketched it: when that was a later name, its result, signature and
/// bottom-k sketch (`slot` values each) pass to the first.
fn merge_links(
    out: &mut Ingested,
    bottom: &mut Vec<u64>,
    linked: &[usize],
    lanes: usize,
    slot: usize,
) {
    if linked.is_empty() {
        return;
    }
    let mut first: HashMap<(u64, u64), usize> = HashMap::new();
    let mut gone = vec![false; out.entries.len()];
    for &d in linked {
        let Some(&f) = first.get(&out.entries[d].id) else {
            first.insert(out.entries[d].id, d);
            continue;
        };
        gone[d] = true;
        let path = std::mem::take(&mut out.entries[d].path);
        out.entries[f].aliases.push(path);
        let sketched = |o: &Outcome| *o == Outcome::Sketched;
        if sketched(&out.docs[d].outcome) && !sketched(&out.docs[f].outcome) {
            out.docs.swap(f, d);
            out.sigs.copy_within(d * lanes..(d + 1) * lanes, f * lanes);
            if !bottom.is_empty() {
                bottom.copy_within(d * slot..(d + 1) * slot, f * slot);
            }
        }
    }
    let mut kept = gone.iter().map(|g| !g);
    out.entries.retain(|_| kept.next().unwrap_or(true));
    let mut kept = gone.iter().map(|g| !g);
    out.docs.retain(|_| kept.next().unwrap_or(true));
    compact_rows(&mut out.sigs, lanes, &gone);
    compact_rows(bottom, slot, &gone);
}

/// Drops the `width`-value rows of `values` (one per document, or none at all) marked `gone`,
/// keeping the others in order.
fn compact_rows<T: Copy>(values: &mut Vec<T>, width: usize, gone: &[bool]) {
    if values.is_empty() {
        return;
    }
    let mut to = 0;
    for (row, _) in gone.iter().enumerate().filter(|(_, g)| !**g) {
        values.copy_within(row * width..(row + 1) * width, to * width);
        to += 1;
    }
    values.truncate(to * width);
}

/// A dump record waiting in a batch to be sketched.
struct Pending {
    line: u64,
    id: Option<String>,
    text: String,
    /// Where its JSON lies in the dump file, when the dump is not compressed.
    at: Option<(u64, u64)>,
}

/// One worker per thread, kept for the whole ingest. rayon calls `map_init`'s init once per
/// work split, dozens of times per run at `-j2`, and a fresh worker starts with empty buffers
/// and an empty distinct-shingle sketch to fill again (in a profile of a 10,000-file run those
/// refills cost about a tenth of the CPU time at `-j2`).
struct Workers<'a> {
    engine: &'a Engine,
    distinct: &'a Mutex<Kmv>,
    slots: Vec<Mutex<Option<Held<'a>>>>,
}

type Held<'a> = (DocWorker<'a>, Scratch);

impl<'a> Workers<'a> {
    fn new(engine: &'a Engine, distinct: &'a Mutex<Kmv>) -> Self {
        let slots = (0..rayon::current_num_threads().max(1))
            .map(|_| Mutex::new(None))
            .collect();
        Workers {
            engine,
            distinct,
            slots,
        }
    }

    /// The calling thread's worker, or a new one if it has none at hand.
    fn lease(&self) -> Lease<'_, 'a> {
        let slot = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let held = self.slots[slot].lock().ok().and_then(|mut s| s.take());
        Lease {
            workers: self,
            slot,
            held,
        }
    }
}

/// A worker on loan from [`Workers`], given back when the work split ends. Should its slot be
/// full (it is not, as a thread runs one split at a time), the worker is dropped instead, which
/// merges its sketch: the result is the same either way.
struct Lease<'w, 'a> {
    workers: &'w Workers<'a>,
    slot: usize,
    held: Option<Held<'a>>,
}

impl<'a> Lease<'_, 'a> {
    fn get(&mut self) -> (&mut DocWorker<'a>, &mut Scratch) {
        let w = self.workers;
        let held = self.held.get_or_insert_with(|| {
            (
                DocWorker::counting(w.engine, w.distinct),
                Scratch::default(),
            )
        });
        (&mut held.0, &mut held.1)
    }
}

impl Drop for Lease<'_, '_> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            if let Ok(mut slot) = self.workers.slots[self.slot].lock() {
                if slot.is_none() {
                    *slot = Some(held);
                }
            }
        }
    }
}

/// Buffers for bottom-k sketching, one set per rayon job.
#[derive(Default)]
struct Scratch {
    sketch: Vec<u64>,
    scratch: Vec<u64>,
}

/// Where a batch's bottom-k sketches go.
enum BottomSlots<'s> {
    /// The tail of the kept sketches.
    Kept(&'s mut [u64]),
    /// Bottom-k is off: one unused value per document.
    Unused(Vec<u64>),
}

impl BottomSlots<'_> {
    fn par_chunks_mut(&mut self, len: usize) -> rayon::slice::ChunksMut<'_, u64> {
        match self {
            BottomSlots::Kept(s) => s.par_chunks_mut(len),
            BottomSlots::Unused(v) => v.par_chunks_mut(len),
        }
    }
}

/// Sends the dump's lines, unparsed, in batches until it ends or the receiver is gone.
fn read_batches(
    mut reader: JsonlReader<Box<dyn std::io::BufRead + Send>>,
    tx: std::sync::mpsc::SyncSender<Vec<RawLine>>,
) {
    let mut lines = Vec::new();
    let mut bytes = 0;
    while let Some(line) = reader.next_raw() {
        bytes += line.len();
        lines.push(line);
        if lines.len() == BATCH_RECORDS || bytes >= BATCH_BYTES {
            if tx.send(std::mem::take(&mut lines)).is_err() {
                return;
            }
            bytes = 0;
        }
    }
    if !lines.is_empty() {
        let _ = tx.send(lines);
    }
}

/// Opens a dump for reading its records, and says whether it is plain (not compressed), in
/// which case a record's offset in the stream is its offset in the file.
fn open_dump(
    file: &FileEntry,
    jsonl: &JsonlOptions,
) -> Result<(JsonlReader<Box<dyn std::io::BufRead + Send>>, bool), String> {
    let f = open_dump_file(file)?;
    let (compression, stream) = open_stream(f).map_err(|e| crate::messages::io_reason(&e))?;
    Ok((
        JsonlReader::new(stream, jsonl.clone()),
        compression == Compression::None,
    ))
}

/// Opens a dump, checking it is still the file the walk saw.
fn open_dump_file(file: &FileEntry) -> Result<File, String> {
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    let f = File::open(&file.path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if file.id != (0, 0) && crate::input::walk::inode(&meta) != file.id {
        return Err("file was replaced during the scan".into());
    }
    Ok(f)
}

/// Makes the texts of the dump records among `wanted` (document ids) readable again through
/// the engine's spill. A record of a plain dump is read back from the dump itself, at the
/// offset the first pass saw; the records of a compressed dump are copied to the spill's
/// temporary file by streaming the dump once more, as far as its last wanted line. A dump that
/// can no longer be read, or whose records changed, makes its records unavailable:
/// verification reports them as errors.
pub fn spill_records(
    engine: &Engine,
    entries: &[FileEntry],
    wanted: &[u32],
    jsonl: &JsonlOptions,
) -> std::io::Result<()> {
    // Dump (by its first document) → (line → document), in document order, so dumps are
    // streamed in input order.
    let mut by_dump: BTreeMap<u32, BTreeMap<u64, u32>> = BTreeMap::new();
    let mut dump_of: Vec<u32> = Vec::new();
    let mut current = u32::MAX;
    let mut prev: Option<&FileEntry> = None;
    for (d, e) in entries.iter().enumerate() {
        if e.record.is_some() {
            let same = prev.is_some_and(|p| p.record.is_some() && p.path == e.path && p.id == e.id);
            if !same {
                current = d as u32;
            }
        }
        dump_of.push(current);
        prev = Some(e);
    }
    let mut direct = InDumps {
        dumps: Vec::new(),
        records: Vec::new(),
        opts: jsonl.clone(),
    };
    // Which of `direct.dumps` a dump's first document opened, if it could be opened.
    let mut opened: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    for &d in wanted {
        let Some(r) = &entries[d as usize].record else {
            continue;
        };
        let first = dump_of[d as usize];
        match r.at {
            Some((offset, len)) => {
                let dump = *opened.entry(first).or_insert_with(|| {
                    let file = open_dump_file(&entries[first as usize]).ok()?;
                    direct.dumps.push(file);
                    Some(direct.dumps.len() as u32 - 1)
                });
                if let Some(dump) = dump {
                    direct.records.push((d, dump, offset, len));
                }
            }
            None => {
                by_dump.entry(first).or_default().insert(r.line, d);
            }
        }
    }
    let texts = by_dump.into_iter().flat_map(|(first, lines)| {
        let entry = &entries[first as usize];
        let reader = open_dump(entry, jsonl);
        let mut lines = lines;
        let stream: Box<dyn Iterator<Item = std::io::Result<(u32, String)>>> = match reader {
            Err(_) => Box::new(std::iter::empty()),
            // Read only as far as the last wanted line.
            Ok((mut reader, _)) => Box::new(std::iter::from_fn(move || {
                while !lines.is_empty() {
                    if let Line::Doc { line, text, .. } = reader.next()? {
                        if let Some(d) = lines.remove(&line) {
                            return Some(Ok((d, text)));
                        }
                    }
                }
                None
            })),
        };
        stream
    });
    engine.spill.fill(texts, direct)
}

/// `v`, its capacity backed by transparent huge pages where Linux leaves them to the program
/// (`madvise` mode, a common default). The signatures are written whole, so this costs no
/// memory, and faulting them in 2 MiB at a time instead of 4 KiB took their first touch at 10k
/// files (5 MB) from 3.4 to 1.0 ms, all of it on one thread before the pass.
fn with_huge_pages<T>(v: Vec<T>) -> Vec<T> {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        // The whole huge pages inside the allocation.
        let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if last > first {
            // SAFETY: the range lies inside `v`'s allocation, and the advice changes only how
            // its pages are backed, never their contents. A failure (no THP support) is ignored.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, id: (u64, u64)) -> FileEntry {
        FileEntry {
            path: path.into(),
            aliases: Vec::new(),
            size: 10,
            id,
            modified: None,
            dump: false,
            record: None,
            deferred: false,
        }
    }

    fn doc(outcome: Outcome, hash: u128) -> DocResult {
        DocResult {
            outcome,
            bytes: 10,
            hash,
            fingerprint: 0,
            set: None,
            shingles: 0,
        }
    }

    #[test]
    fn later_names_of_an_inode_become_aliases_and_hand_over_their_sketch() {
        // a and c are one inode; c's worker claimed the content first, so a is the duplicate.
        // b is another file, d a third name of a's inode that was never sketched.
        let mut out = Ingested {
            entries: vec![
                entry("a", (1, 7)),
                entry("b", (1, 8)),
                entry("c", (1, 7)),
                entry("d", (1, 7)),
            ],
            docs: vec![
                doc(Outcome::Duplicate, 5),
                doc(Outcome::Sketched, 6),
                doc(Outcome::Sketched, 5),
                doc(Outcome::Duplicate, 5),
            ],
            sigs: vec![0, 0, 1, 1, 2, 2, 3, 3],
            bottom: Sketches::default(),
            distinct: Kmv::new(DEFAULT_KMV_K),
            errors: Vec::new(),
            bad_lines: 0,
            empty_dumps: 0,
        };
        let mut bottom = vec![10, 11, 12, 13];
        merge_links(&mut out, &mut bottom, &[0, 2, 3], 2, 1);
        let paths: Vec<_> = out.entries.iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, ["a", "b"].map(std::path::PathBuf::from));
        assert_eq!(
            out.entries[0].aliases,
            ["c", "d"].map(std::path::PathBuf::from)
        );
        let outcomes: Vec<_> = out.docs.iter().map(|d| d.outcome.clone()).collect();
        assert_eq!(outcomes, [Outcome::Sketched, Outcome::Sketched]);
        assert_eq!(out.sigs, [2, 2, 1, 1]);
        assert_eq!(bottom, [12, 11]);

        // Without bottom-k there are no slots to move.
        let mut none = Vec::new();
        out.entries.push(entry("e", (1, 8)));
        out.docs.push(doc(Outcome::Duplicate, 6));
        out.sigs.extend([4, 4]);
        merge_links(&mut out, &mut none, &[1, 2], 2, 1);
        assert_eq!(out.entries.len(), 2);
        assert_eq!(out.entries[1].aliases, ["e"].map(std::path::PathBuf::from));
        assert_eq!(out.sigs, [2, 2, 1, 1]);
        assert!(none.is_empty());
    }
}
