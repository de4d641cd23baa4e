//! A hint to the CPU that memory will be read soon, where the access pattern is one the
//! hardware prefetchers cannot guess (scattered, or a long stride).

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
