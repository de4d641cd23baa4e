//! `dupfind index info`: what an index holds (generation, identity, documents, files, bytes,
//! each segment) and what `index prune` would drop, after reading and checking everything:
//! every segment's rows, key blocks and blobs against their checksums, and each document
//! table against the manifest's.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::index::manifest::MANIFEST;
use crate::index::open::Opened;
use crate::index::prune::{survey, Prunable};
use crate::index::segment::write::sum_file;
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

/// Opens, checks and describes the index in `dir`.
pub fn info(dir: &Path) -> Result<Info> {
    let index = Opened::open(dir)?;
    let mut files: HashSet<Vec<u8>> = HashSet::new();
    index.for_each_live(|_, row| {
        files.insert(row.entry.path);
        Ok(())
    })?;
    let (_, prune) = survey(&index, &HashSet::new())?;
    let mut segments = Vec::new();
    let mut bytes = 0;
    match &index.manifest {
        Some(m) => {
            bytes += file_len(&index, MANIFEST)?;
            for (i, (s, e)) in index.segments().iter().zip(&m.segments).enumerate() {
                s.verify()?;
                verify_table(&index, &e.table, e.table_bytes, e.table_sum)?;
                let removed = (0..s.docs())
                    .filter(|&row| index.is_dead(crate::index::open::DocRef { seg: i as u32, row }))
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
            bytes += file_len(&index, store::DATA)?;
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
