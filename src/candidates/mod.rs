//! Candidates: signatures → the pairs worth verifying (identical groups, LSH bands, SimHash
//! pieces, containment classes).

pub mod buckets;
pub mod containment;
pub mod identical;
pub mod lsh;
