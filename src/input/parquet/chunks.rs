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
