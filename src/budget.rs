//! The memory budget (`--max-memory`): what the documents being read and sketched, their
//! decoders and the corpus's signatures may take together.
//!
//! A worker reserves a document's cost before it reads it and gives it back when the document is
//! sketched; a reservation that does not fit beside the others waits for them. A document whose
//! cost alone is over the budget is an input error, never a wait, so a scan cannot stall. The
//! costs are upper bounds measured on this code (`benches/memory.sh` checks the peak against the
//! budget), not exact accounting: the budget bounds what inputs can make dupfind hold, it does
//! not count every allocation.

use std::sync::{Arc, Condvar, Mutex};

use crate::sketch::shingle::ShingleKind;

mod allocator;
pub use allocator::tune_allocator;

/// The budget when `--max-memory` is not given: three quarters of the memory the process may
/// use (physical memory, or the cgroup's limit when lower).
pub fn default_limit() -> u64 {
    let total = [physical_memory(), cgroup_limit()]
        .into_iter()
        .flatten()
        .min()
        // Nothing known (not Linux): a budget large enough never to refuse a document.
        .unwrap_or(64 << 30);
    (total / 4 * 3).max(MIN_LIMIT)
}

/// The least budget: below it the per-document overheads alone would refuse ordinary files.
pub const MIN_LIMIT: u64 = 64 << 20;

/// `MemTotal` of `/proc/meminfo`.
fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of the process's cgroup (v2 `memory.max`, or v1 `memory.limit_in_bytes`),
/// when it sets one.
fn cgroup_limit() -> Option<u64> {
    [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    // "max" (v2) does not parse; v1 says "no limit" with a number near 2^63.
    .filter_map(|s| s.trim().parse::<u64>().ok())
    .find(|&n| n < 1 << 60)
}

/// What sketching a text of `len` bytes holds beyond the text itself, with the fixed part of a
/// document. Word shingles: the lowercased copy (1), token hashes for the most tokens the text
/// can have (one per 2 bytes, 4) and as many shingle hashes (4), the blocks' white-space masks
/// (1/8): 10 bytes per byte. Character shingles: the normalized text (1), a shingle hash per
/// character (8), and for non-ASCII text a character offset per character (at most 8 per 2
/// bytes, doubled as its vector grows): 16. The shingle vectors are reserved exactly
/// (`Shingler::shingle`), so none of them doubles. When the shingles are made a set (`sorted`:
/// verification, k-permutation sketches, containment's sizes), the sort's copy and the set
/// itself take as much again as the shingle hashes, twice: 8 (word) or 16 (char) more.
pub fn text_cost(len: u64, shingle: ShingleKind, sorted: bool) -> u64 {
    let per_byte = match (shingle, sorted) {
        (ShingleKind::Word, false) => 10,
        (ShingleKind::Word, true) => 18,
        (ShingleKind::Char, false) => 16,
        (ShingleKind::Char, true) => 32,
    };
    len.saturating_mul(per_byte).saturating_add(FIXED_COST)
}

/// A document read and sketched: its `raw` bytes, its text when decoding made a copy
/// (`copied`: invalid UTF-8 replaced, or UTF-16), and the sketching of its `text` bytes.
pub fn document_cost(raw: u64, copied: u64, text: u64, shingle: ShingleKind, sorted: bool) -> u64 {
    raw.saturating_add(copied)
        .saturating_add(text_cost(text, shingle, sorted))
}

/// A document's fixed cost: buffers kept between documents ([`RETAINED`] each, a few of them).
const FIXED_COST: u64 = 4 * RETAINED as u64;

/// The capacity a worker's buffers keep after a document: larger ones are given back, so that
/// what a worker holds between documents stays within the fixed cost it is charged.
pub const RETAINED: usize = 1 << 20;

/// The largest window a zstd frame may declare, and the largest dictionary an xz or lzma stream
/// may, under a budget of `limit`: an eighth of it as a power of two, from 1 MiB to 128 MiB
/// (libzstd's own default limit, and what `zstd -d` accepts without `--long`).
pub fn window_limit(limit: u64) -> u64 {
    let eighth = (limit / 8).max(1);
    let pow = 1u64 << (63 - eighth.leading_zeros());
    pow.clamp(1 << 20, 128 << 20)
}

/// What one more document adds to the corpus held until the report: its signature (`lanes`
/// values, and with bottom-k `bottom` more), its entry and result, and its share of the buckets,
/// candidates and clusters built from them (measured: about 1.7 KB per document at K = 128 on
/// the 100k benchmark corpus, of which 512 B is the signature).
pub fn per_document(lanes: usize, bottom: usize) -> u64 {
    (lanes as u64) * 4 + (bottom as u64) * 8 + 1280
}

/// The budget, shared by every worker.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: Mutex<Used>,
    freed: Condvar,
}

