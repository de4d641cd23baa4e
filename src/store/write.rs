//! Writing an object so that a reader sees it whole or not at all: object stores have no
//! rename, so nothing is written under the final key until the whole content is known. A file
//! written locally first (in `TMPDIR`, so memory stays bounded) is sent as one PUT when small,
//! else as a multipart upload that only its completion, after the last part, makes visible; an
//! upload that fails, or that an interrupt stops, is aborted. A killed run leaves no object (S3
//! keeps the parts of an unfinished upload out of sight, until a lifecycle rule removes them).

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{MultipartId, ObjectStore, ObjectStoreExt, PutPayload};

use super::client;

/// The size of a part of a multipart upload, and the largest object sent as one PUT: S3's
/// parts are at least 5 MiB (the last excepted).
const PART: usize = 8 << 20;

/// A multipart upload begun and not yet completed.
struct UnderWay {
    parts: Arc<dyn MultipartStore>,
    key: Path,
    id: MultipartId,
}

/// The uploads under way, which an interrupt that ends the run at once aborts
/// ([`abort_under_way`]): the exit runs no destructor, and an unfinished upload's parts stay
/// (and are billed) until a lifecycle rule removes them. Held while an upload is completed, so
/// that each is either completed or aborted, never completed after the abort was decided.
static UNDER_WAY: Mutex<Vec<UnderWay>> = Mutex::new(Vec::new());

/// How long an interrupt waits for its aborts: a store that does not answer does not hold the
/// exit for the requests' whole deadline.
const ABORT_WAIT: Duration = Duration::from_secs(5);

/// What an upload stopped by an interrupt says.
const STOPPED: &str = "interrupted: the upload was aborted, nothing was written";

/// What the store says of an object just written: its size and its ETag (as a listing gives
/// them back, so that a reader can tell the object is still the one written without fetching
/// it; `crate::stages::status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Its bytes.
    pub size: u64,
    /// Its ETag, without quotes ([`etag`]); None from a store that gave none.
    pub e_tag: Option<String>,
}

/// An ETag as dupfind records and compares it: without the quotes and the weak `W/` prefix
/// HTTP puts around it, which a PUT's header and a listing's XML do not write alike on every
/// store.
pub fn etag(raw: &str) -> String {
    let bare = raw.trim();
    let bare = bare.strip_prefix("W/").unwrap_or(bare);
    bare.trim_matches('"').to_string()
}

/// Sends the content of `file` (read from its start) to the object at `url`, if `keep` says so
/// when all is sent, just before the point where the object appears (the PUT, or the upload's
/// completion); an interrupt (`interrupted`, asked between parts and before the completion)
/// aborts it. Returns what the store says of the object written; None when `keep` said no.
pub fn upload(
    file: &mut std::fs::File,
    url: &str,
    interrupted: fn() -> bool,
    keep: impl FnOnce() -> bool,
) -> Result<Option<Stored>, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let key = &parsed.key;
    let first = read_part(file)?;
    let multipart = client::multipart(&parsed.base)?;
    let parts = match multipart {
        Some(parts) if first.len() >= PART => parts,
        _ => {
            if !keep() {
                return Ok(None);
            }
            let size = first.len() as u64;
            let put = client::block_on(store.put(key, PutPayload::from(first)))?;
            client::count(1, 0);
            let put = put.map_err(|e| client::reason(&e))?;
            return Ok(Some(stored(size, put)));
        }
    };
    let id = client::block_on(parts.create_multipart(key))?.map_err(|e| client::reason(&e))?;
    client::count(1, 0);
    let under_way = UnderWay {
        parts: Arc::clone(&parts),
        key: key.clone(),
        id: id.clone(),
    };
    if let Ok(mut all) = UNDER_WAY.lock() {
        all.push(under_way);
    }
    let to = Upload {
        parts: parts.as_ref(),
        key,
        id: &id,
        interrupted,
    };
    let sent = send(file, first, to, keep);
    if !matches!(sent, Ok(Some(_))) {
        if let Ok(mut all) = UNDER_WAY.lock() {
            all.retain(|u| u.id != id);
        }
        let _ = client::block_on(parts.abort_multipart(key, &id));
    }
    sent
}

/// A multipart upload begun.
struct Upload<'a> {
    parts: &'a dyn MultipartStore,
    key: &'a Path,
    id: &'a MultipartId,
    interrupted: fn() -> bool,
}

/// The object's size and what the store answered its PUT (or its upload's completion) with.
fn stored(size: u64, put: object_store::PutResult) -> Stored {
    Stored {
        size,
        e_tag: put.e_tag.as_deref().map(etag),
    }
}

