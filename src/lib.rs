//! dupfind finds near-duplicate documents.
//!
//! The pipeline, one folder per family, data flowing one way (`scan::scan` calls the stages in
//! this order; ARCHITECTURE.md draws it):
//!
//! ```text
//! cli → config        command line → validated Config (clap stops at config/validate.rs, app.rs),
//!                     with what is derived from it once (banding, containment scheme)
//! input/              roots → sorted files, one per inode; their bytes (walk, read, readahead,
//!                     decompress, jsonl, spill)
//! index/              an incremental index joined before the first pass, updated after
//! ingest/             the first pass, in parallel: read → hash → shingle → sketch (the "sign"
//!                     stage), and the corpus of documents by id
//! sketch/             text → tokens → shingles → MinHash / SimHash / bottom-k / KMV
//! candidates/         byte-identical groups, then LSH bands, SimHash pieces or containment
//!                     classes → buckets
//! verify/             the judge decides every pair; sets or token sequences loaded a batch at
//!                     a time
//! cluster/            union-find components, strict clusters, the representative (--keep)
//! conclude            verify → cluster → records: the one call `scan` and `stage verify` share
//! report/             clusters → records → JSON, JSON Lines or text on stdout
//! stages/             the same stages as separate processes over Parquet (dupfind stage …)
//! store/              URLs (s3://, gs://, az://, http(s)://) under the readers and writers:
//!                     listings, GETs, range reads, whole-object writes (object_store)
//! act/                a JSON report → its duplicates removed, moved or hard-linked, each
//!                     checked unchanged first (dupfind remove, move, link)
//! ```
//!
//! `pairs` holds what the middle stages share (document ids, pairs, scores, union-find); `cpu`
//! the run-time CPU features; `budget` the memory budget (`--max-memory`); `varint` LEB128
//! integers (the index's sets, Parquet footers); `token` fresh tokens (temporary names, ids);
//! `messages` what goes to stderr; `exit` the exit codes; `sink` where the report goes;
//! `dataset` the deduplicated dataset (`--write-dataset`); `atomic` files renamed into place;
//! `embed` what the Python package calls (the binary's `main`, a scan returning its report). No
//! top-level module imports one that imports it back (a test checks). Only
//! `input`, `ingest`, `index`, `stages`, `act`, `verify`'s loading and `report`'s writing touch
//! the OS;
//! `sketch`, `candidates`, the judge and the measures are pure. The modules are private: the
//! binary calls [`run`], the benches and tests call [`api`], and the fuzz targets (`fuzz/`) and
//! their replay test call [`fuzzing`].

mod act;
mod app;
mod atomic;
mod budget;
mod candidates;
pub mod cli;
mod cluster;
mod conclude;
mod config;
mod cpu;
mod dataset;
mod deliver;
pub mod embed;
pub mod exit;
mod explain;
#[doc(hidden)]
pub mod fuzzing;
mod index;
mod ingest;
mod input;
mod interrupt;
mod messages;
mod pairs;
mod report;
mod scan;
mod sink;
mod sketch;
mod stages;
mod store;
mod token;
mod varint;
mod verify;

pub use app::run;
pub use budget::tune_allocator;
pub use deliver::is_broken_pipe;

/// What the benches, the benchmark corpus tool and the integration tests call, exactly as
/// `scan` calls it: tokenizing and shingling, the MinHash and SimHash sketches, banding, the set
/// measures, the text decoder, and the index reader. Not a stable interface.
#[doc(hidden)]
pub mod api {
    pub use crate::candidates::buckets::Buckets;
    pub use crate::candidates::keys::band_key;
    pub use crate::config::banding::{Banding, RECALL_WEIGHT};
    pub use crate::index::info::{info as index_info, Info as IndexInfo};
    pub use crate::index::store::Index;
    pub use crate::input::read::{decode, Decoded};
    pub use crate::sketch::minhash::{mix64, splitmix64, MinHasher, SketchKind};
    pub use crate::sketch::shingle::{for_each_token, into_set, ShingleKind, Shingler};
    pub use crate::sketch::simhash;
    pub use crate::stages::lineage::{check_seal, seal as seal_summary};
    pub use crate::verify::{jaccard, jaccard_at_least};
}
