//! The engine's event queue: what is scheduled, ordered by (virtual time, rank, insertion
//! sequence). Entries are small (a kind, a slot and a rank); the payload lives in the engine's
//! live tables. An entry pushed [`Queue::push_first`] ranks before the others due at its
//! millisecond, and before the broker's expiries due then (see [`Queue::next_is_first`]).

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
    /// 0: lands before the timers and the other entries of its millisecond; 1: after them.
    rank: u8,
    seq: u64,
    due: Due,
}

impl Entry {
    #[inline]
    fn key(&self) -> (Ms, u8, u64) {
        (self.at_ms, self.rank, self.seq)
    }
}

/// A min-queue of [`Due`] by (time, rank, insertion sequence): ties go in insertion order.
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
    /// Schedules `due` at `at_ms`, after the broker's expiries due then.
    #[inline]
    pub fn push(&mut self, at_ms: Ms, due: Due) {
        self.push_ranked(at_ms, 1, due);
    }

    /// Schedules `due` at `at_ms`, before the broker's expiries due then and before every
    /// entry of that millisecond pushed with [`Queue::push`] (a request that lands before the
    /// timer of its millisecond).
    #[inline]
    pub fn push_first(&mut self, at_ms: Ms, due: Due) {
        self.push_ranked(at_ms, 0, due);
    }

    #[inline]
    fn push_ranked(&mut self, at_ms: Ms, rank: u8, due: Due) {
        let entry = Entry {
            at_ms,
            rank,
            seq: self.inserted,
            due,
        };
        // An insertion count cannot reach 2^64: no overflow check on the hot path.
        self.inserted = self.inserted.wrapping_add(1);
        // Every entry already queued has a smaller sequence: a tie in (time, rank) goes after
        // them. The entries due before it move up one place, from the earliest: the search
        // and the move are one pass over the few that move (`Vec::insert` after a binary
        // search would call out to `memmove` for them).
        let entries = &mut self.entries;
        entries.push(entry);
        let mut i = entries.len() - 1;
        while i > 0 && (entries[i - 1].at_ms, entries[i - 1].rank) <= (at_ms, rank) {
            entries[i] = entries[i - 1];
            i -= 1;
        }
        entries[i] = entry;
        debug_assert!(self.entries.windows(2).all(|w| w[0].key() > w[1].key()));
    }

    /// The time of the earliest entry.
    #[inline]
    pub fn next_ms(&self) -> Option<Ms> {
        self.entries.last().map(|e| e.at_ms)
    }

    /// Whether the earliest entry was pushed [`Queue::push_first`]: it runs before the
    /// broker's expiries due at its millisecond.
    #[inline]
    pub fn next_is_first(&self) -> bool {
        self.entries.last().is_some_and(|e| e.rank == 0)
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
