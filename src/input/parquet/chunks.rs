//! The file the parquet crate reads pages from, with one difference from a plain `File`: a read
//! past the end of the file is an error, not an empty read. The crate's thrift decoder skips an
//! unknown field of a page header by reading and discarding its bytes, and does not check that
//! it got any: a damaged header declaring a collection of billions of elements then loops over
//! empty reads for minutes (found by the `parquet` fuzz target). Pages never need bytes past
//! the end, so a well-formed file reads as before.

use std::io::{BufReader, ErrorKind, Read};

use parquet::file::reader::{ChunkReader, Length};

use crate::input::source::{Source, SourceRead};

/// A Parquet file for reading pages ([`super::ParquetDump`]'s readers).
pub struct Pages(pub Source);

impl Length for Pages {
    fn len(&self) -> u64 {
        self.0.len().unwrap_or(0)
    }
}

impl ChunkReader for Pages {
    type T = BufReader<EndIsError>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let read = self.0.try_clone()?.reader_from(start)?;
        Ok(BufReader::new(EndIsError(read)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

impl Length for Source {
    fn len(&self) -> u64 {
        Source::len(self).unwrap_or(0)
    }
}

/// The footer's reader ([`parquet::arrow::arrow_reader::ArrowReaderMetadata::load`]): a file
/// as the crate reads one; an object by range requests.
impl ChunkReader for Source {
    type T = BufReader<EndIsError>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Pages(self.try_clone()?).get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        match self {
            Source::File(f) => f.get_bytes(start, length),
            Source::Object(_) => {
                let mut buf = vec![0; length];
                self.read_exact_at(&mut buf, start)?;
                Ok(buf.into())
            }
        }
    }
}

/// A file whose reads at its end fail.
pub struct EndIsError(SourceRead);

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
pub struct Positioned(pub Source);

impl Length for Positioned {
    fn len(&self) -> u64 {
        self.0.len().unwrap_or(0)
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
    file: Source,
    at: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
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
