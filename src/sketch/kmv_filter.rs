//! KMV's filter: which hashes of a chunk lie below the sketch's limit (its k-th smallest
//! value), as one bit mask, so the few that pass are found with `trailing_zeros` and no branch
//! per hash. Four compares at a time with AVX2 where the CPU has it (x86-64's baseline SSE2
//! has no 64-bit compare), reached only with a [`cpu::Avx2`] token.

use crate::cpu;

/// Hashes filtered against the k-th smallest value per step of
/// [`Kmv::insert_set`](crate::sketch::kmv::Kmv::insert_set): one bit each in a `u64` mask.
pub(super) const CHUNK: usize = 64;

/// Bit i set when `chunk[i] < limit` (`chunk` holds at most 64 hashes); a whole chunk takes
/// the AVX2 compares when `avx2` is given.
#[inline]
pub(super) fn below_mask(chunk: &[u64], limit: u64, avx2: Option<cpu::Avx2>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let (Some(avx2), Ok(chunk)) = (avx2, <&[u64; CHUNK]>::try_from(chunk)) {
        return below_mask_avx2(avx2, chunk, limit);
    }
    let _ = avx2;
    (chunk.iter().enumerate()).fold(0, |m, (i, &h)| m | u64::from(h < limit) << i)
}

/// [`below_mask`] of a whole chunk with AVX2 (the portable loop took about 1 ns per hash).
#[cfg(target_arch = "x86_64")]
#[inline]
fn below_mask_avx2(_: cpu::Avx2, chunk: &[u64; 64], limit: u64) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn below_mask_sets_the_bits_of_hashes_under_the_limit_on_every_path() {
        let mut rng = StdRng::seed_from_u64(9);
        // Limits and hashes on both sides of the top bit, where a signed compare would err.
        let limits = [0, 1, 1 << 63, (1 << 63) + 5, u64::MAX, rng.random::<u64>()];
        for limit in limits {
            let chunk: Vec<u64> = (0..64)
                .map(|i| match i % 4 {
                    0 => limit.wrapping_sub(1),
                    1 => limit,
                    2 => limit ^ (1 << 63),
                    _ => rng.random(),
                })
                .collect();
            let want = (0..64).fold(0u64, |m, i| m | u64::from(chunk[i] < limit) << i);
            let avx2 = cpu::Avx2::detect();
            assert_eq!(below_mask(&chunk, limit, None), want);
            assert_eq!(below_mask(&chunk, limit, avx2), want);
            assert_eq!(below_mask(&chunk[..5], limit, avx2), want & 0b11111);
        }
    }
}
