//! What the Python package (`python/`) calls: the binary's whole `main` for its `dupfind`
//! command, and a scan run inside another program, its report returned rather than printed.

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};

use crate::cli::{self, Cli, Command};
use crate::config::{Config, OutputFormat};
use crate::exit::ExitCode;

/// The `dupfind` binary, given its arguments (the program name first): parses them (an error
/// is printed and ends the process, as clap does), runs the command and returns the exit status.
/// `src/main.rs` is this, and so is the Python package's `dupfind` command.
pub fn main(args: &[OsString]) -> i32 {
    // What glibc keeps of freed memory, fitted to --max-memory once it is known.
    crate::tune_allocator();
    let cli = cli::try_parse_from(args).unwrap_or_else(|e| e.exit());
    match crate::run(cli) {
        Ok(code) => code.code(),
        Err(err) if crate::is_broken_pipe(&err) => 0,
        Err(err) => {
            eprintln!("dupfind: {err:#}");
            ExitCode::Error.code()
        }
    }
}

/// The pool of the Python module's own parallel work (`signatures`), with scan's bounds:
/// `threads` from 1 to `-j`'s limit, else `RAYON_NUM_THREADS` (checked as for every command),
/// else all cores. Past the limit rayon would try to start every thread and abort the process.
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let most = cli::env::MOST_THREADS;
    if let Some(n) = threads.filter(|&n| n == 0 || n > most) {
        bail!("threads={n}: give 1 to {most} worker threads, or None for one per logical CPU");
    }
    crate::config::pool(threads)
}

/// Runs `dupfind scan …` (`cli` must be a scan) inside the calling program and returns its JSON
/// report, as `--format json` prints it, with the exit status the command would have (0, 1 or
/// 2). Unlike [`crate::run`] it installs no Ctrl-C handler (the caller keeps its own, and stops
/// waiting instead) and prints no report. Set `abandoned` when the caller stopped waiting: an
/// index the scan would update (`--update`) is then left as it was, as Ctrl-C leaves it.
pub fn scan_json(cli: Cli, abandoned: &AtomicBool) -> Result<(Vec<u8>, ExitCode)> {
    let cfg = scan_config(cli)?;
    run_scan(&cfg, abandoned).map(|(json, code, _)| (json, code))
}

/// Runs `dupfind scan …` (`cli`, whose paths are ignored) on a table in memory, as
/// [`scan_json`] runs it on files: the record batches `batches` of `schema`, read as the rows
/// of a Parquet dump are (`--text-field`, `--keep-by`), their buffers where they lie. Its rows
/// are named by the column `id` or, without one (or where it is null), by their numbers from 0.
/// Returns the JSON report, the exit status and `--annotate`'s five columns for the rows, in
/// order. Refuses a table that already has one of those columns, and the options that write
/// or read elsewhere than the table (`--write-dataset`, `--against`).
pub fn scan_table(
    cli: Cli,
    (schema, batches): (arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>),
    id: Option<&str>,
    abandoned: &AtomicBool,
) -> Result<(Vec<u8>, ExitCode, arrow_array::RecordBatch)> {
    let mut cfg = scan_config(cli)?;
    if cfg.dataset.is_some() || cfg.against.is_some() {
        bail!("a table is scanned on its own, and its annotation returned: --write-dataset and --against are not options here");
    }
    let names = schema.fields().iter().map(|f| f.name().as_str());
    crate::dataset::refuse_clash("the table", names)?;
    let table = crate::input::table::Table::new(schema, batches, id, &cfg.jsonl)?;
    let registered = crate::input::table::register(std::sync::Arc::new(table));
    cfg.walk.roots.clear();
    cfg.walk.listed.clear();
    cfg.stdin = false;
    cfg.table = Some(registered.name().to_path_buf());
    let (json, code, annotations) = run_scan(&cfg, abandoned)?;
    let annotations =
        annotations.ok_or_else(|| anyhow::anyhow!("the scan returned no annotation"))?;
    Ok((json, code, annotations))
}

/// The settings of `cli`, a scan.
fn scan_config(cli: Cli) -> Result<Config> {
    let Command::Scan(cmd) = cli.command else {
        bail!("only `scan` runs inside another program");
    };
    cli::env::check()?;
    Config::for_scan(*cmd)
}

