//! Documents: one file → content hash, shingles, signature. The per-document work of a scan,
//! run in parallel by `scan` with one `DocWorker` (and its reusable buffers) per rayon job.
//!
//! Byte-identical files are sketched once: the first worker to see a content hash claims it,
//! and the others stop after hashing. Which copy is sketched varies with thread timing, but every
//! copy gives the same signature, so the output does not.

use std::collections::HashSet;
use std::sync::Mutex;

use xxhash_rust::xxh3::xxh3_128;

use crate::kmv::Kmv;
use crate::minhash::{MinHasher, SketchKind};
use crate::read::{decode, read_file, Decoded, ReadFailure};
use crate::set_cache::SetCache;
use crate::shingle::{into_set, ShingleKind, Shingler};
use crate::simhash;
use crate::walk::FileEntry;

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
    /// Largest file read.
    pub max_size: u64,
    /// Count each document's distinct shingles (`--containment` needs every set's size).
    pub sizes: bool,
    /// Signature kind.
    pub sketcher: Sketcher,
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
    /// Over the size limit when opened.
    TooLarge(u64),
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
    /// xxh3-128 of the raw bytes.
    pub hash: u128,
    /// SimHash fingerprint (SimHash only).
    pub fingerprint: u64,
    /// Shingle hashes (unsorted, maybe repeated), kept when the set cache admits them, for exact
    /// MinHash verification.
    pub set: Option<Box<[u64]>>,
    /// Distinct shingles, counted when the shingles are sorted anyway (k-permutation sketches,
    /// or when the engine asks for sizes); 0 otherwise.
    pub shingles: u64,
}

impl DocResult {
    fn new(outcome: Outcome) -> Self {
        DocResult {
            outcome,
            bytes: 0,
            hash: 0,
            fingerprint: 0,
            set: None,
            shingles: 0,
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
    engine: &'a Engine,
    shingler: Shingler,
    shingles: Vec<u64>,
    buf: Vec<u8>,
    scratch: Vec<u32>,
    /// This worker's sketch of the corpus's distinct shingles, merged into the sink on drop.
    kmv: Option<(Kmv, &'a Mutex<Kmv>)>,
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
            .unwrap_or(crate::kmv::DEFAULT_KMV_K);
        w.kmv = Some((Kmv::new(k), sink));
        w
    }

    /// A worker with empty buffers.
    pub fn new(engine: &'a Engine) -> Self {
        DocWorker {
            engine,
            shingler: Shingler::new(engine.shingle, engine.ngram),
            shingles: Vec::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            kmv: None,
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
        if let Err(f) = read_file(&file.path, file.id, self.engine.max_size, &mut self.buf) {
            return DocResult::new(match f {
                ReadFailure::NotRegular => Outcome::NotRegular,
                ReadFailure::TooLarge(n) => Outcome::TooLarge(n),
                ReadFailure::Error(e) => Outcome::Failed(e),
            });
        }
        let mut r = DocResult::new(Outcome::Sketched);
        r.bytes = self.buf.len() as u64;
        r.hash = xxh3_128(&self.buf);
        let buf = std::mem::take(&mut self.buf);
        r.outcome = match decode(&buf) {
            Decoded::Binary => Outcome::Binary,
            Decoded::Text(_) if !claims.claim(r.hash) => Outcome::Duplicate,
            Decoded::Text(text) => {
                self.shingles.clear();
                self.shingler.shingle(&text, &mut self.shingles);
                self.sketch(&mut r, signature, cache)
            }
        };
        self.buf = buf;
        r
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

    /// Re-reads a file for verification and returns its shingle set; the content must still
    /// hash to `hash`.
    pub fn load_set(&mut self, file: &FileEntry, hash: u128) -> Result<Box<[u64]>, String> {
        read_file(&file.path, file.id, self.engine.max_size, &mut self.buf).map_err(
            |f| match f {
                ReadFailure::Error(e) => e,
                _ => "file changed during the scan".to_string(),
            },
        )?;
        if xxh3_128(&self.buf) != hash {
            return Err("file changed during the scan".to_string());
        }
        self.shingles.clear();
        if let Decoded::Text(text) = decode(&self.buf) {
            self.shingler.shingle(&text, &mut self.shingles);
        }
        into_set(&mut self.shingles);
        Ok(self.shingles.as_slice().into())
    }
}

/// A document's sorted shingle set, or why it could not be derived again.
pub type LoadedSet = Result<Box<[u64]>, String>;

/// Loads the shingle sets of `docs` (id and content hash) in parallel, in the order given; a
/// file that cannot be read again or changed since it was sketched gives the reason instead.
pub fn load_sets(
    engine: &Engine,
    files: &[FileEntry],
    docs: &[(u32, u128)],
) -> Vec<(u32, LoadedSet)> {
    use rayon::prelude::*;
    docs.par_iter()
        .map_init(
            || DocWorker::new(engine),
            |w, &(d, hash)| (d, w.load_set(&files[d as usize], hash)),
        )
        .collect()
}
