//! How a segment stores what exact verification needs of a document: its content, compressed,
//! from which the shingle set is derived again exactly as from the file (the same decoding,
//! tokenizer and shingler, and the content hash checked first); or, for a document carried over
//! from a format-1 index, which kept no text, the set's hashes themselves, delta-coded.
//!
//! Why the content rather than the set: a set of 64-bit shingle hashes carries about 7.5 bytes
//! of entropy per hash, so no lossless coding of it gets far below the 1.28× of the text it
//! took as sorted u64s (8 bytes a hash, ~810 distinct word 5-shingles in a 5 KB document), and
//! 32-bit hashes would change exact Jaccard. The text itself, zstd-compressed with a dictionary
//! trained on the index's own documents, is about 0.37× (benchmark corpus, level 3).

use std::cell::RefCell;

use anyhow::{bail, Context, Result};
use zstd_safe::{CCtx, CDict, DCtx, DDict};

/// zstd level of stored contents: level 6 saved 3 % more than 3 for twice the time.
pub const LEVEL: i32 = 3;
/// Bytes of a trained dictionary.
pub const DICT_BYTES: usize = 64 << 10;
/// Contents sampled to train a dictionary, at most.
pub const SAMPLE_BYTES: usize = 8 << 20;
/// Fewer sampled bytes than this train no dictionary (zstd needs about 100× its size to do well;
/// below this a dictionary is not worth its space in a small segment).
pub const MIN_SAMPLE_BYTES: usize = 1 << 20;

/// What a stored blob holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobKind {
    /// The content, one zstd frame (with the row's dictionary, if it names one).
    Zstd,
    /// The content as it is (when compressing did not make it smaller).
    Plain,
    /// The sorted shingle hashes, delta-coded (documents of a format-1 index).
    Hashes,
}

impl BlobKind {
    /// The byte a row stores.
    pub fn code(self) -> u8 {
        match self {
            BlobKind::Zstd => 1,
            BlobKind::Plain => 2,
            BlobKind::Hashes => 3,
        }
    }

    /// The kind a stored byte names.
    pub fn from_code(code: u8) -> Option<BlobKind> {
        match code {
            1 => Some(BlobKind::Zstd),
            2 => Some(BlobKind::Plain),
            3 => Some(BlobKind::Hashes),
            _ => None,
        }
    }
}

/// Trains a dictionary on `samples` (document contents); None when they are too few or zstd
/// cannot make one of them.
pub fn train(samples: &[&[u8]]) -> Option<Vec<u8>> {
    let total: usize = samples.iter().map(|s| s.len()).sum();
    if total < MIN_SAMPLE_BYTES || samples.len() < 16 {
        return None;
    }
    let mut joined = Vec::with_capacity(total);
    let mut sizes = Vec::with_capacity(samples.len());
    for s in samples {
        joined.extend_from_slice(s);
        sizes.push(s.len());
    }
    let mut dict = vec![0u8; DICT_BYTES];
    match zstd_safe::train_from_buffer(&mut dict[..], &joined, &sizes) {
        Ok(n) if n > 0 => {
            dict.truncate(n);
            Some(dict)
        }
        _ => None,
    }
}

/// Compresses contents, with a dictionary when there is one. One per thread.
pub struct Packer<'d> {
    cctx: CCtx<'static>,
    cdict: Option<&'d CDict<'static>>,
    out: Vec<u8>,
}

impl<'d> Packer<'d> {
    /// A packer using `cdict` (made once per segment by [`cdict`]).
    pub fn new(cdict: Option<&'d CDict<'static>>) -> Packer<'d> {
        Packer {
            cctx: CCtx::create(),
            cdict,
            out: Vec::new(),
        }
    }

    /// The stored form of `content`: compressed, or as it is when that is no larger.
    pub fn pack(&mut self, content: &[u8]) -> Result<(BlobKind, Vec<u8>)> {
        self.out.resize(zstd_safe::compress_bound(content.len()), 0);
        let out = &mut self.out[..];
        let written = match self.cdict {
            Some(cdict) => self.cctx.compress_using_cdict(out, content, cdict),
            None => self.cctx.compress(out, content, LEVEL),
        };
        let n = written
            .map_err(|code| anyhow::anyhow!("compressing: {}", zstd_safe::get_error_name(code)))?;
        if n >= content.len() {
            return Ok((BlobKind::Plain, content.to_vec()));
        }
        Ok((BlobKind::Zstd, self.out[..n].to_vec()))
    }
}

/// The compression side of a dictionary.
pub fn cdict(dict: &[u8]) -> CDict<'static> {
    CDict::create(dict, LEVEL)
}

/// The decompression side of a dictionary.
pub fn ddict(dict: &[u8]) -> DDict<'static> {
    DDict::create(dict)
}

