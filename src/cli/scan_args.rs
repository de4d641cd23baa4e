//! `dupfind scan`'s options (shared with `index build`) and the values they take.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

/// Options of `dupfind scan`. Serializable so that the staged pipeline's work directory can
/// hold the options every stage runs with; the inputs themselves are not (they are walked
/// once, by `stage init`, and stored as its list).
#[derive(Debug, Args, Serialize, Deserialize)]
pub struct ScanArgs {
    /// Directories or files to scan [default: ., unless --files-from is given].
    #[arg(value_name = "PATH")]
    #[serde(skip)]
    pub paths: Vec<PathBuf>,

    /// Read the inputs (files or directories) from FILE, one per line; '-' reads standard
    /// input. A listed input that is missing is reported as unreadable (exit status 2).
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub files_from: Option<PathBuf>,

    /// NUL-separated names: in the --files-from list (`find -print0`), and printed by --format
    /// paths (`xargs -0`); a NUL is the one byte no file name holds.
    #[arg(short = '0', long = "null")]
    pub null: bool,

    /// Read every input file as JSON Lines, one document per line (files named *.jsonl or
    /// *.ndjson, also with .gz or .zst, always are).
    #[arg(long)]
    pub jsonl: bool,

    /// JSON Lines: the field holding a document's text; a dotted path reaches into nested
    /// objects (`body.text`).
    #[arg(long, value_name = "NAME", default_value = "text")]
    pub text_field: String,

    /// JSON Lines: the field naming a document (a string or number; dotted paths as for
    /// --text-field). A record without it is named by its file and line.
    #[arg(long, value_name = "NAME", default_value = "id")]
    pub id_field: String,

    /// Candidate method: MinHash LSH bands (Jaccard) or SimHash pieces (Hamming).
    #[arg(short = 'm', long, value_enum, default_value_t = Method::Minhash)]
    pub method: Method,

    /// Shingles of words (tokens) or of characters of the normalized text.
    #[arg(long, value_enum, default_value_t = ShingleArg::Word)]
    pub shingle: ShingleArg,

    /// Shingle length in words or characters (5 for both: long enough that unrelated English
    /// texts share almost no shingles, short enough that one edited word disturbs only 5).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 5)]
    pub ngram: usize,

    /// Jaccard similarity a pair must reach (MinHash), in (0, 1] [default: 0.8].
    #[arg(short = 't', long, value_name = "J")]
    pub threshold: Option<f64>,

    /// MinHash signature length K [default: 128].
    #[arg(short = 'k', long = "num-perm", value_name = "K")]
    pub num_perm: Option<usize>,

    /// Find documents mostly contained in a larger one (an excerpt in its source): --threshold
    /// is then the containment |A∩B|/|A| of the smaller document A, and each pair says which
    /// document is contained in which. Candidates are banded per pair of size classes, so an
    /// excerpt down to 10 % of its source is found.
    #[arg(long)]
    pub containment: bool,

    /// Number of LSH bands b (default: chosen from --threshold).
    #[arg(long, value_name = "B")]
    pub bands: Option<usize>,

    /// Rows (signature values) per band r (default: chosen from --threshold).
    #[arg(long, value_name = "R")]
    pub rows: Option<usize>,

    /// MinHash sketch: one-permutation hashing with optimal densification, K permutations, or
    /// bottom-k (OPH bands, plus the K smallest shingle hashes of each document for every Jaccard
    /// estimate: K×8 more bytes per document) [default: oph].
    #[arg(long, value_enum)]
    pub sketch: Option<SketchArg>,

    /// SimHash: largest Hamming distance (of 64 bits) of a duplicate pair [default: 3].
    #[arg(long, value_name = "D")]
    pub max_distance: Option<u32>,

    /// MinHash: exact Jaccard of the real shingle sets, the signatures' estimate, or edit: token
    /// edit similarity 1 − distance/longer (an LCS, quadratic per pair; documents over 20,000
    /// tokens fall back to exact Jaccard) [default: exact]. (SimHash always checks the Hamming
    /// distance of the fingerprints.)
    #[arg(long, value_enum)]
    pub verify: Option<VerifyArg>,

    /// Seed of the hash families; the same seed gives the same output.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,

    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,

    /// json: one document; jsonl: one typed record per line; text: one block per cluster for
    /// people reading in a terminal; paths: the removable duplicates, one path per line (with
    /// -0, NUL-separated), their exact bytes [default: text on a terminal, else json].
    #[arg(long, value_enum)]
    pub format: Option<Format>,

    /// Write the report to FILE instead of standard output, atomically (a new file in FILE's
    /// directory, synced and renamed over FILE; mode 0666 less the umask). FILE, and the files
    /// standard output and standard error point to, are never scanned. A FIFO or device
    /// (/dev/stdout) is written directly. '-' is standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    #[serde(skip)]
    pub output: Option<PathBuf>,

    /// Colour in the text format: auto (the report goes to a terminal and NO_COLOR is not set
    /// or empty), always or never (these need the text format) [default: auto].
    #[arg(long, value_enum)]
    pub color: Option<ColorWhen>,

    /// strict: every member verified against its cluster's representative; components: every
    /// document linked by a chain of verified pairs, for exploring groups (members not verified
    /// against the representative are listed as `linked`, never as `duplicates`) [default:
    /// strict; components with --containment].
    #[arg(long, value_enum)]
    pub cluster: Option<ClusterArg>,

    /// Which member represents a cluster (the one to keep); the others are its `duplicates`.
    /// oldest: the earliest modification time, since a copy is made after its original; ties
    /// (and files without a time) in path order.
    #[arg(long, value_enum, default_value_t = KeepArg::Oldest)]
    pub keep: KeepArg,

