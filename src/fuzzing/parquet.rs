//! Parquet dumps: a file's footer, schema and pages read as a dump's rows are, then read again
//! (chosen rows' texts, and whole rows for `--write-dataset`).

use std::collections::BTreeMap;
use std::io::Write;

use crate::input::jsonl::JsonlOptions;
use crate::input::parquet::{ParquetDump, Row};

/// Text and id columns, picked by the first byte: plain names and a struct's member.
const PATHS: [(&str, &str); 3] = [("text", "id"), ("body.text", "meta.id"), ("t", "t")];

/// Longest text accepted, picked by the first byte too.
const MAX_TEXT: [u64; 3] = [1 << 20, 64, 1];

/// Reads the rest of `data` as a Parquet file. Panics unless every row is numbered one after
/// the one before, a document's text is no longer than the limit, a failure ends the rows, and
/// reading chosen rows again gives each document's text as the first reading did (or leaves the
/// row out, when its row group cannot be read again). Whole rows come with increasing numbers.
/// A panic inside the parquet crate counts as a failure only if it escapes dupfind's guard.
pub fn parquet(data: &[u8]) {
    let (pick, bytes) = super::choice(data);
    let (text, id) = PATHS[pick % PATHS.len()];
    let split = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
    let opts = JsonlOptions {
        text_field: split(text),
        id_field: split(id),
        keep_field: None,
        max_line: MAX_TEXT[pick / PATHS.len() % MAX_TEXT.len()],
    };
    let Ok(mut file) = tempfile::tempfile() else {
        return;
    };
    if file.write_all(bytes).is_err() {
        return;
    }
    let open = || {
        file.try_clone()
            .ok()
            .and_then(|f| ParquetDump::open(f, &opts).ok())
    };
    let Some(dump) = open() else { return };
    let mut texts: BTreeMap<u64, (u32, String)> = BTreeMap::new();
    let mut last = 0u64;
    let mut failed = false;
    for row in dump.rows() {
        assert!(!failed, "a row after the failure");
        match row {
            Row::Doc { line, text, .. } => {
                assert_eq!(line, last + 1, "row {line} after {last}");
                assert!(text.len() as u64 <= opts.max_line, "row {line} too long");
                texts.insert(line, (texts.len() as u32, text));
                last = line;
            }
            Row::Bad { line, .. } => {
                assert_eq!(line, last + 1, "row {line} after {last}");
                last = line;
            }
            Row::Unread {
                first, last: end, ..
            } => {
                assert_eq!(first, last + 1, "rows {first}-{end} after {last}");
                last = end;
            }
            Row::Failed { .. } => failed = true,
        }
    }
    let wanted = texts.iter().map(|(&line, &(doc, _))| (line, doc)).collect();
    let Some(dump) = open() else { return };
    let by_doc: BTreeMap<u32, &str> = texts.values().map(|(d, t)| (*d, t.as_str())).collect();
    for (doc, again) in dump.texts(wanted) {
        let first = by_doc.get(&doc).copied();
        assert_eq!(first.map(str::as_bytes), Some(&again[..]), "document {doc}");
    }
    // Whole rows as either kind of dataset reads them: typed by the file's own Arrow schema
    // (Parquet) or by the Parquet schema (JSON Lines).
    for typed in [false, true] {
        let Some(dump) = open() else { return };
        let mut next = 1u64;
        for batch in dump.whole_rows(typed) {
            let Ok(batch) = batch else { break };
            assert!(
                batch.first >= next,
                "rows from {} after {next}",
                batch.first
            );
            next = batch.first + batch.batch.num_rows() as u64;
        }
    }
}
