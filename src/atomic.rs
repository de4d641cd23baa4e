//! A file written atomically: under a fresh temporary name in its directory, then fsync,
//! rename over any older one, fsync of the directory, so that a reader (or a run killed at any
//! moment) sees the old file or the new one, never half of one. The staged pipeline's work
//! files, the dataset's parts and the report's `-o FILE` are written so.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::messages::display_path;

/// A file being written under a temporary name, made visible by [`Pending::commit`].
pub(crate) struct Pending {
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Pending {
    pub(crate) fn new(path: &Path) -> Result<Pending> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", display_path(dir)))?;
        // 0666 less the umask, as for any new file (tempfile's default is 0600).
        let temp = tempfile::Builder::new()
            .prefix(".dupfind-")
            .suffix(".tmp")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| format!("creating a file in {}", display_path(dir)))?;
        Ok(Pending {
            temp,
            path: path.to_path_buf(),
        })
    }

    /// Where it goes.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// Makes the file durable under its name: fsync, rename over any older one, fsync the
    /// directory (the rename is the commit point).
    pub(crate) fn commit(self) -> Result<()> {
        let what = || format!("writing {}", display_path(&self.path));
        self.temp.as_file().sync_all().with_context(what)?;
        let path = self.path.clone();
        self.temp
            .persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("renaming into {}", display_path(&path)))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        File::open(dir.unwrap_or(Path::new(".")))
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing the directory of {}", display_path(&path)))
    }
}
