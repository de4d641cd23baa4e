//! `dupfind scan`'s options (shared with `index build`) and the values they take.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

/// The headings of `scan --help`, in order (`-h` lists each option's first line under them).
pub const INPUT: &str = "Input";
/// Options that decide what counts as similar.
pub const SIMILARITY: &str = "Similarity";
/// Options that decide what is printed, and where.
pub const OUTPUT: &str = "Output";
/// Options that trade time and memory for recall.
pub const PERFORMANCE: &str = "Performance";

/// Options of `dupfind scan`. Serializable so that the staged pipeline's work directory can
/// hold the options every stage runs with; the inputs themselves are not (they are walked
/// once, by `stage init`, and stored as its list).
///
/// Each doc comment's first paragraph is the line `-h` shows; `--help` and the man page show
/// the whole comment.
#[derive(Debug, Args, Serialize, Deserialize)]
pub struct ScanArgs {
    /// Directories or files to scan [default: ., unless --files-from is given]; `-`: standard
    /// input.
    ///
    /// Standard input is one document (a dump with --jsonl), possibly compressed, reported as
    /// `-`; it is copied to a temporary file first, as it is read twice.
    #[arg(value_name = "PATH")]
    #[serde(skip)]
    pub paths: Vec<PathBuf>,

    /// Read the inputs from FILE, one per line ('-': standard input).
    ///
    /// The inputs may be files or directories. A listed input that is missing is reported as
    /// unreadable (exit status 2).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    #[serde(skip)]
    pub files_from: Option<PathBuf>,

    /// NUL-separated names: in the --files-from list, and printed by --format paths.
    ///
    /// For `find -print0` on the way in and `xargs -0` on the way out: a NUL is the one byte no
    /// file name holds. It applies to both where both are used.
    #[arg(short = '0', long = "null", help_heading = INPUT)]
    pub null: bool,

    /// Read every input file as JSON Lines, one document per line, or as Parquet when it
    /// starts with PAR1.
    ///
    /// Files named *.jsonl or *.ndjson, also with .gz, .zst, .bz2, .xz or .lz4, always are JSON
    /// Lines; files named *.parquet always are Parquet, one document per row. With `-` as an
    /// input, standard input is read as a dump.
    #[arg(long, help_heading = INPUT)]
    pub jsonl: bool,

    /// Which files are dumps: auto, never or always [default: auto].
    ///
    /// auto: files named *.jsonl, *.ndjson (also compressed) or *.parquet; never: every file is
    /// one document (a Parquet file then is binary, and skipped); always: every input, standard
    /// input too, is JSON Lines, or Parquet when it starts with PAR1 (as --jsonl).
    // Left out of -h, which stays within 80 lines; --help has it.
    #[arg(long, value_enum, value_name = "WHEN", hide_short_help = true, help_heading = INPUT)]
    pub dumps: Option<DumpsWhen>,

    /// JSON Lines and Parquet: the field (column) holding a document's text.
    ///
    /// A dotted path reaches into nested objects or struct columns (`body.text`).
    #[arg(long, value_name = "NAME", default_value = "text", help_heading = INPUT)]
    pub text_field: String,

    /// JSON Lines and Parquet: the field (column) naming a document.
    ///
    /// A string or number; dotted paths as for --text-field. A record without it is named by its
    /// file and line (a Parquet row's line is its row number).
    #[arg(long, value_name = "NAME", default_value = "id", help_heading = INPUT)]
    pub id_field: String,

    /// Candidate method: MinHash bands (Jaccard) or SimHash pieces (Hamming).
    #[arg(short = 'm', long, value_enum, default_value_t = Method::Minhash, help_heading = SIMILARITY)]
    pub method: Method,

    /// Shingles of words (tokens) or of characters of the normalized text.
    ///
    /// Text is normalized first: lowercased, tokens at Unicode white space joined by single
    /// spaces.
    #[arg(long, value_enum, default_value_t = ShingleArg::Word, help_heading = SIMILARITY)]
    pub shingle: ShingleArg,

    /// Shingle length in words or characters.
    ///
    /// 5 for both: long enough that unrelated English texts share almost no shingles, short
    /// enough that one edited word disturbs only 5.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 5, help_heading = SIMILARITY)]
    pub ngram: usize,

    /// Steps before lowercasing: any of nfkc, accents, digits, punct (comma-separated).
    ///
    /// Applied to the text before the default normalization, in that order whatever order they
    /// are given in: nfkc: Unicode compatibility forms (NFKC: full-width letters, ligatures,
    /// superscripts); accents: diacritics removed (NFD, nonspacing marks dropped, NFC); digits:
    /// every decimal digit becomes 0; punct: punctuation removed (Unicode P*, and ASCII's
    /// symbols). none: the default alone. An index keeps the steps it was built with.
    // Left out of -h, which stays within 80 lines; --help has it.
    #[arg(
        long,
        value_enum,
        value_name = "STEPS",
        value_delimiter = ',',
        hide_short_help = true,
        help_heading = SIMILARITY
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub normalize: Vec<NormalizeArg>,

