//! Validation: the command line's values → a [`Config`], or a clear error naming the flag.
//! The only place that reads clap's types.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::inputs::{absolute_dir, globs, read_list};
use super::{
    ClusterMode, Config, DatasetFormat, IndexUse, KeepBy, KeepPolicy, MethodConfig, OutputFormat,
    Verify, DEFAULT_MAX_DISTANCE, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD, MAX_NGRAM, MAX_NUM_PERM,
};
use crate::cli::{
    ClusterArg, ColorWhen, DatasetFormatArg, DumpsWhen, Format, KeepArg, Method, NormalizeArg,
    ProgressWhen, ScanArgs, ShingleArg, SketchArg, VerifyArg,
};
use crate::config::banding::{Banding, RECALL_WEIGHT};
use crate::config::containment::Scheme;
use crate::input::jsonl::{field_path, JsonlOptions};
use crate::input::stdin::is_stdin;
use crate::input::walk::{DumpNames, WalkOptions};
use crate::messages::display_path;
use crate::messages::Messages;
use crate::sketch::minhash::SketchKind;
use crate::sketch::normalize::{Normalize, Step};
use crate::sketch::shingle::ShingleKind;

impl Config {
    /// Validates the command line. Checks run in a fixed order, so the first problem named is
    /// always the same one.
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
        let normalize = normalize_steps(&args.normalize)?;
        let method = match args.method {
            Method::Minhash => minhash_config(&args)?,
            Method::Simhash => simhash_config(&args)?,
        };
        if let Some(m) = args.max_memory.filter(|&m| m < crate::budget::MIN_LIMIT) {
            bail!(
                "--max-memory ({}) is below 64M, the least budget dupfind runs in",
                crate::budget::human(m)
            );
        }
        if args.min_size > args.max_size {
            bail!(
                "--min-size ({}) is larger than --max-size ({})",
                args.min_size,
                args.max_size
            );
        }
        let keep_by = keep_by(&args)?;
        let jsonl = JsonlOptions {
            text_field: field_path(&args.text_field).context("--text-field")?,
            id_field: field_path(&args.id_field).context("--id-field")?,
            keep_field: keep_by.as_ref().map(|k| k.field.clone()),
            max_line: args.max_size,
        };
        output_conflicts(&args)?;
        stdin_conflicts(&args)?;
        let max_memory = args.max_memory.unwrap_or_else(crate::budget::default_limit);
        let walk = walk_options(&args, max_memory)?;
        let sink = crate::sink::Sink::new(args.output.as_deref())?;
        let to_terminal = sink.is_terminal();
        color_applies(&args, to_terminal)?;
        Ok(Config {
            walk,
            stdin: args.paths.iter().any(|p| is_stdin(p)),
            table: None,
            jsonl,
            against: None,
            shingle: match args.shingle {
                ShingleArg::Word => ShingleKind::Word,
                ShingleArg::Char => ShingleKind::Char,
            },
            ngram: args.ngram,
            normalize,
            method,
            seed: args.seed,
            threads: args.threads.map(|t| t as usize),
            max_memory,
            // People at a terminal get text; a pipe or a file gets JSON, as scripts expect.
            format: match args.format {
                Some(Format::Json) => OutputFormat::Json,
                Some(Format::Jsonl) => OutputFormat::Jsonl,
                Some(Format::Text) => OutputFormat::Text,
                Some(Format::Paths) => OutputFormat::Paths { null: args.null },
                Some(Format::Parquet) => OutputFormat::Parquet,
                None if to_terminal => OutputFormat::Text,
                None => OutputFormat::Json,
            },
            color: match args.color.unwrap_or(ColorWhen::Auto) {
                ColorWhen::Always => true,
                ColorWhen::Never => false,
                // https://no-color.org: set and not empty.
                ColorWhen::Auto => {
                    to_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            },
            sink,
            // Strict by default: `duplicates` then lists only documents verified against the
            // representative, so deleting them is safe. Containment clusters are components
            // represented by their container.
            cluster: args.cluster.map_or(
                if args.containment {
                    ClusterMode::Components
                } else {
                    ClusterMode::Strict
                },
                ClusterMode::from,
            ),
            keep: args.keep.into(),
            keep_by,
            pairs: args.pairs,
            dataset: args.write_dataset.clone(),
            dataset_format: args.dataset_format.map(|f| match f {
                DatasetFormatArg::Parquet => DatasetFormat::Parquet,
                DatasetFormatArg::Jsonl => DatasetFormat::Jsonl,
            }),
            annotate: args
                .annotate
                .then(|| (args.annotate_prefix.clone()).unwrap_or_else(|| "dupfind_".to_string())),
            exit_code: args.exit_code,
            messages: Messages {
                quiet: args.quiet,
                verbose: args.verbose,
                progress: match args.progress {
                    ProgressWhen::Always => true,
                    ProgressWhen::Never => false,
                    ProgressWhen::Auto => std::io::stderr().is_terminal(),
                },
            },
        })
    }
}

