//! The command line, as clap sees it. Nothing here is used past `Config::from_args`, but for
//! the help texts (`help`), the man pages (`man`) and the hints added to clap's errors (`hints`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod env;
pub(crate) mod help;
mod hints;
pub(crate) mod man;
mod scan_args;

pub use hints::try_parse_from;
pub use scan_args::*;

/// Parses the process's command line; on an error, prints it (with its hints) and exits with
/// status 2 (0 for `--help` and `--version`).
pub fn parse() -> Cli {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    try_parse_from(&args).unwrap_or_else(|e| e.exit())
}

/// Find near-duplicate documents: MinHash or SimHash candidates, verified exactly.
#[derive(Debug, Parser)]
#[command(name = "dupfind", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find groups of near-duplicate documents under PATHs and report them.
    ///
    /// The report is text on a terminal and JSON in a pipe or file (--format); `-h` lists the
    /// options, `--help` explains them.
    #[command(after_long_help = help::scan_after_help())]
    Scan(Box<ScanCommand>),
    /// Build or inspect an incremental index, for `scan --against`.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Run one stage of the staged pipeline, for job arrays and Spark: init, then sign per
    /// shard, group per partition, components, route per shard, verify per partition, report.
    /// The report equals `scan`'s. See docs/staged.md.
    #[command(subcommand)]
    Stage(StageCommand),
    /// Explain what a threshold and banding (or a SimHash distance) do: the S-curve, the
    /// expected misses and chance candidates, memory per document. Uses scan's own code.
    Explain(ExplainArgs),
    /// Remove the duplicates a JSON report lists, each checked first to be the file the report
    /// describes (device, inode, size, modification time, content hash).
    ///
    /// Acts only on `duplicates` that are files the scan read, every name of each (hard links
    /// included): never a representative, a linked member, a dump record, an indexed document
    /// or standard input. stdout: one `rm` line per name removed (with --dry-run, that would
    /// be); stderr: what was skipped and why, and the files and bytes freed. Exit status 2 when
    /// a file had changed since the scan (skipped) or an action failed.
    Remove(ActArgs),
    /// Move the duplicates a JSON report lists to DIR, each at its path below its root
    /// (`a/b.txt` scanned as `docs/a/b.txt` with root `docs` goes to `DIR/a/b.txt`; with
    /// several directory roots, below a subdirectory named after its root: `DIR/docs/a/b.txt`;
    /// a file named on the command line or listed by --files-from to `DIR/NAME`), checked
    /// first as `remove` checks it. A file is never moved over one at its destination: that
    /// one is reported and left, and the exit status is 2; two names with one destination
    /// are refused before anything is moved.
    Move(MoveArgs),
    /// Replace the exact copies a JSON report lists by hard links to their representative,
    /// atomically (linked under a temporary name in the same directory, renamed over it).
    ///
    /// Only `duplicates` marked `exact`, byte-identical to the representative as stored and on
    /// its file system; the representative is checked unchanged too. Otherwise as `remove`.
    Link(ActArgs),
    /// Print shell completions for SHELL on stdout.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) on stdout: `dupfind man > dupfind.1`,
    /// `dupfind man scan > dupfind-scan.1`.
    Man {
        /// The subcommand whose page to print (default: the overview page).
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
}

/// `dupfind remove` and `link`: the report to act on.
#[derive(Debug, Args)]
pub struct ActArgs {
    /// The JSON report of `dupfind scan` (`--format json`, the default in a pipe); `-` reads
    /// standard input. Paths in it are as the scan printed them: relative ones are taken from
    /// the current directory, so run it where the scan ran.
    #[arg(value_name = "REPORT")]
    pub report: PathBuf,
    /// Check every file and print what would be done, one line per name; change nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
}

/// `dupfind move`: the report and the directory to move to.
#[derive(Debug, Args)]
pub struct MoveArgs {
    #[command(flatten)]
    pub act: ActArgs,
    /// The directory to move the duplicates into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
}

