//! Preparing the next generation (`--update`, `index build`): one new segment holding the
//! scan's new documents ([`crate::index::add`]) and the tombstones of the indexed documents they
//! supersede (and, with `--prune`, of those whose files are gone). Older segments are not
//! touched, but for the merge an update makes by itself once the index holds many
//! ([`crate::index::compact::auto_pick`]). Nothing is written when there is nothing to add or
//! remove.
//!
//! The result is a [`Pending`] commit: the report is delivered first, and the generation made
//! live only then.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::config::Config;
use crate::index::add::{write_segment, NewDocs};
use crate::index::commit::{tombstones, Locked, Pending};
use crate::index::compact::{auto_pick, merge_into};
use crate::index::dir::IndexDir;
use crate::index::gone::gone;
use crate::index::join::{index_params, Joined};
use crate::index::open::{DocRef, Opened};
use crate::index::segment::write::{Plan, Written};
use crate::index::sweep::tidy;
use crate::index::upgrade::upgrade_with;
use crate::messages::{display_path, InputError, Messages};
use crate::report::Updated;

/// What preparing an update came to.
pub enum Prepared {
    /// Nothing to add or remove: nothing written.
    Unchanged,
    /// The next generation, written, to be made live.
    Pending(Pending),
}

/// `index build`: a new index of the scan's documents, pending.
pub fn create(path: &Path, new: &NewDocs, failed: &mut Vec<InputError>) -> Result<Prepared> {
    let mut w = Locked::create(path, &new.cfg.messages)?.fresh(index_params(new.cfg), 1);
    let ids = new.ids();
    let plan = w.plan(Vec::new())?;
    let segment = write_segment(w.dir(), plan, None, Some((new, &ids)), |_| Ok(()), failed)?;
    w.add(segment)?;
    Ok(Prepared::Pending(w.finish()?))
}

/// `--update`: the next generation of the index `joined` opened, pending; `Unchanged` when
/// there is nothing to add or remove.
pub fn update(
    joined: &Joined,
    new: &NewDocs,
    prune: bool,
    failed: &mut Vec<InputError>,
) -> Result<Prepared> {
    let index = joined.index.as_ref().context("no index was opened")?;
    if let Some(damage) = joined.sets.as_ref().and_then(|s| s.damage()) {
        bail!("{damage}");
    }
    let ids = new.ids();
    let removed = removed(index, &joined.superseded, &joined.walked, prune)?;
    if ids.is_empty() && removed.is_empty() {
        tidy(index.dir(), &new.cfg.messages);
        return Ok(Prepared::Unchanged);
    }
    let locked = Locked::reopen(index, &new.cfg.messages)?;
    let pending = match locked.current() {
        None => upgrade_with(index, locked, &removed, new, &ids, failed)?,
        Some(_) => {
            // The dictionary of the newest segment that has one serves the new documents too.
            let inherited = inherited_dict(index);
            let write = |dir: &IndexDir, plan: Plan| {
                let new = Some((new, ids.as_slice()));
                write_segment(dir, plan, inherited, new, |_| Ok(()), failed)
            };
            next_generation(index, locked, &removed, write)?
        }
    };
    Ok(Prepared::Pending(pending))
}

/// A staged run's `--update` (`stage report`): the next generation of `index`, whose new
/// segment `write` fills with the `documents` the shards packed, less `superseded` (and, with
/// `prune`, the documents whose files are gone, `walked` being the paths the run walked);
/// `Unchanged` when there is nothing to add or remove.
pub fn update_staged(
    index: &Opened,
    (superseded, walked): (&HashSet<DocRef>, &HashSet<Vec<u8>>),
    prune: bool,
    documents: u64,
    write: impl FnOnce(&IndexDir, Plan) -> Result<Written>,
    messages: &Messages,
) -> Result<Prepared> {
    let removed = removed(index, superseded, walked, prune)?;
    if documents == 0 && removed.is_empty() {
        tidy(index.dir(), messages);
        return Ok(Prepared::Unchanged);
    }
    let locked = Locked::reopen(index, messages)?;
    if locked.current().is_none() {
        // `stage init` refuses one; it cannot have become one since.
        bail!("an index of format 1 is not updated by a staged run");
    }
    Ok(Prepared::Pending(next_generation(
        index, locked, &removed, write,
    )?))
}

/// The dictionary of `index`'s newest segment that has one, which new documents are compressed
/// with.
pub fn inherited_dict(index: &Opened) -> Option<Vec<u8>> {
    index
        .segments()
        .iter()
        .rev()
        .find_map(|s| s.dicts().first().cloned())
}

/// What an update removes: the `superseded` documents and, with `prune`, those whose files are
/// gone.
fn removed(
    index: &Opened,
    superseded: &HashSet<DocRef>,
    walked: &HashSet<Vec<u8>>,
    prune: bool,
) -> Result<HashSet<DocRef>> {
    let mut removed = superseded.clone();
    if prune {
        removed.extend(gone(index, walked)?);
    }
    Ok(removed)
}

/// One new segment of `index`, which `write` fills, and the tombstones of `removed`; past
/// [`crate::index::compact::AUTO_COMPACT_AFTER`] segments, the smallest merged.
fn next_generation(
    index: &Opened,
    locked: Locked,
    removed: &HashSet<DocRef>,
    write: impl FnOnce(&IndexDir, Plan) -> Result<Written>,
) -> Result<Pending> {
    let mut w = locked.next()?;
    let plan = w.plan(tombstones(index, removed))?;
    let segment = write(w.dir(), plan)?;
    w.add(segment)?;
    let picks = auto_pick(index);
    if !picks.is_empty() {
        merge_into(&mut w, index, &picks, removed)?;
    }
    w.finish()
}

/// What preparing an update of the index in `dir`, opened at `generation`, came to, for the
/// report (`scan`'s and `stage report`'s): the generation written, or the failure, said once on
/// stderr (even with `-q`) and ending the run in status 2 (the report is still printed, and the
/// index is as it was); not an error of an input, as every input was read. `errors` are the new
/// documents left out.
pub fn reported(
    cfg: &Config,
    dir: &std::path::Path,
    generation: u64,
    prepared: Result<Prepared>,
    errors: Vec<InputError>,
) -> (Option<Updated>, Option<Pending>) {
    let (written, pending, failed) = match prepared {
        Ok(Prepared::Pending(p)) => (Some(p.generation), Some(p), false),
        Ok(Prepared::Unchanged) => {
            cfg.messages.tell(&format!(
                "index {}: nothing new, changed or removed; nothing written (generation \
                 {generation})",
                display_path(dir),
            ));
            (None, None, false)
        }
        Err(e) => {
            crate::messages::error(&format!(
                "index not updated: cannot update index {}: {e:#}",
                display_path(dir)
            ));
            (None, None, true)
        }
    };
    let updated = Updated {
        written,
        errors,
        failed,
    };
    (Some(updated), pending)
}
