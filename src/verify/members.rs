//! The material of a group of members (a cluster's, a component's), loaded again when a
//! verdict or `--pairs` evidence needs it after verification has dropped its batches.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::ingest::reread::check_contents;
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;
use crate::messages::InputError;

use super::judge::Judge;
use super::reload::{Loaded, Want};

/// `want` of the distinct contents of `members`, keyed by the document holding each content
/// (`judge.canon`); files that cannot be read again add to `errors`. Used by `--pairs` and by
/// strict clusters under exact or edit verification. A member over the edit cap brings in every
/// member's set, since any of them may be compared with it. Sets only are wanted, those in
/// `retained` are taken from there instead of being derived again: `retained` itself when it
/// holds them all (as it does for most clusters: copying their sets was most of what strict
/// clustering spent beside the checks), copies otherwise.
pub fn member_material<'r>(
    judge: &Judge,
    engine: &Engine,
    files: &[FileEntry],
    members: &[u32],
    want: Want,
    retained: &'r Loaded,
    errors: &mut Vec<InputError>,
) -> Cow<'r, Loaded> {
    let all = |_: u32| true;
    member_material_checking(judge, engine, files, members, want, retained, all, errors).0
}

/// [`member_material`] where, when sets only are wanted, the set of a content `needs_set`
/// refuses is not derived: its file is read again only to check it against the content hash
/// ([`check_contents`]), for the error of one that cannot be (the same error, in the same place
/// among the others). Also gives back those contents, among the ones whose sets were not
/// derived, that may still be: checked, or retained.
// The member lists and where the material comes from are the caller's, as in `member_material`.
#[allow(clippy::too_many_arguments)]
pub fn member_material_checking<'r>(
    judge: &Judge,
    engine: &Engine,
    files: &[FileEntry],
    members: &[u32],
    want: Want,
    retained: &'r Loaded,
    needs_set: impl Fn(u32) -> bool,
    errors: &mut Vec<InputError>,
) -> (Cow<'r, Loaded>, Vec<u32>) {
    let mut wanted: Vec<(u32, u128)> = members
        .iter()
        .map(|&d| {
            let canon = judge.canon[d as usize];
            (canon, judge.docs[canon as usize].hash)
        })
        .collect();
    let sets_only = want.sets && !want.tokens;
    if sets_only && wanted.iter().all(|&(d, _)| retained.get(d).set.is_some()) {
        return (Cow::Borrowed(retained), Vec::new());
    }
    wanted.sort_unstable();
    wanted.dedup();
    let mut copied = Vec::new();
    let mut unread = Vec::new();
    if sets_only {
        wanted.retain(|&(d, _)| match retained.get(d).set {
            Some(set) if needs_set(d) => {
                copied.push((d, set.into()));
                false
            }
            Some(_) => {
                unread.push(d);
                false
            }
            None => true,
        });
    }
    let (checked, wanted): (Vec<_>, Vec<_>) =
        (wanted.into_iter()).partition(|&(d, _)| sets_only && !needs_set(d));
    let all: Vec<u32> = wanted.iter().map(|&(d, _)| d).collect();
    let mut failed = Vec::new();
    let mut loaded = Loaded::load(
        engine,
        files,
        &wanted,
        want,
        |_: &HashSet<u32>| all,
        &mut failed,
    );
    if !checked.is_empty() {
        for (d, r) in check_contents(engine, files, &checked) {
            match r {
                Ok(()) => unread.push(d),
                Err(error) => failed.push((d, error)),
            }
        }
        // In document order, as one load of them all gave them (a stable sort of two sorted runs).
        failed.sort_by_key(|&(d, _)| d);
    }
    errors.extend(
        failed
            .into_iter()
            .map(|(d, error)| files[d as usize].error(None, error)),
    );
    for (d, set) in copied {
        loaded.insert_set(d, set);
    }
    (Cow::Owned(loaded), unread)
}
