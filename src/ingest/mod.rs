//! Ingest (the "sign" stage): the walked inputs → documents with their signatures, in
//! parallel.
//!
//! A plain file is one document, read, hashed, shingled and sketched by a [`worker`] (one per
//! thread, from a [`pool`]). A JSON Lines dump is many ([`dumps`]): it is streamed and its
//! records sketched a batch at a time, so a dump of any size passes through a bounded amount of
//! memory. Documents are numbered in input order, a dump's records in line order at the dump's
//! place, so the numbering (and the report) does not depend on threads. A bad line (invalid
//! JSON, no text field, text not a string, too long) is an input error naming the dump and the
//! line; the records around it are kept. What the pass produced becomes the scan's
//! [`corpus::Corpus`].

pub mod corpus;
pub(crate) mod dumps;
pub mod keep_by;
mod links;
mod pool;
pub mod reread;
pub mod set_cache;
pub mod worker;

use std::sync::Mutex;

use rayon::prelude::*;

use crate::config::{Config, MethodConfig, Verify};
use crate::ingest::set_cache::SetCache;
use crate::ingest::worker::{Claims, DocResult, DocWorker, Engine, Outcome, Sketcher, StoredSets};
use crate::input::jsonl::JsonlOptions;
use crate::input::parquet::TextPrints;
use crate::input::read::SizeLimits;
use crate::input::readahead::Begun;
use crate::input::walk::FileEntry;
use crate::messages::{InputError, Messages};
use crate::sketch::bottomk::Sketches;
use crate::sketch::kmv::{Kmv, DEFAULT_KMV_K};
use crate::sketch::minhash::MinHasher;
use corpus::Corpus;
pub use dumps::spill_records;
pub use keep_by::KeepSeen;
use links::merge_links;
use pool::{BottomSlots, Scratch, Workers};

