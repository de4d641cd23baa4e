//! The file the parquet crate reads pages from, with one difference from a plain `File`: a read
//! past the end of the file is an error, not an empty read. The crate's thrift decoder skips an
//! unknown field of a page header by reading and discarding its bytes, and does not check that
//! it got any: a damaged header declaring a collection of billions of elements then loops over
//! empty reads for minutes (found by the `parquet` fuzz target). Pages never need bytes past
//! the end, so a well-formed file reads as before.
//!
//! [`Print`] hashes one column chunk from the bytes the pages are decoded from, so that the
//! chunk can later be told unchanged from its raw bytes alone ([`print_of`]).

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex};

use parquet::file::reader::{ChunkReader, Length};
use xxhash_rust::xxh3::Xxh3Default;

/// A Parquet file for reading pages ([`super::ParquetDump`]'s readers), the bytes read of one
/// column chunk hashed when `print` is given.
pub struct Pages(pub File, pub Option<Arc<Print>>);

impl Length for Pages {
    fn len(&self) -> u64 {
        self.0.metadata().map_or(0, |m| m.len())
    }
}

impl ChunkReader for Pages {
    type T = Printed<BufReader<EndIsError>>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let mut file = self.0.try_clone()?;
        file.seek(SeekFrom::Start(start))?;
        // Hashed above the buffer: what the page header's decoder takes, not what the buffer
        // reads ahead.
        Ok(Printed {
            read: BufReader::new(EndIsError(file)),
            at: start,
            print: self.1.clone(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let bytes = self.0.get_bytes(start, length)?;
        if let Some(print) = &self.1 {
            print.feed(start, &bytes);
        }
        Ok(bytes)
    }
}

/// The hash of one column chunk's bytes (`start..end` of the file), fed by a reader of its
/// pages: each page's header as the decoder reads it, then its data. A chunk read whole once,
/// in order, hashes as its raw bytes do ([`print_of`]); one read otherwise (a page skipped,
/// the reading stopped) has no print.
pub struct Print {
    start: u64,
    end: u64,
    state: Mutex<PrintState>,
}

struct PrintState {
    /// The offset of the next byte to hash.
    next: u64,
    hasher: Xxh3Default,
    /// A byte of the chunk was passed over.
    gap: bool,
}

impl Print {
    /// The print of the chunk of `len` bytes at `start`.
    pub fn new(start: u64, len: u64) -> Arc<Print> {
        Arc::new(Print {
            start,
            end: start.saturating_add(len),
            state: Mutex::new(PrintState {
                next: start,
                hasher: Xxh3Default::new(),
                gap: false,
            }),
        })
    }

    /// Hashes `bytes`, read at offset `at`, where they fall in the chunk: the bytes before the
    /// next one expected were hashed already (read again), bytes after it leave a gap.
    fn feed(&self, at: u64, bytes: &[u8]) {
        let from = at.max(self.start);
        let end = at.saturating_add(bytes.len() as u64).min(self.end);
        if from >= end {
            // Another chunk's bytes.
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if from > state.next {
            state.gap = true;
        }
        if state.gap || end <= state.next {
            return;
        }
        let skip = (state.next - at) as usize;
        let take = (end - state.next) as usize;
        state.hasher.update(&bytes[skip..skip + take]);
        state.next = end;
    }

    /// The chunk's hash, when every byte of it was read, in order.
    pub fn digest(&self) -> Option<u128> {
        let state = self.state.lock().ok()?;
        (!state.gap && state.next == self.end).then(|| state.hasher.digest128())
    }
}

/// The hash [`Print`] gives the `len` bytes `read` yields.
pub fn print_of(read: impl Read, len: u64) -> std::io::Result<u128> {
    let mut hasher = Xxh3Default::new();
    let mut read = read.take(len);
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = read.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    if total != len {
        return Err(std::io::Error::new(
            ErrorKind::UnexpectedEof,
            "the column chunk reaches past the end of the file",
        ));
    }
    Ok(hasher.digest128())
}

/// A reader of pages whose bytes, as they are taken, are fed to a [`Print`].
pub struct Printed<R> {
    read: R,
    /// The offset in the file of the next byte.
    at: u64,
    print: Option<Arc<Print>>,
}

impl<R: Read> Read for Printed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.read.read(buf)?;
        if let Some(print) = &self.print {
            print.feed(self.at, &buf[..n]);
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// A file whose reads at its end fail.
pub struct EndIsError(File);

impl Read for EndIsError {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 if !buf.is_empty() => Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "a page reaches past the end of the file",
            )),
            n => Ok(n),
        }
    }
}

/// A Parquet file for copying column chunks ([`super::RawGroup`]) on another thread than the
/// one reading its pages: it reads at an offset, never moving the cursor the file shares with
/// its clones (a seek there would move the other reader's too), and a read at its end fails
/// as [`EndIsError`]'s does.
pub struct Positioned(pub File);

impl Length for Positioned {
    fn len(&self) -> u64 {
        self.0.metadata().map_or(0, |m| m.len())
    }
}

impl ChunkReader for Positioned {
    type T = At;

    fn get_read(&self, start: u64) -> parquet::errors::Result<At> {
        Ok(At {
            file: self.0.try_clone()?,
            at: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let mut buf = vec![0; length];
        let mut read = self.get_read(start)?;
        read.read_exact(&mut buf)?;
        Ok(buf.into())
    }
}

/// A reader of a file from an offset on, by positioned reads.
pub struct At {
    file: File,
    at: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(&self.file, buf, self.at)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(&self.file, buf, self.at)?;
        if n == 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "a page reaches past the end of the file",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}
