//! Record: one JSON Lines record's bytes → its id and text, or why it holds no document.
//!
//! Only the members on the text and id paths are built; serde_json skips the rest of the
//! object without allocating it. The module parses one line; it does not cut a stream into
//! lines (see [`super::JsonlReader`]).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::Value;

use super::{BadLine, JsonlOptions};
use crate::input::field_value::FieldValue;

/// The id and text of one record (one line's bytes, without the line end).
pub fn parse_record(
    bytes: &[u8],
    opts: &JsonlOptions,
) -> Result<(Option<String>, String), BadLine> {
    parse_fields(bytes, opts).map(|f| (f.id, f.text))
}

/// What a record holds: its id, text and `--keep-by` value.
#[derive(Debug, PartialEq)]
pub struct Fields {
    pub id: Option<String>,
    pub text: String,
    pub keep: Option<FieldValue>,
}

/// The id, text and `--keep-by` value of one record.
pub fn parse_fields(bytes: &[u8], opts: &JsonlOptions) -> Result<Fields, BadLine> {
    let text_name = || opts.text_field.join(".");
    let json = std::str::from_utf8(bytes).map_err(|_| BadLine::InvalidUtf8)?;
    let mut de = serde_json::Deserializer::from_str(json);
    let picked = de
        .deserialize_map(Top { opts })
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
        Some(Text::String(text)) => text,
        Some(Text::Other) => return Err(BadLine::TextNotString(text_name())),
        None => return Err(BadLine::MissingText(text_name())),
    };
    let id = match picked.id {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(other) => Some(other.to_string()),
    };
    let keep = picked.keep.as_ref().and_then(FieldValue::of_json);
    Ok(Fields { id, text, keep })
}

/// serde_json's message without "line 1": a record is always one line.
fn json_error(e: serde_json::Error) -> BadLine {
    let message = e.to_string();
    BadLine::InvalidJson(match message.rsplit_once(" at line ") {
        Some((head, _)) => format!("{head} at column {}", e.column()),
        None => message,
    })
}

/// The values found at the text, id and `--keep-by` paths.
#[derive(Default)]
struct Picked {
    text: Option<Text>,
    id: Option<Value>,
    keep: Option<Value>,
}

/// What the text path leads to.
enum Text {
    String(String),
    /// A value of another type, which is not built.
    Other,
}

/// Where a value lies on the text, id and `--keep-by` paths: `None` off the path, else the
/// segments still to follow below it (none: the value is the field itself).
#[derive(Clone, Copy)]
struct Paths<'a> {
    text: Option<&'a [String]>,
    id: Option<&'a [String]>,
    keep: Option<&'a [String]>,
}

impl<'a> Paths<'a> {
    /// The paths below the member `key` of an object lying on them.
    fn below(self, key: &str) -> Paths<'a> {
        let step = |path: Option<&'a [String]>| match path? {
            [first, rest @ ..] if first == key => Some(rest),
            _ => None,
        };
        Paths {
            text: step(self.text),
            id: step(self.id),
            keep: step(self.keep),
        }
    }

    fn off(self) -> bool {
        self.text.is_none() && self.id.is_none() && self.keep.is_none()
    }
}

/// Visits a record's top-level object and follows the text and id paths down from it. Only the
/// fields themselves are built (the text as a string; an id of another type as a `Value`, to be
/// shown as JSON); every other member is skipped without being built, which on pages with large
/// metadata is most of the line, and so cannot drop the record: a sibling number beyond `f64`'s
/// range or nesting deeper than serde_json's 128 levels is only skipped.
struct Top<'a> {
    opts: &'a JsonlOptions,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Picked, A::Error> {
        let paths = Paths {
            text: Some(&self.opts.text_field),
            id: Some(&self.opts.id_field),
            keep: self.opts.keep_field.as_deref(),
        };
        visit_members(paths, map)
    }
}

/// The members of an object on the paths: each one on a path is followed (a later duplicate
/// key replaces what an earlier one gave, as serde_json's own maps do), the others skipped.
fn visit_members<'de, A: MapAccess<'de>>(paths: Paths<'_>, mut map: A) -> Result<Picked, A::Error> {
    let mut picked = Picked::default();
    while let Some(below) = map.next_key_seed(KeyMatch(paths))? {
        if below.off() {
            map.next_value::<IgnoredAny>()?;
            continue;
        }
        let found = map.next_value_seed(below)?;
        if below.text.is_some() {
            picked.text = found.text;
        }
        if below.id.is_some() {
            picked.id = found.id;
        }
        if below.keep.is_some() {
            picked.keep = found.keep;
        }
    }
    Ok(picked)
}

