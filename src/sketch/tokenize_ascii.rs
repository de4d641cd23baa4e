//! The normalized text of an ASCII document in whole 64-byte blocks ([`normalize_ascii`]):
//! what character shingles are cut from, without cutting tokens one by one.

use crate::sketch::tokenize::from;
#[cfg(any(test, not(target_arch = "x86_64")))]
use crate::sketch::tokenize::{CLASS, HIGH, SPACE};
#[cfg(target_arch = "x86_64")]
use crate::sketch::tokenize_x86::norm64;

/// Bytes past the normalized text that [`normalize_ascii`] leaves in its buffer, so that a
/// caller may load 8 (up to 64) bytes from any position of the text.
pub const NORMALIZED_PAD: usize = 64;

/// [`normalize`](crate::sketch::tokenize::normalize) of an ASCII text, into `out[..len]`: returns `Some(len)`, or `None` when the
/// text has a byte from 0x80 (whose characters need decoding; `out` then holds junk). `out` is
/// grown to at least `text.len() +` [`NORMALIZED_PAD`] bytes and never shrunk; past `len` it
/// holds junk.
///
/// Speed: 64 bytes at a time, lowercased with white space turned into spaces in one SSE2 pass
/// that also gives the block's white-space and high-byte masks. A white-space byte is dropped
/// when the byte before it is white space too (or the text has not begun), and the kept runs
/// are moved with one 64-byte copy each: a block without two white-space bytes in a row (four
/// in five of the 64-byte blocks of English prose, where only paragraph breaks make them) is one
/// copy, no byte loop and no per-token work.
pub fn normalize_ascii(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    if out.len() < text.len() + NORMALIZED_PAD {
        out.resize(text.len() + NORMALIZED_PAD, 0);
    }
    // The lowered block, then 64 bytes that only pad the last copy of a block.
    let mut block = [0u8; 128];
    let mut len = 0;
    // Whether the byte before the current block is white space (or the text has not begun).
    let mut carry = 1u64;
    for chunk in text.chunks(64) {
        let end = chunk.len();
        let (lowered, _) = block.split_at_mut(64);
        let Ok(lowered) = <&mut [u8; 64]>::try_from(lowered) else {
            return None; // not reached: the split is at 64
        };
        let (space, high) = match <&[u8; 64]>::try_from(chunk) {
            Ok(chunk) => norm64(chunk, lowered),
            Err(_) => {
                let mut tail = [0u8; 64];
                tail[..end].copy_from_slice(chunk);
                norm64(&tail, lowered)
            }
        };
        if high != 0 {
            return None;
        }
        let mut drop = space & (space << 1 | carry) & !from(end as u32);
        carry = space >> 63;
        let mut pos = 0;
        while drop != 0 {
            let d = drop.trailing_zeros() as usize;
            out[len..len + 64].copy_from_slice(&block[pos..pos + 64]);
            len += d - pos;
            pos = d + 1;
            drop &= drop - 1;
        }
        out[len..len + 64].copy_from_slice(&block[pos..pos + 64]);
        len += end - pos;
    }
    // At most one white-space byte is left at the end: a run keeps its first.
    if len > 0 && out[len - 1] == b' ' {
        len -= 1;
    }
    Some(len)
}

/// The byte-table form of `norm64`: writes `block` into `out` with ASCII letters lowercased and
/// ASCII white space turned into spaces; returns its white space and its bytes from 0x80, one
/// bit per byte.
#[cfg(any(test, not(target_arch = "x86_64")))]
pub(super) fn norm_bytes(block: &[u8; 64], out: &mut [u8; 64]) -> (u64, u64) {
    let (mut space, mut high) = (0, 0);
    for (i, (o, &b)) in out.iter_mut().zip(block).enumerate() {
        let c = CLASS[b as usize];
        *o = if c == SPACE {
            b' '
        } else {
            b.to_ascii_lowercase()
        };
        space |= u64::from(c == SPACE) << i;
        high |= u64::from(c == HIGH) << i;
    }
    (space, high)
}

#[cfg(not(target_arch = "x86_64"))]
use norm_bytes as norm64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash::splitmix64;
    use crate::sketch::tokenize::normalize;

    #[test]
    fn ascii_normalizer_equals_normalize() {
        let mut state = 13u64;
        let alphabet = b"aB c\t\nDe.fG  \r\x0b\x0ch\0~Z";
        let mut out = Vec::new();
        // Under Miri, which runs about 10^4 times slower, across one block edge and one long text.
        let lengths = if cfg!(miri) { 0..70 } else { 0..200 };
        for len in lengths.chain(if cfg!(miri) {
            vec![500]
        } else {
            vec![500, 1000, 4096]
        }) {
            for spaces in [1, 4, 16] {
                let text: String = (0..len)
                    .map(|_| {
                        let r = splitmix64(&mut state) as usize;
                        // `spaces` picks how often a byte is white space.
                        char::from(if r % 16 < spaces {
                            b" \t\n\r\x0b\x0c"[(r >> 8) % 6]
                        } else {
                            alphabet[(r >> 8) % alphabet.len()]
                        })
                    })
                    .collect();
                let got = normalize_ascii(text.as_bytes(), &mut out);
                assert_eq!(
                    got.map(|n| &out[..n]),
                    Some(normalize(&text).as_bytes()),
                    "{text:?}"
                );
                assert!(out.len() >= got.unwrap_or(0) + NORMALIZED_PAD);
            }
        }
        // One byte from 0x80 anywhere, however late, is refused.
        for at in [0, 63, 64, 200, 999] {
            let mut text = "Ab ".repeat(400);
            text.insert(at, 'é');
            assert_eq!(normalize_ascii(text.as_bytes(), &mut out), None, "{at}");
        }
        // The buffer is reused: what a longer text left does not leak.
        assert_eq!(normalize_ascii(b"  X  ", &mut out), Some(1));
        assert_eq!(out[0], b'x');
        assert_eq!(normalize_ascii(b" \t\n", &mut out), Some(0));
    }
}
