//! K-permutation MinHash's inner loop: every shingle hash through all K multiply-add-shift
//! lanes, each lane keeping its minimum. Written so the compiler vectorizes the lane loop, and
//! compiled three times, for AVX-512, AVX2 and x86-64's baseline, the widest the CPU has chosen
//! at run time through a [`cpu`] token.

use crate::cpu;

/// Lowers each `out[i]` to the least `(mul[i]·x + add[i]) >> 32` over the hashes `x` of
/// `shingles`; `mul` and `add` hold at least `out.len()` values.
pub(super) fn min_lanes(mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(avx512) = cpu::Avx512::detect() {
            return min_lanes_avx512(avx512, mul, add, shingles, out);
        }
        if let Some(avx2) = cpu::Avx2::detect() {
            return min_lanes_avx2(avx2, mul, add, shingles, out);
        }
    }
    lanes(mul, add, shingles, out)
}

/// The portable body of [`min_lanes`], inlined into each of its builds.
#[inline(always)]
pub(super) fn lanes(mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
    let k = out.len();
    let (mul, add) = (&mul[..k], &add[..k]);
    for &x in shingles {
        for i in 0..k {
            let v = (mul[i].wrapping_mul(x).wrapping_add(add[i]) >> 32) as u32;
            out[i] = out[i].min(v);
        }
    }
}

/// [`lanes`] compiled for AVX-512: eight lanes a step, with its 64-bit multiply.
#[cfg(target_arch = "x86_64")]
fn min_lanes_avx512(_: cpu::Avx512, mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    fn avx512(mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
        lanes(mul, add, shingles, out)
    }
    // SAFETY: an `Avx512` token exists only on a CPU with AVX-512 F, DQ and VL.
    unsafe { avx512(mul, add, shingles, out) }
}

/// [`lanes`] compiled for AVX2: four lanes a step.
#[cfg(target_arch = "x86_64")]
fn min_lanes_avx2(_: cpu::Avx2, mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
    #[target_feature(enable = "avx2")]
    fn avx2(mul: &[u64], add: &[u64], shingles: &[u64], out: &mut [u32]) {
        lanes(mul, add, shingles, out)
    }
    // SAFETY: an `Avx2` token exists only on a CPU with AVX2.
    unsafe { avx2(mul, add, shingles, out) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::minhash::{mix64, splitmix64};

    #[test]
    fn every_build_matches_the_portable_lanes() {
        let mut state = 3u64;
        let mul: Vec<u64> = (0..128).map(|_| splitmix64(&mut state) | 1).collect();
        let add: Vec<u64> = (0..128).map(|_| splitmix64(&mut state)).collect();
        let shingles: Vec<u64> = (0..500u64).map(mix64).collect();
        let mut portable = vec![u32::MAX; 128];
        lanes(&mul, &add, &shingles, &mut portable);
        let mut dispatched = vec![u32::MAX; 128];
        min_lanes(&mul, &add, &shingles, &mut dispatched);
        assert_eq!(dispatched, portable);
        #[cfg(target_arch = "x86_64")]
        for build in 0..2 {
            let mut out = vec![u32::MAX; 128];
            match build {
                0 => match cpu::Avx512::detect() {
                    Some(t) => min_lanes_avx512(t, &mul, &add, &shingles, &mut out),
                    None => continue,
                },
                _ => match cpu::Avx2::detect() {
                    Some(t) => min_lanes_avx2(t, &mul, &add, &shingles, &mut out),
                    None => continue,
                },
            }
            assert_eq!(out, portable, "build {build}");
        }
    }
}
