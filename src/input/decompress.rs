//! Decompress: a byte stream → its decompressed bytes, the format recognised by its magic bytes.
//!
//! Compression is recognised by its magic bytes, never by the file name: gzip (`1f 8b`, any
//! number of concatenated members), zstd (`28 b5 2f fd`, any number of frames, skippable
//! frames skipped, content checksums checked: see `decompress/zstd.rs`), bzip2 (`BZh`, any
//! number of streams), xz (`fd 37 7a 58 5a 00`, concatenated streams) and legacy .lzma (`5d 00
//! 00`, as `file` recognises it; one stream, and bytes after it an error, as `xz -d` has it),
//! both with a memory limit (`decompress/xz.rs`), and lz4 frames (`04 22 4d 18`,
//! `decompress/lz4.rs`). A few formats are recognised but not read (Unix `compress`, lzip,
//! lzop, lz4's legacy format): opening one is an error that names it, not a binary file. Anything else passes through as it is. A corrupt or truncated stream is an
//! `io::Error` naming the format, never a panic. The module knows nothing of lines or records
//! (see [`crate::input::jsonl`]); it only bounds how much it decompresses when asked to
//! ([`read_limited`]).

use std::io::{self, BufRead, BufReader, Cursor, ErrorKind, Read};
use std::sync::atomic::{AtomicU64, Ordering};

mod lz4;
mod xz;
mod zstd;

/// Buffer size for reading a dump and for its decompressed stream.
const BUF_SIZE: usize = 256 * 1024;

/// How a stream is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed (or in no format recognised).
    None,
    /// gzip, one member or several.
    Gzip,
    /// Zstandard, one frame or several.
    Zstd,
    /// bzip2, one stream or several.
    Bzip2,
    /// xz, one stream or several.
    Xz,
    /// The legacy .lzma format (LZMA_Alone).
    Lzma,
    /// lz4 frames.
    Lz4,
    /// A format recognised but not read, by its name.
    Unsupported(&'static str),
}

impl Compression {
    #[cfg(test)]
    /// The lowercase name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
            Compression::Lzma => "lzma",
            Compression::Lz4 => "lz4",
            Compression::Unsupported(name) => name,
        }
    }
}

/// Recognises a compression format from the first bytes of a stream (4 are enough).
pub fn sniff(prefix: &[u8]) -> Compression {
    match prefix {
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        // A skippable frame (magic 0x184D2A50..=0x184D2A5F) opens every file `pzstd` writes.
        [b, 0x2a, 0x4d, 0x18, ..] if b & 0xf0 == 0x50 => Compression::Zstd,
        // "BZh" and the block size, '1' to '9'.
        [b'B', b'Z', b'h', b'1'..=b'9', ..] => Compression::Bzip2,
        // The magic is 6 bytes; 4 decide, as for every other format.
        [0xfd, b'7', b'z', b'X', ..] => Compression::Xz,
        // Properties lc=3 lp=0 pb=2 (every encoder's default) and a dictionary of a whole
        // number of 64 KiB.
        [0x5d, 0x00, 0x00, _, ..] => Compression::Lzma,
        [0x04, 0x22, 0x4d, 0x18, ..] => Compression::Lz4,
        [0x02, 0x21, 0x4c, 0x18, ..] => Compression::Unsupported("lz4 legacy (lz4 -l)"),
        [0x1f, 0x9d, ..] => Compression::Unsupported("Unix compress (.Z)"),
        [b'L', b'Z', b'I', b'P', ..] => Compression::Unsupported("lzip"),
        [0x89, b'L', b'Z', b'O', ..] => Compression::Unsupported("lzop"),
        _ => Compression::None,
    }
}

/// The largest window a zstd frame, and the largest dictionary an xz or lzma stream, may need:
/// set once, before any input is read, from the memory budget (`budget::window_limit`). A
/// process-wide setting rather than a parameter, because every reader of compressed input (the
/// first pass, verification's re-reads, the stages) must obey the same limit.
static WINDOW_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_WINDOW_LIMIT);

/// libzstd's default window limit, 128 MiB: the limit when the budget allows it.
pub const DEFAULT_WINDOW_LIMIT: u64 = 128 << 20;

/// Sets the decoder window limit (at most [`DEFAULT_WINDOW_LIMIT`]).
pub fn set_window_limit(bytes: u64) {
    WINDOW_LIMIT.store(
        bytes.clamp(1 << 10, DEFAULT_WINDOW_LIMIT),
        Ordering::Relaxed,
    );
}

