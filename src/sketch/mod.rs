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
