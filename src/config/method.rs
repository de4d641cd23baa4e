//! What is derived from the method's options, read at the use sites instead of matched out of
//! [`MethodConfig`] there (the containment scheme and the SimHash pieces are resolved once, in
//! `validate`).

use crate::config::containment::Scheme;
use crate::config::{MethodConfig, Verify};

impl MethodConfig {
    /// Signature values per document: K for MinHash, none kept for SimHash (one slot, unused,
    /// so that rows of the signature vector line up with documents).
    pub fn lanes(&self) -> usize {
        match self {
            MethodConfig::MinHash { num_perm, .. } => *num_perm,
            MethodConfig::SimHash { .. } => 1,
        }
    }

    /// True under `--method simhash`: documents have a fingerprint, no signature.
    pub fn is_simhash(&self) -> bool {
        matches!(self, MethodConfig::SimHash { .. })
    }

    /// `--containment`: the banding of each size class offset.
    pub fn containment(&self) -> Option<&Scheme> {
        match self {
            MethodConfig::MinHash { containment, .. } => containment.as_ref(),
            MethodConfig::SimHash { .. } => None,
        }
    }

    /// The MinHash verification, None for SimHash.
    pub fn verify(&self) -> Option<Verify> {
        match self {
            MethodConfig::MinHash { verify, .. } => Some(*verify),
            MethodConfig::SimHash { .. } => None,
        }
    }

    /// `--sketch bottom-k`: the values kept per document (K).
    pub fn bottom_k(&self) -> Option<usize> {
        match self {
            MethodConfig::MinHash {
                bottom_k: true,
                num_perm,
                ..
            } => Some(*num_perm),
            _ => None,
        }
    }
}