    /// Jaccard similarity a pair must reach (MinHash), in (0, 1] [default: 0.8].
    #[arg(short = 't', long, value_name = "J", help_heading = SIMILARITY)]
    pub threshold: Option<f64>,

    /// MinHash signature length K [default: 128].
    ///
    /// Longer signatures estimate more finely and cost more time and memory (4 bytes per value
    /// per document).
    #[arg(short = 'k', long = "num-perm", value_name = "K", help_heading = PERFORMANCE)]
    pub num_perm: Option<usize>,

    /// Find excerpts: documents mostly contained in a larger one.
    ///
    /// --threshold is then the containment |A∩B|/|A| of the smaller document A, and each pair
    /// says which document is contained in which. Candidates are banded per pair of size
    /// classes, so an excerpt down to 10 % of its source is found.
    #[arg(long, help_heading = SIMILARITY)]
    pub containment: bool,

    /// Number of LSH bands b (default: chosen from --threshold).
    #[arg(long, value_name = "B", help_heading = PERFORMANCE)]
    pub bands: Option<usize>,

    /// Rows (signature values) per band r (default: chosen from --threshold).
    #[arg(long, value_name = "R", help_heading = PERFORMANCE)]
    pub rows: Option<usize>,

    /// MinHash sketch: oph, kperm or bottom-k [default: oph].
    ///
    /// One-permutation hashing with optimal densification, K permutations, or bottom-k (OPH
    /// bands, plus the K smallest shingle hashes of each document for every Jaccard estimate:
    /// K×8 more bytes per document).
    #[arg(long, value_enum, help_heading = PERFORMANCE)]
    pub sketch: Option<SketchArg>,

    /// SimHash: largest Hamming distance (of 64 bits) of a duplicate pair [default: 3].
    #[arg(long, value_name = "D", help_heading = SIMILARITY)]
    pub max_distance: Option<u32>,

    /// MinHash: how candidates are checked: exact, estimate or edit [default: exact].
    ///
    /// exact: Jaccard of the real shingle sets; estimate: the signatures' estimate; edit: token
    /// edit similarity 1 − distance/longer (an LCS, quadratic per pair; documents over 20,000
    /// tokens fall back to exact Jaccard). (SimHash always checks the Hamming distance of the
    /// fingerprints.)
    #[arg(long, value_enum, help_heading = SIMILARITY)]
    pub verify: Option<VerifyArg>,

    /// Seed of the hash families.
    ///
    /// The same input and seed give the same output, whatever the thread count.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = SIMILARITY)]
    pub seed: u64,

