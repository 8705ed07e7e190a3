//! A user's queue under test: a small in-memory queue of its own — a `Vec` of records per
//! group, a lease-id counter, deadlines, a dead-letter list — behind leasehold's `Backend`
//! and `BrokerView` traits, and its `CheckedBroker` hooks so that the model checker explores
//! it. Two builds: [`AcksByIdQueue`] ([`acks_by_id()`]), with a planted bug, and
//! [`FixedQueue`] ([`fixed()`]).
//!
//! The bug is a classic: a settle names its event, and the queue acks **the event**, whoever
//! holds it now, instead of checking that the request's lease (its fencing token) is the
//! current one. A worker whose lease expired, and whose event went to another worker, still
//! gets its late ack counted. `tests/front_door.rs` catches it with every front-door call —
//! the model checker on this very queue included — and passes on [`FixedQueue`].
//!
//! * [`InMemoryQueue`] — the queue: publish, fetch, ack / nack / renew / reject, expiry at
//!   each lease's deadline, the committed frontier.
//! * its `CheckedBroker` implementation — what the model checker needs beyond the two
//!   traits every engine drives: the leases time could end, letting time reach one of them,
//!   and a renaming of lease ids for the checker's canonical form.
//! * [`checked_fixed()`], [`checked_acks_by_id()`] — the two builds as registered values, for
//!   the model checker and every command of the command line (`check --backend in-memory`);
//!   [`fixed()`], [`acks_by_id()`] for campaigns, replays and shrinks.

use leasehold::model::{
    BrokerConfig, BrokerView, Expired, GroupIx, Lease, LeaseId, Ms, Reason, Seq, SettleError,
    SettleOp, SettleRequest, Status, Timer,
};
use leasehold::{Backend, BackendKind, CheckedBackend, CheckedBroker};

/// The queue with the planted bug: a settle applies to its event, whatever lease it names.
pub type AcksByIdQueue = InMemoryQueue<true>;

/// The fixed queue: a settle applies to the lease it names, or is refused as stale.
pub type FixedQueue = InMemoryQueue<false>;

/// The name [`AcksByIdQueue`] is registered by.
pub const ACKS_BY_ID: &str = "acks-by-id";

/// The name [`FixedQueue`] is registered by.
pub const FIXED: &str = "in-memory";

/// [`AcksByIdQueue`], registered as [`ACKS_BY_ID`] for the model checker and the simulator.
pub fn checked_acks_by_id() -> CheckedBackend {
    leasehold::checked_backend::<AcksByIdQueue>(ACKS_BY_ID)
}

/// [`FixedQueue`], registered as [`FIXED`] for the model checker and the simulator.
pub fn checked_fixed() -> CheckedBackend {
    leasehold::checked_backend::<FixedQueue>(FIXED)
}

/// [`AcksByIdQueue`] for campaigns, replays and shrinks.
pub fn acks_by_id() -> BackendKind {
    leasehold::backend::<AcksByIdQueue>(ACKS_BY_ID)
}

/// [`FixedQueue`] for campaigns, replays and shrinks.
pub fn fixed() -> BackendKind {
    leasehold::backend::<FixedQueue>(FIXED)
}

/// One event of one group, as the queue keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot {
    /// Waiting for a consumer, from `not_before_ms` on.
    Ready { deliveries: u32, not_before_ms: Ms },
    /// Handed out under `lease_id` until `until_ms`.
    Out {
        lease_id: u64,
        deliveries: u32,
        until_ms: Ms,
    },
    /// Acked.
    Done,
    /// In the dead-letter list.
    Dead,
}

impl Slot {
    fn settled(self) -> bool {
        matches!(self, Slot::Done | Slot::Dead)
    }

    fn deliveries(self) -> Option<u32> {
        match self {
            Slot::Ready { deliveries, .. } | Slot::Out { deliveries, .. } => Some(deliveries),
            Slot::Done | Slot::Dead => None,
        }
    }
}

/// A dead letter: the event and why it was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct DeadLetter {
    group: GroupIx,
    seq: Seq,
    reason: Reason,
}

/// An in-memory queue. `ACKS_BY_EVENT_ID` plants the bug.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct InMemoryQueue<const ACKS_BY_EVENT_ID: bool> {
    /// `groups[g][seq - 1]`.
    groups: Vec<Vec<Slot>>,
    /// Per group: events `1..=frontier` are all acked or dead-lettered.
    frontiers: Vec<Seq>,
    /// The next lease id; ids are never reused.
    next_lease_id: u64,
    /// Dead letters, in (group, seq) order.
    dead_letters: Vec<DeadLetter>,
    /// Records not acked or dead-lettered, every group.
    unsettled: u64,
    lease_ms: Ms,
    max_attempts: u32,
}

