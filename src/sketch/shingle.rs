//! Normalization and shingling: decoded text → 64-bit shingle hashes.
//!
//! The normalization is the one documented in the README, exactly, because every similarity
//! depends on it: `--normalize`'s steps first, when any ([`crate::sketch::normalize`]), then
//! tokens from [`crate::sketch::tokenize`] (lowercased maximal runs of non-`White_Space`
//! characters), and the normalized text is the tokens re-joined by single spaces.
//!
//! Word shingles are `n` consecutive tokens, character shingles `n` consecutive characters of the
//! normalized text. A document with at least one token but fewer than one shingle's worth becomes
//! a single shingle of its whole normalized text, never an empty set.
//!
//! Hashing: every token is hashed once ([`token_hash`]; [`crate::sketch::tokenize::hash_words`]
//! hands most tokens over as two zero-padded words already, so tokens up to 16 bytes take no
//! branch on their length), and a word shingle combines its `n` token hashes ([`combine`], here
//! in its rolling form), so overlapping windows never re-read the text. A character shingle is
//! [`char_hash`] of its bytes. The hash functions themselves are [`crate::sketch::hash`]'s.
//! This module does no sorting: callers that need a set sort and deduplicate
//! ([`into_set`], from [`crate::sketch::sort`]; MinHash does not need to, since `min` is
//! idempotent).

#[cfg(target_arch = "x86_64")]
use crate::cpu;
use crate::sketch::hash::{mix64, short_token_hash, window_hash};
use crate::sketch::keep_at_most;
use crate::sketch::normalize::Normalize;
#[cfg(target_arch = "x86_64")]
use crate::sketch::shingle_x86;
use crate::sketch::tokenize::{hash_words, normalize_ascii, Word, WordBuffers};

