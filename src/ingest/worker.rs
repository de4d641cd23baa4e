//! Documents: one file → content hash, shingles, signature. The per-document work of a scan,
//! run in parallel by `scan` with one `DocWorker` (and its reusable buffers) per rayon job.
//!
//! Byte-identical files are sketched once: the first worker to see a content hash claims it,
//! and the others stop after hashing. Which copy is sketched varies with thread timing, but every
//! copy gives the same signature, so the output does not.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use xxhash_rust::xxh3::xxh3_128;

use crate::budget::{self, Budget, Grant};
use crate::ingest::set_cache::SetCache;
use crate::input::decompress::{open_stream, read_limited, sniff, Compression};
use crate::input::read::{
    decode, is_binary, read_file, read_object, sniffs_binary, Decoded, FileMeta, ReadFailure,
    Residency, SizeLimits,
};
use crate::input::readahead::Readahead;
use crate::input::spill::Spill;
use crate::input::walk::FileEntry;
use crate::sketch::keep_at_most;
use crate::sketch::kmv::Kmv;
use crate::sketch::minhash::{MinHasher, SketchKind};
use crate::sketch::normalize::Normalize;
use crate::sketch::shingle::{into_set, ShingleKind, Shingler};
use crate::sketch::simhash;

/// How documents are sketched.
#[derive(Clone, Debug)]
pub enum Sketcher {
    /// MinHash signatures.
    MinHash {
        /// The hash family.
        hasher: MinHasher,
    },
    /// SimHash fingerprints under a seed.
    SimHash {
        /// Seed mixed into every feature hash.
        seed: u64,
    },
}

/// Shared settings of the per-document work.
#[derive(Clone, Debug)]
pub struct Engine {
    /// Word or character shingles.
    pub shingle: ShingleKind,
    /// Shingle length.
    pub ngram: usize,
    /// `--normalize`'s steps.
    pub normalize: Normalize,
    /// Smallest and largest file read (the largest also bounds the decompressed content of a
    /// compressed file).
    pub limits: SizeLimits,
    /// Count each document's distinct shingles (`--containment` needs every set's size).
    pub sizes: bool,
    /// Signature kind.
    pub sketcher: Sketcher,
    /// Texts of the dump records that verification reads again.
    pub spill: Arc<Spill>,
    /// With `--against`: the indexed documents (ids 0..count) and their stored sets.
    pub indexed: Option<Arc<dyn StoredSets>>,
    /// The memory the documents in flight and their decoders share.
    pub budget: Arc<Budget>,
}

impl Engine {
    /// [`budget::document_cost`] with this engine's shingles, and the copy of the text
    /// `--normalize`'s steps make when there are any: reserved at the text's length, which the
    /// steps seldom exceed (NFKC lengthens a few characters, such as `½` to `1⁄2`, and a longer
    /// copy grows past what is charged).
    pub fn document_cost(&self, raw: u64, copied: u64, text: u64, sorted: bool) -> u64 {
        let stepped = if self.normalize.is_none() { 0 } else { text };
        budget::document_cost(
            raw,
            copied.saturating_add(stepped),
            text,
            self.shingle,
            sorted,
        )
    }
}

/// Shingle sets stored rather than derived from a file: the documents of an index scanned
/// against, which are documents `0..count()` of the scan. (A trait, so that the per-document
/// work does not depend on the index that implements it.)
pub trait StoredSets: Send + Sync + std::fmt::Debug {
    /// How many of the scan's first documents are stored.
    fn count(&self) -> u32;
    /// The stored set of document `doc` (below `count()`), or why it cannot be read.
    fn read(&self, doc: u32) -> Result<Box<[u64]>, String>;
}

/// What became of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Shingled and sketched.
    Sketched,
    /// Byte-identical to a file another worker sketched.
    Duplicate,
    /// A NUL byte near the start.
    Binary,
    /// No token.
    Empty,
    /// No longer a regular file.
    NotRegular,
    /// Under `--min-size` when opened.
    TooShort,
    /// Over `--max-size` when opened: its size.
    TooLarge(u64),
    /// Grew past `--max-size` while read, or decompresses to more: at least this many bytes.
    GrewTooLarge(u64),
    /// Could not be read: the reason.
    Failed(String),
}