/// The parts of the upload `to`, `first` then the rest of `file`, and its completion, unless
/// an interrupt came first or `keep` says no.
fn send(
    file: &mut std::fs::File,
    mut first: Vec<u8>,
    to: Upload,
    keep: impl FnOnce() -> bool,
) -> Result<Option<Stored>, String> {
    let Upload {
        parts,
        key,
        id,
        interrupted,
    } = to;
    let mut done: Vec<PartId> = Vec::new();
    let mut size = 0u64;
    while !first.is_empty() {
        if interrupted() {
            return Err(STOPPED.into());
        }
        size += first.len() as u64;
        let payload = PutPayload::from(std::mem::take(&mut first));
        let part = client::block_on(parts.put_part(key, id, done.len(), payload))?;
        done.push(part.map_err(|e| client::reason(&e))?);
        client::count(1, 0);
        first = read_part(file)?;
    }
    // Completed, or aborted by an interrupt, not both: the abort takes this lock first.
    let mut all = UNDER_WAY
        .lock()
        .map_err(|_| "the uploads under way were poisoned by a panic".to_string())?;
    if interrupted() {
        return Err(STOPPED.into());
    }
    if !keep() {
        return Ok(None);
    }
    let put = client::block_on(parts.complete_multipart(key, id, done))?
        .map_err(|e| client::reason(&e))?;
    client::count(1, 0);
    all.retain(|u| u.id != *id);
    Ok(Some(stored(size, put)))
}

/// Aborts the uploads under way, for an interrupt that ends the run now; none is completed
/// after (the lock stays taken until the exit).
pub fn abort_under_way() {
    let Ok(all) = UNDER_WAY.lock() else { return };
    let all = std::mem::ManuallyDrop::new(all);
    if all.is_empty() {
        return;
    }
    let Ok(rt) = client::runtime() else { return };
    let (tx, rx) = std::sync::mpsc::channel();
    for u in all.iter() {
        let (parts, key, id, tx) = (
            Arc::clone(&u.parts),
            u.key.clone(),
            u.id.clone(),
            tx.clone(),
        );
        rt.spawn(async move {
            let _ = parts.abort_multipart(&key, &id).await;
            let _ = tx.send(());
        });
    }
    drop(tx);
    let until = Instant::now() + ABORT_WAIT;
    for _ in 0..all.len() {
        if rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .is_err()
        {
            break;
        }
    }
}

/// Sends the content of `file` (read from its start; small, sent as one PUT) to the object at
/// `url` unless one is there: false then. The PUT is conditional (`If-None-Match: *`), so of two
/// runs creating the same object at once, one is told it exists.
pub fn create(file: &mut std::fs::File, url: &str) -> Result<bool, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let opts = object_store::PutOptions::from(object_store::PutMode::Create);
    let put = store.put_opts(&parsed.key, PutPayload::from(read_part(file)?), opts);
    let put = client::block_on(put)?;
    client::count(1, 0);
    match put {
        Ok(_) => Ok(true),
        Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
        Err(e) => Err(client::reason(&e)),
    }
}

/// Deletes the object at `url` (none there is no error).
pub fn delete(url: &str) -> Result<(), String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let deleted = client::block_on(store.delete(&parsed.key))?;
    client::count(1, 0);
    match deleted {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(client::reason(&e)),
    }
}

/// Up to [`PART`] bytes of `file`; empty at its end.
fn read_part(file: &mut std::fs::File) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(PART);
    file.take(PART as u64)
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading what is to be sent: {e}"))?;
    Ok(buf)
}

/// Checks, before any work is done, that an object (`object`; else objects below a prefix) can
/// be written at `url`: a store that takes writes, a key for an object, and a bucket that
/// answers. What the run produces is not lost to a destination that could never take it.
/// Returns whether some object lies below `url` already, the object `url/BUT` aside (a run's
/// claim on it).
pub fn check_writable(url: &str, object: bool, but: Option<&str>) -> Result<bool, String> {
    let parsed = client::parse(url)?;
    if parsed.base.starts_with("http") {
        return Err(
            "an http(s):// URL is read only: write to s3://, gs:// or az://, or a \
                    local file"
                .into(),
        );
    }
    if object && (parsed.key.as_ref().is_empty() || url.ends_with('/')) {
        return Err(
            "names a prefix, not an object: add the object's name, as in \
                    s3://BUCKET/PREFIX/report.json"
                .into(),
        );
    }
    any_below(url, but)
}

/// True when some object lies below the prefix `url` (`url/…`), the object `url/BUT` aside.
fn any_below(url: &str, but: Option<&str>) -> Result<bool, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let prefix = (!parsed.key.as_ref().is_empty()).then_some(&parsed.key);
    let but = but.map(|b| parsed.key.clone().join(b));
    let mut listing = store.list(prefix);
    let first = client::block_on(async {
        loop {
            match listing.try_next().await {
                Ok(Some(o)) if Some(&o.location) == but.as_ref() => continue,
                first => break first,
            }
        }
    })?;
    client::count(1, 0);
    match first {
        Ok(f) => Ok(f.is_some()),
        // A key the client cannot name (`list`) is an object all the same.
        Err(object_store::Error::InvalidPath { .. }) => Ok(true),
        Err(e) => Err(client::reason(&e)),
    }
}
