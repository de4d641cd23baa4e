//! The index directory as a file descriptor: every file in it is opened, created, renamed and
//! removed relative to that descriptor, never through a path that another user could redirect.
//!
//! An index may live in a directory other users can write to (a group-shared dedup index).
//! Such a user could plant symbolic links where dupfind writes (`lock → ~/.ssh/authorized_keys`,
//! a temp name → any file the runner may write) or FIFOs where it reads. So:
//! - the directory itself is opened with `O_NOFOLLOW | O_DIRECTORY`: a symbolic link named as
//!   the index is refused, and later renames cannot be redirected by swapping a path component;
//! - files are opened with `O_NOFOLLOW | O_NONBLOCK` and must then be regular files, so a link
//!   is an error and a FIFO never blocks;
//! - a temporary file is created with `O_CREAT | O_EXCL` under a fresh name (a planted name is
//!   never opened: the create fails and another name is tried), then renamed into place.
//!
//! Unix only (the raw system calls come from `rustix`).

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::messages::display_path;
use crate::token::fresh_token;

/// An open index directory.
pub struct IndexDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// How many fresh names a temporary file tries before giving up: each attempt fails only when
/// its name exists already, which a planted file of a guessed name could make happen.
const TEMP_ATTEMPTS: u32 = 64;

impl IndexDir {
    /// Opens `path`, which must be a directory and not a symbolic link. `Ok(None)` when it does
    /// not exist.
    pub fn open(path: &Path) -> Result<Option<IndexDir>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rfs::openat(CWD, path, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(IndexDir {
                fd,
                path: path.to_path_buf(),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP) | Err(Errno::NOTDIR) if is_symlink(path) => bail!(
                "{} is a symbolic link; an index directory is never reached through one (give \
                 the directory it points to)",
                display_path(path)
            ),
            Err(Errno::NOTDIR) => bail!("{} is not a directory", display_path(path)),
            Err(e) => Err(std::io::Error::from(e))
                .with_context(|| format!("opening {}", display_path(path))),
        }
    }

    /// Opens `path`, making it (and its parents) first when it does not exist.
    pub fn create(path: &Path) -> Result<IndexDir> {
        if let Some(dir) = IndexDir::open(path)? {
            return Ok(dir);
        }
        std::fs::create_dir_all(path)
            .with_context(|| format!("creating {}", display_path(path)))?;
        IndexDir::open(path)?.with_context(|| format!("{} vanished", display_path(path)))
    }

    /// Another handle on the same open directory.
    pub fn try_clone(&self) -> Result<IndexDir> {
        Ok(IndexDir {
            fd: self
                .fd
                .try_clone()
                .with_context(|| format!("opening {}", display_path(&self.path)))?,
            path: self.path.clone(),
        })
    }

