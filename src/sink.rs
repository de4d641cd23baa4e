//! Where the report goes: standard output, or `-o FILE` written atomically; and the files the
//! run writes to, which are never scanned.
//!
//! `-o FILE` is checked before the scan (its directory exists and is writable, it is not a
//! directory), so a typo costs no scan. At the end the report is written to a new file in
//! FILE's directory (mode 0666 less the umask), synced, and renamed over FILE, then the
//! directory is synced: FILE is the old report or the new one, never half of one. A FILE that is
//! a symbolic link is written through (its target is replaced); a FIFO or a device
//! (`/dev/stdout`) is opened and written directly, as it cannot be renamed over.
//!
//! Never scanned: the file standard output points to (`dupfind scan . > tree/report.json`: the
//! shell made it before the run, empty or, with `>>`, holding earlier reports), the one standard
//! error points to (it grows while the scan warns), and FILE. They are recognised by device and
//! inode (an `-o URL`, by its store and key), after the walk and before any is read, and dropped
//! as if the walk had not met them (not counted in `files_seen`). The temporary file does not exist until the scan is over.
//! The walk does not `stat` a plain file ([`crate::input::walk::WalkOptions::defer_metadata`]),
//! so a walked file is `stat`ed here only when its name is one of those files' names (a file
//! with one link has one name), or when one of them has several links.

use std::ffi::OsString;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::atomic::Pending;
use crate::input::walk::FileEntry;
use crate::messages::display_path;

/// A file the run writes to.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Own {
    /// Device and inode.
    id: (u64, u64),
    /// Its name (the last component), when it has one name that is known.
    name: Option<OsString>,
}

/// Where the report goes, and what is never scanned for it.
#[derive(Clone, Debug, Default)]
pub struct Sink {
    /// `-o FILE`, resolved; None for standard output.
    file: Option<Target>,
    /// The files the run writes to.
    own: Vec<Own>,
    /// `-o URL`: the object the run writes to, never scanned either.
    own_object: Option<PathBuf>,
}

/// An `-o` file.
#[derive(Clone, Debug)]
struct Target {
    /// The path as given, for messages.
    given: PathBuf,
    /// Where to write: FILE, or the file a symbolic link at FILE leads to.
    path: PathBuf,
    /// A FIFO or device: written directly, not replaced.
    direct: bool,
}

impl Sink {
    /// The destination of `-o` (None or `-`: standard output), checked, and the files the run
    /// writes to.
    pub fn new(output: Option<&Path>) -> Result<Sink> {
        let mut sink = Sink::default();
        sink.own.extend(own_stream(1));
        sink.own.extend(own_stream(2));
        if let Some(given) = output.filter(|p| *p != Path::new("-")) {
            let (target, own) = target(given)?;
            sink.own.extend(own);
            if crate::store::is_url(given) {
                sink.own_object = Some(given.to_path_buf());
            }
            sink.file = Some(target);
        }
        Ok(sink)
    }

    /// True when the report goes to a terminal (standard output, not redirected).
    pub fn is_terminal(&self) -> bool {
        self.file.is_none() && std::io::stdout().is_terminal()
    }

    /// Drops the files the run writes to from the walk's `files`; returns how many paths (with
    /// their aliases) were dropped.
    pub fn drop_own(&self, files: &mut Vec<FileEntry>) -> u64 {
        if self.own.is_empty() && self.own_object.is_none() {
            return 0;
        }
        let mut dropped = 0;
        files.retain(|f| {
            let own = self.is_own(f);
            if own {
                dropped += 1 + f.aliases.len() as u64;
            }
            !own
        });
        dropped
    }

    fn is_own(&self, f: &FileEntry) -> bool {
        if let Some(object) = &self.own_object {
            if crate::store::same_object(&f.path, object) {
                return true;
            }
        }
        if crate::store::is_url(&f.path) {
            return false;
        }
        let id = if !f.deferred && f.id != (0, 0) {
            f.id
        } else {
            let name = f.path.file_name();
            let may_be = |o: &Own| o.name.is_none() || o.name.as_deref() == name;
            if !self.own.iter().any(may_be) {
                return false;
            }
            match std::fs::metadata(&f.path) {
                Ok(m) => file_id(&m),
                // Not there any more: the read will say so.
                Err(_) => return false,
            }
        };
        self.own.iter().any(|o| o.id == id)
    }

    /// Writes the report with `write`: to standard output, or to the `-o` file atomically.
    /// `keep` is asked after writing: false (an interrupt) leaves an `-o` file as it was.
    pub fn write(
        &self,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
        keep: impl FnOnce() -> bool,
    ) -> Result<()> {
        match &self.file {
            None => {
                let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                let written = write(&mut out);
                if written.is_err() {
                    // Nothing more can be written (a broken pipe); drop the buffer unflushed.
                    let _ = out.into_parts();
                    return written;
                }
                out.flush()?;
                Ok(())
            }
            Some(t) if t.direct => {
                let file = File::options()
                    .write(true)
                    .open(&t.path)
                    .with_context(|| format!("cannot open {}", display_path(&t.given)))?;
                let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
                write(&mut out)?;
                out.flush()?;
                Ok(())
            }
            Some(t) => t.replace(write, keep),
        }
    }
}

