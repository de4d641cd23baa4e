//! What glibc's allocator keeps of the memory dupfind frees, fitted to the budget.
//!
//! glibc gives a thread an arena of its own (up to eight per core) and keeps the memory freed in
//! it for reuse: up to `M_TOP_PAD` free at the top of each arena's heap, and the buffers carved
//! from that top and freed below memory still in use. The budget never sees any of it: with the
//! 64 MiB pad the binary set for every arena, a scan under `--max-memory 128M` peaked at
//! 224 MiB at `-j4`, 349 at `-j8` and 487 at `-j16` (issue 25), each thread keeping the buffers of
//! the largest documents it had read. Keeping them is also what makes large documents fast: a
//! buffer reused from the arena costs nothing, one mapped afresh costs a page fault per 4 KiB
//! (about 1.7 µs on the development VM). So the binary keeps much where the budget can hold it,
//! and little where it cannot:
//!
//! - `M_ARENA_MAX`: one arena per core and one for the main thread. Threads beyond the cores run
//!   in turns, so more arenas only multiply what is kept (glibc allows eight per core).
//! - `M_MMAP_THRESHOLD` pinned, at 128 KiB where the arenas keep little and at [`MAP_ABOVE_MUCH`]
//!   (4 MiB) where they keep much: a larger buffer that an arena's free top cannot hold is mapped
//!   for itself and unmapped when freed. glibc would otherwise raise the threshold to the largest
//!   buffer freed (up to 32 MiB), and its trim threshold to twice that. Under the large pad, the
//!   buffers of a few hundred KiB to a few MiB that a Parquet dump's pages pass through (each
//!   page's compressed bytes read, its decoded values, a written page's encoded and compressed
//!   bytes: about 1 MiB each) come from the arena's free top and go back to it, rather than
//!   being mapped and faulted in afresh each time: on the 100k benchmark dump, a scan writing the
//!   deduplicated dataset as Parquet took 480,000–580,000 page faults and 1.2–1.4 s of system
//!   time, 85,000–100,000 and 0.55 s with this; the scan alone 80,000–400,000 and 0.4–0.95 s,
//!   55,000 and 0.33 s (docs/performance.md), for 30 MB more peak RSS, within the pad the budget
//!   holds. A larger document is still mapped for itself: an arena's heap is at most 64 MiB, the
//!   size of the pad. `benches/memory.sh` is unchanged: its budgets keep little, and its default
//!   budget rows peak as before (window, dump, dictbomb, ignore: within 3 MiB).
//! - `M_TOP_PAD` [`KEEP_MUCH`] per arena when all arenas' worth is at most a sixteenth of the
//!   budget (3 GiB or more on two cores: the default budget of any machine with a few GiB per
//!   core), and then held in the budget; [`KEEP_LITTLE`] otherwise, and a reservation that has
//!   to wait first gives back the free pages inside the arenas (`malloc_trim`). The pad is set
//!   at start from the default budget, since an arena's first heap is made as large as the pad
//!   then in force, and lowered when a smaller budget is made.
//!
//! Measured on the development VM (2 cores, glibc 2.36) with `benches/memory.sh --cases
//! threads` (64 distinct 1.5 MB texts, `--max-memory 128M`), other settings through
//! `GLIBC_TUNABLES` or `LD_PRELOAD` on the same build; peak RSS in MiB at -j1/-j4/-j8/-j16, and
//! CPU seconds at -j1:
//!
//! | what keeps freed memory | peak RSS | CPU |
//! |---|---|---|
//! | glibc, 64 MiB pad in up to 16 arenas (before) | 46 / 106 / 191 / 306 | 0.12 |
//! | glibc's defaults (thresholds that follow the buffers freed) | 46 / 99 / 150 / 268 | 0.16 |
//! | glibc, one arena (`M_ARENA_MAX` 1), 64 MiB pad | 51 / 89 / 127 / 128 | 0.12 |
//! | glibc, 1 MiB pad in up to 16 arenas | 40 / 67 / 87 / 102 | 0.39 |
//! | mimalloc 2.0.9 | 47 / 105 / 174 / 273 | 0.15 |
//! | jemalloc 5.3 | 47 / 113 / 186 / 229 | 0.14 |
//! | jemalloc 5.3, freed pages purged at once | 41 / 71 / 86 / 101 | 0.45 |
//! | this: three arenas, 1 MiB pad, free pages given back on a wait | 44 / 96 / 102 / 117 | 0.35 |
//!
//! The allocators that keep freed memory per thread (mimalloc, jemalloc's defaults) grow with
//! the threads like glibc; those that give it back at once pay the same page faults, so another
//! allocator (and its C to build) buys nothing here. One arena would bound the peak too, but
//! would serialise every worker on its lock on a machine with many cores. The small pad's
//! price, page faults on large documents (3x the CPU time on these texts, 1.5x with exact
//! verification of 2 MB near-copies), is paid only under budgets too small to hold the large
//! pad: under `--max-memory 8G` the same texts take 0.12 s at -j1 as before, and the
//! benchmark corpus, under the default budget, runs as fast as before (docs/performance.md).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What an arena keeps free when the budget can hold it: glibc's largest heap, so that a
/// worker's buffers are never mapped afresh (the pad the binary has always set).
pub const KEEP_MUCH: u64 = 64 << 20;

