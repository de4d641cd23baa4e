//! Keep: which member of a cluster represents it (`--keep`), as an order on documents.
//!
//! Every policy is a total order that ends in path order, so the choice never depends on
//! threads or hash maps: `first` is path order itself; `largest`/`smallest` compare sizes,
//! `newest`/`oldest` modification times (a file without one comes last), `shortest-path` the
//! length of the path in bytes. `--cluster strict` takes its representatives in this order too.

use std::cmp::Ordering;
use std::path::Path;
use std::time::SystemTime;

use crate::cli::KeepArg;

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
pub fn compare(keep: KeepArg, a: &Facts, b: &Facts) -> Ordering {
    let by_time = |newest: bool| match (a.modified, b.modified) {
        (Some(x), Some(y)) if newest => y.cmp(&x),
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let primary = match keep {
        KeepArg::First => Ordering::Equal,
        KeepArg::Largest => b.bytes.cmp(&a.bytes),
        KeepArg::Smallest => a.bytes.cmp(&b.bytes),
        KeepArg::Newest => by_time(true),
        KeepArg::Oldest => by_time(false),
        KeepArg::ShortestPath => path_len(a.path).cmp(&path_len(b.path)),
    };
    // An indexed document was kept on an earlier night; the new ones are its duplicates.
    b.indexed
        .cmp(&a.indexed)
        .then(primary)
        .then(a.id.cmp(&b.id))
}

/// Sorts documents from most to least preferred.
pub fn sort<'a>(keep: KeepArg, ids: &mut [u32], facts: impl Fn(u32) -> Facts<'a>) {
    ids.sort_by(|&a, &b| compare(keep, &facts(a), &facts(b)));
}

/// The policy's name as on the command line.
pub fn name(keep: KeepArg) -> &'static str {
    match keep {
        KeepArg::First => "first",
        KeepArg::Largest => "largest",
        KeepArg::Smallest => "smallest",
        KeepArg::Newest => "newest",
        KeepArg::Oldest => "oldest",
        KeepArg::ShortestPath => "shortest-path",
    }
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
        assert_eq!(order(KeepArg::First), vec![0, 1, 2, 3]);
        assert_eq!(
            order(KeepArg::Largest),
            vec![0, 2, 3, 1],
            "ties in path order"
        );
        assert_eq!(order(KeepArg::Smallest), vec![1, 3, 0, 2]);
        assert_eq!(
            order(KeepArg::Newest),
            vec![1, 0, 3, 2],
            "no time comes last"
        );
        assert_eq!(order(KeepArg::Oldest), vec![3, 0, 1, 2]);
        assert_eq!(order(KeepArg::ShortestPath), vec![1, 3, 2, 0]);
    }
}
