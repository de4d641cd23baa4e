//! Normalization and shingling: decoded text → 64-bit shingle hashes.
//!
//! The normalization is the one documented in the README, exactly, because every similarity
//! depends on it: tokens from [`crate::sketch::tokenize`] (lowercased maximal runs of non-`White_Space`
//! characters), and the normalized text is the tokens re-joined by single spaces.
//!
//! Word shingles are `n` consecutive tokens, character shingles `n` consecutive characters of the
//! normalized text. A document with at least one token but fewer than one shingle's worth becomes
//! a single shingle of its whole normalized text, never an empty set.
//!
//! Hashing: every token is hashed once with [`token_hash`] (a wyhash-style 64-bit hash of the
//! token's bytes as two zero-padded words; [`crate::sketch::tokenize::hash_words`] hands most tokens
//! over as those two words already, so tokens up to 16 bytes take no branch on their length),
//! and a word shingle combines its `n` token hashes: token j of the window is rotated left by
//! 17·j bits, the rotations are xored, and the
//! SplitMix64 finalizer mixes the result. Overlapping windows never re-read the text, and the
//! distinct rotations make the combination order-sensitive ("a b" ≠ "b a"). A character shingle
//! of up to 7 UTF-8 bytes is packed into an integer and mixed; a longer one is hashed with
//! xxh3-64 ([`char_hash`]). This module does no sorting: callers
//! that need a set sort and deduplicate (MinHash does not need to, since `min` is idempotent).

use xxhash_rust::xxh3::xxh3_64;

/// Version of the hashing that turns text into stored values (token and shingle hashes here,
/// signatures in `minhash`, fingerprints in `simhash`, content hashes in `doc`). An index
/// records it; bump it with any change to those functions, so an old index is refused rather
/// than silently matching nothing.
pub const HASH_SCHEME: u32 = 2;

use crate::sketch::minhash::mix64;
pub use crate::sketch::tokenize::{for_each_token, for_each_token_at, normalize};
use crate::sketch::tokenize::{hash_words, normalize_ascii, Word, WordBuffers};

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
            token: Vec::new(),
            token_hashes: Vec::new(),
            words: WordBuffers::default(),
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
        let hash = |w: Word<'_>| match w {
            Word::Short(lo, hi, n) => token_final(lo, hi, K2, n),
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
    let start = out.len();
    out.reserve(count);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && norm.len() >= count + 12 {
        // SAFETY: the CPU has AVX2 (checked just above); `norm` has the 12 bytes past the
        // last window that its loads need (checked too), and `out` has room for `count` more.
        unsafe {
            packed_windows_avx2(norm, count, n, out.spare_capacity_mut());
            out.set_len(start + count);
        }
        return;
    }
    packed_windows_portable(norm, count, n, out);
}

/// [`packed_windows`]' `count` windows of `n` bytes, one at a time.
fn packed_windows_portable(norm: &[u8], count: usize, n: usize, out: &mut Vec<u64>) {
    out.extend(norm[..count + 7].windows(8).map(|w| window_hash(w, n)));
}

/// [`char_hash`] of the first `n <= 7` of the 8 bytes `w`, from one big-endian load.
#[inline]
fn window_hash(w: &[u8], n: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    packed_hash(u64::from_be_bytes(b) >> (64 - 8 * n as u32), n)
}

