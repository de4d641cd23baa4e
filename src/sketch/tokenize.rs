//! Tokenizing: decoded text → lowercased tokens, exactly as the README documents.
//!
//! Tokens are maximal runs of characters that are not Unicode `White_Space`, lowercased
//! character by character (`char::to_lowercase`, no context rules such as the Greek final
//! sigma). This module only cuts and lowercases; shingling and hashing are `shingle`'s (it
//! passes [`hash_words`] its token hash, so word shingles never see token bytes one by one).
//!
//! Speed: text is classified 64 bytes at a time into two bit masks (ASCII white space; bytes
//! that need more than copying: `A`–`Z` and everything from 0x80), and tokens are cut with
//! `trailing_zeros` on those masks. A byte loop that branches on every byte mispredicts at
//! every token end, about once per five bytes of English; the masks do not. A stretch between
//! ASCII spaces that holds a non-ASCII byte goes through the scalar tokenizer, which decodes
//! characters, since U+00A0, U+3000 and friends also separate tokens. [`hash_words`], the word
//! shingles' tokenizer, goes further (a lowercased copy, token starts and ends listed from the
//! masks, no per-token state machine; `tokenize_words`), and [`normalize_ascii`] normalizes an
//! ASCII text for character shingles in whole blocks (`tokenize_ascii`). The SSE2 forms of the
//! 64-byte block steps are in `tokenize_x86`; their byte-table forms, here and beside their
//! callers, are what other targets run and what the tests compare them with.

#[cfg(target_arch = "x86_64")]
use crate::sketch::tokenize_x86::classify64;

pub use crate::sketch::tokenize_ascii::normalize_ascii;
pub use crate::sketch::tokenize_words::{hash_words, Word, WordBuffers};

/// Byte classes (bit flags, so one test covers two).
const OTHER: u8 = 1;
pub(super) const UPPER: u8 = 2;
pub(super) const HIGH: u8 = 4;
pub(super) const SPACE: u8 = 8;

/// The class of every byte: Unicode `White_Space` in ASCII is TAB, LF, VT, FF, CR and SPACE
/// (`u8::is_ascii_whitespace` leaves out VT, which Unicode counts); bytes from 0x80 start or
/// continue a multi-byte character and need decoding.
pub(super) static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => SPACE,
            b'A'..=b'Z' => UPPER,
            0x80..=0xFF => HIGH,
            _ => OTHER,
        };
        b += 1;
    }
    t
};

/// Calls `emit` with the lowercased UTF-8 bytes of every token of `text`, in order. Tokens that
/// need lowercasing are built in `scratch`; the others are passed straight from `text`.
pub fn for_each_token(text: &str, scratch: &mut Vec<u8>, mut emit: impl FnMut(&[u8])) {
    for_each_token_at(text, scratch, |buf, start, end| emit(&buf[start..end]));
}

/// Bytes of zeros after a token built in the scratch buffer, so that [`for_each_token_at`]'s
/// callers can load 16 bytes from a token's start without running off the buffer.
pub const SCRATCH_PAD: usize = 16;

