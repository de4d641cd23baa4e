//! An open index: one generation, pinned. For format 2, the manifest and its segments (each
//! checked against the manifest, every small section in memory, tombstones applied as a bitmap
//! per segment); for format 1, the old `index.dfx` with its records in memory, as the builds
//! that wrote it held them. Either way it answers the questions a scan asks: the documents of a
//! path or an inode, the documents under some keys, a document's row and its set.
//!
//! A reader takes no lock. A writer that commits between the reader's reading the manifest and
//! opening a segment may have removed that segment (compaction): the reader then finds a newer
//! manifest and starts again, a few times at most. Once open, the segments are held open, so
//! their removal changes nothing; a reader that opens more of the generation later (`index
//! info` checks each document table) does so through [`Opened::read_pinned`], which starts
//! again in the same way.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use xxhash_rust::xxh3::xxh3_128;

use crate::index::codec::{self, BlobKind};
use crate::index::dir::IndexDir;
use crate::index::keys::{self, IndexKeying, Keying};
use crate::index::manifest::{self, Manifest};
use crate::index::segment::layout::{BlobRef, Row};
use crate::index::segment::Segment;
use crate::index::store::{self, Entry, IndexParams};
use crate::messages::display_path;

/// A document of an open index: its segment's position in the manifest and its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocRef {
    pub seg: u32,
    pub row: u32,
}

/// Where the documents are.
enum Source {
    Segments(Vec<Segment>),
    Legacy(Box<Legacy>),
}

/// A format-1 index, its records in memory.
struct Legacy {
    index: store::Index,
    by_path: HashMap<Vec<u8>, Vec<u32>>,
    by_inode: HashMap<(u64, u64), Vec<u32>>,
}

/// An open generation of an index.
pub struct Opened {
    dir: IndexDir,
    /// 1 or 2.
    pub format: u32,
    /// Its generation.
    pub generation: u64,
    /// Its identity: the manifest's random id (format 1: a value its header gives).
    pub identity: u128,
    /// The parameters it was built with.
    pub params: IndexParams,
    /// The manifest (format 2).
    pub manifest: Option<Manifest>,
    /// The manifest's length in bytes, as read (format 2; 0 for format 1).
    pub manifest_bytes: u64,
    /// How its segments are keyed (format 2).
    pub keying: Keying,
    source: Source,
    /// Per segment, a bit per removed row.
    dead: Vec<Vec<u64>>,
    live: u64,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Opened({}, generation {})",
            self.dir.path().display(),
            self.generation
        )
    }
}

/// A commit between reading the manifest and opening what it names is waited out this often.
const ATTEMPTS: u32 = 4;

impl Opened {
    /// Opens the index in `path`.
    pub fn open(path: &Path) -> Result<Opened> {
        let dir = IndexDir::open(path)?.with_context(|| {
            format!(
                "{} is not a dupfind index (no such directory)",
                display_path(path)
            )
        })?;
        Opened::open_in(dir)
    }

