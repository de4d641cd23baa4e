//! Documents fetched ahead of their read. A scan thread waits for each request it makes, and a
//! request to a store takes milliseconds where a read from the page cache takes microseconds:
//! the readahead that asks the kernel for the next files of a cold disk
//! (`crate::input::readahead`) asks here for the next objects instead, each a GET started on the
//! runtime without waiting; the read then takes its bytes (`take`), or fetches them itself when
//! they were not asked for.
//!
//! Bounded: at most [`IN_FLIGHT`] requests at once, objects of at most [`LARGEST`] bytes (a
//! larger one is read when its turn comes), and [`HELD`] bytes fetched and not yet taken.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;

use super::client;

const IN_FLIGHT: usize = 64;
const LARGEST: u64 = 1 << 20;
const HELD: u64 = 64 << 20;

static STARTED: AtomicUsize = AtomicUsize::new(0);
static HELD_BYTES: AtomicU64 = AtomicU64::new(0);

type Fetch = tokio::task::JoinHandle<Option<Bytes>>;

fn pending() -> &'static Mutex<HashMap<String, Fetch>> {
    static PENDING: std::sync::OnceLock<Mutex<HashMap<String, Fetch>>> = std::sync::OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Starts fetching the object at `url`, unless the bounds say no or it is being fetched.
pub fn prefetch(url: &str) {
    let Ok(mut map) = pending().lock() else {
        return;
    };
    if map.contains_key(url) || STARTED.load(Ordering::Relaxed) >= IN_FLIGHT {
        return;
    }
    let Ok(parsed) = client::parse(url) else {
        return;
    };
    let Ok(store) = client::store(&parsed.base) else {
        return;
    };
    let Ok(rt) = client::runtime() else {
        return;
    };
    STARTED.fetch_add(1, Ordering::Relaxed);
    let fetch = rt.spawn(async move {
        let got = store.get(&parsed.key).await.ok()?;
        client::count(1, 0);
        let size = got.meta.size;
        let fits = size <= LARGEST
            && HELD_BYTES
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                    (h + size <= HELD).then_some(h + size)
                })
                .is_ok();
        if !fits {
            return None;
        }
        let mut bytes = Vec::with_capacity(size as usize);
        let mut body = got.into_stream();
        while let Ok(Some(chunk)) = body.try_next().await {
            bytes.extend_from_slice(&chunk);
        }
        client::count(0, bytes.len() as u64);
        Some(Bytes::from(bytes))
    });
    map.insert(url.to_string(), fetch);
}

/// The bytes fetched ahead for `url`, if they were asked for and arrived whole; None otherwise
/// (the caller reads the object itself, and reports its errors).
pub fn take(url: &str) -> Option<Bytes> {
    let fetch = pending().lock().ok()?.remove(url)?;
    STARTED.fetch_sub(1, Ordering::Relaxed);
    let bytes = client::block_on(fetch).ok()?.ok()??;
    HELD_BYTES.fetch_sub(bytes.len() as u64, Ordering::Relaxed);
    Some(bytes)
}
