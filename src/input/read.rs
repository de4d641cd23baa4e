//! Read: one file → its bytes → decoded text.
//!
//! A file is opened non-blocking (so a file swapped for a FIFO after the walk cannot hang the
//! scan) and checked through the open handle: still a regular file, still the inode the walk
//! saw, within the size limits. Its metadata is taken there too, which is where it first comes
//! from when the walk did not stat the file
//! ([`crate::input::walk::WalkOptions::defer_metadata`]). It is read whole into a buffer the
//! calling thread reuses, never more than `max_size + 1` bytes. A size that changed while
//! reading is an error: the bytes would describe no version of the file. The exception is a
//! file of a pseudo filesystem (`/proc`, `/sys`, …), whose size is not its content's (0, or a
//! page): it is read to its end, as `cat`, ripgrep and fd read it, still bounded by the size
//! limit, and its size is what was read.
//!
//! Decoding: a UTF-8 BOM is dropped; a UTF-16 BOM (LE or BE) selects UTF-16; otherwise a NUL
//! byte in the first 8 KiB marks the file binary; anything else is UTF-8, with invalid
//! sequences replaced by U+FFFD, so no document is ever dropped for its encoding.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use crate::input::walk::inode;

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
    /// Status change time, if the platform has one.
    pub changed: Option<std::time::SystemTime>,
    /// More than one name (hard links) may lead to this inode.
    pub linked: bool,
    /// Its names (hard links), 1 on platforms without them.
    pub links: u32,
    /// The bytes it takes on disk (st_blocks × 512; its size on platforms without them).
    pub disk: u64,
}

impl FileMeta {
    fn of(meta: &std::fs::Metadata) -> FileMeta {
        FileMeta {
            size: meta.len(),
            id: inode(meta),
            modified: meta.modified().ok(),
            changed: changed(meta),
            linked: links(meta) > 1,
            links: u32::try_from(links(meta)).unwrap_or(u32::MAX),
            disk: disk(meta),
        }
    }
}

/// A file's status change time (ctime): changed by any write, rename, chmod or link of the
/// inode, and not settable by `touch`.
#[cfg(unix)]
pub fn changed(meta: &std::fs::Metadata) -> Option<std::time::SystemTime> {
    use std::os::unix::fs::MetadataExt;
    time_of(meta.ctime(), meta.ctime_nsec())
}

/// The time `secs` seconds and `nanos` nanoseconds (which carry into the seconds past 10⁹)
/// after the epoch, as a status gives it; None when out of range.
pub fn time_of(secs: i64, nanos: i64) -> Option<std::time::SystemTime> {
    let nanos = u32::try_from(nanos).ok()?;
    let since = std::time::Duration::new(secs.unsigned_abs(), 0);
    if secs >= 0 {
        std::time::UNIX_EPOCH.checked_add(since + std::time::Duration::new(0, nanos))
    } else {
        std::time::UNIX_EPOCH
            .checked_sub(since)?
            .checked_add(std::time::Duration::new(0, nanos))
    }
}

#[cfg(not(unix))]
pub fn changed(_meta: &std::fs::Metadata) -> Option<std::time::SystemTime> {
    None
}

#[cfg(unix)]
fn links(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_meta: &std::fs::Metadata) -> u64 {
    1
}

/// What a file takes on disk: st_blocks counts 512-byte units whatever the file system's block
/// size (POSIX leaves the unit open; every Unix dupfind builds on uses 512).
#[cfg(unix)]
fn disk(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512)
}

#[cfg(not(unix))]
fn disk(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

/// A modification time as (seconds, nanoseconds) since the epoch, seconds negative before it.
pub fn time_parts(t: std::time::SystemTime) -> (i64, i32) {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i32),
        Err(e) => {
            let d = e.duration();
            let (s, n) = (d.as_secs() as i64, d.subsec_nanos() as i32);
            if n == 0 {
                (-s, 0)
            } else {
                (-s - 1, 1_000_000_000 - n)
            }
        }
    }
}

/// The sizes a file must be within, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimits {
    /// Smaller files are skipped.
    pub min: u64,
    /// Larger files are skipped.
    pub max: u64,
}