impl<'de> DeserializeSeed<'de> for Paths<'_> {
    type Value = Picked;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Picked, D::Error> {
        let ends = |p: Option<&[String]>| p.is_some_and(<[String]>::is_empty);
        let below = |p: Option<&[String]>| p.is_some_and(|p| !p.is_empty());
        let shared = |p: Option<&[String]>| ends(p) && (self.text.is_some() || self.id.is_some());
        if ends(self.id)
            || shared(self.keep)
            || (ends(self.text) && (below(self.id) || below(self.keep)))
        {
            // The id or keep field (perhaps holding the others, or held by the text field):
            // built whole, the others looked up in it.
            let value = Value::deserialize(d)?;
            let at = |p: Option<&[String]>| p.and_then(|rest| lookup(&value, rest));
            let (text, keep) = (at(self.text).map(Text::of), at(self.keep).cloned());
            // The id field itself is moved, not copied: it is the common case.
            let id = match self.id {
                Some([]) => Some(value),
                rest => rest.and_then(|rest| lookup(&value, rest)).cloned(),
            };
            return Ok(Picked { text, id, keep });
        }
        if ends(self.text) {
            return Ok(Picked {
                text: Some(d.deserialize_any(TextField)?),
                ..Picked::default()
            });
        }
        if ends(self.keep) && self.text.is_none() && self.id.is_none() {
            return Ok(Picked {
                keep: d.deserialize_any(KeepField)?,
                ..Picked::default()
            });
        }
        // A value the paths go on through: an object is followed, anything else lacks them.
        d.deserialize_any(Through(self))
    }
}

impl Text {
    fn of(value: &Value) -> Text {
        match value {
            Value::String(s) => Text::String(s.clone()),
            _ => Text::Other,
        }
    }
}

fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key.as_str()))
}

/// A value on the paths with segments still to follow.
struct Through<'a>(Paths<'a>);

