//! The simulated external world the handlers write to, keyed by event id.
//!
//! A handler that completes writes its event once. The world remembers which (group, event)
//! was written (one bit each) and counts the rest: duplicated processing (allowed, at least
//! once) and ghost writes (a write by a worker whose lease was no longer current when it
//! wrote: expired, superseded or settled by someone else, by the oracle's account) are visible
//! in the run's summary.

use leasehold_model::{GroupIx, Seq};

/// Writes per (group, event).
#[derive(Clone, Debug, Default)]
pub struct World {
    /// `written[group]`: bit `seq - 1` is set once the event was written.
    written: Vec<Vec<u64>>,
    duplicates: u64,
    ghost_writes: u64,
}

impl World {
    /// A world for `group_count` groups and no events.
    pub fn new(group_count: usize) -> World {
        World {
            written: vec![Vec::new(); group_count],
            duplicates: 0,
            ghost_writes: 0,
        }
    }

    /// Events `1..=count` exist.
    pub fn publish(&mut self, count: Seq) {
        let words = (count as usize).div_ceil(64);
        for bits in &mut self.written {
            if bits.len() < words {
                bits.resize(words, 0);
            }
        }
    }

    /// A handler wrote event `seq` for `group`; `current` says whether its lease was current.
    pub fn write(&mut self, group: GroupIx, seq: Seq, current: bool) {
        let index = seq as usize - 1;
        let bits = &mut self.written[group];
        if bits.len() <= index / 64 {
            bits.resize(index / 64 + 1, 0);
        }
        let mask = 1u64 << (index % 64);
        if bits[index / 64] & mask != 0 {
            self.duplicates += 1;
        }
        bits[index / 64] |= mask;
        if !current {
            self.ghost_writes += 1;
        }
    }

    /// Whether (group, seq) was written.
    pub fn written(&self, group: GroupIx, seq: Seq) -> bool {
        let index = seq as usize - 1;
        self.written[group]
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    /// Writes beyond the first, summed over every event (at-least-once duplicates).
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Writes made under a lease that was no longer current.
    pub fn ghost_writes(&self) -> u64 {
        self.ghost_writes
    }
}
