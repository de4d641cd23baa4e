//! A check of a Parquet footer's schema before the parquet crate decodes it.
//!
//! The crate (60.1) reserves a vector of each schema element's declared `num_children` before it
//! looks at how many elements follow, so a 1 KB footer declaring 2³¹ children makes it reserve
//! gigabytes: lazily, so nothing is touched without a memory limit, but an abort under
//! `ulimit -v` or a cgroup that counts reservations. Upstream bounds it since (arrow-rs #9884);
//! until a release with that fix is out, the footer's schema list is read here first, in
//! Thrift's compact protocol, and a count that the elements after it cannot hold is refused.
//! Only the schema (field 2 of `FileMetaData`) is read; the rest is left to the crate.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Thrift compact types.
const STOP: u8 = 0;
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// Nesting deeper than this is no footer a writer makes (the crate's own limit is 64).
const MAX_DEPTH: u32 = 64;

/// Reads the footer of `file` and checks its schema's child counts; the error says what is
/// wrong. A file too short for a footer, or one whose footer the schema cannot be found in, is
/// left to the crate, which names the damage itself.
pub fn check(file: &File) -> Result<(), String> {
    let mut f = file;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if len < 12 {
        return Ok(());
    }
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::Start(len - 8))
        .and_then(|_| f.read_exact(&mut tail))
        .map_err(|e| e.to_string())?;
    let meta_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if &tail[4..] != b"PAR1" || meta_len > len - 8 {
        return Ok(());
    }
    let mut meta = vec![0u8; meta_len as usize];
    f.seek(SeekFrom::Start(len - 8 - meta_len))
        .and_then(|_| f.read_exact(&mut meta))
        .map_err(|e| e.to_string())?;
    f.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    check_schema(&meta).map_err(|e| format!("not a readable Parquet file: corrupt footer: {e}"))
}

/// Checks the schema list of a serialized `FileMetaData`: every element's `num_children` is
/// between 0 and the number of elements after it.
pub fn check_schema(meta: &[u8]) -> Result<(), String> {
    let mut r = Compact { b: meta, at: 0 };
    let Some(counts) = r.schema_counts()? else {
        return Ok(());
    };
    for (i, n) in counts.iter().enumerate() {
        if let Some(n) = *n {
            let after = counts.len() - i - 1;
            if n < 0 || n as usize > after {
                return Err(format!(
                    "schema element {i} declares {n} children, and {after} elements follow it"
                ));
            }
        }
    }
    Ok(())
}

