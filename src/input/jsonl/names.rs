//! Names: the members of a record, for the hint given when no record of a dump has the text
//! field (`dump.jsonl: no record has a "body.txt" field; the first record has …`).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::record::skip_seq;

/// The members of a record that a user looking for `path` may have meant, for the hint when
/// no record has it: the record's top-level keys, then those of each object the path goes
/// through, dotted (`body`, `id`, `body.text`). None when the line is no JSON object.
pub fn field_names(bytes: &[u8], path: &[String]) -> Option<Vec<String>> {
    let json = std::str::from_utf8(bytes).ok()?;
    let mut names = Vec::new();
    let mut de = serde_json::Deserializer::from_str(json);
    let seed = Names {
        path,
        prefix: String::new(),
        out: &mut names,
    };
    de.deserialize_map(seed).ok()?;
    Some(names)
}

/// Collects the keys of an object, in order, then descends into the member `path` goes on
/// through (the last one of that name, as the parser keeps).
struct Names<'p, 'o> {
    path: &'p [String],
    prefix: String,
    out: &'o mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Names<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Names<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut inner = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let name = format!("{}{key}", self.prefix);
            match self.path {
                [first, rest @ ..] if *first == key && !rest.is_empty() => {
                    inner.clear();
                    map.next_value_seed(Names {
                        path: rest,
                        prefix: format!("{name}."),
                        out: &mut inner,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if !self.out.contains(&name) {
                self.out.push(name);
            }
        }
        self.out.append(&mut inner);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        skip_seq(seq)
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::input::jsonl::field_path;

    #[test]
    fn field_names_lists_the_keys_along_the_path() {
        let path = field_path("body.txt").unwrap();
        let record = br#"{"id":1,"body":{"text":"t","lang":{"x":1}},"meta":{"url":"u"},"id":2}"#;
        let got = field_names(record, &path).unwrap();
        assert_eq!(got, ["id", "body", "meta", "body.text", "body.lang"]);
        let got = field_names(br#"{"body":"flat","n":1e400}"#, &path).unwrap();
        assert_eq!(got, ["body", "n"]);
        assert_eq!(field_names(b"{}", &path).unwrap(), Vec::<String>::new());
        assert_eq!(field_names(b"[1]", &path), None);
        assert_eq!(field_names(b"{\"a\":", &path), None);
    }
}
