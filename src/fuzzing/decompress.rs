//! Decompression (gzip, zstd, bzip2, xz, lzma, lz4, and the formats recognised but not read):
//! the format sniffed from the magic bytes, and the stream read as a document is read (bounded
//! by `--max-size`) and as a dump is read (to its end).

use std::io::{self, Cursor, Read};

use crate::input::decompress::{open_stream, read_limited, sniff, Compression};

/// `--max-size` values, picked by the first byte.
const LIMITS: [u64; 6] = [1 << 20, 0, 1, 100, 4096, 64 << 10];

/// Reads the rest of `data` through the decompression layer. Panics unless the format is the
/// one its first 4 bytes name, an uncompressed stream passes unchanged, a read bounded by a
/// limit never hands out more than `limit + 1` bytes and says whether the content fits, and
/// reading in small pieces gives the same bytes and the same outcome as reading in large ones.
pub fn decompress(data: &[u8]) {
    let (pick, input) = super::choice(data);
    let limit = LIMITS[pick % LIMITS.len()];
    let format = sniff(&input[..input.len().min(4)]);
    assert_eq!(
        sniff(input),
        format,
        "the format depends on more than 4 bytes"
    );

    // As a document is read: at most `limit + 1` bytes of content.
    let mut buf = Vec::new();
    let Ok((compression, mut stream)) = open_stream(Cursor::new(input.to_vec())) else {
        return;
    };
    assert_eq!(compression, format);
    if let Ok(fits) = read_limited(&mut stream, limit, &mut buf) {
        assert!(
            buf.len() as u64 <= limit.saturating_add(1),
            "{} > {limit} + 1",
            buf.len()
        );
        assert_eq!(fits, buf.len() as u64 <= limit);
        if format == Compression::None {
            assert_eq!(buf, input[..buf.len()], "plain bytes changed");
        }
    }

    // As a dump is read: to the end, in pieces of any size.
    let whole = read_all(input, usize::MAX);
    let pieces = read_all(input, 1 + pick % 7);
    assert_eq!(whole.is_ok(), pieces.is_ok(), "{whole:?} / {pieces:?}");
    if let (Ok(whole), Ok(pieces)) = (&whole, &pieces) {
        assert!(whole == pieces, "pieces differ");
        if format == Compression::None {
            assert!(whole == input, "plain bytes changed");
        }
    }
}

/// Where [`read_all`] stops: a few KiB of zstd can declare gigabytes.
const READ_ALL_CAP: usize = 1 << 20;

/// The decompressed content, read `piece` bytes at most a call, or the error that ends it;
/// no further than [`READ_ALL_CAP`] bytes, where it stops whatever the piece size.
fn read_all(input: &[u8], piece: usize) -> io::Result<Vec<u8>> {
    let (_, mut stream) = open_stream(Cursor::new(input.to_vec()))?;
    let mut out = Vec::new();
    let mut buf = vec![0; piece.min(64 << 10)];
    while out.len() < READ_ALL_CAP {
        let want = buf.len().min(READ_ALL_CAP - out.len());
        match stream.read(&mut buf[..want])? {
            0 => break,
            n => out.extend_from_slice(&buf[..n]),
        }
    }
    Ok(out)
}
