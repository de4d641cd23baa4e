//! Read: one file → its bytes → decoded text.
//!
//! A file is opened non-blocking (so a file swapped for a FIFO after the walk cannot hang the
//! scan) and checked again through the open handle: still a regular file, still the inode the
//! walk saw, not over the size limit. It is read whole into a buffer the calling thread reuses,
//! never more than `max_size + 1` bytes. A size that changed while reading is an error: the
//! bytes would describe no version of the file.
//!
//! Decoding: a UTF-8 BOM is dropped; a UTF-16 BOM (LE or BE) selects UTF-16; otherwise a NUL
//! byte in the first 8 KiB marks the file binary; anything else is UTF-8, with invalid
//! sequences replaced by U+FFFD, so no document is ever dropped for its encoding.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::walk::inode;

/// How much of a file is searched for a NUL byte.
pub const BINARY_SNIFF: usize = 8 * 1024;

/// Why a file was not turned into a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadFailure {
    /// It is no longer a regular file.
    NotRegular,
    /// It is now larger than the limit.
    TooLarge(u64),
    /// Opening or reading failed, or the file changed: the reason, for the report.
    Error(String),
}

/// Reads `path` into `buf`. `expected` is the (device, inode) the walk saw, or (0, 0) to accept
/// any.
pub fn read_file(
    path: &Path,
    expected: (u64, u64),
    max_size: u64,
    buf: &mut Vec<u8>,
) -> Result<(), ReadFailure> {
    let io = |e: std::io::Error| ReadFailure::Error(crate::messages::io_reason(&e));
    let mut file = open_nonblocking(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(ReadFailure::NotRegular);
    }
    if expected != (0, 0) && inode(&meta) != expected {
        return Err(ReadFailure::Error(
            "file was replaced during the scan".into(),
        ));
    }
    if meta.len() > max_size {
        return Err(ReadFailure::TooLarge(meta.len()));
    }
    // One byte more than the size seen is asked for, so a single read both fills the buffer
    // and shows whether the file grew since: on a regular file a read returns fewer bytes than
    // asked only at the end (short reads before it are tolerated and read on).
    let want = meta.len() as usize + 1;
    buf.clear();
    buf.resize(want, 0);
    let mut filled = 0;
    while filled < meta.len() as usize {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    buf.truncate(filled);
    if buf.len() as u64 > max_size {
        return Err(ReadFailure::TooLarge(buf.len() as u64));
    }
    if buf.len() as u64 != meta.len() {
        return Err(ReadFailure::Error(
            "file changed while it was being read".into(),
        ));
    }
    Ok(())
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// A file's contents as text, or the news that it is binary.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// Text, borrowed when the bytes were valid UTF-8.
    Text(Cow<'a, str>),
    /// A NUL byte in the first 8 KiB (and no UTF-16 BOM).
    Binary,
}

/// Decodes file bytes as described in the module documentation.
pub fn decode(bytes: &[u8]) -> Decoded<'_> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return Decoded::Text(utf8(rest));
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return Decoded::Text(Cow::Owned(utf16(rest, u16::from_le_bytes)));
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return Decoded::Text(Cow::Owned(utf16(rest, u16::from_be_bytes)));
    }
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF)];
    if sniff.contains(&0) {
        return Decoded::Binary;
    }
    Decoded::Text(utf8(bytes))
}

/// UTF-8 with invalid sequences replaced. `str::from_utf8` validates far faster than the lossy
/// decoder walks valid text, so it goes first.
fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

fn utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks(2).map(|c| match c {
        [a, b] => unit([*a, *b]),
        // A dangling odd byte is not a code unit: decode it as an unpaired surrogate, so it
        // becomes U+FFFD like any other invalid sequence.
        _ => 0xD800,
    });
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> String {
        match decode(bytes) {
            Decoded::Text(t) => t.into_owned(),
            Decoded::Binary => panic!("binary"),
        }
    }

    #[test]
    fn decodes_boms_and_invalid_utf8() {
        assert_eq!(text(b"\xEF\xBB\xBFhello"), "hello");
        assert_eq!(text(b"\xFF\xFEh\0i\0"), "hi");
        assert_eq!(text(b"\xFE\xFF\0h\0i"), "hi");
        assert_eq!(text(b"\xFF\xFEh\0i"), "h\u{FFFD}");
        assert_eq!(text(b"caf\xE9"), "caf\u{FFFD}");
        assert_eq!(decode(b"ab\0cd"), Decoded::Binary);
        let mut late_nul = vec![b'a'; BINARY_SNIFF];
        late_nul.push(0);
        assert!(matches!(decode(&late_nul), Decoded::Text(_)));
    }
}
