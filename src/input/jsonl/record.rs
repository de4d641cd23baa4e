//! Record: one JSON Lines record's bytes → its id and text, or why it holds no document.
//!
//! Only the members on the text and id paths are built; serde_json skips the rest of the
//! object without allocating it. The module parses one line; it does not cut a stream into
//! lines (see [`super::JsonlReader`]).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::error::Category;
use serde_json::Value;

use super::{BadLine, JsonlOptions};

/// The id and text of one record (one line's bytes, without the line end).
pub fn parse_record(
    bytes: &[u8],
    opts: &JsonlOptions,
) -> Result<(Option<String>, String), BadLine> {
    let text_name = || opts.text_field.join(".");
    let json = std::str::from_utf8(bytes).map_err(|_| BadLine::InvalidUtf8)?;
    let mut de = serde_json::Deserializer::from_str(json);
    let picked = de
        .deserialize_map(Fields { opts })
        .and_then(|picked| de.end().map(|()| picked))
        .map_err(|e| match e.classify() {
            // The one type error: the line does not open an object. Say so only if it is JSON.
            Category::Data => match serde_json::from_str::<IgnoredAny>(json) {
                Ok(_) => BadLine::NotAnObject,
                Err(e) => json_error(e),
            },
            _ => json_error(e),
        })?;
    let text = match picked.text {
        Some(Value::String(text)) => text,
        Some(_) => return Err(BadLine::TextNotString(text_name())),
        None => return Err(BadLine::MissingText(text_name())),
    };
    let id = match picked.id {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(other) => Some(other.to_string()),
    };
    Ok((id, text))
}

/// serde_json's message without "line 1": a record is always one line.
fn json_error(e: serde_json::Error) -> BadLine {
    let message = e.to_string();
    BadLine::InvalidJson(match message.rsplit_once(" at line ") {
        Some((head, _)) => format!("{head} at column {}", e.column()),
        None => message,
    })
}

/// The values found at the text and id paths.
#[derive(Default)]
struct Picked {
    text: Option<Value>,
    id: Option<Value>,
}

/// Visits a record's top-level object and builds only the members the text and id paths go
/// through; the parser skips the rest without building it, which on pages with large
/// metadata is most of the line.
struct Fields<'a> {
    opts: &'a JsonlOptions,
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picked, A::Error> {
        let (text_path, id_path) = (&self.opts.text_field, &self.opts.id_field);
        let keys = KeyMatch {
            text: text_path.first(),
            id: id_path.first(),
        };
        let mut picked = Picked::default();
        while let Some((on_text, on_id)) = map.next_key_seed(keys)? {
            if !on_text && !on_id {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // Either path matched here, so it has a first segment and `[1..]` is in bounds.
            let value: Value = map.next_value()?;
            if on_id {
                picked.id = lookup(&value, &id_path[1..]).cloned();
            }
            if on_text {
                picked.text = match text_path.len() {
                    1 => Some(value),
                    _ => lookup(&value, &text_path[1..]).cloned(),
                };
            }
        }
        Ok(picked)
    }
}

fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key.as_str()))
}

/// Compares an object key with the first text and id segments without allocating it.
#[derive(Clone, Copy)]
struct KeyMatch<'a> {
    text: Option<&'a String>,
    id: Option<&'a String>,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = (bool, bool);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(bool, bool), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = (bool, bool);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<(bool, bool), E> {
        let is = |segment: Option<&String>| segment.is_some_and(|s| s == key);
        Ok((is(self.text), is(self.id)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::input::jsonl::field_path;

    fn opts(text: &str, id: &str) -> JsonlOptions {
        JsonlOptions {
            text_field: field_path(text).unwrap(),
            id_field: field_path(id).unwrap(),
            max_line: 1 << 20,
        }
    }

    #[test]
    fn picks_the_text_and_id_and_skips_the_rest() {
        let record = br#"{"meta":{"url":"u","big":[1,2,{"x":"y"}]},"body":{"text":"t"},"id":9}"#;
        let got = parse_record(record, &opts("body.text", "meta.url"));
        assert_eq!(got, Ok((Some("u".into()), "t".into())));
        // A later duplicate key wins, as serde_json's own maps do.
        let got = parse_record(br#"{"text":"a","text":"b"}"#, &opts("text", "id"));
        assert_eq!(got, Ok((None, "b".into())));
    }

    #[test]
    fn says_why_a_record_holds_no_document() {
        let o = opts("text", "id");
        let cases: [(&[u8], BadLine); 5] = [
            (b"[1]", BadLine::NotAnObject),
            (b"\"s\"", BadLine::NotAnObject),
            (b"{\"id\":1}", BadLine::MissingText("text".into())),
            (b"{\"text\":[]}", BadLine::TextNotString("text".into())),
            (b"\xff", BadLine::InvalidUtf8),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_record(bytes, &o), Err(want), "{bytes:?}");
        }
        let got = parse_record(b"{\"text\":", &o);
        let want = BadLine::InvalidJson("EOF while parsing a value at column 8".into());
        assert_eq!(got, Err(want));
    }
}
