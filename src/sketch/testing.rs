//! Fixtures shared by the tokenizer's tests and the property tests: the tokens of a text as
//! strings, from each of the tokenizer's paths.

use crate::sketch::tokenize::{for_each_token, scalar_tokens};
use crate::sketch::tokenize_words::{hash_words, words, Word, WordBuffers};

/// The tokens of [`for_each_token`], as strings.
pub(super) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, &mut Vec::new(), |t| {
        out.push(String::from_utf8_lossy(t).into_owned())
    });
    out
}

/// The tokens of [`hash_words`], as strings; the same from its portable body.
/// `shared` is reused from text to text, as a shingler reuses it: what an earlier, longer
/// text left in it must not leak into the tokens.
pub(super) fn word_strings(text: &str, shared: &mut WordBuffers) -> Vec<String> {
    let mut run = |portable: bool| {
        let got = std::cell::RefCell::new(Vec::new());
        let hash = |w: Word<'_>| {
            got.borrow_mut().push(word_string(w));
            got.borrow().len() as u64
        };
        // `hash_words` sizes its own buffer; the portable body gets one long enough for
        // any text, of which only the first `count` slots may be written.
        let mut out: Vec<u64> = Vec::new();
        let count = if portable {
            let mut room = vec![std::mem::MaybeUninit::new(u64::MAX); text.len() + 9];
            let count = words(text, &mut WordBuffers::default(), &hash, &mut room);
            // SAFETY: every slot was initialized (to u64::MAX) before `words` wrote some.
            out.extend(room.iter().map(|x| unsafe { x.assume_init() }));
            count
        } else {
            let count = hash_words(text, shared, hash, &mut out);
            assert_eq!(
                out.len(),
                count,
                "hash_words leaves only the hashes in `out`"
            );
            count
        };
        let got = got.into_inner();
        let want: Vec<u64> = (1..=got.len() as u64).collect();
        assert_eq!(out[..count], want[..]);
        got
    };
    let out = run(false);
    assert_eq!(out, run(true));
    out
}

/// A token as [`hash_words`] hands it over, as a string; a short one must be zero past its end.
fn word_string(w: Word<'_>) -> String {
    let bytes = match w {
        Word::Short(lo, hi, n) => {
            assert!((1..=16).contains(&n), "{n}");
            let mut b = [lo.to_le_bytes(), hi.to_le_bytes()].concat();
            assert!(b[n..].iter().all(|&x| x == 0), "{b:?} {n}");
            b.truncate(n);
            b
        }
        Word::Bytes(t) => t.to_vec(),
    };
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The tokens of the scalar tokenizer alone, as strings.
pub(super) fn scalar(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    scalar_tokens(
        text,
        0,
        text.len(),
        &mut Vec::new(),
        &mut |b: &[u8], s, e| out.push(String::from_utf8_lossy(&b[s..e]).into_owned()),
    );
    out
}