/// The result for one file; its signature is written in place by the worker.
#[derive(Clone, Debug)]
pub struct DocResult {
    /// What happened.
    pub outcome: Outcome,
    /// Bytes read.
    pub bytes: u64,
    /// xxh3-128 of the content compared (of a compressed file, what it decompresses to).
    pub hash: u128,
    /// The file's names (hard links) when it was opened; 0 for what is no file read now (a
    /// dump record, an indexed document).
    pub links: u32,
    /// The bytes the file took on disk when it was opened (st_blocks × 512); 0 likewise.
    pub disk: u64,
    /// SimHash fingerprint (SimHash only).
    pub fingerprint: u64,
    /// Shingle hashes (unsorted, maybe repeated), kept when the set cache admits them, for exact
    /// MinHash verification.
    pub set: Option<Box<[u64]>>,
    /// Distinct shingles, counted when the shingles are sorted anyway (k-permutation sketches,
    /// or when the engine asks for sizes); 0 otherwise.
    pub shingles: u64,
    /// A file named `*.json` whose text is JSON Lines: read as one document, which the user
    /// is told (once, in document order, by [`super::corpus::Corpus::outcomes`]).
    pub json_lines: bool,
}

impl DocResult {
    fn new(outcome: Outcome) -> Self {
        DocResult {
            outcome,
            bytes: 0,
            hash: 0,
            links: 0,
            disk: 0,
            fingerprint: 0,
            set: None,
            shingles: 0,
            json_lines: false,
        }
    }
}

/// Content hashes already claimed for sketching, sharded to keep lock contention low.
pub struct Claims(Vec<Mutex<HashSet<u128>>>);

impl Default for Claims {
    fn default() -> Self {
        Claims((0..64).map(|_| Mutex::new(HashSet::new())).collect())
    }
}

impl Claims {
    /// True for the first caller with this hash.
    pub fn claim(&self, hash: u128) -> bool {
        let shard = &self.0[(hash as usize) % self.0.len()];
        match shard.lock() {
            Ok(mut set) => set.insert(hash),
            // A poisoned shard means another worker panicked; sketching again is always correct.
            Err(_) => true,
        }
    }
}

/// Per-job buffers, reused across documents.
pub struct DocWorker<'a> {
    pub(super) engine: &'a Engine,
    pub(super) shingler: Shingler,
    pub(super) shingles: Vec<u64>,
    pub(super) buf: Vec<u8>,
    scratch: Vec<u32>,
    /// The metadata of the file last opened by [`DocWorker::process`].
    meta: Option<FileMeta>,
    /// Whether the last file read had to wait for the disk, and what that asks to read ahead.
    waited: bool,
    readahead: Readahead,
    /// This worker's sketch of the corpus's distinct shingles, merged into the sink on drop.
    kmv: Option<(Kmv, &'a Mutex<Kmv>)>,
    /// Reads documents again for verification, which makes their shingles sets.
    pub(super) rereading: bool,
}

impl Drop for DocWorker<'_> {
    fn drop(&mut self) {
        if let Some((kmv, sink)) = &self.kmv {
            // Merging is order-independent, so which worker finishes first does not matter.
            match sink.lock() {
                Ok(mut total) => total.merge(kmv),
                Err(poisoned) => poisoned.into_inner().merge(kmv),
            }
        }
    }
}

impl<'a> DocWorker<'a> {
    /// A worker that also counts distinct shingles into `sink`.
    pub fn counting(engine: &'a Engine, sink: &'a Mutex<Kmv>) -> Self {
        let mut w = DocWorker::new(engine);
        let k = sink
            .lock()
            .map(|s| s.k())
            .unwrap_or(crate::sketch::kmv::DEFAULT_KMV_K);
        w.kmv = Some((Kmv::new(k), sink));
        w
    }

    /// A worker with empty buffers.
    pub fn new(engine: &'a Engine) -> Self {
        DocWorker {
            engine,
            shingler: Shingler::new(engine.shingle, engine.ngram).normalizing(engine.normalize),
            shingles: Vec::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            meta: None,
            waited: false,
            readahead: Readahead::default(),
            kmv: None,
            rereading: false,
        }
    }

    /// Reads, hashes and sketches one file into `signature` (MinHash lanes; unused by SimHash).
    /// `cache` decides whose shingles are kept (exact MinHash verification only).
    pub fn process(
        &mut self,
        file: &FileEntry,
        signature: &mut [u32],
        claims: &Claims,
        cache: Option<&SetCache>,
    ) -> DocResult {
        // Reserved before anything is read, resized as the content's size becomes known, and
        // given back (with the buffers grown for it) once the document is sketched.
        // A file over --max-size is never read (it is skipped, not an error): it is charged
        // what reading it can hold.
        let budget = &self.engine.budget;
        let size = file.size.min(self.engine.limits.max);
        let cost = self.engine.document_cost(size, 0, size, self.sorts());
        let mut grant = match budget.reserve(cost) {
            Ok(g) => g,
            // Binary is skipped whatever the size: its first bytes say so, for no charge.
            Err(_) if sniffs_binary(&file.path) => return DocResult::new(Outcome::Binary),
            Err(over) => return DocResult::new(Outcome::Failed(over.reason())),
        };
        let r = self.read_and_sketch(file, signature, claims, cache, &mut grant);
        self.trim();
        r
    }

