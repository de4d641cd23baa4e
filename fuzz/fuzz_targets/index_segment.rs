//! `dupfind::fuzzing::index_segment`: what it reads and the invariants it checks are documented
//! there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dupfind::fuzzing::index_segment(data));
