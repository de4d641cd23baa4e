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

use std::path::Path;

/// How many files ahead of the one being read are advised: with one file processed in about
/// 20 µs and a random 4 KiB read taking 100–500 µs, this keeps the disk busy with several reads.
pub const DEPTH: usize = 32;

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
}

impl Readahead {
    /// Called before file `i` of run `run` (`len` files) is read; `waited` says whether the
    /// previous read of this worker had to wait for the disk. Advises what the spell wants
    /// advised: the paths `path_of` gives (None for an item that will not be read from a file).
    pub fn before<'p>(
        &mut self,
        (run, i, len): (usize, usize, usize),
        waited: bool,
        path_of: impl Fn(usize) -> Option<&'p Path>,
    ) {
        if run != self.run || i != self.next {
            self.run = run;
            self.advised = 0;
            self.spell = 0;
        }
        self.next = i + 1;
        if waited {
            self.spell = SPELL;
        }
        if self.spell == 0 {
            return;
        }
        self.spell -= 1;
        let end = (i + 1 + DEPTH).min(len);
        // File i itself is read next anyway: advising it would not save the wait.
        let mut j = self.advised.max(i + 1);
        while j < end {
            if let Some(path) = path_of(j) {
                advise(path);
            }
            j += 1;
        }
        self.advised = self.advised.max(end);
    }
}

/// Starts reading a file into the page cache without waiting for it. Failures are ignored:
/// the file's own read reports them.
#[cfg(target_os = "linux")]
fn advise(path: &Path) {
    if crate::store::is_url(path) {
        return prefetch(path);
    }
    // Opened as the reader opens it: a FIFO must not hang the scan here either.
    if let Ok(file) = crate::input::read::open_nonblocking(path) {
        // `None`: to the end of the file, whatever its size now.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::WillNeed);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(path: &Path) {
    if crate::store::is_url(path) {
        prefetch(path);
    }
}

/// An object's GET started ahead of its read (`crate::store::prefetch`).
fn prefetch(path: &Path) {
    if let Some(url) = path.to_str() {
        crate::store::prefetch(url);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records which files a sequence of calls advises.
    fn advised(calls: &[(usize, bool)], len: usize) -> Vec<usize> {
        let names: Vec<std::path::PathBuf> = (0..len).map(|i| i.to_string().into()).collect();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut r = Readahead::default();
        for &(i, waited) in calls {
            r.before((1, i, len), waited, |j| {
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
    fn another_run_starts_afresh_at_the_same_index() {
        let names: Vec<std::path::PathBuf> = (0..100).map(|i| i.to_string().into()).collect();
        let seen = std::cell::RefCell::new(Vec::new());
        let mut r = Readahead::default();
        r.before((1, 5, 100), true, |_| None);
        r.before((2, 6, 100), false, |j| {
            seen.borrow_mut().push(j);
            Some(names[j].as_path())
        });
        let seen = seen.into_inner();
        assert!(seen.is_empty(), "the spell of run 1 carried over: {seen:?}");
    }
}