    /// The directory's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` inside the directory, for messages.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens `name` for reading. `Ok(None)` when it does not exist; an error when it is a
    /// symbolic link or anything but a regular file (a FIFO is never waited on).
    pub fn open_file(&self, name: &str) -> Result<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match rfs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(self.regular(fd, name)?)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(self.refusal(e, name)),
        }
    }

    /// Takes the writer's lock on `name` (made when missing), held until the returned file is
    /// closed. A second writer gets a clear error rather than waiting.
    pub fn lock(&self, name: &str) -> Result<File> {
        self.try_lock(name)?.with_context(|| {
            format!(
                "index {} is being updated by another process",
                display_path(&self.path)
            )
        })
    }

    /// The writer's lock on `name` when no other process holds it; `Ok(None)` when one does.
    pub fn try_lock(&self, name: &str) -> Result<Option<File>> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::from_bits_truncate(0o666))
            .map_err(|e| self.refusal(e, name))?;
        let file = self.regular(fd, name)?;
        match rfs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(file)),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(std::io::Error::from(e))
                .with_context(|| format!("locking {}", display_path(&self.join(name)))),
        }
    }

    /// Creates a new, empty file named `{stem}.{random}.tmp` that did not exist before, with the
    /// permissions [`new_file_mode`] gives for `like`, the mode of the file it joins (the
    /// manifest's), less the umask.
    pub fn create_temp(&self, stem: &str, like: Option<u32>) -> Result<(String, File)> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // Given at the create, so that the kernel takes the umask away and the file is never
        // more open than it ends, not even for a moment (a chmod after the create would leave
        // a window in which another user could open it and keep the descriptor).
        let mode = Mode::from_bits_truncate(new_file_mode(like));
        for _ in 0..TEMP_ATTEMPTS {
            let name = format!("{stem}.{:016x}.tmp", fresh_token());
            match rfs::openat(&self.fd, name.as_str(), flags, mode) {
                Ok(fd) => return Ok((name, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => {
                    return Err(std::io::Error::from(e))
                        .with_context(|| format!("creating {}", display_path(&self.join(&name))))
                }
            }
        }
        bail!(
            "cannot create a temporary file in {}: {TEMP_ATTEMPTS} fresh names were all taken",
            display_path(&self.path)
        )
    }

    /// Renames `from` to `to` within the directory, replacing `to` (the commit point).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        rfs::renameat(&self.fd, from, &self.fd, to).map_err(|e| {
            anyhow::Error::new(std::io::Error::from(e)).context(format!(
                "renaming {} to {}",
                display_path(&self.join(from)),
                display_path(&self.join(to))
            ))
        })
    }

    /// Removes `name` (a symbolic link is removed itself, never its target).
    pub fn remove(&self, name: &str) -> Result<()> {
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(std::io::Error::from(e))
                .with_context(|| format!("removing {}", display_path(&self.join(name)))),
        }
    }

    /// What `name` is, not following a symbolic link; `Ok(None)` when nothing has that name.
    pub fn kind(&self, name: &str) -> Result<Option<FileType>> {
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(std::io::Error::from(e))
                .with_context(|| format!("reading {}", display_path(&self.join(name)))),
        }
    }

    /// Makes the directory's entries (a rename) durable.
    pub fn sync(&self) -> Result<()> {
        rfs::fsync(&self.fd)
            .map_err(std::io::Error::from)
            .with_context(|| format!("syncing {}", display_path(&self.path)))
    }

    /// The names in the directory, `.` and `..` left out.
    pub fn names(&self) -> Result<Vec<OsString>> {
        let io = || format!("reading {}", display_path(&self.path));
        let dir = rfs::Dir::read_from(&self.fd)
            .map_err(std::io::Error::from)
            .with_context(io)?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(std::io::Error::from).with_context(io)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        }
        Ok(names)
    }

    /// `fd` as a file when it is a regular file; an error naming what it is otherwise.
    fn regular(&self, fd: OwnedFd, name: &str) -> Result<File> {
        let stat = rfs::fstat(&fd)
            .map_err(std::io::Error::from)
            .with_context(|| format!("reading {}", display_path(&self.join(name))))?;
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind != FileType::RegularFile {
            bail!(
                "{} is not a regular file (it is {}); refusing to use it",
                display_path(&self.join(name)),
                describe(kind)
            );
        }
        // The descriptor was opened non-blocking so that a FIFO could not block the open; on a
        // regular file the flag changes nothing.
        Ok(File::from(fd))
    }

    fn refusal(&self, e: Errno, name: &str) -> anyhow::Error {
        let path = self.join(name);
        if e == Errno::LOOP {
            return anyhow::anyhow!(
                "{} is a symbolic link; refusing to follow it (another user may have planted \
                 it)",
                display_path(&path)
            );
        }
        if e == Errno::NXIO {
            // Opening a FIFO without a reader for writing, without blocking, fails this way.
            let kind = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_or("not a regular file", |st| {
                    describe(FileType::from_raw_mode(st.st_mode))
                });
            return anyhow::anyhow!(
                "{} is not a regular file (it is {kind}); refusing to use it",
                display_path(&path)
            );
        }
        anyhow::Error::new(std::io::Error::from(e))
            .context(format!("opening {}", display_path(&path)))
    }
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// What a kind of file is called in messages.
pub fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        _ => "not a regular file",
    }
}

