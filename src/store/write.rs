//! Writing an object so that a reader sees it whole or not at all: object stores have no
//! rename, so nothing is written under the final key until the whole content is known. A file
//! written locally first (in `TMPDIR`, so memory stays bounded) is sent as one PUT when small,
//! else as a multipart upload that only its completion, after the last part, makes visible; an
//! upload that fails is aborted. A killed run leaves no object (S3 keeps the parts of an
//! unfinished upload out of sight, until a lifecycle rule removes them).

use std::io::Read;

use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::client;

/// The size of a part of a multipart upload, and the largest object sent as one PUT: S3's
/// parts are at least 5 MiB (the last excepted).
const PART: usize = 8 << 20;

/// Sends the content of `file` (read from its start) to the object at `url`.
pub fn upload(file: &mut std::fs::File, url: &str) -> Result<(), String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let key = &parsed.key;
    let mut first = read_part(file)?;
    if first.len() < PART {
        let put = client::block_on(store.put(key, PutPayload::from(first)))?;
        client::count(1, 0);
        return put.map(|_| ()).map_err(|e| client::reason(&e));
    }
    let mut upload = client::block_on(store.put_multipart(key))?.map_err(|e| client::reason(&e))?;
    client::count(1, 0);
    let sent: Result<(), String> = (|| {
        while !first.is_empty() {
            let part = upload.put_part(PutPayload::from(std::mem::take(&mut first)));
            client::block_on(part)?.map_err(|e| client::reason(&e))?;
            client::count(1, 0);
            first = read_part(file)?;
        }
        client::block_on(upload.complete())?.map_err(|e| client::reason(&e))?;
        client::count(1, 0);
        Ok(())
    })();
    if sent.is_err() {
        let _ = client::block_on(upload.abort());
    }
    sent
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
/// Returns whether some object lies below `url` already.
pub fn check_writable(url: &str, object: bool) -> Result<bool, String> {
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
    any_below(url)
}

/// True when some object lies below the prefix `url` (`url/…`).
fn any_below(url: &str) -> Result<bool, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let prefix = (!parsed.key.as_ref().is_empty()).then_some(&parsed.key);
    let first = client::block_on(async { store.list(prefix).try_next().await })?;
    client::count(1, 0);
    first.map(|f| f.is_some()).map_err(|e| client::reason(&e))
}
