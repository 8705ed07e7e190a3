//! One delivery record as a lock-free slot: a packed state word changed only by
//! compare-and-swap, plus one time field the word's owner writes.
//!
//! The word packs `tag (3 bits) | attempts (13 bits) | lease id (48 bits)`. Every transition
//! starts with a compare-and-swap from the state the thread observed to [`Tag::Busy`]: of any
//! number of threads racing on one slot (an ack, the expiry, a renew, a second fetch) exactly
//! one wins that swap, re-validates under it (deadline, attempts) and publishes the next state
//! with a release store. The losers see a different word and re-decide from the new state.
//! `Busy` lasts a few instructions and never spans a lock acquisition.

use crate::sync::{backoff, AtomicU64, Ordering};
use leasehold_model::{LeaseId, Ms, Status};

/// Bits of the lease id in the word. Lease ids beyond this are refused (2.8 × 10^14 leases).
pub(crate) const LEASE_ID_BITS: u32 = 48;
/// Bits of the attempt counter in the word.
pub(crate) const ATTEMPT_BITS: u32 = 13;
/// The largest lease id a slot can hold.
pub(crate) const LEASE_ID_MAX: u64 = (1 << LEASE_ID_BITS) - 1;
/// The largest `max_attempts` the embedded broker accepts.
pub const ATTEMPTS_MAX: u32 = (1 << ATTEMPT_BITS) - 1;

const _: () = assert!(3 + ATTEMPT_BITS + LEASE_ID_BITS == 64);

/// The state part of a slot's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    /// `Available`; the time field holds `not_before_ms`.
    Available = 0,
    /// `Leased`; the time field holds the deadline.
    Leased = 1,
    /// `Acked`. Final.
    Acked = 2,
    /// `DeadLettered` with the reason "max attempts". Final.
    DeadMaxAttempts = 3,
    /// `DeadLettered` with a reason kept in the broker's reason table. Final.
    DeadReason = 4,
    /// One thread is moving the slot between two states; everyone else waits.
    Busy = 7,
}

/// A decoded state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) tag: Tag,
    pub(crate) attempts: u32,
    pub(crate) lease_id: u64,
}

impl Word {
    pub(crate) fn available(attempts: u32) -> Word {
        Word {
            tag: Tag::Available,
            attempts,
            lease_id: 0,
        }
    }

    pub(crate) fn leased(attempts: u32, lease_id: LeaseId) -> Word {
        Word {
            tag: Tag::Leased,
            attempts,
            lease_id: lease_id.0,
        }
    }

    pub(crate) fn settled(tag: Tag) -> Word {
        Word {
            tag,
            attempts: 0,
            lease_id: 0,
        }
    }

    fn pack(self) -> u64 {
        debug_assert!(self.attempts <= ATTEMPTS_MAX && self.lease_id <= LEASE_ID_MAX);
        ((self.tag as u64) << 61) | (u64::from(self.attempts) << LEASE_ID_BITS) | self.lease_id
    }

    fn unpack(bits: u64) -> Word {
        let tag = match bits >> 61 {
            0 => Tag::Available,
            1 => Tag::Leased,
            2 => Tag::Acked,
            3 => Tag::DeadMaxAttempts,
            4 => Tag::DeadReason,
            7 => Tag::Busy,
            other => unreachable!("a slot word never holds tag {other}"),
        };
        Word {
            tag,
            attempts: ((bits >> LEASE_ID_BITS) & u64::from(ATTEMPTS_MAX)) as u32,
            lease_id: bits & LEASE_ID_MAX,
        }
    }

    /// Acked or dead-lettered: final states.
    pub(crate) fn is_settled(self) -> bool {
        matches!(
            self.tag,
            Tag::Acked | Tag::DeadMaxAttempts | Tag::DeadReason
        )
    }

    pub(crate) fn status(self) -> Status {
        match self.tag {
            Tag::Available => Status::Available,
            Tag::Leased => Status::Leased,
            Tag::Acked => Status::Acked,
            Tag::DeadMaxAttempts | Tag::DeadReason => Status::DeadLettered,
            Tag::Busy => unreachable!("observers wait out Busy"),
        }
    }
}

/// How a slot is claimed for a transition: the correct compare-and-swap, or (only in the loom
/// suite's broken twins) a separate load and store that two threads can both pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    CompareAndSwap,
    #[cfg_attr(not(loom), allow(dead_code))]
    CheckThenSet,
}

/// A delivery record.
#[derive(Debug)]
pub(crate) struct Slot {
    word: AtomicU64,
    /// `not_before_ms` while Available, the deadline while Leased; written only by the thread
    /// that holds the slot Busy, read by it or after an acquire load of a non-Busy word.
    time_ms: AtomicU64,
}

/// Proof that the current thread holds a slot Busy; the word it replaced.
#[must_use = "a claimed slot must be published or restored"]
pub(crate) struct Claimed<'a> {
    slot: &'a Slot,
    pub(crate) prior: Word,
}

impl Slot {
    pub(crate) fn new() -> Slot {
        Slot {
            word: AtomicU64::new(Word::available(0).pack()),
            time_ms: AtomicU64::new(0),
        }
    }

    /// The current state, waiting out a transition in progress.
    pub(crate) fn load(&self) -> Word {
        let mut spins = 0;
        loop {
            let word = Word::unpack(self.word.load(Ordering::SeqCst));
            if word.tag != Tag::Busy {
                return word;
            }
            backoff(&mut spins);
        }
    }

    /// The time field (see [`Slot::time_ms`]); meaningful for the word last loaded.
    pub(crate) fn time_ms(&self) -> Ms {
        self.time_ms.load(Ordering::SeqCst)
    }

    /// Claims the slot for a transition if its state satisfies `wanted`: exactly one of any
    /// number of racing claimers gets `Some`. Returns `None` when the state (after any
    /// transition in progress) does not satisfy `wanted`.
    pub(crate) fn claim_if(
        &self,
        claim: Claim,
        wanted: impl Fn(Word) -> bool,
    ) -> Option<Claimed<'_>> {
        loop {
            let word = self.load();
            if !wanted(word) {
                return None;
            }
            let busy = Word {
                tag: Tag::Busy,
                ..word
            };
            let won = match claim {
                Claim::CompareAndSwap => self
                    .word
                    .compare_exchange(word.pack(), busy.pack(), Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok(),
                Claim::CheckThenSet => {
                    // Planted bug: the state was checked above, and is overwritten here
                    // without checking that it is still the state that was checked.
                    self.word.store(busy.pack(), Ordering::SeqCst);
                    true
                }
            };
            if won {
                return Some(Claimed {
                    slot: self,
                    prior: word,
                });
            }
        }
    }
}

impl Claimed<'_> {
    /// The time field, read under the claim.
    pub(crate) fn time_ms(&self) -> Ms {
        self.slot.time_ms.load(Ordering::SeqCst)
    }

    /// Publishes `next` with its time field (`not_before_ms` or deadline).
    pub(crate) fn publish(self, next: Word, time_ms: Ms) {
        self.slot.time_ms.store(time_ms, Ordering::SeqCst);
        self.slot.word.store(next.pack(), Ordering::SeqCst);
    }

    /// Publishes a final state (the time field is no longer meaningful).
    pub(crate) fn settle(self, tag: Tag) {
        self.slot
            .word
            .store(Word::settled(tag).pack(), Ordering::SeqCst);
    }

    /// Gives the slot back unchanged.
    pub(crate) fn restore(self) {
        self.slot.word.store(self.prior.pack(), Ordering::SeqCst);
    }
}
