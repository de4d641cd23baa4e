//! The application: a parsed command line → the command it names → an exit status. Every
//! command's output is written here, on stdout; a broken pipe ends a run quietly.

use std::io::Write;

use anyhow::Result;

use crate::cli::{self, Cli, Command};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::{explain, interrupt, messages, report, scan};

/// Runs a parsed command line and returns the exit status. A broken pipe on stdout ends the run
/// quietly with the status the scan would have had.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Explain(args) => {
            let explanation = explain::explain(&explain_method(&args)?)?;
            let mut out = Vec::new();
            match args.format {
                cli::ExplainFormat::Text => explain::render_text(&explanation, &mut out)?,
                cli::ExplainFormat::Json => {
                    serde_json::to_writer_pretty(&mut out, &explanation)?;
                    out.push(b'\n');
                }
            }
            write_stdout(&out)
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "dupfind", &mut out);
            write_stdout(&out)
        }
        Command::Man { command } => {
            let mut out = Vec::new();
            cli::man::render(command.as_deref(), &mut out)?;
            write_stdout(&out)
        }
        Command::Scan(cmd) => run_scan(Config::for_scan(*cmd)?),
        Command::Stage(cmd) => crate::stages::run(cmd),
        Command::Index(cli::IndexCommand::Build(args)) => run_scan(Config::for_build(*args)?),
        Command::Index(cmd) => run_index(cmd),
    }
}

/// `dupfind index info|compact|prune|upgrade`: a JSON document on stdout.
fn run_index(cmd: cli::IndexCommand) -> Result<ExitCode> {
    use crate::index::{compact, info, prune, upgrade};
    use anyhow::Context;
    let (dir, value) = match cmd {
        cli::IndexCommand::Build(_) => unreachable!("index build is a scan"),
        cli::IndexCommand::Info { index } => {
            let v = info::info(&index).map(serde_json::to_value);
            (index, v)
        }
        cli::IndexCommand::Compact { index } => {
            let v = compact::compact(&index).map(serde_json::to_value);
            (index, v)
        }
        cli::IndexCommand::Prune { index } => {
            let v = prune::prune(&index).map(serde_json::to_value);
            (index, v)
        }
        cli::IndexCommand::Upgrade { index } => {
            let v = upgrade::upgrade(&index).map(serde_json::to_value);
            (index, v)
        }
    };
    let value =
        value.with_context(|| format!("cannot use index {}", messages::display_path(&dir)))??;
    if value.get("written") == Some(&serde_json::Value::Bool(false)) {
        eprintln!(
            "dupfind: note: index {}: nothing to do; nothing written",
            messages::display_path(&dir)
        );
    }
    let mut out = serde_json::to_vec_pretty(&value)?;
    out.push(b'\n');
    write_stdout(&out)
}

/// Scans (and, with an index, updates it), then writes the report.
fn run_scan(cfg: Config) -> Result<ExitCode> {
    interrupt::install();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.threads.unwrap_or(0))
        .build()?;
    let out = pool.install(|| scan::scan(&cfg))?;
    match out.pending {
        None => deliver(&out.report, out.code, &cfg),
        Some(pending) => deliver_then_commit(&out.report, out.code, &cfg, pending),
    }
}

/// Writes `report` on stdout, then makes the index's next generation live: only once the
/// whole report is written and flushed, so that new documents are never indexed without
/// their report (a re-run after a failed delivery reports them again). A full disk, a closed
/// pipe or Ctrl-C while writing leave the index as it was.
fn deliver_then_commit(
    report: &report::Report,
    code: ExitCode,
    cfg: &Config,
    pending: crate::index::Pending,
) -> Result<ExitCode> {
    if !interrupt::begin_output() {
        return Ok(ExitCode::Interrupted);
    }
    let written = write_report(report, cfg);
    let not_updated = "the index was not updated (its new documents are reported again next time)";
    if interrupt::interrupted() {
        drop(pending);
        messages::error(&format!("interrupted: {not_updated}"));
        return Ok(ExitCode::Interrupted);
    }
    match written {
        Err(e) if is_broken_pipe(&e) => {
            drop(pending);
            messages::error(&format!("the report could not be delivered: {not_updated}"));
            return Ok(ExitCode::Error);
        }
        Err(e) => {
            drop(pending);
            return Err(e.context(format!("writing the report; {not_updated}")));
        }
        Ok(()) => {}
    }
    if let Err(e) = pending.commit() {
        messages::error(&format!("index not updated: {e:#}"));
        return Ok(ExitCode::Error);
    }
    Ok(quiet_summary(report, code, cfg))
}