/// `dupfind stage …`: every stage reads and writes files in the work directory DIR.
#[derive(Debug, Subcommand)]
pub enum StageCommand {
    /// Check the options, walk the inputs once and plan the run in DIR (which must not hold
    /// one): N shards to sign, M partitions to group and verify.
    Init(Box<StageInitArgs>),
    /// Sign shard I of N: read, shingle and sketch its inputs; write its documents and keys.
    Sign {
        #[command(flatten)]
        task: StageTask,
        /// The shard, as I/N (0-based: 0/4 to 3/4).
        #[arg(long, value_name = "I/N", value_parser = parse_index)]
        shard: (u32, u32),
    },
    /// Group partition J of M: the buckets of its keys.
    Group {
        #[command(flatten)]
        task: StageTask,
        /// The partition, as J/M.
        #[arg(long, value_name = "J/M", value_parser = parse_index)]
        part: (u32, u32),
    },
    /// With --against: the indexed documents the new ones meet, numbered first (one process).
    Attach {
        #[command(flatten)]
        task: StageTask,
    },
    /// Find the candidate components and deal them out to the partitions (one process).
    Components {
        #[command(flatten)]
        task: StageTask,
    },
    /// Route shard I of N: send its candidates, with their texts, to their partitions.
    Route {
        #[command(flatten)]
        task: StageTask,
        /// The shard, as I/N.
        #[arg(long, value_name = "I/N", value_parser = parse_index)]
        shard: (u32, u32),
    },
    /// Verify partition K of M and build its clusters.
    Verify {
        #[command(flatten)]
        task: StageTask,
        /// The partition, as K/M.
        #[arg(long, value_name = "K/M", value_parser = parse_index)]
        part: (u32, u32),
    },
    /// With --write-dataset: write shard I's part of the deduplicated dataset (nothing to do
    /// otherwise).
    Dataset {
        #[command(flatten)]
        task: StageTask,
        /// The shard, as I/N.
        #[arg(long, value_name = "I/N", value_parser = parse_index)]
        shard: (u32, u32),
    },
    /// Print the report, as `scan` would have, with its exit status.
    Report {
        /// The work directory.
        #[arg(long, value_name = "DIR")]
        work: PathBuf,
    },
    /// Say what is done, what is missing, damaged or stale, and what to run next.
    Status {
        /// The work directory.
        #[arg(long, value_name = "DIR")]
        work: PathBuf,
        /// Print only the tasks of STAGE (sign, group, components, route, verify, dataset)
        /// that are not done, one index a line: what a driver runs again to resume.
        #[arg(long, value_name = "STAGE")]
        todo: Option<String>,
    },
}

/// What every stage but `init` and `report` takes: the work directory and its threads.
#[derive(Debug, Args)]
pub struct StageTask {
    /// The work directory.
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Worker threads of this task [default: the run's --threads, else one per core]; a job
    /// array sets it to the cores each task is given (SLURM_CPUS_PER_TASK). The output does not
    /// depend on it.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=env::MOST_THREADS as i64))]
    pub threads: Option<u32>,
}

/// Options of `dupfind stage init`.
#[derive(Debug, Args)]
pub struct StageInitArgs {
    /// The work directory (made if missing; must not hold a run).
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Shards the inputs are signed in.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub shards: u32,
    /// Partitions of the keys and of the candidates.
    #[arg(long, value_name = "M", default_value_t = 1)]
    pub parts: u32,
    /// Compare with the index in DIR, as `scan --against` does (the index must be at the same
    /// path for the init, sign, attach, verify and report tasks).
    #[arg(long, value_name = "DIR")]
    pub against: Option<PathBuf>,
    /// With --against: add the new documents to the index, as `scan --update` does: each sign
    /// task packs its shard's, and `stage report` commits them once its report is delivered.
    #[arg(long, requires = "against")]
    pub update: bool,
    /// With --update: also drop the indexed documents whose files are gone.
    #[arg(long, requires = "update")]
    pub prune: bool,
    /// When DIR holds a run already: leave it as it is if it is the run these options would
    /// start (the same shards, partitions, scan options, inputs and index), and refuse it naming
    /// what differs otherwise (`contrib/staged/run-local.sh --resume` runs this).
    #[arg(long)]
    pub resume: bool,
    /// The scan's options and inputs.
    #[command(flatten)]
    pub scan: ScanArgs,
}

/// Parses `I/N` into (I, N), checking I < N.
fn parse_index(s: &str) -> Result<(u32, u32), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not I/N (a 0-based index and a count, as 0/4)"))?;
    let i: u32 = i.parse().map_err(|_| format!("'{i}' is not an index"))?;
    let n: u32 = n.parse().map_err(|_| format!("'{n}' is not a count"))?;
    if i >= n {
        return Err(format!(
            "{i}/{n}: the index must be below the count (0 to {})",
            n.saturating_sub(1)
        ));
    }
    Ok((i, n))
}

/// `dupfind index …`.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Scan PATHs as `scan` does (same options, same report) and record every document's
    /// identity, signature and content in a new index in DIR.
    // Standard input has no path to check again on a later scan, so it is not offered here.
    #[command(mut_arg("paths", |a| a
        .help("Directories or files to scan [default: ., unless --files-from is given]")
        .long_help("Directories or files to scan [default: ., unless --files-from is given]. Not \
            `-`: standard input has no path to check again, so it cannot go into an index.")))]
    Build(Box<IndexBuildArgs>),
    /// Check an index (every checksum) and print its parameters, generation, segments, size
    /// and what `index prune` would drop, as JSON.
    Info {
        /// The index directory.
        #[arg(long, value_name = "DIR")]
        index: PathBuf,
    },
    /// Merge an index's segments into one, dropping removed documents (updates also merge
    /// by themselves past 16 segments).
    Compact {
        /// The index directory.
        #[arg(long, value_name = "DIR")]
        index: PathBuf,
    },
    /// Drop the documents whose files are gone from an index.
    Prune {
        /// The index directory.
        #[arg(long, value_name = "DIR")]
        index: PathBuf,
    },
    /// Rewrite a format-1 index (one index.dfx, made before segments) as segments; an update
    /// does this by itself.
    Upgrade {
        /// The index directory.
        #[arg(long, value_name = "DIR")]
        index: PathBuf,
    },
}

