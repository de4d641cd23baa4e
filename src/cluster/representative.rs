//! Keep: which member of a cluster represents it (`--keep`), as an order on documents.
//!
//! Every policy is a total order that ends in path order, so the choice never depends on
//! threads or hash maps: `first` is path order itself; `largest`/`smallest` compare sizes,
//! `newest`/`oldest` modification times (a file without one comes last), `shortest-path` the
//! length of the path in bytes. `--cluster strict` takes its representatives in this order too.
//! `--keep-by FIELD` comes before the policy: the dump record with the greatest (least) value
//! first, records without one after those with one, ties by the policy. An indexed document
//! (`--against`) comes before all: it was kept on an earlier run.

use std::cmp::Ordering;
use std::path::Path;
use std::time::SystemTime;

use crate::config::{Config, KeepPolicy};
use crate::input::field_value::FieldValue;

/// How members are ordered, most preferred first.
#[derive(Clone, Copy, Debug)]
pub struct Order {
    /// `--keep`.
    pub keep: KeepPolicy,
    /// `--keep-by`: Some(true) for `:max`, Some(false) for `:min`.
    pub by_max: Option<bool>,
}

impl Order {
    /// The order the options ask for.
    pub fn of(cfg: &Config) -> Order {
        Order {
            keep: cfg.keep,
            by_max: cfg.keep_by.as_ref().map(|k| k.max),
        }
    }
}

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
    /// Its `--keep-by` value, when it has one.
    pub value: Option<&'a FieldValue>,
}

/// Compares two documents under `order`: `Less` means `a` is preferred as representative.
pub fn compare(order: Order, a: &Facts, b: &Facts) -> Ordering {
    let by_time = |newest: bool| match (a.modified, b.modified) {
        (Some(x), Some(y)) if newest => y.cmp(&x),
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let primary = match order.keep {
        KeepPolicy::First | KeepPolicy::None => Ordering::Equal,
        KeepPolicy::Largest => b.bytes.cmp(&a.bytes),
        KeepPolicy::Smallest => a.bytes.cmp(&b.bytes),
        // The records of one dump share its time: the later record is the newer, as rows
        // are appended to a table.
        KeepPolicy::Newest if a.path == b.path => by_time(true).then(b.id.cmp(&a.id)),
        KeepPolicy::Newest => by_time(true),
        KeepPolicy::Oldest => by_time(false),
        KeepPolicy::ShortestPath => path_len(a.path).cmp(&path_len(b.path)),
    };
    let by_value = match (order.by_max, a.value, b.value) {
        (Some(true), Some(x), Some(y)) => y.cmp(x),
        (Some(false), Some(x), Some(y)) => x.cmp(y),
        (Some(_), Some(_), None) => Ordering::Less,
        (Some(_), None, Some(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    };
    // An indexed document was kept on an earlier night; the new ones are its duplicates.
    b.indexed
        .cmp(&a.indexed)
        .then(by_value)
        .then(primary)
        .then(a.id.cmp(&b.id))
}

/// Sorts documents from most to least preferred.
pub fn sort<'a>(order: Order, ids: &mut [u32], facts: impl Fn(u32) -> Facts<'a>) {
    ids.sort_by(|&a, &b| compare(order, &facts(a), &facts(b)));
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
                value: None,
            }
        };
        let order = |keep| {
            let mut ids = vec![3, 1, 2, 0];
            sort(Order { keep, by_max: None }, &mut ids, facts);
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
        assert_eq!(order(KeepPolicy::None), vec![0, 1, 2, 3]);
    }

    #[test]
    fn keep_by_orders_by_value_then_by_the_policy_values_before_none() {
        let values = [
            Some(FieldValue::Int(5)),
            None,
            Some(FieldValue::Float(7.5)),
            Some(FieldValue::Int(5)),
        ];
        let facts = |i: u32| Facts {
            id: i,
            path: Path::new("p"),
            bytes: u64::from(4 - i),
            modified: None,
            indexed: false,
            value: values[i as usize].as_ref(),
        };
        let order = |keep, by_max| {
            let mut ids = vec![0, 1, 2, 3];
            sort(Order { keep, by_max }, &mut ids, facts);
            ids
        };
        assert_eq!(order(KeepPolicy::First, Some(true)), vec![2, 0, 3, 1]);
        assert_eq!(order(KeepPolicy::First, Some(false)), vec![0, 3, 2, 1]);
        assert_eq!(order(KeepPolicy::Smallest, Some(false)), vec![3, 0, 2, 1]);
        assert_eq!(order(KeepPolicy::First, None), vec![0, 1, 2, 3]);
        let indexed = |i: u32| Facts {
            indexed: i == 1,
            ..facts(i)
        };
        let mut ids = vec![0, 1, 2, 3];
        let by_max = Some(true);
        sort(
            Order {
                keep: KeepPolicy::First,
                by_max,
            },
            &mut ids,
            indexed,
        );
        assert_eq!(
            ids,
            [1, 2, 0, 3],
            "an indexed document first, whatever its value"
        );
    }
}
