//! dupfind finds near-duplicate documents.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! cli → config            command line → validated Config
//! walk                    roots → sorted regular files, one per inode
//! read                    file → bytes → decoded text
//! tokenize                text → lowercased tokens
//! shingle                 tokens → 64-bit shingle hashes
//! minhash / simhash       shingles → signature / fingerprint
//! doc                     the per-file work above, run in parallel
//! dump / ingest           JSON Lines dumps (plain, gzip, zstd) → one document per record
//! lsh / buckets           signatures → bands (or SimHash pieces) → buckets of candidates
//! containment             --containment: bands per pair of size classes instead
//! verify / exact          candidates → exact Jaccard / Hamming → joined pairs
//! edit_verify / material  (--verify edit) candidates → token edit similarity → joined pairs
//! cluster                 union-find → clusters with a spanning set of pairs
//! report                  clusters → JSON on stdout
//! ```
//!
//! `scan::scan` strings the stages together, with `copies` grouping byte-identical documents,
//! `against` joining an incremental index (`index_store` is its file format) and `settings`
//! saying what the scan reports of itself. `walk`, `read`, `ingest`, `spill`, `index_store` and
//! `report` touch the OS; the middle is pure and is what the benches and unit tests call.

mod app;
pub mod candidates;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod cpu;
pub mod exit;
pub mod explain;
pub mod index;
pub mod ingest;
pub mod input;
pub mod interrupt;
pub mod messages;
pub mod pairs;
pub mod report;
pub mod scan;
pub mod sketch;
mod stages;
pub mod verify;

pub use app::{is_broken_pipe, run};
