//! Arrow columns, read and built: typed access by name (a missing or mistyped column is an error
//! naming it), and the encodings the stages share. Unsigned 64-bit values (band keys, content
//! hashes, inode numbers) are stored as signed ones because Spark reads unsigned 64-bit Parquet
//! as decimal(20, 0): band keys with the sign bit flipped, so that signed order is unsigned
//! order; the others bit for bit.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use arrow_array::{Array, ArrayRef, Int64Array, LargeListArray, ListArray, RecordBatch};

/// Column `name` of `batch` as array type `A`.
pub fn column<'a, A: Array + 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a A> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<A>())
        .with_context(|| format!("column `{name}` is missing or not of the type a stage writes"))
}

/// A column of lists of 64-bit integers, as a stage writes it (`List`) or as an engine that
/// prefers 64-bit offsets writes it (`LargeList`: Polars, pyarrow's `large_list`).
pub struct Int64Lists<'a> {
    offsets: Offsets<'a>,
    values: &'a [i64],
}

enum Offsets<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
}

impl<'a> Int64Lists<'a> {
    /// Column `name` of `batch`.
    pub fn of(batch: &'a RecordBatch, name: &str) -> Result<Int64Lists<'a>> {
        let wrong = || format!("column `{name}` is missing or not a list of int64");
        let c = batch.column_by_name(name).with_context(wrong)?.as_any();
        let (offsets, values) = if let Some(l) = c.downcast_ref::<ListArray>() {
            (Offsets::Small(l.value_offsets()), l.values())
        } else if let Some(l) = c.downcast_ref::<LargeListArray>() {
            (Offsets::Large(l.value_offsets()), l.values())
        } else {
            return Err(anyhow::anyhow!(wrong()));
        };
        let values = values
            .as_any()
            .downcast_ref::<Int64Array>()
            .with_context(wrong)?;
        Ok(Int64Lists {
            offsets,
            values: values.values(),
        })
    }

    /// The list of row `k` (a null list is empty).
    pub fn get(&self, k: usize) -> Result<&'a [i64]> {
        let (start, end) = match self.offsets {
            Offsets::Small(o) => (
                o.get(k).map(|&x| x as usize),
                o.get(k + 1).map(|&x| x as usize),
            ),
            Offsets::Large(o) => (
                o.get(k).map(|&x| x as usize),
                o.get(k + 1).map(|&x| x as usize),
            ),
        };
        start
            .zip(end)
            .and_then(|(s, e)| self.values.get(s..e))
            .context("a list column's offsets are out of range")
    }
}

/// A batch of named columns (every field nullable, so that batches of one file always agree).
pub fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let columns = columns.into_iter().map(|(name, a)| (name, a, true));
    Ok(RecordBatch::try_from_iter_with_nullable(columns)?)
}

/// An array as the `ArrayRef` a batch takes.
pub fn arc<A: Array + 'static>(a: A) -> ArrayRef {
    Arc::new(a)
}

/// A band key (or SimHash piece key) as stored: sign bit flipped.
pub fn key_to_i64(key: u64) -> i64 {
    (key ^ (1 << 63)) as i64
}

/// The band key a stored value holds.
pub fn key_from_i64(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

pub use crate::input::read::time_parts;

/// The time [`time_parts`] gave.
pub fn time_from_parts(secs: i64, nanos: i32) -> Option<SystemTime> {
    let nanos = u32::try_from(nanos).ok()?;
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(secs as u64, nanos))
    } else {
        let back = Duration::new(secs.unsigned_abs(), 0).checked_sub(Duration::new(0, nanos))?;
        UNIX_EPOCH.checked_sub(back)
    }
}

/// `values` as little-endian bytes.
pub fn u32s_le(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The values of [`u32s_le`].
pub fn u32s_from_le(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `values` as little-endian bytes.
pub fn u64s_le(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The values of [`u64s_le`].
pub fn u64s_from_le(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let mut a = [0; 8];
            a.copy_from_slice(c);
            u64::from_le_bytes(a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_as_signed_values() {
        let keys = [
            0u64,
            1,
            1 << 62,
            (1 << 63) - 1,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        for w in keys.windows(2) {
            assert!(key_to_i64(w[0]) < key_to_i64(w[1]), "{w:?}");
        }
        for k in keys {
            assert_eq!(key_from_i64(key_to_i64(k)), k);
        }
    }

    #[test]
    fn times_round_trip_on_both_sides_of_the_epoch() {
        for (s, n) in [(0u64, 0u32), (1_700_000_000, 123_456_789), (5, 999_999_999)] {
            let after = UNIX_EPOCH + Duration::new(s, n);
            let (a, b) = time_parts(after);
            assert_eq!(time_from_parts(a, b), Some(after));
            let before = UNIX_EPOCH - Duration::new(s, n);
            let (a, b) = time_parts(before);
            assert!((0..1_000_000_000).contains(&b));
            assert_eq!(time_from_parts(a, b), Some(before), "{s} {n}");
        }
    }
}
