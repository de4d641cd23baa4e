//! Config: the validated scan settings, free of clap types. Every check of the command line's
//! values lives here, so a bad value is a clear error before any file is touched.

use std::io::IsTerminal;

use anyhow::{bail, Context, Result};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::cli::{
    ClusterArg, ColorWhen, Format, KeepArg, Method, ProgressWhen, ScanArgs, ShingleArg, SketchArg,
    VerifyArg,
};
use crate::lsh::{Banding, RECALL_WEIGHT};
use crate::messages::Messages;
use crate::minhash::SketchKind;
use crate::shingle::ShingleKind;
use crate::walk::WalkOptions;

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
        /// Exact Jaccard (true) or signature estimate (false).
        exact: bool,
        /// `--containment`: the thresholds are containments, candidates come from
        /// [`crate::containment`] and `banding` is that of documents of one size class.
        containment: bool,
    },
    /// SimHash fingerprints and pieces.
    SimHash {
        /// Largest Hamming distance of a candidate (what the pieces guarantee to find).
        max_distance: u32,
        /// Largest distance of a reported pair (`--min-similarity` may lower it).
        report_distance: u32,
    },
}

/// Everything a scan needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// What to walk.
    pub walk: WalkOptions,
    /// Word or character shingles.
    pub shingle: ShingleKind,
    /// Shingle length.
    pub ngram: usize,
    /// Method and its parameters.
    pub method: MethodConfig,
    /// Seed of every hash family.
    pub seed: u64,
    /// Worker threads (None: all cores).
    pub threads: Option<usize>,
    /// Output format.
    pub format: Format,
    /// Colour in the text format.
    pub color: bool,
    /// How verified pairs become clusters.
    pub cluster: ClusterArg,
    /// Which member represents a cluster.
    pub keep: KeepArg,
    /// Evidence for each reported pair.
    pub pairs: bool,
    /// Exit 1 when duplicates were found.
    pub exit_code: bool,
    /// Diagnostics settings.
    pub messages: Messages,
}

impl Config {
    /// Validates the command line.
    pub fn from_args(args: ScanArgs) -> Result<Config> {
        if args.containment {
            containment_conflicts(&args)?;
        }
        if args.ngram == 0 || args.ngram > MAX_NGRAM {
            bail!(
                "--ngram must be between 1 and {MAX_NGRAM}, not {}",
                args.ngram
            );
        }
        let method = match args.method {
            Method::Minhash => minhash_config(&args)?,
            Method::Simhash => {
                let minhash_only = [
                    ("--bands", args.bands.is_some()),
                    ("--rows", args.rows.is_some()),
                    ("--threshold", args.threshold.is_some()),
                    ("--num-perm", args.num_perm.is_some()),
                    ("--sketch", args.sketch.is_some()),
                    ("--verify", args.verify.is_some()),
                ];
                if let Some((flag, _)) = minhash_only.iter().find(|(_, given)| *given) {
                    bail!(
                        "{flag} applies to --method minhash; --method simhash is tuned with \
                         --max-distance"
                    );
                }
                let max_distance = args.max_distance.unwrap_or(DEFAULT_MAX_DISTANCE);
                if max_distance > 31 {
                    bail!("--max-distance must be between 0 and 31, not {max_distance}");
                }
                let report_distance = match min_similarity(&args)? {
                    // 1 − d/64 ≥ m  ⇔  d ≤ 64·(1 − m); the epsilon keeps 1 − 3/64 itself.
                    Some(m) => max_distance.min(((1.0 - m) * 64.0 + 1e-9).floor() as u32),
                    None => max_distance,
                };
                MethodConfig::SimHash {
                    max_distance,
                    report_distance,
                }
            }
        };
        if args.min_size > args.max_size {
            bail!(
                "--min-size ({}) is larger than --max-size ({})",
                args.min_size,
                args.max_size
            );
        }
        let progress = match args.progress {
            ProgressWhen::Always => true,
            ProgressWhen::Never => false,
            ProgressWhen::Auto => std::io::stderr().is_terminal(),
        };
        Ok(Config {
            walk: WalkOptions {
                roots: args.paths,
                follow_links: args.follow_links,
                include: globs(&args.include, "--include")?,
                exclude: globs(&args.exclude, "--exclude")?,
                min_size: args.min_size,
                max_size: args.max_size,
            },
            shingle: match args.shingle {
                ShingleArg::Word => ShingleKind::Word,
                ShingleArg::Char => ShingleKind::Char,
            },
            ngram: args.ngram,
            method,
            seed: args.seed,
            threads: args.threads.map(|t| t as usize),
            format: args.format,
            color: match args.color {
                ColorWhen::Always => true,
                ColorWhen::Never => false,
                ColorWhen::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            },
            cluster: args.cluster,
            keep: args.keep,
            pairs: args.pairs,
            exit_code: args.exit_code,
            messages: Messages {
                quiet: args.quiet,
                progress,
            },
        })
    }
}

