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
//! masks, no per-token state machine); see its documentation.

/// Byte classes (bit flags, so one test covers two).
const OTHER: u8 = 1;
const UPPER: u8 = 2;
const HIGH: u8 = 4;
const SPACE: u8 = 8;

/// The class of every byte: Unicode `White_Space` in ASCII is TAB, LF, VT, FF, CR and SPACE
/// (`u8::is_ascii_whitespace` leaves out VT, which Unicode counts); bytes from 0x80 start or
/// continue a multi-byte character and need decoding.
static CLASS: [u8; 256] = {
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

/// A token as [`hash_words`] hands it to the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word<'a> {
    /// A token of at most 16 bytes: its lowercased bytes as two little-endian words, zero
    /// past the token, and its length.
    Short(u64, u64, usize),
    /// Any other token: its lowercased bytes.
    Bytes(&'a [u8]),
}

/// Reusable buffers of [`hash_words`].
#[derive(Clone, Debug, Default)]
pub struct WordBuffers {
    /// The text with ASCII letters lowercased, in whole 64-byte blocks (the last one
    /// zero-padded), then at least 16 more bytes, so 16 bytes can be loaded from any token
    /// start. Longer after a longer text: only the text's blocks are meaningful.
    lower: Vec<u8>,
    /// ASCII white space of each 64-byte block, one bit per byte (set past the text's end).
    spaces: Vec<u64>,
    /// A token lowercased by the byte-by-byte path.
    token: Vec<u8>,
    /// Token starts and ends of a group of blocks (see `words`).
    starts: Vec<usize>,
    ends: Vec<usize>,
}

/// Hashes the tokens of [`for_each_token`]: writes `hash(token)` for each, in order, to
/// `out[..count]` and returns the count. ASCII tokens of at most 16 bytes come to `hash` as
/// [`Word::Short`], the others as [`Word::Bytes`]. `out` is grown (zero-filled) to hold the most
/// tokens the text can have, never shrunk: kept between texts, it is zeroed only when it grows.
///
/// The hashes are written by index, not pushed, and the count is a local: a push, or any state
/// of the caller's updated per token, kept a length in memory, one store and reload chained
/// through every token.
///
/// Speed: a first pass over the text, 16 bytes per SSE2 step, writes the ASCII-lowercased text
/// and the white-space mask of each 64-byte block. Token starts and ends are bit masks derived
/// from it (a start is a non-space byte after a space, an end a space after a non-space byte);
/// their positions are listed block by block, so the k-th start pairs with the k-th end and no
/// per-byte or per-token state machine mispredicts. A token is then two 8-byte loads from the
/// lowercased copy, masked to its length, with no branch on its length or case. Only a stretch
/// between ASCII spaces that holds a byte from 0x80 (or is longer than 16 bytes) takes the
/// byte-by-byte path, which decodes characters as [`for_each_token_at`] does. On x86-64 CPUs
/// with BMI1 and POPCNT (detected at run time) the same code is compiled with them.
pub fn hash_words(
    text: &str,
    bufs: &mut WordBuffers,
    hash: impl Fn(Word<'_>) -> u64,
    out: &mut Vec<u64>,
) -> usize {
    // Every token takes a byte and, but for the last, a separator.
    let bound = text.len() / 2 + 1;
    if out.len() < bound {
        out.resize(bound, 0);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("bmi1") && std::arch::is_x86_feature_detected!("popcnt")
    {
        // SAFETY: the CPU has the features `words_bmi` is compiled for (checked just above).
        return unsafe { words_bmi(text, bufs, &hash, out) };
    }
    words(text, bufs, &hash, out)
}

/// [`words`] compiled with BMI1 and POPCNT, which list token starts and ends in fewer
/// instructions (`tzcnt` without a zero check, `blsr`, `popcnt` instead of a bit-twiddled
/// count): word-5 shingling about 5% faster. The CPU must have both.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,popcnt")]
fn words_bmi(
    text: &str,
    bufs: &mut WordBuffers,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [u64],
) -> usize {
    words(text, bufs, hash, out)
}

/// The body of [`hash_words`].
#[inline(always)]
fn words(
    text: &str,
    bufs: &mut WordBuffers,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [u64],
) -> usize {
    let mut count = 0;
    let bytes = text.as_bytes();
    let len = bytes.len();
    let WordBuffers {
        lower,
        spaces,
        token,
        starts,
        ends,
    } = bufs;
    // `lower` is written in place and kept between texts, so it is zeroed only when it grows;
    // what lies past the text (padding, bytes of an earlier text) is never part of a token,
    // since tokens are masked to their length.
    let blocks = len.div_ceil(64);
    if lower.len() < blocks * 64 + 16 {
        lower.resize(blocks * 64 + 16, 0);
    }
    spaces.clear();
    spaces.reserve(blocks);
    for (chunk, out) in bytes.chunks(64).zip(lower.chunks_exact_mut(64)) {
        let Ok(out) = <&mut [u8; 64]>::try_from(out) else {
            break; // not reached: chunks_exact_mut gives 64 bytes
        };
        if chunk.len() == 64 {
            spaces.push(lower64(chunk, out));
        } else {
            let mut tail = [0u8; 64];
            tail[..chunk.len()].copy_from_slice(chunk);
            spaces.push(lower64(&tail, out) | from(chunk.len() as u32));
        }
    }
    let lower = &lower[..];
    // Token starts and ends are listed for GROUP blocks at a time, then the tokens of the group
    // are emitted: the loops' exits mispredict once per group, not once per block.
    // (Kept in `bufs`: zeroing two arrays of this size took 1% of the time per text.)
    starts.resize(GROUP * 32 + 24, 0);
    ends.resize(GROUP * 32 + 24, 0);
    let (starts, ends) = (&mut starts[..], &mut ends[..]);
    // Whether the byte before the current block belongs to a token.
    let mut carry = 0u64;
    for (group, gbase) in spaces.chunks(GROUP).zip((0..).step_by(64 * GROUP)) {
        // A token still open from the previous group comes first: its start is in starts[0].
        let mut ns = usize::from(carry != 0);
        let mut ne = 0;
        for (&space, base) in group.iter().zip((gbase..).step_by(64)) {
            let word = !space;
            let prev = word << 1 | carry;
            ns = list_bits(word & !prev, base, starts, ns);
            ne = list_bits(space & prev, base, ends, ne);
            carry = word >> 63;
        }
        for (&start, &end) in starts[..ne].iter().zip(&ends[..ne]) {
            count = word_at(text, lower, start, end, token, hash, out, count);
        }
        if ns > ne {
            starts[0] = starts[ne];
        }
    }
    if carry != 0 {
        // Only when the text fills its last block: a shorter block's padding is white space.
        count = word_at(text, lower, starts[0], len, token, hash, out, count);
    }
    count
}

/// Blocks of 64 bytes whose tokens [`hash_words`] lists before hashing them.
const GROUP: usize = 16;

/// Appends `base` + the position of every set bit of `mask` to `out` from index `n`; returns
/// the new count. The first 8 (and 16) positions are written without looking at the count, so
/// the usual block takes no branch that depends on how many tokens it holds; the slots written
/// past the count hold junk and are overwritten or ignored. `out` has room for 16 past the
/// last real position.
#[inline(always)]
fn list_bits(mut mask: u64, base: usize, out: &mut [usize], n: usize) -> usize {
    let count = mask.count_ones() as usize;
    let mut i = n;
    for _ in 0..8 {
        out[i] = base + mask.trailing_zeros() as usize;
        mask &= mask.wrapping_sub(1);
        i += 1;
    }
    if count > 8 {
        for _ in 0..8 {
            out[i] = base + mask.trailing_zeros() as usize;
            mask &= mask.wrapping_sub(1);
            i += 1;
        }
        while mask != 0 {
            out[i] = base + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i += 1;
        }
    }
    n + count
}

/// Bytes 0x01 repeated.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Masks of the first n bytes of a token's two words, for n = 0..=16.
static WORD_MASKS: [(u64, u64); 17] = {
    let mut t = [(0u64, 0u64); 17];
    let mut n = 1;
    while n <= 16 {
        let m = u128::MAX >> (128 - 8 * n);
        t[n] = (m as u64, (m >> 64) as u64);
        n += 1;
    }
    t
};

/// Hashes the token `text[start..end]` (between ASCII white space, or the text's ends), read
/// from `lower`, the lowercased copy, into `out[count]`; returns the new count.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn word_at(
    text: &str,
    lower: &[u8],
    start: usize,
    end: usize,
    scratch: &mut Vec<u8>,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [u64],
    count: usize,
) -> usize {
    let n = end - start;
    if let (Some(&(ml, mh)), Some(w)) = (WORD_MASKS.get(n), lower.get(start..start + 16)) {
        let (lo, hi) = (le64(w) & ml, le64(&w[8..]) & mh);
        if (lo | hi) & (0x80 * ONES) == 0 {
            out[count] = hash(Word::Short(lo, hi, n));
            return count + 1;
        }
    }
    special_word(text, start, end, scratch, hash, out, count)
}

#[inline(always)]
fn le64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

/// A token [`word_at`] cannot pass as a [`Word::Short`]: longer than 16 bytes, or holding a
/// byte from 0x80 (then maybe several tokens, cut by non-ASCII white space).
#[inline(never)]
fn special_word(
    text: &str,
    start: usize,
    end: usize,
    scratch: &mut Vec<u8>,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [u64],
    mut count: usize,
) -> usize {
    let tok = &text.as_bytes()[start..end];
    if !tok.is_ascii() {
        if text.is_char_boundary(start) && text.is_char_boundary(end) {
            scalar_tokens(text, start, end, scratch, &mut |b: &[u8], s, e| {
                out[count] = hash(Word::Bytes(&b[s..e]));
                count += 1;
            });
        }
    } else if tok.iter().any(u8::is_ascii_uppercase) {
        scratch.clear();
        scratch.extend(tok.iter().map(u8::to_ascii_lowercase));
        out[count] = hash(Word::Bytes(scratch));
        count += 1;
    } else {
        out[count] = hash(Word::Bytes(tok));
        count += 1;
    }
    count
}

/// Writes the 64-byte `block` with ASCII letters lowercased into `out` and returns its ASCII
/// white space, one bit per byte.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lower64(block: &[u8], out: &mut [u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    assert_eq!(block.len(), 64);
    let mut space = 0;
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads stay
    // inside the 64-byte block (asserted) and the four stores inside `out`.
    unsafe {
        let bit = _mm_set1_epi8(0x20);
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * i) as *const __m128i);
            let (ws, upper) = space_and_upper16(v);
            let l = _mm_or_si128(v, _mm_and_si128(upper, bit));
            _mm_storeu_si128(out.as_mut_ptr().add(16 * i) as *mut __m128i, l);
            space |= u64::from(_mm_movemask_epi8(ws) as u16) << (16 * i);
        }
    }
    space
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn lower64(block: &[u8], out: &mut [u8; 64]) -> u64 {
    for (o, b) in out.iter_mut().zip(block) {
        *o = b.to_ascii_lowercase();
    }
    space_bytes(block)
}

