//! Readahead: when the files being read are not in the page cache, ask the kernel for the next
//! few before they are needed, so that one thread does not wait for the disk a file at a time.
//!
//! A worker reads its files in order. As long as they come from the page cache this module does
//! nothing but count. Once a read had to wait ([`crate::input::read::Residency::NotCached`]), the
//! worker opens the next [`DEPTH`] files of its run and advises the kernel that they will be
//! needed (`posix_fadvise(WILLNEED)`, which starts their reads and returns at once), and keeps
//! [`DEPTH`] files ahead for the next [`SPELL`] files. A cold spell that goes on shows itself
//! again after that with one more wait; a warm page cache costs one extra open per file for
//! at most [`SPELL`] files after a miss. Only Linux advises; elsewhere this does nothing.
//!
//! On a cold 100,000-file corpus the disk's latency, not its bandwidth, was what a single thread
//! waited for: it kept one read in flight. The advice changes no result: it only decides when
//! pages arrive.
//!
//! An object of a store is fetched ahead instead (`crate::store::prefetch`), on every system,
//! [`OBJECTS`] ahead, from the first on: its read always waits. The bytes fetched ahead are
//! reserved from the memory budget ([`fetch_ahead`]).

use std::path::Path;

/// How many files ahead of the one being read are advised: with one file processed in about
/// 20 µs and a random 4 KiB read taking 100–500 µs, this keeps the disk busy with several reads.
pub const DEPTH: usize = 32;

/// How many objects of a store ahead of the one being read are fetched: a GET takes
/// milliseconds (one to two on loopback, tens on a cloud's store) where a document is sketched
/// in about 20 µs, so it takes many in flight for a thread not to wait.
pub const OBJECTS: usize = 64;

/// How many files a cold spell lasts after its last observed wait.
pub const SPELL: usize = 256;

/// One worker's readahead state over a run of files indexed from 0.
#[derive(Debug, Default)]
pub struct Readahead {
    /// The run (an identity its caller chooses) and the index this worker is expected to read
    /// next in it; anything else means rayon handed it a new range, and what was advised before
    /// does not carry over.
    run: usize,
    next: usize,
    /// Files before this index have been advised already.
    advised: usize,
    /// Files left in the current cold spell.
    spell: usize,
    /// Objects this worker asked a store for, by (run, index), in the order asked: given up
    /// once the worker is past them or in another run, taken or not (`crate::store::forget`).
    /// Those past the end of its range another worker takes (or, at the end of the run, the
    /// end of the store's allowance drops).
    asked: std::collections::VecDeque<(usize, usize, String)>,
}

impl Readahead {
    /// Called before file `i` of run `run` (`len` files) is read; `waited` says whether the
    /// previous read of this worker had to wait for the disk, `object` whether file `i` is an
    /// object of a store. Advises what the spell wants advised: the paths `path_of` gives (None
    /// for an item that will not be read from a file).
    pub fn before<'p>(
        &mut self,
        (run, i, len): (usize, usize, usize),
        waited: bool,
        object: bool,
        path_of: impl Fn(usize) -> Option<&'p Path>,
    ) {
        if run != self.run || i != self.next {
            self.run = run;
            self.advised = 0;
            self.spell = 0;
        }
        self.next = i + 1;
        // An object asked for that this worker is past was read (by it or another), or never
        // will be: held on, it kept its place in the store's bound.
        while let Some((r, j, _)) = self.asked.front() {
            if *r == run && *j >= i {
                break;
            }
            if let Some((_, _, url)) = self.asked.pop_front() {
                crate::store::forget(&url);
            }
        }
        // An object always waits for its store: the spell starts with the first, not after it.
        if waited || object {
            self.spell = SPELL;
        }
        if self.spell == 0 {
            return;
        }
        self.spell -= 1;
        let depth = if object { OBJECTS } else { DEPTH };
        let end = (i + 1 + depth).min(len);
        // File i itself is read next anyway: advising it would not save the wait.
        let mut j = self.advised.max(i + 1);
        while j < end {
            if let Some(path) = path_of(j) {
                if crate::store::is_url(path) {
                    self.fetch(run, j, path);
                } else {
                    advise(path);
                }
            }
            j += 1;
        }
        self.advised = self.advised.max(end);
    }

    /// Starts fetching the object at `path` ahead of its read.
    fn fetch(&mut self, run: usize, j: usize, path: &Path) {
        if let Some(url) = path.to_str() {
            if crate::store::prefetch(url) {
                self.asked.push_back((run, j, url.to_string()));
            }
        }
    }
}

/// Which items of a run have begun to be read, when the run holds objects of a store: a worker
/// fetching ahead into the range another worker reads (rayon splits a run between them) skips
/// what that one read already. A fetch it made anyway would never be taken: a wasted request,
/// and a place in the store's bound held until the run ends.
#[derive(Debug, Default)]
pub struct Begun(Vec<std::sync::atomic::AtomicBool>);

