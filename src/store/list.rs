//! A URL → the objects below it, as a directory's files: a prefix listed (the store pages the
//! listing, a thousand keys a request on S3), or one object.
//!
//! A key with an empty, `.` or `..` segment (`a//b`, `a/./b`: legal on S3, `aws s3 cp` makes
//! them) is one the client cannot name: it refuses the whole page of the listing that holds it.
//! So a prefix is listed page by page, and a page refused is asked for again, smaller, until
//! the key is found alone: the keys around it are listed, and it is reported by itself.
//!
//! A key ending in `/` (`dir/`) is a folder marker, as the AWS CLI and s3fs take it: the
//! console's "create folder" writes one, empty. The client strips the `/` from the keys it
//! lists, and reads no key that ends in one, so `dir/` would be listed as the object `dir` that
//! is not there. Where the listing shows that a key is a marker (the key of a prefix listed on
//! its own: a sub-prefix of the root's first level), it is marked so ([`Listed::marker`]).

use futures::{StreamExt, TryStreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::client;

/// One object found below a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its key below the root's, `/`-separated (empty for a root that is the object itself).
    pub below: String,
    pub size: u64,
    pub modified: std::time::SystemTime,
    /// Its ETag, without quotes (`super::etag`), where the store gives one.
    pub e_tag: Option<String>,
    /// Why it cannot be read, for a key the client cannot name (its size and time are unknown).
    pub unreadable: Option<String>,
    /// A folder marker: its key is `below` and a `/` (see the module's notes).
    pub marker: bool,
}

/// The objects below `url`, in key order: the object itself when `url` names one (and does not
/// end in `/`), else every object under `url/`. None when there is neither. An `http(s)://`
/// URL is one document only: missing, or naming a directory, it is an error.
pub fn list(url: &str) -> Result<Option<Vec<Listed>>, String> {
    let parsed = client::parse(url)?;
    let store = client::store(&parsed.base)?;
    let key = parsed.key;
    let web = parsed.web;
    if web && (url.ends_with('/') || key.as_ref().is_empty()) {
        return Err(NOT_A_LISTING.to_string());
    }
    if !url.ends_with('/') && !key.as_ref().is_empty() {
        let head = client::block_on(store.head(&key))?;
        client::count(1, 0);
        match head {
            Ok(meta) => {
                return Ok(Some(vec![Listed {
                    below: String::new(),
                    size: meta.size,
                    modified: meta.last_modified.into(),
                    e_tag: meta.e_tag.as_deref().map(super::etag),
                    unreadable: None,
                    marker: false,
                }]))
            }
            // A web server is no store to list (only a WebDAV one answers PROPFIND): its URL
            // that is not there names nothing, and is said so at once.
            Err(object_store::Error::NotFound { .. }) if web => return Err(NOT_FOUND.into()),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(client::reason(&e)),
        }
    }
    let prefix = (!key.as_ref().is_empty()).then_some(&key);
    let pages = client::paged(&parsed.base)?;
    let (metas, odd, markers) =
        client::block_on(list_all(store.as_ref(), pages.as_deref(), prefix))?
            .map_err(|e| client::reason(&e))?;
    if metas.is_empty() && odd.is_empty() && markers.is_empty() {
        return Ok(None);
    }
    let root = key.as_ref();
    let below = |k: &'_ str| -> Option<String> {
        let below = if root.is_empty() {
            k
        } else {
            k.strip_prefix(root)?.strip_prefix('/')?
        };
        Some(below.to_string())
    };
    let marked = metas.into_iter().map(|m| (m, false));
    let mut found: Vec<Listed> = (marked.chain(markers.into_iter().map(|m| (m, true))))
        .filter_map(|(m, marker)| {
            Some(Listed {
                below: below(m.location.as_ref())?,
                size: m.size,
                modified: m.last_modified.into(),
                e_tag: m.e_tag.as_deref().map(super::etag),
                unreadable: None,
                marker,
            })
        })
        .collect();
    found.extend(odd.into_iter().filter_map(|k| {
        Some(Listed {
            below: below(&k)?,
            size: 0,
            modified: std::time::UNIX_EPOCH,
            e_tag: None,
            unreadable: Some(UNNAMABLE.to_string()),
            marker: false,
        })
    }));
    found.sort_unstable_by(|a, b| a.below.cmp(&b.below));
    Ok((!found.is_empty()).then_some(found))
}

/// Why an `http(s)://` URL is not read when its server has no document there.
const NOT_FOUND: &str = "not found: the web server has no document at this URL (404 Not Found)";

/// Why an `http(s)://` URL naming a directory is not read.
const NOT_A_LISTING: &str = "an http(s) URL names one document: a web server's directory \
                             cannot be listed; name each document's URL";

/// True when `url`, listed as an object, is the folder marker `url/` (its key ends in `/`, which
/// the client lists without it): asked when an object listed is not there to be read, as a
/// marker deeper than the first level is listed so ([`list_all`]). One listing of the first
/// level of the prefix `url/`; false when it fails.
pub fn is_marker(url: &str) -> bool {
    let Ok(parsed) = client::parse(url) else {
        return false;
    };
    let Ok(store) = client::store(&parsed.base) else {
        return false;
    };
    if parsed.key.as_ref().is_empty() {
        return false;
    }
    let listed = client::block_on(store.list_with_delimiter(Some(&parsed.key)));
    client::count(1, 0);
    matches!(listed, Ok(Ok(l)) if l.objects.iter().any(|m| m.location == parsed.key))
}