/// ASCII white space of a block of at most 64 bytes, one bit per byte.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn space_bytes(block: &[u8]) -> u64 {
    block.iter().enumerate().fold(0, |m, (i, &b)| {
        m | u64::from(CLASS[b as usize] == SPACE) << i
    })
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
struct Masks {
    /// ASCII white space; bits past the end of a short block are set too, so a token ends with
    /// the text.
    space: u64,
    /// `A`–`Z`.
    upper: u64,
    /// Bytes from 0x80.
    high: u64,
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
fn from(pos: u32) -> u64 {
    u64::MAX.checked_shl(pos).unwrap_or(0)
}

#[inline]
fn classify(block: &[u8]) -> Masks {
    let mut m = if block.len() == 64 {
        classify64(block)
    } else {
        classify_bytes(block)
    };
    m.space |= from(block.len() as u32);
    m
}

fn classify_bytes(block: &[u8]) -> Masks {
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

/// The ASCII white-space lanes (TAB..CR, SPACE) and the `A`–`Z` lanes of 16 bytes, 0xFF where
/// true: what both the block classifier and the lowercasing copy need.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn space_and_upper16(
    v: std::arch::x86_64::__m128i,
) -> (std::arch::x86_64::__m128i, std::arch::x86_64::__m128i) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; register operations only.
    unsafe {
        // Unsigned `x - lo <= span` via `min(x - lo, span) == x - lo`: TAB..CR and A..Z.
        let t = _mm_sub_epi8(v, _mm_set1_epi8(9));
        let ws = _mm_or_si128(
            _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(4)), t),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8)),
        );
        let u = _mm_sub_epi8(v, _mm_set1_epi8(b'A' as i8));
        let upper = _mm_cmpeq_epi8(_mm_min_epu8(u, _mm_set1_epi8(25)), u);
        (ws, upper)
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn classify64(block: &[u8]) -> Masks {
    use std::arch::x86_64::*;
    debug_assert_eq!(block.len(), 64);
    let mut m = Masks {
        space: 0,
        upper: 0,
        high: 0,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads stay
    // inside the 64-byte block.
    unsafe {
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * i) as *const __m128i);
            let (ws, upper) = space_and_upper16(v);
            let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * i);
            m.space |= bits(ws);
            m.upper |= bits(upper);
            // The sign bit is set exactly for bytes from 0x80.
            m.high |= bits(v);
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn classify64(block: &[u8]) -> Masks {
    classify_bytes(block)
}