/// A reader of Thrift's compact protocol.
struct Compact<'a> {
    b: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.b.get(self.at).ok_or("it ends inside the schema")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let (v, used) =
            crate::varint::get(&self.b[self.at..]).ok_or("a varint cut short or over 64 bits")?;
        self.at += used;
        Ok(v)
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), String> {
        let end = (self.at as u64)
            .checked_add(n)
            .filter(|&e| e <= self.b.len() as u64)
            .ok_or("a length past its end")?;
        self.at = end as usize;
        Ok(())
    }

    /// A list or set header: its length (each element takes at least a byte, so a length
    /// beyond the bytes left is refused here) and its elements' type.
    fn list_header(&mut self) -> Result<(u64, u8), String> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > (self.b.len() - self.at) as u64 {
            return Err(format!("a list of {n} elements in fewer bytes"));
        }
        Ok((n, h & 0x0F))
    }

    /// The next field's id and type in a struct (`last`: the previous id), or None at its end.
    fn field(&mut self, last: i16) -> Result<Option<(i16, u8)>, String> {
        let h = self.byte()?;
        let ty = h & 0x0F;
        if ty == STOP {
            return Ok(None);
        }
        let id = match h >> 4 {
            0 => zigzag(self.varint()?) as i16,
            delta => last.wrapping_add(i16::from(delta)),
        };
        Ok(Some((id, ty)))
    }

    /// Skips a value of type `ty` (`in_list`: a boolean is then a byte of its own).
    fn skip(&mut self, ty: u8, in_list: bool, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        match ty {
            BOOL_TRUE | BOOL_FALSE if !in_list => Ok(()),
            BOOL_TRUE | BOOL_FALSE | BYTE => self.skip_bytes(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip_bytes(8),
            BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            LIST | SET => {
                let (n, elem) = self.list_header()?;
                (0..n).try_for_each(|_| self.skip(elem, true, depth + 1))
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                if n > (self.b.len() - self.at) as u64 {
                    return Err(format!("a map of {n} entries in fewer bytes"));
                }
                let kv = self.byte()?;
                (0..n).try_for_each(|_| {
                    self.skip(kv >> 4, true, depth + 1)?;
                    self.skip(kv & 0x0F, true, depth + 1)
                })
            }
            STRUCT => {
                let mut last = 0;
                while let Some((id, ty)) = self.field(last)? {
                    self.skip(ty, false, depth + 1)?;
                    last = id;
                }
                Ok(())
            }
            other => Err(format!("an unknown type {other}")),
        }
    }

    /// The `num_children` of each element of `FileMetaData`'s schema (field 2), or None when
    /// the struct has no schema field.
    fn schema_counts(&mut self) -> Result<Option<Vec<Option<i32>>>, String> {
        let mut last = 0;
        while let Some((id, ty)) = self.field(last)? {
            if id == 2 && ty == LIST {
                let (n, elem) = self.list_header()?;
                if elem != STRUCT {
                    return Err("the schema is not a list of elements".into());
                }
                let mut counts = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    counts.push(self.element_children()?);
                }
                return Ok(Some(counts));
            }
            self.skip(ty, false, 1)?;
            last = id;
        }
        Ok(None)
    }

    /// One `SchemaElement`'s `num_children` (field 5), if it has one.
    fn element_children(&mut self) -> Result<Option<i32>, String> {
        let (mut last, mut children) = (0, None);
        while let Some((id, ty)) = self.field(last)? {
            if id == 5 && ty == I32 {
                children = Some(zigzag(self.varint()?) as i32);
            } else {
                self.skip(ty, false, 2)?;
            }
            last = id;
        }
        Ok(children)
    }
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A `FileMetaData` with version 1 and a schema of elements with these child counts (each
    /// with a name), then a field the check does not read.
    fn meta(children: &[Option<i32>]) -> Vec<u8> {
        let zz = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        let varint = crate::varint::put;
        let mut out = vec![0x15]; // field 1, i32
        varint(zz(1), &mut out);
        out.push(0x19); // field 2 (delta 1), list
        if children.len() < 15 {
            out.push((children.len() as u8) << 4 | STRUCT);
        } else {
            out.push(0xF0 | STRUCT);
            varint(children.len() as u64, &mut out);
        }
        for c in children {
            out.extend_from_slice(&[0x48, 1, b'x']); // field 4, binary "x"
            if let Some(n) = c {
                out.push(0x15); // field 5 (delta 1), i32
                varint(zz(i64::from(*n)), &mut out);
            }
            out.push(STOP);
        }
        out.push(0x16); // field 3, i64: num_rows
        varint(zz(7), &mut out);
        out.push(STOP);
        out
    }

    #[test]
    fn a_well_formed_schema_passes() {
        assert_eq!(check_schema(&meta(&[Some(2), None, Some(1), None])), Ok(()));
        assert_eq!(check_schema(&meta(&[Some(0)])), Ok(()));
        let wide: Vec<Option<i32>> = std::iter::once(Some(20)).chain([None; 20]).collect();
        assert_eq!(check_schema(&meta(&wide)), Ok(()));
    }

    #[test]
    fn a_child_count_beyond_the_elements_is_refused() {
        let err = check_schema(&meta(&[Some(i32::MAX), None])).unwrap_err();
        assert!(
            err.contains("declares 2147483647 children, and 1 elements follow"),
            "{err}"
        );
        assert!(check_schema(&meta(&[Some(-1)])).is_err());
        assert!(check_schema(&meta(&[Some(1), Some(1)])).is_err());
    }

    #[test]
    fn a_list_longer_than_its_bytes_and_a_cut_footer_are_refused() {
        let mut m = meta(&[Some(1), None]);
        m[3] = 0xF0 | STRUCT;
        m.insert(4, 0x7F);
        assert!(check_schema(&m)
            .unwrap_err()
            .contains("a list of 127 elements"));
        let m = meta(&[Some(1), None]);
        assert!(check_schema(&m[..m.len() - 6]).is_err());
    }

    #[test]
    fn the_crates_own_footers_pass() {
        use std::sync::Arc;

        use arrow_array::{RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};
        use parquet::arrow::ArrowWriter;

        let schema = Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, true)]));
        let column = Arc::new(StringArray::from(vec!["a b c", "d e f"]));
        let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
        let file = tempfile::tempfile().unwrap();
        let mut w = ArrowWriter::try_new(file.try_clone().unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert_eq!(check(&file), Ok(()));
    }
}
