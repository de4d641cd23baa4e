//! The first pass's workers: one per thread, leased to each rayon job and given back, so their
//! buffers and distinct-shingle sketches survive the whole pass.

use std::sync::Mutex;

use rayon::prelude::*;

use crate::sketch::kmv::Kmv;

use super::worker::{DocWorker, Engine};

/// One worker per thread, kept for the whole ingest. rayon calls `map_init`'s init once per
/// work split, dozens of times per run at `-j2`, and a fresh worker starts with empty buffers
/// and an empty distinct-shingle sketch to fill again (in a profile of a 10,000-file run those
/// refills cost about a tenth of the CPU time at `-j2`).
pub(super) struct Workers<'a> {
    engine: &'a Engine,
    distinct: &'a Mutex<Kmv>,
    slots: Vec<Mutex<Option<Held<'a>>>>,
}

pub(super) type Held<'a> = (DocWorker<'a>, Scratch);

impl<'a> Workers<'a> {
    pub(super) fn new(engine: &'a Engine, distinct: &'a Mutex<Kmv>) -> Self {
        let slots = (0..rayon::current_num_threads().max(1))
            .map(|_| Mutex::new(None))
            .collect();
        Workers {
            engine,
            distinct,
            slots,
        }
    }

    /// The calling thread's worker, or a new one if it has none at hand.
    pub(super) fn lease(&self) -> Lease<'_, 'a> {
        let slot = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let held = self.slots[slot].lock().ok().and_then(|mut s| s.take());
        Lease {
            workers: self,
            slot,
            held,
        }
    }
}

/// A worker on loan from [`Workers`], given back when the work split ends. Should its slot be
/// full (it is not, as a thread runs one split at a time), the worker is dropped instead, which
/// merges its sketch: the result is the same either way.
pub(super) struct Lease<'w, 'a> {
    workers: &'w Workers<'a>,
    slot: usize,
    held: Option<Held<'a>>,
}

impl<'a> Lease<'_, 'a> {
    pub(super) fn get(&mut self) -> (&mut DocWorker<'a>, &mut Scratch) {
        let w = self.workers;
        let held = self.held.get_or_insert_with(|| {
            (
                DocWorker::counting(w.engine, w.distinct),
                Scratch::default(),
            )
        });
        (&mut held.0, &mut held.1)
    }
}

impl Drop for Lease<'_, '_> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            if let Ok(mut slot) = self.workers.slots[self.slot].lock() {
                if slot.is_none() {
                    *slot = Some(held);
                }
            }
        }
    }
}

/// Buffers for bottom-k sketching, one set per rayon job.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) sketch: Vec<u64>,
    pub(super) scratch: Vec<u64>,
}

/// Where a batch's bottom-k sketches go.
pub(super) enum BottomSlots<'s> {
    /// The tail of the kept sketches.
    Kept(&'s mut [u64]),
    /// Bottom-k is off: one unused value per document.
    Unused(Vec<u64>),
}

impl BottomSlots<'_> {
    pub(super) fn par_chunks_mut(&mut self, len: usize) -> rayon::slice::ChunksMut<'_, u64> {
        match self {
            BottomSlots::Kept(s) => s.par_chunks_mut(len),
            BottomSlots::Unused(v) => v.par_chunks_mut(len),
        }
    }
}