// The hashes and sorts shingling is known for, where callers have always found them.
pub use crate::sketch::hash::{char_hash, combine, token_hash, HASH_SCHEME};
pub use crate::sketch::sort::{into_set, sort_by_uniform_key};
pub use crate::sketch::tokenize::for_each_token;

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
    /// `--normalize`'s steps, applied to the text before anything else.
    steps: Normalize,
    /// The text after the steps, when they change it.
    stepped: Vec<u8>,
    /// Lowercased bytes of the token being built, when the input token is not already lowercase.
    token: Vec<u8>,
    /// Token hashes (word mode).
    token_hashes: Vec<u64>,
    /// The tokenizer's buffers (word mode).
    words: WordBuffers,
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
            steps: Normalize::NONE,
            stepped: Vec::new(),
            token: Vec::new(),
            token_hashes: Vec::new(),
            words: WordBuffers::default(),
            normalized: Vec::new(),
            char_starts: Vec::new(),
        }
    }

    /// The shingler with `--normalize`'s `steps` applied to every text first.
    pub fn normalizing(mut self, steps: Normalize) -> Self {
        self.steps = steps;
        self
    }

    /// Shrinks the buffers a long text grew beyond `keep` bytes to `keep` bytes.
    pub fn trim(&mut self, keep: usize) {
        keep_at_most(&mut self.stepped, keep);
        keep_at_most(&mut self.token, keep);
        keep_at_most(&mut self.token_hashes, keep);
        keep_at_most(&mut self.normalized, keep);
        keep_at_most(&mut self.char_starts, keep);
        self.words.trim(keep);
    }

    /// Appends the hashes of every shingle of `text` to `out` (with repeats, in text order).
    /// Appends nothing when the text has no token.
    pub fn shingle(&mut self, text: &str, out: &mut Vec<u64>) {
        if self.steps.is_none() {
            return self.shingle_normalized(text, out);
        }
        let mut stepped = std::mem::take(&mut self.stepped);
        self.shingle_normalized(self.steps.apply(text, &mut stepped), out);
        self.stepped = stepped;
    }

    /// Calls `emit` with every normalized token of `text`, in order: the steps, then
    /// [`for_each_token`]. What `--verify edit` compares.
    pub fn for_each_token(&mut self, text: &str, emit: impl FnMut(&[u8])) {
        let mut stepped = std::mem::take(&mut self.stepped);
        for_each_token(self.steps.apply(text, &mut stepped), &mut self.token, emit);
        self.stepped = stepped;
    }

    /// [`Shingler::shingle`] of a text the steps were applied to.
    fn shingle_normalized(&mut self, text: &str, out: &mut Vec<u64>) {
        // Room for the most shingles the text can have, reserved exactly: a vector left to
        // double could hold twice that, and the memory budget charges the bound
        // (`budget::text_cost`). Pages of it never written are never resident.
        let most = match self.kind {
            ShingleKind::Word => text.len() / 2 + 1,
            ShingleKind::Char => text.len() + 1,
        };
        if out.is_empty() && out.capacity() < most {
            // Nothing to keep: a new allocation, where growing the old one copies its bytes.
            *out = Vec::with_capacity(most);
        } else {
            out.reserve_exact(most.saturating_sub(out.len()));
        }
        match self.kind {
            ShingleKind::Word => self.word_shingles(text, out),
            ShingleKind::Char => self.char_shingles(text, out),
        }
    }

    fn word_shingles(&mut self, text: &str, out: &mut Vec<u64>) {
        let mut hashes = std::mem::take(&mut self.token_hashes);
        let hash = |w: Word<'_>| match w {
            Word::Short(lo, hi, n) => short_token_hash(lo, hi, n),
            Word::Bytes(tok) => token_hash(tok),
        };
        let count = hash_words(text, &mut self.words, hash, &mut hashes);
        let tokens = &hashes[..count];
        let n = self.n;
        if tokens.is_empty() {
        } else if tokens.len() < n {
            out.push(combine(tokens));
        } else {
            // Rolling form of `combine`: dropping token i and adding token i + n is
            // h ← rotr(h ^ t_i, 17) ^ rotl(t_{i+n}, 17·(n−1)), the same value without n steps.
            let last = (17 * (n - 1) as u32) % 64;
            let mut h = tokens[..n]
                .iter()
                .enumerate()
                .fold(0u64, |h, (j, &t)| h ^ t.rotate_left((17 * j as u32) % 64));
            out.push(mix64(h));
            // One `extend` of an exact-length iterator: no capacity check per shingle.
            out.extend(tokens.iter().zip(&tokens[n..]).map(|(&old, &new)| {
                h = (h ^ old).rotate_right(17) ^ new.rotate_left(last);
                mix64(h)
            }));
        }
        self.token_hashes = hashes;
    }

    fn char_shingles(&mut self, text: &str, out: &mut Vec<u64>) {
        let n = self.n;
        let mut norm = std::mem::take(&mut self.normalized);
        if n <= 7 {
            if let Some(len) = normalize_ascii(text.as_bytes(), &mut norm) {
                packed_windows(&norm, len, n, out);
                self.normalized = norm;
                return;
            }
        }
        norm.clear();
        for_each_token(text, &mut self.token, |tok| {
            if !norm.is_empty() {
                norm.push(b' ');
            }
            norm.extend_from_slice(tok);
        });
        if norm.is_empty() {
        } else if norm.is_ascii() {
            if n <= 7 {
                let len = norm.len();
                norm.resize(len + 16, 0);
                packed_windows(&norm, len, n, out);
            } else if norm.len() < n {
                out.push(char_hash(&norm));
            } else {
                out.extend(norm.windows(n).map(char_hash));
            }
        } else {
            // Tokens are valid UTF-8 (they come from a &str), so every byte that is not a
            // continuation byte starts a character.
            self.char_starts.clear();
            self.char_starts.reserve_exact(norm.len() + 1);
            self.char_starts
                .extend((0..norm.len()).filter(|&i| (norm[i] & 0xC0) != 0x80));
            self.char_starts.push(norm.len());
            let chars = self.char_starts.len() - 1;
            if chars < n {
                out.push(char_hash(&norm));
            } else {
                let starts = &self.char_starts;
                out.extend((0..=chars - n).map(|i| char_hash(&norm[starts[i]..starts[i + n]])));
            }
        }
        self.normalized = norm;
    }
}

/// Appends the character shingles of the ASCII normalized text `norm[..len]` (one byte a
/// character), `n <= 7`, to `out`: [`char_hash`] of each window of `n` bytes, or of the whole
/// text when it is shorter. `norm` holds at least 7 bytes past `len` (any values; 16 for the
/// AVX2 path): each window is one 8-byte big-endian load shifted down to its `n` bytes, with no
/// rolling state, so the windows are independent and their mixes overlap in the pipeline.
fn packed_windows(norm: &[u8], len: usize, n: usize, out: &mut Vec<u64>) {
    if len == 0 {
        return;
    }
    if len < n {
        out.push(char_hash(&norm[..len]));
        return;
    }
    let count = len - n + 1;
    out.reserve(count);
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = cpu::Avx2::detect() {
        if norm.len() >= count + 12 {
            shingle_x86::packed_windows_avx2(avx2, norm, count, n, out);
            return;
        }
    }
    packed_windows_portable(norm, count, n, out);
}

