//! SimHash: one 64-bit fingerprint per document whose Hamming distance tracks cosine similarity,
//! and the piece tables that find every pair within a distance bound.
//!
//! Features are the document's shingles, each weighted by how often it occurs. Each feature
//! hash is first mixed with the seed, then every bit adds +w or −w to its column; the
//! fingerprint's bit is set where the column sum is positive (ties give 0).
//!
//! Pieces follow the pigeonhole principle (Manku, Jain and Das Sarma, WWW 2007): split the 64
//! bits into D+1 contiguous pieces. Two fingerprints within Hamming distance D differ in at most
//! D pieces, so they agree exactly on at least one: bucketing by each piece finds *all* such
//! pairs, which verification then filters by their true distance.

use crate::sketch::minhash::mix64;

/// Fingerprint of a document's shingle hashes, in any order, repeats included: a shingle that
/// occurs w times adds ±w to the columns, the same as one feature of weight w.
///
/// Column j's sum is `2·ones_j − n`, where `ones_j` counts the features whose mixed hash has
/// bit j set, so the bit is set where `2·ones_j > n`. The 64 counts are kept as bytes, eight to
/// a word: each byte of a hash is spread by a table into eight 0/1 bytes and added with one
/// word addition, so a feature costs eight table loads and adds, without a branch. The byte
/// counters are emptied into wide ones every 255 features, before they can overflow.
pub fn fingerprint(shingles: &[u64], seed: u64) -> u64 {
    let mut ones = [0u64; 64];
    let mut bytes = [0u64; 8];
    for chunk in shingles.chunks(255) {
        for &x in chunk {
            let h = mix64(x ^ seed);
            for (i, counter) in bytes.iter_mut().enumerate() {
                *counter += SPREAD[((h >> (8 * i)) & 0xFF) as usize];
            }
        }
        for (i, counter) in bytes.iter_mut().enumerate() {
            for k in 0..8 {
                ones[8 * i + k] += (*counter >> (8 * k)) & 0xFF;
            }
            *counter = 0;
        }
    }
    let n = shingles.len() as u64;
    (0..64).fold(0u64, |fp, bit| fp | (u64::from(2 * ones[bit] > n) << bit))
}

/// `SPREAD[b]` has byte k equal to bit k of b.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b] |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    t
};

/// Hamming distance between two fingerprints.
#[inline]
pub fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// The contiguous bit ranges (shift, width) of the D+1 pieces of a 64-bit fingerprint.
pub fn pieces(max_distance: u32) -> Vec<(u32, u32)> {
    let count = max_distance + 1;
    (0..count)
        .map(|p| {
            let start = p * 64 / count;
            let end = (p + 1) * 64 / count;
            (start, end - start)
        })
        .collect()
}

/// The value of piece `(shift, width)` of a fingerprint.
#[inline]
pub fn piece_key((shift, width): (u32, u32), fp: u64) -> u64 {
    if width >= 64 {
        fp
    } else {
        (fp >> shift) & ((1u64 << width) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::minhash::splitmix64;

    #[test]
    fn pieces_cover_all_bits_once() {
        for d in 0..20 {
            let p = pieces(d);
            assert_eq!(p.len(), d as usize + 1);
            let mut mask = 0u64;
            for &(s, w) in &p {
                let m = if w >= 64 {
                    u64::MAX
                } else {
                    ((1u64 << w) - 1) << s
                };
                assert_eq!(mask & m, 0);
                mask |= m;
            }
            assert_eq!(mask, u64::MAX);
        }
    }

    #[test]
    fn pieces_find_every_pair_within_distance_of_brute_force() {
        let mut state = 9;
        for d in [0u32, 1, 3, 6] {
            // Clustered fingerprints: random centers with a few flipped bits each.
            let mut fps = Vec::new();
            // 12 clusters under Miri, which runs about 10^4 times slower.
            for _ in 0..if cfg!(miri) { 12 } else { 60 } {
                let c = splitmix64(&mut state);
                fps.push(c);
                for _ in 0..4 {
                    let mut f = c;
                    for _ in 0..(splitmix64(&mut state) % 9) {
                        f ^= 1 << (splitmix64(&mut state) % 64);
                    }
                    fps.push(f);
                }
            }
            let p = pieces(d);
            for i in 0..fps.len() {
                for j in i + 1..fps.len() {
                    let within = distance(fps[i], fps[j]) <= d;
                    let shares = p
                        .iter()
                        .any(|&pc| piece_key(pc, fps[i]) == piece_key(pc, fps[j]));
                    assert!(
                        !within || shares,
                        "d={d}: pair {i},{j} within distance but no piece shared"
                    );
                }
            }
        }
    }

    #[test]
    fn similar_documents_have_close_fingerprints() {
        let mut state = 1;
        let base: Vec<u64> = (0..400).map(|_| splitmix64(&mut state)).collect();
        let mut near = base.clone();
        near.truncate(390);
        near.extend((0..10).map(|_| splitmix64(&mut state)));
        let other: Vec<u64> = (0..400).map(|_| splitmix64(&mut state)).collect();
        let (a, b, c) = (
            fingerprint(&base, 0),
            fingerprint(&near, 0),
            fingerprint(&other, 0),
        );
        assert!(distance(a, b) <= 8, "near: {}", distance(a, b));
        assert!(distance(a, c) >= 16, "unrelated: {}", distance(a, c));
    }

    /// The definition: column sums of ±1 per occurrence.
    fn by_columns(shingles: &[u64], seed: u64) -> u64 {
        let mut columns = [0i64; 64];
        for &x in shingles {
            let h = mix64(x ^ seed);
            for (bit, col) in columns.iter_mut().enumerate() {
                *col += (((h >> bit) & 1) as i64) * 2 - 1;
            }
        }
        (0..64).fold(0, |fp, bit| fp | (u64::from(columns[bit] > 0) << bit))
    }

    #[test]
    fn bit_sliced_counts_match_column_sums() {
        let mut state = 4;
        // Up to 300 features under Miri (about 10^4 times slower), past one 255-feature round.
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 1, 2, 3, 7, 64, 300]
        } else {
            &[0, 1, 2, 3, 7, 64, 1000, 5000]
        };
        for &n in sizes {
            let mut v: Vec<u64> = (0..n).map(|_| splitmix64(&mut state) % 50).collect();
            v.extend((0..n / 3).map(|_| splitmix64(&mut state)));
            assert_eq!(fingerprint(&v, 7), by_columns(&v, 7), "n = {n}");
        }
    }

    #[test]
    fn weights_count_repeats() {
        // A feature repeated three times outweighs two single features.
        let x = 5u64;
        let fp = fingerprint(&[x, x, x], 0);
        assert_eq!(fp, fingerprint(&[x], 0));
        assert!(distance(fingerprint(&[1, 2, x, x, x], 0), fp) < 32);
    }
}
