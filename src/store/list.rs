//! A URL → the objects below it, as a directory's files: a prefix listed (the store pages the
//! listing, a thousand keys a request on S3), or one object.

use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt};

use super::client;

/// One object found below a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its key below the root's, `/`-separated (empty for a root that is the object itself).
    pub below: String,
    pub size: u64,
    pub modified: std::time::SystemTime,
}

/// The objects below `url`, in key order: the object itself when `url` names one (and does not
/// end in `/`), else every object under `url/`. None when there is neither.
pub fn list(url: &str) -> Result<Option<Vec<Listed>>, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let key = parsed.key;
    if !url.ends_with('/') && !key.as_ref().is_empty() {
        let head = client::block_on(store.head(&key))?;
        client::count(1, 0);
        match head {
            Ok(meta) => {
                return Ok(Some(vec![Listed {
                    below: String::new(),
                    size: meta.size,
                    modified: meta.last_modified.into(),
                }]))
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(client::reason(&e)),
        }
    }
    let prefix = (!key.as_ref().is_empty()).then_some(&key);
    let metas: Vec<object_store::ObjectMeta> =
        client::block_on(store.list(prefix).try_collect())?.map_err(|e| client::reason(&e))?;
    // The store pages its listing; count its requests roughly, a thousand keys each.
    client::count(1 + metas.len() as u64 / 1000, 0);
    if metas.is_empty() {
        return Ok(None);
    }
    let root = key.as_ref();
    let mut found: Vec<Listed> = metas
        .into_iter()
        .filter_map(|m| {
            let k = m.location.as_ref();
            let below = if root.is_empty() {
                k
            } else {
                k.strip_prefix(root)?.strip_prefix('/')?
            };
            Some(Listed {
                below: below.to_string(),
                size: m.size,
                modified: m.last_modified.into(),
            })
        })
        .collect();
    found.sort_unstable_by(|a, b| a.below.cmp(&b.below));
    Ok((!found.is_empty()).then_some(found))
}
