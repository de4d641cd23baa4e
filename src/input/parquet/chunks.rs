//! The file the parquet crate reads pages from, with one difference from a plain `File`: a read
//! past the end of the file is an error, not an empty read. The crate's thrift decoder skips an
//! unknown field of a page header by reading and discarding its bytes, and does not check that
//! it got any: a damaged header declaring a collection of billions of elements then loops over
//! empty reads for minutes (found by the `parquet` fuzz target). Pages never need bytes past
//! the end, so a well-formed file reads as before.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};

use parquet::file::reader::{ChunkReader, Length};

/// A Parquet file for reading pages ([`super::ParquetDump`]'s readers).
pub struct Pages(pub File);

impl Length for Pages {
    fn len(&self) -> u64 {
        self.0.metadata().map_or(0, |m| m.len())
    }
}

impl ChunkReader for Pages {
    type T = BufReader<EndIsError>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let mut file = self.0.try_clone()?;
        file.seek(SeekFrom::Start(start))?;
        Ok(BufReader::new(EndIsError(file)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
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
