//! KMV's filter on x86-64: which of 64 hashes lie below a limit, four compares at a time with
//! AVX2 (x86-64's baseline SSE2 has no 64-bit compare). Reached only with a [`cpu::Avx2`] token.

use crate::cpu;

/// Bit i set when `chunk[i] < limit`, as [`super::kmv`]'s portable loop computes it (which took
/// about 1 ns per hash).
#[inline]
pub(super) fn below_mask_avx2(_: cpu::Avx2, chunk: &[u64; 64], limit: u64) -> u64 {
    #[target_feature(enable = "avx2")]
    fn avx2(chunk: &[u64; 64], limit: u64) -> u64 {
        use std::arch::x86_64::*;
        // AVX2 compares signed 64-bit lanes: flipping the top bit of both sides orders them as
        // unsigned.
        let flip = _mm256_set1_epi64x(i64::MIN);
        let limit = _mm256_xor_si256(_mm256_set1_epi64x(limit as i64), flip);
        let mut mask = 0u64;
        for (i, four) in chunk.chunks_exact(4).enumerate() {
            // SAFETY: `four` is 4 u64 values, 32 bytes; the load needs no alignment.
            let v = unsafe { _mm256_loadu_si256(four.as_ptr().cast()) };
            let lt = _mm256_cmpgt_epi64(limit, _mm256_xor_si256(v, flip));
            let bits = _mm256_movemask_pd(_mm256_castsi256_pd(lt)) as u32 as u64;
            mask |= bits << (4 * i);
        }
        mask
    }
    // SAFETY: an `Avx2` token exists only on a CPU with AVX2 (`cpu::Avx2::detect`).
    unsafe { avx2(chunk, limit) }
}
