//! The engine's event queue: what is scheduled, ordered by (virtual time, insertion sequence).
//! Entries are small (a kind and a slot); the payload lives in the engine's live tables.

use leasehold_model::Ms;

/// What happens at a queued time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// The request in this flight slot reaches the broker (again, for a duplicate).
    Deliver {
        /// The flight slot.
        slot: u32,
        /// A duplicate delivery.
        duplicate: bool,
    },
    /// The reply of the request in this flight slot reaches its worker.
    Reply {
        /// The flight slot.
        slot: u32,
    },
    /// The handler run in this run slot finishes.
    HandlerDone {
        /// The run slot.
        slot: u32,
    },
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    at_ms: Ms,
    seq: u64,
    due: Due,
}

impl Entry {
    #[inline]
    fn key(&self) -> (Ms, u64) {
        (self.at_ms, self.seq)
    }
}

/// A min-queue of [`Due`] by (time, insertion sequence): ties go in insertion order.
///
/// The queue holds what is in flight (a few entries per worker), so a vector kept sorted
/// latest first beats a heap: the earliest entry pops from the end, and an insertion moves the
/// few later entries.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    /// Sorted by key, latest first.
    entries: Vec<Entry>,
    inserted: u64,
}

impl Queue {
    /// Schedules `due` at `at_ms`.
    #[inline]
    pub fn push(&mut self, at_ms: Ms, due: Due) {
        let entry = Entry {
            at_ms,
            seq: self.inserted,
            due,
        };
        self.inserted += 1;
        // Every entry already queued has a smaller sequence: a tie in time goes after them.
        let position = self.entries.partition_point(|e| e.at_ms > at_ms);
        self.entries.insert(position, entry);
        debug_assert!(self.entries.windows(2).all(|w| w[0].key() > w[1].key()));
    }

    /// The time of the earliest entry.
    #[inline]
    pub fn next_ms(&self) -> Option<Ms> {
        self.entries.last().map(|e| e.at_ms)
    }

    /// Takes the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ms, Due)> {
        self.entries.pop().map(|e| (e.at_ms, e.due))
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries are scheduled.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
