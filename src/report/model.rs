//! The report's top level: its parameters, statistics and errors, and the version of its
//! schema. Clusters are in [`super::clusters`]. Every field is documented in `docs/output.md`;
//! names only grow.

use std::cell::{Cell, RefCell};

use anyhow::{bail, Result};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use super::clusters::ClusterOut;

/// Version of the output schema; bumped only when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 2;

/// The whole `json` report.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Output schema version.
    pub schema_version: u32,
    /// Version of dupfind that wrote the report.
    pub dupfind_version: &'static str,
    /// The effective parameters.
    pub params: Params,
    /// The roots walked, as given, in path order (`--files-from`'s inputs and standard input
    /// are not): the
    /// directories `dupfind move` keeps each file's path below, and out of which `remove`,
    /// `move` and `link` never follow a symbolic link.
    pub roots: Vec<String>,
    /// Base64 of each root's bytes (null where the root is valid UTF-8), when some root's name
    /// is not valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots_bytes: Option<Vec<Option<String>>>,
    /// Counts of what the scan did.
    pub stats: Stats,
    /// Groups of near-duplicate documents, ordered by their first member's path.
    pub clusters: Clusters,
    /// Inputs that could not be read.
    pub errors: Vec<ErrorOut>,
}

/// The parameters that shaped the result.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// "minhash" or "simhash".
    pub method: &'static str,
    /// "word" or "char".
    pub shingle: &'static str,
    /// Shingle length in words or characters.
    pub ngram: usize,
    /// `--normalize`'s steps, in the order applied (`"nfkc,punct"`); absent without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalize: Option<String>,
    /// MinHash sketch: "oph", "kperm" or "bottom-k".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sketch: Option<&'static str>,
    /// MinHash signature length K.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_perm: Option<usize>,
    /// LSH bands b.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bands: Option<usize>,
    /// Rows per band r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Jaccard threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// SimHash fingerprint bits (64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bits: Option<u32>,
    /// SimHash largest Hamming distance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_distance: Option<u32>,
    /// SimHash pieces (tables) searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pieces: Option<usize>,
    /// "exact", "estimate" or "edit".
    pub verify: &'static str,
    /// Seed of the hash families.
    pub seed: u64,
    /// `--min-similarity`, when stricter than the threshold (SimHash: as 1 − distance/64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_similarity: Option<f64>,
    /// "components" or "strict".
    pub cluster: &'static str,
    /// The `--keep` policy that chose each representative ("none": no member is kept).
    pub keep: &'static str,
    /// `--keep-by`: the field that chose each representative first, and its order
    /// ("quality:max"); absent when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_by: Option<String>,
    /// `--containment`: similarities are the containment of the smaller document in the larger
    /// (present only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub containment: bool,
}

/// Counts of what the scan saw and did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Non-directory entries found under the roots that passed --include/--exclude.
    pub files_seen: u64,
    /// Documents read and shingled (one per inode, or per record of a dump); with
    /// `--against`, the new ones only.
    pub documents: u64,
    /// Total size of the documents in bytes.
    pub bytes: u64,
    /// What removing every listed duplicate would free on disk: st_blocks × 512 of each file
    /// once, counted only when all its names are listed (a name elsewhere keeps it).
    pub reclaimable_bytes: u64,
    /// Files not turned into documents, by reason.
    pub skipped: Skipped,
    /// Groups of two or more byte-identical documents.
    pub exact_groups: u64,
    /// Distinct candidate pairs that were verified.
    pub candidate_pairs: u64,
    /// Candidate pairs that met the threshold.
    pub verified_pairs: u64,
    /// Documents in the largest candidate bucket (of any band or piece).
    pub largest_bucket: u64,
    /// Documents in the largest candidate component (documents linked through shared buckets;
    /// byte-identical copies are not counted, their first stands for them).
    pub largest_component: u64,
    /// Clusters reported.
    pub clusters: u64,
    /// Documents in no cluster.
    pub unique_documents: u64,
    /// Documents byte-identical to another one (all copies of a content but one).
    pub exact_copies: u64,
    /// Other documents in clusters beyond one per cluster, so that
    /// `documents = unique_documents + clusters + exact_copies + near_copies`.
    pub near_copies: u64,
    /// Distinct shingles in the whole corpus, estimated by a k-minimum-values sketch
    /// (k = 4096; exact while below k).
    pub distinct_shingles: u64,
    /// Relative standard error of `distinct_shingles` (0 when exact, else 1/√(k − 2) ≈ 0.016).
    pub distinct_shingles_error: f64,
    /// `--verify edit`: candidate pairs judged by exact Jaccard instead of edit similarity,
    /// because a document has more tokens than the cap (20,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit_fallbacks: Option<u64>,
    /// With `--against` or `index build`: the index's side of the scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexStats>,
}

/// The index's side of a scan.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IndexStats {
    /// The generation scanned against (0 when `index build` created the index).
    pub generation: u64,
    /// Indexed documents compared with the new ones.
    pub documents: u64,
    /// Inputs not read because the index holds them unchanged.
    pub unchanged_files: u64,
    /// The generation written by `--update` or `index build`; absent when nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_generation: Option<u64>,
}

