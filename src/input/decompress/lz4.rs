//! lz4: a stream of lz4 frames → its decompressed bytes, decoded by lz4_flex.
//!
//! lz4_flex's `FrameDecoder` returns 0 at the end of each frame, and also when its source ends
//! at a block boundary or just after a frame's magic number, so a cut stream would read as a
//! shorter one. This reader goes on from frame to frame and tells the two ends apart by
//! watching the source: the stream ends cleanly only where the source ends between frames.
//! A block holds at most 4 MiB, so the decoder's buffers stay below 9 MiB.

use std::io::{self, ErrorKind, Read};

use lz4_flex::frame::FrameDecoder;

/// The source, with what the decoder took from it and whether it has ended.
struct Watched<R> {
    inner: R,
    taken: u64,
    ended: bool,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        self.ended |= n == 0 && !buf.is_empty();
        Ok(n)
    }
}

/// An lz4 stream over `source`.
pub(super) struct Frames<R: Read> {
    decoder: FrameDecoder<Watched<R>>,
    /// The last frame has ended (or none has begun): the source may end here.
    between: bool,
}

impl<R: Read> Frames<R> {
    pub(super) fn new(source: R) -> Self {
        let watched = Watched {
            inner: source,
            taken: 0,
            ended: false,
        };
        Frames {
            decoder: FrameDecoder::new(watched),
            between: true,
        }
    }
}

impl<R: Read> Read for Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let before = self.decoder.get_ref().taken;
            let n = self.decoder.read(buf).map_err(decoder_error)?;
            if n > 0 {
                self.between = false;
                return Ok(n);
            }
            let source = self.decoder.get_ref();
            if !source.ended {
                // A frame's end mark (and checksum) was read: the next frame may follow.
                self.between = true;
                continue;
            }
            if self.between && source.taken == before {
                return Ok(0);
            }
            let message = "the stream ends in the middle of a frame";
            return Err(io::Error::new(ErrorKind::UnexpectedEof, message));
        }
    }
}

/// lz4_flex's errors are `Other` wrapping its own type; they are all bad data.
fn decoder_error(e: io::Error) -> io::Error {
    match e.kind() {
        ErrorKind::Interrupted | ErrorKind::UnexpectedEof | ErrorKind::InvalidData => e,
        _ if e
            .get_ref()
            .is_some_and(|inner| inner.is::<lz4_flex::frame::Error>()) =>
        {
            io::Error::new(ErrorKind::InvalidData, e.to_string())
        }
        _ => e,
    }
}