/// The tokenizer one byte at a time, decoding non-ASCII characters: used for the stretches
/// `text[from..to]` between ASCII spaces that hold a byte from 0x80 (both ends are character
/// boundaries).
fn scalar_tokens(
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

/// Bytes past the normalized text that [`normalize_ascii`] leaves in its buffer, so that a
/// caller may load 8 (up to 64) bytes from any position of the text.
pub const NORMALIZED_PAD: usize = 64;

/// [`normalize`] of an ASCII text, into `out[..len]`: returns `Some(len)`, or `None` when the
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
        let (space, high) = if end == 64 {
            norm64(chunk, lowered)
        } else {
            let mut tail = [0u8; 64];
            tail[..end].copy_from_slice(chunk);
            norm64(&tail, lowered)
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

/// Writes the 64-byte `block` into `out` with ASCII letters lowercased and ASCII white space
/// turned into spaces; returns its white space and its bytes from 0x80, one bit per byte.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn norm64(block: &[u8], out: &mut [u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::*;
    assert_eq!(block.len(), 64);
    let (mut space, mut high) = (0, 0);
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads stay
    // inside the 64-byte block (asserted) and the four stores inside `out`.
    unsafe {
        let (bit, blank) = (_mm_set1_epi8(0x20), _mm_set1_epi8(b' ' as i8));
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * i) as *const __m128i);
            let (ws, upper) = space_and_upper16(v);
            let l = _mm_or_si128(v, _mm_and_si128(upper, bit));
            let l = _mm_or_si128(_mm_andnot_si128(ws, l), _mm_and_si128(ws, blank));
            _mm_storeu_si128(out.as_mut_ptr().add(16 * i) as *mut __m128i, l);
            space |= u64::from(_mm_movemask_epi8(ws) as u16) << (16 * i);
            high |= u64::from(_mm_movemask_epi8(v) as u16) << (16 * i);
        }
    }
    (space, high)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn norm64(block: &[u8], out: &mut [u8; 64]) -> (u64, u64) {
    norm_bytes(block, out)
}