/// `clone_from` reuses the vectors' storage: the model checker overwrites a state with
/// another at every transition.
impl<const ACKS_BY_EVENT_ID: bool> Clone for InMemoryQueue<ACKS_BY_EVENT_ID> {
    fn clone(&self) -> Self {
        InMemoryQueue {
            groups: self.groups.clone(),
            frontiers: self.frontiers.clone(),
            next_lease_id: self.next_lease_id,
            dead_letters: self.dead_letters.clone(),
            unsettled: self.unsettled,
            lease_ms: self.lease_ms,
            max_attempts: self.max_attempts,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.groups.clone_from(&source.groups);
        self.frontiers.clone_from(&source.frontiers);
        self.next_lease_id = source.next_lease_id;
        self.dead_letters.clone_from(&source.dead_letters);
        self.unsettled = source.unsettled;
        self.lease_ms = source.lease_ms;
        self.max_attempts = source.max_attempts;
    }
}

impl<const ACKS_BY_EVENT_ID: bool> InMemoryQueue<ACKS_BY_EVENT_ID> {
    /// An empty queue with `config`'s groups, lease duration and attempts (its variant is
    /// leasehold's name for the protocol the engines expect; this queue has its own).
    pub fn new(config: &BrokerConfig) -> Self {
        InMemoryQueue {
            groups: vec![Vec::new(); config.group_count],
            frontiers: vec![0; config.group_count],
            next_lease_id: 1,
            dead_letters: Vec::new(),
            unsettled: 0,
            lease_ms: config.lease_ms,
            max_attempts: config.max_attempts,
        }
    }

    fn slot(&self, group: GroupIx, seq: Seq) -> Option<Slot> {
        let index = (seq as usize).checked_sub(1)?;
        self.groups.get(group)?.get(index).copied()
    }

    /// Replaces a slot; keeps the dead-letter list, the unsettled count and the frontier.
    fn set(&mut self, group: GroupIx, seq: Seq, slot: Slot, reason: Option<Reason>) {
        let old = std::mem::replace(&mut self.groups[group][seq as usize - 1], slot);
        if old == Slot::Dead {
            self.dead_letters
                .retain(|d| (d.group, d.seq) != (group, seq));
        }
        if slot == Slot::Dead {
            let reason = reason.unwrap_or(Reason::MAX_ATTEMPTS);
            let at = self
                .dead_letters
                .partition_point(|d| (d.group, d.seq) < (group, seq));
            self.dead_letters
                .insert(at, DeadLetter { group, seq, reason });
        }
        match (old.settled(), slot.settled()) {
            (false, true) => self.unsettled -= 1,
            (true, false) => self.unsettled += 1,
            _ => {}
        }
        let records = &self.groups[group];
        let frontier = &mut self.frontiers[group];
        while records
            .get(*frontier as usize)
            .is_some_and(|slot| slot.settled())
        {
            *frontier += 1;
        }
    }

    /// A lease that ran out: the event is ready again, or dead-lettered when it was its last
    /// delivery.
    fn expire(&mut self, group: GroupIx, seq: Seq) -> Option<Expired> {
        let Some(Slot::Out {
            lease_id,
            deliveries,
            until_ms,
        }) = self.slot(group, seq)
        else {
            return None;
        };
        let dead_lettered = deliveries >= self.max_attempts;
        let slot = if dead_lettered {
            Slot::Dead
        } else {
            Slot::Ready {
                deliveries,
                not_before_ms: until_ms,
            }
        };
        self.set(group, seq, slot, None);
        Some(Expired {
            deadline_ms: until_ms,
            group,
            seq,
            lease_id: LeaseId(lease_id),
            dead_lettered,
            stale_timer: None,
        })
    }

    /// Whether `request` may act on `slot`: the fixed queue asks for the event's current,
    /// unexpired lease; the buggy one asks that only of a renew.
    fn accepts(slot: Slot, request: &SettleRequest, now_ms: Ms) -> bool {
        let current = matches!(slot, Slot::Out { lease_id, until_ms, .. }
            if lease_id == request.lease.lease_id.0 && now_ms < until_ms);
        if ACKS_BY_EVENT_ID && !matches!(request.op, SettleOp::Renew { .. }) {
            // THE BUG: the settle finds its record by event id; the lease's token is not
            // checked.
            return true;
        }
        current
    }
}

impl<const ACKS_BY_EVENT_ID: bool> BrokerView for InMemoryQueue<ACKS_BY_EVENT_ID> {
    fn group_count(&self) -> usize {
        self.groups.len()
    }