/// Reads `path` into `buf`, and says whether it had to wait for the disk. `expected` is the
/// (device, inode) the walk saw, or (0, 0) to accept
/// any. `meta` receives the open file's metadata as soon as it is known, even when the file is
/// then refused.
pub fn read_file(
    path: &Path,
    expected: (u64, u64),
    limits: SizeLimits,
    buf: &mut Vec<u8>,
    meta: &mut Option<FileMeta>,
) -> Result<Residency, ReadFailure> {
    let io = |e: std::io::Error| ReadFailure::Error(crate::messages::io_reason(&e));
    let max_size = limits.max;
    let file = open_nonblocking(path).map_err(io)?;
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
        if on_pseudo_filesystem(&file) {
            return read_pseudo(&file, limits, buf, meta);
        }
        return Err(ReadFailure::TooShort);
    }
    if m.size > max_size {
        return Err(ReadFailure::TooLarge(m.size));
    }
    // One byte more than the size seen is asked for, so a single read both fills the buffer
    // and shows whether the file grew since: on a regular file a read returns fewer bytes than
    // asked only at the end (short reads before it are tolerated and read on). The first read
    // may also stop where the page cache does; a file that grew just past such a point reads
    // as its old size, one version of it.
    let want = m.size as usize + 1;
    // Not cleared first: resizing from the last file's length zeroes only the growth, where
    // clearing would zero the whole buffer for every file; the read overwrites what it uses and
    // the rest is cut off below.
    buf.resize(want, 0);
    let mut residency = Residency::Cached;
    let mut filled = match read_if_cached(&file, buf) {
        Some(Ok(n)) => n,
        Some(Err(e)) if e.kind() != std::io::ErrorKind::Interrupted => return Err(io(e)),
        Some(Err(_)) => 0,
        None => {
            residency = Residency::NotCached;
            0
        }
    };
    if filled > 0 && filled < m.size as usize {
        // Part of it was cached; the rest has to come from the disk.
        residency = Residency::NotCached;
    }
    while filled < m.size as usize {
        match read_at(&file, &mut buf[filled..], filled as u64) {
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
        if on_pseudo_filesystem(&file) {
            return read_pseudo(&file, limits, buf, meta);
        }
        return Err(ReadFailure::Error(
            "file changed while it was being read".into(),
        ));
    }
    Ok(residency)
}

/// Reads a file of a pseudo filesystem from its start to its end, whatever size it declared,
/// bounded by the size limit; `meta` then gives the size read.
/// Reads the object at the URL `file.path` into `buf`, one GET, as [`read_file`] reads a file:
/// within the size limits (the listing's size is checked before anything is fetched), and an
/// object whose size changed since it was listed is an error.
pub fn read_object(
    file: &crate::input::walk::FileEntry,
    limits: SizeLimits,
    buf: &mut Vec<u8>,
    meta: &mut Option<FileMeta>,
) -> Result<Residency, ReadFailure> {
    let size = file.size;
    *meta = Some(FileMeta {
        size,
        id: (0, 0),
        modified: file.modified,
        changed: None,
        linked: false,
        links: 1,
        disk: size,
    });
    if size < limits.min {
        return Err(ReadFailure::TooShort);
    }
    if size > limits.max {
        return Err(ReadFailure::TooLarge(size));
    }
    let url = file
        .path
        .to_str()
        .ok_or(ReadFailure::Error("a URL must be UTF-8".into()))?;
    let read = crate::store::Object::listed(url, size).and_then(|o| o.read_whole(limits.max, buf));
    match read {
        Ok(_) => Ok(Residency::NotCached),
        Err(e) if e == crate::store::NO_SUCH_OBJECT && crate::store::is_marker(url) => {
            Err(ReadFailure::Error(format!(
                "not read: its key is {url}/, ending in '/': a folder marker, not a document, \
                 though it holds {}; copy them to a key without the '/' to scan them",
                crate::messages::count(size, "byte")
            )))
        }
        Err(e) => Err(ReadFailure::Error(e)),
    }
}