/// What an arena keeps free under a smaller budget.
pub const KEEP_LITTLE: u64 = 1 << 20;

/// Buffers above this size are mapped for themselves when an arena's free top cannot hold them,
/// while the arenas keep little.
const MAP_ABOVE: u64 = 128 << 10;

/// ... and while they keep much: above a Parquet page's buffers (1 MiB by default, twice that
/// for an encoder's doubled vector), a sixteenth of [`KEEP_MUCH`].
const MAP_ABOVE_MUCH: u64 = 4 << 20;

/// The arenas the binary allows: 0 when the allocator is not the binary's to tune (a test, or a
/// library caller).
static ARENAS: AtomicU64 = AtomicU64::new(0);

/// Whether the arenas keep little, so that a reservation that waits gives back their free
/// pages.
static LITTLE: AtomicBool = AtomicBool::new(false);

/// Caps the arenas and sets the pad (and the mapping threshold with it) for the default budget.
/// The binary calls it first thing, before any other thread exists.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = cores.saturating_add(1);
        let arenas_c = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only changes malloc's tuning parameters, under malloc's own lock.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas_c);
        }
        ARENAS.store(arenas as u64, Ordering::Relaxed);
        set_pad(keep(super::default_limit(), arenas as u64).0);
    }
}

/// Fits what the arenas keep to a budget of `limit` (one budget per process), and returns what
/// the budget must hold for it: nothing when the allocator is not the binary's.
pub fn fit(limit: u64) -> u64 {
    let arenas = ARENAS.load(Ordering::Relaxed);
    if arenas == 0 {
        return 0;
    }
    let (pad, held) = keep(limit, arenas);
    set_pad(pad);
    LITTLE.store(pad == KEEP_LITTLE, Ordering::Relaxed);
    held
}

/// Gives back the whole free pages inside every arena when they keep little: the holes that
/// buffers freed below memory in use leave, which no pad trims. Called by a reservation that
/// had to wait, so at most once per document read while the budget is full.
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if LITTLE.load(Ordering::Relaxed) {
        // SAFETY: malloc_trim only returns free pages to the system, taking each arena's lock
        // in turn.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// The pad for `arenas` arenas under a budget of `limit`, and what the budget holds for it: the
/// large pad when all arenas' worth is at most a sixteenth of the budget, the small one (left
/// to the fixed overhead) otherwise.
fn keep(limit: u64, arenas: u64) -> (u64, u64) {
    let much = arenas.saturating_mul(KEEP_MUCH);
    if much.saturating_mul(16) <= limit {
        (KEEP_MUCH, much)
    } else {
        (KEEP_LITTLE, 0)
    }
}

/// Sets the pad, and the mapping threshold that goes with it.
fn set_pad(pad: u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let map_above = if pad == KEEP_MUCH {
            MAP_ABOVE_MUCH
        } else {
            MAP_ABOVE
        };
        // SAFETY: as in `tune_allocator`. An arena reads the pad when it makes a heap or trims
        // its top, so a change applies from the next one on; the threshold, from the next
        // buffer.
        unsafe {
            libc::mallopt(libc::M_TOP_PAD, pad as libc::c_int);
            libc::mallopt(libc::M_MMAP_THRESHOLD, map_above as libc::c_int);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = pad;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arenas_keep_much_only_where_it_is_a_sixteenth_of_the_budget_and_held_in_it() {
        // Two cores: three arenas of 64 MiB are 192 MiB, a sixteenth of 3 GiB.
        assert_eq!(keep(3 << 30, 3), (KEEP_MUCH, 3 * KEEP_MUCH));
        assert_eq!(keep((3 << 30) - 1, 3), (KEEP_LITTLE, 0));
        assert_eq!(keep(128 << 20, 3), (KEEP_LITTLE, 0));
        // The default budget of a 64-core machine with 256 GiB: 65 arenas keep 4 GiB of 192.
        assert_eq!(keep(192 << 30, 65), (KEEP_MUCH, 65 * KEEP_MUCH));
    }

    #[test]
    fn a_budget_holds_nothing_for_an_allocator_that_is_not_the_binarys() {
        assert_eq!(fit(64 << 30), 0);
        assert_eq!(super::super::Budget::new(64 << 30).used(), 0);
    }
}
