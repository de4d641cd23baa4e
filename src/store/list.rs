//! A URL → the objects below it, as a directory's files: a prefix listed (the store pages the
//! listing, a thousand keys a request on S3), or one object.

use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

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
    let metas =
        client::block_on(list_all(store.as_ref(), prefix))?.map_err(|e| client::reason(&e))?;
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

/// Sub-prefixes listed at once.
const LISTINGS: usize = 16;
/// The most sub-prefixes listed one by one: past it, one listing of the whole prefix costs
/// fewer requests than one or more per sub-prefix.
const FAN_OUT: usize = 256;

/// Every object below `prefix`. A listing is paged, a thousand keys a request on S3, each page
/// asked for once the previous one came: 10,000 keys were ten requests one after another (and
/// some servers, s3s-fs among them, walk the whole prefix again for every page). So the
/// prefix's first level is listed first (its objects and sub-prefixes, as a directory), and the
/// sub-prefixes below it, [`LISTINGS`] at a time: one request more per sub-prefix, at most
/// [`FAN_OUT`] + 1 more for the whole listing. Their order is the caller's to make.
async fn list_all(
    store: &dyn ObjectStore,
    prefix: Option<&object_store::path::Path>,
) -> object_store::Result<Vec<ObjectMeta>> {
    let top = store.list_with_delimiter(prefix).await?;
    client::count(pages(top.objects.len() + top.common_prefixes.len()), 0);
    if top.common_prefixes.len() > FAN_OUT {
        let all: Vec<ObjectMeta> = store.list(prefix).try_collect().await?;
        client::count(pages(all.len()), 0);
        return Ok(all);
    }
    let mut all = top.objects;
    let mut below = futures::stream::iter(top.common_prefixes)
        .map(|p| async move {
            let found: Vec<ObjectMeta> = store.list(Some(&p)).try_collect().await?;
            client::count(pages(found.len()), 0);
            Ok::<_, object_store::Error>(found)
        })
        .buffer_unordered(LISTINGS);
    while let Some(found) = below.next().await {
        all.extend(found?);
    }
    Ok(all)
}

/// The requests a listing of `keys` keys took, roughly: a thousand keys a page.
fn pages(keys: usize) -> u64 {
    1 + keys as u64 / 1000
}
