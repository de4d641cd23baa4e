//! The tokenizer's 64-byte block steps on x86-64, 16 bytes per SSE2 instruction: classify a
//! block into bit masks, lowercase it, normalize it. SSE2 is part of x86-64 itself, so these
//! need no run-time check (and no `cpu` token); the byte-table forms they must equal are beside
//! their callers in `tokenize`, `tokenize_words` and `tokenize_ascii`.

use std::arch::x86_64::*;

use crate::sketch::tokenize::Masks;

/// The ASCII white-space lanes (TAB..CR, SPACE) and the `A`–`Z` lanes of 16 bytes, 0xFF where
/// true: what both the block classifier and the lowercasing copy need.
#[inline(always)]
fn space_and_upper16(v: __m128i) -> (__m128i, __m128i) {
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

/// The classes of a whole block, one bit per byte.
#[inline]
pub(super) fn classify64(block: &[u8; 64]) -> Masks {
    let mut m = Masks {
        space: 0,
        upper: 0,
        high: 0,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads at 16·i,
    // i < 4, stay inside the 64-byte block.
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

/// Writes the 64-byte `block` with ASCII letters lowercased into `out` and returns its ASCII
/// white space, one bit per byte.
#[inline(always)]
pub(super) fn lower64(block: &[u8; 64], out: &mut [u8; 64]) -> u64 {
    let mut space = 0;
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads and stores
    // at 16·i, i < 4, stay inside the 64-byte `block` and `out`.
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

/// Writes the 64-byte `block` into `out` with ASCII letters lowercased and ASCII white space
/// turned into spaces; returns its white space and its bytes from 0x80, one bit per byte.
#[inline(always)]
pub(super) fn norm64(block: &[u8; 64], out: &mut [u8; 64]) -> (u64, u64) {
    let (mut space, mut high) = (0, 0);
    // SAFETY: SSE2 is part of the x86-64 baseline; the four unaligned 16-byte loads and stores
    // at 16·i, i < 4, stay inside the 64-byte `block` and `out`.
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

#[cfg(test)]
mod tests {
    //! Each block step equals its byte-table form on every byte value.
    use super::*;
    use crate::sketch::tokenize::classify_bytes;
    use crate::sketch::tokenize_ascii::norm_bytes;
    use crate::sketch::tokenize_words::lower_bytes;

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

    #[test]
    fn lowered_blocks_match_the_byte_table() {
        let mut block = [0u8; 64];
        let mut out = [0u8; 64];
        for start in (0..256).step_by(64) {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (start + i) as u8;
            }
            let mut want = [0u8; 64];
            let space = lower_bytes(&block, &mut want);
            assert_eq!(lower64(&block, &mut out), space, "{start}..");
            assert_eq!(out, want, "{start}..");
            assert!(want
                .iter()
                .zip(&block)
                .all(|(&l, b)| l == b.to_ascii_lowercase()));
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
}
