//! `dupfind::fuzzing::parquet`: what it reads and the invariants it checks are documented there.
//!
//! dupfind catches a panic inside the parquet and arrow crates and reports the file as damaged
//! (`guarded` in src/input/parquet/mod.rs), but libfuzzer-sys's panic hook aborts on every
//! panic, caught or not. This target's hook only remembers the message; a panic that escapes
//! dupfind is printed and aborts here.
#![no_main]

use std::panic::{catch_unwind, set_hook};
use std::sync::Mutex;

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

libfuzzer_sys::fuzz_target!(
    init: {
        set_hook(Box::new(|info| {
            if let Ok(mut last) = LAST_PANIC.lock() {
                *last = Some(info.to_string());
            }
        }));
    },
    |data: &[u8]| {
        if catch_unwind(|| dupfind::fuzzing::parquet(data)).is_err() {
            if let Ok(last) = LAST_PANIC.lock() {
                eprintln!("{}", last.as_deref().unwrap_or("a panic"));
            }
            std::process::abort();
        }
    }
);
