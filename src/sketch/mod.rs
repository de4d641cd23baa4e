//! Sketching: text → tokens → shingles → signatures (MinHash, SimHash, bottom-k, KMV).

pub mod bottomk;
pub mod hash;
pub mod kmv;
mod kmv_filter;
mod kmv_table;
mod kperm;
pub mod minhash;
pub mod shingle;
#[cfg(target_arch = "x86_64")]
mod shingle_x86;
pub mod simhash;
pub mod sort;
pub mod tokenize;
