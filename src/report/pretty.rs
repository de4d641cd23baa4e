//! The JSON report's layout: serde_json's pretty printer (two spaces an indent), writing a line
//! break and its indent in one write. serde_json writes the indent one level at a time, and
//! the report's members sit four to six levels deep: those small writes were a sixth of the
//! report's instructions.

use std::io::{self, Write};

use serde_json::ser::Formatter;

/// serde_json's `PrettyFormatter` with its default indent, byte for byte.
#[derive(Default)]
pub struct Pretty {
    level: usize,
    has_value: bool,
}

/// `,` then a line break then 64 levels of indent: what a value or key starts with is a slice of
/// it (from 1 when it is the first of its object or array).
const BREAK: &[u8; 130] = b",\n                                                                                                                                ";

impl Pretty {
    fn line<W: ?Sized + Write>(&self, w: &mut W, comma: bool) -> io::Result<()> {
        let from = usize::from(!comma);
        match BREAK.get(from..2 + 2 * self.level) {
            Some(s) => w.write_all(s),
            None => {
                w.write_all(&BREAK[from..2])?;
                (0..self.level).try_for_each(|_| w.write_all(b"  "))
            }
        }
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, false)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, !first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, false)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, !first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` as `serde_json::to_writer_pretty` does.
pub fn to_writer<W: Write, T: ?Sized + serde::Serialize>(
    w: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        w,
        Pretty::default(),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_serde_jsons_pretty_printer_writes_at_every_depth() {
        // Nested past the 64 levels of `BREAK`, empty and full arrays and objects, strings.
        let mut v =
            serde_json::json!({"a": [], "b": {}, "c": [1, {"d": "e\n\"", "f": [null, true]}]});
        for i in 0..70 {
            v = serde_json::json!({ format!("k{i}"): [v.clone(), {}, [], i] });
        }
        let mut ours = Vec::new();
        to_writer(&mut ours, &v).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }
}
