//! The JSON report's layout: serde_json's pretty printer (two spaces an indent), writing a line
//! break and its indent in one write. serde_json writes the indent one level at a time, and
//! the report's members sit four to six levels deep: those small writes were a sixth of the
//! report's instructions.
//!
//! Inside a pool of several threads, the clusters (nearly all of a report) are rendered by the
//! pool's threads, a window of them at a time, and written in order: writing the report was the
//! scan's last serial step (35 M instructions for the 10k benchmark corpus's 2.9 MB).

use std::io::{self, Write};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::ser::Formatter;

use super::clusters::ClusterOut;
use super::model::Report;

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
    /// The state inside `level` open arrays and objects, before a value.
    fn at(level: usize) -> Pretty {
        Pretty {
            level,
            has_value: false,
        }
    }

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

/// Clusters one thread renders into one buffer.
const PIECE: usize = 64;

/// Clusters rendered before any is written: what the rendering holds at once, a window's worth
/// of JSON (about 1 KB a cluster), not the report's.
const WINDOW: usize = 64 * PIECE;

/// Writes `report` as [`to_writer`] does, its clusters rendered by the threads of the pool this
/// runs in (see the module's comment).
pub fn write_report<W: Write>(mut w: W, report: &Report) -> anyhow::Result<()> {
    if threads() < 2 || report.clusters.len() < 2 * PIECE {
        return Ok(to_writer(w, report)?);
    }
    let mut around = Vec::new();
    report.clusters.elided(|| to_writer(&mut around, report))?;
    // The top-level object's `clusters` member: a line break and two spaces open each member
    // there, deeper ones are indented further, and a string holds no raw line break.
    const EMPTY: &[u8] = b"\n  \"clusters\": []";
    let Some(at) = around.windows(EMPTY.len()).position(|x| x == EMPTY) else {
        return Ok(to_writer(w, report)?);
    };
    // Up to the array's `[`, then from its `]` on.
    let (head, tail) = around.split_at(at + EMPTY.len() - 1);
    w.write_all(head)?;
    // The array's elements as serde_json writes them: each after `,` (but the first), a line
    // break and the indent of level 2, rendered at that level.
    let mut first = true;
    each_rendered(
        &report.clusters,
        |c, buf| {
            buf.extend_from_slice(b",\n    ");
            c.serialize(&mut serde_json::Serializer::with_formatter(
                buf,
                Pretty::at(2),
            ))
        },
        |piece| {
            let skip = usize::from(std::mem::take(&mut first));
            w.write_all(&piece[skip..])
        },
    )?;
    w.write_all(b"\n  ")?;
    w.write_all(tail)?;
    Ok(())
}

/// The threads of the pool this runs in; 1 outside any pool (whose work must not go to rayon's
/// global pool, sized by the machine rather than by `--threads`).
fn threads() -> usize {
    rayon::current_thread_index().map_or(1, |_| rayon::current_num_threads())
}

/// Renders each cluster with `render`, up to [`PIECE`] into a buffer, on the threads of the
/// pool this runs in, and hands the buffers to `write` in the clusters' order.
pub fn each_rendered(
    clusters: &super::Clusters,
    render: impl Fn(&ClusterOut, &mut Vec<u8>) -> serde_json::Result<()> + Sync,
    mut write: impl FnMut(&[u8]) -> io::Result<()>,
) -> anyhow::Result<()> {
    let parallel = threads() >= 2;
    let piece = |cs: &[ClusterOut]| -> serde_json::Result<Vec<u8>> {
        let mut buf = Vec::new();
        cs.iter().try_for_each(|c| render(c, &mut buf))?;
        Ok(buf)
    };
    clusters.each_window(WINDOW, |window| {
        let pieces: Vec<Vec<u8>> = if parallel {
            window
                .par_chunks(PIECE)
                .map(piece)
                .collect::<Result<_, _>>()?
        } else {
            window.chunks(PIECE).map(piece).collect::<Result<_, _>>()?
        };
        pieces.iter().try_for_each(|p| write(p))?;
        Ok(())
    })
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
