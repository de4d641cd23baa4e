//! Report: what is written to stdout. Every field is documented in `docs/output.md` (a test
//! checks the two agree); names only grow.
//!
//! `json` writes one pretty-printed document; `jsonl` writes one record per line, each with a
//! `type`: a `header`, one `cluster` per cluster, one `error` per unreadable input, and a
//! `summary`; `text` is for people (`text`), `paths` for `xargs -0 rm` (`paths`), `parquet`
//! a table for joins (`parquet`). Nothing here
//! depends on time or thread count, so the same input and seed give the same bytes. `sink` is
//! where the report goes (standard output or `-o FILE`).

mod assemble;
pub mod build;
mod clusters;
mod counts;
mod model;
pub mod params;
mod parquet;
pub mod paths;
mod pretty;
mod text;

use std::io::{BufWriter, Write};

use anyhow::Result;
use serde::Serialize;

use crate::config::OutputFormat;

pub use assemble::{assemble, finish, Parts, Updated, WalkCounts};
pub use clusters::{
    lossy_path_bytes, path_fields, reclaimable, ClusterOut, DuplicateOut, FileOut, MemberMore,
    MemberOut, PairMore, PairOut,
};
pub use counts::Counts;
pub use model::{
    ClusterStream, Clusters, ErrorOut, IndexStats, Params, Report, Stats, SCHEMA_VERSION,
};

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Record<'a> {
    Header {
        schema_version: u32,
        dupfind_version: &'static str,
        params: &'a Params,
        roots: &'a [String],
        #[serde(skip_serializing_if = "Option::is_none")]
        roots_bytes: Option<&'a Vec<Option<String>>>,
    },
    Cluster(&'a ClusterOut),
    Error(&'a ErrorOut),
    Summary {
        stats: &'a Stats,
    },
}

/// Writes the report in `format` (`color`: ANSI colour in the text format) and flushes;
/// returns what the format left out, as warnings to say once it is written (`paths`).
pub fn write(
    report: &Report,
    format: OutputFormat,
    color: bool,
    out: &mut dyn Write,
) -> Result<Vec<String>> {
    let mut withheld = Vec::new();
    match format {
        OutputFormat::Json => buffered(out, |out| {
            pretty::write_report(&mut *out, report)?;
            Ok(out.write_all(b"\n")?)
        })?,
        OutputFormat::Jsonl => buffered(out, |out| {
            fn line<W: Write>(out: &mut W, r: &Record) -> Result<()> {
                serde_json::to_writer(&mut *out, r)?;
                out.write_all(b"\n")?;
                Ok(())
            }
            line(
                out,
                &Record::Header {
                    schema_version: report.schema_version,
                    dupfind_version: report.dupfind_version,
                    params: &report.params,
                    roots: &report.roots,
                    roots_bytes: report.roots_bytes.as_ref(),
                },
            )?;
            pretty::each_rendered(
                &report.clusters,
                |c, buf| {
                    serde_json::to_writer(&mut *buf, &Record::Cluster(c))?;
                    buf.push(b'\n');
                    Ok(())
                },
                |piece| out.write_all(piece),
            )?;
            for e in &report.errors {
                line(out, &Record::Error(e))?;
            }
            line(
                out,
                &Record::Summary {
                    stats: &report.stats,
                },
            )
        })?,
        OutputFormat::Text => text::write(report, color, &mut *out)?,
        OutputFormat::Paths { null } => withheld = paths::write(report, null, &mut *out)?,
        OutputFormat::Parquet => parquet::write(report, &mut *out)?,
    }
    out.flush()?;
    Ok(withheld)
}

/// Runs `write` on a buffer of its own over `out`. serde_json writes a token at a time, and
/// through `dyn Write` each token was a call to the sink's buffer that could not be inlined
/// (1.7 % of a default scan's instructions on the 10k benchmark corpus, whose report is
/// 2.9 MB); into a buffer of a known type the common case is an inlined copy, and `out` gets
/// 64 KiB at a time.
fn buffered(
    out: &mut dyn Write,
    write: impl FnOnce(&mut BufWriter<&mut dyn Write>) -> Result<()>,
) -> Result<()> {
    let mut buffer = BufWriter::with_capacity(1 << 16, out);
    match write(&mut buffer) {
        Ok(()) => Ok(buffer.flush()?),
        Err(e) => {
            // Nothing more can be written (a broken pipe): not tried again when dropped.
            let _ = buffer.into_parts();
            Err(e)
        }
    }
}
