//! Ctrl-C: end within a second with status 130, leaving stdout empty or complete.
//!
//! The report is written only after the scan, so an interrupt before writing exits at once from
//! the signal handler's thread (nothing has reached stdout). Once writing has begun, the
//! interrupt is only noted, and the run ends with 130 after the last byte, so a reader never
//! sees half a JSON document. An `-o` file is replaced only when no interrupt has come by then,
//! and from that point on ([`settle`]) an interrupt no longer changes the run's outcome: a
//! status of 130 always means the file was left as it was. `remove`, `move` and `link` begin their output when they begin to
//! act: from there an interrupt is noted and they stop between two files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use crate::exit::ExitCode;

const SCANNING: u8 = 0;
const WRITING: u8 = 1;
const INTERRUPTED: u8 = 2;
/// The report is being put in place: the run ends as if no interrupt came.
const SETTLED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(SCANNING);

/// Installs the Ctrl-C handler. Failure to install leaves the default behaviour (the process is
/// killed by the signal), which also writes nothing partial.
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if STATE
            .compare_exchange(SCANNING, INTERRUPTED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            crate::messages::clear_progress_line();
            let _committing = COMMITTING.lock();
            remove_held(|_| true);
            // An unfinished multipart upload would keep its parts (billed, out of sight).
            crate::store::abort_under_way();
            std::process::exit(ExitCode::Interrupted.code());
        }
        // Once settled, the `-o` file is (being) replaced: 130 would say it was left as it was.
        let _ = STATE.compare_exchange(WRITING, INTERRUPTED, Ordering::SeqCst, Ordering::SeqCst);
    });
}

/// The temporary files being written (a dataset's part, a work file, `-o`'s report), and a
/// run's claim on its dataset's directory (`crate::dataset::claim::HeldClaim`), which an
/// interrupt that ends the run at once removes: the exit runs no destructor, and a
/// `.dupfind-*.tmp` beside the dataset's parts would stay for good.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary file's name held for [`remove_held`] while the value lives.
pub(crate) struct HeldTemp(PathBuf);

impl HeldTemp {
    /// Creates a temporary file with `create` and holds its name (`path` of it), the handler
    /// kept out meanwhile by the lock it takes to remove the held files: a Ctrl-C between the
    /// file's creation and its holding left it behind.
    pub(crate) fn create<T, E>(
        create: impl FnOnce() -> Result<T, E>,
        path: impl Fn(&T) -> &Path,
    ) -> Result<(T, HeldTemp), E> {
        let mut held = HELD.lock();
        let made = create()?;
        let name = path(&made).to_path_buf();
        if let Ok(held) = held.as_mut() {
            held.push(name.clone());
        }
        Ok((made, HeldTemp(name)))
    }
}

/// Taken by the handler before it removes the held files, and by [`HeldTemp::commit`] while it
/// puts a file in place and holds it: an interrupt never falls between the two.
static COMMITTING: Mutex<()> = Mutex::new(());

impl HeldTemp {
    /// Runs `commit`, which puts a file in place at `path` where none is (false when one was),
    /// and holds `path` if it did.
    pub(crate) fn commit(
        path: &Path,
        commit: impl FnOnce() -> anyhow::Result<bool>,
    ) -> anyhow::Result<Option<HeldTemp>> {
        let _committing = COMMITTING.lock();
        if !commit()? {
            return Ok(None);
        }
        if let Ok(mut held) = HELD.lock() {
            held.push(path.to_path_buf());
        }
        Ok(Some(HeldTemp(path.to_path_buf())))
    }
}

impl HeldTemp {
    /// Runs `last` (`stage init`'s write of `run.json`, after which its claim on the dataset's
    /// directory is the run's) and, if it succeeds, lets go of the path for good, the handler
    /// kept out meanwhile: an interrupt before it removes the path and `last` never runs, one
    /// after leaves the path.
    pub(crate) fn keep(&self, last: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
        let _committing = COMMITTING.lock();
        last()?;
        self.unhold();
        Ok(())
    }

    fn unhold(&self) {
        if let Ok(mut held) = HELD.lock() {
            if let Some(i) = held.iter().position(|p| *p == self.0) {
                held.swap_remove(i);
            }
        }
    }
}

impl Drop for HeldTemp {
    fn drop(&mut self) {
        self.unhold();
    }
}

/// Removes the temporary files held now that `which` picks (one renamed into place since is
/// gone already).
fn remove_held(which: impl Fn(&Path) -> bool) {
    if let Ok(held) = HELD.lock() {
        for path in held.iter().filter(|p| which(p)) {
            // A URL: a scan's claim on its dataset's prefix.
            let _ = match crate::store::is_url(path) {
                true => crate::store::delete(&path.to_string_lossy()).map_err(drop),
                false => std::fs::remove_file(path).map_err(drop),
            };
        }
    }
}

/// Marks the start of output; false when an interrupt came first.
pub fn begin_output() -> bool {
    STATE
        .compare_exchange(SCANNING, WRITING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Marks the point of no return of an output written whole before it is put in place (`-o`'s
/// report): false when an interrupt came first, and then it must be left unwritten; true, and
/// a later interrupt is ignored.
pub fn settle() -> bool {
    STATE
        .compare_exchange(WRITING, SETTLED, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// The point of no return of a command whose output follows a commit (`index compact`, `prune`
/// and `upgrade`): true, and from here an interrupt is ignored, so that a command that has
/// committed finishes (removing the files it replaced) and says what it did, as `scan --update`
/// does once its report is out. False when an interrupt came first (the handler is ending the
/// run with 130, or was about to): nothing must be committed then.
pub fn settle_commit() -> bool {
    begin_output() && settle()
}

/// True when an interrupt arrived while the output was being written.
pub fn interrupted() -> bool {
    STATE.load(Ordering::SeqCst) == INTERRUPTED
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_being_written_is_removed_by_an_interrupt_and_a_committed_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("part-00000.jsonl");
        let pending = crate::atomic::Pending::new(&part).unwrap();
        let done = crate::atomic::Pending::new(&dir.path().join("done.json")).unwrap();
        done.commit().unwrap();
        let names = || {
            let mut n: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names().len(), 2, "{:?}", names());
        // Only this test's: the other tests' files are being written beside it.
        remove_held(|p| p.starts_with(dir.path()));
        assert_eq!(names(), ["done.json"]);
        drop(pending);
    }
}