fn read_pseudo(
    file: &File,
    limits: SizeLimits,
    buf: &mut Vec<u8>,
    meta: &mut Option<FileMeta>,
) -> Result<Residency, ReadFailure> {
    let io = |e: std::io::Error| ReadFailure::Error(crate::messages::io_reason(&e));
    // Such a file is generated as it is read, a page or so at a time: one buffer of a few
    // pages takes most whole, grown only for a longer one.
    const CHUNK: usize = 16 << 10;
    let bound = limits.max.saturating_add(1);
    buf.clear();
    loop {
        let filled = buf.len();
        let want = (bound - filled as u64).min(CHUNK as u64) as usize;
        if want == 0 {
            return Err(ReadFailure::TooLarge(filled as u64));
        }
        buf.resize(filled + want, 0);
        match read_at(file, &mut buf[filled..], filled as u64) {
            Ok(0) => {
                buf.truncate(filled);
                break;
            }
            Ok(n) => buf.truncate(filled + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(filled),
            Err(e) => return Err(io(e)),
        }
    }
    let size = buf.len() as u64;
    if let Some(m) = meta {
        m.size = size;
    }
    if size < limits.min {
        return Err(ReadFailure::TooShort);
    }
    Ok(Residency::Cached)
}

/// Whether `file` lies on a filesystem whose files are made as they are read, so that their
/// size says nothing of their content: procfs, sysfs, debugfs, tracefs, securityfs, cgroup
/// (v1 and v2) and configfs.
#[cfg(target_os = "linux")]
fn on_pseudo_filesystem(file: &File) -> bool {
    // Their magic numbers, from linux/magic.h.
    const PSEUDO: [u64; 8] = [
        0x9fa0,      // PROC_SUPER_MAGIC
        0x6265_6572, // SYSFS_MAGIC
        0x6462_6720, // DEBUGFS_MAGIC
        0x7472_6163, // TRACEFS_MAGIC
        0x7363_6673, // SECURITYFS_MAGIC
        0x0027_e0eb, // CGROUP_SUPER_MAGIC
        0x6367_7270, // CGROUP2_SUPER_MAGIC
        0x6265_6570, // CONFIGFS_MAGIC
    ];
    rustix::fs::fstatfs(file).is_ok_and(|fs| PSEUDO.contains(&(fs.f_type as u64)))
}

#[cfg(not(target_os = "linux"))]
fn on_pseudo_filesystem(_file: &File) -> bool {
    false
}

/// Whether a file's bytes were all in the page cache when [`read_file`] read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// Cached, or the platform cannot tell.
    Cached,
    /// Some or all of it had to come from the disk.
    NotCached,
}

/// The first read of a file, from offset 0, that returns only what the page cache holds:
/// `None` when it holds none of the file (the read would wait for the disk). Where the kernel
/// or filesystem cannot tell, this is an ordinary read. rustix makes the system call itself,
/// so it does not depend on the C library having `preadv2` (glibc since 2.26; builds for musl
/// used to read without the flag).
#[cfg(target_os = "linux")]
fn read_if_cached(file: &File, buf: &mut [u8]) -> Option<std::io::Result<usize>> {
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    let read = preadv2(
        file,
        &mut [std::io::IoSliceMut::new(buf)],
        0,
        ReadWriteFlags::NOWAIT,
    );
    match read {
        Ok(n) => Some(Ok(n)),
        Err(Errno::AGAIN) => None,
        // A kernel before 4.14 (EOPNOTSUPP, or ENOSYS before 4.6), a filesystem without
        // non-blocking buffered reads, a sandbox that refuses the call: an ordinary read, which
        // reports the file's own errors.
        Err(_) => Some(read_at(file, buf, 0)),
    }
}

#[cfg(not(target_os = "linux"))]
fn read_if_cached(file: &File, buf: &mut [u8]) -> Option<std::io::Result<usize>> {
    Some(read_at(file, buf, 0))
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// Reads on from the file's position, which is `offset`: every read of a file goes through
/// here, from the start.
#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], _offset: u64) -> std::io::Result<usize> {
    std::io::Read::read(&mut file, buf)
}

/// Opens a file for reading without blocking on a FIFO or claiming a terminal.
#[cfg(unix)]
pub(crate) fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(crate::input::stdin::resolve(path))
}

#[cfg(not(unix))]
pub(crate) fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(crate::input::stdin::resolve(path))
}

