//! The index reader, format 2: a `manifest` (`index::manifest`) and the segment files it names
//! (`index::segment`), opened as `index info` and `scan --against` open them.

use std::cell::RefCell;
use std::ops::Range;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::index::keys::IndexKeying;
use crate::index::manifest::{self, Manifest, MANIFEST};
use crate::index::open::Opened;
use crate::index::segment::data_name;
use crate::index::segment::layout::{
    le32, le64, row_width, Section, BLOCK, ENTRY, FENCE, HEADER_LEN, MAGIC,
};
use crate::sketch::shingle::{ShingleKind, Shingler};

/// The largest stored content decompressed (a scan's `--max-size`).
const LIMIT: u64 = 1 << 20;

/// Live documents whose keys, blobs and sets are looked up.
const LOOKED_UP: usize = 64;

thread_local! {
    /// The index directory the inputs are written into, one per thread, made once.
    static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

/// Writes the rest of `data` as an index directory and opens it: the bytes before the first
/// segment magic (`DUPFSEG2`) are the manifest, each magic starts a segment file, named by the
/// number its header gives. When the first byte is odd the segments' checksums (header,
/// sections, key blocks, rows, blobs) are made right first, then the manifest's record of each
/// segment's length and header checksum and its own checksum, so the fuzzer reaches the
/// decoding behind them, as a forger who re-checksums files would.
///
/// Panics only where dupfind would: opening and reading fail with an error, never a panic. An
/// index that opens has the segments its manifest lists; its live documents, walked, are as many
/// as it counts; a row past a segment's last is an error; a live row read again is the same
/// row; looking up its keys, path and inode, and reading its blob and set, return.
pub fn index_segment(data: &[u8]) {
    let (pick, payload) = super::choice(data);
    let (mut manifest, mut segments) = split(payload);
    if pick % 2 == 1 {
        segments.iter_mut().for_each(|s| reseal_segment(s));
        reseal_manifest(&mut manifest, &segments);
    }
    DIR.with(|dir| {
        let mut dir = dir.borrow_mut();
        if dir.is_none() {
            *dir = tempfile::tempdir().ok();
        }
        let Some(dir) = dir.as_ref() else {
            return;
        };
        let path = dir.path();
        if let Ok(old) = std::fs::read_dir(path) {
            for entry in old.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        if std::fs::write(path.join(MANIFEST), &manifest).is_err() {
            return;
        }
        for s in &segments {
            let number = s.get(32..40).map_or(0, le64);
            if std::fs::write(path.join(data_name(number)), s).is_err() {
                return;
            }
        }
        check(path);
    });
}

fn check(path: &Path) {
    let Ok(index) = Opened::open(path) else {
        return;
    };
    let segments = index.segments();
    let listed = index.manifest.as_ref().map_or(0, |m| m.segments.len());
    assert_eq!(segments.len(), listed, "segments opened and listed differ");
    let rows: u64 = segments.iter().map(|s| u64::from(s.docs())).sum();
    assert!(index.live() <= rows, "more live documents than rows");
    for s in segments {
        let docs = s.docs();
        assert!(s.row(docs).is_err(), "a row past the last");
        assert!(s.row(u32::MAX).is_err(), "the largest row number");
        if docs > 0 {
            if let Ok(all) = s.rows(0, docs) {
                assert_eq!(all.len(), docs as usize, "rows read and declared differ");
            }
        }
        let _ = s.verify();
    }
    let mut walked = 0u64;
    let mut sample = Vec::new();
    let all = index.for_each_live(|d, row| {
        walked += 1;
        if sample.len() < LOOKED_UP {
            sample.push((d, row));
        }
        Ok(())
    });
    if all.is_ok() {
        assert_eq!(
            walked,
            index.live(),
            "live documents walked and counted differ"
        );
    }
    let tables = index.keying.table_ids();
    let mut keys = Vec::new();
    let mut shingler = Shingler::new(ShingleKind::Word, 5);
    for (d, row) in &sample {
        assert!(!index.is_dead(*d), "a removed document walked");
        let again = index.row(*d).ok();
        assert_eq!(again.as_ref(), Some(row), "a row read again differs");
        keys.clear();
        index.keying.entry_keys(&row.entry, &mut keys);
        for (&table, &key) in tables.iter().zip(&keys) {
            for (_, hit) in index.lookup(table, &[key]).into_iter().flatten() {
                let _ = index.row(hit);
            }
        }
        let _ = index.by_paths(std::slice::from_ref(&row.entry.path));
        let _ = index.by_inodes(&[(row.entry.dev, row.entry.inode)]);
        let _ = index.blob(*d, row);
        let _ = index.set(*d, &row.entry, &row.blob, &mut shingler, LIMIT);
    }
}

/// The manifest's bytes and each segment's.
fn split(payload: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut starts: Vec<usize> = payload
        .windows(MAGIC.len())
        .enumerate()
        .filter(|(_, w)| w == MAGIC)
        .map(|(i, _)| i)
        .collect();
    let manifest = payload[..starts.first().copied().unwrap_or(payload.len())].to_vec();
    starts.push(payload.len());
    let segments = starts
        .windows(2)
        .map(|w| payload[w[0]..w[1]].to_vec())
        .collect();
    (manifest, segments)
}

/// Where section `s` lies in `seg`, as its header says, if inside the file.
fn span(seg: &[u8], s: Section) -> Option<Range<usize>> {
    let at = 80 + 24 * s as usize;
    let offset = usize::try_from(le64(seg.get(at..at + 8)?)).ok()?;
    let len = usize::try_from(le64(seg.get(at + 8..at + 16)?)).ok()?;
    within(&(0..seg.len()), offset, len)
}

/// `len` bytes at `offset` in `range`, if they lie inside it.
fn within(range: &Range<usize>, offset: usize, len: usize) -> Option<Range<usize>> {
    let start = range.start.checked_add(offset)?;
    let end = start.checked_add(len)?;
    (end <= range.end).then_some(start..end)
}

fn put(seg: &mut [u8], at: usize, sum: u64) {
    seg[at..at + 8].copy_from_slice(&sum.to_le_bytes());
}

/// Writes every checksum a segment holds, inner ones first: each blob's and row's (in the row),
/// each key block's (in its fence), the checksummed sections' and the header's; and the row
/// width its signature length gives.
fn reseal_segment(seg: &mut [u8]) {
    let header = HEADER_LEN as usize;
    if seg.len() < header {
        return;
    }
    let width = row_width(le32(&seg[52..56]) as usize);
    if let Ok(w) = u32::try_from(width) {
        seg[48..52].copy_from_slice(&w.to_le_bytes());
    }
    let spans = (
        span(seg, Section::Sets),
        span(seg, Section::Rows),
        span(seg, Section::Strings),
    );
    if let (Some(sets), Some(rows), Some(strings)) = spans {
        for k in 0..rows.len() / width {
            reseal_row(seg, rows.start + k * width, width, &sets, &strings);
        }
    }
    let docs = le64(&seg[40..48]);
    let blocks = docs.div_ceil(BLOCK);
    if let (Some(keys), Some(fences), true) = (
        span(seg, Section::Keys),
        span(seg, Section::Fences),
        blocks > 0,
    ) {
        for i in 0..(fences.len() / FENCE as usize) as u64 {
            let (table, j) = (i / blocks, i % blocks);
            let first = j * BLOCK;
            let n = (docs - first).min(BLOCK);
            let block = table
                .checked_mul(docs)
                .and_then(|e| e.checked_add(first))
                .and_then(|e| e.checked_mul(ENTRY))
                .and_then(|at| within(&keys, usize::try_from(at).ok()?, (n * ENTRY) as usize));
            if let Some(block) = block {
                let sum = xxh3_64(&seg[block]);
                put(seg, fences.start + i as usize * FENCE as usize + 8, sum);
            }
        }
    }
    for s in [
        Section::Fences,
        Section::Tables,
        Section::Dicts,
        Section::Tombstones,
    ] {
        if let Some(r) = span(seg, s) {
            let sum = xxh3_64(&seg[r]);
            put(seg, 80 + 24 * s as usize + 16, sum);
        }
    }
    let sum = xxh3_64(&seg[..280]);
    put(seg, 280, sum);
}

/// The row at `at`: its blob's checksum, then its own (over its bytes, path and id).
fn reseal_row(
    seg: &mut [u8],
    at: usize,
    width: usize,
    sets: &Range<usize>,
    strings: &Range<usize>,
) {
    let field = |seg: &[u8], from: usize| le64(&seg[at + from..at + from + 8]) as usize;
    if let Some(blob) = within(sets, field(seg, 112), field(seg, 120)) {
        let sum = xxh3_64(&seg[blob]);
        put(seg, at + 128, sum);
    }
    let text = le32(&seg[at + 104..at + 108]) as usize + le32(&seg[at + 108..at + 112]) as usize;
    if let Some(text) = within(strings, field(seg, 96), text) {
        let mut covered = seg[at..at + width - 8].to_vec();
        covered.extend_from_slice(&seg[text]);
        put(seg, at + width - 8, xxh3_64(&covered));
    }
}

/// Makes the manifest's record of each segment (length, header checksum) the file's, and its
/// checksum its body's; a body that is not a manifest's JSON only gets its checksum.
fn reseal_manifest(bytes: &mut Vec<u8>, segments: &[Vec<u8>]) {
    let body = match bytes.iter().position(|&b| b == b'\n') {
        Some(nl) => &bytes[nl + 1..],
        None => &bytes[..],
    };
    let Ok(mut m) = serde_json::from_slice::<Manifest>(body) else {
        *bytes = manifest::seal(body);
        return;
    };
    for (entry, seg) in m.segments.iter_mut().zip(segments) {
        entry.bytes = seg.len() as u64;
        entry.header_sum = xxh3_64(&seg[..seg.len().min(HEADER_LEN as usize)]);
    }
    if let Ok(sealed) = m.encode() {
        *bytes = sealed;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The seeds are indexes the binary built: resealing changes none of their bytes, and each
    /// opens with every row walked.
    #[test]
    fn resealing_a_built_index_changes_nothing_and_it_opens() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/index_segment");
        let mut seen = 0;
        for entry in std::fs::read_dir(seeds).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            let (manifest, segments) = split(&data[1..]);
            assert!(!segments.is_empty());
            let mut resealed = segments.clone();
            resealed.iter_mut().for_each(|s| reseal_segment(s));
            assert_eq!(resealed, segments);
            let mut m = manifest.clone();
            reseal_manifest(&mut m, &segments);
            assert_eq!(m, manifest);
            let t = tempfile::tempdir().unwrap();
            std::fs::write(t.path().join(MANIFEST), &manifest).unwrap();
            for s in &segments {
                std::fs::write(t.path().join(data_name(le64(&s[32..40]))), s).unwrap();
            }
            let index = Opened::open(t.path()).unwrap();
            assert!(index.live() > 0);
            let mut walked = 0;
            index
                .for_each_live(|_, _| {
                    walked += 1;
                    Ok(())
                })
                .unwrap();
            assert_eq!(walked, index.live());
            seen += 1;
        }
        assert!(seen >= 2);
    }
}