/// Files not turned into documents.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Skipped {
    /// A NUL byte in the first 8 KiB.
    pub binary: u64,
    /// No token after normalization (empty or white space only).
    pub empty: u64,
    /// Smaller than --min-size.
    pub too_short: u64,
    /// FIFOs, sockets, devices: never opened.
    pub not_regular: u64,
    /// Larger than --max-size.
    pub too_large: u64,
    /// Could not be read (listed in `errors`).
    pub error: u64,
    /// Symbolic links not followed (no -L).
    pub symlink: u64,
    /// Links followed with -L that lead outside the roots or into a loop.
    pub outside_roots: u64,
    /// Lines of JSON Lines dumps that held no document (listed in `errors`).
    pub bad_line: u64,
    /// Hidden entries below a root, not walked (`.git` even with --hidden).
    pub hidden: u64,
    /// Entries below a root matched by an ignore file, not walked.
    pub ignored: u64,
}

/// An input that could not be read.
#[derive(Debug, Serialize)]
pub struct ErrorOut {
    /// The path (lossy UTF-8).
    pub path: String,
    /// Base64 of the exact path bytes, present only when `path` is lossy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The line of a JSON Lines dump the error is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Why it could not be read.
    pub error: String,
}

/// A report's clusters: held in memory (`scan`), or read one at a time as they are written
/// (`stage report`, merging the partitions' files), so that writing a report holds a bounded
/// number of clusters whatever their count. Either way they are visited once, in order.
pub struct Clusters {
    len: usize,
    source: RefCell<Source>,
    /// Set while [`Clusters::elided`] runs.
    elided: Cell<bool>,
}

/// A stream of clusters in the report's order, numbered.
pub type ClusterStream = Box<dyn Iterator<Item = Result<ClusterOut>> + Send>;

enum Source {
    Held(Vec<ClusterOut>),
    Stream(Option<ClusterStream>),
}

impl Clusters {
    /// Clusters in memory.
    pub fn held(clusters: Vec<ClusterOut>) -> Clusters {
        Clusters {
            len: clusters.len(),
            source: RefCell::new(Source::Held(clusters)),
            elided: Cell::new(false),
        }
    }

    /// `len` clusters, read from `stream` as they are written.
    pub fn streamed(len: usize, stream: ClusterStream) -> Clusters {
        Clusters {
            len,
            source: RefCell::new(Source::Stream(Some(stream))),
            elided: Cell::new(false),
        }
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The clusters held in memory (none of a stream).
    #[cfg(test)]
    pub fn as_held(&self) -> std::cell::Ref<'_, [ClusterOut]> {
        std::cell::Ref::map(self.source.borrow(), |s| match s {
            Source::Held(v) => v.as_slice(),
            Source::Stream(_) => &[],
        })
    }

    /// Calls `f` on each cluster in order: once for a stream, which is then spent. A stream
    /// that ends early or runs long is an error, as its length was promised.
    pub fn each(&self, mut f: impl FnMut(&ClusterOut) -> Result<()>) -> Result<()> {
        self.each_window(1, |w| w.iter().try_for_each(&mut f))
    }

    /// Calls `f` on the clusters in order, up to `n` at a time (all of a window but the last
    /// hold `n`): once for a stream, which is then spent, holding at most `n` of its clusters.
    pub fn each_window(
        &self,
        n: usize,
        mut f: impl FnMut(&[ClusterOut]) -> Result<()>,
    ) -> Result<()> {
        let n = n.max(1);
        match &mut *self.source.borrow_mut() {
            Source::Held(v) => v.chunks(n).try_for_each(f),
            Source::Stream(stream) => {
                let Some(stream) = stream.take() else {
                    bail!("the report's clusters were read already");
                };
                let mut seen = 0;
                let mut window = Vec::with_capacity(n.min(self.len));
                for c in stream {
                    seen += 1;
                    if seen > self.len {
                        bail!("more clusters than the partitions' summaries count");
                    }
                    window.push(c?);
                    if window.len() == n {
                        f(&window)?;
                        window.clear();
                    }
                }
                if seen != self.len {
                    bail!(
                        "{seen} clusters where the partitions' summaries count {}",
                        self.len
                    );
                }
                if window.is_empty() {
                    Ok(())
                } else {
                    f(&window)
                }
            }
        }
    }

    /// Runs `f` while the clusters serialize as an empty array: the report around them, which
    /// [`super::pretty`] writes before the clusters it renders on several threads.
    pub fn elided<T>(&self, f: impl FnOnce() -> T) -> T {
        self.elided.set(true);
        let t = f();
        self.elided.set(false);
        t
    }
}

impl std::fmt::Debug for Clusters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.source.borrow() {
            Source::Held(v) => v.fmt(f),
            Source::Stream(_) => write!(f, "Clusters(a stream of {})", self.len),
        }
    }
}

impl Serialize for Clusters {
    /// A JSON array, as a `Vec` of them would be (its length given up front, so an empty one is
    /// `[]` as before).
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        if self.elided.get() {
            return serializer.serialize_seq(Some(0))?.end();
        }
        let mut seq = serializer.serialize_seq(Some(self.len))?;
        let mut failed = None;
        let walked = self.each(|c| {
            if let Err(e) = seq.serialize_element(c) {
                failed = Some(e);
                bail!("writing a cluster");
            }
            Ok(())
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if let Err(e) = walked {
            return Err(serde::ser::Error::custom(format!("{e:#}")));
        }
        seq.end()
    }
}
