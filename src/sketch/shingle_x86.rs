//! Character shingles on x86-64: the packed windows of an ASCII text four at a time with AVX2.
//! Reached only with a [`cpu::Avx2`] token.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use crate::cpu;
use crate::sketch::hash::{packed_tag, window_hash};

/// Appends the `count` windows of `n <= 7` bytes of `norm` to `out`, as `shingle`'s portable
/// loop does, four at a time: one 16-byte load holds the bytes of four windows, a byte shuffle
/// packs each into its 64-bit lane (big-endian, zeros above), and the lanes are mixed together,
/// each 64-bit multiply of `mix64` made of three 32-bit ones (AVX2 has no 64-bit multiply; the
/// scalar `imul` issues one a cycle, and `mix64` takes two per window). `norm` holds at least
/// `count + 12` bytes.
#[inline]
pub(super) fn packed_windows_avx2(
    _: cpu::Avx2,
    norm: &[u8],
    count: usize,
    n: usize,
    out: &mut Vec<u64>,
) {
    out.reserve(count);
    let start = out.len();
    // SAFETY: an `Avx2` token exists only on a CPU with AVX2.
    unsafe { windows(norm, count, n, out.spare_capacity_mut()) };
    // SAFETY: `windows` returned, so it wrote all of the first `count` spare slots (the quads,
    // then the rest one by one), and `reserve` made room for them.
    unsafe { out.set_len(start + count) };
}

/// The body of [`packed_windows_avx2`], into `out[..count]`.
#[target_feature(enable = "avx2")]
fn windows(norm: &[u8], count: usize, n: usize, out: &mut [MaybeUninit<u64>]) {
    assert!(norm.len() >= count + 12 && out.len() >= count && (1..=7).contains(&n));
    // Byte k of window o's lane is byte o + n − 1 − k of the load, for k < n; 0x80 gives zero.
    let mut control = [0x80u8; 32];
    for o in 0..4 {
        for k in 0..n {
            control[8 * o + k] = (o + n - 1 - k) as u8;
        }
    }
    let quads = count / 4;
    // SAFETY: `control` is 32 bytes. Each 16-byte load at 4q <= count − 4 ends by
    // count + 12 <= norm.len(), and each 32-byte store writes out[4q..4q + 4] with
    // 4q + 4 <= count <= out.len() (both asserted); neither needs alignment.
    unsafe {
        let control = _mm256_loadu_si256(control.as_ptr() as *const __m256i);
        let tag = _mm256_set1_epi64x(packed_tag(n) as i64);
        for q in 0..quads {
            let bytes = _mm_loadu_si128(norm.as_ptr().add(4 * q) as *const __m128i);
            let v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), control);
            let h = mix64x4(_mm256_xor_si256(v, tag));
            _mm256_storeu_si256(out.as_mut_ptr().add(4 * q) as *mut __m256i, h);
        }
    }
    for i in 4 * quads..count {
        out[i].write(window_hash(&norm[i..i + 8], n));
    }
}

/// `mix64` of four 64-bit lanes.
#[target_feature(enable = "avx2")]
fn mix64x4(z: __m256i) -> __m256i {
    /// The low 64 bits of z · c, from three 32×32 → 64-bit multiplies.
    #[target_feature(enable = "avx2")]
    fn mul(z: __m256i, c: u64) -> __m256i {
        let lo = _mm256_set1_epi64x((c & 0xFFFF_FFFF) as i64);
        let hi = _mm256_set1_epi64x((c >> 32) as i64);
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64::<32>(z), lo),
            _mm256_mul_epu32(z, hi),
        );
        _mm256_add_epi64(_mm256_mul_epu32(z, lo), _mm256_slli_epi64::<32>(cross))
    }
    let z = mul(
        _mm256_xor_si256(z, _mm256_srli_epi64::<30>(z)),
        0xBF58_476D_1CE4_E5B9,
    );
    let z = mul(
        _mm256_xor_si256(z, _mm256_srli_epi64::<27>(z)),
        0x94D0_49BB_1331_11EB,
    );
    _mm256_xor_si256(z, _mm256_srli_epi64::<31>(z))
}
