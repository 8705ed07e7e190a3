//! The engine's event queue: what is scheduled, ordered by (virtual time, insertion sequence).
//! Entries are small (a kind and a slot); the payload lives in the engine's live tables.

use leasehold_model::Ms;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at_ms, self.seq) == (other.at_ms, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed: the heap pops the earliest (time, insertion sequence) first.
    fn cmp(&self, other: &Entry) -> Ordering {
        (other.at_ms, other.seq).cmp(&(self.at_ms, self.seq))
    }
}

/// A min-queue of [`Due`] by (time, insertion sequence): ties go in insertion order.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    heap: BinaryHeap<Entry>,
    inserted: u64,
}

impl Queue {
    /// Schedules `due` at `at_ms`.
    #[inline]
    pub fn push(&mut self, at_ms: Ms, due: Due) {
        self.heap.push(Entry {
            at_ms,
            seq: self.inserted,
            due,
        });
        self.inserted += 1;
    }

    /// The time of the earliest entry.
    #[inline]
    pub fn next_ms(&self) -> Option<Ms> {
        self.heap.peek().map(|e| e.at_ms)
    }

    /// Takes the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ms, Due)> {
        self.heap.pop().map(|e| (e.at_ms, e.due))
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// How many entries are scheduled.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}
