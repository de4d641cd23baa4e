//! The JSON summaries stages leave beside their Parquet files: counts and errors that the
//! report adds up, and the marker that a shard or partition is complete (written last).

use serde::{Deserialize, Serialize};

use crate::messages::InputError;
use crate::report::Counts;
use crate::sketch::kmv::Kmv;

use super::lineage::Lineage;
use super::plan::{path_from_b64, path_to_b64};

/// An input error, its path as exact bytes (base64).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorRec {
    /// The path's bytes, base64.
    pub path: String,
    /// The line of a dump, when the error is about one.
    pub line: Option<u64>,
    /// Why.
    pub error: String,
}

impl From<&InputError> for ErrorRec {
    fn from(e: &InputError) -> Self {
        ErrorRec {
            path: path_to_b64(&e.path),
            line: e.line,
            error: e.error.clone(),
        }
    }
}

impl ErrorRec {
    /// The error as the report takes it.
    pub fn to_input_error(&self) -> anyhow::Result<InputError> {
        Ok(InputError {
            path: path_from_b64(&self.path)?,
            line: self.line,
            error: self.error.clone(),
        })
    }
}

/// `init/walk.json`: what the walk saw.
#[derive(Debug, Serialize, Deserialize)]
pub struct WalkSummary {
    /// Where it comes from.
    pub lineage: Lineage,
    /// Non-directory entries that passed the filters.
    pub files_seen: u64,
    /// FIFOs, sockets, devices.
    pub not_regular: u64,
    /// Symbolic links not followed.
    pub symlink: u64,
    /// Links followed out of the roots or into a loop.
    pub outside_roots: u64,
    /// Below `--min-size`.
    pub too_short: u64,
    /// Above `--max-size`.
    pub too_large: u64,
    /// Hidden entries not walked.
    #[serde(default)]
    pub hidden: u64,
    /// Entries matched by an ignore file, not walked.
    #[serde(default)]
    pub ignored: u64,
    /// Entries that could not be read.
    pub errors: Vec<ErrorRec>,
    /// Inputs listed in `init/inputs.parquet`.
    pub inputs: u64,
    /// With `--against`: inputs not listed because the index holds them unchanged.
    #[serde(default)]
    pub unchanged: u64,
    /// With `--against`: the indexed documents compared (the index's live ones, less those
    /// the changed inputs supersede).
    #[serde(default)]
    pub indexed: u64,
}

impl WalkSummary {
    /// The walk's share of the report's counts.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            files_seen: self.files_seen,
            ..Counts::default()
        };
        let s = &mut c.skipped;
        (s.not_regular, s.symlink, s.outside_roots) =
            (self.not_regular, self.symlink, self.outside_roots);
        (s.too_short, s.too_large) = (self.too_short, self.too_large);
        (s.hidden, s.ignored) = (self.hidden, self.ignored);
        c
    }
}

/// `sign/shard-I.json`: what signing one shard found.
#[derive(Debug, Serialize, Deserialize)]
pub struct SignSummary {
    /// Where it comes from.
    pub lineage: Lineage,
    /// The shard.
    pub shard: u32,
    /// Documents with text (sketched, or a copy of one sketched).
    pub documents: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Documents without a token.
    pub empty: u64,
    /// A NUL byte near the start.
    pub binary: u64,
    /// No longer regular files when opened.
    pub not_regular: u64,
    /// Under `--min-size` when opened.
    pub too_short: u64,
    /// Over `--max-size` when opened or read.
    pub too_large: u64,
    /// Dump lines that held no document.
    pub bad_lines: u64,
    /// Dumps without a record.
    pub empty_dumps: u64,
    /// The shard's distinct-shingle sketch: its k and kept values.
    pub kmv_k: usize,
    /// The kept values, ascending.
    pub kmv: Vec<u64>,
    /// Dump errors, then read errors, in input order.
    pub errors: Vec<ErrorRec>,
    /// What it saw of the `--keep-by` field.
    #[serde(default)]
    pub keep_seen: crate::ingest::KeepSeen,
    /// With `--update`: the documents it packed for the index
    /// (`sign/shard-I.index.parquet`), those that could not be read again included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_index: Option<u64>,
    /// With `--update`: the documents that could not be read again to be packed, left out of
    /// the index (the report lists them after every other error, as `scan`'s does).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_indexed: Vec<ErrorRec>,
}

impl SignSummary {
    /// Refuses, with `scan`'s words, a `--keep-by` field that no record of any shard has
    /// (`signs`: every shard's summary, in shard order, whose first dump names the fields).
    pub fn check_keep_by(cfg: &crate::config::Config, signs: &[SignSummary]) -> anyhow::Result<()> {
        let mut seen = crate::ingest::KeepSeen::default();
        signs.iter().for_each(|s| seen.add(&s.keep_seen));
        crate::ingest::keep_by::check_seen(cfg, &seen)
    }

    /// The distinct-shingle sketch.
    pub fn kmv(&self) -> Kmv {
        let mut k = Kmv::new(self.kmv_k);
        k.insert_set(&self.kmv);
        k
    }

    /// The shard's share of the report's counts.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            documents: self.documents,
            bytes: self.bytes,
            distinct: Some(self.kmv()),
            ..Counts::default()
        };
        let s = &mut c.skipped;
        (s.not_regular, s.too_short, s.too_large) =
            (self.not_regular, self.too_short, self.too_large);
        (s.binary, s.bad_line) = (self.binary, self.bad_lines);
        s.empty = self.empty_dumps + self.empty;
        c
    }
}

/// `components/summary.json`: what grouping the buckets found.
#[derive(Debug, Serialize, Deserialize)]
pub struct ComponentsSummary {
    /// Where it comes from.
    pub lineage: Lineage,
    /// Groups of two or more byte-identical documents.
    pub exact_groups: u64,
    /// Documents that are a byte-identical copy of an earlier one.
    pub exact_copies: u64,
    /// Candidate components (two or more members) assigned to partitions.
    pub components: u64,
    /// Documents of the largest candidate component (units only, as `scan` counts it).
    pub largest_component: u64,
    /// Documents of the largest band bucket (units only).
    pub largest_bucket: u64,
}

impl ComponentsSummary {
    /// The run's byte-identical groups and candidate skew, as counted once over every shard.
    pub fn counts(&self) -> Counts {
        Counts {
            exact_groups: self.exact_groups,
            exact_copies: self.exact_copies,
            largest_bucket: self.largest_bucket,
            largest_component: self.largest_component,
            ..Counts::default()
        }
    }
}

/// Any summary, read for its lineage alone.
#[derive(Debug, Deserialize)]
pub struct LineageOnly {
    /// Where it comes from.
    pub lineage: Lineage,
}