/// The decoder window limit in force.
pub fn window_limit() -> u64 {
    WINDOW_LIMIT.load(Ordering::Relaxed)
}

/// Why a stream whose window (or dictionary) is over the decoder limit is refused, and what
/// would read it: a larger --max-memory up to the 128 MiB cap, or decompressing it first.
fn window_refused(what: &str) -> String {
    let limit = window_limit();
    let mib = limit >> 20;
    if limit >= DEFAULT_WINDOW_LIMIT {
        format!(
            "{what} of more than {mib} MiB to decompress, the most dupfind's decoders take \
             whatever --max-memory says; decompress it first (`zstd -d --long=31`, `xz -d`)"
        )
    } else {
        format!(
            "{what} of more than {mib} MiB to decompress, the most a decoder may take under \
             --max-memory (an eighth of it); --max-memory {}M reads windows up to {} MiB",
            (limit * 2 * 8) >> 20,
            mib * 2
        )
    }
}

/// Sniffs `inner` and returns its format with a buffered reader of the decompressed bytes.
pub fn open_stream<R: Read + Send + 'static>(
    mut inner: R,
) -> io::Result<(Compression, Box<dyn BufRead + Send>)> {
    let mut prefix = [0u8; 4];
    let mut filled = 0;
    while filled < prefix.len() {
        match inner.read(&mut prefix[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let compression = sniff(&prefix[..filled]);
    let raw = BufReader::with_capacity(
        BUF_SIZE,
        Cursor::new(prefix[..filled].to_vec()).chain(inner),
    );
    let stream: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => decoded(flate2::bufread::MultiGzDecoder::new(raw), "gzip"),
        Compression::Zstd => decoded(zstd::Frames::new(raw)?, "zstd"),
        Compression::Bzip2 => decoded(bzip2::bufread::MultiBzDecoder::new(raw), "bzip2"),
        Compression::Xz => decoded(xz::Decoder::xz(raw)?, "xz"),
        Compression::Lzma => decoded(xz::Decoder::lzma(raw)?, "lzma"),
        Compression::Lz4 => decoded(lz4::Frames::new(raw), "lz4"),
        Compression::Unsupported(name) => return Err(unsupported(name)),
    };
    Ok((compression, stream))
}

/// The error for a format recognised but not read.
pub fn unsupported(name: &str) -> io::Error {
    let message = format!("compressed as {name}, which dupfind does not read; decompress it first");
    io::Error::new(ErrorKind::Unsupported, message)
}

fn decoded<R: Read + Send + 'static>(inner: R, format: &'static str) -> Box<dyn BufRead + Send> {
    Box::new(BufReader::with_capacity(
        BUF_SIZE,
        Labelled { inner, format },
    ))
}

/// Reads all of `reader` into `buf`, but never more than `limit + 1` bytes, so a small file
/// that decompresses to gigabytes cannot exhaust memory. False when the content exceeds
/// `limit` (`buf` then holds its first `limit + 1` bytes).
pub fn read_limited(reader: &mut dyn Read, limit: u64, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    reader.take(limit.saturating_add(1)).read_to_end(buf)?;
    Ok(buf.len() as u64 <= limit)
}

/// Names the format in the errors a decoder raises on bad data; other I/O errors pass as they are.
struct Labelled<R> {
    inner: R,
    format: &'static str,
}

impl<R: Read> Read for Labelled<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| match e.kind() {
            ErrorKind::InvalidData | ErrorKind::InvalidInput | ErrorKind::UnexpectedEof => {
                let message = format!("{} stream is corrupt or truncated: {e}", self.format);
                io::Error::new(ErrorKind::InvalidData, message)
            }
            _ => e,
        })
    }
}

