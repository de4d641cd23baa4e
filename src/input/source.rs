//! An input opened for reading: a local file or an object of a store (`crate::store`), read at
//! an offset or streamed. What the dump readers (JSON Lines, Parquet) and the re-reading of
//! records hold, so that they read either without knowing which.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::store::Object;

/// A dump's bytes: a file, or an object of a store.
pub enum Source {
    File(File),
    Object(Object),
}

impl From<File> for Source {
    fn from(f: File) -> Source {
        Source::File(f)
    }
}

impl Source {
    /// Opens `path`: a file without blocking (`read::open_nonblocking`), or the object at the
    /// URL `path`, whose size (`size`) the walk listed.
    pub fn open(path: &Path, size: u64) -> Result<Source, String> {
        if crate::store::is_url(path) {
            return Source::object(path, size);
        }
        crate::input::read::open_nonblocking(path)
            .map(Source::File)
            .map_err(|e| crate::messages::io_reason(&e))
    }

    /// Opens the object at the URL `path`, whose size the walk listed.
    pub fn object(path: &Path, size: u64) -> Result<Source, String> {
        let url = path.to_str().ok_or("a URL must be UTF-8")?;
        Object::listed(url, size).map(Source::Object)
    }

    /// Its length in bytes.
    pub fn len(&self) -> std::io::Result<u64> {
        match self {
            Source::File(f) => f.metadata().map(|m| m.len()),
            Source::Object(o) => Ok(o.size()),
        }
    }

    /// Reads at `offset`, without moving a cursor; 0 at the end.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        match self {
            #[cfg(unix)]
            Source::File(f) => std::os::unix::fs::FileExt::read_at(f, buf, offset),
            #[cfg(windows)]
            Source::File(f) => std::os::windows::fs::FileExt::seek_read(f, buf, offset),
            Source::Object(o) => o.read_at(buf, offset),
        }
    }

    /// Fills `buf` from `offset`; an end before it is filled is `UnexpectedEof`.
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ))
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn try_clone(&self) -> std::io::Result<Source> {
        match self {
            Source::File(f) => f.try_clone().map(Source::File),
            Source::Object(o) => Ok(Source::Object(o.clone())),
        }
    }

    /// The bytes from `offset` on, read in order: a file from its cursor there, an object
    /// streamed as its bytes arrive, one GET to its end (a JSON Lines dump).
    pub fn stream_from(self, offset: u64) -> std::io::Result<SourceRead> {
        match self {
            Source::Object(o) => o
                .stream(offset)
                .map(|s| SourceRead::Object(Box::new(s)))
                .map_err(std::io::Error::other),
            file => file.reader_from(offset),
        }
    }

    /// The bytes from `offset` on, read in order: a file from its cursor there, an object by
    /// its range reads (a Parquet column chunk's pages: only the ranges it wants are fetched).
    pub fn reader_from(self, offset: u64) -> std::io::Result<SourceRead> {
        match self {
            Source::File(mut f) => {
                use std::io::Seek;
                f.seek(std::io::SeekFrom::Start(offset))?;
                Ok(SourceRead::File(f))
            }
            Source::Object(o) => Ok(SourceRead::Ranges(o, offset)),
        }
    }

    /// The ranges (offset, length) about to be read, whole or (`headers`) only their page
    /// headers: an object fetches no more than these.
    pub fn want(&self, ranges: &[(u64, u64)], headers: bool) {
        if let Source::Object(o) = self {
            o.want(ranges, headers);
        }
    }
}

/// A [`Source`] read in order.
pub enum SourceRead {
    File(File),
    Object(Box<crate::store::StreamRead>),
    /// An object read at this offset on, by its range reads.
    Ranges(Object, u64),
}

impl Read for SourceRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SourceRead::File(f) => f.read(buf),
            SourceRead::Object(o) => o.read(buf),
            SourceRead::Ranges(o, at) => {
                let n = o.read_at(buf, *at)?;
                *at += n as u64;
                Ok(n)
            }
        }
    }
}
