//! The file system side of acting on a report: each name opened beneath its root (never through
//! a symbolic link that leads out of it), checked against the report, and removed, moved or
//! replaced by a hard link through the directory handle it was checked in.
//!
//! A name is reached as the scan reached it: its root opened as given (the scan followed a link
//! there too), then the directories below it with `openat2(RESOLVE_BENEATH)`, so that a link
//! made since the scan to a directory elsewhere is refused rather than followed; on a kernel
//! before 5.6, one directory at a time with `O_NOFOLLOW`, refusing every link. The file itself is
//! never followed: it is looked at with `AT_SYMLINK_NOFOLLOW` and opened with `O_NOFOLLOW`.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, ResolveFlags, Stat, CWD};
use rustix::io::Errno;
use xxhash_rust::xxh3::xxh3_128;

use crate::input::decompress::{open_stream, read_limited, sniff, Compression};
use crate::report::FileOut;

/// A name, reached beneath its root: its directory, opened, and its last component.
pub struct Place {
    /// The directory the name is in.
    pub dir: OwnedFd,
    /// The name in it.
    pub name: OsString,
    /// The name's path below its root (its file name alone when it is its own root: a file
    /// named on the command line or listed by `--files-from`).
    pub below_root: PathBuf,
}

/// Why a name cannot be acted on, in words for a warning.
pub type Why = String;

fn reason(e: Errno) -> Why {
    crate::messages::io_reason(&std::io::Error::from(e))
}

/// Reaches `path` beneath the longest of `roots` that holds it.
pub fn place(roots: &[PathBuf], path: &Path) -> Result<Place, Why> {
    let root = (roots.iter())
        .filter(|r| {
            path.starts_with(r)
                && path
                    .strip_prefix(r)
                    .is_ok_and(|p| !p.as_os_str().is_empty())
        })
        .max_by_key(|r| r.components().count());
    let (top, below) = match root {
        Some(r) => (
            r.as_path(),
            path.strip_prefix(r).map_err(|e| e.to_string())?,
        ),
        None => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            let name = path.file_name().ok_or("names no file")?;
            (parent.unwrap_or(Path::new(".")), Path::new(name))
        }
    };
    let name = below.file_name().ok_or("names no file")?.to_os_string();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(CWD, top, flags, Mode::empty()).map_err(reason)?;
    if let Some(sub) = below.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir = beneath(&dir, sub)?;
    }
    Ok(Place {
        dir,
        name,
        below_root: below.to_path_buf(),
    })
}

/// Opens the directory `sub` below `dir` without leaving `dir`.
fn beneath(dir: &OwnedFd, sub: &Path) -> Result<OwnedFd, Why> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let out_of_root = || "leads out of its root through a symbolic link: not followed".to_string();
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, sub, flags, Mode::empty(), resolve) {
        Ok(fd) => return Ok(fd),
        Err(Errno::XDEV) => return Err(out_of_root()),
        Err(Errno::NOSYS) => {}
        Err(e) => return Err(reason(e)),
    }
    let mut at: Option<OwnedFd> = None;
    for c in sub.components() {
        let Component::Normal(part) = c else {
            return Err(out_of_root());
        };
        let from = at.as_ref().unwrap_or(dir);
        at = Some(
            rustix::fs::openat(from, part, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(
                |e| match e {
                    Errno::LOOP | Errno::NOTDIR => out_of_root(),
                    e => reason(e),
                },
            )?,
        );
    }
    at.ok_or_else(out_of_root)
}

/// The name's status, its link not followed.
pub fn stat(p: &Place) -> Result<Stat, Why> {
    rustix::fs::statat(&p.dir, &p.name, AtFlags::SYMLINK_NOFOLLOW).map_err(reason)
}

/// The (device, inode) of a status.
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
pub fn id(st: &Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// How the name's status differs from the file the report describes, if it does.
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
pub fn differs(st: &Stat, f: &FileOut) -> Option<Why> {
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Some("is no longer a regular file".into());
    }
    if id(st) != (f.device, f.inode) {
        return Some("was replaced (another inode)".into());
    }
    if st.st_size as u64 != f.size {
        return Some(format!("is {} bytes, {} when scanned", st.st_size, f.size));
    }
    let mtime = (st.st_mtime as i64, st.st_mtime_nsec as u32);
    if f.modified_secs
        .zip(f.modified_nanos)
        .is_some_and(|m| m != mtime)
    {
        return Some("was modified".into());
    }
    if st.st_nlink as u64 != u64::from(f.links) {
        return Some(format!(
            "has {} names, {} when scanned: hard-linked or unlinked",
            st.st_nlink, f.links
        ));
    }
    None
}

/// The file's bytes as stored, and the hash of its content as the scan hashed it (what a
/// compressed file decompresses to, read up to `bytes`, the size the report gives it).
pub fn read(p: &Place, expect: (u64, u64), bytes: u64) -> Result<(Vec<u8>, u128), Why> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(&p.dir, &p.name, flags | OFlags::NONBLOCK, Mode::empty())
        .map_err(reason)?;
    if id(&rustix::fs::fstat(&fd).map_err(reason)?) != expect {
        return Err("was replaced (another inode)".into());
    }
    let mut raw = Vec::new();
    std::fs::File::from(fd)
        .read_to_end(&mut raw)
        .map_err(|e| crate::messages::io_reason(&e))?;
    if sniff(&raw[..raw.len().min(4)]) == Compression::None {
        let hash = xxh3_128(&raw);
        return Ok((raw, hash));
    }
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    let (_, mut stream) = open_stream(std::io::Cursor::new(raw.clone())).map_err(io)?;
    let mut content = Vec::new();
    if !read_limited(&mut stream, bytes, &mut content).map_err(io)? {
        return Err("was modified (decompresses to more than when scanned)".into());
    }
    Ok((raw, xxh3_128(&content)))
}

