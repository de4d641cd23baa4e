//! Integration tests: the real binary on real files in a temporary directory (`util::TestDir`).
//!
//! One test binary; one module per topic, under `tests/integration/`.
#![allow(clippy::unwrap_used)] // a failing unwrap is a failing test

mod util;

/// `dupfind remove`, `move` and `link`.
#[path = "integration/act.rs"]
mod act;
/// `move`'s destinations, reports read elsewhere, Ctrl-C, a second `link`, large members.
#[path = "integration/act_edges.rs"]
mod act_edges;
/// Usage errors, help, `--quiet`, progress, pipes, signals, stdin.
#[path = "integration/cli.rs"]
mod cli;
/// bzip2, xz, lzma and lz4 files and dumps; standard input.
#[path = "integration/compressed.rs"]
mod compressed;
/// `--containment`.
#[path = "integration/containment.rs"]
mod containment;
/// `--write-dataset`.
#[path = "integration/dataset.rs"]
mod dataset;
/// The Parquet dataset's layout: hive partitions, parts by input; dictionary types.
#[path = "integration/dataset_layout.rs"]
mod dataset_layout;
/// `--write-dataset` as Parquet, `--annotate`.
#[path = "integration/dataset_parquet.rs"]
mod dataset_parquet;
/// Threads, seeds and order.
#[path = "integration/determinism.rs"]
mod determinism;
/// The README and docs/ checked against the binary.
#[path = "integration/docs.rs"]
mod docs;
/// JSON Lines dumps, compressed files, `--files-from`.
#[path = "integration/dumps.rs"]
mod dumps;
/// The fuzz targets' committed inputs, replayed.
#[path = "integration/fuzz.rs"]
mod fuzz;
/// `http(s)://` inputs: documents and dumps of a plain web server.
#[path = "integration/http.rs"]
mod http;
/// The incremental index.
#[path = "integration/index/mod.rs"]
mod index;
/// Encodings, binary, empty, size limits, unreadable files.
#[path = "integration/inputs.rs"]
mod inputs;
/// `--keep-by`, `--keep none`, `--format parquet`.
#[path = "integration/keep_by.rs"]
mod keep_by;
/// `--max-memory`.
#[path = "integration/memory.rs"]
mod memory;
/// `--normalize`'s steps.
#[path = "integration/normalize.rs"]
mod normalize;
/// URLs: a real S3 server (moto) on loopback, its dumps and faults.
#[path = "integration/object_store.rs"]
mod object_store;
/// The report: schema, snapshots, params, JSON Lines, file names.
#[path = "integration/output.rs"]
mod output;
/// Parquet dumps.
#[path = "integration/parquet.rs"]
mod parquet;
/// Representatives, duplicates, `--pairs`, `--exit-code`, `--format text`.
#[path = "integration/results.rs"]
mod results;
/// `--format paths`, `-o`, a terminal, `-q`, hints, sizes, refusals, help and man pages.
#[path = "integration/shell.rs"]
mod shell;
/// Methods, shingles, sketches, thresholds, exact copies.
#[path = "integration/similarity.rs"]
mod similarity;
/// The staged pipeline: reports equal scan's; damaged work files.
#[path = "integration/staged.rs"]
mod staged;
/// The staged pipeline --against an index: scan --against's report; a changed index refused.
#[path = "integration/staged_against.rs"]
mod staged_against;
/// The staged pipeline's lineage: misplaced, stale, edited and damaged work files refused.
#[path = "integration/staged_lineage.rs"]
mod staged_lineage;
/// The staged pipeline on S3 (moto): run-local.sh prints scan's report; faults named.
#[path = "integration/staged_store.rs"]
mod staged_store;
/// `stage status` on S3: one listing for the work files' ETags; run.json read once a task.
#[path = "integration/staged_store_status.rs"]
mod staged_store_status;
/// Store errors the same bytes every run; RAYON_NUM_THREADS, -j and the store timeout bounded.
#[path = "integration/store_env.rs"]
mod store_env;
/// HTTPS to an object store, its certificate trusted or not.
#[path = "integration/store_tls.rs"]
mod store_tls;
/// `--verify edit` and `--sketch bottom-k`.
#[path = "integration/verify_sketch.rs"]
mod verify_sketch;
/// Roots, globs, symbolic links, FIFOs, hard links.
#[path = "integration/walk.rs"]
mod walk;
/// Hidden and ignored files, missing roots, `--max-depth`, `-e`.
#[path = "integration/walk_ignore.rs"]
mod walk_ignore;
