//! The hash scheme's primitives: the seeded mixers every hash family starts from
//! ([`mix64`], [`splitmix64`]), the token hash, the word-shingle combination and the
//! character-shingle hash, and [`HASH_SCHEME`], the version of them all that an index records.
//!
//! Tokens hash with [`token_hash`] (a wyhash-style 64-bit hash of the token's bytes as two
//! zero-padded words); a word shingle combines its `n` token hashes, token j rotated left by
//! 17·j bits, xored and finished with [`mix64`]; a character shingle of up to 7 UTF-8 bytes is
//! packed with its length into an integer and mixed, a longer one hashed with xxh3-64. What
//! these hash and in which order is `shingle`'s and `tokenize`'s; this module only hashes.
//! The tests at its foot pin today's values.

use xxhash_rust::xxh3::xxh3_64;

/// Version of the hashing that turns text into stored values (token and shingle hashes here,
/// signatures in `minhash`, fingerprints in `simhash`, content hashes in `ingest`). An index
/// records it; bump it with any change to those functions, so an old index is refused rather
/// than silently matching nothing.
pub const HASH_SCHEME: u32 = 2;

/// SplitMix64 step: the seed expander for every seeded hash family in dupfind.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix64(*state)
}

/// The SplitMix64 / MurmurHash3 finalizer: a bijective 64-bit mixer with full avalanche.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
pub(crate) fn packed_hash(packed: u64, len: usize) -> u64 {
    mix64(packed ^ packed_tag(len))
}