/// Checks that the name still leads to inode `expect`, right before it is acted on.
fn still(p: &Place, expect: (u64, u64)) -> Result<(), Why> {
    match stat(p) {
        Ok(st) if id(&st) == expect => Ok(()),
        Ok(_) => Err("was replaced (another inode)".into()),
        Err(e) => Err(e),
    }
}

/// Removes the name.
pub fn remove(p: &Place, expect: (u64, u64)) -> Result<(), Why> {
    still(p, expect)?;
    rustix::fs::unlinkat(&p.dir, &p.name, AtFlags::empty()).map_err(reason)
}

/// The directory `to` is in, created when missing, and its file name.
pub fn destination(to: &Path) -> Result<(OwnedFd, OsString), Why> {
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| crate::messages::io_reason(&e))?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::openat(CWD, parent, flags, Mode::empty()).map_err(reason)?;
    let name = to.file_name().ok_or("names no file")?.to_os_string();
    Ok((dir, name))
}

/// True when `to` exists (as anything, a dangling link too).
pub fn exists(to: &Path) -> bool {
    std::fs::symlink_metadata(to).is_ok()
}

/// Moves the name to `to`, never over an existing file: a rename that refuses to replace, or
/// across file systems a copy created exclusively (`raw`, the bytes checked) and the name then
/// removed.
pub fn move_to(p: &Place, expect: (u64, u64), to: &Path, raw: &[u8]) -> Result<(), Why> {
    let exists = || "exists: not overwritten".to_string();
    let (dir, name) = destination(to)?;
    still(p, expect)?;
    let renamed = rustix::fs::renameat_with(&p.dir, &p.name, &dir, &name, RenameFlags::NOREPLACE);
    match renamed {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(exists()),
        // A file system without RENAME_NOREPLACE: a hard link is as exclusive.
        Err(Errno::INVAL | Errno::NOSYS) => {
            match rustix::fs::linkat(&p.dir, &p.name, &dir, &name, AtFlags::empty()) {
                Ok(()) => rustix::fs::unlinkat(&p.dir, &p.name, AtFlags::empty()).map_err(reason),
                Err(Errno::EXIST) => Err(exists()),
                Err(e) => Err(reason(e)),
            }
        }
        Err(Errno::XDEV) => {
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
            let st = stat(p)?;
            // Its read, write and execute bits (less the umask); never set-id or sticky.
            let mode = Mode::from_bits_truncate(st.st_mode & 0o777);
            let fd = match rustix::fs::openat(&dir, &name, flags, mode) {
                Ok(fd) => fd,
                Err(Errno::EXIST) => return Err(exists()),
                Err(e) => return Err(reason(e)),
            };
            let mut f = std::fs::File::from(fd);
            let io = |e: std::io::Error| crate::messages::io_reason(&e);
            std::io::Write::write_all(&mut f, raw).map_err(io)?;
            // Its times, as `mv` keeps them: `--keep oldest` reads the modification time, so a
            // file moved back from the attic must still be as old as it was.
            let time = |secs: i64, nanos: i64| {
                let since = std::time::Duration::new(secs.unsigned_abs(), nanos as u32);
                if secs >= 0 {
                    std::time::UNIX_EPOCH.checked_add(since)
                } else {
                    std::time::UNIX_EPOCH.checked_sub(since)
                }
            };
            let mut times = std::fs::FileTimes::new();
            if let Some(t) = time(st.st_mtime, st.st_mtime_nsec as i64) {
                times = times.set_modified(t);
            }
            if let Some(t) = time(st.st_atime, st.st_atime_nsec as i64) {
                times = times.set_accessed(t);
            }
            f.set_times(times).map_err(io)?;
            f.sync_all().map_err(io)?;
            still(p, expect)?;
            rustix::fs::unlinkat(&p.dir, &p.name, AtFlags::empty()).map_err(reason)
        }
        Err(e) => Err(reason(e)),
    }
}

/// Replaces the name by a hard link to `target` (inode `target_id`): linked under a temporary
/// name in the same directory, then renamed over it, so the name always leads to one of the
/// two files.
pub fn link_to(
    p: &Place,
    expect: (u64, u64),
    target: &Place,
    target_id: (u64, u64),
) -> Result<(), Why> {
    let mut tmp = OsString::from(".");
    tmp.push(&p.name);
    tmp.push(format!(".dupfind-{:016x}.tmp", crate::token::fresh_token()));
    rustix::fs::linkat(&target.dir, &target.name, &p.dir, &tmp, AtFlags::empty())
        .map_err(reason)?;
    let swapped = rustix::fs::statat(&p.dir, &tmp, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(reason)
        .and_then(|st| {
            if id(&st) != target_id {
                return Err("the representative was replaced".to_string());
            }
            still(p, expect)?;
            rustix::fs::renameat(&p.dir, &tmp, &p.dir, &p.name).map_err(reason)
        });
    if swapped.is_err() {
        // Best effort: the name itself was not touched.
        let _ = rustix::fs::unlinkat(&p.dir, &tmp, AtFlags::empty());
    }
    swapped
}