impl Begun {
    /// For a run of `len` items; empty (nothing is marked) unless `objects`.
    pub fn new(len: usize, objects: bool) -> Begun {
        Begun(match objects {
            true => (0..len).map(|_| Default::default()).collect(),
            false => Vec::new(),
        })
    }

    /// Item `i` is being read.
    pub fn mark(&self, i: usize) {
        if let Some(b) = self.0.get(i) {
            b.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// True when item `j` has begun to be read.
    pub fn is(&self, j: usize) -> bool {
        self.0
            .get(j)
            .is_some_and(|b| b.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Room in `budget` for the objects fetched ahead of their read while the returned pair lives,
/// when `objects` (some input is in a store): a sixteenth of the budget, at most
/// [`crate::store::PREFETCH_MOST`]. Without it (or without room) nothing is fetched ahead.
pub fn fetch_ahead(
    budget: &crate::budget::Budget,
    objects: bool,
) -> Option<(crate::budget::Grant<'_>, crate::store::Allowance)> {
    if !objects {
        return None;
    }
    let bytes = (budget.limit() / 16).min(crate::store::PREFETCH_MOST);
    let grant = budget.reserve(bytes).ok()?;
    Some((grant, crate::store::Allowance::new(bytes)))
}

/// Starts reading a file into the page cache without waiting for it. Failures are ignored:
/// the file's own read reports them.
#[cfg(target_os = "linux")]
fn advise(path: &Path) {
    // Opened as the reader opens it: a FIFO must not hang the scan here either.
    if let Ok(file) = crate::input::read::open_nonblocking(path) {
        // `None`: to the end of the file, whatever its size now.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::WillNeed);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records which files a sequence of calls advises.
    fn advised(calls: &[(usize, bool)], len: usize) -> Vec<usize> {
        let names: Vec<std::path::PathBuf> = (0..len).map(|i| i.to_string().into()).collect();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut r = Readahead::default();
        for &(i, waited) in calls {
            r.before((1, i, len), waited, false, |j| {
                seen.borrow_mut().push(j);
                Some(names[j].as_path())
            });
        }
        seen.into_inner()
    }

    #[test]
    fn advises_nothing_while_reads_are_cached() {
        let calls: Vec<(usize, bool)> = (0..100).map(|i| (i, false)).collect();
        assert!(advised(&calls, 100).is_empty());
    }

    #[test]
    fn a_wait_advises_the_next_files_once_each_then_keeps_ahead() {
        // File 2 waited (reported before file 3): files 4..=35 are advised, then one more per file.
        let calls = [
            (0, false),
            (1, false),
            (2, false),
            (3, true),
            (4, false),
            (5, false),
        ];
        let expected: Vec<usize> = (4..=37).collect();
        assert_eq!(advised(&calls, 1000), expected);
    }

    #[test]
    fn a_spell_ends_and_never_passes_the_run() {
        let mut calls = vec![(0, true)];
        calls.extend((1..SPELL + 50).map(|i| (i, false)));
        let got = advised(&calls, 100_000);
        // The spell covers SPELL calls, each keeping DEPTH files ahead of its own.
        assert_eq!(got, (1..SPELL + DEPTH).collect::<Vec<_>>());
        assert_eq!(
            advised(&[(90, true), (91, false)], 100),
            (91..100).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_new_range_starts_afresh() {
        // Rayon hands the worker index 500 after 10: nothing advised before carries over.
        let calls = [(10, true), (500, false), (501, false)];
        let got = advised(&calls, 1000);
        assert_eq!(got, (11..43).collect::<Vec<_>>());
        // And backwards: files advised in the first range are advised again in the second.
        let got = advised(&[(50, true), (10, true)], 1000);
        let expected: Vec<usize> = (51..83).chain(11..43).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn objects_are_fetched_from_the_first_and_further_ahead() {
        let names: Vec<std::path::PathBuf> =
            (0..1000).map(|i| format!("s3://b/{i}").into()).collect();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut r = Readahead::default();
        for i in 0..3 {
            r.before((1, i, 1000), false, true, |j| {
                seen.borrow_mut().push(j);
                Some(names[j].as_path())
            });
        }
        // No wait needed first (an object's read always waits), and OBJECTS ahead, not DEPTH.
        assert_eq!(seen.into_inner(), (1..=OBJECTS + 2).collect::<Vec<_>>());
    }

    #[test]
    fn another_run_starts_afresh_at_the_same_index() {
        let names: Vec<std::path::PathBuf> = (0..100).map(|i| i.to_string().into()).collect();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut r = Readahead::default();
        r.before((1, 5, 100), true, false, |_| None);
        r.before((2, 6, 100), false, false, |j| {
            seen.borrow_mut().push(j);
            Some(names[j].as_path())
        });
        let seen = seen.into_inner();
        assert!(seen.is_empty(), "the spell of run 1 carried over: {seen:?}");
    }
}
