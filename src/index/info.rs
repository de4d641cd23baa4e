//! `dupfind index info`: what an index holds (generation, identity, documents, files, bytes,
//! each segment) and what `index prune` would drop, after reading and checking everything:
//! every segment's rows, key blocks and blobs against their checksums, and each document
//! table against the manifest's.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::index::dir::sum_file;
use crate::index::gone::{survey, Prunable};
use crate::index::open::{DocRef, Opened};
use crate::index::store::{self, IndexParams};
use crate::messages::display_path;

/// The `index info` document.
#[derive(Debug, Serialize)]
pub struct Info {
    /// The report schema's version.
    pub schema_version: u32,
    /// 2 (segments) or 1 (one `index.dfx`).
    pub format_version: u32,
    /// 1 when built, one more at each commit.
    pub generation: u64,
    /// The index's random identity (format 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_id: Option<String>,
    /// Documents (removed ones not counted).
    pub documents: u64,
    /// The files they come from.
    pub files: u64,
    /// Bytes of the index's files (manifest, segments, document tables; or `index.dfx`).
    pub bytes: u64,
    /// The segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// What `index prune` would drop now.
    pub prune: Prunable,
    /// The parameters it was built with.
    pub params: IndexParams,
}

/// One segment.
#[derive(Debug, Serialize)]
pub struct SegmentInfo {
    /// Its file.
    pub file: String,
    /// Its rows.
    pub documents: u64,
    /// Of which removed since (by later segments' tombstones).
    pub removed: u64,
    /// Documents of older segments it removes.
    pub tombstones: u64,
    /// Bytes of its file and of its document table.
    pub bytes: u64,
    pub table_bytes: u64,
}

/// Opens, checks and describes the index in `dir`: one generation, whichever is live when it is
/// opened, even if a writer commits another meanwhile.
pub fn info(dir: &Path) -> Result<Info> {
    Opened::read_pinned(dir, describe)
}

/// Checks and describes the generation `index` is.
fn describe(index: &Opened) -> Result<Info> {
    let mut files: HashSet<Vec<u8>> = HashSet::new();
    index.for_each_live(|_, row| {
        files.insert(row.entry.path);
        Ok(())
    })?;
    let (_, prune) = survey(index, &HashSet::new())?;
    let mut segments = Vec::new();
    let mut bytes = 0;
    match &index.manifest {
        Some(m) => {
            bytes += index.manifest_bytes;
            for (i, (s, e)) in index.segments().iter().zip(&m.segments).enumerate() {
                s.verify()?;
                verify_table(index, &e.table, e.table_bytes, e.table_sum)?;
                let removed = (0..s.docs())
                    .filter(|&row| index.is_dead(DocRef { seg: i as u32, row }))
                    .count() as u64;
                bytes += e.bytes + e.table_bytes;
                segments.push(SegmentInfo {
                    file: e.file.clone(),
                    documents: e.documents,
                    removed,
                    tombstones: e.tombstones,
                    bytes: e.bytes,
                    table_bytes: e.table_bytes,
                });
            }
        }
        None => {
            // Every set is read, and its checksum checked.
            index.for_each_live(|d, row| {
                index.blob(d, &row)?;
                Ok(())
            })?;
            bytes += file_len(index, store::DATA)?;
        }
    }
    Ok(Info {
        schema_version: crate::report::SCHEMA_VERSION,
        format_version: index.format,
        generation: index.generation,
        index_id: index
            .manifest
            .as_ref()
            .map(|m| format!("{:032x}", m.index_id)),
        documents: index.live(),
        files: files.len() as u64,
        bytes,
        segments,
        prune,
        params: index.params.clone(),
    })
}

fn file_len(index: &Opened, name: &str) -> Result<u64> {
    let f = index
        .dir()
        .open_file(name)?
        .with_context(|| format!("{} is missing", display_path(&index.dir().join(name))))?;
    Ok(f.metadata()
        .with_context(|| format!("reading {}", display_path(&index.dir().join(name))))?
        .len())
}

fn verify_table(index: &Opened, name: &str, bytes: u64, sum: u64) -> Result<()> {
    let shown = display_path(&index.dir().join(name));
    let f = index.dir().open_file(name)?.with_context(|| {
        format!("{shown} is missing: the index's manifest lists it (corrupt index)")
    })?;
    let len = f
        .metadata()
        .with_context(|| format!("reading {shown}"))?
        .len();
    if len != bytes || sum_file(&f, len).with_context(|| format!("reading {shown}"))? != sum {
        bail!("{shown}: corrupt document table: not the one the manifest records");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::index::testing;

    /// A compaction that commits between `index info`'s opening of the index and its check
    /// of the document tables removes the tables of the generation it opened: described as it
    /// was, the index would look corrupt; `info` describes the new generation instead.
    #[test]
    fn a_compaction_committed_while_info_reads_is_waited_out_not_called_corruption() {
        let t = tempfile::tempdir().unwrap();
        testing::index(t.path(), &[3, 2, 4]);
        let mut attempts = Vec::new();
        let described = Opened::read_pinned(t.path(), |index| {
            if attempts.is_empty() {
                let done = crate::index::compact::compact(t.path()).unwrap();
                assert_eq!((done.generation, done.segments), (2, 1));
            }
            let d = describe(index);
            attempts.push(
                d.as_ref()
                    .map(|i| i.generation)
                    .map_err(|e| format!("{e:#}")),
            );
            d
        })
        .unwrap();
        assert_eq!(attempts.len(), 2, "{attempts:?}");
        let first = attempts[0].as_ref().unwrap_err();
        assert!(
            first.contains("seg-000001.docs.parquet is missing: the index's manifest lists it"),
            "{first}"
        );
        assert_eq!(attempts[1], Ok(2));
        assert_eq!((described.generation, described.documents), (2, 9));
        assert_eq!(described.segments.len(), 1);
        let manifest = std::fs::metadata(t.path().join(crate::index::manifest::MANIFEST));
        let segment = &described.segments[0];
        assert_eq!(
            described.bytes,
            manifest.unwrap().len() + segment.bytes + segment.table_bytes
        );
        // The same through `info` itself, with nothing racing it.
        assert_eq!(info(t.path()).unwrap().generation, 2);
    }

    /// A reader that fails on an index nothing commits to fails at once, with its error.
    #[test]
    fn a_failure_without_a_commit_is_not_retried() {
        let t = tempfile::tempdir().unwrap();
        testing::index(t.path(), &[2]);
        std::fs::remove_file(t.path().join("seg-000001.docs.parquet")).unwrap();
        let mut calls = 0;
        let e = Opened::read_pinned(t.path(), |index| {
            calls += 1;
            describe(index)
        })
        .unwrap_err();
        assert_eq!(calls, 1);
        assert!(format!("{e:#}").contains("is missing"), "{e:#}");
    }
}