/// `--keep-by FIELD[:max|:min]`, checked; refused with `--keep none`, which keeps no member.
fn keep_by(args: &ScanArgs) -> Result<Option<KeepBy>> {
    let Some(given) = &args.keep_by else {
        return Ok(None);
    };
    let (field, max) = match given.rsplit_once(':') {
        Some((field, "max")) => (field, true),
        Some((field, "min")) => (field, false),
        Some((_, order)) => bail!(
            "--keep-by {given}: the order after ':' is max or min, not {order:?} (quality:max \
             keeps the greatest quality)"
        ),
        None => (given.as_str(), true),
    };
    let field = field_path(field).with_context(|| format!("--keep-by {given}"))?;
    if args.keep == KeepArg::None {
        bail!(
            "--keep-by {given} chooses the member to keep, and --keep none keeps none; give one \
             or the other"
        );
    }
    Ok(Some(KeepBy { field, max }))
}

/// Output options that cannot apply together, refused rather than ignored.
fn output_conflicts(args: &ScanArgs) -> Result<()> {
    let paths = args.format == Some(Format::Paths);
    if args.null && args.files_from.is_none() && !paths {
        bail!(
            "-0 (--null) applies to --files-from (a NUL-separated list of inputs) and to --format \
             paths (NUL-separated paths printed); neither is given"
        );
    }
    if args.pairs && paths {
        bail!(
            "--pairs adds the evidence for each pair to json, jsonl and text reports; --format \
             paths prints only the paths of duplicates"
        );
    }
    if args.pairs && args.format == Some(Format::Parquet) {
        bail!(
            "--pairs adds the evidence for each pair to json, jsonl and text reports; --format \
             parquet has a row per clustered document, not per pair"
        );
    }
    if args.quiet && args.progress == ProgressWhen::Always {
        bail!("--quiet hides the progress bar --progress always asks for; give one or the other");
    }
    if let (Some(o), Some(d)) = (&args.output, &args.write_dataset) {
        if o != Path::new("-") && within(o, d) {
            bail!(
                "-o {} is inside the --write-dataset directory {}: the report would be written \
                 among the dataset's parts, or over one; write it elsewhere",
                display_path(o),
                display_path(d)
            );
        }
    }
    Ok(())
}

