//! Hard links found while reading: when the walk did not stat the files, the names of one inode
//! are merged after the first pass, the first in walk order naming the document.

use std::collections::HashMap;

use super::worker::Outcome;
use super::Ingested;

/// Makes the later names of each inode among `linked` (documents whose file has several
/// names, found when read because the walk did not stat them) aliases of its first name in walk
/// order, as the walk does when it stats. Both names were read, and the worker that claimed
/// their content first sketched it: when that was a later name, its result, signature and
/// bottom-k sketch (`slot` values each) pass to the first.
pub(super) fn merge_links(
    out: &mut Ingested,
    bottom: &mut Vec<u64>,
    linked: &[usize],
    lanes: usize,
    slot: usize,
) {
    if linked.is_empty() {
        return;
    }
    let mut first: HashMap<(u64, u64), usize> = HashMap::new();
    let mut gone = vec![false; out.entries.len()];
    for &d in linked {
        let Some(&f) = first.get(&out.entries[d].id) else {
            first.insert(out.entries[d].id, d);
            continue;
        };
        gone[d] = true;
        let path = std::mem::take(&mut out.entries[d].path);
        out.entries[f].aliases.push(path);
        let sketched = |o: &Outcome| *o == Outcome::Sketched;
        if sketched(&out.docs[d].outcome) && !sketched(&out.docs[f].outcome) {
            out.docs.swap(f, d);
            out.sigs.copy_within(d * lanes..(d + 1) * lanes, f * lanes);
            if !bottom.is_empty() {
                bottom.copy_within(d * slot..(d + 1) * slot, f * slot);
            }
        }
    }
    let mut kept = gone.iter().map(|g| !g);
    out.entries.retain(|_| kept.next().unwrap_or(true));
    let mut kept = gone.iter().map(|g| !g);
    out.docs.retain(|_| kept.next().unwrap_or(true));
    compact_rows(&mut out.sigs, lanes, &gone);
    compact_rows(bottom, slot, &gone);
}

/// Drops the `width`-value rows of `values` (one per document, or none at all) marked `gone`,
/// keeping the others in order.
fn compact_rows<T: Copy>(values: &mut Vec<T>, width: usize, gone: &[bool]) {
    if values.is_empty() {
        return;
    }
    let mut to = 0;
    for (row, _) in gone.iter().enumerate().filter(|(_, g)| !**g) {
        values.copy_within(row * width..(row + 1) * width, to * width);
        to += 1;
    }
    values.truncate(to * width);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::worker::DocResult;
    use crate::input::walk::FileEntry;
    use crate::sketch::bottomk::Sketches;
    use crate::sketch::kmv::{Kmv, DEFAULT_KMV_K};

    fn entry(path: &str, id: (u64, u64)) -> FileEntry {
        FileEntry {
            path: path.into(),
            aliases: Vec::new(),
            size: 10,
            id,
            modified: None,
            changed: None,
            dump: false,
            record: None,
            deferred: false,
        }
    }

    fn doc(outcome: Outcome, hash: u128) -> DocResult {
        DocResult {
            outcome,
            bytes: 10,
            hash,
            fingerprint: 0,
            set: None,
            shingles: 0,
            links: 0,
            disk: 0,
            json_lines: false,
        }
    }

    #[test]
    fn later_names_of_an_inode_become_aliases_and_hand_over_their_sketch() {
        // a and c are one inode; c's worker claimed the content first, so a is the duplicate.
        // b is another file, d a third name of a's inode that was never sketched.
        let mut out = Ingested {
            entries: vec![
                entry("a", (1, 7)),
                entry("b", (1, 8)),
                entry("c", (1, 7)),
                entry("d", (1, 7)),
            ],
            docs: vec![
                doc(Outcome::Duplicate, 5),
                doc(Outcome::Sketched, 6),
                doc(Outcome::Sketched, 5),
                doc(Outcome::Duplicate, 5),
            ],
            sigs: vec![0, 0, 1, 1, 2, 2, 3, 3],
            bottom: Sketches::default(),
            distinct: Kmv::new(DEFAULT_KMV_K),
            errors: Vec::new(),
            keep_seen: Default::default(),
            bad_lines: 0,
            empty_dumps: 0,
            over_budget: None,
            prints: Default::default(),
        };
        let mut bottom = vec![10, 11, 12, 13];
        merge_links(&mut out, &mut bottom, &[0, 2, 3], 2, 1);
        let paths: Vec<_> = out.entries.iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, ["a", "b"].map(std::path::PathBuf::from));
        assert_eq!(
            out.entries[0].aliases,
            ["c", "d"].map(std::path::PathBuf::from)
        );
        let outcomes: Vec<_> = out.docs.iter().map(|d| d.outcome.clone()).collect();
        assert_eq!(outcomes, [Outcome::Sketched, Outcome::Sketched]);
        assert_eq!(out.sigs, [2, 2, 1, 1]);
        assert_eq!(bottom, [12, 11]);

        // Without bottom-k there are no slots to move.
        let mut none = Vec::new();
        out.entries.push(entry("e", (1, 8)));
        out.docs.push(doc(Outcome::Duplicate, 6));
        out.sigs.extend([4, 4]);
        merge_links(&mut out, &mut none, &[1, 2], 2, 1);
        assert_eq!(out.entries.len(), 2);
        assert_eq!(out.entries[1].aliases, ["e"].map(std::path::PathBuf::from));
        assert_eq!(out.sigs, [2, 2, 1, 1]);
        assert!(none.is_empty());
    }
}
