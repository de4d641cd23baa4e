//! Delivering a scan's report: written where it goes (stdout, or `-o` atomically), and only
//! then, when a scan updates an index, the index's next generation made live, so that new
//! documents are never indexed without their report. `scan` and `stage report` both end here.

use anyhow::Result;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::{interrupt, messages, report};

/// Writes `report` on stdout, then makes the index's next generation live (`commit`; dropped
/// uncalled, the generation removes what it wrote): only once the
/// whole report is written and flushed, so that new documents are never indexed without
/// their report (a re-run after a failed delivery reports them again). A full disk, a closed
/// pipe or Ctrl-C while writing leave the index as it was.
pub fn deliver_then_commit(
    report: &report::Report,
    code: ExitCode,
    cfg: &Config,
    commit: impl FnOnce() -> Result<()>,
) -> Result<ExitCode> {
    if !interrupt::begin_output() {
        return Ok(ExitCode::Interrupted);
    }
    let written = write_report(report, cfg);
    let not_updated = "the index was not updated (its new documents are reported again next time)";
    if interrupt::interrupted() {
        drop(commit);
        messages::error(&format!("interrupted: {not_updated}"));
        return Ok(ExitCode::Interrupted);
    }
    match written {
        Err(e) if is_broken_pipe(&e) => {
            drop(commit);
            messages::error(&format!("the report could not be delivered: {not_updated}"));
            return Ok(ExitCode::Error);
        }
        Err(e) => {
            drop(commit);
            return Err(e.context(format!("writing the report; {not_updated}")));
        }
        Ok(()) => {}
    }
    if let Err(e) = commit() {
        messages::error(&format!("index not updated: {e:#}"));
        return Ok(ExitCode::Error);
    }
    Ok(quiet_summary(report, code, cfg))
}

/// Writes the report where it goes, stopping early once interrupted; then says what the
/// format left out (`--format paths`), which is known once the clusters have gone by.
fn write_report(report: &report::Report, cfg: &Config) -> Result<()> {
    let mut withheld = Vec::new();
    let written = cfg.sink.write(
        |out| {
            withheld = report::write(report, cfg.format, cfg.color, out)?;
            Ok(())
        },
        interrupt::settle,
    );
    for warning in &withheld {
        cfg.messages.warn(warning);
    }
    written
}

/// With `-q`, a run ending in status 2 still says so in one line; a failed index update,
/// which is not among the report's errors, has said so already.
fn quiet_summary(report: &report::Report, code: ExitCode, cfg: &Config) -> ExitCode {
    if code == ExitCode::Error && cfg.messages.quiet && !report.errors.is_empty() {
        eprintln!("dupfind: {} (run without -q for details)", failures(report));
    }
    code
}

/// Writes `report` where it goes (stdout, or `-o` atomically) and returns `code`: 130 when
/// interrupted before or while writing (an `-o` file is then left as it was), the status of the
/// run when stdout is a closed pipe. With `-q`, a run ending in status 2 still says so in one line.
pub fn deliver(report: &report::Report, code: ExitCode, cfg: &Config) -> Result<ExitCode> {
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
/// no document", "4 documents could not be written to the dataset": each error counted by what
/// failed. A line that held no document is counted in `stats.skipped.bad_line`; a document the
/// dataset lacks, by its error's words ([`crate::dataset::NOT_WRITTEN`]), with or without a line.
fn failures(report: &report::Report) -> String {
    let dataset = |e: &&report::ErrorOut| e.error.starts_with(crate::dataset::NOT_WRITTEN);
    let not_written = report.errors.iter().filter(dataset).count();
    let lines = (report.errors.iter())
        .filter(|e| e.line.is_some() && !dataset(e))
        .count();
    let inputs = report.errors.len() - lines - not_written;
    // Every bad line is an error at its line; the other errors at a line are dumps that could
    // not be read to the end, and records that changed during the scan.
    let bad = lines.min(report.stats.skipped.bad_line as usize);
    // Named by the kind of dump they are of when all are of one kind: rows of Parquet, lines of
    // JSON Lines.
    let mut kinds = std::collections::BTreeMap::new();
    for e in report
        .errors
        .iter()
        .filter(|e| e.line.is_some() && !dataset(e))
    {
        kinds
            .entry(e.path.as_str())
            .or_insert_with(|| is_parquet_dump(&e.path));
    }
    let parquet = kinds.values().filter(|&&p| p).count();
    let (held, unread) = match (parquet, kinds.len() - parquet) {
        (0, _) => (
            ["1 line of a JSON Lines dump", "lines of JSON Lines dumps"],
            ["1 record of a dump", "records of dumps"],
        ),
        (_, 0) => (
            ["1 row of a Parquet dump", "rows of Parquet dumps"],
            ["1 row of a Parquet dump", "rows of Parquet dumps"],
        ),
        _ => (
            ["1 record of a dump", "records of dumps"],
            ["1 record of a dump", "records of dumps"],
        ),
    };
    let mut parts = Vec::new();
    let mut count = |n: usize, one: &str, many: &str| match n {
        0 => {}
        1 => parts.push(one.to_string()),
        n => parts.push(format!("{n} {many}")),
    };
    count(
        inputs,
        "1 input could not be read",
        "inputs could not be read",
    );
    count(
        bad,
        &format!("{} held no document", held[0]),
        &format!("{} held no document", held[1]),
    );
    count(
        lines - bad,
        &format!("{} could not be read", unread[0]),
        &format!("{} could not be read", unread[1]),
    );
    count(
        not_written,
        "1 document could not be written to the dataset",
        "documents could not be written to the dataset",
    );
    if parts.is_empty() {
        // Status 2 always comes with an error; say something true if that ever changes.
        parts.push("some input could not be read".to_string());
    }
    parts.join(", ")
}

/// True when the dump at `path` (as the report names it) is Parquet: by its magic bytes, or for
/// an object, which is not fetched again for a message, by its name.
fn is_parquet_dump(path: &str) -> bool {
    let path = std::path::Path::new(path);
    if crate::store::is_url(path) {
        let name = path.file_name().and_then(|n| n.to_str());
        return name.is_some_and(crate::input::walk::is_parquet_name);
    }
    std::fs::File::open(path)
        .is_ok_and(|f| crate::input::parquet::starts_with_magic(&f.into()).unwrap_or(false))
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
