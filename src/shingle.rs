//! Normalization and shingling: decoded text → 64-bit shingle hashes.
//!
//! The normalization is the one documented in the README, exactly, because every similarity
//! depends on it:
//! 1. full Unicode lowercase, character by character (`char::to_lowercase`, no context rules
//!    such as the Greek final sigma);
//! 2. tokens are maximal runs of characters that are not Unicode `White_Space`;
//! 3. the normalized text is the tokens re-joined by single spaces.
//!
//! Word shingles are `n` consecutive tokens, character shingles `n` consecutive characters of the
//! normalized text. A document with at least one token but fewer than one shingle's worth becomes
//! a single shingle of its whole normalized text, never an empty set.
//!
//! Hashing: every token is hashed once with xxh3-64, and a word shingle is the xxh3-64 of the
//! little-endian bytes of its `n` token hashes, so overlapping windows never re-read the text.
//! A character shingle is the xxh3-64 of its UTF-8 bytes. This module does no sorting: callers
//! that need a set sort and deduplicate (MinHash does not need to, since `min` is idempotent).

use xxhash_rust::xxh3::xxh3_64;

/// What a shingle is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShingleKind {
    /// `n` consecutive whitespace-separated tokens.
    Word,
    /// `n` consecutive characters of the normalized text.
    Char,
}

/// Reusable shingler: holds scratch buffers so a thread allocates nothing per document.
#[derive(Debug)]
pub struct Shingler {
    kind: ShingleKind,
    n: usize,
    /// Lowercased bytes of the token being built, when the input token is not already lowercase.
    token: Vec<u8>,
    /// Little-endian token hashes (word mode), 8 bytes per token.
    token_hashes: Vec<u8>,
    /// The normalized text (character mode).
    normalized: Vec<u8>,
    /// Byte offsets of the characters of `normalized` (character mode, non-ASCII text only).
    char_starts: Vec<usize>,
}

impl Shingler {
    /// A shingler for shingles of `n` words or characters (`n >= 1`).
    pub fn new(kind: ShingleKind, n: usize) -> Self {
        Shingler {
            kind,
            n: n.max(1),
            token: Vec::new(),
            token_hashes: Vec::new(),
            normalized: Vec::new(),
            char_starts: Vec::new(),
        }
    }

    /// Appends the hashes of every shingle of `text` to `out` (with repeats, in text order).
    /// Appends nothing when the text has no token.
    pub fn shingle(&mut self, text: &str, out: &mut Vec<u64>) {
        match self.kind {
            ShingleKind::Word => self.word_shingles(text, out),
            ShingleKind::Char => self.char_shingles(text, out),
        }
    }

    fn word_shingles(&mut self, text: &str, out: &mut Vec<u64>) {
        let mut hashes = std::mem::take(&mut self.token_hashes);
        hashes.clear();
        for_each_token(text, &mut self.token, |tok| {
            hashes.extend_from_slice(&xxh3_64(tok).to_le_bytes())
        });
        let tokens = hashes.len() / 8;
        if tokens == 0 {
        } else if tokens < self.n {
            out.push(xxh3_64(&hashes));
        } else {
            let width = 8 * self.n;
            out.reserve(tokens - self.n + 1);
            out.extend((0..=tokens - self.n).map(|i| xxh3_64(&hashes[8 * i..8 * i + width])));
        }
        self.token_hashes = hashes;
    }

    fn char_shingles(&mut self, text: &str, out: &mut Vec<u64>) {
        let mut norm = std::mem::take(&mut self.normalized);
        norm.clear();
        for_each_token(text, &mut self.token, |tok| {
            if !norm.is_empty() {
                norm.push(b' ');
            }
            norm.extend_from_slice(tok);
        });
        let n = self.n;
        if norm.is_empty() {
        } else if norm.is_ascii() {
            if norm.len() < n {
                out.push(xxh3_64(&norm));
            } else {
                out.extend(norm.windows(n).map(xxh3_64));
            }
        } else {
            // Tokens are valid UTF-8 (they come from a &str), so every byte that is not a
            // continuation byte starts a character.
            self.char_starts.clear();
            self.char_starts
                .extend((0..norm.len()).filter(|&i| (norm[i] & 0xC0) != 0x80));
            self.char_starts.push(norm.len());
            let chars = self.char_starts.len() - 1;
            if chars < n {
                out.push(xxh3_64(&norm));
            } else {
                let starts = &self.char_starts;
                out.extend((0..=chars - n).map(|i| xxh3_64(&norm[starts[i]..starts[i + n]])));
            }
        }
        self.normalized = norm;
    }
}