/// True when the file at `path` is binary by its first [`BINARY_SNIFF`] bytes, as [`decode`]
/// finds it, and not compressed (compressed bytes say nothing of the content's). Asked only of
/// a file too large to charge to the budget: a binary one is skipped as it would be once read,
/// not failed for the memory its text would have needed.
pub fn sniffs_binary(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(BINARY_SNIFF);
    let Ok(file) = open_nonblocking(path) else {
        return false;
    };
    if file
        .take(BINARY_SNIFF as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        return false;
    }
    is_binary(&head)
}

/// True when `bytes`, a file's first bytes at least, are binary as [`decode`] finds them, and
/// not compressed.
pub fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(BINARY_SNIFF)];
    let magic = &head[..head.len().min(4)];
    crate::input::decompress::sniff(magic) == crate::input::decompress::Compression::None
        && decode(head) == Decoded::Binary
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

    fn read(path: &Path, buf: &mut Vec<u8>) -> Result<Residency, ReadFailure> {
        let limits = SizeLimits {
            min: 0,
            max: 1 << 20,
        };
        read_file(path, (0, 0), limits, buf, &mut None)
    }

    #[test]
    fn reads_a_file_whole_into_a_reused_buffer() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let (long, short) = (dir.path().join("long"), dir.path().join("short"));
        let text: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&long, &text)?;
        std::fs::write(&short, b"tiny")?;
        let mut buf = Vec::new();
        // Just written, so in the page cache: the first read takes it all.
        assert_eq!(read(&long, &mut buf), Ok(Residency::Cached));
        assert_eq!(buf, text);
        assert_eq!(read(&short, &mut buf), Ok(Residency::Cached));
        assert_eq!(buf, b"tiny");
        Ok(())
    }

    #[test]
    fn the_cached_read_falls_back_to_a_plain_one_that_reports_the_file_s_error(
    ) -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f");
        std::fs::write(&path, b"cached")?;
        let mut buf = [0u8; 16];
        let n = read_if_cached(&open_nonblocking(&path)?, &mut buf).map(|r| r.ok());
        assert_eq!(n, Some(Some(6)));
        assert_eq!(&buf[..6], b"cached");
        // A directory refuses both reads: what comes back is the plain read's EISDIR.
        let got =
            read_if_cached(&File::open(dir.path())?, &mut buf).map(|r| r.map_err(|e| e.kind()));
        assert_eq!(got, Some(Err(std::io::ErrorKind::IsADirectory)));
        Ok(())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_a_pseudo_file_to_its_end_whatever_size_it_declares() {
        // procfs says 0 bytes; the content is generated as it is read.
        let status = Path::new("/proc/self/status");
        if !status.exists() {
            return;
        }
        let (mut buf, mut meta) = (Vec::new(), None);
        let limits = SizeLimits {
            min: 0,
            max: 1 << 20,
        };
        assert_eq!(std::fs::metadata(status).map(|m| m.len()).ok(), Some(0));
        let got = read_file(status, (0, 0), limits, &mut buf, &mut meta);
        assert_eq!(got, Ok(Residency::Cached));
        assert!(
            buf.starts_with(b"Name:"),
            "{:?}",
            String::from_utf8_lossy(&buf)
        );
        assert_eq!(meta.map(|m| m.size), Some(buf.len() as u64));
        // Still bounded by the size limits, on what is read.
        let small = SizeLimits { min: 0, max: 10 };
        let got = read_file(status, (0, 0), small, &mut buf, &mut None);
        assert_eq!(got, Err(ReadFailure::TooLarge(11)));
        let long = SizeLimits {
            min: 1 << 19,
            max: 1 << 20,
        };
        let got = read_file(status, (0, 0), long, &mut buf, &mut None);
        assert_eq!(got, Err(ReadFailure::TooShort));
        let short = SizeLimits {
            min: 5,
            max: 1 << 20,
        };
        let got = read_file(status, (0, 0), short, &mut buf, &mut None);
        assert_eq!(got, Ok(Residency::Cached));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_regular_file_is_on_no_pseudo_filesystem() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f");
        std::fs::write(&path, b"x")?;
        assert!(!on_pseudo_filesystem(&File::open(&path)?));
        if Path::new("/proc/self/status").exists() {
            assert!(on_pseudo_filesystem(&File::open("/proc/self/status")?));
        }
        Ok(())
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
