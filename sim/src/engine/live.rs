//! The engine's live state: leases a future step can name, requests in flight, handler runs
//! in progress. Each table holds what is live now and frees an entry as soon as nothing can
//! name it again, so memory follows the live set, not the run's length.

use crate::engine::Delivery;
use crate::event::{Origin, RunId};
use crate::trace::{Fault, RequestId, WorkerIx};
use leasehold_model::{Issuance, Lease, Ms, Outcome, SettleError, SettleOp};
use smallvec::SmallVec;

/// A lease the engine still tracks: the holder's copy, and whether the broker still has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveLease {
    /// The oracle's name for it.
    pub issuance: Issuance,
    /// The holder's copy (updated by an accepted renew's reply).
    pub lease: Lease,
    /// The worker that fetched it.
    pub holder: WorkerIx,
    /// The holder's incarnation when it fetched.
    pub holder_incarnation: u32,
    /// Its deadline when issued (renewals move the copy's).
    pub first_deadline_ms: Ms,
    /// How it ended at the broker, once it did.
    pub ended: Option<End>,
    /// What still names it: the holder's hand, a handler run, requests in flight, a pin.
    pub refs: u32,
}

/// How a lease ended at the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The broker expired it.
    Expired,
    /// The broker accepted a settle of it.
    Settled,
}

/// Live leases, in issuance order. A lease leaves the table when nothing names it any more and
/// the broker can no longer expire it (it ended, or a later lease of its record was issued).
///
/// A lease that ended and that nothing names is gone at once for every query, but its entry
/// stays in the vector until the next issue, which passes over the table anyway and drops it
/// there: a removal from the middle would move every later entry (80 bytes each) at each
/// settle. Such an entry is told by its state alone (no count, and an end: a live lease never
/// has both). The vector holds the live leases and those that left since the last issue.
#[derive(Clone, Debug, Default)]
pub struct LiveLeases {
    /// The entries, in issuance order: the live leases and those that left since the last
    /// issue. (Reachable for the crate's tests in tests/it.)
    #[doc(hidden)]
    pub leases: Vec<LiveLease>,
}

/// Whether an entry is one that left: it ended and nothing names it.
#[inline]
fn left(lease: &LiveLease) -> bool {
    lease.refs == 0 && lease.ended.is_some()
}

impl LiveLeases {
    /// The index of the lease `issuance` among the entries, if it is live. (Reachable for the
    /// crate's tests in tests/it.)
    #[doc(hidden)]
    #[inline]
    pub fn position(&self, issuance: Issuance) -> Option<usize> {
        // The newest lease is the one most often named (a fetch's lease, handled at once).
        let last = self.leases.len().checked_sub(1)?;
        let i = if self.leases[last].issuance == issuance {
            last
        } else {
            self.leases[..last]
                .binary_search_by_key(&issuance, |l| l.issuance)
                .ok()?
        };
        (!left(&self.leases[i])).then_some(i)
    }

    /// The lease `issuance`, if it is live.
    #[inline]
    pub fn get(&self, issuance: Issuance) -> Option<&LiveLease> {
        self.position(issuance).map(|i| &self.leases[i])
    }

    /// The lease `issuance`, to change it.
    #[inline]
    pub fn get_mut(&mut self, issuance: Issuance) -> Option<&mut LiveLease> {
        self.position(issuance).map(|i| &mut self.leases[i])
    }

    /// Adds a newly issued lease (issuances grow), forgetting the earlier leases of its record
    /// that nothing names: the broker re-leased the record, so it will not expire them.
    pub fn issue(&mut self, lease: LiveLease) {
        self.issue_dropping(lease, |_| {});
    }

    /// [`LiveLeases::issue`], handing each lease it lets go of to `dropped` (nothing names it
    /// any more: the engine tells the oracle).
    pub fn issue_dropping(&mut self, lease: LiveLease, mut dropped: impl FnMut(Issuance)) {
        let record = (lease.lease.group, lease.lease.seq);
        self.leases.retain(|l| {
            let keep = !left(l) && (l.refs > 0 || (l.lease.group, l.lease.seq) != record);
            if !keep {
                dropped(l.issuance);
            }
            keep
        });
        debug_assert!(self
            .leases
            .last()
            .is_none_or(|l| l.issuance < lease.issuance));
        self.leases.push(lease);
    }

    /// Tracks again a lease the table had let go (an engine with a recorder can name any lease
    /// it ever issued).
    pub fn reinsert(&mut self, lease: LiveLease) {
        match self
            .leases
            .binary_search_by_key(&lease.issuance, |l| l.issuance)
        {
            Ok(i) => self.leases[i] = lease,
            Err(i) => self.leases.insert(i, lease),
        }
    }

    /// One more thing names `issuance`.
    #[inline]
    pub fn retain(&mut self, issuance: Issuance) {
        if let Some(lease) = self.get_mut(issuance) {
            lease.refs += 1;
        }
    }

    /// One thing fewer names `issuance`; the lease leaves when nothing does and it ended.
    #[inline]
    pub fn release(&mut self, issuance: Issuance) {
        if let Some(lease) = self.get_mut(issuance) {
            lease.refs = lease.refs.saturating_sub(1);
        }
    }