    fn read_and_sketch(
        &mut self,
        file: &FileEntry,
        signature: &mut [u32],
        claims: &Claims,
        cache: Option<&SetCache>,
        grant: &mut Grant,
    ) -> DocResult {
        if let Err(f) = self.read(file, grant) {
            return DocResult::new(match f {
                ReadFailure::NotRegular => Outcome::NotRegular,
                ReadFailure::TooShort => Outcome::TooShort,
                ReadFailure::TooLarge(n) => Outcome::TooLarge(n),
                ReadFailure::GrewTooLarge(n) => Outcome::GrewTooLarge(n),
                ReadFailure::Error(e) => Outcome::Failed(e),
            });
        }
        let mut r = DocResult::new(Outcome::Sketched);
        r.bytes = self.buf.len() as u64;
        // The hash `dupfind remove` checks a file against before acting on it: the one that
        // groups identical contents, so the report's records cost no second pass over the bytes.
        r.hash = xxh3_128(&self.buf);
        if let Some(m) = &self.meta {
            (r.links, r.disk) = (m.links, m.disk);
        }
        let buf = std::mem::take(&mut self.buf);
        r.outcome = match decode(&buf) {
            Decoded::Binary => Outcome::Binary,
            Decoded::Text(text) => {
                r.json_lines = file.path.extension().is_some_and(|e| e == "json")
                    && crate::input::jsonl::looks_like_json_lines(&text);
                // A copy made by decoding may be up to 3 times the bytes (U+FFFD for each bad one).
                let copied = match &text {
                    std::borrow::Cow::Owned(t) => t.len() as u64,
                    std::borrow::Cow::Borrowed(_) => 0,
                };
                let cost = self.engine.document_cost(
                    buf.len() as u64,
                    copied,
                    text.len() as u64,
                    self.sorts(),
                );
                match grant.resize(cost) {
                    Ok(()) => self.claim_and_sketch(&text, &mut r, signature, claims, cache),
                    Err(over) => Outcome::Failed(over.reason()),
                }
            }
        };
        self.buf = buf;
        r
    }