/// [`packed_windows`]' `count` windows of `n` bytes, one at a time.
fn packed_windows_portable(norm: &[u8], count: usize, n: usize, out: &mut Vec<u64>) {
    out.extend(norm[..count + 7].windows(8).map(|w| window_hash(w, n)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::tokenize::normalize;
    use xxhash_rust::xxh3::xxh3_64;

    fn shingles(kind: ShingleKind, n: usize, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        Shingler::new(kind, n).shingle(text, &mut out);
        out
    }

    #[test]
    fn a_trim_after_a_long_text_keeps_each_buffer_at_the_bytes_it_may_keep() {
        // Dropped whole, as they were, the buffers were grown again from nothing (copied and
        // zero-filled at each step) by the texts after every long one.
        let keep = 1 << 12;
        let long: String = (0..4000).map(|i| format!("w{i} ")).collect();
        let mut shingler = Shingler::new(ShingleKind::Word, 5);
        shingler.shingle(&long, &mut Vec::new());
        assert!(shingler.token_hashes.capacity() * 8 > keep);
        shingler.trim(keep);
        assert_eq!(shingler.token_hashes.capacity() * 8, keep);
        let short = "one two three four five six seven";
        let mut again = Vec::new();
        shingler.shingle(short, &mut again);
        assert_eq!(again, shingles(ShingleKind::Word, 5, short));
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
    fn ascii_char_shingles_equal_windows_of_the_normalized_text() {
        let mut state = 11u64;
        let alphabet = b"aB c\t\nDe.fG  \r\x0bh";
        // Up to 200 bytes under Miri, which runs about 10^4 times slower.
        let long: &[usize] = if cfg!(miri) { &[200] } else { &[200, 1000] };
        for len in (0..40).chain(long.iter().copied()) {
            for n in 1..=9 {
                let text: String = (0..len)
                    .map(|_| {
                        let r = crate::sketch::minhash::splitmix64(&mut state) as usize;
                        char::from(alphabet[r % alphabet.len()])
                    })
                    .collect();
                let norm = normalize(&text);
                let norm = norm.as_bytes();
                let expected: Vec<u64> = if norm.is_empty() {
                    Vec::new()
                } else if norm.len() < n {
                    vec![char_hash(norm)]
                } else {
                    norm.windows(n).map(char_hash).collect()
                };
                assert_eq!(
                    shingles(ShingleKind::Char, n, &text),
                    expected,
                    "{text:?} {n}"
                );
            }
        }
    }

    #[test]
    fn packed_windows_fast_path_equals_the_portable_one() {
        let mut state = 17u64;
        // Not the longest text under Miri, which runs about 10^4 times slower.
        let long: &[usize] = if cfg!(miri) {
            &[255, 256]
        } else {
            &[255, 256, 1001]
        };
        for len in (0..70).chain(long.iter().copied()) {
            let mut norm: Vec<u8> = (0..len + 16)
                .map(|_| crate::sketch::minhash::splitmix64(&mut state) as u8)
                .collect();
            // Bytes past the text are junk, whatever they are.
            norm[len..].fill(0xA5);
            for n in 1..=7 {
                let mut fast = vec![1, 2];
                packed_windows(&norm, len, n, &mut fast);
                let mut portable = vec![1, 2];
                if len >= n {
                    packed_windows_portable(&norm, len - n + 1, n, &mut portable);
                } else if len > 0 {
                    portable.push(char_hash(&norm[..len]));
                }
                assert_eq!(fast, portable, "{len} {n}");
                let windows: Vec<u64> = norm[..len].windows(n).map(char_hash).collect();
                if len >= n {
                    assert_eq!(fast[2..], windows[..], "{len} {n}");
                }
            }
        }
    }

    #[test]
    fn char_shingles_cover_characters_not_bytes() {
        // "añbc" has 4 characters: two 3-grams.
        let s = shingles(ShingleKind::Char, 3, "AÑBC");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], char_hash("añb".as_bytes()));
        assert_eq!(s[1], char_hash("ñbc".as_bytes()));
        let ascii = shingles(ShingleKind::Char, 3, "abcd");
        assert_eq!(ascii, vec![char_hash(b"abc"), char_hash(b"bcd")]);
        assert_eq!(
            shingles(ShingleKind::Char, 8, "abcdefgh"),
            vec![xxh3_64(b"abcdefgh")]
        );
        // Packing keeps the length, so a shorter shingle padded with NULs differs.
        assert_ne!(char_hash(b"ab"), char_hash(b"ab\0"));
    }

    #[test]
    fn rolling_word_hash_equals_combining_each_window() {
        let text = "one two three two one four five six one two three seven";
        let mut toks = Vec::new();
        for_each_token(text, &mut Vec::new(), |t| toks.push(token_hash(t)));
        for n in [1, 2, 3, 4, 5, 11] {
            let expected: Vec<u64> = toks.windows(n).map(combine).collect();
            assert_eq!(shingles(ShingleKind::Word, n, text), expected, "n = {n}");
        }
    }

    #[test]
    fn word_shingle_combines_token_hashes() {
        let s = shingles(ShingleKind::Word, 2, "x Y");
        let (x, y) = (token_hash(b"x"), token_hash(b"y"));
        assert_eq!(s, vec![mix64(x ^ y.rotate_left(17))]);
        // Repeated tokens do not cancel out.
        assert_ne!(shingles(ShingleKind::Word, 2, "x x")[0], mix64(0));
    }
}
