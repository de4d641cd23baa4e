//! `dupfind::fuzzing::staged_work`: what it reads and the invariants it checks are documented
//! there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dupfind::fuzzing::staged_work(data));
