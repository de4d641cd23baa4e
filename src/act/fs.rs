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
use xxhash_rust::xxh3::Xxh3Default;

use crate::input::decompress::{open_stream, sniff, Compression};
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
    /// The index of its directory root in the report's `roots`; None when it is its own root.
    pub root: Option<usize>,
}

/// Why a name cannot be acted on, in words for a warning.
pub type Why = String;

/// Why a name could not be reached or read as the report describes it.
#[derive(Debug)]
pub enum Fault {
    /// It, or a directory on its path, no longer exists.
    Gone,
    /// Its path leads out of its root: through a symbolic link, or `..`.
    OutOfRoot(&'static str),
    /// It is there but not as the report describes it.
    Changed(Why),
    /// It could not be looked at (permission denied, an I/O error).
    Io(Why),
}

fn reason(e: Errno) -> Why {
    crate::messages::io_reason(&std::io::Error::from(e))
}

fn fault(e: Errno) -> Fault {
    match e {
        Errno::NOENT => Fault::Gone,
        Errno::NOTDIR => Fault::Changed("a directory on its path is no longer one".into()),
        e => Fault::Io(reason(e)),
    }
}

/// Reaches `path` beneath its root ([`super::dest::locate`]).
pub fn place(roots: &[PathBuf], path: &Path) -> Result<Place, Fault> {
    let at = super::dest::locate(roots, path).ok_or_else(|| Fault::Io("names no file".into()))?;
    let name = at
        .below
        .file_name()
        .ok_or_else(|| Fault::Io("names no file".into()))?
        .to_os_string();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(CWD, at.top, flags, Mode::empty()).map_err(fault)?;
    if let Some(sub) = at.below.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir = beneath(&dir, sub)?;
    }
    Ok(Place {
        dir,
        name,
        below_root: at.below.to_path_buf(),
        root: at.root,
    })
}

/// Opens the directory `sub` below `dir` without leaving `dir`; `sub` goes down only.
fn beneath(dir: &OwnedFd, sub: &Path) -> Result<OwnedFd, Fault> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let out_of_root = Fault::OutOfRoot("through a symbolic link");
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, sub, flags, Mode::empty(), resolve) {
        Ok(fd) => return Ok(fd),
        Err(Errno::XDEV) => return Err(out_of_root),
        Err(Errno::NOSYS) => {}
        Err(e) => return Err(fault(e)),
    }
    let mut at: Option<OwnedFd> = None;
    for c in sub.components() {
        let Component::Normal(part) = c else {
            return Err(Fault::OutOfRoot("through `..`"));
        };
        let from = at.as_ref().unwrap_or(dir);
        at = Some(
            rustix::fs::openat(from, part, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(
                |e| match e {
                    Errno::LOOP | Errno::NOTDIR => Fault::OutOfRoot("through a symbolic link"),
                    e => fault(e),
                },
            )?,
        );
    }
    at.ok_or(Fault::Gone)
}

/// The name's status, its link not followed.
pub fn stat(p: &Place) -> Result<Stat, Fault> {
    rustix::fs::statat(&p.dir, &p.name, AtFlags::SYMLINK_NOFOLLOW).map_err(fault)
}

/// The status of the file the name is a symbolic link to, when it is one (`scan -L` lists a
/// followed link to a file it read as another name of that file).
pub fn symlink_target(p: &Place) -> Option<Stat> {
    let st = stat(p).ok()?;
    let link = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink;
    link.then(|| rustix::fs::statat(&p.dir, &p.name, AtFlags::empty()).ok())?
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
        return Some("was replaced since the scan (another inode)".into());
    }
    if st.st_size as u64 != f.size {
        return Some(format!(
            "changed size since the scan: {}, {} when scanned",
            crate::messages::count(st.st_size as u64, "byte"),
            f.size
        ));
    }
    let mtime = (st.st_mtime as i64, st.st_mtime_nsec as u32);
    if f.modified_secs
        .zip(f.modified_nanos)
        .is_some_and(|m| m != mtime)
    {
        return Some("was modified since the scan (another modification time)".into());
    }
    if st.st_nlink as u64 != u64::from(f.links) {
        return Some(format!(
            "has {}, {} when scanned: a hard link was made or removed since",
            crate::messages::count(st.st_nlink as u64, "name"),
            f.links
        ));
    }
    None
}

/// Bytes read at a time when a file is hashed, copied or compared: a member of any size is
/// checked, moved and linked in this much memory (and a decoder's window), not its size.
const CHUNK: usize = 1 << 20;

/// A file's hashes (XXH3-128): of its content as the scan hashed it (decompressed when
/// compressed) and of its bytes as stored (the same for a file that is not compressed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashes {
    /// Of its content: the report's `content_hash`.
    pub content: u128,
    /// Of its bytes as stored: what a copy of it must have.
    pub stored: u128,
}

