//! The lookup table of a KMV sketch's kept values: open addressing with linear probing on the
//! low bits (uniform, since the values are hashes), so that the few hashes that pass the
//! sketch's filter, nearly all values it already keeps, are found in a probe or two instead of
//! a binary search of 4,096 values.

/// An empty slot. A kept value equal to it is simply not in the table: lookups may miss (the
/// value is then found by binary search) but never err.
const EMPTY: u64 = u64::MAX;

/// A set of 64-bit hashes with a fixed number of slots (a power of two), rebuilt rather than
/// grown.
#[derive(Clone, Debug, Default)]
pub(super) struct Table {
    slots: Vec<u64>,
    /// Occupied slots.
    occupied: usize,
}

impl Table {
    /// True before the first [`Table::rebuild`] and after [`Table::clear`].
    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Drops every slot; the table must be rebuilt before its next use.
    pub(super) fn clear(&mut self) {
        self.slots.clear();
        self.occupied = 0;
    }

    /// True when more than 3/4 of the slots are taken: linear probing's runs grow fast past it.
    pub(super) fn is_crowded(&self) -> bool {
        4 * self.occupied > 3 * self.slots.len()
    }

    /// True if `v` is in the table. `v` must not be `u64::MAX`, which matches any empty slot
    /// (the sketch looks up only hashes below a limit, so never that one).
    #[inline]
    pub(super) fn contains(&self, v: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = v as usize & mask;
        loop {
            match self.slots[i] {
                x if x == v => return true,
                EMPTY => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Adds `v` (unless it is [`EMPTY`] or there already).
    pub(super) fn add(&mut self, v: u64) {
        if v == EMPTY {
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = v as usize & mask;
        while self.slots[i] != EMPTY {
            if self.slots[i] == v {
                return;
            }
            i = (i + 1) & mask;
        }
        self.slots[i] = v;
        self.occupied += 1;
    }

    /// A table of twice `k` slots (rounded up to a power of two) holding exactly `values`.
    pub(super) fn rebuild(&mut self, k: usize, values: &[u64]) {
        let slots = (2 * k).next_power_of_two();
        self.slots.clear();
        self.slots.resize(slots, EMPTY);
        self.occupied = 0;
        for &v in values {
            self.add(v);
        }
    }

    /// Occupied slots and all slots (for tests of the sketch's invariants).
    #[cfg(test)]
    pub(super) fn load(&self) -> (usize, usize) {
        (self.occupied, self.slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_added_but_the_empty_marker() {
        let mut t = Table::default();
        assert!(t.is_empty());
        t.rebuild(4, &[3, 11, 19, EMPTY]);
        assert_eq!(t.load(), (3, 8));
        // 3, 11 and 19 share slot 3: probing finds each, and misses past the run.
        assert!([3, 11, 19].iter().all(|&v| t.contains(v)));
        assert!(!t.contains(27));
        t.add(27);
        t.add(27);
        t.add(5);
        t.add(6);
        assert!(t.contains(27) && !t.is_crowded(), "6 of 8 slots");
        t.add(7);
        assert!(t.is_crowded(), "7 of 8 slots");
        t.clear();
        assert!(t.is_empty());
    }
}