/// Writes the report where it goes, stopping early once interrupted.
fn write_report(report: &report::Report, cfg: &Config) -> Result<()> {
    if let crate::config::OutputFormat::Paths { null } = cfg.format {
        for warning in report::paths::withheld(report, null) {
            cfg.messages.warn(&warning);
        }
    }
    cfg.sink.write(
        |out| report::write(report, cfg.format, cfg.color, out),
        || !interrupt::interrupted(),
    )
}

/// With `-q`, a run ending in status 2 still says so in one line.
fn quiet_summary(report: &report::Report, code: ExitCode, cfg: &Config) -> ExitCode {
    if code == ExitCode::Error && cfg.messages.quiet {
        eprintln!("dupfind: {} (run without -q for details)", failures(report));
    }
    code
}

/// Writes `report` where it goes (stdout, or `-o` atomically) and returns `code`: 130 when
/// interrupted before or while writing (an `-o` file is then left as it was), the status of the
/// run when stdout is a closed pipe. With `-q`, a run ending in status 2 still says so in one line.
pub(crate) fn deliver(report: &report::Report, code: ExitCode, cfg: &Config) -> Result<ExitCode> {
    if !interrupt::begin_output() {
        return Ok(ExitCode::Interrupted);
    }
    let written = write_report(report, cfg);
    if interrupt::interrupted() {
        return Ok(ExitCode::Interrupted);
    }
    match written {
        // Nothing more can be written; the run's status stands.
        Err(e) if is_broken_pipe(&e) => {}
        Err(e) => return Err(e.context("writing the report")),
        Ok(()) => {}
    }
    Ok(quiet_summary(report, code, cfg))
}

/// "3 inputs could not be read", "1 input could not be read, 2 lines of JSON Lines dumps held
/// no document".
fn failures(report: &report::Report) -> String {
    let lines = report.errors.iter().filter(|e| e.line.is_some()).count();
    let inputs = report.errors.len() - lines;
    let mut parts = Vec::new();
    match inputs {
        0 => {}
        1 => parts.push("1 input could not be read".to_string()),
        n => parts.push(format!("{n} inputs could not be read")),
    }
    match lines {
        0 => {}
        1 => parts.push("1 line of a JSON Lines dump held no document".to_string()),
        n => parts.push(format!("{n} lines of JSON Lines dumps held no document")),
    }
    if parts.is_empty() {
        // Status 2 always comes with an error; say something true if that ever changes.
        parts.push("some input could not be read".to_string());
    }
    parts.join(", ")
}

/// The explainer's input from `dupfind explain`'s flags, completed the way `scan` completes its
/// own (a lone `--bands` or `--rows` takes as many of the other as fit in K).
fn explain_method(args: &cli::ExplainArgs) -> Result<explain::ExplainMethod> {
    use crate::config::{DEFAULT_MAX_DISTANCE, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD};
    Ok(match args.method {
        cli::Method::Minhash => {
            if args.max_distance.is_some() {
                anyhow::bail!("--max-distance applies to --method simhash");
            }
            let num_perm = args.num_perm.unwrap_or(DEFAULT_NUM_PERM);
            let banding = crate::config::given_banding(args.bands, args.rows, num_perm);
            explain::ExplainMethod::MinHash {
                threshold: args.threshold.unwrap_or(DEFAULT_THRESHOLD),
                num_perm,
                banding,
            }
        }
        cli::Method::Simhash => {
            if args.threshold.is_some()
                || args.num_perm.is_some()
                || args.bands.is_some()
                || args.rows.is_some()
            {
                anyhow::bail!(
                    "--threshold, --num-perm, --bands and --rows apply to --method minhash"
                );
            }
            explain::ExplainMethod::SimHash {
                max_distance: args.max_distance.unwrap_or(DEFAULT_MAX_DISTANCE),
                docs: args.docs,
            }
        }
    })
}

/// Writes generated text to stdout; a broken pipe ends quietly.
fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::Success),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
        Ok(()) => Ok(ExitCode::Success),
    }
}

/// True when a broken pipe is anywhere in the error's chain.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                .is_some_and(|k| k == std::io::ErrorKind::BrokenPipe)
    })
}
