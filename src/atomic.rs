//! A file written atomically: under a fresh temporary name in its directory, then fsync,
//! rename over any older one, fsync of the directory, so that a reader (or a run killed at any
//! moment) sees the old file or the new one, never half of one. The staged pipeline's work
//! files, the dataset's parts and the report's `-o FILE` are written so.
//!
//! A URL (`s3://…`, `crate::store`) has no rename: the content goes to an unnamed temporary
//! file in `TMPDIR` (gone with the process, however it ends), and only [`Pending::commit`] sends
//! it, whole, to its key: one PUT, or a multipart upload that only its completion makes visible
//! (`crate::store::upload`). A reader of the store sees the old object or the new one as well.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::messages::display_path;
use crate::store::Stored;

/// A file being written under a temporary name, made visible by [`Pending::commit`].
pub(crate) struct Pending {
    temp: Temp,
    path: PathBuf,
    /// The temporary name, removed by an interrupt that ends the run before the commit.
    _held: Option<crate::interrupt::HeldTemp>,
}

enum Temp {
    /// Beside its destination, renamed into place.
    Named(tempfile::NamedTempFile),
    /// In `TMPDIR`, sent to the URL.
    Unnamed(File),
}

impl Pending {
    pub(crate) fn new(path: &Path) -> Result<Pending> {
        let (temp, held) = if crate::store::is_url(path) {
            let file = tempfile::tempfile().with_context(|| {
                format!(
                    "creating a temporary file in {} for {}",
                    display_path(&std::env::temp_dir()),
                    display_path(path)
                )
            })?;
            (Temp::Unnamed(file), None)
        } else {
            let (temp, held) =
                crate::interrupt::HeldTemp::create(|| named_beside(path), |t| t.path())?;
            (Temp::Named(temp), Some(held))
        };
        Ok(Pending {
            temp,
            path: path.to_path_buf(),
            _held: held,
        })
    }

    /// Where it goes.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file(&self) -> &File {
        match &self.temp {
            Temp::Named(t) => t.as_file(),
            Temp::Unnamed(f) => f,
        }
    }

    /// Makes the file durable under its name: fsync, rename over any older one, fsync the
    /// directory (the rename is the commit point); for a URL, the upload's end is.
    pub(crate) fn commit(self) -> Result<()> {
        self.put(true, || true).map(drop)
    }

    /// [`Pending::commit`], returning what is at its name now: its size, and for a URL the
    /// ETag the store gave it, which a listing shows until the object is written again.
    pub(crate) fn commit_stored(self) -> Result<Stored> {
        let path = self.path.clone();
        self.put(true, || true)?.with_context(|| {
            format!(
                "writing {}: the store did not take it, and said no error",
                display_path(&path)
            )
        })
    }

    /// [`Pending::commit`], when `keep` says so just before the commit point: for a URL, after
    /// the upload's last part, before its completion (an upload not kept is aborted). Returns
    /// whether it was committed.
    pub(crate) fn commit_if(self, keep: impl FnOnce() -> bool) -> Result<bool> {
        self.put(true, keep).map(|s| s.is_some())
    }

    /// As [`Pending::commit`], but never over a file already at its name: false then. On disk
    /// the temporary file is linked to the name (or renamed without replacing), for a URL the
    /// PUT is on condition that no object is at its key; either way, of two writers at once,
    /// one is told the file exists. The content must be small, one PUT.
    pub(crate) fn commit_new(self) -> Result<bool> {
        self.put(false, || true).map(|s| s.is_some())
    }

    /// Commits, over an older file when `replace`, else only where there is none (None then);
    /// and only if `keep` says so at the commit point (None then too). Returns what is at its
    /// name now.
    fn put(self, replace: bool, keep: impl FnOnce() -> bool) -> Result<Option<Stored>> {
        let what = || format!("writing {}", display_path(&self.path));
        let temp = match self.temp {
            Temp::Unnamed(mut file) => {
                std::io::Seek::rewind(&mut file).with_context(what)?;
                let url = self.path.to_string_lossy();
                let interrupted = crate::interrupt::interrupted;
                let sent = match replace {
                    true => crate::store::upload(&mut file, &url, interrupted, keep),
                    // A claim, whose ETag nothing compares.
                    false => {
                        let size = file.metadata().with_context(what)?.len();
                        crate::store::create(&mut file, &url)
                            .map(|created| created.then_some(Stored { size, e_tag: None }))
                    }
                };
                return sent.map_err(anyhow::Error::msg).with_context(what);
            }
            Temp::Named(temp) => temp,
        };
        if !keep() {
            // Dropped, the temporary file is removed.
            return Ok(None);
        }
        temp.as_file().sync_all().with_context(what)?;
        let size = temp.as_file().metadata().with_context(what)?.len();
        let path = self.path;
        let persisted = match replace {
            true => temp.persist(&path).map(drop),
            false => temp.persist_noclobber(&path).map(drop),
        };
        match persisted {
            Ok(()) => {}
            Err(e) if !replace && e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                return Ok(None)
            }
            Err(e) => {
                return Err(e.error)
                    .with_context(|| format!("renaming into {}", display_path(&path)))
            }
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        File::open(dir.unwrap_or(Path::new(".")))
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing the directory of {}", display_path(&path)))?;
        Ok(Some(Stored { size, e_tag: None }))
    }
}

/// A fresh temporary file in `path`'s directory (made if missing).
fn named_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
    // 0666 less the umask, as for any new file (tempfile's default is 0600).
    tempfile::Builder::new()
        .prefix(".dupfind-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", display_path(dir)))
}