/// The scan of `cfg`, its report as JSON, its exit status and a table's annotations.
fn run_scan(
    cfg: &Config,
    abandoned: &AtomicBool,
) -> Result<(Vec<u8>, ExitCode, Option<arrow_array::RecordBatch>)> {
    let pool = cfg.pool()?;
    // The report is written in the pool too: its clusters are rendered by the pool's threads.
    let (out, json, warnings) = pool.install(|| -> Result<_> {
        let out = crate::scan::scan(cfg)?;
        let mut json = Vec::new();
        let warnings = crate::report::write(&out.report, OutputFormat::Json, false, &mut json)?;
        Ok((out, json, warnings))
    })?;
    for warning in warnings {
        cfg.messages.warn(&warning);
    }
    if let Some(pending) = out.pending {
        if abandoned.load(Ordering::SeqCst) {
            return Ok((json, ExitCode::Interrupted, out.annotations));
        }
        if let Err(e) = pending.commit() {
            crate::messages::error(&format!("index not updated: {e:#}"));
            return Ok((json, ExitCode::Error, out.annotations));
        }
    }
    Ok((json, out.code, out.annotations))
}

/// A document's MinHash signature and shingle set, computed as `scan` computes them under the
/// options of a scan command line (for the Python package's `signatures` and `jaccard`).
#[derive(Debug)]
pub struct Signer {
    /// What the shingler was made from, to make another for another thread.
    made: (
        crate::sketch::shingle::ShingleKind,
        usize,
        crate::sketch::normalize::Normalize,
    ),
    shingler: crate::sketch::shingle::Shingler,
    hasher: crate::sketch::minhash::MinHasher,
    shingles: Vec<u64>,
    scratch: Vec<u32>,
}

impl Signer {
    /// The signer of `dupfind scan …` (`cli`), its options checked as the scan checks them;
    /// refused for `--method simhash`, which computes no MinHash signature.
    pub fn new(cli: Cli) -> Result<Signer> {
        let Command::Scan(cmd) = cli.command else {
            bail!("the options are those of `scan`");
        };
        let cfg = Config::for_scan(*cmd)?;
        let crate::config::MethodConfig::MinHash {
            sketch, num_perm, ..
        } = &cfg.method
        else {
            bail!("signatures are MinHash signatures: --method simhash computes none");
        };
        let made = (cfg.shingle, cfg.ngram, cfg.normalize);
        let hasher = crate::sketch::minhash::MinHasher::new(*sketch, *num_perm, cfg.seed);
        Ok(Signer::made(made, hasher))
    }

    fn made(
        made: (
            crate::sketch::shingle::ShingleKind,
            usize,
            crate::sketch::normalize::Normalize,
        ),
        hasher: crate::sketch::minhash::MinHasher,
    ) -> Signer {
        Signer {
            made,
            shingler: crate::sketch::shingle::Shingler::new(made.0, made.1).normalizing(made.2),
            hasher,
            shingles: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Another signer of the same options, with buffers of its own (one per thread).
    pub fn fresh(&self) -> Signer {
        Signer::made(self.made, self.hasher.clone())
    }

    /// Values in a signature (`--num-perm`).
    pub fn len(&self) -> usize {
        self.hasher.len()
    }

    /// Always false: a signature has at least one value.
    pub fn is_empty(&self) -> bool {
        self.hasher.is_empty()
    }

    /// Writes the signature of `text` into `out` (`len()` values) and returns true; a text
    /// without a shingle, which `scan` reports as empty and never compares, has none: `out` is
    /// then all `u32::MAX` (what an empty MinHash holds) and the answer false.
    pub fn sign(&mut self, text: &str, out: &mut [u32]) -> bool {
        self.shingles.clear();
        self.shingler.shingle(text, &mut self.shingles);
        if self.shingles.is_empty() {
            out.fill(u32::MAX);
            return false;
        }
        self.hasher.sketch(&self.shingles, out, &mut self.scratch);
        true
    }

    /// The distinct shingle hashes of `text`, sorted: the set exact verification compares.
    pub fn shingle_set(&mut self, text: &str) -> Vec<u64> {
        let mut set = Vec::new();
        self.shingler.shingle(text, &mut set);
        crate::sketch::shingle::into_set(&mut set);
        set
    }
}
