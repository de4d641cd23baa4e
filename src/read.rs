//! Read: one file → its bytes → decoded text.
//!
//! A file is opened non-blocking (so a file swapped for a FIFO after the walk cannot hang the
//! scan) and checked through the open handle: still a regular file, still the inode the walk
//! saw, within the size limits. Its metadata is taken there too, which is where it first comes
//! from when the walk did not stat the file ([`crate::walk::WalkOptions::defer_metadata`]). It
//! is read whole into a buffer the calling thread reuses, never more than `max_size + 1` bytes.
//! A size that changed while reading is an error: the bytes would describe no version of the
//! file.
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
    /// Its size when opened is under the lower limit.
    TooShort,
    /// Its size when opened is over the limit.
    TooLarge(u64),
    /// It grew past the limit while it was read (at least this many bytes).
    GrewTooLarge(u64),
    /// Opening or reading failed, or the file changed: the reason, for the report.
    Error(String),
}

/// What the open handle says about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Size in bytes when opened.
    pub size: u64,
    /// Device and inode number ((0, 0) on platforms without them).
    pub id: (u64, u64),
    /// Modification time, if the platform has one.
    pub modified: Option<std::time::SystemTime>,
    /// More than one name (hard links) may lead to this inode.
    pub linked: bool,
}

impl FileMeta {
    fn of(meta: &std::fs::Metadata) -> FileMeta {
        FileMeta {
            size: meta.len(),
            id: inode(meta),
            modified: meta.modified().ok(),
            linked: links(meta) > 1,
        }
    }
}

#[cfg(unix)]
fn links(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_meta: &std::fs::Metadata) -> u64 {
    1
}

/// The sizes a file must be within, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimits {
    /// Smaller files are skipped.
    pub min: u64,
    /// Larger files are skipped.
    pub max: u64,
}

/// Reads `path` into `buf`. `expected` is the (device, inode) the walk saw, or (0, 0) to accept
/// any. `meta` receives the open file's metadata as soon as it is known, even when the file is
/// then refused.
pub fn read_file(
    path: &Path,
    expected: (u64, u64),
    limits: SizeLimits,
    buf: &mut Vec<u8>,
    meta: &mut Option<FileMeta>,
) -> Result<(), ReadFailure> {
    let io = |e: std::io::Error| ReadFailure::Error(crate::messages::io_reason(&e));
    let max_size = limits.max;
    let mut file = open_nonblocking(path).map_err(io)?;
    let opened = file.metadata().map_err(io)?;
    if !opened.file_type().is_file() {
        return Err(ReadFailure::NotRegular);
    }
    let m = FileMeta::of(&opened);
    *meta = Some(m);
    if expected != (0, 0) && m.id != expected {
        return Err(ReadFailure::Error(
            "file was replaced during the scan".into(),
        ));
    }
    if m.size < limits.min {
        return Err(ReadFailure::TooShort);
    }
    if m.size > max_size {
        return Err(ReadFailure::TooLarge(m.size));
    }
    // One byte more than the size seen is asked for, so a single read both fills the buffer
    // and shows whether the file grew since: on a regular file a read returns fewer bytes than
    // asked only at the end (short reads before it are tolerated and read on).
    let want = m.size as usize + 1;
    // Not cleared first: resizing from the last file's length zeroes only the growth, where
    // clearing would zero the whole buffer for every file; the read overwrites what it uses and
    // the rest is cut off below.
    buf.resize(want, 0);
    let mut filled = 0;
    while filled < m.size as usize {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    buf.truncate(filled);
    if buf.len() as u64 > max_size {
        return Err(ReadFailure::GrewTooLarge(buf.len() as u64));
    }
    if buf.len() as u64 != m.size {
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
