//! Sorting hashes fast: a set from a list of shingle hashes ([`into_set`]), and a sort of any
//! items whose order starts with a uniformly distributed key ([`sort_by_uniform_key`]), both by
//! one bucket pass on the key's top bits and an insertion sort that only orders each bucket.
//! Hashes are uniform, so buckets hold about one item each and the sort is about three passes
//! over the data, not a comparison sort's log n.

/// Sorts and deduplicates shingle hashes in place, turning them into a set.
pub fn into_set(hashes: &mut Vec<u64>) {
    if hashes.len() < SMALL_SORT {
        hashes.sort_unstable();
        hashes.dedup();
        return;
    }
    if hashes.len() > SCRATCH_KEPT {
        let mut sorted = vec![0; hashes.len()];
        sort_into(hashes, &mut sorted, |&h| h);
        dedup_from(&sorted, hashes);
        return;
    }
    SCRATCH.with_borrow_mut(|scratch| {
        if scratch.len() < hashes.len() {
            scratch.resize(hashes.len(), 0);
        }
        let sorted = &mut scratch[..hashes.len()];
        sort_into(hashes, sorted, |&h| h);
        dedup_from(sorted, hashes);
    });
}

/// The largest set whose sort goes through the thread's [`SCRATCH`]: 256 KiB of it at most
/// per thread, kept between documents on top of the workers' buffers that the budget's fixed
/// cost covers (while a document is sorted, it is the sort's copy `budget::text_cost` counts).
/// Larger sets (a document of more than ~32 KB with character shingles) take a buffer of their
/// own, zeroed as before.
const SCRATCH_KEPT: usize = 1 << 15;

thread_local! {
    /// [`into_set`]'s sort target, kept from one document to the next: a new buffer was
    /// zeroed for every document only to be written over by the scatter (a memset as long as
    /// the hashes, 5.5 % of a character-shingle scan's instructions).
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Copies ascending `sorted` into `set` without its repeats (the pass `dedup` would take
/// after the sort), without a branch: every hash is written, and the count advances past the
/// new ones only. `dedup`'s branch on each repeat cost more than the sort's scatter on
/// character sets (~half repeats). `set` is as long as `sorted`, which is not empty.
fn dedup_from(sorted: &[u64], set: &mut Vec<u64>) {
    set[0] = sorted[0];
    let mut kept = 1;
    for w in sorted.windows(2) {
        set[kept] = w[1];
        kept += usize::from(w[1] != w[0]);
    }
    set.truncate(kept);
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
    let mut out = vec![T::default(); items.len()];
    sort_into(items, &mut out, key);
    out
}

/// The sort of [`sort_by_uniform_key`] (of at least 256 items) into `out`, as long as `items`;
/// whatever `out` held is written over.
fn sort_into<T: Copy + Ord>(items: &[T], out: &mut [T], key: impl Fn(&T) -> u64) {
    let n = items.len();
    let used = 64 - items.iter().fold(0, |or, x| or | key(x)).leading_zeros();
    let bits = (usize::BITS - n.leading_zeros()).min(20).min(used);
    let shift = used - bits;
    let bucket = |x: &T| (key(x) >> shift) as usize;
    // 16-bit positions while they fit: the 2^13 buckets of a 5,000-hash set then take 16 KB,
    // well inside the L1 data cache, where 32-bit ones (and a bit more: 64 KB) spilled to L2
    // and made the scatter the sort's slowest pass.
    if n <= usize::from(u16::MAX) {
        scatter::<T, u16>(items, out, bits, bucket);
    } else {
        scatter::<T, u32>(items, out, bits, bucket);
    }
    settle(out);
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

/// Writes the items into `out` (as long) in order of `bucket(item)` (< 2^bits), stable, by one
/// counting pass and one scatter; `P` must hold the item count.
fn scatter<T: Copy, P: Position>(
    items: &[T],
    out: &mut [T],
    bits: u32,
    bucket: impl Fn(&T) -> usize,
) {
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
    for x in items {
        let next = &mut starts[bucket(x)];
        out[next.index()] = *x;
        next.next();
    }
}

/// The `k` smallest values of two ascending, duplicate-free lists, ascending, without
/// duplicates.
pub(crate) fn merge_sorted(a: &[u64], b: &[u64], k: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(k.min(a.len() + b.len()));
    let (mut i, mut j) = (0, 0);
    while out.len() < k && (i < a.len() || j < b.len()) {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x == y => {
                i += 1;
                j += 1;
                x
            }
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                x
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (None, None) => break,
        };
        out.push(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::hash::splitmix64;

    #[test]
    fn hash_sort_and_set_match_std_sort_and_dedup() {
        let mut state = 3u64;
        // Under Miri, which runs about 10^4 times slower, up to 1,024 items, and not the
        // 16-bit counters' limit below (safe code, the same either side of it).
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 5, 255, 256, 1023, 1024]
        } else {
            &[0, 5, 255, 256, 1023, 1024, 5000, 70_000]
        };
        for &n in sizes {
            let mut v: Vec<u64> = (0..n).map(|_| splitmix64(&mut state) >> (n % 7)).collect();
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
                .map(|i| splitmix64(&mut state) >> shift | (i % 3))
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
        let limit: &[u64] = if cfg!(miri) { &[] } else { &[65_535, 65_536] };
        for &n in limit {
            let mut v: Vec<u64> = (0..n).map(|_| splitmix64(&mut state)).collect();
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
    fn merge_keeps_the_k_smallest_distinct_values() {
        assert_eq!(
            merge_sorted(&[1, 4, 6, 9], &[2, 4, 9, 10], 5),
            vec![1, 2, 4, 6, 9]
        );
        assert_eq!(merge_sorted(&[1, 4], &[2], 10), vec![1, 2, 4]);
        assert_eq!(merge_sorted(&[], &[3, 5], 1), vec![3]);
        assert!(merge_sorted(&[], &[], 4).is_empty());
    }
}
