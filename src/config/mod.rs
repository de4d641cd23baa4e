//! Config: the validated settings of a scan, free of clap types. `validate` turns the command
//! line into a `Config` (every check of a value lives there, so a bad value is a clear error
//! before any file is touched); `inputs` reads what the command line points at (a file list,
//! globs). Nothing below `app` sees the command line itself.

pub mod banding;
pub mod containment;
pub(crate) mod inputs;
mod method;
mod validate;

use std::path::PathBuf;

use crate::config::banding::Banding;
use crate::config::containment::Scheme;
use crate::input::jsonl::JsonlOptions;
use crate::input::walk::WalkOptions;
use crate::messages::Messages;
use crate::sketch::minhash::SketchKind;
use crate::sketch::normalize::Normalize;
use crate::sketch::shingle::ShingleKind;

pub use validate::{given_banding, normalize_steps};

/// Default `--threshold`.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// Default `--num-perm`.
pub const DEFAULT_NUM_PERM: usize = 128;
/// Default `--max-distance`.
pub const DEFAULT_MAX_DISTANCE: u32 = 3;

/// Largest accepted signature length.
pub const MAX_NUM_PERM: usize = 1024;
/// Largest accepted shingle length.
/// Word shingles combine token hashes rotated by 17·j mod 64, which repeat after 64 tokens.
pub const MAX_NGRAM: usize = 64;

/// How candidates are found and verified.
#[derive(Clone, Debug, PartialEq)]
pub enum MethodConfig {
    /// MinHash signatures and LSH bands.
    MinHash {
        /// Sketch kind.
        sketch: SketchKind,
        /// Signature length K.
        num_perm: usize,
        /// Bands and rows.
        banding: Banding,
        /// True when the banding was chosen from the threshold, not given.
        banding_chosen: bool,
        /// Jaccard threshold the banding is tuned for.
        threshold: f64,
        /// Similarity a pair must reach to be reported: the threshold, or `--min-similarity`
        /// when that is stricter.
        report_threshold: f64,
        /// How candidates are verified.
        verify: Verify,
        /// Keep a bottom-k sketch of `num_perm` values per document for every Jaccard estimate
        /// (`--sketch bottom-k`; the bands still use the OPH signature).
        bottom_k: bool,
        /// `--containment`: the thresholds are containments, candidates come from
        /// [`crate::candidates::containment`] with this banding of each size class offset, and
        /// `banding` is that of documents of one size class (resolved once, when validated).
        containment: Option<Scheme>,
    },
    /// SimHash fingerprints and pieces.
    SimHash {
        /// Largest Hamming distance of a candidate (what the pieces guarantee to find).
        max_distance: u32,
        /// Largest distance of a reported pair (`--min-similarity` may lower it).
        report_distance: u32,
        /// The fingerprint's pieces (shift, width) for `max_distance`, resolved once.
        pieces: Vec<(u32, u32)>,
    },
}

/// How MinHash candidates are verified (`--verify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Exact Jaccard of the shingle sets.
    Exact,
    /// The signatures' estimate.
    Estimate,
    /// Token edit similarity ([`crate::verify::edit`]).
    Edit,
}

impl Verify {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Verify::Exact => "exact",
            Verify::Estimate => "estimate",
            Verify::Edit => "edit",
        }
    }
}

/// How the report is written (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One pretty-printed JSON document.
    Json,
    /// JSON Lines: header, clusters, errors, summary.
    Jsonl,
    /// Human-readable blocks, one per cluster.
    Text,
    /// The removable duplicates' paths, one per line, or NUL-separated (`null`).
    Paths {
        /// `-0`: a NUL after each path.
        null: bool,
    },
    /// One Parquet table, a row per clustered document.
    Parquet,
}

/// How verified pairs become clusters (`--cluster`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterMode {
    /// Connected components of verified pairs.
    Components,
    /// Greedy centers: each member verified against the representative.
    Strict,
}

impl ClusterMode {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            ClusterMode::Components => "components",
            ClusterMode::Strict => "strict",
        }
    }
}

/// The format of the dataset `--write-dataset` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetFormat {
    /// A Parquet file per input, with the input's schema.
    Parquet,
    /// JSON Lines, a file per shard.
    Jsonl,
}

/// Which member represents a cluster (`--keep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepPolicy {
    /// First in path order.
    First,
    /// Most bytes.
    Largest,
    /// Fewest bytes.
    Smallest,
    /// Latest modification time.
    Newest,
    /// Earliest modification time.
    Oldest,
    /// Shortest path.
    ShortestPath,
    /// No member is kept: every member of a cluster is a duplicate. Members are ordered (for
    /// strict clusters' centers) as with `First`.
    None,
}