    fn event_count(&self) -> Seq {
        self.groups[0].len() as Seq
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        let status = self.status_kind(group, seq);
        let reason = self
            .dead_letter_reason(group, seq)
            .map(|r| r.as_str().to_string());
        (status, reason)
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.frontiers[group]
    }

    // The engines ask these after every step. Their defaults read records through
    // `status()`, every record for the count: answer from what the queue keeps instead, or a
    // run's cost per step grows with its records.
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        match self.slot(group, seq) {
            Some(Slot::Ready { .. }) => Status::Available,
            Some(Slot::Out { .. }) => Status::Leased,
            Some(Slot::Done) => Status::Acked,
            Some(Slot::Dead) => Status::DeadLettered,
            None => Status::Dropped,
        }
    }

    fn dead_letter_reason(&self, group: GroupIx, seq: Seq) -> Option<Reason> {
        let at = self
            .dead_letters
            .binary_search_by(|d| (d.group, d.seq).cmp(&(group, seq)))
            .ok()?;
        Some(self.dead_letters[at].reason)
    }

    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        self.dead_letter_reason(group, seq)
            .is_some_and(|kept| kept.as_str() == reason)
    }

    fn unsettled_count(&self) -> u64 {
        self.unsettled
    }
}

impl<const ACKS_BY_EVENT_ID: bool> Backend for InMemoryQueue<ACKS_BY_EVENT_ID> {
    fn publish(&mut self) -> Seq {
        for records in &mut self.groups {
            records.push(Slot::Ready {
                deliveries: 0,
                not_before_ms: 0,
            });
        }
        self.unsettled += self.groups.len() as u64;
        self.event_count()
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        if group >= self.groups.len() {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        self.expire_due(now_ms);
        let until_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.lease_ms));
        let mut leases = Vec::new();
        for index in 0..self.groups[group].len() {
            if leases.len() == limit {
                break;
            }
            let Slot::Ready {
                deliveries,
                not_before_ms,
            } = self.groups[group][index]
            else {
                continue;
            };
            if not_before_ms > now_ms {
                continue;
            }
            let lease_id = self.next_lease_id;
            self.next_lease_id += 1;
            let seq = index as Seq + 1;
            let slot = Slot::Out {
                lease_id,
                deliveries: deliveries + 1,
                until_ms,
            };
            self.set(group, seq, slot, None);
            leases.push(Lease {
                lease_id: LeaseId(lease_id),
                group,
                seq,
                attempt: deliveries + 1,
                deadline_ms: until_ms,
                receipt: None,
            });
        }
        Ok(leases)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let Some(slot) = self.slot(lease.group, lease.seq) else {
            return Err(SettleError::Invalid(
                format!("no event {} in group {}", lease.seq, lease.group).into(),
            ));
        };
        if !Self::accepts(slot, request, now_ms) {
            return Err(SettleError::StaleLease);
        }
        if lease.receipt.is_some() {
            // The queue hands out no receipts: a request that carries one was not built from
            // a lease of this queue.
            return Err(SettleError::ReceiptMismatch);
        }
        let (group, seq) = (lease.group, lease.seq);
        let deliveries = slot.deliveries().unwrap_or(lease.attempt);
        match request.op {
            SettleOp::Renew { extend_ms } => {
                let until_ms = now_ms.saturating_add(extend_ms);
                let slot = Slot::Out {
                    lease_id: lease.lease_id.0,
                    deliveries,
                    until_ms,
                };
                self.set(group, seq, slot, None);
                return Ok(Some(Lease {
                    deadline_ms: until_ms,
                    ..*lease
                }));
            }
            SettleOp::Ack => self.set(group, seq, Slot::Done, None),
            SettleOp::Nack { reason, .. } if deliveries >= self.max_attempts => {
                self.set(group, seq, Slot::Dead, reason);
            }
            SettleOp::Nack { delay_ms, .. } => {
                let slot = Slot::Ready {
                    deliveries,
                    not_before_ms: now_ms.saturating_add(delay_ms),
                };
                self.set(group, seq, slot, None);
            }
            SettleOp::Reject { reason } => self.set(group, seq, Slot::Dead, Some(reason)),
        }
        Ok(None)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let mut due: Vec<(Ms, GroupIx, Seq)> = Vec::new();
        for (group, records) in self.groups.iter().enumerate() {
            for (index, slot) in records.iter().enumerate() {
                if let Slot::Out { until_ms, .. } = *slot {
                    if until_ms <= now_ms {
                        due.push((until_ms, group, index as Seq + 1));
                    }
                }
            }
        }
        due.sort_unstable();
        due.into_iter()
            .filter_map(|(_, group, seq)| self.expire(group, seq))
            .collect()
    }

    fn next_deadline(&self) -> Option<Ms> {
        let until = self.groups.iter().flatten().filter_map(|slot| match slot {
            Slot::Out { until_ms, .. } => Some(*until_ms),
            _ => None,
        });
        until.min()
    }

    /// Everything the queue keeps is durable (it lives as long as the process): a restart
    /// changes nothing.
    fn restart(&mut self) {}
}

