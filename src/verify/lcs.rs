//! Token-level edit similarity: the check Lee et al. ("Deduplicating Training Data Makes Language
//! Models Better", 2022) run after MinHash, because shingle sets ignore order.
//!
//! A document is the sequence of its token hashes (one per normalized token, in order; callers
//! hash each token of [`crate::sketch::shingle::for_each_token`] with xxh3-64). With L = the length of a
//! longest common subsequence of `a` and `b`, and `longer = max(|a|, |b|)`:
//!
//! ```text
//! edit_similarity(a, b) = L / longer = 1 − d / longer,   d = longer − L
//! ```
//!
//! d counts the tokens of the longer document that lie outside the common subsequence: an edit
//! distance with insertions and deletions only (a substitution counts once, as the token it
//! replaced). Two empty documents have similarity 1.0, one empty document 0.0. Unlike word
//! shingle Jaccard, moving text around costs: a document whose halves are swapped keeps almost
//! all its shingles but has similarity about 0.5.
//!
//! L is computed bit-parallel (Allison–Dix 1986, in Hyyrö's 2004 form): one bit per token of the
//! shorter sequence, one pass over the longer, O(n·m/64) word operations and O(n) words of memory.
//! For two documents at [`MAX_EDIT_TOKENS`] that is 20,000²/64 ≈ 6.25 M word steps: about 9 ms
//! in a release build on a 2-core development VM (ignored test `time_two_documents_at_the_cap`).

/// Longest document, in tokens, that [`edit_similarity_capped`] compares. The cost is quadratic:
/// two documents at the cap take about 6.25 M word steps, ten times the cap a hundred times that.
pub const MAX_EDIT_TOKENS: usize = 20_000;

/// Length of a longest common subsequence of two token-hash sequences.
///
/// Bits stand for the positions of the shorter sequence. The alphabet (64-bit hashes) is too
/// large for a per-symbol mask table, so the shorter sequence's (token, position) pairs are
/// sorted once, and each token of the longer one sets its match bits in a scratch vector for one
/// step and clears them after: O(n/64 + occurrences) per step, O(n) words in all.
pub fn lcs_len(a: &[u64], b: &[u64]) -> usize {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let n = short.len();
    if n == 0 {
        return 0;
    }
    let mut occurrences: Vec<(u64, usize)> = short.iter().copied().zip(0..).collect();
    occurrences.sort_unstable();
    let words = n.div_ceil(64);
    // V has a zero bit at every position that ends a common subsequence counted so far; the
    // number of zeros among the n bits is the LCS of the prefix read and `short`.
    let mut v = vec![u64::MAX; words];
    let mut matches = vec![0u64; words];
    for &token in long {
        let start = occurrences.partition_point(|&(t, _)| t < token);
        let run = &occurrences[start..];
        let run = &run[..run.partition_point(|&(t, _)| t == token)];
        let Some(&(_, first)) = run.first() else {
            // No match bit: V + (V & 0) | (V & !0) = V, the step changes nothing.
            continue;
        };
        for &(_, p) in run {
            matches[p / 64] |= 1 << (p % 64);
        }
        // Words below the first match see no match and no carry, so they stay as they are.
        let from = first / 64;
        step(&mut v[from..], &matches[from..]);
        for &(_, p) in run {
            matches[p / 64] = 0;
        }
    }
    let tail = n % 64;
    let mut zeros: usize = v.iter().map(|w| w.count_zeros() as usize).sum();
    if tail != 0 {
        // Bits above n in the last word started as ones but may take a carry: do not count them.
        zeros -= (v[words - 1] >> tail).count_zeros() as usize - tail;
    }
    zeros
}

/// One bit-parallel step over a multi-word vector: V ← (V + (V & M)) | (V & !M), with the
/// carry of each word's addition passed on to the next word.
#[inline]
fn step(v: &mut [u64], m: &[u64]) {
    let mut carry = false;
    for (vw, &mw) in v.iter_mut().zip(m) {
        let x = *vw;
        let (sum, c1) = x.overflowing_add(x & mw);
        let (sum, c2) = sum.overflowing_add(u64::from(carry));
        carry = c1 | c2;
        *vw = sum | (x & !mw);
    }
}

/// LCS / max(|a|, |b|): see the module documentation. 1.0 for two empty documents, 0.0 when
/// exactly one is empty. Symmetric.
pub fn edit_similarity(a: &[u64], b: &[u64]) -> f64 {
    let longer = a.len().max(b.len());
    if longer == 0 {
        return 1.0;
    }
    lcs_len(a, b) as f64 / longer as f64
}