/// [`for_each_token`] with the token as `buf[start..end]`: `buf` is the text itself for a token
/// that needs no lowercasing, else the scratch buffer, where the token is followed by
/// [`SCRATCH_PAD`] zero bytes. Bytes of `buf` outside `start..end` are not part of the token;
/// a hash may load them and mask them off (see [`crate::sketch::shingle::token_hash_at`]).
pub fn for_each_token_at(
    text: &str,
    scratch: &mut Vec<u8>,
    mut emit: impl FnMut(&[u8], usize, usize),
) {
    let bytes = text.as_bytes();
    // The token being cut: its start and the special bytes seen so far (UPPER | HIGH flags).
    let mut open: Option<(usize, u8)> = None;
    for (block, base) in bytes.chunks(64).zip((0..).step_by(64)) {
        let masks = classify(block);
        let mut pos = 0u32;
        while pos < 64 {
            match open {
                Some((start, seen)) => {
                    let ends = masks.space & from(pos);
                    let end = ends.trailing_zeros();
                    let seen = seen | masks.flags(from(pos) & !from(end));
                    if ends == 0 {
                        open = Some((start, seen));
                        break;
                    }
                    let end_byte = base + end as usize;
                    if seen == 0 {
                        emit(bytes, start, end_byte);
                    } else {
                        special_token(text, start, end_byte, seen, scratch, &mut emit);
                    }
                    open = None;
                    pos = end;
                }
                None => {
                    let starts = !masks.space & from(pos);
                    if starts == 0 {
                        break;
                    }
                    pos = starts.trailing_zeros();
                    open = Some((base + pos as usize, 0));
                }
            }
        }
    }
    if let Some((start, seen)) = open {
        if seen == 0 {
            emit(bytes, start, bytes.len());
        } else {
            special_token(text, start, bytes.len(), seen, scratch, &mut emit);
        }
    }
}

/// Emits the token built in `scratch`, padded with [`SCRATCH_PAD`] zero bytes.
#[inline]
fn emit_scratch(scratch: &mut Vec<u8>, emit: &mut impl FnMut(&[u8], usize, usize)) {
    let n = scratch.len();
    scratch.resize(n + SCRATCH_PAD, 0);
    emit(scratch, 0, n);
}

/// A stretch between ASCII white space that needs lowercasing (`seen` has UPPER) or decoding
/// (`seen` has HIGH: it may also hold non-ASCII white space).
#[inline(never)]
fn special_token(
    text: &str,
    start: usize,
    end: usize,
    seen: u8,
    scratch: &mut Vec<u8>,
    emit: &mut impl FnMut(&[u8], usize, usize),
) {
    if seen & HIGH == 0 {
        scratch.clear();
        scratch.extend(
            text.as_bytes()[start..end]
                .iter()
                .map(u8::to_ascii_lowercase),
        );
        emit_scratch(scratch, emit);
    } else if text.is_char_boundary(start) && text.is_char_boundary(end) {
        scalar_tokens(text, start, end, scratch, emit);
    }
}

/// The classes of a block of at most 64 bytes, one bit per byte.
pub(super) struct Masks {
    /// ASCII white space; bits past the end of a short block are set too, so a token ends with
    /// the text.
    pub(super) space: u64,
    /// `A`–`Z`.
    pub(super) upper: u64,
    /// Bytes from 0x80.
    pub(super) high: u64,
}

impl Masks {
    /// UPPER and HIGH flags of the bytes selected by `range`.
    #[inline]
    fn flags(&self, range: u64) -> u8 {
        (u8::from(self.upper & range != 0) * UPPER) | (u8::from(self.high & range != 0) * HIGH)
    }
}

/// Bits `pos..64` set (none when `pos` is 64).
#[inline]
pub(super) fn from(pos: u32) -> u64 {
    u64::MAX.checked_shl(pos).unwrap_or(0)
}

/// The classes of a block of at most 64 bytes (a whole one in one SIMD step).
#[inline]
fn classify(block: &[u8]) -> Masks {
    let mut m = match <&[u8; 64]>::try_from(block) {
        Ok(block) => classify64(block),
        Err(_) => classify_bytes(block),
    };
    m.space |= from(block.len() as u32);
    m
}