/// [`packed_windows`]' `count` windows of `n` bytes into `out[..count]`, four at a time: one
/// 16-byte load holds the bytes of four windows, a byte shuffle packs each into its 64-bit lane
/// (big-endian, zeros above), and the lanes are mixed together, each 64-bit multiply of `mix64`
/// made of three 32-bit ones (AVX2 has no 64-bit multiply; the scalar `imul` issues one a
/// cycle, and `mix64` takes two per window). `norm` holds at least `count + 12` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn packed_windows_avx2(
    norm: &[u8],
    count: usize,
    n: usize,
    out: &mut [std::mem::MaybeUninit<u64>],
) {
    use std::arch::x86_64::*;
    assert!(norm.len() >= count + 12 && out.len() >= count && (1..=7).contains(&n));
    // Byte k of window o's lane is byte o + n − 1 − k of the load, for k < n; 0x80 gives zero.
    let mut control = [0x80u8; 32];
    for o in 0..4 {
        for k in 0..n {
            control[8 * o + k] = (o + n - 1 - k) as u8;
        }
    }
    let quads = count / 4;
    // SAFETY: AVX2 is enabled for this function (its callers check the CPU). Each 16-byte load
    // at 4q <= count − 4 ends by count + 12 <= norm.len(), and each 32-byte store writes
    // out[4q..4q + 4] with 4q + 4 <= count <= out.len() (both asserted).
    unsafe {
        let control = _mm256_loadu_si256(control.as_ptr() as *const __m256i);
        let tag = _mm256_set1_epi64x(packed_tag(n) as i64);
        for q in 0..quads {
            let bytes = _mm_loadu_si128(norm.as_ptr().add(4 * q) as *const __m128i);
            let v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), control);
            let h = mix64x4(_mm256_xor_si256(v, tag));
            _mm256_storeu_si256(out.as_mut_ptr().add(4 * q) as *mut __m256i, h);
        }
    }
    for i in 4 * quads..count {
        out[i].write(window_hash(&norm[i..i + 8], n));
    }
}

/// [`mix64`] of four 64-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn mix64x4(z: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    /// The low 64 bits of z · c, from three 32×32 → 64-bit multiplies.
    #[target_feature(enable = "avx2")]
    fn mul(z: __m256i, c: u64) -> __m256i {
        let lo = _mm256_set1_epi64x((c & 0xFFFF_FFFF) as i64);
        let hi = _mm256_set1_epi64x((c >> 32) as i64);
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64::<32>(z), lo),
            _mm256_mul_epu32(z, hi),
        );
        _mm256_add_epi64(_mm256_mul_epu32(z, lo), _mm256_slli_epi64::<32>(cross))
    }
    let z = mul(
        _mm256_xor_si256(z, _mm256_srli_epi64::<30>(z)),
        0xBF58_476D_1CE4_E5B9,
    );
    let z = mul(
        _mm256_xor_si256(z, _mm256_srli_epi64::<27>(z)),
        0x94D0_49BB_1331_11EB,
    );
    _mm256_xor_si256(z, _mm256_srli_epi64::<31>(z))
}

/// The hash of a character shingle: up to 7 bytes are packed with their length into one
/// integer (injective, so distinct short shingles never collide) and mixed; longer ones take
/// xxh3-64. Either way the hash depends only on the bytes.
#[inline]
pub fn char_hash(bytes: &[u8]) -> u64 {
    if bytes.len() <= 7 {
        let packed = bytes.iter().fold(0u64, |p, &b| (p << 8) | u64::from(b));
        packed_hash(packed, bytes.len())
    } else {
        xxh3_64(bytes)
    }
}

/// `char_hash` of a shingle of `len <= 7` bytes packed big-endian into `packed`.
#[inline]
fn packed_hash(packed: u64, len: usize) -> u64 {
    mix64(packed ^ packed_tag(len))
}

/// What `packed_hash` xors into a packed shingle of `len` bytes before mixing.
#[inline]
fn packed_tag(len: usize) -> u64 {
    ((len as u64) << 56) ^ 0x6368_6172_5F73_6869 // "char_shi"
}

/// Keys of the token hash. Each of K1 and K2 has an 0xFF byte, which UTF-8 never has, so a
/// token's (zero-padded) words never cancel them and the multiplies never see a zero operand.
const K0: u64 = 0xA076_1D64_78BD_642F;
const K1: u64 = 0xE703_7ED1_A0FF_89DB;
const K2: u64 = 0x8EBC_6AFF_0B83_D2A5;