/// [`edit_similarity`], or None when the longer document has more than [`MAX_EDIT_TOKENS`]
/// tokens (the caller falls back to Jaccard and counts the fallback).
pub fn edit_similarity_capped(a: &[u64], b: &[u64]) -> Option<f64> {
    (a.len().max(b.len()) <= MAX_EDIT_TOKENS).then(|| edit_similarity(a, b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sketch::minhash::mix64;
    use crate::sketch::shingle::{for_each_token, into_set, ShingleKind, Shingler};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use xxhash_rust::xxh3::xxh3_64;

    /// The textbook O(n·m) dynamic programme.
    fn naive_lcs(a: &[u64], b: &[u64]) -> usize {
        let mut prev = vec![0usize; b.len() + 1];
        for &x in a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    prev[j + 1].max(cur[j])
                };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    fn chars(s: &str) -> Vec<u64> {
        s.bytes().map(|c| mix64(u64::from(c))).collect()
    }

    fn random_seq(rng: &mut StdRng, len: usize, alphabet: u64) -> Vec<u64> {
        (0..len)
            .map(|_| mix64(rng.random_range(0..alphabet)))
            .collect()
    }

    fn tokens(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        for_each_token(text, &mut Vec::new(), |t| out.push(xxh3_64(t)));
        out
    }

    fn random_text(rng: &mut StdRng, words: usize) -> Vec<String> {
        (0..words)
            .map(|_| format!("w{}", rng.random_range(0..20_000)))
            .collect()
    }

    #[test]
    fn lcs_of_hand_examples() {
        assert_eq!(lcs_len(&chars("ABCBDAB"), &chars("BDCABA")), 4);
        assert_eq!(lcs_len(&chars("AGGTAB"), &chars("GXTXAYB")), 4);
        assert_eq!(lcs_len(&chars("abc"), &chars("abc")), 3);
        assert_eq!(lcs_len(&chars("abc"), &chars("def")), 0);
        assert_eq!(lcs_len(&chars("aaaa"), &chars("aa")), 2);
        assert_eq!(lcs_len(&chars(""), &chars("abc")), 0);
        assert_eq!(
            edit_similarity(&chars("kitten"), &chars("sitting")),
            4.0 / 7.0
        );
    }

    #[test]
    fn bit_parallel_lcs_matches_naive_dp_across_word_boundaries() {
        let mut rng = StdRng::seed_from_u64(11);
        for trial in 0..300 {
            let alphabet = [2, 4, 16, 1000][trial % 4];
            let (la, lb) = (rng.random_range(0..300), rng.random_range(0..300));
            let (a, b) = (
                random_seq(&mut rng, la, alphabet),
                random_seq(&mut rng, lb, alphabet),
            );
            assert_eq!(
                lcs_len(&a, &b),
                naive_lcs(&a, &b),
                "{la}×{lb} over {alphabet}"
            );
        }
        for n in [63, 64, 65, 127, 128, 129, 191, 192, 193] {
            for alphabet in [2, 8] {
                let (a, b) = (
                    random_seq(&mut rng, n, alphabet),
                    random_seq(&mut rng, n + 7, alphabet),
                );
                assert_eq!(lcs_len(&a, &b), naive_lcs(&a, &b), "n = {n}");
                assert_eq!(lcs_len(&a[..n - 1], &a), n - 1);
            }
        }
        let (a, b) = (random_seq(&mut rng, 1000, 6), random_seq(&mut rng, 1200, 6));
        assert_eq!(lcs_len(&a, &b), naive_lcs(&a, &b));
    }

    #[test]
    fn a_few_changed_words_keep_similarity_high() {
        let mut rng = StdRng::seed_from_u64(5);
        let words = random_text(&mut rng, 1000);
        let mut edited = words.clone();
        for i in 0..20 {
            edited[i * 50] = format!("changed{i}");
        }
        edited.insert(300, "inserted".into());
        edited.remove(700);
        let s = edit_similarity(&tokens(&words.join(" ")), &tokens(&edited.join(" ")));
        assert!(s >= 0.9, "{s}");
    }

    #[test]
    fn swapped_halves_halve_similarity_but_not_shingle_jaccard() {
        let mut rng = StdRng::seed_from_u64(9);
        let words = random_text(&mut rng, 1000);
        let original = words.join(" ");
        let swapped = [&words[500..], &words[..500]].concat().join(" ");
        let s = edit_similarity(&tokens(&original), &tokens(&swapped));
        assert!((0.5..0.56).contains(&s), "{s}");
        let shingle_set = |text: &str| {
            let mut out = Vec::new();
            Shingler::new(ShingleKind::Word, 5).shingle(text, &mut out);
            into_set(&mut out);
            out
        };
        let j = crate::verify::jaccard(&shingle_set(&original), &shingle_set(&swapped));
        // Only the 4 shingles crossing each seam differ: J = 992 / 1000.
        assert!(j > 0.98, "{j}");
    }

    #[test]
    fn similarity_is_symmetric_and_handles_empty_documents() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50 {
            let (la, lb) = (rng.random_range(0..200), rng.random_range(0..200));
            let (a, b) = (random_seq(&mut rng, la, 5), random_seq(&mut rng, lb, 5));
            assert_eq!(edit_similarity(&a, &b), edit_similarity(&b, &a));
        }
        assert_eq!(edit_similarity(&[], &[]), 1.0);
        assert_eq!(edit_similarity(&[1], &[]), 0.0);
        assert_eq!(edit_similarity(&[], &[1, 2]), 0.0);
        assert_eq!(edit_similarity_capped(&[], &[]), Some(1.0));
    }

    #[test]
    fn capped_similarity_refuses_documents_over_the_cap() {
        let long = vec![7u64; MAX_EDIT_TOKENS + 1];
        assert_eq!(edit_similarity_capped(&long, &[7]), None);
        assert_eq!(
            edit_similarity_capped(&long[1..], &[7]),
            Some(1.0 / MAX_EDIT_TOKENS as f64)
        );
    }

    #[test]
    #[ignore = "timing: cargo test --release --lib edit -- --ignored --nocapture"]
    fn time_two_documents_at_the_cap() {
        let mut rng = StdRng::seed_from_u64(1);
        let a = random_seq(&mut rng, MAX_EDIT_TOKENS, 5000);
        let mut b = a.clone();
        for i in (0..b.len()).step_by(10) {
            b[i] = rng.random();
        }
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let s = edit_similarity_capped(std::hint::black_box(&a), &b).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            assert!(s > 0.85);
        }
        println!(
            "two {MAX_EDIT_TOKENS}-token documents: {:.2} ms",
            best * 1e3
        );
    }
}