/// The per-document work of a scan under `cfg`. With an index, `indexed` holds the indexed
/// documents' stored sets.
pub fn engine(cfg: &Config, indexed: Option<std::sync::Arc<dyn StoredSets>>) -> Engine {
    let sketcher = match &cfg.method {
        MethodConfig::MinHash {
            sketch, num_perm, ..
        } => Sketcher::MinHash {
            hasher: MinHasher::new(*sketch, *num_perm, cfg.seed),
        },
        MethodConfig::SimHash { .. } => Sketcher::SimHash { seed: cfg.seed },
    };
    // Every decoder opened from now on, in this pass or when inputs are read again, obeys it.
    crate::input::decompress::set_window_limit(crate::budget::window_limit(cfg.max_memory));
    crate::input::parquet::set_decode_limit(crate::budget::decode_limit(cfg.max_memory));
    Engine {
        budget: std::sync::Arc::new(crate::budget::Budget::new(cfg.max_memory)),
        shingle: cfg.shingle,
        ngram: cfg.ngram,
        normalize: cfg.normalize,
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
    /// What it saw of the `--keep-by` field.
    pub keep_seen: KeepSeen,
}

/// The first pass's result.
pub struct Signed {
    /// The documents read now, with their signatures.
    pub corpus: Corpus,
    /// Counts and errors.
    pub summary: SignSummary,
    /// The prints of the Parquet dumps' row groups, when the scan writes a dataset.
    pub prints: TextPrints,
}

/// Signs `files`: reads, hashes, shingles and sketches every document in parallel (a dump's
/// records a batch at a time). `keep_sets`: keep some shingle sets for exact verification in
/// this process (a staged run verifies in another).
pub fn sign(
    cfg: &Config,
    files: Vec<FileEntry>,
    engine: &Engine,
    keep_sets: bool,
) -> anyhow::Result<Signed> {
    // Only exact MinHash verification needs shingle sets again. A dump's documents are not
    // counted until it is read, so its share of the cache's bitmap is estimated from its size.
    let cache = match &cfg.method {
        MethodConfig::MinHash {
            banding,
            verify: Verify::Exact,
            ..
        } if keep_sets => {
            let documents: u64 = files
                .iter()
                .map(|f| if f.dump { f.size / 1024 + 1 } else { 1 })
                .sum();
            Some(SetCache::new(documents as usize, *banding))
        }
        _ => None,
    };
    let bottom_k = cfg.method.bottom_k().map(|k| (k, cfg.seed));
    let lanes = cfg.lanes();
    let ingested = Ingest {
        engine,
        lanes,
        bottom_k,
        jsonl: &cfg.jsonl,
        cache: cache.as_ref(),
        msgs: &cfg.messages,
        print_texts: cfg.dataset.is_some(),
    }
    .run(files);
    if let Some(reason) = ingested.over_budget {
        anyhow::bail!(reason);
    }
    Ok(Signed {
        corpus: Corpus::new(
            ingested.entries,
            ingested.docs,
            ingested.sigs,
            lanes,
            ingested.bottom,
        ),
        summary: SignSummary {
            distinct: ingested.distinct,
            errors: ingested.errors,
            bad_lines: ingested.bad_lines,
            empty_dumps: ingested.empty_dumps,
            keep_seen: ingested.keep_seen,
        },
        prints: ingested.prints,
    })
}

/// Makes the texts of the new dump records that the rest of the scan reads again available
/// ([`spill_records`]): those of the documents `compared` gives (the candidates and
/// byte-identical groups) when verification or `--pairs` needs texts, every new record when an
/// index is updated.
pub fn keep_record_texts(
    cfg: &Config,
    engine: &Engine,
    corpus: &Corpus,
    compared: impl FnOnce() -> Vec<u32>,
) -> anyhow::Result<()> {
    let files = &corpus.files;
    let updating = cfg.against.as_ref().is_some_and(|a| a.update);
    let new_records = || (corpus.new_ids()).filter(|&d| files[d as usize].record.is_some());
    // Exact and edit verification and `--pairs` evidence read texts again.
    let needs_texts = cfg.pairs || matches!(cfg.verify(), Some(Verify::Exact | Verify::Edit));
    if new_records().next().is_none() || !(needs_texts || updating) {
        return Ok(());
    }
    let mut wanted: Vec<u32> = if updating {
        // Every new record goes into the index with its set.
        new_records().collect()
    } else {
        compared()
    };
    wanted.retain(|&d| corpus.is_new(d));
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

/// Plain files sketched together (their results are held until the chunk ends).
const FILE_CHUNK: usize = 1 << 16;

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
    /// What it saw of the `--keep-by` field.
    pub keep_seen: KeepSeen,
    /// The pass stopped: the documents' signatures alone would exceed the memory budget.
    pub over_budget: Option<String>,
    /// With [`Ingest::print_texts`], the prints of the Parquet dumps' row groups.
    pub prints: TextPrints,
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
    /// Take the [`TextPrint`](crate::input::parquet::TextPrint)s of the Parquet dumps' row
    /// groups (`--write-dataset` copies a group whose print is unchanged without decoding it).
    pub print_texts: bool,
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
            keep_seen: KeepSeen::default(),
            over_budget: None,
            prints: TextPrints::default(),
        };
        // Known before anything is read for plain files; a dump's records are checked as they
        // come (`Ingest::dump`).
        let plain = files.iter().filter(|f| !f.dump).count();
        out.over_budget = self.over_budget(plain, files.len() > plain);
        if out.over_budget.is_some() {
            return out;
        }
        let bar = self.msgs.progress(files.len() as u64, "reading", "files");
        let objects = files.iter().any(|f| crate::store::is_url(&f.path));
        let _ahead = crate::input::readahead::fetch_ahead(&self.engine.budget, objects);
        let mut bottom = Vec::new();
        // Documents whose file has other names, found when read.
        let mut linked = Vec::new();
        let mut plain = |run: &mut [FileEntry], out: &mut Ingested, bottom: &mut Vec<u64>| {
            let begun = Begun::new(run.len(), objects);
            let docs = self.sketch_each(run, &workers, &mut out.sigs, bottom, |w, i, file, sig| {
                w.read_ahead((run.as_ptr() as usize, i, run.len()), |j| {
                    (!begun.is(j)).then_some(&run[j].path)
                });
                begun.mark(i);
                let r = w.process(file, sig, &claims, self.cache);
                bar.inc(1);
                (r, w.take_meta())
            });
            for ((entry, (doc, meta)), d) in run.iter_mut().zip(docs).zip(out.docs.len()..) {
                if let Some(m) = meta.filter(|_| entry.deferred) {
                    entry.size = m.size;
                    entry.id = m.id;
                    entry.modified = m.modified;
                    entry.changed = m.changed;
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
            while pending.peek().is_some() && out.over_budget.is_none() {
                if let Some(dump) = pending.next_if(|f| f.dump) {
                    self.dump(&dump, &claims, &workers, &mut out, &mut bottom);
                    bar.inc(1);
                    continue;
                }
                let mut run: Vec<FileEntry> = std::iter::from_fn(|| pending.next_if(|f| !f.dump))
                    .take(FILE_CHUNK)
                    .collect();
                out.over_budget = self.over_budget(out.docs.len() + run.len(), true);
                if out.over_budget.is_some() {
                    break;
                }
                plain(&mut run, &mut out, &mut bottom);
                out.entries.append(&mut run);
            }
        }
        bar.finish();
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

    /// Why the signatures of `docs` documents cannot be held, when they would exceed the memory
    /// budget (`more`: other documents are still to come, dump records among them).
    pub(crate) fn over_budget(&self, docs: usize, more: bool) -> Option<String> {
        let bottom = self.bottom_k.map_or(0, |(k, _)| k + 1);
        let need = (docs as u64).saturating_mul(crate::budget::per_document(self.lanes, bottom));
        let limit = self.engine.budget.limit();
        let (which, least) = match more {
            true => ("the first ", "well over"),
            false => ("", "over"),
        };
        (need > limit).then(|| {
            format!(
                "the signatures of {which}{docs} documents need about {need_h} of memory, more \
                 than --max-memory ({limit_h}) allows: raise --max-memory to {least} {need_h}, or \
                 split the corpus into shards and run the staged pipeline (docs/staged.md), which \
                 keeps signatures on disk (a lower --num-perm saves 4 bytes per value and \
                 document)",
                need_h = crate::budget::human(need),
                limit_h = crate::budget::human(limit)
            )
        })
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