/// What is reserved, and of it what is pinned.
#[derive(Debug, Default)]
struct Used {
    all: u64,
    /// Held by a thread that waits for the workers (a dump's reader while its records are
    /// sketched), or for the allocator's arenas for the budget's whole life: a worker can never
    /// have these bytes, so its cost is refused, not waited for, when it is over what the
    /// pinned bytes leave.
    pinned: u64,
    /// Threads waiting for bytes to be given back: a give wakes them only when there are some,
    /// as a wake is a system call (`futex`) even with no one to wake, one per document read.
    waiting: u32,
}

/// A cost over the whole budget: it can never be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// What was asked for.
    pub needed: u64,
    /// The budget.
    pub limit: u64,
}

impl OverBudget {
    /// Why a document is not read in the first pass, and what to change.
    pub fn reason(&self) -> String {
        format!(
            "needs about {} of memory to read and sketch, more than --max-memory ({}) allows; \
             raise --max-memory or lower --max-size",
            human(self.needed),
            human(self.limit)
        )
    }

    /// Why a document is not read again (to verify it, or to describe its cluster), and what
    /// to change: making its shingles a set takes more than sketching them did.
    pub fn reason_again(&self) -> String {
        format!(
            "needs about {} of memory to read again and compare as a set, more than \
             --max-memory ({}) allows; raise --max-memory, or use --verify estimate",
            human(self.needed),
            human(self.limit)
        )
    }
}

