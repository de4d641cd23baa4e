//! The index reader: format 1's `index.dfx` (`index::store`), opened from a file holding the
//! input. Format 2 (manifest and segments) has a target of its own, `index_segment`.

use std::cell::RefCell;

use xxhash_rust::xxh3::xxh3_64;

use crate::index::store::Index;

/// The header's length and where its fields lie (`index/store/format.rs`).
const HEADER: usize = 80;

thread_local! {
    /// The index directory the inputs are written into, one per thread, made once.
    static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

/// Opens the rest of `data` as an `index.dfx` and reads every record's set. When the first
/// byte is odd the header and section checksums are made right first (the sets' own are left),
/// so the fuzzer reaches the decoding behind them, as a forger who re-checksums a file would.
/// Panics only where dupfind would: opening and reading fail with an error, never a panic, and
/// an index that opens holds one set per record.
pub fn index_v1(data: &[u8]) {
    let (pick, file) = super::choice(data);
    let mut file = file.to_vec();
    if pick % 2 == 1 {
        reseal(&mut file);
    }
    DIR.with(|dir| {
        let mut dir = dir.borrow_mut();
        if dir.is_none() {
            *dir = tempfile::tempdir().ok();
        }
        let Some(dir) = dir.as_ref() else {
            return;
        };
        if std::fs::write(dir.path().join("index.dfx"), &file).is_err() {
            return;
        }
        let Ok(index) = Index::open(dir.path()) else {
            return;
        };
        let _ = (index.params(), index.generation());
        let count = index.entries().len();
        let records = index.records().count();
        assert_eq!(records, count, "records and entries differ");
        for i in 0..count {
            let _ = index.read_set(i);
        }
        assert!(index.read_set(count).is_err(), "a set past the last record");
    });
}

/// Writes the checksums the header holds: of its first 12 bytes, of the params and records
/// sections where the declared lengths put them inside the file, and of the header.
fn reseal(file: &mut [u8]) {
    if file.len() < HEADER {
        return;
    }
    let le = |file: &[u8], at: usize| {
        let mut word = [0; 8];
        word.copy_from_slice(&file[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let prefix = xxh3_64(&file[..12]) as u32;
    file[12..16].copy_from_slice(&prefix.to_le_bytes());
    let (params, sets, records) = (le(file, 32), le(file, 40), le(file, 48));
    let params_at = HEADER as u64;
    if let Some(sum) = section_sum(file, params_at, params) {
        file[56..64].copy_from_slice(&sum.to_le_bytes());
    }
    let records_at = params_at
        .checked_add(params)
        .and_then(|n| n.checked_add(sets));
    if let Some(sum) = records_at.and_then(|at| section_sum(file, at, records)) {
        file[64..72].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = xxh3_64(&file[..72]);
    file[72..80].copy_from_slice(&sum.to_le_bytes());
}

/// The checksum of `file[at..at + len]`, if it lies inside the file.
fn section_sum(file: &[u8], at: u64, len: u64) -> Option<u64> {
    let start = usize::try_from(at).ok()?;
    let end = usize::try_from(at.checked_add(len)?).ok()?;
    file.get(start..end).map(xxh3_64)
}
