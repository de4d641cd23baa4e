//! A reader of Thrift's compact protocol, the encoding of a Parquet footer and of its page
//! headers: just enough to read the few fields dupfind checks before the parquet crate decodes
//! them (see `footer.rs` and `pages.rs`), every other value skipped. Lengths and counts are
//! checked against the bytes there are, so damaged input is an error, never an allocation.

/// Thrift compact types.
pub(super) const STOP: u8 = 0;
pub(super) const BOOL_TRUE: u8 = 1;
pub(super) const BOOL_FALSE: u8 = 2;
pub(super) const BYTE: u8 = 3;
pub(super) const I16: u8 = 4;
pub(super) const I32: u8 = 5;
pub(super) const I64: u8 = 6;
pub(super) const DOUBLE: u8 = 7;
pub(super) const BINARY: u8 = 8;
pub(super) const LIST: u8 = 9;
pub(super) const SET: u8 = 10;
pub(super) const MAP: u8 = 11;
pub(super) const STRUCT: u8 = 12;

/// Nesting deeper than this is no footer a writer makes (the crate's own limit is 64).
const MAX_DEPTH: u32 = 64;

/// A reader of Thrift's compact protocol over `b`, at byte `at`.
pub(super) struct Compact<'a> {
    b: &'a [u8],
    at: usize,
    /// What is read, for the message when the bytes end too soon ("the schema").
    what: &'static str,
}

impl<'a> Compact<'a> {
    pub(super) fn new(b: &'a [u8], what: &'static str) -> Compact<'a> {
        Compact { b, at: 0, what }
    }

    /// Bytes read so far.
    pub(super) fn used(&self) -> usize {
        self.at
    }

    fn byte(&mut self) -> Result<u8, String> {
        let Some(&b) = self.b.get(self.at) else {
            return Err(format!("it ends inside the {}", self.what));
        };
        self.at += 1;
        Ok(b)
    }

    pub(super) fn varint(&mut self) -> Result<u64, String> {
        let (v, used) =
            crate::varint::get(&self.b[self.at..]).ok_or("a varint cut short or over 64 bits")?;
        self.at += used;
        Ok(v)
    }

    /// An i32 (zigzag varint), cut to 32 bits as the crate's reader cuts it.
    pub(super) fn i32(&mut self) -> Result<i32, String> {
        Ok(zigzag(self.varint()?) as i32)
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
    pub(super) fn list_header(&mut self) -> Result<(u64, u8), String> {
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
    pub(super) fn field(&mut self, last: i16) -> Result<Option<(i16, u8)>, String> {
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
    pub(super) fn skip(&mut self, ty: u8, in_list: bool, depth: u32) -> Result<(), String> {
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
}

pub(super) fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}
