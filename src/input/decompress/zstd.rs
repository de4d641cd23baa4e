//! Zstd: a zstd stream of any number of frames → its decompressed bytes, decoded by libzstd.
//!
//! libzstd goes on from one frame to the next, skips skippable frames and checks content
//! checksums itself. A failed call to it hands out nothing, not even what it decoded in that
//! call before failing, so it is fed one step at a time (the input its last call asked for: the
//! rest of a header or block, plus the next block's 3-byte header) and given no input while it
//! may still hold output. Every block before damage is thus handed out before the error: the
//! last one before a bad checksum too, since the checksum's last byte comes in a call of its
//! own. The one exception is a block followed by a damaged block header, which fails in the
//! call that decoded it (at most 128 KiB of output). A block stored raw is handed out as its
//! bytes arrive, so a stream cut inside one keeps what precedes the cut.
//!
//! Errors are `InvalidData` (`UnexpectedEof` for a stream that stops inside a frame); the
//! caller adds the format's name. Frames whose window is over the decoder limit are refused
//! before it is allocated: 128 MiB, libzstd's default (`zstd -d` needs `--long` beyond it), or
//! less under a smaller memory budget ([`super::window_limit`]).

use std::io::{self, BufRead, ErrorKind, Read};

use zstd_safe::zstd_sys::ZSTD_ErrorCode;
use zstd_safe::{DCtx, DParameter, ErrorCode, InBuffer, OutBuffer};

/// What is fed at the start of a frame: its magic number and first header byte, after which
/// libzstd says how much more the header takes.
const FRAME_START: usize = 5;

/// A zstd stream over `source`.
pub(super) struct Frames<R> {
    source: R,
    dctx: DCtx<'static>,
    /// How much input the decoder asked for last.
    want: usize,
    /// A frame has begun and not ended: the stream must not end here.
    in_frame: bool,
    /// The last call filled the output buffer: the decoder may hold more.
    flushing: bool,
}

impl<R: BufRead> Frames<R> {
    /// A decoder over `source`, or an error if its context cannot be allocated.
    pub(super) fn new(source: R) -> io::Result<Self> {
        let mut dctx = DCtx::try_create().ok_or_else(|| {
            io::Error::new(ErrorKind::OutOfMemory, "no memory for a zstd decoder")
        })?;
        // A frame declaring a larger window is refused before its window is allocated.
        let log = 63 - super::window_limit().max(1 << 10).leading_zeros();
        dctx.set_parameter(DParameter::WindowLogMax(log))
            .map_err(decoder_error)?;
        Ok(Frames {
            source,
            dctx,
            want: FRAME_START,
            in_frame: false,
            flushing: false,
        })
    }

    /// One call of the decoder into `buf`: its hint, the input it used, the output it wrote, and
    /// whether the source is at its end. While the last call filled `buf` the decoder may hold
    /// more output, and is given no input: input could carry it on to an error, and a failed
    /// call hands out nothing.
    fn step(&mut self, buf: &mut [u8]) -> io::Result<(usize, usize, usize, bool)> {
        let input = if self.flushing {
            &[][..]
        } else {
            // Errors of the source itself pass as they are: only the decoder's are bad data.
            self.source.fill_buf()?
        };
        let at_end = !self.flushing && input.is_empty();
        let mut src = InBuffer::around(&input[..input.len().min(self.want)]);
        let mut dst = OutBuffer::around(buf);
        let hint = self
            .dctx
            .decompress_stream(&mut dst, &mut src)
            .map_err(decoder_error)?;
        Ok((hint, src.pos(), dst.pos(), at_end))
    }
}

impl<R: BufRead> Read for Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let (hint, used, written, at_end) = self.step(buf)?;
            self.source.consume(used);
            self.flushing = written == buf.len();
            // 0: a frame has just ended, its output all handed out.
            if hint == 0 {
                self.in_frame = false;
                self.want = FRAME_START;
            } else {
                self.in_frame |= used > 0;
                self.want = hint;
            }
            if written > 0 {
                return Ok(written);
            }
            if at_end {
                if self.in_frame {
                    let message = "the stream ends in the middle of a frame";
                    return Err(io::Error::new(ErrorKind::UnexpectedEof, message));
                }
                return Ok(0);
            }
        }
    }
}

/// libzstd's error in words, as dupfind has always worded a checksum that does not match.
fn decoder_error(code: ErrorCode) -> io::Error {
    // libzstd returns an error as the negated `ZSTD_ErrorCode` (values below 100 are stable).
    let checksum = (ZSTD_ErrorCode::ZSTD_error_checksum_wrong as usize).wrapping_neg();
    let window = (ZSTD_ErrorCode::ZSTD_error_frameParameter_windowTooLarge as usize).wrapping_neg();
    let message = if code == checksum {
        "checksum mismatch".to_string()
    } else if code == window {
        return io::Error::new(
            ErrorKind::OutOfMemory,
            super::window_refused("a frame needs a window"),
        );
    } else {
        format!("invalid frame data ({})", zstd_safe::get_error_name(code))
    };
    io::Error::new(ErrorKind::InvalidData, message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// What a stream hands out before it fails, and how it fails.
    fn drain(input: Vec<u8>) -> (Vec<u8>, Option<io::Error>) {
        let mut frames = Frames::new(Cursor::new(input)).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match frames.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    /// Text that compresses to several blocks (a block holds at most 128 KiB).
    fn text(len: usize) -> Vec<u8> {
        let mut state = 1u64;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"abcdefghij \n"[(state >> 60) as usize % 12]
            })
            .collect()
    }

    #[test]
    fn hands_out_every_block_before_a_bad_checksum() {
        let data = text(600 << 10);
        let mut stream = zstd(&data);
        let last = stream.len() - 1;
        stream[last] ^= 0xff;
        let (out, error) = drain(stream);
        assert_eq!(
            (out.len(), data.len()),
            (data.len(), data.len()),
            "{error:?}"
        );
        assert!(out == data);
        let error = error.unwrap();
        assert_eq!(error.kind(), ErrorKind::InvalidData);
        assert_eq!(error.to_string(), "checksum mismatch");
    }

    #[test]
    fn a_cut_stream_keeps_the_blocks_before_the_cut() {
        let data = text(600 << 10);
        let stream = zstd(&data);
        let (out, error) = drain(stream[..stream.len() / 2].to_vec());
        // At most one block (128 KiB) of what was decoded is lost with the cut.
        assert!(out.len() > (300 << 10) - (128 << 10), "{}", out.len());
        assert!(out == data[..out.len()]);
        let error = error.unwrap();
        assert_eq!(error.kind(), ErrorKind::UnexpectedEof);
    }

    #[test]
    fn corrupt_frame_data_is_invalid_data_in_libzstd_s_words() {
        let mut stream = zstd(&text(10_000));
        // The frame header descriptor's reserved bit must be 0.
        stream[4] |= 0x08;
        let (out, error) = drain(stream);
        assert!(out.is_empty());
        let error = error.unwrap();
        assert_eq!(error.kind(), ErrorKind::InvalidData);
        assert!(
            error.to_string().starts_with("invalid frame data ("),
            "{error}"
        );
    }

    #[test]
    fn reads_frames_one_after_another_with_skippable_ones_between() {
        let (a, b) = (text(200 << 10), text(1000));
        let skippable = [0x5a, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 7, 7];
        let stream = [&zstd(&a)[..], &skippable, &zstd(&b), &skippable].concat();
        let (out, error) = drain(stream);
        assert!(error.is_none(), "{error:?}");
        assert!(out == [a, b].concat());
    }
}
