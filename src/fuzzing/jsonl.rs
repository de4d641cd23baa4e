//! JSON Lines: a stream cut into lines and records parsed with dotted `--text-field` and
//! `--id-field` paths, as a dump is read.

use serde_json::Value;

use crate::input::jsonl::{
    field_names, field_path, parse_record, BadLine, JsonlOptions, JsonlReader, RawLine,
};

/// Text and id paths, picked by the first byte: single fields, dotted ones, paths sharing a
/// prefix, one inside the other, and one field for both.
const PATHS: [(&str, &str); 6] = [
    ("text", "id"),
    ("body.text", "meta.url"),
    ("a.b", "a.c"),
    ("a", "a.b"),
    ("a.b", "a"),
    ("t", "t"),
];

/// Longest lines accepted, picked by the first byte too.
const MAX_LINE: [u64; 4] = [1 << 20, 4096, 64, 8];

/// Reads the rest of `data` as a JSON Lines stream. Panics unless every line holding JSON is
/// where the reader says it is in the stream and no longer than the limit, line numbers
/// increase, and each record parses to what building it whole as a `serde_json::Value` and
/// following the paths gives, wherever serde_json can build it (it cannot past 128 levels, or
/// with a number beyond `f64`'s range; dupfind then still reads the fields if they lie
/// elsewhere). A record's [`field_names`] include its keys.
pub fn jsonl(data: &[u8]) {
    let (pick, stream) = super::choice(data);
    let (text, id) = PATHS[pick % PATHS.len()];
    let (Ok(text_field), Ok(id_field)) = (field_path(text), field_path(id)) else {
        return;
    };
    let opts = JsonlOptions {
        text_field,
        id_field,
        keep_field: None,
        max_line: MAX_LINE[pick / PATHS.len() % MAX_LINE.len()],
    };
    let mut reader = JsonlReader::new(stream, opts.clone());
    let mut last_line = 0;
    while let Some(raw) = reader.next_raw() {
        let RawLine::Json {
            line,
            offset,
            bytes,
        } = &raw
        else {
            continue;
        };
        assert!(*line > last_line, "line {line} after {last_line}");
        last_line = *line;
        assert!(
            bytes.len() as u64 <= opts.max_line,
            "line {line} is too long"
        );
        let at = usize::try_from(*offset).ok();
        let lies = at.and_then(|at| stream.get(at..at.checked_add(bytes.len())?));
        assert_eq!(
            lies,
            Some(&bytes[..]),
            "line {line} is not where it is said to be"
        );
        let got = parse_record(bytes, &opts);
        if let Some(want) = built_whole(bytes, &opts) {
            assert_eq!(got, want, "line {line}");
        }
        check_names(bytes, &opts);
        let _ = raw.parse(&opts);
    }
}

/// What the record holds, found by building it as a `Value`: None where serde_json cannot.
fn built_whole(
    bytes: &[u8],
    opts: &JsonlOptions,
) -> Option<Result<(Option<String>, String), BadLine>> {
    let Ok(json) = std::str::from_utf8(bytes) else {
        return Some(Err(BadLine::InvalidUtf8));
    };
    let value: Value = serde_json::from_str(json).ok()?;
    if !value.is_object() {
        return Some(Err(BadLine::NotAnObject));
    }
    let lookup = |path: &[String]| path.iter().try_fold(&value, |v, key| v.get(key.as_str()));
    let name = opts.text_field.join(".");
    let text = match lookup(&opts.text_field) {
        Some(Value::String(text)) => text.clone(),
        Some(_) => return Some(Err(BadLine::TextNotString(name))),
        None => return Some(Err(BadLine::MissingText(name))),
    };
    let id = match lookup(&opts.id_field) {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(other) => Some(other.to_string()),
    };
    Some(Ok((id, text)))
}

/// The names offered when no record has the text field include every top-level key.
fn check_names(bytes: &[u8], opts: &JsonlOptions) {
    let names = field_names(bytes, &opts.text_field);
    let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let Some(names) = names else {
        panic!("no names for an object");
    };
    for key in record.keys() {
        assert!(names.contains(key), "{key:?} missing from {names:?}");
    }
}