/// Why a key with an odd segment is not read.
const UNNAMABLE: &str = "cannot be read: its key has an empty, '.' or '..' segment ('a//b', \
                         'a/./b'), which the object store client refuses; copy it to a key \
                         without one";

/// The keys a page of a listing holds unless asked for fewer: S3's, GCS's and Azure's.
const PAGE: usize = 1000;

/// Every object below `prefix`, page by page, and the keys the client cannot name. A page that
/// holds such a key is refused whole; it is asked for again from the same place, half as long,
/// until a page of one key is refused: that key (named by the refusal) is set aside, and the
/// listing goes on after it. About twenty requests more for each such key, none for the rest.
async fn by_pages(
    pages: &dyn PaginatedListStore,
    prefix: Option<&object_store::path::Path>,
) -> object_store::Result<(Vec<ObjectMeta>, Vec<String>)> {
    // As the store's own listing: the keys below `prefix/`.
    let prefix = prefix.map(|p| format!("{}/", p.as_ref()));
    let (mut found, mut odd) = (Vec::new(), Vec::<String>::new());
    // Where the next page starts: after a page (its token), or after a key set aside.
    let (mut token, mut offset) = (None::<String>, None::<String>);
    let mut max = None;
    loop {
        let opts = PaginatedListOptions {
            offset: offset.clone(),
            page_token: token.clone(),
            max_keys: max,
            ..Default::default()
        };
        let page = pages.list_paginated(prefix.as_deref(), opts).await;
        client::count(1, 0);
        match page {
            Ok(page) => {
                found.extend(page.result.objects);
                match page.page_token {
                    Some(t) => (token, offset) = (Some(t), None),
                    None => return Ok((found, odd)),
                }
            }
            Err(object_store::Error::InvalidPath { source }) => {
                if max != Some(1) {
                    max = Some((max.unwrap_or(PAGE) / 2).max(1));
                    continue;
                }
                let key = match &source {
                    object_store::path::Error::EmptySegment { path }
                    | object_store::path::Error::BadSegment { path, .. } => path.clone(),
                    _ => return Err(object_store::Error::InvalidPath { source }),
                };
                // A store that starts again at the key itself would refuse it for ever.
                if odd.last() == Some(&key) {
                    return Err(object_store::Error::InvalidPath { source });
                }
                odd.push(key.clone());
                (token, offset, max) = (None, Some(key), None);
            }
            Err(e) => return Err(e),
        }
    }
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
///
/// With the keys the client cannot name ([`by_pages`]): a first level that holds one (as a key
/// or a sub-prefix) is refused, and the whole prefix is listed at once instead. And the folder
/// markers of the first level's sub-prefixes: a sub-prefix `p/` listed on its own holds no key
/// the client would name `p` but the marker `p/` itself.
async fn list_all(
    store: &dyn ObjectStore,
    paged: Option<&dyn PaginatedListStore>,
    prefix: Option<&object_store::path::Path>,
) -> object_store::Result<(Vec<ObjectMeta>, Vec<String>, Vec<ObjectMeta>)> {
    let top = match store.list_with_delimiter(prefix).await {
        Err(object_store::Error::InvalidPath { .. }) => {
            let (all, odd) = whole(store, paged, prefix).await?;
            return Ok((all, odd, Vec::new()));
        }
        top => top?,
    };
    client::count(pages(top.objects.len() + top.common_prefixes.len()), 0);
    if top.common_prefixes.len() > FAN_OUT {
        let (all, odd) = whole(store, paged, prefix).await?;
        return Ok((all, odd, Vec::new()));
    }
    let (mut all, mut odd, mut markers) = (top.objects, Vec::new(), Vec::new());
    let mut below = futures::stream::iter(top.common_prefixes)
        .map(|p| async move { (whole(store, paged, Some(&p)).await, p) })
        .buffer_unordered(LISTINGS);
    while let Some((found, p)) = below.next().await {
        let (found, unnamed) = found?;
        let (marker, found): (Vec<ObjectMeta>, _) =
            found.into_iter().partition(|m| m.location == p);
        all.extend(found);
        markers.extend(marker);
        odd.extend(unnamed);
    }
    Ok((all, odd, markers))
}

/// Every object below `prefix` in one listing: page by page where the store has pages.
async fn whole(
    store: &dyn ObjectStore,
    paged: Option<&dyn PaginatedListStore>,
    prefix: Option<&object_store::path::Path>,
) -> object_store::Result<(Vec<ObjectMeta>, Vec<String>)> {
    if let Some(paged) = paged {
        return by_pages(paged, prefix).await;
    }
    let all: Vec<ObjectMeta> = store.list(prefix).try_collect().await?;
    client::count(pages(all.len()), 0);
    Ok((all, Vec::new()))
}

/// The requests a listing of `keys` keys took, roughly: a thousand keys a page.
fn pages(keys: usize) -> u64 {
    1 + keys as u64 / 1000
}
