//! Keep: which member of a cluster represents it (`--keep`), as an order on documents.
//!
//! Every policy is a total order that ends in path order, so the choice never depends on
//! threads or hash maps: `first` is path order itself; `largest`/`smallest` compare sizes,
//! `newest`/`oldest` modification times (a file without one comes last), `shortest-path` the
//! length of the path in bytes. `--cluster strict` takes its representatives in this order too.

use std::cmp::Ordering;
use std::path::Path;
use std::time::SystemTime;

use crate::config::KeepPolicy;

/// What the policies compare for one document.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// Document id (path order).
    pub id: u32,
    /// The document's path.
    pub path: &'a Path,
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time.
    pub modified: Option<SystemTime>,
    /// Held by the index scanned against (`--against`): such a document is always preferred.
    pub indexed: bool,
}

/// Compares two documents under `keep`: `Less` means `a` is preferred as representative.
pub fn compare(keep: KeepPolicy, a: &Facts, b: &Facts) -> Ordering {
    let by_time = |newest: bool| match (a.modified, b.modified) {
        (Some(x), Some(y)) if newest => y.cmp(&x),
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let primary = match keep {
        KeepPolicy::First => Ordering::Equal,
        KeepPolicy::Largest => b.bytes.cmp(&a.bytes),
        KeepPolicy::Smallest => a.bytes.cmp(&b.bytes),
        KeepPolicy::Newest => by_time(true),
        KeepPolicy::Oldest => by_time(false),
        KeepPolicy::ShortestPath => path_len(a.path).cmp(&path_len(b.path)),
    };
    // An indexed document was kept on an earlier night; the new ones are its duplicates.
    b.indexed
        .cmp(&a.indexed)
        .then(primary)
        .then(a.id.cmp(&b.id))
}

/// Sorts documents from most to least preferred.
pub fn sort<'a>(keep: KeepPolicy, ids: &mut [u32], facts: impl Fn(u32) -> Facts<'a>) {
    ids.sort_by(|&a, &b| compare(keep, &facts(a), &facts(b)));
}

fn path_len(p: &Path) -> usize {
    p.as_os_str().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_policy_prefers_the_expected_document() {
        let t = |s| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        let docs = [
            (Path::new("a/long/name.txt"), 300, t(20)),
            (Path::new("b.txt"), 100, t(30)),
            (Path::new("c/x.txt"), 300, None),
            (Path::new("d.txt"), 200, t(10)),
        ];
        let facts = |i: u32| {
            let (path, bytes, modified) = docs[i as usize];
            Facts {
                id: i,
                path,
                bytes,
                modified,
                indexed: false,
            }
        };
        let order = |keep| {
            let mut ids = vec![3, 1, 2, 0];
            sort(keep, &mut ids, facts);
            ids
        };
        assert_eq!(order(KeepPolicy::First), vec![0, 1, 2, 3]);
        assert_eq!(
            order(KeepPolicy::Largest),
            vec![0, 2, 3, 1],
            "ties in path order"
        );
        assert_eq!(order(KeepPolicy::Smallest), vec![1, 3, 0, 2]);
        assert_eq!(
            order(KeepPolicy::Newest),
            vec![1, 0, 3, 2],
            "no time comes last"
        );
        assert_eq!(order(KeepPolicy::Oldest), vec![3, 0, 1, 2]);
        assert_eq!(order(KeepPolicy::ShortestPath), vec![1, 3, 2, 0]);
    }
}