impl Target {
    /// Writes a new file beside the target and renames it over the target, or sends it whole
    /// to a URL ([`crate::atomic::Pending`], as the work files and the dataset's parts are
    /// written).
    fn replace(
        &self,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
        keep: impl FnOnce() -> bool,
    ) -> Result<()> {
        let what = || format!("writing the report to {}", display_path(&self.given));
        let pending = Pending::new(&self.path).with_context(what)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, pending.file());
        write(&mut out).with_context(what)?;
        out.flush().with_context(what)?;
        drop(out);
        // Asked at the commit point: for a URL, before the upload's completion, so that an
        // interrupt during its parts leaves the object as it was too.
        pending.commit_if(keep).with_context(what).map(|_| ())
    }
}

/// The directory of `path` ("." for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks `-o FILE` and resolves where to write; an existing regular file is one of the run's
/// own.
fn target(given: &Path) -> Result<(Target, Option<Own>)> {
    let shown = display_path(given);
    if crate::store::is_url(given) {
        crate::store::check_writable(&given.to_string_lossy(), true, None)
            .map_err(|e| anyhow::anyhow!("-o {shown}: {e}"))?;
        let target = Target {
            given: given.to_path_buf(),
            path: given.to_path_buf(),
            direct: false,
        };
        return Ok((target, None));
    }
    match std::fs::metadata(given) {
        Ok(m) if m.is_dir() => bail!("-o {shown}: is a directory; name a file to write to"),
        Ok(m) if !m.is_file() => Ok((
            Target {
                given: given.to_path_buf(),
                path: given.to_path_buf(),
                direct: true,
            },
            None,
        )),
        Ok(m) => {
            // Through a symbolic link to the file it leads to, whose name the walk would meet.
            let path = std::fs::canonicalize(given)
                .with_context(|| format!("-o {shown}: cannot resolve its path"))?;
            writable_dir(parent(&path), &shown)?;
            let own = Own {
                id: file_id(&m),
                name: (links(&m) == 1)
                    .then(|| path.file_name().map(OsString::from))
                    .flatten(),
            };
            let target = Target {
                given: given.to_path_buf(),
                path,
                direct: false,
            };
            Ok((target, Some(own)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = parent(given);
            match std::fs::metadata(dir) {
                Ok(d) if d.is_dir() => {}
                Ok(_) => bail!("-o {shown}: {} is not a directory", display_path(dir)),
                Err(e) => bail!(
                    "-o {shown}: cannot use its directory {}: {}",
                    display_path(dir),
                    crate::messages::io_reason(&e)
                ),
            }
            writable_dir(dir, &shown)?;
            let target = Target {
                given: given.to_path_buf(),
                path: given.to_path_buf(),
                direct: false,
            };
            Ok((target, None))
        }
        Err(e) => bail!("-o {shown}: {}", crate::messages::io_reason(&e)),
    }
}

/// Fails unless a file can be made in `dir` (checked now, so that a long scan does not end in
/// a report it cannot write).
fn writable_dir(dir: &Path, shown: &str) -> Result<()> {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .map_err(std::io::Error::from)
    .with_context(|| {
        format!(
            "-o {shown}: cannot write in its directory {}",
            display_path(dir)
        )
    })
}

/// Standard output (1) or error (2), when it is a regular file.
fn own_stream(fd: i32) -> Option<Own> {
    let stat = match fd {
        1 => rustix::fs::fstat(std::io::stdout()),
        _ => rustix::fs::fstat(std::io::stderr()),
    }
    .ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    // Linux names the file an open descriptor leads to; elsewhere every walked file is checked.
    let name = (stat.st_nlink == 1)
        .then(|| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .flatten()
        .and_then(|p| p.file_name().map(OsString::from));
    Some(Own {
        id: (stat.st_dev as u64, stat.st_ino as u64),
        name,
    })
}

fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

fn links(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    m.nlink()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(path: PathBuf, id: (u64, u64), deferred: bool) -> FileEntry {
        FileEntry {
            path,
            aliases: Vec::new(),
            size: 0,
            id,
            modified: None,
            changed: None,
            dump: false,
            record: None,
            deferred,
        }
    }

    #[test]
    fn the_output_file_is_dropped_from_the_walk_whether_stated_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        let other = dir.path().join("other.txt");
        std::fs::write(&report, "{}").unwrap();
        std::fs::write(&other, "text").unwrap();
        let sink = Sink::new(Some(&report)).unwrap();
        let id = file_id(&std::fs::metadata(&report).unwrap());
        let mut files = vec![
            entry(other.clone(), (0, 0), true),
            entry(report.clone(), (0, 0), true),
        ];
        assert_eq!(sink.drop_own(&mut files), 1);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, other);
        let mut files = vec![entry(report, id, false)];
        assert_eq!(sink.drop_own(&mut files), 1);
    }

    #[test]
    fn a_missing_directory_or_a_directory_target_is_refused_before_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let e = Sink::new(Some(&dir.path().join("no/such/report.json"))).unwrap_err();
        assert!(
            format!("{e:#}").contains("cannot use its directory"),
            "{e:#}"
        );
        let e = Sink::new(Some(dir.path())).unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
        assert!(Sink::new(Some(Path::new("-"))).unwrap().file.is_none());
    }

    #[test]
    fn an_interrupted_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        std::fs::write(&report, "old").unwrap();
        let sink = Sink::new(Some(&report)).unwrap();
        let write = |out: &mut dyn Write| -> Result<()> { Ok(out.write_all(b"new")?) };
        sink.write(write, || false).unwrap();
        assert_eq!(std::fs::read(&report).unwrap(), b"old");
        sink.write(write, || true).unwrap();
        assert_eq!(std::fs::read(&report).unwrap(), b"new");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }
}
