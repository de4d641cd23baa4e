//! The material of a group of members (a cluster's, a component's), loaded again when a
//! verdict or `--pairs` evidence needs it after verification has dropped its batches.

use std::borrow::Cow;
use std::collections::HashSet;

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
    let mut wanted: Vec<(u32, u128)> = members
        .iter()
        .map(|&d| {
            let canon = judge.canon[d as usize];
            (canon, judge.docs[canon as usize].hash)
        })
        .collect();
    let sets_only = want.sets && !want.tokens;
    if sets_only && wanted.iter().all(|&(d, _)| retained.get(d).set.is_some()) {
        return Cow::Borrowed(retained);
    }
    wanted.sort_unstable();
    wanted.dedup();
    let mut copied = Vec::new();
    if sets_only {
        wanted.retain(|&(d, _)| match retained.set_copy(d) {
            Some(set) => {
                copied.push((d, set));
                false
            }
            None => true,
        });
    }
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
    errors.extend(
        failed
            .into_iter()
            .map(|(d, error)| files[d as usize].error(None, error)),
    );
    for (d, set) in copied {
        loaded.insert_set(d, set);
    }
    Cow::Owned(loaded)
}