    /// Marks `issuance` ended (`how`); it leaves when nothing names it.
    pub fn end_as(&mut self, issuance: Issuance, how: End) {
        if let Some(lease) = self.get_mut(issuance) {
            lease.ended = Some(how);
        }
    }

    /// The newest unended lease of (group, seq) with the broker's `lease_id`: the one an
    /// expiry of that record ended.
    pub fn find_unended(
        &self,
        group: usize,
        seq: u32,
        lease_id: leasehold_model::LeaseId,
    ) -> Option<Issuance> {
        self.leases
            .iter()
            .rev()
            .find(|l| {
                l.ended.is_none()
                    && l.lease.group == group
                    && l.lease.seq == seq
                    && l.lease.lease_id == lease_id
            })
            .map(|l| l.issuance)
    }

    /// Whether any lease is outstanding at the broker (issued and not ended).
    pub fn any_outstanding(&self) -> bool {
        self.leases.iter().any(|l| l.ended.is_none())
    }

    /// The first lease the table holds (issuances grow): a seeded driver names no lease below
    /// it any more.
    pub fn first_issuance(&self) -> Option<Issuance> {
        self.leases.iter().find(|l| !left(l)).map(|l| l.issuance)
    }

    /// How many leases the table holds.
    pub fn len(&self) -> usize {
        self.leases.iter().filter(|l| !left(l)).count()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.leases.iter().all(left)
    }
}

/// A table whose entries are addressed by a slot that is reused once freed (a last-in
/// first-out free list: deterministic).
///
/// A freed slot keeps its old value until the slot is reused (it is dropped then, or with the
/// table): freeing writes nothing, and an entry is written once, where it lives.
#[derive(Clone, Debug)]
pub struct Slab<T> {
    /// Each slot's entry, and whether it is live (side by side: one look-up reads both).
    slots: Vec<(bool, T)>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Slab<T> {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Stores the value `make` builds; returns its slot. (Always inlined: a large entry's
    /// construction and its store compile together at the caller.)
    #[inline(always)]
    pub fn insert_with(&mut self, make: impl FnOnce() -> T) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = (true, make());
                slot
            }
            None => {
                self.slots.push((true, make()));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The value in `slot`.
    ///
    /// # Panics
    /// When the slot is free: only a bug in the engine's bookkeeping gets there.
    #[inline]
    pub fn get(&self, slot: u32) -> &T {
        let (live, entry) = &self.slots[slot as usize];
        assert!(*live, "a queued event names a live slot");
        entry
    }

    /// The value in `slot`, to change it.
    ///
    /// # Panics
    /// When the slot is free, as [`Slab::get`].
    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut T {
        let (live, entry) = &mut self.slots[slot as usize];
        assert!(*live, "a queued event names a live slot");
        entry
    }

    /// Frees `slot` (its value stays until the slot is reused).
    ///
    /// # Panics
    /// When the slot is free already.
    #[inline]
    pub fn free(&mut self, slot: u32) {
        let live = &mut self.slots[slot as usize].0;
        assert!(*live, "a slot is freed once");
        *live = false;
        self.free.push(slot);
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether no entry is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A settle or renew request between its sending and the end of its reply.
#[derive(Clone, Debug)]
pub struct Flight {
    /// Its sequential id.
    pub id: RequestId,
    /// The sender.
    pub worker: WorkerIx,
    /// The sender's incarnation (a reply to an older one is discarded).
    pub incarnation: u32,
    /// The lease it names.
    pub issuance: Issuance,
    /// What it asks.
    pub op: SettleOp,
    /// The lease as sent.
    pub lease: Lease,
    /// The sender's clock when sending.
    pub worker_clock_ms: Ms,
    /// How it travels.
    pub delivery: Delivery,
    /// Whether the runtime may nack after it fails.
    pub nack_on_failure: bool,
    /// What the worker will see (set when it lands or is lost).
    pub seen: Option<Result<(), SettleError>>,
    /// The renewed lease its reply carries.
    pub renewed: Option<Lease>,
    /// Queued events that still name it (deliveries and the reply).
    pub pending: u8,
}

impl Flight {
    /// The injected fault.
    pub fn fault(&self) -> Fault {
        self.delivery.fault
    }
}

/// A handler run between its start and its end.
#[derive(Clone, Debug)]
pub struct Run {
    /// Its sequential id.
    pub id: RunId,
    /// The worker.
    pub worker: WorkerIx,
    /// The worker's incarnation when it started (a crash kills the run).
    pub incarnation: u32,
    /// The lease.
    pub issuance: Issuance,
    /// Its record's group.
    pub group: usize,
    /// Its record's event.
    pub seq: u32,
    /// Whether the lease was live and current when it started (for I7).
    pub started_current: bool,
    /// How the handler leaves.
    pub outcome: Outcome,
    /// The settles the runtime sends when it finishes.
    pub after: SmallVec<[SettleOp; 2]>,
    /// How those settles travel.
    pub delivery: Delivery,
}

/// Why a request is sent, with what the engine needs to attach it.
#[derive(Clone, Copy, Debug)]
pub struct SendFrom {
    /// Why.
    pub origin: Origin,
    /// Whether the runtime may nack after it fails.
    pub nack_on_failure: bool,
}