/// What `packed_hash` xors into a packed shingle of `len` bytes before mixing.
#[inline]
pub(crate) fn packed_tag(len: usize) -> u64 {
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
pub(crate) fn le64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

/// [`token_hash`] of a token of `n <= 16` bytes given as two little-endian words, zero past
/// the token: what the word tokenizer hands over for most tokens, so they take no branch on
/// their length.
#[inline(always)]
pub(crate) fn short_token_hash(lo: u64, hi: u64, n: usize) -> u64 {
    token_final(lo, hi, K2, n)
}

/// The hash of a token's bytes (wyhash-style, 64 bits, full avalanche). Tokens of up to 16
/// bytes are two little-endian words, zero-padded, mixed with their length by two 128-bit
/// multiplies; longer ones fold each 16 bytes into the seed first.
#[inline]
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

#[cfg(test)]
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

/// [`char_hash`] of the first `n <= 7` of the 8 bytes `w`, from one big-endian load.
#[inline]
pub(crate) fn window_hash(w: &[u8], n: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    packed_hash(u64::from_be_bytes(b) >> (64 - 8 * n as u32), n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::minhash::{MinHasher, SketchKind};
    use crate::sketch::shingle::{ShingleKind, Shingler};
    use crate::sketch::tokenize::for_each_token_at;
    use crate::sketch::{bottomk, simhash};

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
    // Under Miri (about 10^4 times slower) this would take many minutes, and it has no
    // unsafe code to check: a statistical test of 120,000 hashes, run natively.
    #[cfg_attr(miri, ignore)]
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
                let tok: Vec<u8> = (0..len).map(|_| splitmix64(&mut state) as u8).collect();
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

    /// Mixed case, punctuation, a run of white space, a tab, U+3000, non-ASCII letters whose
    /// lowercase is longer (İ), a token over 16 bytes: every branch of the tokenizer.
    const TEXT: &str = "The quick brown Fox jumps over the lazy dog;  the QUICK brown fox naps.\t\
        Straße\u{3000}ÉTÉ internationalization-of-everything 12345 İx";
    /// ASCII only: character shingles take the packed (and, where the CPU has it, AVX2) path.
    const ASCII: &str =
        "The quick  brown fox\njumps over the LAZY dog, twice: the quick brown fox.";
    /// The two seeds: the default and one other.
    const SEEDS: [u64; 2] = [0, 0x5EED];

    fn shingles(kind: ShingleKind, n: usize, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        Shingler::new(kind, n).shingle(text, &mut out);
        out
    }

    /// One value for a whole list, so a list is pinned by its first few values and this.
    fn digest(v: impl IntoIterator<Item = u64>) -> u64 {
        v.into_iter().fold(0, |h, x| mix64(h ^ x))
    }

    /// A list pinned as its length, first four values and digest.
    fn summary(v: &[u64]) -> Vec<u64> {
        let mut out = vec![v.len() as u64];
        out.extend(v.iter().take(4));
        out.push(digest(v.iter().copied()));
        out
    }

    /// Every value the test pins, named.
    fn observed() -> Vec<(String, Vec<u64>)> {
        let mut out: Vec<(String, Vec<u64>)> = Vec::new();
        let mut state = 0;
        out.push((
            "mix64(0, 1, MAX)".into(),
            vec![mix64(0), mix64(1), mix64(u64::MAX)],
        ));
        out.push((
            "splitmix64 from 0".into(),
            vec![splitmix64(&mut state), splitmix64(&mut state)],
        ));
        for t in [
            "",
            "a",
            "the",
            "sixteen-bytes-xy",
            "seventeen-bytes-z",
            "straße",
            "internationalization-of-everything",
        ] {
            out.push((format!("token_hash({t:?})"), vec![token_hash(t.as_bytes())]));
        }
        for t in ["a", "abcde", "abcdefg", "abcdefgh", "añb"] {
            out.push((format!("char_hash({t:?})"), vec![char_hash(t.as_bytes())]));
        }
        let words = shingles(ShingleKind::Word, 3, TEXT);
        out.push(("word 3-shingles of TEXT".into(), summary(&words)));
        for (name, n, text) in [("ASCII", 5, ASCII), ("TEXT", 5, TEXT), ("ASCII", 9, ASCII)] {
            let s = shingles(ShingleKind::Char, n, text);
            out.push((format!("char {n}-shingles of {name}"), summary(&s)));
        }
        let mut state = 1;
        let big: Vec<u64> = (0..1000).map(|_| splitmix64(&mut state)).collect();
        for seed in SEEDS {
            for kind in [SketchKind::Oph, SketchKind::Kperm] {
                // Few shingles (OPH densifies) and many (every bin filled).
                for (name, set) in [("word shingles", &words), ("1000 hashes", &big)] {
                    let mut sig = vec![0u32; 128];
                    MinHasher::new(kind, 128, seed).sketch(set, &mut sig, &mut Vec::new());
                    let mut v: Vec<u64> = sig[..8].iter().map(|&x| u64::from(x)).collect();
                    v.push(digest(sig.iter().map(|&x| u64::from(x))));
                    out.push((format!("{} of {name}, seed {seed:#x}", kind.name()), v));
                }
            }
            out.push((
                format!("simhash, seed {seed:#x}"),
                vec![
                    simhash::fingerprint(&words, seed),
                    simhash::fingerprint(&big, seed),
                ],
            ));
            let sketch = bottomk::sketch(&big, 64, seed);
            out.push((format!("bottom-64, seed {seed:#x}"), summary(&sketch)));
        }
        out
    }

    /// Values computed from the code as it was before the sketch modules were split (commit
    /// 2c776de). A failure here means the hash scheme changed: stored indexes would then hold
    /// signatures and shingle sets that no longer match what a scan computes, and match nothing
    /// without an error. If the change is intended, bump `HASH_SCHEME` (so old indexes are
    /// refused) and update these values; if not, the change is a bug.
    #[rustfmt::skip]
    const PINNED: &[(&str, &[u64])] = &[
        ("mix64(0, 1, MAX)", &[0x0, 0x5692161d100b05e5, 0xb4d055fcf2cbbd7b]),
        ("splitmix64 from 0", &[0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4]),
        ("token_hash(\"\")", &[0xe4b5bf0fda298d3b]),
        ("token_hash(\"a\")", &[0x3ab02a0fb314c434]),
        ("token_hash(\"the\")", &[0x6b5262e48aee7981]),
        ("token_hash(\"sixteen-bytes-xy\")", &[0x887725b8a784b9c0]),
        ("token_hash(\"seventeen-bytes-z\")", &[0xcafac3a829c11603]),
        ("token_hash(\"straße\")", &[0xc9e4e8d961129ed]),
        ("token_hash(\"internationalization-of-everything\")", &[0xd25b986cf1728dc]),
        ("char_hash(\"a\")", &[0x94072be4826ac2ab]),
        ("char_hash(\"abcde\")", &[0x954195c3c8523bd2]),
        ("char_hash(\"abcdefg\")", &[0xa8d76496f8b4c877]),
        ("char_hash(\"abcdefgh\")", &[0x6f45a76842a96483]),
        ("char_hash(\"añb\")", &[0xfff13cf1d3d6f22b]),
        ("word 3-shingles of TEXT", &[
            0x11, 0xf66a4f4f4bf6a0ea, 0x219ad6e0b32e921c, 0x6e59f6149d050ae9, 0x73e1a3f6a8b6e0e0,
            0xb9c63c9db748f6cf]),
        ("char 5-shingles of ASCII", &[
            0x44, 0xca88d32092b5393b, 0xbc103c0cfbb20f68, 0xfa7f4b32c7ef9929, 0x886063b021da7322,
            0x438e0ece69bfaec2]),
        ("char 5-shingles of TEXT", &[
            0x7a, 0xca88d32092b5393b, 0xbc103c0cfbb20f68, 0xfa7f4b32c7ef9929, 0x886063b021da7322,
            0xf5f4fda0bac5be98]),
        ("char 9-shingles of ASCII", &[
            0x40, 0x3ae780cc480516c7, 0x9f0efbb2d03b7d4e, 0x4809a134e5e00ec, 0x3ef457602a7cef11,
            0x7004bbc2f9cd63d1]),
        ("oph of word shingles, seed 0x0", &[
            0x4866515, 0x204d426, 0x204d426, 0x7c985f54, 0xb3df9498, 0x23c09bc8, 0xe6783cdb,
            0x2fa04bbd, 0x839271b24748a628]),
        ("oph of 1000 hashes, seed 0x0", &[
            0x204dff3c, 0x1aaca286, 0x49861834, 0x22bb1f55, 0x109f339c, 0x81c022f, 0x2101a9d5,
            0x136a858a, 0xaca61fff39f73763]),
        ("kperm of word shingles, seed 0x0", &[
            0x25fdbb, 0x105cbd07, 0x2136d550, 0x7640bab, 0x2a417d9, 0x1d5f57d5, 0x657c71e, 0x57bcdb,
            0x433cf97482cf6932]),
        ("kperm of 1000 hashes, seed 0x0", &[
            0x7406f4, 0xb54885, 0x8c0119, 0x11f30b, 0xc12b43, 0x2e440, 0x2efcf4, 0x3a935,
            0xad36ad1502e72795]),
        ("simhash, seed 0x0", &[0xe904f36a5beff930, 0x369c8346aec225e8]),
        ("bottom-64, seed 0x0", &[
            0x40, 0x167077add67c6d, 0x26df5fa19336d7, 0x2959fbedfa9c90, 0x6d5b674c578268,
            0xe8ba7c19a3f9eab]),
        ("oph of word shingles, seed 0x5eed", &[
            0x689f3396, 0x87cb7872, 0xab9a2b07, 0xd061d875, 0xd061d875, 0xab9a2b07, 0xe16ac75b,
            0xd061d875, 0x5d639695d4b1127]),
        ("oph of 1000 hashes, seed 0x5eed", &[
            0x2699f7c4, 0x4357d0, 0xaacc7b8, 0x90af781, 0xe8cc518, 0x3c45eaf8, 0x13a1c46b,
            0x19638843, 0xf7efb7b6c7cf6c]),
        ("kperm of word shingles, seed 0x5eed", &[
            0x905a683, 0x327c42a7, 0x30e8205, 0x1dcd8668, 0xbee9c23, 0xca1399a, 0x2a81a453,
            0x1daf1e6, 0x407bce2fbd72deb4]),
        ("kperm of 1000 hashes, seed 0x5eed", &[
            0x335bbe, 0x1a7e23, 0xf116, 0x2267a7, 0x1825a83, 0xced569, 0x3b171b, 0x6122a8,
            0xfb70458398d11b8c]),
        ("simhash, seed 0x5eed", &[0x216be2a9981354ac, 0xb8d6df35c736a4f9]),
        ("bottom-64, seed 0x5eed", &[
            0x40, 0x61f9aed25e8e72, 0xa8b5edfb5eab53, 0x1103f07ff92f8c6, 0x1e692020f0085bb,
            0xbed2200f2595c4f9]),
    ];

    #[test]
    fn hash_scheme_values_are_pinned() {
        let got = observed();
        let names: Vec<&str> = got.iter().map(|(name, _)| name.as_str()).collect();
        let want: Vec<&str> = PINNED.iter().map(|&(name, _)| name).collect();
        assert_eq!(names, want);
        for ((name, values), (_, pinned)) in got.iter().zip(PINNED) {
            assert_eq!(
                values[..],
                pinned[..],
                "{name}: the hash scheme changed, bump HASH_SCHEME"
            );
        }
    }
}
