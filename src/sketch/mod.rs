//! Sketching: text → tokens → shingles → signatures (MinHash, SimHash, bottom-k, KMV).

pub mod bottomk;
pub mod hash;
pub mod kmv;
mod kmv_filter;
mod kmv_table;
mod kperm;
pub mod minhash;
pub mod normalize;
#[cfg(test)]
mod props;
pub mod shingle;
#[cfg(target_arch = "x86_64")]
mod shingle_x86;
pub mod simhash;
pub mod sort;
#[cfg(test)]
mod testing;
pub mod tokenize;
mod tokenize_ascii;
mod tokenize_words;
#[cfg(target_arch = "x86_64")]
mod tokenize_x86;

/// Shrinks `v` to hold at most `keep` bytes, keeping its first elements: a buffer a long
/// document grew gives back what is over `keep` (the memory budget's
/// [`RETAINED`](crate::budget::RETAINED)) and keeps what most documents need. Dropped whole,
/// as it was, it was grown again from nothing by the next documents, copied and zero-filled at
/// each step (for the tenth of a real corpus's files over 100 KB: 5 % of a run's instructions).
pub fn keep_at_most<T>(v: &mut Vec<T>, keep: usize) {
    let n = keep / std::mem::size_of::<T>().max(1);
    if v.capacity() > n {
        v.truncate(n);
        v.shrink_to(n);
    }
}

#[cfg(test)]
mod keep_tests {
    use super::keep_at_most;

    #[test]
    fn keep_at_most_shrinks_a_larger_buffer_to_its_first_elements_only() {
        let mut v: Vec<u64> = (0..1000).collect();
        keep_at_most(&mut v, 80);
        assert_eq!(
            (v.capacity(), &v[..]),
            (10, &(0..10).collect::<Vec<u64>>()[..])
        );
        let mut small: Vec<u64> = Vec::with_capacity(4);
        small.extend([7, 8]);
        keep_at_most(&mut small, 80);
        assert_eq!((small.capacity(), &small[..]), (4, &[7, 8][..]));
    }
}