/// The permissions of a new index file whose index already has a file of mode `like` (its
/// manifest, or format 1's `index.dfx`); the kernel then takes the writer's umask away.
///
/// Only `like`'s read and write bits carry over, so that an index made private stays private
/// whatever the umask of the run that updates it. Never a setuid, setgid, sticky or execute bit:
/// in a group-writable directory another user can replace the manifest with a copy of her own
/// of any mode, and the writer's new files, which it owns, must not take such bits from it.
/// The owner's read and write bits are always given, so that such a copy cannot make an index
/// its own writer cannot read back. Without `like` (a new index): 0666, as for any new file.
pub fn new_file_mode(like: Option<u32>) -> u32 {
    like.map_or(0o666, |m| (m & 0o666) | 0o600)
}

/// Bytes read at a time to take a file's checksum.
const SUM_BUFFER: usize = 1 << 20;

/// The xxh3-64 of a whole file of `len` bytes, read a block at a time.
pub fn sum_file(file: &File, len: u64) -> std::io::Result<u64> {
    sum_range(file, 0, len)
}

/// The xxh3-64 of `len` bytes of `file` from `at`, read a block at a time.
pub fn sum_range(file: &File, at: u64, len: u64) -> std::io::Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0u8; SUM_BUFFER.min(len as usize)];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(SUM_BUFFER as u64) as usize;
        file.read_exact_at(&mut buf[..n], at + done)?;
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h.digest())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn refuses_a_symlinked_directory_and_symlinked_files() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        symlink(&real, t.path().join("link")).unwrap();
        let e = IndexDir::open(&t.path().join("link")).err().unwrap();
        assert!(format!("{e:#}").contains("is a symbolic link"), "{e:#}");
        assert!(IndexDir::open(&t.path().join("missing")).unwrap().is_none());

        let dir = IndexDir::open(&real).unwrap().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        symlink(&victim, real.join("lock")).unwrap();
        symlink(&victim, real.join("data")).unwrap();
        let e = dir.lock("lock").err().unwrap();
        assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        let e = dir.open_file("data").err().unwrap();
        assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("data");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_bits_truncate(0o600)).unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        let e = dir.open_file("data").err().unwrap();
        assert!(format!("{e:#}").contains("a FIFO"), "{e:#}");
        let e = dir.lock("data").err().unwrap();
        assert!(format!("{e:#}").contains("a FIFO"), "{e:#}");
    }

    #[test]
    fn new_files_take_only_read_and_write_bits_from_the_manifest() {
        assert_eq!(new_file_mode(None), 0o666);
        for (like, want) in [
            (0o100600, 0o600),
            (0o640, 0o640),
            (0o660, 0o660),
            (0o664, 0o664),
            // A manifest planted with setuid, setgid, sticky and execute bits.
            (0o6777, 0o666),
            (0o4755, 0o644),
            (0o2750, 0o640),
            (0o1600, 0o600),
            // Nor can it make the new files unreadable to their own writer.
            (0o044, 0o644),
            (0, 0o600),
        ] {
            assert_eq!(new_file_mode(Some(like)), want, "{like:o}");
        }
    }

    /// The umask of this process, as the kernel reports it (no umask(2) round trip, which
    /// would race with the other tests' threads).
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
    }

    #[test]
    fn a_setuid_manifest_gives_new_files_no_special_bits_and_the_umask_applies() {
        let t = tempfile::tempdir().unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        for like in [0o6777, 0o4777, 0o1666] {
            let (name, _) = dir.create_temp("manifest", Some(like)).unwrap();
            let mode = std::fs::metadata(dir.join(&name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o7777, 0o666 & !umask(), "{like:o}");
        }
    }

    #[test]
    fn temporaries_are_fresh_and_keep_a_given_mode() {
        let t = tempfile::tempdir().unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        let (a, mut fa) = dir.create_temp("data", Some(0o600)).unwrap();
        let (b, _) = dir.create_temp("data", None).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("data.") && a.ends_with(".tmp"), "{a}");
        fa.write_all(b"x").unwrap();
        let mode = std::fs::metadata(dir.join(&a))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        dir.rename(&a, "data").unwrap();
        let mut s = String::new();
        dir.open_file("data")
            .unwrap()
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "x");
        dir.remove(&b).unwrap();
        dir.sync().unwrap();
        let mut names = dir.names().unwrap();
        names.sort();
        assert_eq!(names, [OsString::from("data")]);
    }
}