impl<'de> Visitor<'de> for Through<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Picked, A::Error> {
        visit_members(self.0, map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Picked, A::Error> {
        skip_seq(seq).map(|()| Picked::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Picked, E> {
        Ok(Picked::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Picked, E> {
        Ok(Picked::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Picked, E> {
        Ok(Picked::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Picked, E> {
        Ok(Picked::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Picked, E> {
        Ok(Picked::default())
    }

    fn visit_unit<E>(self) -> Result<Picked, E> {
        Ok(Picked::default())
    }
}

/// The text field's value: its string, or only the news that it is something else.
struct TextField;

impl<'de> Visitor<'de> for TextField {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, s: &str) -> Result<Text, E> {
        Ok(Text::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Text, E> {
        Ok(Text::String(s))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
        skip_seq(seq).map(|()| Text::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text, E> {
        Ok(Text::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text, E> {
        Ok(Text::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text, E> {
        Ok(Text::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text, E> {
        Ok(Text::Other)
    }

    fn visit_unit<E>(self) -> Result<Text, E> {
        Ok(Text::Other)
    }
}

/// The `--keep-by` field's value: a scalar (a number, string or boolean) as a `Value`; an array
/// or object is skipped unbuilt (it is no value to compare), so that nothing inside it can drop
/// the record.
struct KeepField;

impl<'de> Visitor<'de> for KeepField {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, s: &str) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(s)))
    }

    fn visit_string<E>(self, s: String) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(s)))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(b)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(n)))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(n)))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(n)))
    }

    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Value>, A::Error> {
        skip_seq(seq).map(|()| None)
    }
}

pub(super) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Compares an object key with the next segments of the paths without allocating it, and
/// gives the paths below it.
#[derive(Clone, Copy)]
struct KeyMatch<'a>(Paths<'a>);

impl<'de, 'a> DeserializeSeed<'de> for KeyMatch<'a> {
    type Value = Paths<'a>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Paths<'a>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'a> Visitor<'de> for KeyMatch<'a> {
    type Value = Paths<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Paths<'a>, E> {
        Ok(self.0.below(key))
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
            keep_field: None,
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

    /// `depth` arrays nested in each other.
    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn only_the_fields_themselves_are_built_not_their_siblings() {
        let o = opts("body.text", "meta.url");
        let deep = nested(200);
        // Beside the text and id, inside the objects the paths go through, and at the top.
        let records = [
            r#"{"body":{"n":1e400,"text":"t"},"meta":{"url":"u","n":-1e999}}"#.to_string(),
            format!(r#"{{"body":{{"deep":{deep},"text":"t"}},"meta":{{"url":"u","d":{deep}}}}}"#),
            format!(r#"{{"x":1e400,"d":{deep},"body":{{"text":"t"}},"meta":{{"url":"u"}}}}"#),
        ];
        for record in &records {
            let got = parse_record(record.as_bytes(), &o);
            assert_eq!(got, Ok((Some("u".into()), "t".into())), "{record}");
        }
        // A text field that is no string is not built either, however deep or out of range.
        let record = format!(r#"{{"body":{{"text":{{"a":1e400,"b":{deep}}}}}}}"#);
        let got = parse_record(record.as_bytes(), &o);
        assert_eq!(got, Err(BadLine::TextNotString("body.text".into())));
        // An id of another type is shown as JSON, as before.
        let got = parse_record(
            br#"{"body":{"text":"t"},"meta":{"url":[1,{"k":null}]}}"#,
            &o,
        );
        assert_eq!(got, Ok((Some(r#"[1,{"k":null}]"#.into()), "t".into())));
    }

    #[test]
    fn paths_sharing_a_prefix_or_a_field_agree_with_building_the_record() {
        let cases = [
            (
                "a.b",
                "a.c",
                r#"{"a":{"c":5,"b":"x"}}"#,
                Ok((Some("5"), "x")),
            ),
            (
                "a.b",
                "a",
                r#"{"a":{"b":"x"}}"#,
                Ok((Some(r#"{"b":"x"}"#), "x")),
            ),
            (
                "a",
                "a.b",
                r#"{"a":{"b":"x"}}"#,
                Err(BadLine::TextNotString("a".into())),
            ),
            ("a", "a.b", r#"{"a":"x"}"#, Ok((None, "x"))),
            (
                "a.b",
                "id",
                r#"{"a":{"b":"x"},"a":{"c":"y"}}"#,
                Err(BadLine::MissingText("a.b".into())),
            ),
            ("a.b", "id", r#"{"a":{"b":"x","b":"y"}}"#, Ok((None, "y"))),
            (
                "a.b",
                "id",
                r#"{"a":[{"b":"x"}]}"#,
                Err(BadLine::MissingText("a.b".into())),
            ),
            (
                "a.b.c",
                "id",
                r#"{"a":{"b":"x"}}"#,
                Err(BadLine::MissingText("a.b.c".into())),
            ),
        ];
        for (text, id, record, want) in cases {
            let want = want.map(|(id, text)| (id.map(String::from), text.to_string()));
            let got = parse_record(record.as_bytes(), &opts(text, id));
            assert_eq!(got, want, "{text} {id} {record}");
        }
    }

    #[test]
    fn the_keep_by_field_is_found_beside_inside_or_on_the_other_paths() {
        let opts = |text: &str, id: &str, keep: &str| JsonlOptions {
            keep_field: Some(field_path(keep).unwrap()),
            ..self::opts(text, id)
        };
        let keep = |o: &JsonlOptions, record: &str| parse_fields(record.as_bytes(), o).unwrap();
        let r = r#"{"id":"x","text":"t","q":{"n":2.5,"s":"b"},"big":[1e400]}"#;
        assert_eq!(
            keep(&opts("text", "id", "q.n"), r).keep,
            Some(FieldValue::Float(2.5))
        );
        assert_eq!(
            keep(&opts("text", "id", "q.s"), r).keep,
            Some(FieldValue::Text("b".into()))
        );
        // The id itself, or inside it; the id is kept too.
        let f = keep(&opts("text", "id", "id"), r);
        assert_eq!(
            (f.id.as_deref(), f.keep),
            (Some("x"), Some(FieldValue::Text("x".into())))
        );
        let f = keep(&opts("text", "q", "q.n"), r);
        assert_eq!(f.id.as_deref(), Some(r#"{"n":2.5,"s":"b"}"#));
        assert_eq!(f.keep, Some(FieldValue::Float(2.5)));
        // Not there, null, or no scalar: no value, and the record is a document all the same.
        for path in ["nope", "q.nope", "text.x", "q", "big"] {
            let f = keep(&opts("text", "id", path), r);
            assert_eq!((f.text.as_str(), f.keep), ("t", None), "{path}");
        }
        let f = keep(&opts("text", "id", "q"), r#"{"text":"t","q":null}"#);
        assert_eq!(f.keep, None);
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
