//! LEB128 varints: 7 bits a byte, low first, the top bit set on every byte but the last. The
//! index stores sets' deltas with them, and Thrift's compact protocol (a Parquet footer) writes
//! its integers with them.

/// Appends `v` as a varint.
pub fn put(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at the start of `b` and the bytes it took; None when it is cut short or longer
/// than 64 bits.
pub fn get(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let part = u64::from(byte & 0x7f);
        if i == 9 && part > 1 {
            return None;
        }
        v |= part << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}
