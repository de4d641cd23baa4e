//! Tokenizing and shingling: arbitrary bytes decoded as a file is, then cut into tokens and
//! shingled by the fast paths this CPU takes (SSE2 block masks, the BMI1 word tokenizer, the
//! ASCII normalizer, AVX2 packed windows), each compared with the scalar definition.

use crate::input::read::{decode, Decoded};
use crate::sketch::shingle::{char_hash, combine, for_each_token, into_set, token_hash};
use crate::sketch::shingle::{ShingleKind, Shingler};

/// Decodes the rest of `data` (as text, lossily, where dupfind would call it binary) and
/// shingles it with `n` = 1 + the first byte mod 16, words and characters. Panics unless the
/// tokens are the README's (maximal runs of characters that are not `White_Space`, each
/// lowercased by `char::to_lowercase`), the shingles are those the scalar definition gives
/// from them, a shingler that has shingled a longer text first gives the same shingles, and
/// [`into_set`] sorts and deduplicates.
pub fn shingles(data: &[u8]) {
    let (pick, bytes) = super::choice(data);
    let n = 1 + pick % 16;
    let text = match decode(bytes) {
        Decoded::Text(text) => text,
        Decoded::Binary => String::from_utf8_lossy(bytes),
    };
    let want = scalar_tokens(&text);
    let mut got = Vec::new();
    for_each_token(&text, &mut Vec::new(), |t| got.push(t.to_vec()));
    assert!(got == want, "tokens of {text:?}: {got:?} != {want:?}");

    let longer = format!("{text} {text} Ünïcödé TEXT\u{3000}before");
    for kind in [ShingleKind::Word, ShingleKind::Char] {
        let want = scalar_shingles(kind, n, &want);
        let mut shingler = Shingler::new(kind, n);
        let mut fresh = Vec::new();
        shingler.shingle(&text, &mut fresh);
        assert_eq!(fresh, want, "{kind:?} {n} of {text:?}");
        shingler.shingle(&longer, &mut Vec::new());
        let mut reused = Vec::new();
        shingler.shingle(&text, &mut reused);
        assert_eq!(reused, want, "{kind:?} {n}, reused, of {text:?}");

        let mut set = fresh;
        into_set(&mut set);
        let mut sorted = want;
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(set, sorted);
    }
}

/// The tokens as the README defines them, one character at a time.
fn scalar_tokens(text: &str) -> Vec<Vec<u8>> {
    text.split(char::is_whitespace)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.chars()
                .flat_map(char::to_lowercase)
                .collect::<String>()
                .into_bytes()
        })
        .collect()
}

/// The shingles as the README defines them: windows of `n` token hashes combined, or of `n`
/// characters of the tokens joined by single spaces, hashed; one whole-text shingle when
/// there is less than a window.
fn scalar_shingles(kind: ShingleKind, n: usize, tokens: &[Vec<u8>]) -> Vec<u64> {
    if tokens.is_empty() {
        return Vec::new();
    }
    match kind {
        ShingleKind::Word => {
            let hashes: Vec<u64> = tokens.iter().map(|t| token_hash(t)).collect();
            if hashes.len() < n {
                return vec![combine(&hashes)];
            }
            hashes.windows(n).map(combine).collect()
        }
        ShingleKind::Char => {
            let norm = tokens.join(&b' ');
            let Ok(norm) = String::from_utf8(norm) else {
                panic!("tokens are not UTF-8");
            };
            let mut starts: Vec<usize> = norm.char_indices().map(|(i, _)| i).collect();
            let chars = starts.len();
            starts.push(norm.len());
            if chars < n {
                return vec![char_hash(norm.as_bytes())];
            }
            (0..=chars - n)
                .map(|i| char_hash(&norm.as_bytes()[starts[i]..starts[i + n]]))
                .collect()
        }
    }
}