/// The most a decoder of each compressed format holds (charged to the memory budget), at the decoder window (zstd) and
/// dictionary (xz, lzma) limit in force.
pub fn decoder_cost(format: Compression) -> u64 {
    use Compression as C;
    let window = window_limit();
    match format {
        C::None => 0,
        // A 32 KiB window and the inflate state.
        C::Gzip => 256 << 10,
        // 900 kB blocks, decoded into about 4.5 bytes each.
        C::Bzip2 => 8 << 20,
        // Blocks of up to 4 MiB, the compressed one and its output.
        C::Lz4 => 16 << 20,
        // The window or dictionary and a block of output.
        C::Zstd | C::Xz | C::Lzma => window.saturating_add(1 << 20),
        // Recognised but not read: nothing is decoded.
        _ => 0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::input::jsonl::{field_path, JsonlOptions, JsonlReader, Line};

    /// Each line of a decompressed stream as one string, so that a test states at once how much
    /// a damaged stream released before its error, and the error.
    fn show(lines: impl Iterator<Item = Line>) -> Vec<String> {
        lines
            .map(|line| match line {
                Line::Doc { line, id, text, .. } => format!("{line} {id:?} {text}"),
                Line::Bad { line, reason } => format!("{line} bad: {reason}"),
                Line::Failed { line, error } => format!("{line} failed: {error}"),
            })
            .collect()
    }

    fn opts(max_line: u64) -> JsonlOptions {
        JsonlOptions {
            text_field: field_path("text").unwrap(),
            id_field: field_path("id").unwrap(),
            keep_field: None,
            max_line,
        }
    }

    fn read(input: &[u8]) -> Vec<String> {
        show(JsonlReader::new(input, opts(1 << 20)))
    }

    fn read_stream(input: Vec<u8>) -> (Compression, Vec<String>) {
        let (compression, stream) = open_stream(Cursor::new(input)).unwrap();
        (compression, show(JsonlReader::new(stream, opts(1 << 20))))
    }

    /// The whole decompressed content, or the error that ended it.
    fn decompress(input: Vec<u8>) -> (Compression, io::Result<Vec<u8>>) {
        let (compression, mut stream) = open_stream(Cursor::new(input)).unwrap();
        let mut out = Vec::new();
        let read = stream.read_to_end(&mut out).map(|_| out);
        (compression, read)
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    const TWO: &[u8] = b"{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n";

    #[test]
    fn reads_gzip_including_concatenated_members() {
        assert_eq!(read_stream(gzip(TWO)), (Compression::Gzip, read(TWO)));
        let (first, second) = TWO.split_at(10);
        let members = [gzip(first), gzip(second)].concat();
        assert_eq!(read_stream(members), (Compression::Gzip, read(TWO)));
    }

    #[test]
    fn reads_zstd_including_several_and_skippable_frames() {
        assert_eq!(read_stream(zstd(TWO)), (Compression::Zstd, read(TWO)));
        let (first, second) = TWO.split_at(10);
        let skippable = [
            &[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9][..],
            &zstd(first),
        ];
        let frames = [skippable.concat(), zstd(second)].concat();
        assert_eq!(read_stream(frames), (Compression::Zstd, read(TWO)));
    }

    #[test]
    fn truncated_gzip_fails_after_the_lines_read() {
        let data = gzip(TWO);
        let (compression, lines) = read_stream(data[..data.len() - 4].to_vec());
        assert_eq!(compression, Compression::Gzip);
        assert_eq!(&lines[..2], &read(TWO)[..]);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("2 failed: gzip stream is corrupt or truncated: "));
    }

    #[test]
    fn corrupt_zstd_fails_and_ends_iteration() {
        let mut data = zstd(TWO);
        let last = data.len() - 1;
        data[last] ^= 0xff;
        let failed = "2 failed: zstd stream is corrupt or truncated: checksum mismatch";
        assert_eq!(
            read_stream(data).1,
            [read(TWO), vec![failed.into()]].concat()
        );
        // Cut inside its one block (stored raw, 48 bytes): the complete line before the cut is
        // kept, as gzip keeps it (ruzstd, before libzstd, released nothing of the block).
        let data = zstd(TWO);
        let (_, lines) = read_stream(data[..data.len() - 6].to_vec());
        let cut = "1 failed: zstd stream is corrupt or truncated: \
                   the stream ends in the middle of a frame";
        assert_eq!(lines, [read(TWO)[0].clone(), cut.into()]);
    }

    #[test]
    fn sniffs_short_prefixes() {
        assert_eq!(sniff(b""), Compression::None);
        assert_eq!(sniff(b"\x1f"), Compression::None);
        assert_eq!(sniff(b"\x1f\x8b\x08"), Compression::Gzip);
        assert_eq!(sniff(b"\x28\xb5\x2f"), Compression::None);
        assert_eq!(sniff(b"\x28\xb5\x2f\xfd"), Compression::Zstd);
        assert_eq!(Compression::Zstd.name(), "zstd");
        let (compression, mut stream) = open_stream(Cursor::new(b"x".to_vec())).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        assert_eq!((compression, text.as_str()), (Compression::None, "x"));
    }

    /// Hands out one byte per read, like a pipe under load.
    struct Trickle(Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn sniffs_through_short_reads() {
        let (compression, stream) = open_stream(Trickle(Cursor::new(gzip(TWO)))).unwrap();
        assert_eq!(compression, Compression::Gzip);
        assert_eq!(show(JsonlReader::new(stream, opts(100))), read(TWO));
    }

    #[test]
    fn read_limited_stops_one_byte_past_the_limit() {
        let mut buf = Vec::new();
        assert!(read_limited(&mut &b"12345"[..], 5, &mut buf).unwrap());
        assert_eq!(buf, b"12345");
        assert!(!read_limited(&mut &b"123456789"[..], 5, &mut buf).unwrap());
        assert_eq!(buf, b"123456");
        let bomb = gzip(&vec![0; 10 << 20]);
        assert!(bomb.len() < 64 << 10);
        let (_, mut stream) = open_stream(Cursor::new(bomb)).unwrap();
        assert!(!read_limited(&mut stream, 1 << 20, &mut buf).unwrap());
        assert_eq!(buf.len(), (1 << 20) + 1);
    }

    #[test]
    fn each_format_is_recognised_by_its_magic_bytes_not_its_name() {
        let text = b"plain text, \x1f not at the start".to_vec();
        let skippable = [&[0x5f, 0x2a, 0x4d, 0x18, 0, 0, 0, 0][..], &zstd(TWO)].concat();
        let cases = [
            (gzip(TWO), Compression::Gzip, TWO.to_vec()),
            (zstd(TWO), Compression::Zstd, TWO.to_vec()),
            (skippable, Compression::Zstd, TWO.to_vec()),
            (text.clone(), Compression::None, text),
        ];
        for (input, format, content) in cases {
            let (compression, read) = decompress(input);
            assert_eq!(compression, format);
            assert_eq!(read.unwrap(), content, "{format:?}");
        }
    }

    #[test]
    fn a_damaged_stream_is_invalid_data_naming_its_format() {
        let data = gzip(TWO);
        let (_, read) = decompress(data[..data.len() - 4].to_vec());
        let e = read.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(
            e.to_string()
                .starts_with("gzip stream is corrupt or truncated: "),
            "{e}"
        );
        let data = zstd(TWO);
        let (_, read) = decompress(data[..data.len() - 6].to_vec());
        let e = read.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "zstd stream is corrupt or truncated: the stream ends in the middle of a frame"
        );
        // A skippable frame that claims more bytes than are left.
        let (_, read) = decompress(vec![0x50, 0x2a, 0x4d, 0x18, 9, 0, 0, 0, 1]);
        let e = read.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(
            e.to_string()
                .starts_with("zstd stream is corrupt or truncated: "),
            "{e}"
        );
    }

    #[test]
    fn read_limited_bounds_what_a_zstd_bomb_decompresses() {
        let bomb = zstd(&vec![0; 10 << 20]);
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let (_, mut stream) = open_stream(Cursor::new(bomb)).unwrap();
        let mut buf = Vec::new();
        assert!(!read_limited(&mut stream, 1 << 20, &mut buf).unwrap());
        assert_eq!(buf.len(), (1 << 20) + 1);
        assert!(buf.iter().all(|&b| b == 0));
    }

    fn bzip2(data: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn lzma(data: &[u8]) -> Vec<u8> {
        let options = liblzma::stream::LzmaOptions::new_preset(1).unwrap();
        let stream = liblzma::stream::Stream::new_lzma_encoder(&options).unwrap();
        let mut e = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        let mut info = lz4_flex::frame::FrameInfo::new();
        info.content_checksum = true;
        let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    type Encoder = fn(&[u8]) -> Vec<u8>;

    /// The formats added after gzip and zstd, each with its encoder.
    const MORE: [(Compression, Encoder); 4] = [
        (Compression::Bzip2, bzip2),
        (Compression::Xz, xz),
        (Compression::Lzma, lzma),
        (Compression::Lz4, lz4),
    ];

    #[test]
    fn reads_bzip2_xz_lzma_and_lz4_whole_and_concatenated() {
        for (format, encode) in MORE {
            assert_eq!(read_stream(encode(TWO)), (format, read(TWO)), "{format:?}");
            assert_eq!(decompress(encode(b"")).1.unwrap(), b"", "{format:?}");
            let (first, second) = TWO.split_at(10);
            let joined = [encode(first), encode(second)].concat();
            if format == Compression::Lzma {
                // One stream per file, as `xz -d` reads it: what follows is damage, not ignored.
                let e = decompress(joined).1.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
                assert!(
                    e.to_string().contains("data follows the end of its stream"),
                    "{e}"
                );
                continue;
            }
            assert_eq!(read_stream(joined), (format, read(TWO)), "{format:?}");
        }
        // Large enough for several blocks (bzip2's hold 100 KiB at -1, lz4's 64 KiB).
        let big: Vec<u8> = (0..500_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for (format, encode) in MORE {
            let (_, read) = decompress(encode(&big));
            assert!(read.unwrap() == big, "{format:?}");
        }
    }

    #[test]
    fn each_new_format_cut_anywhere_is_an_error_naming_it() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 7).to_le_bytes())
            .collect();
        for (format, encode) in MORE {
            let whole = encode(&data);
            let cuts = [whole.len() - 1, whole.len() - 4, whole.len() / 2, 7, 5];
            for cut in cuts {
                let (compression, read) = decompress(whole[..cut].to_vec());
                assert_eq!(compression, format);
                let e = read.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidData, "{format:?} {cut}: {e}");
                let prefix = format!("{} stream is corrupt or truncated: ", format.name());
                assert!(e.to_string().starts_with(&prefix), "{format:?} {cut}: {e}");
            }
        }
    }

    #[test]
    fn lz4_cut_at_a_block_boundary_is_truncated_not_shorter() {
        let data: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let whole = lz4(&data);
        // 7-byte header, then blocks: a 4-byte size, the block. Cut after the first block.
        let first = u32::from_le_bytes(whole[7..11].try_into().unwrap()) & 0x7fff_ffff;
        let cut = 7 + 4 + first as usize;
        let (_, read) = decompress(whole[..cut].to_vec());
        let e = read.unwrap_err();
        assert!(
            e.to_string().contains("ends in the middle of a frame"),
            "{e}"
        );
        // Cut after the magic number alone, and just before the end mark.
        for cut in [4, whole.len() - 8] {
            let (_, read) = decompress(whole[..cut].to_vec());
            assert!(read.is_err(), "{cut}");
        }
    }

    #[test]
    fn read_limited_bounds_what_each_new_format_decompresses() {
        let zeros = vec![0; 4 << 20];
        for (format, encode) in MORE {
            let bomb = encode(&zeros);
            assert!(bomb.len() < 2 << 20, "{format:?} {}", bomb.len());
            let (_, mut stream) = open_stream(Cursor::new(bomb)).unwrap();
            let mut buf = Vec::new();
            assert!(!read_limited(&mut stream, 1 << 20, &mut buf).unwrap());
            assert_eq!(buf.len(), (1 << 20) + 1, "{format:?}");
        }
    }

    #[test]
    fn a_dictionary_over_the_memory_limit_is_refused_in_words() {
        // .lzma: the dictionary size is bytes 1..5 of the header.
        let mut data = lzma(TWO);
        data[1..5].copy_from_slice(&(1u32 << 30).to_le_bytes());
        // xz: the LZMA2 filter's property byte in the block header (40: 4 GiB - 1), whose
        // CRC32 follows it.
        let mut big = xz(TWO);
        let size = (big[12] as usize + 1) * 4;
        assert_eq!((big[13], big[14], big[15]), (0, 0x21, 1));
        big[16] = 40;
        let mut crc = flate2::Crc::new();
        crc.update(&big[12..12 + size - 4]);
        big[12 + size - 4..12 + size].copy_from_slice(&crc.sum().to_le_bytes());
        for (format, input) in [("lzma", data), ("xz", big)] {
            let e = decompress(input).1.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
            let message = format!("{format} stream needs a dictionary of more than 128 MiB");
            assert!(e.to_string().starts_with(&message), "{e}");
        }
    }

    #[test]
    fn recognised_formats_not_read_are_errors_naming_them() {
        let cases: [(&[u8], &str); 4] = [
            (b"\x1f\x9d\x90abc", "Unix compress (.Z)"),
            (b"LZIP\x01\x0c", "lzip"),
            (b"\x89LZO\x00\r\n", "lzop"),
            (b"\x02\x21\x4c\x18\x10\x00", "lz4 legacy (lz4 -l)"),
        ];
        for (input, name) in cases {
            assert_eq!(sniff(input), Compression::Unsupported(name));
            let Err(e) = open_stream(Cursor::new(input.to_vec())) else {
                panic!("{name} opened");
            };
            assert_eq!(e.kind(), ErrorKind::Unsupported);
            assert_eq!(
                e.to_string(),
                format!("compressed as {name}, which dupfind does not read; decompress it first")
            );
        }
        assert_eq!(sniff(b"BZh0"), Compression::None);
        assert_eq!(sniff(b"BZh9"), Compression::Bzip2);
        assert_eq!(sniff(b"]\0\0\x80"), Compression::Lzma);
    }
}
