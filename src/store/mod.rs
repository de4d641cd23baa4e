//! Where the data lives: a path of data may be a URL (`s3://`, `gs://`, `az://`, `abfs://`,
//! `abfss://`, `http://`, `https://`), read (and written) through arrow-rs's `object_store`.
//! One storage layer under the readers: the walk lists a prefix as it walks a directory
//! (`list`), a document is one GET, a dump a streamed GET and a Parquet dump range requests
//! (`object`), and the rest of the pipeline sees a path like any other, the URL itself
//! (docs/object-stores.md).
//!
//! A URL is told from a local path by its scheme alone ([`is_url`]: a few bytes compared), so
//! local inputs pay nothing for it. `file://` URLs are made local paths when the command line is
//! read ([`local_path`]); they never reach the store.

mod aws_files;
mod client;
mod list;
mod object;
mod prefetch;
mod whole;
mod write;

use std::path::{Path, PathBuf};

pub(crate) use client::NO_SUCH_OBJECT;
pub use list::{is_marker, list, Listed};
pub use object::{Object, StreamRead};
pub use prefetch::{forget, prefetch, Allowance, MOST as PREFETCH_MOST};
pub use whole::{download, exists, read_whole};
pub use write::{abort_under_way, check_writable, create, delete, etag, upload, Stored};

/// The schemes read through the object store, each followed by `://`.
const SCHEMES: [&str; 8] = ["s3", "s3a", "gs", "az", "abfs", "abfss", "http", "https"];

/// True when `path` is a URL of an object store (`s3://bucket/key`, …), not a local path.
pub fn is_url(path: &Path) -> bool {
    scheme_len(path.as_os_str().as_encoded_bytes()).is_some()
}

/// The length of `bytes`' scheme when they start with one of [`SCHEMES`] and `://`.
fn scheme_len(bytes: &[u8]) -> Option<usize> {
    // Most local paths start with `/` or `.`, or have no `:` near their start: cut short there.
    let colon = bytes.iter().take(6).position(|&b| b == b':')?;
    let (scheme, rest) = bytes.split_at(colon);
    (rest.starts_with(b"://")
        && SCHEMES
            .iter()
            .any(|s| s.as_bytes().eq_ignore_ascii_case(scheme)))
    .then_some(colon)
}

/// `file:///abs/path` as the local path it names; None for anything else. A `file://` URL with
/// a host other than `localhost` names no local file, and is refused by [`check`].
pub fn local_path(arg: &Path) -> Option<PathBuf> {
    let s = arg.to_str()?;
    let rest = s
        .strip_prefix("file://")
        .or_else(|| s.strip_prefix("FILE://"))?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    rest.starts_with('/')
        .then(|| PathBuf::from(percent_decode(rest)))
}

/// `%XX` escapes decoded (a `file://` URL's path); an escape that is not one is kept as is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when the URLs `a` and `b` name one object: the same store and key, however written
/// (`S3://b//k` and `s3a://b/k` are `s3://b/k`).
pub fn same_object(a: &Path, b: &Path) -> bool {
    let parse = |p: &Path| {
        let parsed = client::parse(p.to_str()?).ok()?;
        let base = match parsed.base.strip_prefix("s3a://") {
            Some(rest) => format!("s3://{rest}"),
            None => parsed.base,
        };
        Some((base, parsed.key))
    };
    is_url(a) && is_url(b) && matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

/// Why an index stays on a local disk, for [`refuse_url`].
pub const INDEX_IS_LOCAL: &str = "an index is committed by an atomic rename under a lock, \
                                  which object stores do not offer";

/// Refuses a URL where dupfind needs a local directory: `what` says where (`--against`), `why`
/// what it needs that an object store does not give.
pub fn refuse_url(path: &Path, what: &str, why: &str) -> anyhow::Result<()> {
    if is_url(path) {
        anyhow::bail!(
            "{what} {}: must be a local directory, not a URL: {why}",
            path.display()
        );
    }
    Ok(())
}

/// Counts of the requests made and the bytes fetched, printed on stderr at exit when
/// `DUPFIND_STORE_STATS` is set (benches/s3.sh reads them).
pub fn stats_note() -> Option<String> {
    std::env::var_os("DUPFIND_STORE_STATS")?;
    let (requests, bytes) = client::stats();
    Some(format!(
        "object store: {requests} requests, {bytes} bytes fetched"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_told_from_a_path_by_its_scheme() {
        for url in [
            "s3://b/k",
            "S3://b/",
            "gs://b/k",
            "az://c/k",
            "abfss://c@a.dfs.core.windows.net/k",
            "https://example.org/a.txt",
            "s3a://b/k",
        ] {
            assert!(is_url(Path::new(url)), "{url}");
        }
        for path in [
            "/s3://b",
            "s3:/b",
            "s3",
            "./s3://b",
            "file:///tmp/a",
            "ftp://h/a",
            "",
            "a:b",
            "longscheme://x",
        ] {
            assert!(!is_url(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn a_file_url_is_its_local_path() {
        assert_eq!(
            local_path(Path::new("file:///tmp/a%20b.txt")),
            Some(PathBuf::from("/tmp/a b.txt"))
        );
        assert_eq!(
            local_path(Path::new("file://localhost/x")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(local_path(Path::new("file://host/x")), None);
        assert_eq!(local_path(Path::new("/tmp/a")), None);
        assert_eq!(
            local_path(Path::new("file:///a%2")),
            Some(PathBuf::from("/a%2"))
        );
    }
}