/// Options of `dupfind index build`.
#[derive(Debug, Args)]
pub struct IndexBuildArgs {
    /// The directory to create the index in (made if missing; must not hold an index).
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// The scan that fills it.
    #[command(flatten)]
    pub scan: ScanArgs,
}

/// `dupfind scan`: the scan's options and the index to scan against.
#[derive(Debug, Args)]
pub struct ScanCommand {
    /// Everything `scan` shares with `index build`.
    #[command(flatten)]
    pub scan: ScanArgs,

    /// Also compare with the index in DIR (`dupfind index build`).
    ///
    /// Inputs the index holds unchanged (same path, size, modification and status change times,
    /// and inode) are not read again.
    #[arg(long, value_name = "DIR", help_heading = INPUT)]
    pub against: Option<PathBuf>,

    /// With --against: add the new documents to the index.
    ///
    /// Once the report is delivered, atomically; nothing is written when nothing changed.
    #[arg(long, requires = "against", help_heading = INPUT)]
    pub update: bool,

    /// With --update: also drop the indexed documents whose files are gone.
    #[arg(long, requires = "update", help_heading = INPUT)]
    pub prune: bool,
}

/// Options of `dupfind explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Candidate method.
    #[arg(short = 'm', long, value_enum, default_value_t = Method::Minhash)]
    pub method: Method,

    /// Jaccard threshold (MinHash) [default: 0.8].
    #[arg(short = 't', long, value_name = "J")]
    pub threshold: Option<f64>,

    /// MinHash signature length K [default: 128].
    #[arg(short = 'k', long = "num-perm", value_name = "K")]
    pub num_perm: Option<usize>,

    /// Number of LSH bands b (default: chosen from --threshold, as scan does).
    #[arg(long, value_name = "B")]
    pub bands: Option<usize>,

    /// Rows per band r (default: chosen from --threshold).
    #[arg(long, value_name = "R")]
    pub rows: Option<usize>,

    /// SimHash: largest Hamming distance [default: 3].
    #[arg(long, value_name = "D")]
    pub max_distance: Option<u32>,

    /// SimHash: corpus size for the expected chance candidates per document.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub docs: u64,

    /// The steps scan's --normalize would apply, shown in the order applied.
    #[arg(long, value_enum, value_name = "STEPS", value_delimiter = ',')]
    pub normalize: Vec<NormalizeArg>,

    /// text for people, json for programs.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
}

/// `explain --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    /// Aligned text with the S-curve drawn.
    Text,
    /// One JSON document.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1234"), Ok(1234));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("32MiB"), Ok(32 << 20));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn parses_decimal_sizes_rounding_down_to_a_byte() {
        assert_eq!(parse_size("1.5M"), Ok(3 << 19));
        assert_eq!(parse_size("0.5G"), Ok(1 << 29));
        assert_eq!(parse_size(".5K"), Ok(512));
        assert_eq!(parse_size("1.1K"), Ok(1126), "1126.4 rounded down");
        assert_eq!(parse_size("2. k"), Ok(2048));
        assert_eq!(parse_size("1.0"), Ok(1), "a whole number of bytes");
        assert_eq!(parse_size("16777215.999999T"), Ok(u64::MAX - 1_099_511));
    }

    #[test]
    fn size_errors_say_what_is_wrong() {
        for (given, says) in [
            (
                "",
                "a size is a number of bytes, or a number with K, M, G or T",
            ),
            (
                "1.5",
                "'1.5': a number of bytes is a whole number (a fraction needs a unit: 1.5K)",
            ),
            (
                "12X",
                "'12X': unknown unit 'X' (use K, M, G or T (powers of 1024",
            ),
            ("1,5M", "unknown unit ',5M'"),
            ("-1", "'-1': a size cannot be negative"),
            ("M", "'M' does not start with a number"),
            ("1.2.3M", "'1.2.3M': '1.2.3' is not a number"),
            (
                "16777216T",
                "'16777216T' is too large (more than 2^64 − 1 bytes)",
            ),
            ("99999999999999999999999999999999999999999", "is too large"),
        ] {
            let e = parse_size(given).expect_err(given);
            assert!(e.contains(says), "{given}: {e}");
        }
    }
}