/// The 64×64 → 128-bit product, its halves xored: wyhash's mixing step.
#[inline(always)]
fn mum(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// The hash of a token of `n` bytes from its first and second 8 bytes (`a`, `b`, zero-padded)
/// or, past 16 bytes, its last 16 and the `seed` of the words before.
#[inline(always)]
fn token_final(a: u64, b: u64, seed: u64, n: usize) -> u64 {
    let r = u128::from(a ^ K1) * u128::from(b ^ seed);
    mum((r as u64) ^ K0 ^ n as u64, ((r >> 64) as u64) ^ K1)
}

#[inline(always)]
fn le64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

/// The hash of a token's bytes (wyhash-style, 64 bits, full avalanche). Tokens of up to 16
/// bytes are two little-endian words, zero-padded, mixed with their length by two 128-bit
/// multiplies; longer ones fold each 16 bytes into the seed first.
pub fn token_hash(tok: &[u8]) -> u64 {
    let n = tok.len();
    if n <= 16 {
        let mut pad = [0u8; 16];
        pad[..n].copy_from_slice(tok);
        return token_final(le64(&pad[..8]), le64(&pad[8..]), K2, n);
    }
    let mut seed = K2;
    let mut rest = tok;
    while rest.len() > 16 {
        seed = mum(le64(rest) ^ K1, le64(&rest[8..]) ^ seed);
        rest = &rest[16..];
    }
    token_final(le64(&tok[n - 16..]), le64(&tok[n - 8..]), seed, n)
}

/// [`token_hash`] of `buf[start..end]`, loading 16 bytes from `start` and masking off those
/// past the token when the buffer has them: no branch on the token's length up to 16 bytes.
#[inline(always)]
pub fn token_hash_at(buf: &[u8], start: usize, end: usize) -> u64 {
    let n = end - start;
    if n <= 16 {
        if let Some(w) = buf.get(start..start + 16) {
            let bits = 8 * n as u32;
            let lo = u64::MAX.checked_shr(64 - bits.min(64)).unwrap_or(0);
            let hi = u64::MAX.checked_shr(128 - bits.max(64)).unwrap_or(0);
            return token_final(le64(w) & lo, le64(&w[8..]) & hi, K2, n);
        }
    }
    token_hash(&buf[start..end])
}

/// The hash of a word shingle from its token hashes (see the module documentation).
#[inline]
pub fn combine(token_hashes: &[u64]) -> u64 {
    let mut h = 0u64;
    for (j, &t) in token_hashes.iter().enumerate() {
        h ^= t.rotate_left((17 * j as u32) % 64);
    }
    mix64(h)
}

/// Sorts and deduplicates shingle hashes in place, turning them into a set.
pub fn into_set(hashes: &mut Vec<u64>) {
    if hashes.len() < SMALL_SORT {
        hashes.sort_unstable();
        hashes.dedup();
        return;
    }
    let sorted = bucket_sort(hashes, |&h| h);
    // The copy back drops the repeats (the pass `dedup` would take after the sort), without a
    // branch: every hash is written, and the count advances past the new ones only. `dedup`'s
    // branch on each repeat cost more than the sort's scatter on character sets (~half repeats).
    hashes[0] = sorted[0];
    let mut kept = 1;
    for w in sorted.windows(2) {
        hashes[kept] = w[1];
        kept += usize::from(w[1] != w[0]);
    }
    hashes.truncate(kept);
}

/// Inputs shorter than this take the comparison sort.
const SMALL_SORT: usize = 256;

/// Sorts items whose order starts with a uniformly distributed `key` (a hash, or the low w bits
/// of one). Inputs of 256 or more take one counting pass on the top ⌊log2 n⌋ + 1 of the bits
/// the keys use, which leaves buckets of half to one key on average in order (a stable pass:
/// items of one key keep their order), then one insertion sort over the whole ([`settle`]),
/// which only has to order each bucket: about three passes over the data instead of a
/// comparison sort's log n (`cargo bench --bench stages -- verify/into_set`).
pub fn sort_by_uniform_key<T: Copy + Ord + Default>(items: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    if items.len() < SMALL_SORT {
        items.sort_unstable();
        return;
    }
    *items = bucket_sort(items, key);
}

/// The sort of [`sort_by_uniform_key`] (of at least 256 items), into a new vector.
fn bucket_sort<T: Copy + Ord + Default>(items: &[T], key: impl Fn(&T) -> u64) -> Vec<T> {
    let n = items.len();
    let used = 64 - items.iter().fold(0, |or, x| or | key(x)).leading_zeros();
    let bits = (usize::BITS - n.leading_zeros()).min(20).min(used);
    let shift = used - bits;
    let bucket = |x: &T| (key(x) >> shift) as usize;
    // 16-bit positions while they fit: the 2^13 buckets of a 5,000-hash set then take 16 KB,
    // well inside the L1 data cache, where 32-bit ones (and a bit more: 64 KB) spilled to L2
    // and made the scatter the sort's slowest pass.
    let mut out = if n <= usize::from(u16::MAX) {
        scatter::<T, u16>(items, bits, bucket)
    } else {
        scatter::<T, u32>(items, bits, bucket)
    };
    settle(&mut out);
    out
}

/// Orders `out`, in which each item is at most a few places after its own (after [`scatter`],
/// only items of one bucket are out of order). An insertion sort whose usual step takes no
/// unpredictable branch: the largest item so far stays in `carry`, and each step writes the smaller of it
/// and the next item one place back. Only an item two or more places after its own (three
/// items in one bucket) goes back by a loop; the branch on the alternative, an unpredictable
/// "is this item smaller than the one before", cost the old insertion sort 2.9 ns a hash.
/// Should that loop move items more than 8n places in all (keys far from uniform on top), the
/// comparison sort finishes the job.
fn settle<T: Copy + Ord>(out: &mut [T]) {
    let n = out.len();
    let Some(&first) = out.first() else {
        return;
    };
    let mut budget = 8 * n;
    let mut carry = first;
    for i in 1..n {
        let x = out[i];
        let lo = carry.min(x);
        carry = carry.max(x);
        out[i - 1] = lo;
        if i >= 2 && lo < out[i - 2] {
            let mut j = i - 1;
            while j > 0 && out[j - 1] > lo {
                out[j] = out[j - 1];
                j -= 1;
            }
            out[j] = lo;
            match budget.checked_sub(i - 1 - j) {
                Some(b) => budget = b,
                None => {
                    // out[..i] and `carry` hold the first i + 1 items.
                    out[i] = carry;
                    out.sort_unstable();
                    return;
                }
            }
        }
    }
    out[n - 1] = carry;
}

/// A bucket's running position in [`scatter`]; it holds at most the item count.
trait Position: Copy + Default {
    fn index(self) -> usize;
    fn plus(self, count: Self) -> Self;
    fn next(&mut self);
}

impl Position for u16 {
    fn index(self) -> usize {
        usize::from(self)
    }
    fn plus(self, count: u16) -> u16 {
        self + count
    }
    fn next(&mut self) {
        *self += 1;
    }
}

impl Position for u32 {
    fn index(self) -> usize {
        self as usize
    }
    fn plus(self, count: u32) -> u32 {
        self + count
    }
    fn next(&mut self) {
        *self += 1;
    }
}

/// The items in order of `bucket(item)` (< 2^bits), stable, by one counting pass and one
/// scatter; `P` must hold the item count.
fn scatter<T: Copy + Default, P: Position>(
    items: &[T],
    bits: u32,
    bucket: impl Fn(&T) -> usize,
) -> Vec<T> {
    let mut starts = vec![P::default(); 1usize << bits];
    for x in items {
        starts[bucket(x)].next();
    }
    // The running total stays in a register: `starts[i] += starts[i - 1]` chained a store and
    // a reload through every bucket, about as slow as the scatter below.
    let mut total = P::default();
    for s in starts.iter_mut() {
        (*s, total) = (total, total.plus(*s));
    }
    let mut out = vec![T::default(); items.len()];
    for x in items {
        let next = &mut starts[bucket(x)];
        out[next.index()] = *x;
        next.next();
    }
    out
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
    fn hash_sort_and_set_match_std_sort_and_dedup() {
        let mut state = 3u64;
        for n in [0usize, 5, 255, 256, 1023, 1024, 5000, 70_000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| crate::sketch::minhash::splitmix64(&mut state) >> (n % 7))
                .collect();
            v.extend_from_within(..n / 3);
            let mut expected = v.clone();
            expected.sort_unstable();
            let mut set = v.clone();
            sort_by_uniform_key(&mut v, |&h| h);
            assert_eq!(v, expected);
            expected.dedup();
            into_set(&mut set);
            assert_eq!(set, expected, "{n}");
        }
        // Far from uniform on top: the comparison sort's fallback; and many repeats.
        for shift in [30, 0] {
            let mut v: Vec<u64> = (0..3000)
                .map(|i| crate::sketch::minhash::splitmix64(&mut state) >> shift | (i % 3))
                .collect();
            v.extend(std::iter::repeat_n(v[7], 500));
            let mut expected = v.clone();
            expected.sort_unstable();
            let mut set = v.clone();
            sort_by_uniform_key(&mut v, |&h| h);
            assert_eq!(v, expected);
            expected.dedup();
            into_set(&mut set);
            assert_eq!(set, expected);
        }
        // Both sides of the 16-bit counters' limit, and keys all in one bucket, descending:
        // the insertion loop's budget runs out and the comparison sort finishes.
        for n in [65_535u64, 65_536] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| crate::sketch::minhash::splitmix64(&mut state))
                .collect();
            let mut expected = v.clone();
            expected.sort_unstable();
            sort_by_uniform_key(&mut v, |&h| h);
            assert_eq!(v, expected, "{n}");
        }
        let mut v: Vec<u64> = (0..3000).rev().map(|i| 1 << 63 | i).collect();
        v.push(0);
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_by_uniform_key(&mut v, |&h| h);
        assert_eq!(v, expected);
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
        for len in (0..40).chain([200, 1000]) {
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
        for len in (0..70).chain([255, 256, 1001]) {
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
    fn token_hash_at_equals_token_hash_wherever_the_token_lies() {
        let text: Vec<u8> = (0..80u32).map(|i| b'a' + (i * 7 % 26) as u8).collect();
        for start in 0..text.len() {
            for end in start + 1..=text.len().min(start + 40) {
                assert_eq!(
                    token_hash_at(&text, start, end),
                    token_hash(&text[start..end]),
                    "{start}..{end}"
                );
            }
        }
        // The tokenizer's two kinds of buffer: the text itself, and the padded scratch buffer.
        let mut got = Vec::new();
        for_each_token_at(
            "ab CD ÉTÉ efghijklmnopqrstuvwxyz",
            &mut Vec::new(),
            |b, s, e| got.push(token_hash_at(b, s, e)),
        );
        let want: Vec<u64> = ["ab", "cd", "été", "efghijklmnopqrstuvwxyz"]
            .iter()
            .map(|t| token_hash(t.as_bytes()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn token_hash_separates_short_tokens_and_avalanches() {
        // Every token of up to 3 letters and digits, zero-padding lookalikes included: no
        // collision in the whole hash; none in its low or high 32 bits up to 2 bytes.
        let alphabet: Vec<u8> = (b'a'..=b'z').chain(b'0'..=b'9').chain([0u8]).collect();
        let mut tokens: Vec<Vec<u8>> = vec![Vec::new()];
        let mut all = Vec::new();
        for _ in 0..3 {
            tokens = tokens
                .iter()
                .flat_map(|t| {
                    alphabet.iter().map(move |&c| {
                        let mut t = t.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            all.extend(tokens.iter().map(|t| token_hash(t)));
        }
        let short = alphabet.len() + alphabet.len() * alphabet.len();
        for (part, n) in [
            (u64::MAX, all.len()),
            (0xFFFF_FFFF, short),
            (!0 << 32, short),
        ] {
            let mut v: Vec<u64> = all[..n].iter().map(|h| h & part).collect();
            v.sort_unstable();
            v.dedup();
            assert_eq!(v.len(), n, "mask {part:x}");
        }
        // Flipping one input bit flips about half of the output bits, for every length class.
        let mut state = 5u64;
        for len in [1usize, 3, 4, 8, 9, 15, 16, 17, 31, 40] {
            let (mut flips, mut trials) = (0u32, 0u32);
            for _ in 0..64 {
                let tok: Vec<u8> = (0..len)
                    .map(|_| crate::sketch::minhash::splitmix64(&mut state) as u8)
                    .collect();
                let h = token_hash(&tok);
                for bit in 0..8 * len {
                    let mut t = tok.clone();
                    t[bit / 8] ^= 1 << (bit % 8);
                    flips += (token_hash(&t) ^ h).count_ones();
                    trials += 1;
                }
            }
            let mean = f64::from(flips) / f64::from(trials);
            assert!((31.0..33.0).contains(&mean), "len {len}: {mean}");
        }
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