thread_local! {
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// The content a Zstd or Plain blob holds, which must be `declared` bytes long. Nothing larger
/// than `limit` bytes is allocated: a crafted blob declaring gigabytes is an error, not an
/// allocation.
pub fn unpack(
    kind: BlobKind,
    blob: &[u8],
    ddict: Option<&DDict<'static>>,
    declared: u64,
    limit: u64,
) -> Result<Vec<u8>> {
    if declared > limit {
        bail!(
            "a stored document of {declared} bytes is over the limit of {limit} bytes (--max-size)"
        );
    }
    match kind {
        BlobKind::Plain => {
            if blob.len() as u64 != declared {
                bail!("a stored document's length is not the one its row gives");
            }
            Ok(blob.to_vec())
        }
        BlobKind::Zstd => {
            match zstd_safe::get_frame_content_size(blob) {
                Ok(Some(n)) if n == declared => {}
                _ => bail!("a stored document's frame does not give the length its row gives"),
            }
            let mut out = vec![0u8; declared as usize];
            let n = DCTX.with(|cell| {
                let mut slot = cell.borrow_mut();
                let dctx = slot.get_or_insert_with(DCtx::create);
                match ddict {
                    Some(d) => dctx.decompress_using_ddict(&mut out[..], blob, d),
                    None => dctx.decompress(&mut out[..], blob),
                }
            });
            let n = n.map_err(|code| {
                anyhow::anyhow!(
                    "a stored document does not decompress: {}",
                    zstd_safe::get_error_name(code)
                )
            })?;
            if n as u64 != declared {
                bail!("a stored document decompresses to another length than its row gives");
            }
            Ok(out)
        }
        BlobKind::Hashes => bail!("a set of hashes holds no content"),
    }
}

/// Appends the sorted, distinct `set` delta-coded: the first value, then each difference from
/// the one before, as LEB128 varints.
pub fn encode_hashes(set: &[u64], out: &mut Vec<u8>) {
    let mut prev = 0u64;
    for (i, &v) in set.iter().enumerate() {
        let d = if i == 0 { v } else { v.wrapping_sub(prev) };
        crate::varint::put(d, out);
        prev = v;
    }
}

/// The set [`encode_hashes`] coded; an error unless the values strictly increase. At most one
/// value per byte of `blob` is allocated.
pub fn decode_hashes(blob: &[u8]) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut prev = 0u64;
    while at < blob.len() {
        let (d, used) = crate::varint::get(&blob[at..]).context("a stored set is cut short")?;
        at += used;
        let v = if out.is_empty() {
            d
        } else {
            if d == 0 {
                bail!("a stored set repeats a value");
            }
            prev.checked_add(d).context("a stored set runs past 2^64")?
        };
        out.push(v);
        prev = v;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hashes_round_trip_and_damage_is_an_error() {
        for set in [
            vec![],
            vec![0],
            vec![u64::MAX],
            vec![0, 1, 2, 1 << 40, u64::MAX - 1, u64::MAX],
        ] {
            let mut b = Vec::new();
            encode_hashes(&set, &mut b);
            assert_eq!(decode_hashes(&b).unwrap(), set);
        }
        let mut b = Vec::new();
        encode_hashes(&[5, 1 << 20], &mut b);
        assert!(decode_hashes(&b[..b.len() - 1]).is_err(), "cut short");
        assert!(decode_hashes(&[1, 0]).is_err(), "a repeat");
        assert!(decode_hashes(&[0xff; 11]).is_err(), "over 64 bits");
        assert!(
            decode_hashes(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]).is_err()
        );
    }

    fn corpus_texts() -> Vec<Vec<u8>> {
        let words = [
            "harbor", "bridge", "opened", "the", "a", "river", "of", "city",
        ];
        let mut state = 1u64;
        (0..400)
            .map(|_| {
                let mut t = Vec::new();
                for _ in 0..700 {
                    let w = words[crate::sketch::minhash::splitmix64(&mut state) as usize % 8];
                    t.extend_from_slice(w.as_bytes());
                    t.push(b' ');
                }
                t
            })
            .collect()
    }

    #[test]
    fn contents_round_trip_with_and_without_a_dictionary() {
        let texts = corpus_texts();
        let samples: Vec<&[u8]> = texts.iter().map(|t| &t[..]).collect();
        let dict = train(&samples).unwrap();
        assert!(dict.len() <= DICT_BYTES);
        let (c, d) = (cdict(&dict), ddict(&dict));
        for (cd, dd) in [(Some(&c), Some(&d)), (None, None)] {
            let mut packer = Packer::new(cd);
            for t in &texts[..5] {
                let (kind, blob) = packer.pack(t).unwrap();
                assert_eq!(kind, BlobKind::Zstd);
                assert!(blob.len() < t.len() / 2);
                let n = t.len() as u64;
                assert_eq!(&unpack(kind, &blob, dd, n, n).unwrap(), t);
                assert!(unpack(kind, &blob, dd, n + 1, 1 << 30).is_err());
                assert!(unpack(kind, &blob, dd, n, n - 1).is_err(), "over the limit");
                let mut bad = blob.clone();
                let mid = bad.len() / 2;
                bad[mid] ^= 0x55;
                if let Ok(out) = unpack(kind, &bad, dd, n, n) {
                    assert_ne!(&out, t);
                }
            }
        }
        // Incompressible content is stored as it is.
        let mut state = 3u64;
        let noise: Vec<u8> = (0..100)
            .map(|_| crate::sketch::minhash::splitmix64(&mut state) as u8)
            .collect();
        let (kind, blob) = Packer::new(None).pack(&noise).unwrap();
        assert_eq!((kind, &blob), (BlobKind::Plain, &noise));
        assert_eq!(unpack(kind, &blob, None, 100, 100).unwrap(), noise);
        assert!(train(&samples[..3]).is_none(), "too few samples");
    }
}