    /// Worker threads, 1 to 1024 [default: RAYON_NUM_THREADS, or all cores].
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=super::env::MOST_THREADS as i64), help_heading = PERFORMANCE)]
    pub threads: Option<u32>,

    /// Memory budget, at least 64M [default: 3/4 of RAM].
    ///
    /// The default is three quarters of physical memory, or of the cgroup's limit when lower.
    /// Documents being read and sketched, the decoders of compressed input and the signatures
    /// of every document share it: a worker waits while the documents in flight would exceed it;
    /// a document that alone needs more (about 11 bytes per byte of text, 17 with --shingle
    /// char, more when its shingles are sorted into a set) is an input error; a zstd window or
    /// xz dictionary may be an eighth of it (at most 128 MiB); a corpus whose signatures need
    /// more stops with what to change. Output never depends on it.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, help_heading = PERFORMANCE)]
    #[serde(default)]
    pub max_memory: Option<u64>,

    /// Output format [default: text on a terminal, else json].
    ///
    /// json: one document; jsonl: one typed record per line; text: one block per cluster for
    /// people reading in a terminal; paths: the removable duplicates, one path per line (with
    /// -0, NUL-separated), their exact bytes; parquet: one table, a row per clustered document,
    /// for joins in DuckDB or Spark (to -o FILE or a pipe, never a terminal). Without --format,
    /// a terminal gets text and a pipe or file gets json.
    #[arg(long, value_enum, help_heading = OUTPUT)]
    pub format: Option<Format>,

    /// Write the report to FILE instead of standard output, atomically.
    ///
    /// The report is written to a new file in FILE's directory, synced and renamed over FILE,
    /// so FILE is the old report or the whole new one, never half of one; a new FILE gets mode
    /// 0666 less the umask. FILE, and the files standard output and standard error point to,
    /// are never scanned. A FIFO or device (/dev/stdout) is written directly. '-' is standard
    /// output.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = OUTPUT)]
    #[serde(skip)]
    pub output: Option<PathBuf>,

    /// strict or components [default: strict; components with --containment].
    ///
    /// strict: every duplicate verified against its cluster's representative (a document whose
    /// partners were all taken is listed as `linked`); components: every
    /// document linked by a chain of verified pairs, for exploring groups (members not verified
    /// against the representative are listed as `linked`, never as `duplicates`).
    #[arg(long, value_enum, help_heading = OUTPUT)]
    pub cluster: Option<ClusterArg>,

    /// The member to keep, the representative.
    ///
    /// The others are its `duplicates`. oldest: the earliest modification time, since a copy is
    /// made after its original; ties (and files without a time) in path order. none: no member
    /// is kept, every member of a cluster is a duplicate (the report's `representative` is
    /// null).
    #[arg(long, value_enum, default_value_t = KeepArg::Oldest, help_heading = OUTPUT)]
    pub keep: KeepArg,

    /// Keep the dump record of greatest FIELD (FIELD:min: of least).
    ///
    /// FIELD[:max|:min]: FIELD is a field of JSON Lines records or a Parquet column, dotted into objects and
    /// structs as --text-field takes it: numbers, strings, booleans, timestamps and dates
    /// compare. Ties, and records without a value, follow --keep. With --against an indexed
    /// document still represents its cluster (the index stores no fields).
    #[arg(long, value_name = "FIELD", help_heading = OUTPUT)]
    #[serde(default)]
    pub keep_by: Option<String>,

    /// Colour in the text format: auto, always or never [default: auto].
    ///
    /// auto: when the report goes to a terminal and NO_COLOR is not set (or is empty). always
    /// and never need the text format: on a terminal, or with --format text.
    #[arg(long, value_enum, help_heading = OUTPUT)]
    pub color: Option<ColorWhen>,

    /// Write the deduplicated dataset to DIR.
    ///
    /// Every document with text but the duplicates: a JSON Lines record as its original line, a
    /// Parquet row with all its columns, a file as {"path", "text"}. DIR must not hold a dataset
    /// already. See also --dataset-format and --annotate.
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    #[serde(skip)]
    pub write_dataset: Option<PathBuf>,

    /// The dataset's format: parquet or jsonl [default: parquet when every input is a Parquet
    /// dump, else jsonl].
    ///
    /// parquet: a part file per input, DIR/part-SSSSS-NNNNN-NAME.parquet (in the input's
    /// key=value partition directories), with the input's schema (JSON Lines dumps are
    /// refused); jsonl: DIR/part-SSSSS.jsonl, a Parquet row as an object of
    /// all its columns.
    // This and --annotate's two are left out of -h, which stays within 80 lines; --help has them.
    #[arg(long, value_enum, value_name = "FORMAT", requires = "write_dataset", hide_short_help = true, help_heading = OUTPUT)]
    pub dataset_format: Option<DatasetFormatArg>,

    /// Write every document to the dataset, none dropped, with its cluster in five added
    /// columns.
    ///
    /// dupfind_cluster, dupfind_cluster_size, dupfind_keep, dupfind_duplicate_of and
    /// dupfind_similarity (docs/output.md); filtering on dupfind_keep gives the deduplicated
    /// dataset. Needs --write-dataset.
    #[arg(long, requires = "write_dataset", hide_short_help = true, help_heading = OUTPUT)]
    pub annotate: bool,

    /// The prefix of --annotate's columns [default: dupfind_].
    #[arg(long, value_name = "P", requires = "annotate", hide_short_help = true, help_heading = OUTPUT)]
    pub annotate_prefix: Option<String>,

    /// Evidence for each reported pair (json, jsonl and text).
    ///
    /// Exact and estimated similarity, shared shingles, the band or piece that made it a
    /// candidate.
    #[arg(long, help_heading = OUTPUT)]
    pub pairs: bool,

    /// Report only pairs at least this similar: a bound above --threshold.
    ///
    /// Jaccard; SimHash: 1 − distance/64. A stricter bound than the threshold the banding is
    /// tuned for; one below it could not report more, and is refused.
    #[arg(long, value_name = "J", help_heading = SIMILARITY)]
    pub min_similarity: Option<f64>,

    /// Exit with status 1 when duplicates were found.
    ///
    /// 0 when none were found (and every input was read), for cron jobs.
    #[arg(long, help_heading = OUTPUT)]
    pub exit_code: bool,

    /// Only scan files matching GLOB, or inside a matching directory (repeatable).
    ///
    /// A GLOB without '/' matches a name at any depth; with '/', the path below the root. '*'
    /// stays within one name, '**' spans directories.
    #[arg(long, value_name = "GLOB", help_heading = INPUT)]
    pub include: Vec<String>,

    /// Skip files and directories matching GLOB (repeatable).
    ///
    /// The same rules as --include.
    #[arg(long, value_name = "GLOB", help_heading = INPUT)]
    pub exclude: Vec<String>,

    /// Skip files smaller than BYTES (64K, 1.5M: powers of 1024).
    ///
    /// K, M, G and T, with an optional B or iB, are powers of 1024; a fraction of one is
    /// rounded down to a whole byte.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "0", help_heading = INPUT)]
    pub min_size: u64,

    /// Skip files larger than this, with a warning.
    ///
    /// It bounds the memory a file can take; for a compressed file it is the size of its
    /// decompressed content, and for a JSON Lines dump the size of each line.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "32M", help_heading = INPUT)]
    pub max_size: u64,

    /// Follow symbolic links (never out of the roots).
    ///
    /// Loops are detected; a link leading outside every root is skipped.
    #[arg(short = 'L', long, help_heading = INPUT)]
    pub follow_links: bool,

    /// Scan hidden files and directories too (never .git).
    ///
    /// Hidden: a name starting with '.'. As in ripgrep and fd, hidden entries below a root are
    /// skipped by default and counted in stats.skipped.hidden; a root named on the command line or in --files-from is scanned
    /// whatever its name. A hidden name that an ignore file whitelists ('!.env') is scanned.
    #[arg(long, help_heading = INPUT)]
    #[serde(default)]
    pub hidden: bool,

    /// Don't honour ignore files: .gitignore, .ignore and .git/info/exclude.
    ///
    /// By default, as in ripgrep, entries matched by them are skipped and counted in
    /// stats.skipped.ignored: .ignore files anywhere, .gitignore and .git/info/exclude inside a
    /// git repository (a directory with .git at or above it), including those of the roots'
    /// parent directories; the deepest matching pattern decides and '!' re-includes. The global
    /// git excludes file is not read.
    #[arg(long, help_heading = INPUT)]
    #[serde(default)]
    pub no_ignore: bool,

    /// -u: --no-ignore; -uu: --no-ignore --hidden.
    #[arg(short = 'u', long, action = clap::ArgAction::Count, help_heading = INPUT)]
    #[serde(default)]
    pub unrestricted: u8,

    /// Scan at most N levels below each root (0: the roots alone).
    ///
    /// As in ripgrep and fd: 1 scans the files directly in each root directory, 0 only the
    /// roots that are files.
    #[arg(long, value_name = "N", help_heading = INPUT)]
    #[serde(default)]
    pub max_depth: Option<usize>,

    /// Only scan files named *.EXT, in any case (repeatable).
    ///
    /// As fd's -e: '-e txt -e md' keeps a.txt and b.MD; a leading dot is dropped. A name may add a compression suffix
    /// (.gz, .zst, .zstd, .bz2, .xz, .lz4), since dupfind reads the text inside: -e txt keeps
    /// a.txt.gz, and -e gz keeps it too. Roots named on the command line are scanned whatever
    /// their name.
    #[arg(short = 'e', long = "extension", value_name = "EXT", help_heading = INPUT)]
    #[serde(default)]
    pub extension: Vec<String>,

    /// No warnings or progress on stderr (but a line on exit status 2).
    ///
    /// When some input could not be read (exit status 2), one line still says how many.
    #[arg(short, long, conflicts_with = "verbose", help_heading = OUTPUT)]
    pub quiet: bool,

    /// Notes on stderr too: the banding chosen, the dataset written.
    #[arg(short, long, help_heading = OUTPUT)]
    #[serde(default)]
    pub verbose: bool,

    /// Progress bar on stderr: auto (a terminal), never or always.
    ///
    /// Drawn once a run has taken a second; into a log, a plain line a second and a line of
    /// totals.
    #[arg(long, value_enum, default_value_t = ProgressWhen::Auto, help_heading = OUTPUT)]
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

/// A `--normalize` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NormalizeArg {
    /// No step: the default normalization alone.
    None,
    /// Unicode compatibility forms (NFKC).
    Nfkc,
    /// Diacritics removed.
    Accents,
    /// Every decimal digit becomes 0.
    Digits,
    /// Punctuation removed.
    Punct,
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
    /// One Parquet table, a row per clustered document (needs -o or a pipe).
    Parquet,
}

/// `--dumps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DumpsWhen {
    /// By name: *.jsonl, *.ndjson, *.parquet.
    Auto,
    /// No file is a dump.
    Never,
    /// Every input is a dump.
    Always,
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

/// `--dataset-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetFormatArg {
    /// Parquet, with the input's schema.
    Parquet,
    /// JSON Lines.
    Jsonl,
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
    /// No member: every member of a cluster is a duplicate.
    None,
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