/// True when `path` is `dir` or below it: a URL by its text (a `file://` one as the local path
/// it names), a local path once absolute, links resolved where they exist.
fn within(path: &Path, dir: &Path) -> bool {
    let local = |p: &Path| crate::store::local_path(p).unwrap_or_else(|| p.to_path_buf());
    let (path, dir) = (local(path), local(dir));
    match (crate::store::is_url(&path), crate::store::is_url(&dir)) {
        (true, true) => {
            let (path, dir) = (path.to_string_lossy(), dir.to_string_lossy());
            let dir = dir.trim_end_matches('/');
            path == dir
                || path
                    .strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
        (false, false) => absolute_dir(&path).starts_with(absolute_dir(&dir)),
        _ => false,
    }
}

/// `-` (standard input) can be read once: as one input, not twice, nor also as the list.
fn stdin_conflicts(args: &ScanArgs) -> Result<()> {
    let given = args.paths.iter().filter(|p| is_stdin(p)).count();
    if given > 1 {
        bail!("`-` (standard input) is given {given} times; it can be read only once");
    }
    if given == 1 && args.files_from.as_deref().is_some_and(is_stdin) {
        bail!(
            "--files-from - reads the list of inputs from standard input, and `-` among the \
             inputs reads a document from it too; give one or the other"
        );
    }
    Ok(())
}

/// `--color` is for the text format: refused with another one, given or chosen (a pipe or
/// `-o` gets JSON), rather than ignored.
fn color_applies(args: &ScanArgs, to_terminal: bool) -> Result<()> {
    match (args.color, args.format) {
        (Some(color), Some(format)) if format != Format::Text => bail!(
            "--color {} applies to --format text, not --format {}",
            value_name(color),
            value_name(format)
        ),
        (Some(color @ (ColorWhen::Always | ColorWhen::Never)), None) if !to_terminal => bail!(
            "--color {} applies to the text format, and the report is json here (it goes to a \
             pipe or a file); add --format text",
            value_name(color)
        ),
        _ => Ok(()),
    }
}

/// The command-line spelling of a value.
fn value_name(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// What to walk: the roots (or `.`), the `--files-from` list (read now), the filters.
fn walk_options(args: &ScanArgs, max_memory: u64) -> Result<WalkOptions> {
    if args.unrestricted > 2 {
        bail!(
            "-u at most twice: -u is --no-ignore, -uu adds --hidden (binary files are never \
             documents, so ripgrep's -uuu has no meaning here)"
        );
    }
    let mut listed = match &args.files_from {
        Some(list) => read_list(list, args.null)?,
        None => Vec::new(),
    };
    // A list names files: `-` there is a file of that name, never standard input.
    for path in listed.iter_mut().filter(|p| is_stdin(p)) {
        *path = std::path::Path::new(".").join("-");
    }
    let roots = if args.paths.is_empty() && args.files_from.is_none() {
        vec![std::path::PathBuf::from(".")]
    } else {
        // Standard input is read apart from the walk (`Config::stdin`).
        args.paths
            .iter()
            .filter(|p| !is_stdin(p))
            .cloned()
            .collect()
    };
    // A `file://` URL is the local path it names, walked as any other.
    let local = |p: std::path::PathBuf| crate::store::local_path(&p).unwrap_or(p);
    let roots: Vec<_> = roots.into_iter().map(local).collect();
    let listed: Vec<_> = listed.into_iter().map(local).collect();
    // The dataset written is never read as input, even inside a root.
    let skip_dirs = (args.write_dataset.iter())
        .filter(|d| !crate::store::is_url(d))
        .map(|d| absolute_dir(d))
        .collect();
    Ok(WalkOptions {
        roots,
        follow_links: args.follow_links,
        include: globs(&args.include, "--include")?,
        exclude: globs(&args.exclude, "--exclude")?,
        min_size: args.min_size,
        max_size: args.max_size,
        dumps: match (args.jsonl, args.dumps) {
            (true, None | Some(DumpsWhen::Always)) | (false, Some(DumpsWhen::Always)) => {
                DumpNames::All
            }
            (true, Some(d)) => bail!(
                "--jsonl reads every input as a dump (it is --dumps always), and --dumps {} says \
                 otherwise; give one or the other",
                value_name(d)
            ),
            (false, Some(DumpsWhen::Never)) => DumpNames::None,
            (false, None | Some(DumpsWhen::Auto)) => DumpNames::ByName,
        },
        listed,
        skip_dirs,
        hidden: args.hidden || args.unrestricted >= 2,
        no_ignore: args.no_ignore || args.unrestricted >= 1,
        max_memory: Some(max_memory),
        max_depth: args.max_depth,
        extensions: extensions(&args.extension)?,
        defer_metadata: true,
        stat_deferred: false,
    })
}

/// `-e`'s extensions, lowercase and without a leading dot; `-uuu` refused.
fn extensions(given: &[String]) -> Result<Vec<String>> {
    given
        .iter()
        .map(|e| {
            let ext = e.strip_prefix('.').unwrap_or(e);
            if ext.is_empty() || ext.contains(std::path::is_separator) {
                bail!("-e {e:?}: an extension is a name's ending after a dot, such as txt");
            }
            Ok(ext.to_ascii_lowercase())
        })
        .collect()
}

/// `--method simhash`: refuses MinHash's flags, checks the distance.
fn simhash_config(args: &ScanArgs) -> Result<MethodConfig> {
    let minhash_only = [
        ("--bands", args.bands.is_some()),
        ("--rows", args.rows.is_some()),
        ("--threshold", args.threshold.is_some()),
        ("--num-perm", args.num_perm.is_some()),
        ("--sketch", args.sketch.is_some()),
        ("--verify", args.verify.is_some()),
    ];
    if let Some((flag, _)) = minhash_only.iter().find(|(_, given)| *given) {
        bail!("{flag} applies to --method minhash; --method simhash is tuned with --max-distance");
    }
    let max_distance = args.max_distance.unwrap_or(DEFAULT_MAX_DISTANCE);
    if max_distance > 31 {
        bail!("--max-distance must be between 0 and 31, not {max_distance}");
    }
    let report_distance = match min_similarity(args)? {
        // 1 − d/64 ≥ m  ⇔  d ≤ 64·(1 − m); the epsilon keeps 1 − 3/64 itself.
        Some(m) => {
            let bound = ((1.0 - m) * 64.0 + 1e-9).floor() as u32;
            if bound > max_distance {
                bail!(
                    "--min-similarity {m} allows a distance of {bound}, more than --max-distance \
                     {max_distance}: no pair beyond --max-distance is reported anyway; raise \
                     --max-distance to {bound}, or leave --min-similarity out"
                );
            }
            bound
        }
        None => max_distance,
    };
    Ok(MethodConfig::SimHash {
        max_distance,
        report_distance,
        pieces: crate::sketch::simhash::pieces(max_distance),
    })
}

/// An index stays on a local disk, and holds local files only: it is committed by renaming its
/// manifest into place under a lock, which an object store has neither of, and it checks each
/// file again by its inode and times, which an object has not.
fn refuse_urls_with_index(index: &Path, walk: &WalkOptions, what: &str) -> Result<()> {
    crate::store::refuse_url(
        index,
        &format!("{what}'s index"),
        crate::store::INDEX_IS_LOCAL,
    )?;
    if let Some(url) = walk
        .roots
        .iter()
        .chain(&walk.listed)
        .find(|p| crate::store::is_url(p))
    {
        bail!(
            "{} cannot go into an index ({what}): an index holds local files, which it checks \
             again by inode and times and rereads by path; scan URLs without --against, or copy \
             them to a local disk first",
            url.display()
        );
    }
    Ok(())
}

impl Config {
    /// Scans against `index` (`--against` of `scan` and `stage init`, `index build`'s own):
    /// refused with URLs ([`refuse_urls_with_index`] says why) and with what an index cannot
    /// take, before the walk, which never enters the index and stats every file (the index
    /// compares their sizes, inodes and times).
    pub fn use_index(&mut self, index: IndexUse, what: &str) -> Result<()> {
        refuse_urls_with_index(&index.dir, &self.walk, what)?;
        self.walk.skip_dirs.push(absolute_dir(&index.dir));
        self.walk.defer_metadata = false;
        self.against = Some(index);
        self.check_index_use()
    }

    /// Refuses to write a binary report to a terminal (checked by the command that writes the
    /// report: a stage that does not is free to run at one).
    pub fn check_report_target(&self) -> Result<()> {
        if self.format == OutputFormat::Parquet && self.sink.is_terminal() {
            bail!(
                "--format parquet writes a binary table, not for a terminal: give -o FILE, or \
                 send standard output to a file or a pipe"
            );
        }
        Ok(())
    }

    /// The settings of `dupfind index build`: a scan whose documents go into a new index.
    pub fn for_build(args: crate::cli::IndexBuildArgs) -> Result<Config> {
        let mut cfg = Config::from_args(args.scan)?;
        cfg.check_report_target()?;
        if cfg.stdin {
            bail!("`-` (standard input) cannot go into an index: it has no path to check again");
        }
        let index = IndexUse {
            dir: args.index,
            update: true,
            create: true,
            prune: false,
        };
        cfg.use_index(index, "index build")?;
        Ok(cfg)
    }

    /// The settings of `dupfind scan`, with `--against`.
    pub fn for_scan(cmd: crate::cli::ScanCommand) -> Result<Config> {
        let mut cfg = Config::from_args(cmd.scan)?;
        cfg.check_report_target()?;
        if let Some(dir) = cmd.against {
            if cfg.stdin {
                bail!(
                    "`-` (standard input) cannot be scanned --against an index: it has no path \
                     that an index could hold"
                );
            }
            let index = IndexUse {
                dir,
                update: cmd.update,
                create: false,
                prune: cmd.prune,
            };
            cfg.use_index(index, "--against")?;
        }
        Ok(cfg)
    }

    /// An index stores K-value signatures and each document's content (text, or a format-1
    /// index's shingle hashes): what exact or estimated Jaccard needs. Edit similarity against
    /// indexed documents is not written yet, and bottom-k sketches are not stored.
    fn check_index_use(&self) -> Result<()> {
        if self.against.is_none() {
            return Ok(());
        }
        if let MethodConfig::MinHash {
            verify,
            bottom_k,
            containment,
            ..
        } = &self.method
        {
            if containment.is_some() {
                bail!("--containment cannot be used with an index yet (it needs every set's size)");
            }
            if *verify == Verify::Edit {
                bail!("--verify edit cannot be used with an index yet (indexed documents are checked on shingle sets only)");
            }
            if *bottom_k {
                bail!("--sketch bottom-k cannot be used with an index (it stores K-permutation or OPH signatures)");
            }
        }
        Ok(())
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
    let verify = match args.verify.unwrap_or(VerifyArg::Exact) {
        VerifyArg::Exact => Verify::Exact,
        VerifyArg::Estimate => Verify::Estimate,
        VerifyArg::Edit => Verify::Edit,
    };
    let containment = args.containment.then(|| Scheme::new(t, k));
    let (banding, chosen) = match (given_banding(args.bands, args.rows, k), &containment) {
        (Some(given), _) => (given, false),
        (None, Some(scheme)) => (scheme.offsets[0], true),
        // A false candidate costs one comparison (of sets, or under --verify estimate of
        // signatures, cheaper still) and a missed one is a duplicate never reported, whichever
        // the verification: favour recall (equal weights gave estimate 9 × 13 at 0.8, missing
        // 31 % of the pairs at 0.85, and `explain` another banding than the scan's).
        (None, None) => (Banding::choose(t, k, RECALL_WEIGHT), true),
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
    let report_threshold = match min_similarity(args)? {
        Some(m) if m < t => bail!(
            "--min-similarity {m} is below --threshold {t}: no pair below the threshold is \
             reported anyway; lower --threshold to {m}, or leave --min-similarity out"
        ),
        Some(m) => m,
        None => t,
    };
    Ok(MethodConfig::MinHash {
        report_threshold,
        sketch: match args.sketch.unwrap_or(SketchArg::Oph) {
            SketchArg::Oph | SketchArg::BottomK => SketchKind::Oph,
            SketchArg::Kperm => SketchKind::Kperm,
        },
        bottom_k: args.sketch == Some(SketchArg::BottomK),
        num_perm: k,
        banding,
        banding_chosen: chosen,
        threshold: t,
        verify,
        containment,
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
    if args.verify.is_some_and(|v| v != VerifyArg::Exact) {
        bail!(
            "--containment needs --verify exact: containment is computed on the shingle sets, as \
             a signature estimate at an excerpt's low Jaccard similarity is too coarse"
        );
    }
    if args.sketch == Some(SketchArg::BottomK) {
        bail!("--containment works on the OPH or K-permutation signature, not --sketch bottom-k");
    }
    if args.bands.is_some() || args.rows.is_some() {
        bail!(
            "--bands and --rows do not apply to --containment: its bands are chosen for each pair \
             of size classes"
        );
    }
    if args.cluster == Some(ClusterArg::Strict) {
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

impl From<ClusterArg> for ClusterMode {
    fn from(c: ClusterArg) -> Self {
        match c {
            ClusterArg::Components => ClusterMode::Components,
            ClusterArg::Strict => ClusterMode::Strict,
        }
    }
}

impl From<KeepArg> for KeepPolicy {
    fn from(k: KeepArg) -> Self {
        match k {
            KeepArg::First => KeepPolicy::First,
            KeepArg::Largest => KeepPolicy::Largest,
            KeepArg::Smallest => KeepPolicy::Smallest,
            KeepArg::Newest => KeepPolicy::Newest,
            KeepArg::Oldest => KeepPolicy::Oldest,
            KeepArg::ShortestPath => KeepPolicy::ShortestPath,
            KeepArg::None => KeepPolicy::None,
        }
    }
}

/// `--normalize`'s steps; `none` stands alone.
pub fn normalize_steps(args: &[NormalizeArg]) -> Result<Normalize> {
    if args.contains(&NormalizeArg::None) && args.len() > 1 {
        bail!("--normalize none cannot be given with other steps: give the steps alone, or none");
    }
    Ok(Normalize::from_steps(args.iter().filter_map(|a| match a {
        NormalizeArg::None => None,
        NormalizeArg::Nfkc => Some(Step::Nfkc),
        NormalizeArg::Accents => Some(Step::Accents),
        NormalizeArg::Digits => Some(Step::Digits),
        NormalizeArg::Punct => Some(Step::Punct),
    })))
}