/// Opens the name for reading, its link not followed, and checks it is still inode `expect`.
fn open_checked(p: &Place, expect: (u64, u64)) -> Result<std::fs::File, Fault> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(&p.dir, &p.name, flags | OFlags::NONBLOCK, Mode::empty())
        .map_err(fault)?;
    if id(&rustix::fs::fstat(&fd).map_err(fault)?) != expect {
        return Err(Fault::Changed(
            "was replaced since the scan (another inode)".into(),
        ));
    }
    Ok(std::fs::File::from(fd))
}

/// Reads `from` into `buf` until it is full or the end: fewer bytes than `buf` holds only at
/// the end, so that two files can be compared chunk by chunk.
fn fill(from: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match from.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Feeds everything `from` gives to `each`, [`CHUNK`] bytes at a time; the number of bytes.
fn stream(
    from: &mut dyn Read,
    mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0;
    loop {
        let n = fill(from, &mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        each(&buf[..n])?;
        total += n as u64;
    }
}

/// The file's hashes, read in [`CHUNK`]s: its content as the scan hashed it (what a compressed
/// file decompresses to, read up to `bytes`, the size the report gives it) and its bytes.
pub fn read(p: &Place, expect: (u64, u64), bytes: u64) -> Result<Hashes, Fault> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_checked(p, expect)?;
    let io = |e: std::io::Error| Fault::Io(crate::messages::io_reason(&e));
    let mut head = Vec::with_capacity(4);
    let mut stored = Xxh3Default::new();
    stream(&mut file, |chunk| {
        let want = 4 - head.len().min(4);
        head.extend_from_slice(&chunk[..want.min(chunk.len())]);
        stored.update(chunk);
        Ok(())
    })
    .map_err(io)?;
    let stored = stored.digest128();
    if sniff(&head) == Compression::None {
        return Ok(Hashes {
            content: stored,
            stored,
        });
    }
    // Compressed: read again through the decoder, which holds its window, not the content.
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let (_, decoded) = open_stream(file).map_err(io)?;
    let mut content = Xxh3Default::new();
    let total = stream(&mut decoded.take(bytes.saturating_add(1)), |chunk| {
        content.update(chunk);
        Ok(())
    })
    .map_err(io)?;
    if total > bytes {
        return Err(Fault::Changed(
            "was modified since the scan (it decompresses to more)".into(),
        ));
    }
    Ok(Hashes {
        content: content.digest128(),
        stored,
    })
}

/// True when the files at `a` (inode `a_id`) and `b` (inode `b_id`) hold the same bytes,
/// compared [`CHUNK`] by [`CHUNK`].
pub fn same_bytes(a: &Place, a_id: (u64, u64), b: &Place, b_id: (u64, u64)) -> Result<bool, Why> {
    let mut fa = open_checked(a, a_id).map_err(just_now)?;
    let mut fb = open_checked(b, b_id).map_err(just_now)?;
    let (mut ba, mut bb) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let io = |e: std::io::Error| crate::messages::io_reason(&e);
    loop {
        let na = fill(&mut fa, &mut ba).map_err(io)?;
        let nb = fill(&mut fb, &mut bb).map_err(io)?;
        if ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

/// Checks that the name still leads to inode `expect`, right before it is acted on.
fn still(p: &Place, expect: (u64, u64)) -> Result<(), Why> {
    match stat(p) {
        Ok(st) if id(&st) == expect => Ok(()),
        Ok(_) => Err("it was replaced just now (another inode)".into()),
        Err(f) => Err(just_now(f)),
    }
}

/// A fault met right before acting, in words.
fn just_now(f: Fault) -> Why {
    match f {
        Fault::Gone => "it is gone just now".into(),
        Fault::Changed(why) | Fault::Io(why) => why,
        Fault::OutOfRoot(how) => format!("it leads out of its root {how}"),
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
fn exists(to: &Path) -> bool {
    std::fs::symlink_metadata(to).is_ok()
}

/// Why a name is not moved to `to`, which exists, and what to do.
fn taken(to: &Path) -> Why {
    format!(
        "{} exists: not overwritten (move it away, or choose another --to)",
        crate::messages::display_path(to)
    )
}

/// One step of moving a file, as the shell command that does the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Name `i` renamed to its destination (or, for a file of one name on another file system,
    /// copied there and removed): `mv -n`.
    Move(usize),
    /// Name `i`'s content copied to its destination on another file system: `cp -p -n`.
    Copy(usize),
    /// Destination `i` made a hard link to destination `from`, the copy: `ln`.
    Link { from: usize, to: usize },
    /// Name `i` removed once every name was in place: `rm`.
    Remove(usize),
}

/// Moves every name of one file (`places`, all inode `expect`, whose bytes hash to `stored`) to its
/// destination in `dests`, never over an existing file; the steps taken go to `steps`, also
/// when it fails midway. With `dry_run`, the steps it would take.
///
/// On one file system each name is renamed. To another, the file is copied once and its other
/// names made hard links to the copy, so that they stay one file there as here; the names here
/// are removed only once all are in place, and a failure before then removes what was made
/// there. Every destination is looked at first, so that one that exists leaves the whole file
/// where it is rather than its names split between here and there.
pub fn move_file(
    places: &[Place],
    expect: (u64, u64),
    dests: &[PathBuf],
    stored: u128,
    dry_run: bool,
    steps: &mut Vec<Step>,
) -> Result<(), Why> {
    if let Some(d) = dests.iter().find(|d| exists(d)) {
        return Err(taken(d));
    }
    if dry_run {
        for (i, d) in dests.iter().enumerate() {
            let here = mount(&places[i].dir, &places[i].name, AtFlags::SYMLINK_NOFOLLOW);
            let same_fs = here.is_some() && nearest_mount(d) == here;
            steps.push(placed(steps, i, same_fs));
        }
    } else {
        let mut made = Vec::new();
        if let Err(why) = place_all(places, expect, dests, stored, steps, &mut made) {
            undo(&made, steps);
            return Err(why);
        }
    }
    let copied: Vec<usize> = (steps.iter())
        .filter_map(|s| match *s {
            Step::Copy(i) | Step::Link { to: i, .. } => Some(i),
            _ => None,
        })
        .collect();
    for i in copied {
        if !dry_run {
            still(&places[i], expect)?;
            rustix::fs::unlinkat(&places[i].dir, &places[i].name, AtFlags::empty())
                .map_err(reason)?;
        }
        steps.push(Step::Remove(i));
    }
    Ok(())
}

/// The step that puts name `i` in place: a rename on one file system; to another, a link to
/// the copy already made there, or else the copy.
fn placed(steps: &[Step], i: usize, same_fs: bool) -> Step {
    let copy = steps.iter().find_map(|s| match *s {
        Step::Copy(j) => Some(j),
        _ => None,
    });
    match (same_fs, copy) {
        (true, _) => Step::Move(i),
        (false, Some(from)) => Step::Link { from, to: i },
        (false, None) => Step::Copy(i),
    }
}

/// The mount a file is on (its id, Linux 5.8+; else its device): a rename reaches only the same
/// mount. A bind mount is another mount of the same device, and renaming across it fails with
/// EXDEV, so `--dry-run` tells a rename from a copy by the mount, not the device.
#[derive(Debug, PartialEq, Eq)]
enum Mount {
    Id(u64),
    Device(u64),
}

fn mount(
    dir: impl std::os::fd::AsFd,
    name: impl rustix::path::Arg,
    flags: AtFlags,
) -> Option<Mount> {
    use rustix::fs::StatxFlags;
    let st = rustix::fs::statx(dir, name, flags, StatxFlags::MNT_ID).ok()?;
    Some(if st.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
        Mount::Id(st.stx_mnt_id)
    } else {
        Mount::Device(rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor))
    })
}

/// The mount of `path`'s nearest existing directory: where it would be made.
fn nearest_mount(path: &Path) -> Option<Mount> {
    (path.ancestors().skip(1))
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find_map(|a| mount(CWD, a, AtFlags::empty()))
}

/// Puts each name at its destination, renamed or (across file systems) copied or linked; the
/// destinations made by a copy or a link go to `made`.
fn place_all(
    places: &[Place],
    expect: (u64, u64),
    dests: &[PathBuf],
    stored: u128,
    steps: &mut Vec<Step>,
    made: &mut Vec<(OwnedFd, OsString)>,
) -> Result<(), Why> {
    for (i, (p, to)) in places.iter().zip(dests).enumerate() {
        let (dir, name) = destination(to)?;
        still(p, expect)?;
        let renamed = rename_noreplace(p, &dir, &name);
        let step = match renamed {
            Ok(()) => Step::Move(i),
            Err(Errno::XDEV) => {
                let step = match (placed(steps, i, false), made.first()) {
                    // The copy is the first destination made.
                    (link @ Step::Link { .. }, Some((from_dir, from_name))) => {
                        rustix::fs::linkat(from_dir, from_name, &dir, &name, AtFlags::empty())
                            .map_err(|e| match e {
                                Errno::EXIST => taken(to),
                                e => reason(e),
                            })?;
                        link
                    }
                    _ => {
                        copy_to(p, expect, &dir, &name, stored)
                            .map_err(|e| e.unwrap_or_else(|| taken(to)))?;
                        Step::Copy(i)
                    }
                };
                made.push((dir, name));
                step
            }
            Err(Errno::EXIST) => return Err(taken(to)),
            Err(e) => return Err(reason(e)),
        };
        steps.push(step);
    }
    Ok(())
}

/// Removes the destinations a failed move made, and their steps: the names here were not
/// touched.
fn undo(made: &[(OwnedFd, OsString)], steps: &mut Vec<Step>) {
    for (dir, name) in made {
        // Best effort: each was created by this move, exclusively.
        let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
    }
    steps.retain(|s| matches!(s, Step::Move(_)));
}

/// Renames the name to `name` in `dir` unless something is there.
fn rename_noreplace(p: &Place, dir: &OwnedFd, name: &OsString) -> Result<(), Errno> {
    match rustix::fs::renameat_with(&p.dir, &p.name, dir, name, RenameFlags::NOREPLACE) {
        // A file system without RENAME_NOREPLACE: a hard link is as exclusive.
        Err(Errno::INVAL | Errno::NOSYS) => {
            rustix::fs::linkat(&p.dir, &p.name, dir, name, AtFlags::empty())?;
            rustix::fs::unlinkat(&p.dir, &p.name, AtFlags::empty())
        }
        r => r,
    }
}

/// Copies the name's bytes to a file created exclusively as `name` in `dir`, with the name's
/// permissions and times; Err(None) when `name` exists. The bytes are streamed in [`CHUNK`]s and
/// must hash to `stored`, as checked: a file written to since is not copied.
///
/// The bytes are written to a file with no name (`O_TMPFILE`; where the file system has none, a
/// hidden `.NAME.dupfind-partial`) and linked as `name` only once complete, so that a move killed
/// midway (Ctrl-C) never leaves part of a file under the name a second move would refuse to
/// overwrite.
fn copy_to(
    p: &Place,
    expect: (u64, u64),
    dir: &OwnedFd,
    name: &OsString,
    stored: u128,
) -> Result<(), Option<Why>> {
    let st = rustix::fs::statat(&p.dir, &p.name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| Some(reason(e)))?;
    // Its read, write and execute bits, as `mv` keeps them; never set-id or sticky.
    let mode = Mode::from_bits_truncate(st.st_mode & 0o777);
    let (fd, partial) = unnamed(dir, name, mode).map_err(|e| Some(reason(e)))?;
    let mut f = std::fs::File::from(fd);
    let io = |e: std::io::Error| Some(crate::messages::io_reason(&e));
    let written = (|| {
        rustix::fs::fchmod(&f, mode).map_err(|e| Some(reason(e)))?;
        let mut from = open_checked(p, expect).map_err(|f| Some(just_now(f)))?;
        let mut copied = Xxh3Default::new();
        stream(&mut from, |chunk| {
            copied.update(chunk);
            std::io::Write::write_all(&mut f, chunk)
        })
        .map_err(io)?;
        if copied.digest128() != stored {
            return Err(Some("it was written to just now: not copied".into()));
        }
        // Its times, as `mv` keeps them: `--keep oldest` reads the modification time, so a file
        // moved back from the attic must still be as old as it was.
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
        f.sync_all().map_err(io)
    })();
    let linked = written.and_then(|()| {
        let made = match &partial {
            Some(tmp) => rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty()),
            None => {
                use std::os::fd::AsRawFd;
                let own = format!("/proc/self/fd/{}", f.as_raw_fd());
                rustix::fs::linkat(CWD, own.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
            }
        };
        made.map_err(|e| match e {
            Errno::EXIST => None,
            e => Some(reason(e)),
        })
    });
    if let Some(tmp) = &partial {
        // Best effort: linked as `name` or not, the hidden name goes.
        let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
    }
    linked
}

/// A new file in `dir` for the copy that becomes `name`: with no name where the file system
/// allows (and /proc, through which it is linked, is there), else a hidden one, which a
/// killed move leaves behind but never under `name`.
fn unnamed(
    dir: &OwnedFd,
    name: &OsString,
    mode: Mode,
) -> Result<(OwnedFd, Option<OsString>), Errno> {
    if Path::new("/proc/self/fd").is_dir() {
        let flags = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, ".", flags, mode) {
            Ok(fd) => return Ok((fd, None)),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
    }
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(".dupfind-partial");
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, &tmp, flags, mode) {
        // Left by a move killed before: nothing else makes this name.
        Err(Errno::EXIST) => {
            rustix::fs::unlinkat(dir, &tmp, AtFlags::empty())?;
            rustix::fs::openat(dir, &tmp, flags, mode).map(|fd| (fd, Some(tmp)))
        }
        r => r.map(|fd| (fd, Some(tmp))),
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
                return Err("its representative was replaced just now".to_string());
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
