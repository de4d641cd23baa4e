//! Ctrl-C: end within a second with status 130, leaving stdout empty or complete.
//!
//! The report is written only after the scan, so an interrupt before writing exits at once from
//! the signal handler's thread (nothing has reached stdout). Once writing has begun, the
//! interrupt is only noted, and the run ends with 130 after the last byte, so a reader never
//! sees half a JSON document. `remove`, `move` and `link` begin their output when they begin to
//! act: from there an interrupt is noted and they stop between two files.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::exit::ExitCode;

const SCANNING: u8 = 0;
const WRITING: u8 = 1;
const INTERRUPTED: u8 = 2;

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
            std::process::exit(ExitCode::Interrupted.code());
        }
        STATE.store(INTERRUPTED, Ordering::SeqCst);
    });
}

/// Marks the start of output; false when an interrupt came first.
pub fn begin_output() -> bool {
    STATE
        .compare_exchange(SCANNING, WRITING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// True when an interrupt arrived while the output was being written.
pub fn interrupted() -> bool {
    STATE.load(Ordering::SeqCst) == INTERRUPTED
}
