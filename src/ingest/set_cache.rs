//! Which documents keep their shingles from the first pass, for exact MinHash verification.
//!
//! Keeping a document's shingles saves reading, decoding and shingling it a second time if it
//! turns out to be a candidate, but the budget ([`SET_CACHE_BYTES`]) holds only a few thousand
//! documents. So it is spent on the likely candidates: every document marks its band keys in a
//! bitmap (a one-hash Bloom filter), and one with two or more band keys already marked by
//! earlier documents, and so probably sharing buckets with them, is kept while the budget lasts. Others are
//! kept only while less than half of the budget is used, which covers small corpora whole.
//! A wrong guess costs time, never a result: sets that were not kept are derived again.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::config::banding::Banding;
use crate::sketch::minhash::splitmix64;

/// Bytes of shingle sets kept from the first pass.
pub const SET_CACHE_BYTES: i64 = 32 << 20;

/// The shared state of the caching decision.
pub struct SetCache {
    budget: AtomicI64,
    seen: Vec<AtomicU64>,
    banding: Banding,
    /// One odd multiplier per signature value (see [`SetCache::bit`]).
    multipliers: Vec<u64>,
    /// log2 of the bitmap's size in bits.
    bits: u32,
}

impl SetCache {
    /// A cache for `docs` documents banded by `banding`. The bitmap has about eight bits per
    /// band key (between 8 KiB and 16 MiB), so few unrelated documents look like candidates.
    pub fn new(docs: usize, banding: Banding) -> SetCache {
        let bits = (docs.saturating_mul(banding.bands) * 8)
            .next_power_of_two()
            .clamp(1 << 16, 1 << 27);
        let mut state = 0x5E7C_AC4E_u64;
        SetCache {
            budget: AtomicI64::new(SET_CACHE_BYTES),
            seen: (0..bits / 64).map(|_| AtomicU64::new(0)).collect(),
            multipliers: (0..banding.bands * banding.rows)
                .map(|_| splitmix64(&mut state) | 1)
                .collect(),
            banding,
            bits: bits.trailing_zeros(),
        }
    }

    /// The bitmap bit of a band: the top bits of a sum of its values times odd multipliers. Its
    /// values are MinHash values, uniform already, so this spreads bands as well as
    /// [`crate::candidates::keys::band_key`]'s chain of mixes at a fraction of the cost (about a tenth of a
    /// default run's first pass went into computing band keys here); a collision only costs a
    /// wrong guess.
    fn bit(&self, band: usize, values: &[u32]) -> u64 {
        let r = self.banding.rows;
        let h = values
            .iter()
            .zip(&self.multipliers[band * r..(band + 1) * r])
            // Plus one, so that a band of zeros falls on a different bit in every band.
            .fold(0u64, |h, (&v, &m)| {
                h.wrapping_add((u64::from(v) + 1).wrapping_mul(m))
            });
        h >> (64 - self.bits)
    }

    /// Sets the bitmap's `bits` and counts those already set.
    fn mark(&self, bits: &[u64]) -> usize {
        let mut hits = 0;
        for &bit in bits {
            let word = &self.seen[(bit / 64) as usize];
            let flag = 1u64 << (bit % 64);
            // A load and a store, not an atomic read-modify-write (whose locked instruction
            // was most of this function's time): a store racing with another thread's on the
            // same word may drop that thread's bit, which only makes a guess wrong.
            let old = word.load(Ordering::Relaxed);
            if old & flag != 0 {
                hits += 1;
            } else {
                word.store(old | flag, Ordering::Relaxed);
            }
        }
        hits
    }

    /// Marks the signature's band keys and says whether to keep `bytes` of its shingles, taking
    /// them from the budget if so.
    pub fn admit(&self, signature: &[u32], bytes: usize) -> bool {
        let r = self.banding.rows;
        let mut hits = 0;
        // Every band's word is asked for before any is read: the bitmap (256 KB at 10k files)
        // is out of cache by the time a document is sketched, and waiting for each band's miss
        // in turn made this 3 % of a default run.
        let mut bits = [0u64; 32];
        for first in (0..self.banding.bands).step_by(bits.len()) {
            let bands = first..self.banding.bands.min(first + bits.len());
            for (band, bit) in bands.clone().zip(&mut bits) {
                *bit = self.bit(band, &signature[band * r..(band + 1) * r]);
                crate::cpu::prefetch(&self.seen[(*bit / 64) as usize]);
            }
            hits += self.mark(&bits[..bands.len()]);
        }
        // One hit may be a bitmap collision (with 19 bands and an eighth of the bits set, most
        // documents would have one); two hits are rare by chance but usual for a near-duplicate,
        // which agrees on several bands. With a single band, one hit is all there can be.
        let partner = hits >= 2.min(self.banding.bands);
        let bytes = bytes as i64;
        if !partner && self.budget.load(Ordering::Relaxed) < SET_CACHE_BYTES / 2 {
            return false;
        }
        if self.budget.fetch_sub(bytes, Ordering::Relaxed) >= bytes {
            true
        } else {
            self.budget.fetch_add(bytes, Ordering::Relaxed);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_likely_candidates_once_half_the_budget_is_spent() {
        let cache = SetCache::new(1000, Banding { bands: 4, rows: 2 });
        let half = (SET_CACHE_BYTES / 2) as usize;
        // The first half of the budget goes to anyone.
        assert!(cache.admit(&[1, 2, 3, 4, 5, 6, 7, 8], half + 8));
        // Then a document with no band in common with earlier ones is refused, and so is one
        // sharing a single band (it may be a bitmap collision)...
        assert!(!cache.admit(&[9, 9, 9, 9, 9, 9, 9, 9], 100));
        assert!(!cache.admit(&[1, 2, 0, 0, 0, 0, 0, 0], 100));
        // ...but one sharing two bands is kept.
        assert!(cache.admit(&[1, 2, 3, 4, 1, 1, 1, 1], 100));
        // Never beyond the budget.
        assert!(!cache.admit(&[1, 2, 3, 4, 5, 6, 7, 8], half));
    }

    #[test]
    fn bands_past_the_first_32_are_marked_and_counted() {
        // Bands are taken 32 at a time: a document sharing only bands 32 and 39 with an
        // earlier one has two hits.
        let cache = SetCache::new(1000, Banding { bands: 40, rows: 1 });
        let first: Vec<u32> = (0..40).collect();
        assert!(cache.admit(&first, (SET_CACHE_BYTES / 2) as usize + 8));
        let mut one: Vec<u32> = (1000..1040).collect();
        one[32] = 32;
        assert!(!cache.admit(&one, 100), "one shared band is not enough");
        let mut two: Vec<u32> = (2000..2040).collect();
        (two[32], two[39]) = (32, 39);
        assert!(cache.admit(&two, 100));
    }
}