    /// Opens the index of an open directory.
    pub fn open_in(dir: IndexDir) -> Result<Opened> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let m = manifest::read_sized(&dir)?;
            let before = m.as_ref().map(|(m, _)| (m.index_id, m.generation));
            let opened = match m {
                Some((m, bytes)) => open_segments(&dir, m, bytes),
                None => open_legacy(&dir),
            };
            match opened {
                Ok((m, source)) => return Ok(Opened::new(dir, m, source)),
                Err(_) if attempt < ATTEMPTS && committed_since(&dir, before) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Opens the index in `path` and runs `read` on that generation. When `read` fails and a
    /// commit has replaced the generation since it was opened (a compaction removes the files
    /// of the generation it replaces, which `read` may open by name), starts again on the new
    /// one, a few times at most: the failure was the race, not the index.
    pub fn read_pinned<T>(path: &Path, mut read: impl FnMut(&Opened) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let index = Opened::open(path)?;
            match read(&index) {
                Ok(v) => return Ok(v),
                Err(_) if attempt < ATTEMPTS && index.replaced() => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// True when a commit has replaced the generation this one is.
    fn replaced(&self) -> bool {
        let pinned = self.manifest.as_ref().map(|m| (m.index_id, m.generation));
        committed_since(&self.dir, pinned)
    }

    fn new(dir: IndexDir, m: Pinned, source: Source) -> Opened {
        let mut opened = Opened {
            dir,
            format: m.format,
            generation: m.generation,
            identity: m.identity,
            keying: Keying::for_index(&m.params),
            params: m.params,
            manifest: m.manifest,
            manifest_bytes: m.manifest_bytes,
            source,
            dead: Vec::new(),
            live: 0,
        };
        opened.apply_tombstones();
        opened
    }

    fn apply_tombstones(&mut self) {
        let Source::Segments(segs) = &self.source else {
            if let Source::Legacy(l) = &self.source {
                self.live = l.index.entries().len() as u64;
            }
            return;
        };
        let position: HashMap<u64, usize> = segs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.number(), i))
            .collect();
        let mut dead: Vec<Vec<u64>> = segs
            .iter()
            .map(|s| vec![0u64; (s.docs() as usize).div_ceil(64)])
            .collect();
        let mut removed = 0u64;
        for s in segs {
            for &(number, row) in s.tombstones() {
                // A tombstone of a segment since merged away removes nothing any more.
                let Some(&i) = position.get(&number) else {
                    continue;
                };
                if row >= segs[i].docs() {
                    continue;
                }
                let (word, bit) = (row as usize / 64, row % 64);
                if dead[i][word] & (1 << bit) == 0 {
                    dead[i][word] |= 1 << bit;
                    removed += 1;
                }
            }
        }
        let rows: u64 = segs.iter().map(|s| u64::from(s.docs())).sum();
        self.live = rows - removed;
        self.dead = dead;
    }

    /// The index directory.
    pub fn dir(&self) -> &IndexDir {
        &self.dir
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Documents not removed.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// The open segments (none for format 1).
    pub fn segments(&self) -> &[Segment] {
        match &self.source {
            Source::Segments(s) => s,
            Source::Legacy(_) => &[],
        }
    }

    /// True for a removed document.
    pub fn is_dead(&self, d: DocRef) -> bool {
        self.dead
            .get(d.seg as usize)
            .and_then(|bits| bits.get(d.row as usize / 64))
            .is_some_and(|w| w & (1 << (d.row % 64)) != 0)
    }

    /// True when the index stores keys cut with `keying` (format 1 stores none).
    pub fn has_keys(&self, keying: &Keying) -> bool {
        matches!(self.source, Source::Segments(_)) && &self.keying == keying
    }

    /// The live documents whose key in table `table` is one of `keys` (sorted, distinct), as
    /// (key, document). Format 2 only: format 1 stores no keys.
    pub fn lookup(&self, table: u32, keys: &[u64]) -> Result<Vec<(u64, DocRef)>> {
        let Source::Segments(segs) = &self.source else {
            bail!("a format-1 index stores no keys");
        };
        let t = self
            .keying
            .table_ids()
            .iter()
            .position(|&id| id == table)
            .context("no such key table")?;
        let mut out = Vec::new();
        let mut found = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            found.clear();
            s.lookup(t, keys, &mut found)?;
            out.extend(
                found
                    .iter()
                    .map(|&(k, row)| (k, DocRef { seg: i as u32, row }))
                    .filter(|(_, d)| !self.is_dead(*d)),
            );
        }
        Ok(out)
    }

    /// For each of `paths` (stored path keys), the live documents stored under it.
    pub fn by_paths(&self, paths: &[Vec<u8>]) -> Result<Vec<Vec<(DocRef, Row)>>> {
        match &self.source {
            Source::Legacy(l) => Ok(paths.iter().map(|p| l.rows(l.by_path.get(p))).collect()),
            Source::Segments(_) => {
                let keys: Vec<u64> = paths.iter().map(|p| keys::path_key(p)).collect();
                self.rows_by_keys(keys::PATH, &keys, |i, r| r.entry.path == paths[i])
            }
        }
    }

    /// For each of `ids` (device, inode), the live documents of that inode ((0, 0): none).
    pub fn by_inodes(&self, ids: &[(u64, u64)]) -> Result<Vec<Vec<(DocRef, Row)>>> {
        match &self.source {
            Source::Legacy(l) => Ok(ids
                .iter()
                .map(|id| match id {
                    (0, 0) => Vec::new(),
                    id => l.rows(l.by_inode.get(id)),
                })
                .collect()),
            Source::Segments(_) => {
                let keys: Vec<u64> = ids.iter().map(|&(d, i)| keys::inode_key(d, i)).collect();
                self.rows_by_keys(keys::INODE, &keys, |i, r| {
                    ids[i] != (0, 0) && (r.entry.dev, r.entry.inode) == ids[i]
                })
            }
        }
    }

    /// For each of `wanted` (keys in `table`), the live rows under it that `keep` accepts;
    /// each row is read once.
    fn rows_by_keys(
        &self,
        table: u32,
        wanted: &[u64],
        keep: impl Fn(usize, &Row) -> bool,
    ) -> Result<Vec<Vec<(DocRef, Row)>>> {
        let mut sorted = wanted.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut under: HashMap<u64, Vec<DocRef>> = HashMap::new();
        for (k, d) in self.lookup(table, &sorted)? {
            under.entry(k).or_default().push(d);
        }
        let mut rows: HashMap<DocRef, Row> = HashMap::new();
        let mut out = Vec::with_capacity(wanted.len());
        for (i, k) in wanted.iter().enumerate() {
            let mut held = Vec::new();
            for &d in under.get(k).into_iter().flatten() {
                let row = match rows.get(&d) {
                    Some(r) => r.clone(),
                    None => {
                        let r = self.row(d)?;
                        rows.insert(d, r.clone());
                        r
                    }
                };
                if keep(i, &row) {
                    held.push((d, row));
                }
            }
            out.push(held);
        }
        Ok(out)
    }

    /// Document `d`'s row.
    pub fn row(&self, d: DocRef) -> Result<Row> {
        match &self.source {
            Source::Segments(segs) => segs
                .get(d.seg as usize)
                .context("no such segment")?
                .row(d.row),
            Source::Legacy(l) => l.row(d.row).context("no such record"),
        }
    }

    /// Calls `f` on every live document, a segment at a time in row order, reading rows in
    /// blocks (never the whole index at once).
    pub fn for_each_live(&self, mut f: impl FnMut(DocRef, Row) -> Result<()>) -> Result<()> {
        match &self.source {
            Source::Legacy(l) => {
                for i in 0..l.index.entries().len() as u32 {
                    if let Some(row) = l.row(i) {
                        f(DocRef { seg: 0, row: i }, row)?;
                    }
                }
            }
            Source::Segments(segs) => {
                for (seg, s) in (0..).zip(segs) {
                    s.for_each_row(|row, r| {
                        let d = DocRef { seg, row };
                        match self.is_dead(d) {
                            true => Ok(()),
                            false => f(d, r),
                        }
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The stored blob of document `d` (whose row is `row`), checked, and the dictionary it
    /// needs.
    pub fn blob(&self, d: DocRef, row: &Row) -> Result<(Vec<u8>, Option<&[u8]>)> {
        let blob = &row.blob;
        match &self.source {
            Source::Segments(segs) => {
                let s = segs.get(d.seg as usize).context("no such segment")?;
                let dict = match blob.dict {
                    Some(i) => Some(
                        s.dicts()
                            .get(usize::from(i))
                            .context("a row names a dictionary its segment lacks")?
                            .as_slice(),
                    ),
                    None => None,
                };
                Ok((s.blob(blob, row.entry.bytes)?, dict))
            }
            Source::Legacy(l) => {
                let set = l.index.read_set(d.row as usize)?;
                let mut out = Vec::new();
                codec::encode_hashes(&set, &mut out);
                Ok((out, None))
            }
        }
    }

    /// Document `d`'s shingle set: from its stored content (checked against its content hash,
    /// then decoded and shingled as a file read again is) or its stored hashes. `limit`: the
    /// largest content to decompress.
    pub fn set(
        &self,
        d: DocRef,
        entry: &Entry,
        blob: &BlobRef,
        shingler: &mut crate::sketch::shingle::Shingler,
        limit: u64,
    ) -> Result<Box<[u64]>> {
        if let Source::Legacy(l) = &self.source {
            return Ok(l.index.read_set(d.row as usize)?.into_boxed_slice());
        }
        let Source::Segments(segs) = &self.source else {
            bail!("no such segment");
        };
        let s = segs.get(d.seg as usize).context("no such segment")?;
        if blob.kind != BlobKind::Hashes && entry.bytes > limit {
            bail!(
                "{}: a stored document of {} bytes is over the limit of {limit} bytes (--max-size)",
                display_path(s.path()),
                entry.bytes
            );
        }
        let bytes = s.blob(blob, entry.bytes)?;
        let corrupt = |why: String| {
            anyhow::anyhow!(
                "{}: corrupt index segment: row {}: {why}",
                display_path(s.path()),
                d.row
            )
        };
        match blob.kind {
            BlobKind::Hashes => codec::decode_hashes(&bytes)
                .map(Vec::into_boxed_slice)
                .map_err(|e| corrupt(format!("{e:#}"))),
            kind => {
                let content = codec::unpack(kind, &bytes, s.ddict(blob.dict)?, entry.bytes, limit)
                    .map_err(|e| corrupt(format!("{e:#}")))?;
                if xxh3_128(&content) != entry.content_hash {
                    return Err(corrupt(
                        "its stored content does not hash to its content hash".into(),
                    ));
                }
                Ok(crate::ingest::reread::set_of_content(
                    shingler,
                    &content,
                    entry.line.is_some(),
                ))
            }
        }
    }
}

/// The generation a reader pinned.
struct Pinned {
    format: u32,
    generation: u64,
    identity: u128,
    params: IndexParams,
    manifest: Option<Manifest>,
    manifest_bytes: u64,
}

fn open_segments(dir: &IndexDir, m: Manifest, manifest_bytes: u64) -> Result<(Pinned, Source)> {
    let keying = Keying::for_index(&m.params);
    let lanes = m.params.lanes();
    if !keying.fits(lanes) {
        bail!(
            "{}: corrupt manifest: its bands do not fit in its signatures",
            display_path(&dir.join(manifest::MANIFEST))
        );
    }
    let segs = m
        .segments
        .iter()
        .map(|s| Segment::open(dir, &s.expected(m.index_id, lanes), &keying))
        .collect::<Result<Vec<_>>>()?;
    let pinned = Pinned {
        format: manifest::FORMAT_VERSION,
        generation: m.generation,
        identity: m.index_id,
        params: m.params.clone(),
        manifest: Some(m),
        manifest_bytes,
    };
    Ok((pinned, Source::Segments(segs)))
}

/// Refuses `dir` when it holds neither a manifest nor a format-1 index's data file.
pub(crate) fn check_holds_index(dir: &IndexDir) -> Result<()> {
    if dir.open_file(manifest::MANIFEST)?.is_none() && dir.open_file(store::DATA)?.is_none() {
        bail!(
            "{} is not a dupfind index (it has no {} or {})",
            display_path(dir.path()),
            manifest::MANIFEST,
            store::DATA
        );
    }
    Ok(())
}

fn open_legacy(dir: &IndexDir) -> Result<(Pinned, Source)> {
    // Reached without a manifest: the data file is all that remains to find.
    check_holds_index(dir)?;
    let index = store::Index::open_in(dir)?;
    let mut by_path: HashMap<Vec<u8>, Vec<u32>> = HashMap::new();
    let mut by_inode: HashMap<(u64, u64), Vec<u32>> = HashMap::new();
    for (i, e) in index.entries().iter().enumerate() {
        by_path.entry(e.path.clone()).or_default().push(i as u32);
        if (e.dev, e.inode) != (0, 0) {
            by_inode.entry((e.dev, e.inode)).or_default().push(i as u32);
        }
    }
    let pinned = Pinned {
        format: store::FORMAT_VERSION,
        generation: index.generation(),
        identity: u128::from(index.stamp()),
        params: index.params().clone(),
        manifest: None,
        manifest_bytes: 0,
    };
    Ok((
        pinned,
        Source::Legacy(Box::new(Legacy {
            index,
            by_path,
            by_inode,
        })),
    ))
}

impl Legacy {
    fn row(&self, i: u32) -> Option<Row> {
        let entry = self.index.entries().get(i as usize)?.clone();
        Some(Row {
            entry,
            blob: BlobRef {
                kind: BlobKind::Hashes,
                offset: 0,
                len: 0,
                sum: 0,
                dict: None,
            },
        })
    }

    fn rows(&self, held: Option<&Vec<u32>>) -> Vec<(DocRef, Row)> {
        held.into_iter()
            .flatten()
            .filter_map(|&i| Some((DocRef { seg: 0, row: i }, self.row(i)?)))
            .collect()
    }
}

/// True when a commit replaced the manifest read as `before` (None: there was none).
fn committed_since(dir: &IndexDir, before: Option<(u128, u64)>) -> bool {
    match manifest::read(dir) {
        Ok(Some(m)) => Some((m.index_id, m.generation)) != before,
        _ => false,
    }
}