/// The byte-table form of `classify64`.
pub(super) fn classify_bytes(block: &[u8]) -> Masks {
    let mut m = Masks {
        space: 0,
        upper: 0,
        high: 0,
    };
    for (i, &b) in block.iter().enumerate() {
        let c = CLASS[b as usize];
        m.space |= u64::from(c == SPACE) << i;
        m.upper |= u64::from(c == UPPER) << i;
        m.high |= u64::from(c == HIGH) << i;
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn classify64(block: &[u8; 64]) -> Masks {
    classify_bytes(block)
}

/// The tokenizer one byte at a time, decoding non-ASCII characters: used for the stretches
/// `text[from..to]` between ASCII spaces that hold a byte from 0x80 (both ends are character
/// boundaries).
pub(super) fn scalar_tokens(
    text: &str,
    from: usize,
    to: usize,
    scratch: &mut Vec<u8>,
    emit: &mut impl FnMut(&[u8], usize, usize),
) {
    let bytes = text.as_bytes();
    let n = to;
    let mut i = from;
    while i < n {
        match CLASS[bytes[i] as usize] {
            SPACE => {
                i += 1;
                continue;
            }
            HIGH => {
                let c = char_at(text, i);
                if c.is_whitespace() {
                    i += c.len_utf8();
                    continue;
                }
            }
            _ => {}
        }
        let start = i;
        let mut seen = 0u8;
        while i < n {
            let class = CLASS[bytes[i] as usize];
            if class & (SPACE | HIGH) == 0 {
                seen |= class;
                i += 1;
                continue;
            }
            if class == SPACE {
                break;
            }
            let c = char_at(text, i);
            if c.is_whitespace() {
                break;
            }
            seen |= HIGH;
            i += c.len_utf8();
        }
        if seen & (UPPER | HIGH) == 0 {
            emit(bytes, start, i);
        } else {
            scratch.clear();
            if seen & HIGH == 0 {
                scratch.extend(bytes[start..i].iter().map(u8::to_ascii_lowercase));
            } else {
                lowercase_into(&text[start..i], scratch);
            }
            emit_scratch(scratch, emit);
        }
    }
}

#[inline]
fn char_at(text: &str, i: usize) -> char {
    text.get(i..)
        .and_then(|s| s.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

fn lowercase_into(token: &str, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    for c in token.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase() as u8);
        } else {
            for l in c.to_lowercase() {
                out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

#[cfg(test)]
/// The normalized text itself (tokens joined by single spaces): what the shingles are cut from.
pub fn normalize(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut scratch = Vec::new();
    for_each_token(text, &mut scratch, |tok| {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(tok);
    });
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash::splitmix64;
    use crate::sketch::testing::{scalar, tokens};

    #[test]
    fn normalizes_case_and_every_unicode_space() {
        assert_eq!(
            normalize("  Hello\t\x0BWORLD\u{3000}Straße\u{00A0}ÉTÉ \r\n"),
            "hello world straße été"
        );
        assert_eq!(normalize("İ"), "i\u{307}");
        assert_eq!(normalize(" \n\t "), "");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn mask_tokenizer_matches_the_scalar_one_across_block_edges() {
        // Tokens of every length straddle the 64-byte block edges, with every separator.
        let pieces = [
            "a",
            "Bc",
            "déf",
            "GHIJ",
            "x\u{00A0}y",
            "long-token-of-more-than-sixty-four-bytes-\
             to-cross-a-whole-block-edge-and-then-some",
            "İx",
            "\u{FFFD}",
            "Z",
        ];
        let seps = [" ", "\t", "\n\r", "\x0B", "\x0C", "\u{3000}", "  \u{2028} "];
        let mut state = 11u64;
        // 40 texts under Miri, which runs about 10^4 times slower.
        for _ in 0..if cfg!(miri) { 40 } else { 300 } {
            let mut text = String::new();
            if splitmix64(&mut state).is_multiple_of(2) {
                text.push(' ');
            }
            for _ in 0..splitmix64(&mut state) % 40 {
                let r = splitmix64(&mut state) as usize;
                text.push_str(pieces[r % pieces.len()]);
                text.push_str(seps[(r >> 8) % seps.len()]);
            }
            assert_eq!(tokens(&text), scalar(&text), "{text:?}");
        }
        assert_eq!(tokens(&"ab ".repeat(64)).len(), 64);
        assert_eq!(tokens(&"x".repeat(128)), vec!["x".repeat(128)]);
    }
}
