//! The word shingles' tokenizer: the tokens of [`crate::sketch::tokenize::for_each_token`],
//! each handed straight to a hash ([`hash_words`]), most of them as two 8-byte words with no
//! branch on their length or case. See [`hash_words`] for how.

use std::mem::MaybeUninit;

use crate::cpu;
use crate::sketch::hash::le64;
use crate::sketch::keep_at_most;
use crate::sketch::tokenize::{from, scalar_tokens};
#[cfg(any(test, not(target_arch = "x86_64")))]
use crate::sketch::tokenize::{CLASS, SPACE};
#[cfg(target_arch = "x86_64")]
use crate::sketch::tokenize_x86::lower64;

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

impl WordBuffers {
    /// Shrinks the buffers a long text grew beyond `keep` bytes to `keep` bytes.
    pub fn trim(&mut self, keep: usize) {
        keep_at_most(&mut self.lower, keep);
        keep_at_most(&mut self.spaces, keep);
        keep_at_most(&mut self.token, keep);
        keep_at_most(&mut self.starts, keep);
        keep_at_most(&mut self.ends, keep);
    }
}

/// Hashes the tokens of [`for_each_token`](crate::sketch::tokenize::for_each_token): writes `hash(token)` for each, in order, to
/// `out`, which holds them alone afterwards, and returns the count. ASCII tokens of at most 16
/// bytes come to `hash` as [`Word::Short`], the others as [`Word::Bytes`].
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
/// byte-by-byte path, which decodes characters as
/// [`for_each_token_at`](crate::sketch::tokenize::for_each_token_at) does. On x86-64 CPUs with
/// BMI1 and POPCNT (detected at run time) the same code is compiled with them.
pub fn hash_words(
    text: &str,
    bufs: &mut WordBuffers,
    hash: impl Fn(Word<'_>) -> u64,
    out: &mut Vec<u64>,
) -> usize {
    // Every token takes a byte and, but for the last, a separator.
    let bound = text.len() / 2 + 1;
    // `words` grows the lowercased copy itself; grown here, the old copy is dropped rather
    // than copied (out of `words`, whose loop that code slowed by 1 %).
    let lowered = text.len().div_ceil(64) * 64 + 16;
    if bufs.lower.len() < lowered {
        grow_zeroed(&mut bufs.lower, lowered);
    }
    // The hashes are written, not zeroed first: zeros over the whole bound (three times what
    // prose needs) were a memset and page faults after every document that
    // [`WordBuffers::trim`] followed. A new allocation: growing the old one copied its bytes,
    // all stale.
    if out.capacity() < bound {
        *out = Vec::with_capacity(bound);
    }
    out.clear();
    let room = &mut out.spare_capacity_mut()[..bound];
    #[cfg(target_arch = "x86_64")]
    let count = match cpu::Bmi1Popcnt::detect() {
        Some(bmi) => words_bmi(bmi, text, bufs, &hash, room),
        None => words(text, bufs, &hash, room),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let count = words(text, bufs, &hash, room);
    // SAFETY: `words` wrote `room[i]` for every i below the count it returned (each token
    // writes `out[count]`, then counts it), and `room` is `out`'s spare capacity from 0.
    unsafe { out.set_len(count) };
    count
}

/// Replaces `v` by `len` zeros, dropping what it held first: `resize` copied the old contents
/// (a megabyte after [`WordBuffers::trim`]), to be written over.
fn grow_zeroed(v: &mut Vec<u8>, len: usize) {
    *v = Vec::new();
    *v = vec![0; len];
}

/// [`words`] compiled with BMI1 and POPCNT, which list token starts and ends in fewer
/// instructions (`tzcnt` without a zero check, `blsr`, `popcnt` instead of a bit-twiddled
/// count): word-5 shingling about 5% faster.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn words_bmi(
    _: cpu::Bmi1Popcnt,
    text: &str,
    bufs: &mut WordBuffers,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [MaybeUninit<u64>],
) -> usize {
    #[target_feature(enable = "bmi1,popcnt")]
    fn bmi(
        text: &str,
        bufs: &mut WordBuffers,
        hash: &impl Fn(Word<'_>) -> u64,
        out: &mut [MaybeUninit<u64>],
    ) -> usize {
        words(text, bufs, hash, out)
    }
    // SAFETY: a `Bmi1Popcnt` token exists only on a CPU with BMI1 and POPCNT.
    unsafe { bmi(text, bufs, hash, out) }
}

/// The body of [`hash_words`].
#[inline(always)]
pub(super) fn words(
    text: &str,
    bufs: &mut WordBuffers,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [MaybeUninit<u64>],
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
        match <&[u8; 64]>::try_from(chunk) {
            Ok(chunk) => spaces.push(lower64(chunk, out)),
            Err(_) => {
                let mut tail = [0u8; 64];
                tail[..chunk.len()].copy_from_slice(chunk);
                spaces.push(lower64(&tail, out) | from(chunk.len() as u32));
            }
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
        let (starts_g, ends_g) = (&starts[..ne], &ends[..ne]);
        let mut i = 0;
        while i < ne {
            (i, count) = short_words(lower, starts_g, ends_g, i, hash, out, count);
            if let (Some(&start), Some(&end)) = (starts_g.get(i), ends_g.get(i)) {
                count = special_word(text, start, end, token, hash, out, count);
                i += 1;
            }
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

/// Hashes the tokens `starts[i]..ends[i]` from `i` on into `out` from `count`, as long as
/// they are ASCII and at most 16 bytes long (most tokens: [`Word::Short`]), reading them from
/// `lower`, the lowercased copy; returns the index of the first token it stopped at (or the
/// tokens' count) and the new count.
///
/// A function of its own, not inlined: inside `words`, whose other state kept most registers,
/// this loop held its count and pointers on the stack (47 instructions a token, 38 here).
#[inline(never)]
fn short_words(
    lower: &[u8],
    starts: &[usize],
    ends: &[usize],
    mut i: usize,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [MaybeUninit<u64>],
    mut count: usize,
) -> (usize, usize) {
    while let (Some(&start), Some(&end)) = (starts.get(i), ends.get(i)) {
        match short_word(lower, start, end) {
            Some(word) => {
                debug_assert!(count < out.len());
                // SAFETY: `out` has room for half the text's bytes plus one (`hash_words`), and
                // every token but the last takes a byte and a separator, so the count of tokens
                // written so far is below that.
                unsafe { out.get_unchecked_mut(count) }.write(hash(word));
                count += 1;
                i += 1;
            }
            None => break,
        }
    }
    (i, count)
}

/// The token `start..end` (between ASCII white space, or the text's ends) as a
/// [`Word::Short`], read from `lower`, the lowercased copy, when it is ASCII and at most 16
/// bytes long.
#[inline(always)]
fn short_word(lower: &[u8], start: usize, end: usize) -> Option<Word<'static>> {
    let n = end - start;
    if n > 16 {
        return None;
    }
    debug_assert!(start + 16 <= lower.len());
    let (ml, mh) = WORD_MASKS[n];
    // SAFETY: a token starts before the text's end (`words` marks the bytes past it as white
    // space), and `lower` holds 16 bytes past the text's end (`hash_words`), so the 16 bytes
    // from `start` are in `lower`.
    let w = unsafe { &*lower.as_ptr().add(start).cast::<[u8; 16]>() };
    let (lo, hi) = (le64(w) & ml, le64(&w[8..]) & mh);
    ((lo | hi) & (0x80 * ONES) == 0).then_some(Word::Short(lo, hi, n))
}

/// Hashes the token `text[start..end]` (between ASCII white space, or the text's ends) into
/// `out[count]` (or several, cut by non-ASCII white space); returns the new count.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn word_at(
    text: &str,
    lower: &[u8],
    start: usize,
    end: usize,
    scratch: &mut Vec<u8>,
    hash: &impl Fn(Word<'_>) -> u64,
    out: &mut [MaybeUninit<u64>],
    count: usize,
) -> usize {
    match short_word(lower, start, end) {
        Some(word) => {
            out[count].write(hash(word));
            count + 1
        }
        None => special_word(text, start, end, scratch, hash, out, count),
    }
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
    out: &mut [MaybeUninit<u64>],
    mut count: usize,
) -> usize {
    let tok = &text.as_bytes()[start..end];
    if !tok.is_ascii() {
        if text.is_char_boundary(start) && text.is_char_boundary(end) {
            scalar_tokens(text, start, end, scratch, &mut |b: &[u8], s, e| {
                out[count].write(hash(Word::Bytes(&b[s..e])));
                count += 1;
            });
        }
    } else if tok.iter().any(u8::is_ascii_uppercase) {
        scratch.clear();
        scratch.extend(tok.iter().map(u8::to_ascii_lowercase));
        out[count].write(hash(Word::Bytes(scratch)));
        count += 1;
    } else {
        out[count].write(hash(Word::Bytes(tok)));
        count += 1;
    }
    count
}

/// The byte-table form of `lower64`: writes `block` with ASCII letters lowercased into `out`
/// and returns its ASCII white space, one bit per byte.
#[cfg(any(test, not(target_arch = "x86_64")))]
pub(super) fn lower_bytes(block: &[u8; 64], out: &mut [u8; 64]) -> u64 {
    for (o, b) in out.iter_mut().zip(block) {
        *o = b.to_ascii_lowercase();
    }
    block.iter().enumerate().fold(0, |m, (i, &b)| {
        m | u64::from(CLASS[b as usize] == SPACE) << i
    })
}

#[cfg(not(target_arch = "x86_64"))]
use lower_bytes as lower64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash::splitmix64;
    use crate::sketch::testing::{tokens, word_strings};

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
        // Under Miri, which runs about 10^4 times slower, 12 texts (400 did not finish in 800 s),
        // the long ones still past a group of blocks (16 × 64 bytes).
        let (rounds, long) = if cfg!(miri) { (12, 120) } else { (400, 600) };
        for round in 0..rounds {
            let mut text = String::new();
            if splitmix64(&mut state).is_multiple_of(2) {
                text.push(' ');
            }
            let count = splitmix64(&mut state) % if round % 4 == 0 { long } else { 30 };
            for _ in 0..count {
                let r = splitmix64(&mut state) as usize;
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
}