impl KeepPolicy {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            KeepPolicy::First => "first",
            KeepPolicy::Largest => "largest",
            KeepPolicy::Smallest => "smallest",
            KeepPolicy::Newest => "newest",
            KeepPolicy::Oldest => "oldest",
            KeepPolicy::ShortestPath => "shortest-path",
            KeepPolicy::None => "none",
        }
    }
}

/// `--keep-by FIELD[:max|:min]`: the dump record to keep, by a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeepBy {
    /// The field's path (as `--text-field`'s).
    pub field: Vec<String>,
    /// The greatest value is kept (`:max`), else the least.
    pub max: bool,
}

impl KeepBy {
    /// As the command line and the report write it: `quality:max`.
    pub fn name(&self) -> String {
        let order = if self.max { "max" } else { "min" };
        format!("{}:{order}", self.field.join("."))
    }
}

/// What `--against` (or `index build`) asks of the scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexUse {
    /// The index directory.
    pub dir: PathBuf,
    /// Write the new documents into the index after the scan.
    pub update: bool,
    /// `index build`: the index is created, and must not exist yet.
    pub create: bool,
    /// `--prune`: the update also drops documents whose files are gone.
    pub prune: bool,
}

/// Everything a scan needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// What to walk.
    pub walk: WalkOptions,
    /// `-` is an input: standard input, read apart from the walk ([`crate::input::stdin`]).
    pub stdin: bool,
    /// A table handed over in memory, by the name it is registered under
    /// ([`crate::input::table`]): the scan's one input, read apart from the walk, and the
    /// report's annotation of its rows returned ([`crate::scan::ScanOutput::annotations`]).
    /// Never set by the command line.
    pub table: Option<std::path::PathBuf>,
    /// Where a JSON Lines record's text and id are.
    pub jsonl: JsonlOptions,
    /// The index to scan against, or to build.
    pub against: Option<IndexUse>,
    /// Word or character shingles.
    pub shingle: ShingleKind,
    /// Shingle length.
    pub ngram: usize,
    /// `--normalize`'s steps, before the default normalization.
    pub normalize: Normalize,
    /// Method and its parameters.
    pub method: MethodConfig,
    /// Seed of every hash family.
    pub seed: u64,
    /// Worker threads (None: all cores).
    pub threads: Option<usize>,
    /// The memory budget in bytes (`--max-memory`, or the machine's default).
    pub max_memory: u64,
    /// Output format.
    pub format: OutputFormat,
    /// Where the report goes (standard output or `-o`), and the files never scanned for it.
    pub sink: crate::sink::Sink,
    /// Colour in the text format.
    pub color: bool,
    /// How verified pairs become clusters.
    pub cluster: ClusterMode,
    /// Which member represents a cluster.
    pub keep: KeepPolicy,
    /// `--keep-by`: the dump record to keep, by a field, before `keep`.
    pub keep_by: Option<KeepBy>,
    /// Evidence for each reported pair.
    pub pairs: bool,
    /// `--write-dataset`: where the deduplicated dataset goes.
    pub dataset: Option<PathBuf>,
    /// `--dataset-format`; None until the inputs are walked, when it is not given.
    pub dataset_format: Option<DatasetFormat>,
    /// `--annotate`: the prefix of the added columns (every document written).
    pub annotate: Option<String>,
    /// Exit 1 when duplicates were found.
    pub exit_code: bool,
    /// Diagnostics settings.
    pub messages: Messages,
}

/// A pool of `threads` workers; when None, of `RAYON_NUM_THREADS` (refused past `-j`'s bound:
/// rayon would try to start them all and abort), else all cores.
pub fn pool(threads: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let threads = match threads {
        Some(n) => Some(n),
        None => crate::cli::env::threads()?,
    };
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()?)
}

impl Config {
    /// The pool of `--threads` workers (all cores when not given) a run and its report use.
    pub fn pool(&self) -> anyhow::Result<rayon::ThreadPool> {
        pool(self.threads)
    }

    /// Signature values per document: K for MinHash, none kept for SimHash (one slot, unused,
    /// so that rows of the signature vector line up with documents).
    pub fn lanes(&self) -> usize {
        self.method.lanes()
    }

    /// True with `--containment`.
    pub fn containment(&self) -> bool {
        self.method.containment().is_some()
    }

    /// The MinHash verification, None for SimHash.
    pub fn verify(&self) -> Option<Verify> {
        self.method.verify()
    }
}

/// The configuration of `dupfind scan ARGS…`, as the binary would build it (for tests).
#[cfg(test)]
pub(crate) fn scan_config(args: &[&str]) -> anyhow::Result<Config> {
    use clap::Parser;
    let argv = ["dupfind", "scan"].iter().chain(args);
    match crate::cli::Cli::try_parse_from(argv)?.command {
        crate::cli::Command::Scan(cmd) => Config::for_scan(*cmd),
        _ => anyhow::bail!("not a scan"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