    /// Write the deduplicated dataset to DIR: every document with text but the duplicates, as
    /// JSON Lines (a dump's record as its original line, a file as {"path", "text"}).
    #[arg(long, value_name = "DIR")]
    #[serde(skip)]
    pub write_dataset: Option<PathBuf>,

    /// Evidence for each reported pair (json, jsonl and text): exact and estimated similarity,
    /// shared shingles, the band or piece that made it a candidate.
    #[arg(long)]
    pub pairs: bool,

    /// Report only pairs at least this similar (Jaccard; SimHash: 1 − distance/64), a stricter
    /// bound than the threshold the banding is tuned for; one below it could not report more,
    /// and is refused.
    #[arg(long, value_name = "J")]
    pub min_similarity: Option<f64>,

    /// Exit with status 1 when duplicates were found (0 when none), for cron jobs.
    #[arg(long)]
    pub exit_code: bool,

    /// Only scan files matching GLOB, or inside a directory matching it (repeatable). A GLOB
    /// without '/' matches a name at any depth; with '/', the path below the root. '*' stays
    /// within one name, '**' spans directories.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,

    /// Skip files and directories matching GLOB (repeatable; same rules as --include).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,

    /// Skip files smaller than this (bytes; K, M, G, T are powers of 1024: 64K, 1.5M).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "0")]
    pub min_size: u64,

    /// Skip files larger than this, with a warning; bounds the memory a file can take.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "32M")]
    pub max_size: u64,

    /// Follow symbolic links (loops are detected; the walk stays inside the roots).
    #[arg(short = 'L', long)]
    pub follow_links: bool,

    /// No warnings or progress on stderr (but one line when the exit status is 2).
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Notes on stderr too: the banding chosen, the dataset written.
    #[arg(short, long)]
    #[serde(default)]
    pub verbose: bool,

    /// Progress bar on stderr; auto: only when stderr is a terminal.
    #[arg(long, value_enum, default_value_t = ProgressWhen::Auto)]
    pub progress: ProgressWhen,
}

/// `--method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// MinHash signatures, LSH bands, Jaccard.
    Minhash,
    /// 64-bit SimHash fingerprints, pieces, Hamming distance.
    Simhash,
}

/// `--shingle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShingleArg {
    /// N consecutive tokens.
    Word,
    /// N consecutive characters.
    Char,
}

/// `--sketch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SketchArg {
    /// One-permutation hashing, optimal densification.
    Oph,
    /// K independent hash functions.
    Kperm,
    /// OPH bands plus a bottom-k sketch for the estimates.
    BottomK,
}

/// `--verify`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyArg {
    /// Exact similarity of the documents.
    Exact,
    /// Estimated from the signatures.
    Estimate,
    /// Token-level edit similarity of the documents.
    Edit,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// One JSON document.
    Json,
    /// JSON Lines: header, clusters, errors, summary.
    Jsonl,
    /// Human-readable blocks, one per cluster.
    Text,
    /// The removable duplicates' paths, one per line (NUL-separated with -0).
    Paths,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `--cluster`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterArg {
    /// Connected components of verified pairs.
    Components,
    /// Greedy centers: each member verified against the representative.
    Strict,
}

/// `--keep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepArg {
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
}

/// `--progress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressWhen {
    /// Only when stderr is a terminal.
    Auto,
    /// Never.
    Never,
    /// Always.
    Always,
}

/// Parses a size in bytes: `1234`, `64K`, `1.5M`, `32MiB`, `0.5G` (K, M, G and T are powers of
/// 1024, with an optional `B` or `iB`, in any case). A fraction of a unit is rounded down to a
/// whole byte; a fraction of a byte is refused. Every error says what is wrong.
pub fn parse_size(s: &str) -> Result<u64, String> {
    const UNITS: &str = "K, M, G or T (powers of 1024: 64K, 1.5M, 2GiB)";
    let t = s.trim();
    if t.is_empty() {
        return Err(format!(
            "a size is a number of bytes, or a number with {UNITS}"
        ));
    }
    if t.starts_with('-') {
        return Err(format!("'{s}': a size cannot be negative"));
    }
    let number_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..number_end], t[number_end..].trim_start());
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(format!(
            "'{s}' does not start with a number (use 64K, 1.5M, …)"
        ));
    }
    if fraction.contains('.') {
        return Err(format!("'{s}': '{number}' is not a number"));
    }
    if fraction.len() > 20 {
        return Err(format!("'{s}': at most 20 digits after the decimal point"));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use {UNITS})")),
    };
    if shift == 0 && !fraction.trim_end_matches('0').is_empty() {
        return Err(format!(
            "'{s}': a number of bytes is a whole number (a fraction needs a unit: {number}K)"
        ));
    }
    let too_large = || format!("'{s}' is too large (more than 2^64 − 1 bytes)");
    // Digits only, so parsing fails only on overflow (or an empty part, which is 0).
    let whole: u128 = match whole {
        "" => 0,
        w => w.parse().map_err(|_| too_large())?,
    };
    let scaled = match fraction {
        "" => 0,
        f => {
            // f < 10^20 < 2^67, so f · 2^40 fits in a u128.
            let digits: u128 = f.parse().map_err(|_| too_large())?;
            (digits << shift) / 10u128.pow(f.len() as u32)
        }
    };
    let bytes = whole
        .checked_mul(1u128 << shift)
        .and_then(|b| b.checked_add(scaled))
        .ok_or_else(too_large)?;
    u64::try_from(bytes).map_err(|_| too_large())
}