/// Calls `emit` with the lowercased UTF-8 bytes of every token of `text`, in order.
///
/// ASCII text takes a fast path: a token that is already lowercase ASCII is passed straight
/// from the input; others are lowercased into `scratch`.
pub fn for_each_token(text: &str, scratch: &mut Vec<u8>, mut emit: impl FnMut(&[u8])) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Skip whitespace.
        let b = bytes[i];
        if b < 0x80 {
            if is_ascii_white_space(b) {
                i += 1;
                continue;
            }
        } else {
            let c = char_at(text, i);
            if c.is_whitespace() {
                i += c.len_utf8();
                continue;
            }
        }
        // A token starts at `i`: find its end, noting whether it needs lowercasing.
        let start = i;
        let mut plain = true;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                if is_ascii_white_space(b) {
                    break;
                }
                plain &= !b.is_ascii_uppercase();
                i += 1;
            } else {
                let c = char_at(text, i);
                if c.is_whitespace() {
                    break;
                }
                plain = false;
                i += c.len_utf8();
            }
        }
        if plain {
            emit(&bytes[start..i]);
        } else {
            scratch.clear();
            lowercase_into(&text[start..i], scratch);
            emit(scratch);
        }
    }
}

/// Unicode `White_Space` in the ASCII range: TAB, LF, VT, FF, CR and SPACE.
/// (`u8::is_ascii_whitespace` leaves out VT, which Unicode counts.)
#[inline]
fn is_ascii_white_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

#[inline]
fn char_at(text: &str, i: usize) -> char {
    text[i..]
        .chars()
        .next()
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

fn lowercase_into(token: &str, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    for c in token.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase() as u8);
        } else {
            for l in c.to_lowercase() {
                out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// The normalized text itself (tokens joined by single spaces): what the shingles are cut from.
pub fn normalize(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut scratch = Vec::new();
    for_each_token(text, &mut scratch, |tok| {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(tok);
    });
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Sorts and deduplicates shingle hashes in place, turning them into a set.
pub fn into_set(hashes: &mut Vec<u64>) {
    hashes.sort_unstable();
    hashes.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shingles(kind: ShingleKind, n: usize, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        Shingler::new(kind, n).shingle(text, &mut out);
        out
    }

    #[test]
    fn normalizes_case_and_every_unicode_space() {
        assert_eq!(
            normalize("  Hello\t\x0BWORLD\u{3000}Straße\u{00A0}ÉTÉ \r\n"),
            "hello world straße été"
        );
        assert_eq!(normalize("İ"), "i\u{307}");
        assert_eq!(normalize(" \n\t "), "");
    }

    #[test]
    fn word_shingles_count_and_order() {
        let s = shingles(ShingleKind::Word, 2, "a b c a b");
        assert_eq!(s.len(), 4);
        assert_eq!(s[0], s[3], "a b appears twice");
        assert_ne!(s[0], s[1]);
        // Order matters: "b a" is not "a b".
        assert_ne!(shingles(ShingleKind::Word, 2, "b a")[0], s[0]);
    }

    #[test]
    fn whitespace_and_case_do_not_change_shingles() {
        let a = shingles(ShingleKind::Word, 3, "The quick brown fox jumps");
        let b = shingles(ShingleKind::Word, 3, "the  QUICK\r\nbrown\tfox jumps\n");
        assert_eq!(a, b);
        let a = shingles(ShingleKind::Char, 4, "The quick brown fox");
        let b = shingles(ShingleKind::Char, 4, "the\r\nquick   BROWN fox");
        assert_eq!(a, b);
    }

    #[test]
    fn short_document_is_one_whole_text_shingle() {
        assert_eq!(shingles(ShingleKind::Word, 5, "only three words").len(), 1);
        assert_eq!(shingles(ShingleKind::Char, 5, "abc").len(), 1);
        assert_eq!(shingles(ShingleKind::Char, 5, "añb").len(), 1);
        assert_ne!(
            shingles(ShingleKind::Word, 5, "only three words"),
            shingles(ShingleKind::Word, 5, "only three wordz")
        );
        assert!(shingles(ShingleKind::Word, 5, " \n ").is_empty());
        assert!(shingles(ShingleKind::Char, 5, "").is_empty());
    }

    #[test]
    fn char_shingles_cover_characters_not_bytes() {
        // "añbc" has 4 characters: two 3-grams.
        let s = shingles(ShingleKind::Char, 3, "AÑBC");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], xxh3_64("añb".as_bytes()));
        assert_eq!(s[1], xxh3_64("ñbc".as_bytes()));
        let ascii = shingles(ShingleKind::Char, 3, "abcd");
        assert_eq!(ascii, vec![xxh3_64(b"abc"), xxh3_64(b"bcd")]);
    }

    #[test]
    fn word_shingle_is_xxh3_of_token_hashes() {
        let s = shingles(ShingleKind::Word, 2, "x y");
        let mut bytes = xxh3_64(b"x").to_le_bytes().to_vec();
        bytes.extend_from_slice(&xxh3_64(b"y").to_le_bytes());
        assert_eq!(s, vec![xxh3_64(&bytes)]);
    }
}
