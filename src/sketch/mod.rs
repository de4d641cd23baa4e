//! Sketching: text → tokens → shingles → signatures (MinHash, SimHash, bottom-k, KMV).

pub mod bottomk;
pub mod hash;
pub mod kmv;
pub mod minhash;
pub mod shingle;
pub mod simhash;
pub mod tokenize;
