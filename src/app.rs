//! The application: a parsed command line → the command it names → an exit status. Every
//! command's output is written here, on stdout; a broken pipe ends a run quietly.

use std::io::Write;

use anyhow::Result;

use crate::cli::{self, Cli, Command};
use crate::config::Config;
use crate::deliver;
use crate::exit::ExitCode;
use crate::{explain, interrupt, messages, scan};

/// Runs a parsed command line and returns the exit status. A broken pipe on stdout ends the run
/// quietly with the status the scan would have had.
pub fn run(cli: Cli) -> Result<ExitCode> {
    cli::env::check()?;
    match cli.command {
        Command::Explain(args) => {
            let steps = crate::config::normalize_steps(&args.normalize)?;
            let mut explanation = explain::explain(&explain_method(&args)?)?;
            explanation.normalize = (!steps.is_none()).then(|| steps.name());
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
        // The handler first: `--files-from -` is read while the options are checked, and Ctrl-C
        // there must end the run with 130 as it does while `scan -` reads standard input,
        // whatever the disposition of SIGINT inherited (a shell's `&` ignores it).
        Command::Scan(cmd) => {
            interrupt::install();
            run_scan(Config::for_scan(*cmd)?)
        }
        Command::Stage(cmd) => {
            let code = crate::stages::run(cmd, &crate::index::staged::Staged);
            if let Some(note) = crate::store::stats_note() {
                eprintln!("dupfind: {note}");
            }
            code
        }
        Command::Index(cli::IndexCommand::Build(args)) => {
            interrupt::install();
            run_scan(Config::for_build(*args)?)
        }
        // A writer's Ctrl-C before its commit ends it with 130, the index as it was; after it,
        // the command finishes ([`interrupt::settle_commit`]). A reader needs no handler.
        Command::Index(cmd) => {
            if !matches!(cmd, cli::IndexCommand::Info { .. }) {
                interrupt::install();
            }
            run_index(cmd)
        }
        Command::Remove(args) => run_act(crate::act::Action::Remove, args),
        Command::Link(args) => run_act(crate::act::Action::Link, args),
        Command::Move(args) => run_act(crate::act::Action::Move(args.to), args.act),
    }
}

/// `dupfind remove|move|link`: the actions on stdout as they are done, flushed at the end.
fn run_act(action: crate::act::Action, args: cli::ActArgs) -> Result<ExitCode> {
    let opts = crate::act::Options {
        action,
        report: args.report,
        dry_run: args.dry_run,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    crate::act::run(&opts, &mut out)
}

/// `dupfind index info|compact|prune|upgrade`: a JSON document on stdout.
fn run_index(cmd: cli::IndexCommand) -> Result<ExitCode> {
    use crate::index::{compact, info, prune, upgrade};
    use anyhow::Context;
    if let cli::IndexCommand::Info { index }
    | cli::IndexCommand::Compact { index }
    | cli::IndexCommand::Prune { index }
    | cli::IndexCommand::Upgrade { index } = &cmd
    {
        crate::store::refuse_url(index, "index", crate::store::INDEX_IS_LOCAL)?;
    }
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
    let pool = cfg.pool()?;
    // The report is delivered in the pool too: its clusters are rendered by the pool's threads.
    let delivered = pool.install(|| {
        let out = scan::scan(&cfg)?;
        match out.pending {
            None => deliver::deliver(&out.report, out.code, &cfg),
            Some(pending) => {
                deliver::deliver_then_commit(&out.report, out.code, &cfg, move || pending.commit())
            }
        }
    });
    if let Some(note) = crate::store::stats_note() {
        eprintln!("dupfind: {note}");
    }
    delivered
}

/// The explainer's input from `dupfind explain`'s flags, as given (`explain` completes a lone
/// `--bands` or `--rows` the way `scan` does, and says which was given).
fn explain_method(args: &cli::ExplainArgs) -> Result<explain::ExplainMethod> {
    use crate::config::{DEFAULT_MAX_DISTANCE, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD};
    Ok(match args.method {
        cli::Method::Minhash => {
            if args.max_distance.is_some() {
                anyhow::bail!("--max-distance applies to --method simhash");
            }
            explain::ExplainMethod::MinHash {
                threshold: args.threshold.unwrap_or(DEFAULT_THRESHOLD),
                num_perm: args.num_perm.unwrap_or(DEFAULT_NUM_PERM),
                bands: args.bands,
                rows: args.rows,
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