/// The byte-table form of `norm64`.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn norm_bytes(block: &[u8], out: &mut [u8; 64]) -> (u64, u64) {
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

    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_token(text, &mut Vec::new(), |t| {
            out.push(String::from_utf8_lossy(t).into_owned())
        });
        out
    }

    fn scalar(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        scalar_tokens(
            text,
            0,
            text.len(),
            &mut Vec::new(),
            &mut |b: &[u8], s, e| out.push(String::from_utf8_lossy(&b[s..e]).into_owned()),
        );
        out
    }

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
    fn block_masks_match_the_byte_table() {
        let mut block = [0u8; 64];
        for start in (0..256).step_by(64) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            let (a, b) = (classify64(&block), classify_bytes(&block));
            assert_eq!(
                (a.space, a.upper, a.high),
                (b.space, b.upper, b.high),
                "bytes {start}.."
            );
        }
    }

    /// The tokens of [`hash_words`], as strings; the same from its portable body.
    /// `shared` is reused from text to text, as a shingler reuses it: what an earlier, longer
    /// text left in it must not leak into the tokens.
    fn word_strings(text: &str, shared: &mut WordBuffers) -> Vec<String> {
        let mut run = |portable: bool| {
            let got = std::cell::RefCell::new(Vec::new());
            let hash = |w: Word<'_>| {
                got.borrow_mut().push(word_string(w));
                got.borrow().len() as u64
            };
            // `hash_words` sizes its own buffer; the portable body gets one long enough for
            // any text, of which only the first `count` slots may be written.
            let mut out = Vec::new();
            let count = if portable {
                out = vec![u64::MAX; text.len() + 9];
                words(text, &mut WordBuffers::default(), &hash, &mut out)
            } else {
                hash_words(text, shared, hash, &mut out)
            };
            let got = got.into_inner();
            let want: Vec<u64> = (1..=got.len() as u64).collect();
            assert_eq!(out[..count], want[..]);
            got
        };
        let out = run(false);
        assert_eq!(out, run(true));
        out
    }

    fn word_string(w: Word<'_>) -> String {
        {
            let bytes = match w {
                Word::Short(lo, hi, n) => {
                    assert!((1..=16).contains(&n), "{n}");
                    let mut b = [lo.to_le_bytes(), hi.to_le_bytes()].concat();
                    // Zero past the token.
                    assert!(b[n..].iter().all(|&x| x == 0), "{b:?} {n}");
                    b.truncate(n);
                    b
                }
                Word::Bytes(t) => t.to_vec(),
            };
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }

    #[test]
    fn normalized_blocks_match_the_byte_table() {
        let mut block = [0u8; 64];
        let (mut fast, mut portable) = ([0u8; 64], [0u8; 64]);
        for start in (0..256).step_by(64) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            assert_eq!(
                norm64(&block, &mut fast),
                norm_bytes(&block, &mut portable),
                "{start}.."
            );
            assert_eq!(fast, portable, "{start}..");
        }
    }

    #[test]
    fn ascii_normalizer_equals_normalize() {
        let mut state = 13u64;
        let alphabet = b"aB c\t\nDe.fG  \r\x0b\x0ch\0~Z";
        let mut out = Vec::new();
        for len in (0..200).chain([500, 1000, 4096]) {
            for spaces in [1, 4, 16] {
                let text: String = (0..len)
                    .map(|_| {
                        let r = crate::sketch::minhash::splitmix64(&mut state) as usize;
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

    #[test]
    fn lowered_blocks_match_the_byte_table() {
        let mut block = [0u8; 64];
        let mut out = [0u8; 64];
        for start in (0..256).step_by(64) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            assert_eq!(lower64(&block, &mut out), space_bytes(&block), "{start}..");
            let want: Vec<u8> = block.iter().map(u8::to_ascii_lowercase).collect();
            assert_eq!(out.to_vec(), want, "{start}..");
        }
    }

    #[test]
    fn word_tokenizer_matches_the_token_one() {
        // Texts up to a few KB, so tokens straddle block and group edges, of every length class
        // (1..=16 bytes and longer), case, and separator, near the end of the text or not.
        let pieces = [
            "a",
            "Bc",
            "déf",
            "GHIJ",
            "sixteen-bytes-xy",
            "Sixteen-Bytes-XY",
            "seventeen-bytes-z",
            "x\u{00A0}y",
            "long-token-of-more-than-sixty-four-bytes-\
             to-cross-a-whole-block-edge-and-then-SOME",
            "İx",
            "\u{FFFD}",
            "Z",
            "\0\x01~",
            "[@`{]",
        ];
        let seps = [
            " ",
            "\t",
            "\n\r",
            "\x0B",
            "\x0C",
            "\u{3000}",
            "  \u{2028} ",
            "   ",
        ];
        let mut state = 7u64;
        let mut shared = WordBuffers::default();
        for round in 0..400 {
            let mut text = String::new();
            if crate::sketch::minhash::splitmix64(&mut state).is_multiple_of(2) {
                text.push(' ');
            }
            let count = crate::sketch::minhash::splitmix64(&mut state)
                % if round % 4 == 0 { 600 } else { 30 };
            for _ in 0..count {
                let r = crate::sketch::minhash::splitmix64(&mut state) as usize;
                text.push_str(pieces[r % pieces.len()]);
                text.push_str(seps[(r >> 8) % seps.len()]);
            }
            if round % 3 == 0 {
                // No white space at the end, and (sometimes) a text of whole blocks.
                text.truncate(text.trim_end().len());
                while !text.len().is_multiple_of(64) {
                    text.push('q');
                }
            }
            assert_eq!(word_strings(&text, &mut shared), tokens(&text), "{text:?}");
        }
        // The densest texts (a token per two bytes) fill `hash_words`' buffer exactly.
        let dense = "x ".repeat(700);
        for text in [
            "",
            " ",
            "a",
            "A",
            "a b",
            dense.trim_end(),
            &dense,
            &"ab ".repeat(700),
            &"x".repeat(64 * 33),
        ] {
            assert_eq!(word_strings(text, &mut shared), tokens(text), "{text:?}");
            assert_eq!(
                word_strings(text, &mut WordBuffers::default()),
                tokens(text),
                "{text:?}"
            );
        }
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
        for _ in 0..300 {
            let mut text = String::new();
            if crate::sketch::minhash::splitmix64(&mut state).is_multiple_of(2) {
                text.push(' ');
            }
            for _ in 0..crate::sketch::minhash::splitmix64(&mut state) % 40 {
                let r = crate::sketch::minhash::splitmix64(&mut state) as usize;
                text.push_str(pieces[r % pieces.len()]);
                text.push_str(seps[(r >> 8) % seps.len()]);
            }
            assert_eq!(tokens(&text), scalar(&text), "{text:?}");
        }
        assert_eq!(tokens(&"ab ".repeat(64)).len(), 64);
        assert_eq!(tokens(&"x".repeat(128)), vec!["x".repeat(128)]);
    }
}