impl Budget {
    /// A budget of `limit` bytes. In the binary it also fits what the allocator keeps of freed
    /// memory to `limit`, and holds that for as long as it lives (see [`allocator`]).
    pub fn new(limit: u64) -> Budget {
        let kept = allocator::fit(limit);
        Budget {
            limit,
            used: Mutex::new(Used {
                all: kept,
                pinned: kept,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    /// The budget's size.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reserves `bytes`, waiting while they do not fit beside what others hold; an error when
    /// they are over the whole budget (less what is pinned).
    pub fn reserve(&self, bytes: u64) -> Result<Grant<'_>, OverBudget> {
        self.grant(bytes, false)
    }

    /// Reserves `bytes` for a thread that will wait for workers while holding them (see
    /// [`Used::pinned`]). Pinned reservations must not overlap: one thread pins at a time.
    pub fn pin(&self, bytes: u64) -> Result<Grant<'_>, OverBudget> {
        self.grant(bytes, true)
    }

    /// As [`Budget::pin`], for a holder that cannot borrow the budget (a dump's reader, which
    /// runs on a thread of its own): pinned beside the pin of the thread that waits for the
    /// workers, for a row group larger than that pin covers, and given back when it ends.
    pub fn pin_shared(self: &Arc<Self>, bytes: u64) -> Result<SharedPin, OverBudget> {
        self.take(bytes, true)?;
        Ok(SharedPin {
            budget: Arc::clone(self),
            bytes,
        })
    }

    fn grant(&self, bytes: u64, pinned: bool) -> Result<Grant<'_>, OverBudget> {
        self.take(bytes, pinned)?;
        Ok(Grant {
            budget: self,
            bytes,
            pinned,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self, bytes: u64, pinned: bool) -> Result<(), OverBudget> {
        let mut used = self.lock();
        let room = self.limit - used.pinned.min(self.limit);
        if bytes > room {
            return Err(OverBudget {
                needed: bytes,
                limit: self.limit,
            });
        }
        // Every holder but a pinned one gives its reservation back without waiting for anything
        // (a grant grows only after giving back what it held), and what is pinned is left out of
        // `room`, so this wait ends.
        let mut waited = false;
        while used.all + bytes > self.limit {
            waited = true;
            used.waiting += 1;
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
            used.waiting -= 1;
        }
        used.all += bytes;
        if pinned {
            used.pinned += bytes;
        }
        drop(used);
        if waited {
            // The budget was full: the free memory the arenas hold is all the peak can spare.
            allocator::release();
        }
        Ok(())
    }

    fn give(&self, bytes: u64, pinned: bool) {
        if bytes == 0 {
            return;
        }
        let mut used = self.lock();
        used.all = used.all.saturating_sub(bytes);
        if pinned {
            used.pinned = used.pinned.saturating_sub(bytes);
        }
        if used.waiting > 0 {
            self.freed.notify_all();
        }
    }

    /// Bytes reserved now.
    #[cfg(test)]
    fn used(&self) -> u64 {
        self.lock().all
    }
}

/// A reservation, given back when dropped.
#[derive(Debug)]
pub struct Grant<'a> {
    budget: &'a Budget,
    bytes: u64,
    pinned: bool,
}

impl Grant<'_> {
    /// Changes the reservation to `bytes` (not of a pinned grant). Growing takes the difference
    /// at once when it fits; otherwise the grant gives back all it holds and then waits for the
    /// whole new amount, so that no holder ever waits while holding (which two growing holders
    /// could otherwise do for ever). On an error the grant holds nothing.
    pub fn resize(&mut self, bytes: u64) -> Result<(), OverBudget> {
        debug_assert!(!self.pinned, "a pinned grant is never resized");
        if bytes <= self.bytes {
            self.budget.give(self.bytes - bytes, false);
            self.bytes = bytes;
            return Ok(());
        }
        {
            let mut used = self.budget.lock();
            if used.all - self.bytes + bytes <= self.budget.limit {
                used.all += bytes - self.bytes;
                self.bytes = bytes;
                return Ok(());
            }
        }
        self.budget.give(std::mem::take(&mut self.bytes), false);
        self.budget.take(bytes, false)?;
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for Grant<'_> {
    fn drop(&mut self) {
        self.budget.give(self.bytes, self.pinned);
    }
}

/// A pinned reservation that holds its budget ([`Budget::pin_shared`]), given back when dropped.
#[derive(Debug)]
pub struct SharedPin {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for SharedPin {
    fn drop(&mut self) {
        self.budget.give(self.bytes, true);
    }
}

/// What a Parquet reader may hold under a budget of `limit` ([`crate::input::parquet`]): a
/// quarter of it, as a row group's pages and dictionaries are decoded whole and a writer's
/// defaults put hundreds of megabytes of long documents in one page; never less than a
/// compressed stream's decoder may hold.
pub fn decode_limit(limit: u64) -> u64 {
    (limit / 4).max(window_limit(limit) + (1 << 20))
}

/// Bytes in words, in powers of 1024 as `--max-memory` takes them.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_cost_over_the_budget_is_refused_not_waited_for() {
        let b = Budget::new(100);
        let err = b.reserve(101).unwrap_err();
        assert_eq!(
            err,
            OverBudget {
                needed: 101,
                limit: 100
            }
        );
        assert!(err.reason().contains("--max-memory (100 B)"));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn grants_are_given_back_when_dropped_and_shrunk() {
        let b = Budget::new(100);
        let mut g = b.reserve(60).unwrap();
        assert_eq!(b.used(), 60);
        g.resize(20).unwrap();
        assert_eq!(b.used(), 20);
        g.resize(90).unwrap();
        assert_eq!(b.used(), 90);
        assert!(g.resize(200).is_err());
        assert_eq!(b.used(), 0);
        drop(g);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_reservation_waits_until_another_is_given_back() {
        let b = Arc::new(Budget::new(100));
        let first = b.reserve(70).unwrap();
        let b2 = Arc::clone(&b);
        let waiter = std::thread::spawn(move || {
            let g = b2.reserve(50).unwrap();
            b2.used() - g.bytes
        });
        // The waiter cannot have its 50 beside the 70 held here; once they are given back it
        // holds them alone.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(b.used(), 70);
        drop(first);
        assert_eq!(waiter.join().unwrap(), 0);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn what_is_pinned_is_refused_to_workers_instead_of_waited_for() {
        let b = Budget::new(100);
        let dump = b.pin(60).unwrap();
        // 50 would fit the budget, but never beside the 60 its reader holds while waiting.
        assert_eq!(b.reserve(50).unwrap_err().needed, 50);
        let g = b.reserve(40).unwrap();
        assert_eq!(b.used(), 100);
        drop((dump, g));
        assert_eq!(b.used(), 0);
        assert!(b.reserve(100).is_ok());
    }

    #[test]
    fn two_growing_grants_do_not_wait_for_each_other() {
        let b = Arc::new(Budget::new(100));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let mut g = b.reserve(40).unwrap();
                        g.resize(90).unwrap();
                        g.resize(10).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn the_window_limit_is_an_eighth_as_a_power_of_two_within_libzstds_range() {
        assert_eq!(window_limit(64 << 20), 8 << 20);
        assert_eq!(window_limit(100 << 20), 8 << 20);
        assert_eq!(window_limit(1 << 20), 1 << 20);
        assert_eq!(window_limit(24 << 30), 128 << 20);
    }

    #[test]
    fn the_default_is_three_quarters_of_what_the_machine_has() {
        let limit = default_limit();
        assert!(limit >= MIN_LIMIT);
        if let Some(total) = physical_memory() {
            assert!(limit <= total);
        }
    }

    #[test]
    fn sizes_in_words() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 << 30), "3.0 GiB");
    }
}
