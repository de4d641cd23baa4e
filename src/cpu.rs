//! What the CPU can do, asked once in one way: feature tokens for run-time dispatch, and a
//! prefetch hint. The SIMD kernels themselves live beside their callers (`*_x86.rs`).
//!
//! The dispatch idiom: a token (`Avx2`, `Avx512`, `Bmi1Popcnt`) is a zero-sized proof that
//! the CPU has a set of features. Its only constructor, `detect`, returns `Some` where
//! `is_x86_feature_detected!` finds every feature of the set, so no safe code can hold a token
//! on a CPU without them. A `#[target_feature]` function is private: declared inside the safe
//! wrapper that calls it, or beside it in a `*_x86.rs` file whose only way in is that wrapper.
//! The wrapper takes the token by value, so its one `unsafe` call is sound because the token
//! exists, and no caller can reach the kernel without one.
//!
//! ```text
//! pub fn kernel(_: cpu::Avx2, data: &[u64; 64]) -> u64 {
//!     #[target_feature(enable = "avx2")]
//!     fn avx2(data: &[u64; 64]) -> u64 { … }
//!     // SAFETY: an `Avx2` token exists only on a CPU with AVX2.
//!     unsafe { avx2(data) }
//! }
//! if let Some(avx2) = cpu::Avx2::detect() { kernel(avx2, data) } else { portable(data) }
//! ```
//!
//! Detection costs a load and a bit test (`std` caches the CPUID answer), so callers may ask
//! per call. Under Miri, and on targets other than x86-64, `detect` returns `None` and only
//! the portable paths run. Nothing here is compiled for a particular CPU (no
//! `-C target-cpu=native`): a release binary runs on any x86-64.

/// Declares a feature token: `$name` exists only where every feature of `$features` does.
macro_rules! feature_token {
    ($(#[$doc:meta])* $name:ident: $($feature:tt),+) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
        pub struct $name(());

        impl $name {
            /// The token, when the CPU running this has every feature it stands for.
            #[inline]
            pub fn detect() -> Option<Self> {
                #[cfg(target_arch = "x86_64")]
                if $(std::arch::is_x86_feature_detected!($feature))&&+ {
                    return Some($name(()));
                }
                None
            }
        }
    };
}

feature_token!(
    /// Proof that the CPU has AVX2: four 64-bit lanes (kperm MinHash, KMV's filter, packed
    /// character shingles).
    Avx2: "avx2"
);

feature_token!(
    /// Proof that the CPU has AVX-512 F, DQ and VL: eight 64-bit lanes and the 64-bit
    /// multiply that kperm MinHash needs.
    Avx512: "avx512f", "avx512dq", "avx512vl"
);

feature_token!(
    /// Proof that the CPU has BMI1 and POPCNT: `tzcnt`, `blsr` and `popcnt` for listing bits
    /// (the word tokenizer's token starts and ends).
    Bmi1Popcnt: "bmi1", "popcnt"
);

/// Asks the CPU to bring the cache line holding `value` in. On targets other than x86-64 it
/// does nothing.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; a prefetch only hints, reads nothing and cannot fault.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_agree_with_the_standard_detection() {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            assert_eq!(Avx2::detect().is_some(), has!("avx2"));
            assert_eq!(
                Avx512::detect().is_some(),
                has!("avx512f") && has!("avx512dq") && has!("avx512vl")
            );
            assert_eq!(
                Bmi1Popcnt::detect().is_some(),
                has!("bmi1") && has!("popcnt")
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        assert!(Avx2::detect().is_none() && Avx512::detect().is_none());
    }
}