/// What the model checker needs beyond `Backend` and `BrokerView`.
impl<const ACKS_BY_EVENT_ID: bool> CheckedBroker for InMemoryQueue<ACKS_BY_EVENT_ID> {
    fn with_config(config: &BrokerConfig) -> Self {
        InMemoryQueue::new(config)
    }

    /// The queue expires every lease at its deadline: one timer per event out on a lease.
    fn for_each_timer(&self, mut f: impl FnMut(&Timer)) {
        for (group, records) in self.groups.iter().enumerate() {
            for (index, slot) in records.iter().enumerate() {
                if let Slot::Out {
                    lease_id, until_ms, ..
                } = *slot
                {
                    f(&Timer {
                        deadline_ms: until_ms,
                        group: group as u32,
                        seq: index as Seq + 1,
                        lease_id: LeaseId(lease_id),
                    });
                }
            }
        }
    }

    /// The lease's deadline comes now: `expire_due` at this time gives the event back.
    fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> Option<bool> {
        let slot = self
            .groups
            .get_mut(group)?
            .get_mut((seq as usize).checked_sub(1)?)?;
        match slot {
            Slot::Out { until_ms, .. } if *until_ms > now_ms => {
                *until_ms = now_ms;
                Some(true)
            }
            _ => None,
        }
    }

    fn release_delays(&mut self, now_ms: Ms) {
        for slot in self.groups.iter_mut().flatten() {
            if let Slot::Ready { not_before_ms, .. } = slot {
                *not_before_ms = (*not_before_ms).min(now_ms);
            }
        }
    }

    /// The timed model's tick: every time the queue keeps moves `by_ms` into the past, none
    /// below `floor_ms`.
    fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) -> bool {
        let shift = |t: &mut Ms| *t = t.saturating_sub(by_ms).max(floor_ms);
        for slot in self.groups.iter_mut().flatten() {
            match slot {
                Slot::Ready { not_before_ms, .. } => shift(not_before_ms),
                Slot::Out { until_ms, .. } => shift(until_ms),
                _ => {}
            }
        }
        true
    }

    /// Symmetry over groups: nothing in the queue depends on which group is which but the
    /// group index itself, so two groups exchange their events, frontiers and dead letters.
    fn swap_groups(&mut self, a: GroupIx, b: GroupIx) -> bool {
        self.groups.swap(a, b);
        self.frontiers.swap(a, b);
        for letter in self.dead_letters.iter_mut() {
            if letter.group == a {
                letter.group = b;
            } else if letter.group == b {
                letter.group = a;
            }
        }
        self.dead_letters
            .sort_by_key(|letter| (letter.group, letter.seq));
        true
    }

    /// Only the buggy build's nack of an event that is not out reads the request's attempt.
    fn reads_request_attempt(&self) -> bool {
        ACKS_BY_EVENT_ID
    }

    fn lease_id_counter(&self) -> Option<LeaseId> {
        Some(LeaseId(self.next_lease_id))
    }

    fn for_each_lease_id(&self, mut f: impl FnMut(LeaseId)) {
        for slot in self.groups.iter().flatten() {
            if let Slot::Out { lease_id, .. } = slot {
                f(LeaseId(*lease_id));
            }
        }
        f(LeaseId(self.next_lease_id));
    }

    fn rename_lease_ids(&mut self, mut rename: impl FnMut(LeaseId) -> LeaseId) {
        for slot in self.groups.iter_mut().flatten() {
            if let Slot::Out { lease_id, .. } = slot {
                *lease_id = rename(LeaseId(*lease_id)).0;
            }
        }
        self.next_lease_id = rename(LeaseId(self.next_lease_id)).0;
    }
}
