//! The simulated external world the handlers write to, keyed by event id.
//!
//! A handler that completes writes its event once. The world counts every write, so duplicated
//! processing (allowed, at least once) and ghost writes (a write by a worker whose lease was no
//! longer current when it wrote) are visible in the run's summary.

use leasehold_model::{GroupIx, Seq};

/// Writes per (group, event).
#[derive(Clone, Debug, Default)]
pub struct World {
    /// `writes[group][seq - 1]`.
    writes: Vec<Vec<u32>>,
    duplicates: u64,
    ghost_writes: u64,
}

impl World {
    /// A world for `group_count` groups and no events.
    pub fn new(group_count: usize) -> World {
        World {
            writes: vec![Vec::new(); group_count],
            duplicates: 0,
            ghost_writes: 0,
        }
    }

    /// A handler wrote event `seq` for `group`; `current` says whether its lease was current.
    pub fn write(&mut self, group: GroupIx, seq: Seq, current: bool) {
        let index = seq as usize - 1;
        let writes = &mut self.writes[group];
        if writes.len() <= index {
            writes.resize(index + 1, 0);
        }
        writes[index] += 1;
        if writes[index] > 1 {
            self.duplicates += 1;
        }
        if !current {
            self.ghost_writes += 1;
        }
    }

    /// Writes of (group, seq).
    pub fn writes(&self, group: GroupIx, seq: Seq) -> u32 {
        self.writes[group]
            .get(seq as usize - 1)
            .copied()
            .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_duplicates_and_ghost_writes() {
        let mut world = World::new(2);
        world.write(0, 3, true);
        world.write(1, 3, true);
        assert_eq!(world.duplicates(), 0);
        world.write(0, 3, false);
        assert_eq!(world.writes(0, 3), 2);
        assert_eq!(world.writes(0, 1), 0);
        assert_eq!(world.duplicates(), 1);
        assert_eq!(world.ghost_writes(), 1);
    }
}
