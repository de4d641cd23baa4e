//! How an index names files and times: paths stored absolute (made so lexically), as their
//! exact bytes, so an index can be used from any directory; modification times in nanoseconds.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::index::store::Entry;
use crate::input::walk::{FileEntry, Record};

/// Nanoseconds since the epoch (negative before it; 0 when the platform has no time).
pub fn mtime_ns(t: Option<SystemTime>) -> i128 {
    match t {
        None => 0,
        Some(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        },
    }
}

pub(super) fn from_mtime_ns(ns: i128) -> Option<SystemTime> {
    if ns == 0 {
        return None;
    }
    let d = Duration::from_nanos(ns.unsigned_abs().min(u64::MAX as u128) as u64);
    if ns > 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
}

/// The path an index stores and looks a file up by: made absolute against the working
/// directory, lexically (`.` dropped, `..` taken back; no symbolic link resolved, no system
/// call), so `old/a`, `./old/a`, `x/../old/a` and `/home/me/old/a` are one key, and the same
/// relative path from another directory is not.
pub(super) fn path_key(p: &Path) -> Vec<u8> {
    match crate::input::walk::lexical_absolute(p) {
        Some(abs) => path_bytes(&abs),
        None => path_bytes(p),
    }
}

#[cfg(unix)]
pub(super) fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(unix)]
pub(super) fn path_from_bytes(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

/// An indexed document as the walk's entry for it, under `path`, with `size` and `changed`
/// (the join and the document table each take their own).
pub(super) fn entry_as_file(
    e: &Entry,
    path: PathBuf,
    size: u64,
    changed: Option<SystemTime>,
) -> FileEntry {
    FileEntry {
        path,
        aliases: Vec::new(),
        size,
        id: (e.dev, e.inode),
        modified: from_mtime_ns(e.mtime_ns),
        changed,
        dump: false,
        record: e.line.map(|line| {
            Box::new(Record {
                line,
                id: e.id.clone(),
                file_size: e.size,
                at: None,
                keep: None,
            })
        }),
        deferred: false,
    }
}
