//! Fresh tokens: the random part of a temporary file's name (the index's, a staged run's work
//! files), of a new index's identity, of a staged run's and attempt's ids. Here, below both the
//! index and the staged pipeline, so that neither imports the other for it.

use std::sync::atomic::{AtomicU64, Ordering};

/// A token different for every call in a process and, through the process id and the clock,
/// across processes. Unpredictability is not what keeps a temporary name safe (the exclusive
/// create is); it only makes a planted name unlikely to be hit.
pub fn fresh_token() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
    seed[8..16].copy_from_slice(&nanos.to_le_bytes());
    seed[16..].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&seed)
}