fn minhash_config(args: &ScanArgs) -> Result<MethodConfig> {
    if args.max_distance.is_some() {
        bail!("--max-distance applies to --method simhash; --method minhash is tuned with --threshold");
    }
    let t = args.threshold.unwrap_or(DEFAULT_THRESHOLD);
    if !(t > 0.0 && t <= 1.0) {
        bail!("--threshold must be in (0, 1], not {t}");
    }
    let k = args.num_perm.unwrap_or(DEFAULT_NUM_PERM);
    if k == 0 || k > MAX_NUM_PERM {
        bail!("--num-perm must be between 1 and {MAX_NUM_PERM}, not {k}");
    }
    let exact = args.verify.unwrap_or(VerifyArg::Exact) == VerifyArg::Exact;
    let (banding, chosen) = match given_banding(args.bands, args.rows, k) {
        Some(given) => (given, false),
        None if args.containment => (crate::containment::Scheme::new(t, k).offsets[0], true),
        None => {
            let weight = if exact { RECALL_WEIGHT } else { 1.0 };
            (Banding::choose(t, k, weight), true)
        }
    };
    if banding.bands == 0 || banding.rows == 0 {
        bail!(
            "--bands and --rows must be at least 1 and --bands × --rows at most --num-perm ({k})"
        );
    }
    if banding.bands * banding.rows > k {
        bail!(
            "--bands {} × --rows {} = {} is more than --num-perm {k}: a signature has only {k} values",
            banding.bands,
            banding.rows,
            banding.bands * banding.rows
        );
    }
    let report_threshold = min_similarity(args)?.map_or(t, |m| m.max(t));
    Ok(MethodConfig::MinHash {
        report_threshold,
        sketch: match args.sketch.unwrap_or(SketchArg::Oph) {
            SketchArg::Oph => SketchKind::Oph,
            SketchArg::Kperm => SketchKind::Kperm,
        },
        num_perm: k,
        banding,
        banding_chosen: chosen,
        threshold: t,
        exact,
        containment: args.containment,
    })
}

/// Flags that make no sense with `--containment`.
fn containment_conflicts(args: &ScanArgs) -> Result<()> {
    if args.method == Method::Simhash {
        bail!(
            "--containment applies to --method minhash: a SimHash distance says nothing about how \
             much of one document is inside another"
        );
    }
    if args.verify == Some(VerifyArg::Estimate) {
        bail!(
            "--containment needs --verify exact: containment is computed on the shingle sets, as \
             a signature estimate at an excerpt's low Jaccard similarity is too coarse"
        );
    }
    if args.bands.is_some() || args.rows.is_some() {
        bail!(
            "--bands and --rows do not apply to --containment: its bands are chosen for each pair \
             of size classes"
        );
    }
    if args.cluster == ClusterArg::Strict {
        bail!(
            "--cluster strict does not apply to --containment: containment clusters are the \
             connected components of containment pairs, each represented by its largest document"
        );
    }
    Ok(())
}

/// The banding the user gave, if any: a lone `--bands` takes as many rows as fit in K, a lone
/// `--rows` as many bands (0 when K is too small, which validation then rejects).
pub fn given_banding(bands: Option<usize>, rows: Option<usize>, k: usize) -> Option<Banding> {
    match (bands, rows) {
        (None, None) => None,
        (Some(b), None) => Some(Banding {
            bands: b,
            rows: k.checked_div(b).unwrap_or(0),
        }),
        (None, Some(r)) => Some(Banding {
            bands: k.checked_div(r).unwrap_or(0),
            rows: r,
        }),
        (Some(b), Some(r)) => Some(Banding { bands: b, rows: r }),
    }
}

/// `--min-similarity`, checked.
fn min_similarity(args: &ScanArgs) -> Result<Option<f64>> {
    match args.min_similarity {
        Some(m) if !(m > 0.0 && m <= 1.0) => bail!("--min-similarity must be in (0, 1], not {m}"),
        m => Ok(m),
    }
}

/// Builds a glob set with the rules of `--include`/`--exclude`: like .gitignore, a pattern
/// without '/' matches a file or directory name at any depth, one with '/' the whole path below
/// the root (a leading '/' is dropped), and '*' never matches '/'.
fn globs(patterns: &[String], flag: &str) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let anchored = match p.strip_prefix('/') {
            Some(rest) => rest.to_string(),
            None if p.contains('/') => p.clone(),
            None => format!("**/{p}"),
        };
        let glob = GlobBuilder::new(&anchored)
            .literal_separator(true)
            .build()
            .with_context(|| format!("{flag} {p:?} is not a valid glob"))?;
        b.add(glob);
    }
    Ok(Some(
        b.build()
            .with_context(|| format!("building {flag} patterns"))?,
    ))
}
