//! A check of a Parquet footer's schema before the parquet crate decodes it.
//!
//! The crate (60.1) reserves a vector of each schema element's declared `num_children` before it
//! looks at how many elements follow, so a 1 KB footer declaring 2³¹ children makes it reserve
//! gigabytes: lazily, so nothing is touched without a memory limit, but an abort under
//! `ulimit -v` or a cgroup that counts reservations. Upstream bounds it since (arrow-rs #9884);
//! until a release with that fix is out, the footer's schema list is read here first, in
//! Thrift's compact protocol, and a count that the elements after it cannot hold is refused.
//! Only the schema (field 2 of `FileMetaData`) is read; the rest is left to the crate.

use crate::input::source::Source;

use super::thrift::{Compact, I32, LIST, STRUCT};

/// Reads the footer of `file` and checks its schema's child counts; the error says what is
/// wrong. A file too short for a footer, or one whose footer the schema cannot be found in, is
/// left to the crate, which names the damage itself.
pub fn check(file: &Source) -> Result<(), String> {
    let len = file.len().map_err(|e| e.to_string())?;
    if len < 12 {
        return Ok(());
    }
    let mut tail = [0u8; 8];
    file.read_exact_at(&mut tail, len - 8)
        .map_err(|e| e.to_string())?;
    let meta_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if &tail[4..] != b"PAR1" || meta_len > len - 8 {
        return Ok(());
    }
    let mut meta = vec![0u8; meta_len as usize];
    file.read_exact_at(&mut meta, len - 8 - meta_len)
        .map_err(|e| e.to_string())?;
    check_schema(&meta).map_err(|e| format!("not a readable Parquet file: corrupt footer: {e}"))
}

/// Checks the schema list of a serialized `FileMetaData`: every element's `num_children` is
/// between 0 and the number of elements after it.
pub fn check_schema(meta: &[u8]) -> Result<(), String> {
    let mut r = Compact::new(meta, "schema");
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

impl Compact<'_> {
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
                children = Some(self.i32()?);
            } else {
                self.skip(ty, false, 2)?;
            }
            last = id;
        }
        Ok(children)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::thrift::STOP;
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
        assert_eq!(check(&Source::from(file)), Ok(()));
    }
}
