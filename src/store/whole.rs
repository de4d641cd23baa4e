//! An object read whole, as the staged pipeline reads its work files from a store: one GET
//! streamed into a local file (or memory), and its length checked against the one the store
//! announced, so that a connection cut midway is an error and never a shorter file. What is read
//! is one version of the object: a task writing it again meanwhile cannot mix two.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::messages::display_path;

use futures::StreamExt;
use object_store::ObjectStoreExt;

use super::client;

/// The bytes of the file or object at `path`, read whole; None when there is none.
pub fn read_whole(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let what = || format!("reading {}", display_path(path));
    if super::is_url(path) {
        let url = path
            .to_str()
            .with_context(|| format!("{}: a URL must be UTF-8", display_path(path)))?;
        let mut bytes = Vec::new();
        let found = download(url, &mut bytes)
            .map_err(anyhow::Error::msg)
            .with_context(what)?;
        return Ok(found.map(|_| bytes));
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(what),
    }
}

/// Writes the object at `url` into `out` (one streamed GET), and returns its length; None when
/// there is no such object.
pub fn download(url: &str, out: &mut impl Write) -> Result<Option<u64>, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let got = client::block_on(store.get(&parsed.key))?;
    client::count(1, 0);
    let got = match got {
        Ok(g) => g,
        Err(e @ object_store::Error::NotFound { .. }) if !client::is_no_bucket(&e) => {
            return Ok(None)
        }
        Err(e) => return Err(client::reason(&e)),
    };
    let size = got.meta.size;
    let mut body = got.into_stream();
    let mut at = 0u64;
    while let Some(chunk) = client::block_on(body.next())? {
        let chunk = chunk.map_err(|e| client::reason(&e))?;
        client::count(0, chunk.len() as u64);
        at += chunk.len() as u64;
        out.write_all(&chunk)
            .map_err(|e| format!("keeping what was read in a temporary file: {e}"))?;
    }
    if at != size {
        return Err(format!(
            "object ended at {at} of its {size} bytes: the connection was cut"
        ));
    }
    Ok(Some(size))
}

/// True when there is an object at `url` (one HEAD).
pub fn exists(url: &str) -> Result<bool, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let head = client::block_on(store.head(&parsed.key))?;
    client::count(1, 0);
    match head {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(client::reason(&e)),
    }
}
