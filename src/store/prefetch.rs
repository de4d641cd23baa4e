//! Documents fetched ahead of their read. A scan thread waits for each request it makes, and a
//! request to a store takes milliseconds where a read from the page cache takes microseconds:
//! the readahead that asks the kernel for the next files of a cold disk
//! (`crate::input::readahead`) asks here for the next objects instead, each a GET started on the
//! runtime without waiting; the read then takes its bytes (`take`), or fetches them itself when
//! they were not asked for.
//!
//! Bounded: at most [`IN_FLIGHT`] objects asked for and not yet taken, each of at most
//! [`LARGEST`] bytes (a larger one is read when its turn comes), and at most the bytes the
//! caller reserved from the memory budget ([`Allowance`]) fetched and not yet taken; without an
//! allowance nothing is fetched ahead. An object asked for that its reader will not take (read
//! already by another thread, or skipped) is given up by its asker ([`forget`]): kept, it held
//! its place and its bytes for good, and once [`IN_FLIGHT`] of them piled up nothing was
//! fetched ahead any more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;

use super::client;

/// Objects asked for at once: as many as the readers of two threads keep ahead of them (each
/// [`crate::input::readahead::OBJECTS`]), and room for those of more.
const IN_FLIGHT: usize = 256;
const LARGEST: u64 = 1 << 20;
/// The most bytes held for the readers, whatever the budget allows.
pub const MOST: u64 = 64 << 20;

/// Bytes fetched and not yet taken, and the most that may be.
static HELD_BYTES: AtomicU64 = AtomicU64::new(0);
static ALLOWED: AtomicU64 = AtomicU64::new(0);

/// Bytes fetched ahead: the size the store announced for them stays counted in [`HELD_BYTES`]
/// until they are dropped, taken or not, or their fetch is cancelled halfway.
struct Held {
    bytes: Bytes,
    counted: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD_BYTES.fetch_sub(self.counted, Ordering::Relaxed);
    }
}

type Fetch = tokio::task::JoinHandle<Option<Held>>;

fn pending() -> &'static Mutex<HashMap<String, Fetch>> {
    static PENDING: std::sync::OnceLock<Mutex<HashMap<String, Fetch>>> = std::sync::OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Objects may be fetched ahead, up to `bytes` held at once, for as long as this lives: the
/// caller reserved them from the memory budget.
pub struct Allowance(());

impl Allowance {
    pub fn new(bytes: u64) -> Allowance {
        ALLOWED.store(bytes.min(MOST), Ordering::Relaxed);
        Allowance(())
    }
}

impl Drop for Allowance {
    fn drop(&mut self) {
        ALLOWED.store(0, Ordering::Relaxed);
        // What no reader took is dropped with the reservation that covered it.
        if let Ok(mut map) = pending().lock() {
            for (_, fetch) in map.drain() {
                fetch.abort();
            }
        }
    }
}

/// Starts fetching the object at `url`, unless the bounds say no or it is being fetched; true
/// when it was started here (its asker then [`forget`]s it once past it).
pub fn prefetch(url: &str) -> bool {
    if ALLOWED.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let Ok(mut map) = pending().lock() else {
        return false;
    };
    if map.contains_key(url) || map.len() >= IN_FLIGHT {
        return false;
    }
    let Ok(parsed) = client::parse(url) else {
        return false;
    };
    let Ok(store) = client::store(&parsed.base) else {
        return false;
    };
    let Ok(rt) = client::runtime() else {
        return false;
    };
    let fetch = rt.spawn(async move {
        let got = store.get(&parsed.key).await.ok()?;
        client::count(1, 0);
        let size = got.meta.size;
        let allowed = ALLOWED.load(Ordering::Relaxed);
        let fits = size <= LARGEST
            && HELD_BYTES
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                    (h + size <= allowed).then_some(h + size)
                })
                .is_ok();
        if !fits {
            return None;
        }
        let mut held = Held {
            bytes: Bytes::new(),
            counted: size,
        };
        let mut bytes = Vec::with_capacity(size as usize);
        let mut body = got.into_stream();
        while let Ok(Some(chunk)) = body.try_next().await {
            bytes.extend_from_slice(&chunk);
        }
        client::count(0, bytes.len() as u64);
        held.bytes = Bytes::from(bytes);
        Some(held)
    });
    map.insert(url.to_string(), fetch);
    true
}

/// Gives up the object at `url` if it was asked for and not taken: its request is cancelled,
/// or its bytes dropped.
pub fn forget(url: &str) {
    let fetch = pending().lock().ok().and_then(|mut map| map.remove(url));
    if let Some(fetch) = fetch {
        fetch.abort();
    }
}

/// The bytes fetched ahead for `url`, if they were asked for and arrived whole; None otherwise
/// (the caller reads the object itself, and reports its errors).
pub fn take(url: &str) -> Option<Bytes> {
    let fetch = pending().lock().ok()?.remove(url)?;
    let held = client::block_on(fetch).ok()?.ok()??;
    Some(held.bytes.clone())
}