    /// Called before item `i` of a run of `len` (`run` tells runs apart) is read, when a run is
    /// read in order: once reads wait for the disk, the files ahead (`path_of` their index, None
    /// for an item not read from its path) are advised ([`crate::input::readahead`]).
    pub fn read_ahead<'p>(
        &mut self,
        run_i_len: (usize, usize, usize),
        path_of: impl Fn(usize) -> Option<&'p Path>,
    ) {
        let waited = std::mem::take(&mut self.waited);
        let object = path_of(run_i_len.1).is_some_and(crate::store::is_url);
        self.readahead.before(run_i_len, waited, object, path_of);
    }

    /// The metadata of the file the last [`DocWorker::process`] opened, if it got that far.
    pub fn take_meta(&mut self) -> Option<FileMeta> {
        self.meta.take()
    }

    /// Hashes and sketches the text of one dump record, as `process` does a file's.
    pub fn process_text(
        &mut self,
        text: &str,
        signature: &mut [u32],
        claims: &Claims,
        cache: Option<&SetCache>,
    ) -> DocResult {
        let mut r = DocResult::new(Outcome::Sketched);
        r.bytes = text.len() as u64;
        r.hash = xxh3_128(text.as_bytes());
        // The text itself is the dump's, charged to it; its sketching is this worker's.
        let cost = self.engine.document_cost(0, 0, r.bytes, self.sorts());
        r.outcome = match self.engine.budget.reserve(cost) {
            Ok(_grant) => self.claim_and_sketch(text, &mut r, signature, claims, cache),
            Err(over) => Outcome::Failed(over.reason()),
        };
        self.trim();
        r
    }

    /// Shingles and sketches `text` when this worker is the first with its content hash
    /// (`r.hash`); a copy another worker claimed is only a `Duplicate`.
    fn claim_and_sketch(
        &mut self,
        text: &str,
        r: &mut DocResult,
        signature: &mut [u32],
        claims: &Claims,
        cache: Option<&SetCache>,
    ) -> Outcome {
        if !claims.claim(r.hash) {
            return Outcome::Duplicate;
        }
        self.shingles.clear();
        self.shingler.shingle(text, &mut self.shingles);
        self.sketch(r, signature, cache)
    }

    /// Reads a file's content into `buf`: its bytes, or what they decompress to when they are
    /// compressed (recognised by their magic bytes), never more than the size limit either way.
    /// `grant` is resized to what the content needs at each step.
    pub(super) fn read(&mut self, file: &FileEntry, grant: &mut Grant) -> Result<(), ReadFailure> {
        self.meta = None;
        let again = self.rereading;
        let over = |o: budget::OverBudget| {
            ReadFailure::Error(if again { o.reason_again() } else { o.reason() })
        };
        let residency = if crate::store::is_url(&file.path) {
            read_object(file, self.engine.limits, &mut self.buf, &mut self.meta)?
        } else {
            read_file(
                &file.path,
                file.id,
                self.engine.limits,
                &mut self.buf,
                &mut self.meta,
            )?
        };
        self.waited = residency == Residency::NotCached;
        let format = sniff(&self.buf[..self.buf.len().min(4)]);
        if format == Compression::None {
            // The walk's size may be stale (or unknown, for a deferred entry). A binary file
            // is skipped once read: charged its bytes, not the text it will not become.
            let len = self.buf.len() as u64;
            let cost = self.engine.document_cost(len, 0, len, self.sorts());
            return match grant.resize(cost) {
                Err(_) if is_binary(&self.buf) => grant.resize(len).map_err(over),
                r => r.map_err(over),
            };
        }
        // While decompressing: the compressed bytes, the decoder and up to --max-size of output.
        let decoding = (self.buf.len() as u64)
            .saturating_add(crate::input::decompress::decoder_cost(format))
            .saturating_add(self.engine.limits.max);
        grant.resize(decoding).map_err(over)?;
        let raw = std::io::Cursor::new(std::mem::take(&mut self.buf));
        let (_, mut stream) =
            open_stream(raw).map_err(|e| ReadFailure::Error(crate::messages::io_reason(&e)))?;
        let fits = read_limited(&mut stream, self.engine.limits.max, &mut self.buf)
            .map_err(|e| ReadFailure::Error(e.to_string()))?;
        if !fits {
            return Err(ReadFailure::GrewTooLarge(self.buf.len() as u64));
        }
        drop(stream);
        let len = self.buf.len() as u64;
        let cost = self.engine.document_cost(len, 0, len, self.sorts());
        grant.resize(cost).map_err(over)
    }

    /// Whether this worker makes each document's shingles a set: when verification reads it
    /// again, or a k-permutation sketch or containment's sizes need it in the first pass.
    fn sorts(&self) -> bool {
        self.rereading
            || self.engine.sizes
            || matches!(&self.engine.sketcher, Sketcher::MinHash { hasher } if hasher.kind() == SketchKind::Kperm)
    }

    /// Gives back the buffers a large document grew, so that what a worker holds between
    /// documents stays within the fixed part of a document's cost ([`budget::RETAINED`]).
    pub(super) fn trim(&mut self) {
        let keep = budget::RETAINED;
        keep_at_most(&mut self.buf, keep);
        keep_at_most(&mut self.shingles, keep);
        keep_at_most(&mut self.scratch, keep);
        self.shingler.trim(keep);
    }

    fn sketch(
        &mut self,
        r: &mut DocResult,
        signature: &mut [u32],
        cache: Option<&SetCache>,
    ) -> Outcome {
        if self.shingles.is_empty() {
            return Outcome::Empty;
        }
        if let Some((kmv, _)) = &mut self.kmv {
            kmv.insert_set(&self.shingles);
        }
        match &self.engine.sketcher {
            Sketcher::MinHash { hasher } => {
                // K-permutation MinHash costs K multiplies per shingle, so repeats are removed
                // first; OPH costs one, so it sketches without sorting.
                let sorted = hasher.kind() == SketchKind::Kperm || self.engine.sizes;
                if sorted {
                    into_set(&mut self.shingles);
                    r.shingles = self.shingles.len() as u64;
                }
                hasher.sketch(&self.shingles, signature, &mut self.scratch);
                if cache.is_some_and(|c| c.admit(signature, self.shingles.len() * 8)) {
                    // Kept as they are: only candidates are sorted, when they are verified.
                    r.set = Some(self.shingles.as_slice().into());
                }
            }
            Sketcher::SimHash { seed } => {
                r.fingerprint = simhash::fingerprint(&self.shingles, *seed);
            }
        }
        Outcome::Sketched
    }

    /// The shingle hashes of the document [`DocWorker::process`] last sketched (unsorted, maybe
    /// repeated). Meaningful only when that document's outcome was `Sketched`.
    pub fn shingles(&self) -> &[u64] {
        &self.shingles
    }
}
