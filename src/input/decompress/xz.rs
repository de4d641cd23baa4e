//! xz and legacy .lzma: a stream → its decompressed bytes, decoded by liblzma.
//!
//! xz streams may be concatenated (and padded), as `xz -d` reads them. A .lzma file holds one
//! stream: bytes after it are an error, as `xz -d` reports them, never ignored (the file would
//! read as its first stream alone). The decoder's memory
//! limit bounds the dictionary a header may declare: a stream that needs more is refused
//! before anything is allocated for it, with an error saying so. Errors are `InvalidData`
//! (`UnexpectedEof` for a stream cut short); the caller adds the format's name.

use std::io::{self, BufRead, ErrorKind, Read};

use liblzma::stream::{Action, Error, Status, Stream, CONCATENATED};

/// The most memory a decoder may use: the window limit a zstd frame has too (128 MiB unless the
/// memory budget is smaller), so a zstd and an xz stream are bounded alike, plus liblzma's own
/// structures. `xz -9` needs 65 MiB.
pub(super) fn memlimit() -> u64 {
    super::window_limit() + (1 << 20)
}

/// An xz (or .lzma) stream over `source`.
pub(super) struct Decoder<R> {
    source: R,
    stream: Stream,
    name: &'static str,
    done: bool,
}

impl<R: BufRead> Decoder<R> {
    /// xz, any number of concatenated streams.
    pub(super) fn xz(source: R) -> io::Result<Self> {
        let stream = Stream::new_stream_decoder(memlimit(), CONCATENATED);
        Ok(Decoder {
            source,
            stream: stream.map_err(|e| decoder_error(e, "xz"))?,
            name: "xz",
            done: false,
        })
    }

    /// The legacy .lzma format (LZMA_Alone), one stream.
    pub(super) fn lzma(source: R) -> io::Result<Self> {
        let stream = Stream::new_lzma_decoder(memlimit());
        Ok(Decoder {
            source,
            stream: stream.map_err(|e| decoder_error(e, "lzma"))?,
            name: "lzma",
            done: false,
        })
    }
}

impl<R: BufRead> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.done {
            return self.after_end();
        }
        loop {
            let input = self.source.fill_buf()?;
            let at_end = input.is_empty();
            let (in_before, out_before) = (self.stream.total_in(), self.stream.total_out());
            let action = if at_end { Action::Finish } else { Action::Run };
            let status = self
                .stream
                .process(input, buf, action)
                .map_err(|e| decoder_error(e, self.name))?;
            let used = (self.stream.total_in() - in_before) as usize;
            let written = (self.stream.total_out() - out_before) as usize;
            self.source.consume(used);
            if status == Status::StreamEnd {
                self.done = true;
                if written > 0 {
                    return Ok(written);
                }
                return self.after_end();
            }
            if written > 0 {
                return Ok(written);
            }
            if at_end {
                let message = "the stream ends before its end marker";
                return Err(io::Error::new(ErrorKind::UnexpectedEof, message));
            }
            if used == 0 {
                return Err(io::Error::new(
                    ErrorKind::InvalidData,
                    "the decoder is stuck",
                ));
            }
        }
    }
}

impl<R: BufRead> Decoder<R> {
    /// The end of the input once the decoder has ended. An xz decoder (`CONCATENATED`) ends
    /// only at the end of its input; a .lzma decoder ends with its one stream, and whatever
    /// follows it is damage, as `xz -d` calls it: a second stream joined on would otherwise be
    /// silently dropped.
    fn after_end(&mut self) -> io::Result<usize> {
        if self.source.fill_buf()?.is_empty() {
            return Ok(0);
        }
        let message = format!(
            "data follows the end of its stream, and a .{} file holds one stream \
             (`xz -d` calls it corrupt too)",
            self.name
        );
        Err(io::Error::new(ErrorKind::InvalidData, message))
    }
}

/// liblzma's error in words; a memory limit reached is no damage, and says so in full.
fn decoder_error(e: Error, name: &str) -> io::Error {
    match e {
        Error::MemLimit => io::Error::new(
            ErrorKind::OutOfMemory,
            super::window_refused(&format!("{name} stream needs a dictionary")),
        ),
        Error::Mem => io::Error::new(
            ErrorKind::OutOfMemory,
            format!("no memory for an {name} decoder"),
        ),
        Error::Data => io::Error::new(ErrorKind::InvalidData, "corrupt data"),
        Error::Format => io::Error::new(ErrorKind::InvalidData, "not in the format it claims"),
        Error::Options => io::Error::new(ErrorKind::InvalidData, "unsupported options"),
        Error::NoCheck | Error::UnsupportedCheck => {
            io::Error::new(ErrorKind::InvalidData, "unsupported integrity check")
        }
        Error::Program => io::Error::new(ErrorKind::InvalidData, "decoder error"),
    }
}
