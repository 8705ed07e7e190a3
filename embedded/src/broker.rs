//! The embedded broker: the `fenced` protocol (docs/protocol.md) for many threads at once.
//!
//! Concurrency design, in one place:
//! * **Slots** (`slot`): each (group, event) record is a packed atomic word; every
//!   transition claims it with one compare-and-swap, so of an ack, an expiry, a renew and a second
//!   fetch racing on one record exactly one wins and the others re-decide on the new state.
//! * **Lease ids** come from one atomic counter, drawn by the thread that holds the slot: unique
//!   for the broker's life, never reused.
//! * **Availability gate** (one `RwLock<()>` per group, holding no data): fetches take it shared;
//!   the transitions that make a record *available* (publish, nack, expiry) take it exclusively.
//!   While a fetch scans, records can only stop being available, which makes a single-record
//!   fetch linearizable ("lowest available seq first" is a fact at its compare-and-swap).
//!   Renews take it shared too (they move a deadline, which the expiry hint below bounds);
//!   acks and rejects never touch it.
//! * **Scan hints**, so that a record stuck at the frontier (a poison event's lease) does not
//!   make every call read every record after it. Per group, `available_from` is at or below
//!   every available record's seq: a fetch starts there and, under the shared gate (nothing
//!   becomes available meanwhile), raises it to the first available record it saw.
//!   `deadline_floor` is at or below every lease's deadline: an expiry pass reads nothing while
//!   the clock is below it, and recomputes it exactly under the exclusive gate (no fetch or
//!   renew runs then). Both are lowered, never raised, by the transitions that add what they
//!   bound.
//! * **Committed frontier**: one atomic per group, advanced by a compare-and-swap loop over the
//!   contiguous settled prefix; settled is final, so it never passes an unsettled record, and the
//!   loop never moves it backwards.
//! * **Blocking fetch**: a wake generation under a mutex plus a condition variable. A waiter reads
//!   the generation *before* trying to fetch and sleeps only while it is unchanged; every
//!   publish, nack and expiry bumps it *after* its state change. No wake-up can be lost.
//!
//! Lock order: gate before slot claim; a thread holding a slot claim takes no gate and waits on
//! nothing but the dead-letter reason table.

use crate::clock::Clock;
use crate::slot::{Claim, Claimed, Tag, Word, ATTEMPTS_MAX, LEASE_ID_MAX};
use crate::store::Store;
use crate::sync::{lock, AtomicU32, AtomicU64, Condvar, Mutex, Ordering, RwLock};
use leasehold_model::broker::BrokerConfig;
use leasehold_model::types::REASON_MAX_ATTEMPTS;
use leasehold_model::{
    BrokerView, Expired, GroupIx, Lease, LeaseId, Ms, Seq, SettleError, SettleOp, SettleRequest,
    Status, Variant,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a blocked fetch sleeps at most before re-reading the clock: deadlines and
/// `not_before` times pass without any call that could wake it.
const RECHECK_INTERVAL: Duration = Duration::from_millis(5);

/// A deliberately broken twin of the broker, for proving that the loom suite catches it.
#[cfg(loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// Slots are claimed with a load, a check and a plain store instead of a compare-and-swap.
    CheckThenSet,
    /// Publish wakes blocked fetchers before the new event is visible.
    NotifyBeforeChange,
}

/// A thread-safe broker implementing the `fenced` protocol. Every method takes `&self`; share
/// it with `Arc`.
pub struct EmbeddedBroker {
    group_count: usize,
    lease_ms: Ms,
    max_attempts: u32,
    clock: Arc<dyn Clock>,
    store: Store,
    event_count: AtomicU32,
    /// Per group: shared for fetch scans, exclusive for transitions that make records available.
    gates: Box<[RwLock<()>]>,
    /// Per group: the committed frontier.
    frontiers: Box<[AtomicU32]>,
    /// Per group: the highest seq ever leased (bounds the expiry and deadline scans).
    leased_high: Box<[AtomicU32]>,
    /// Per group: no available record has a lower seq (changed under the gate; see above).
    available_from: Box<[AtomicU32]>,
    /// Per group: no lease has an earlier deadline (`Ms::MAX`: no lease).
    deadline_floor: Box<[AtomicU64]>,
    next_lease_id: AtomicU64,
    /// Records (of every group) acked or dead-lettered: each settles once, so an engine asks
    /// how many are unsettled without reading them.
    settled: AtomicU64,
    /// Dead-letter reasons other than "max attempts", keyed by (group, seq).
    reasons: Mutex<BTreeMap<(GroupIx, Seq), String>>,
    /// Wake generation for blocked fetchers.
    wake: Mutex<u64>,
    wake_signal: Condvar,
    #[cfg(loom)]
    planted: Option<PlantedBug>,
}

impl std::fmt::Debug for EmbeddedBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedBroker")
            .field("group_count", &self.group_count)
            .field("lease_ms", &self.lease_ms)
            .field("max_attempts", &self.max_attempts)
            .field("event_count", &self.event_count.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl EmbeddedBroker {
    /// A broker with no events, reading time from `clock` in the methods that do not take
    /// `now_ms`. Refuses every variant but `fenced`, zero groups, and `max_attempts` outside
    /// `1..=8191`.
    pub fn new(config: &BrokerConfig, clock: Arc<dyn Clock>) -> Result<EmbeddedBroker, String> {
        if config.variant != Variant::Fenced {
            return Err(format!(
                "the embedded broker implements only the fenced protocol, not {}",
                config.variant
            ));
        }
        if config.group_count == 0 {
            return Err("the embedded broker needs at least one group".to_string());
        }
        if config.max_attempts == 0 || config.max_attempts > ATTEMPTS_MAX {
            return Err(format!(
                "max_attempts must be between 1 and {ATTEMPTS_MAX}, not {}",
                config.max_attempts
            ));
        }
        let counters = || (0..config.group_count).map(|_| AtomicU32::new(0)).collect();
        Ok(EmbeddedBroker {
            group_count: config.group_count,
            lease_ms: config.lease_ms,
            max_attempts: config.max_attempts,
            clock,
            store: Store::new(config.group_count),
            event_count: AtomicU32::new(0),
            gates: (0..config.group_count).map(|_| RwLock::new(())).collect(),
            frontiers: counters(),
            leased_high: counters(),
            available_from: (0..config.group_count).map(|_| AtomicU32::new(1)).collect(),
            deadline_floor: (0..config.group_count)
                .map(|_| AtomicU64::new(Ms::MAX))
                .collect(),
            next_lease_id: AtomicU64::new(1),
            settled: AtomicU64::new(0),
            reasons: Mutex::new(BTreeMap::new()),
            wake: Mutex::new(0),
            wake_signal: Condvar::new(),
            #[cfg(loom)]
            planted: None,
        })
    }

    /// The same broker with a planted bug (loom suite only).
    #[cfg(loom)]
    pub fn with_planted_bug(mut self, bug: PlantedBug) -> EmbeddedBroker {
        self.planted = Some(bug);
        self
    }

    fn claim(&self) -> Claim {
        #[cfg(loom)]
        if self.planted == Some(PlantedBug::CheckThenSet) {
            return Claim::CheckThenSet;
        }
        Claim::CompareAndSwap
    }

    fn notifies_early(&self) -> bool {
        #[cfg(loom)]
        if self.planted == Some(PlantedBug::NotifyBeforeChange) {
            return true;
        }
        false
    }

    /// The clock's current time.
    pub fn now_ms(&self) -> Ms {
        self.clock.now_ms()
    }

    /// Appends an event; every group gets an `Available { attempts: 0 }` record. Wakes blocked
    /// fetchers.
    pub fn publish(&self) -> Seq {
        let notifies_early = self.notifies_early();
        if notifies_early {
            self.notify(); // Planted bug: a waiter may look before the event exists.
        }
        let gates: Vec<_> = self.gates.iter().map(write).collect();
        let seq = self.event_count.load(Ordering::SeqCst) + 1;
        assert!(seq < Seq::MAX, "the stream is full");
        self.store.reserve(seq);
        self.event_count.store(seq, Ordering::SeqCst);
        drop(gates);
        if !notifies_early {
            self.notify();
        }
        seq
    }

    /// [`EmbeddedBroker::fetch_at`] on the broker's clock.
    pub fn fetch(
        &self,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.fetch_at(group, limit, self.clock.now_ms(), lease_ms)
    }

    /// Applies due expiries (every group), then leases up to `limit` available records of
    /// `group` whose `not_before <= now_ms`, lowest seq first, for `lease_ms` (default: the
    /// configured lease). Each record taken is one linearizable step; a batch (`limit > 1`) is
    /// not atomic as a whole when other fetchers run at the same time.
    pub fn fetch_at(
        &self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        if group >= self.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        self.expire_due_at(now_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.lease_ms));
        let _gate = read(&self.gates[group]);
        let event_count = self.event_count.load(Ordering::SeqCst);
        let mut leases = Vec::new();
        let frontier = self.frontiers[group].load(Ordering::SeqCst);
        let from = self.available_from[group].load(Ordering::SeqCst);
        let mut seq = frontier.max(from.saturating_sub(1));
        // The first record seen available: none below it is, and none becomes so while the
        // gate is held shared.
        let first_available = std::cell::Cell::new(None);
        while leases.len() < limit && seq < event_count {
            seq += 1;
            let slot = self.store.slot(group, seq);
            let due = |word: Word| {
                let available = word.tag == Tag::Available;
                if available && first_available.get().is_none() {
                    first_available.set(Some(seq));
                }
                available && slot.time_ms() <= now_ms
            };
            let Some(claimed) = slot.claim_if(self.claim(), due) else {
                continue;
            };
            if claimed.time_ms() > now_ms {
                claimed.restore();
                continue;
            }
            let lease_id = self.next_lease_id.fetch_add(1, Ordering::SeqCst);
            if lease_id > LEASE_ID_MAX {
                claimed.restore();
                return Err(SettleError::Failed("lease ids exhausted".into()));
            }
            let attempt = claimed.prior.attempts + 1;
            self.leased_high[group].fetch_max(seq, Ordering::SeqCst);
            self.deadline_floor[group].fetch_min(deadline_ms, Ordering::SeqCst);
            claimed.publish(Word::leased(attempt, LeaseId(lease_id)), deadline_ms);
            leases.push(Lease {
                lease_id: LeaseId(lease_id),
                group,
                seq,
                attempt,
                deadline_ms,
                receipt: None,
            });
        }
        // Every seq below this one was seen unavailable (a record the scan did not reach is
        // above it).
        let available_from = first_available.get().unwrap_or(seq + 1);
        self.available_from[group].fetch_max(available_from, Ordering::SeqCst);
        Ok(leases)
    }

    /// Like [`EmbeddedBroker::fetch`], but when nothing is available waits up to `timeout`
    /// (real time) for a publish, a nack or an expiry to make something available. Returns an
    /// empty vector when the timeout passes with nothing to lease. Deadlines and `not_before`
    /// times that pass on the clock are noticed within a few milliseconds.
    pub fn fetch_blocking(
        &self,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
        timeout: Duration,
    ) -> Result<Vec<Lease>, SettleError> {
        let give_up = Instant::now().checked_add(timeout);
        loop {
            let seen = *lock(&self.wake);
            let leases = self.fetch(group, limit, lease_ms)?;
            if !leases.is_empty() {
                return Ok(leases);
            }
            let mut generation = lock(&self.wake);
            if *generation == seen {
                let left = match give_up {
                    Some(give_up) => give_up.saturating_duration_since(Instant::now()),
                    None => RECHECK_INTERVAL,
                };
                if left.is_zero() {
                    return Ok(leases);
                }
                generation = self
                    .wake_signal
                    .wait_timeout(generation, left.min(RECHECK_INTERVAL))
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
            }
            drop(generation);
        }
    }

    fn notify(&self) {
        *lock(&self.wake) += 1;
        self.wake_signal.notify_all();
    }

    /// Acks `lease` at the clock's time.
    pub fn ack(&self, lease: &Lease) -> Result<(), SettleError> {
        self.settle_op(lease, SettleOp::Ack).map(drop)
    }

    /// Nacks `lease` for redelivery after `delay_ms` (dead-letters it when attempts are spent).
    pub fn nack(&self, lease: &Lease, delay_ms: Ms) -> Result<(), SettleError> {
        let op = SettleOp::Nack {
            delay_ms,
            reason: None,
        };
        self.settle_op(lease, op).map(drop)
    }

    /// Renews `lease` to `now + extend_ms`; returns the renewed lease (same id).
    pub fn renew(&self, lease: &Lease, extend_ms: Ms) -> Result<Lease, SettleError> {
        let renewed = self.settle_op(lease, SettleOp::Renew { extend_ms })?;
        Ok(renewed.expect("an accepted renew returns the renewed lease"))
    }

    /// Dead-letters `lease` at once with `reason`.
    pub fn reject(&self, lease: &Lease, reason: &str) -> Result<(), SettleError> {
        let op = SettleOp::Reject {
            reason: leasehold_model::Reason::new(reason),
        };
        self.settle_op(lease, op).map(drop)
    }

    fn settle_op(&self, lease: &Lease, op: SettleOp) -> Result<Option<Lease>, SettleError> {
        let now_ms = self.clock.now_ms();
        self.settle_at(&SettleRequest::new(lease, op, now_ms), now_ms)
    }

    /// Applies a settle or renew at `now_ms`, fenced on the lease id and the broker's own
    /// deadline. A request that fails changes nothing. An accepted renew returns the renewed
    /// lease.
    pub fn settle_at(
        &self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let (group, seq) = (lease.group, lease.seq);
        if group >= self.group_count || seq == 0 || seq > self.event_count.load(Ordering::SeqCst) {
            return Err(SettleError::Invalid(
                format!("no record for group {group} seq {seq}").into(),
            ));
        }
        // A nack may make the record available: it takes the gate before the slot. A renew
        // moves a deadline: it takes the gate shared, so that no expiry pass recomputes the
        // deadline floor meanwhile.
        let gate = matches!(request.op, SettleOp::Nack { .. }).then(|| write(&self.gates[group]));
        let _shared =
            matches!(request.op, SettleOp::Renew { .. }).then(|| read(&self.gates[group]));
        let slot = self.store.slot(group, seq);
        let current = |word: Word| word.tag == Tag::Leased && word.lease_id == lease.lease_id.0;
        let Some(claimed) = slot.claim_if(self.claim(), current) else {
            return Err(SettleError::StaleLease);
        };
        if now_ms >= claimed.time_ms() {
            claimed.restore();
            return Err(SettleError::StaleLease);
        }
        if lease.receipt.is_some() {
            // The fenced broker issues no receipts: any receipt differs from the record's.
            claimed.restore();
            return Err(SettleError::ReceiptMismatch);
        }
        let attempts = claimed.prior.attempts;
        match &request.op {
            SettleOp::Ack => {
                claimed.settle(Tag::Acked);
                self.settled.fetch_add(1, Ordering::SeqCst);
                self.advance_frontier(group);
                Ok(None)
            }
            SettleOp::Reject { reason } => {
                self.dead_letter(claimed, group, seq, reason);
                Ok(None)
            }
            SettleOp::Nack { reason, .. } if attempts >= self.max_attempts => {
                let reason = reason.as_deref().unwrap_or(REASON_MAX_ATTEMPTS);
                self.dead_letter(claimed, group, seq, reason);
                Ok(None)
            }
            SettleOp::Nack { delay_ms, .. } => {
                claimed.publish(Word::available(attempts), now_ms.saturating_add(*delay_ms));
                self.available_from[group].fetch_min(seq, Ordering::SeqCst);
                drop(gate);
                self.notify();
                Ok(None)
            }
            SettleOp::Renew { extend_ms } => {
                let deadline_ms = now_ms.saturating_add(*extend_ms);
                self.deadline_floor[group].fetch_min(deadline_ms, Ordering::SeqCst);
                claimed.publish(Word::leased(attempts, lease.lease_id), deadline_ms);
                Ok(Some(Lease {
                    deadline_ms,
                    ..*lease
                }))
            }
        }
    }

    fn dead_letter(&self, claimed: Claimed<'_>, group: GroupIx, seq: Seq, reason: &str) {
        if reason == REASON_MAX_ATTEMPTS {
            claimed.settle(Tag::DeadMaxAttempts);
        } else {
            lock(&self.reasons).insert((group, seq), reason.to_string());
            claimed.settle(Tag::DeadReason);
        }
        self.settled.fetch_add(1, Ordering::SeqCst);
        self.advance_frontier(group);
    }

    /// Moves the frontier of `group` over the contiguous settled prefix, with a
    /// compare-and-swap loop: never backwards, never past an unsettled record.
    fn advance_frontier(&self, group: GroupIx) {
        let frontier = &self.frontiers[group];
        loop {
            let current = frontier.load(Ordering::SeqCst);
            let event_count = self.event_count.load(Ordering::SeqCst);
            let mut next = current;
            while next < event_count && self.store.slot(group, next + 1).load().is_settled() {
                next += 1;
            }
            if next == current {
                return;
            }
            if frontier
                .compare_exchange(current, next, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // Records settled after this scan started run their own advance, which sees
                // ours (every access is sequentially consistent), so nothing is left behind.
                return;
            }
        }
    }

    /// [`EmbeddedBroker::expire_due_at`] on the broker's clock.
    pub fn expire_due(&self) -> Vec<Expired> {
        self.expire_due_at(self.clock.now_ms())
    }

    /// Expires every lease whose deadline is `<= now_ms`, in (group, seq) order: the record
    /// becomes available at its deadline, or is dead-lettered ("max attempts") when its attempts
    /// are spent. Wakes blocked fetchers when anything expired.
    pub fn expire_due_at(&self, now_ms: Ms) -> Vec<Expired> {
        let mut expired = Vec::new();
        for group in 0..self.group_count {
            if now_ms < self.deadline_floor[group].load(Ordering::SeqCst) {
                continue;
            }
            let gate = write(&self.gates[group]);
            let mut settled_any = false;
            // No fetch or renew runs under the exclusive gate: the leases left after this pass
            // give the exact floor.
            let mut floor = Ms::MAX;
            for seq in self.leased_range(group) {
                let slot = self.store.slot(group, seq);
                if slot.load().tag != Tag::Leased {
                    continue;
                }
                // Stable here: only a fetch, a renew or this pass moves a lease's deadline.
                let deadline_ms = slot.time_ms();
                if deadline_ms > now_ms {
                    floor = floor.min(deadline_ms);
                    continue;
                }
                let Some(claimed) = slot.claim_if(self.claim(), |word| {
                    word.tag == Tag::Leased && slot.time_ms() <= now_ms
                }) else {
                    continue;
                };
                let deadline_ms = claimed.time_ms();
                if deadline_ms > now_ms {
                    floor = floor.min(deadline_ms);
                    claimed.restore();
                    continue;
                }
                let Word {
                    attempts, lease_id, ..
                } = claimed.prior;
                let dead_lettered = attempts >= self.max_attempts;
                if dead_lettered {
                    claimed.settle(Tag::DeadMaxAttempts);
                    self.settled.fetch_add(1, Ordering::SeqCst);
                    settled_any = true;
                } else {
                    claimed.publish(Word::available(attempts), deadline_ms);
                    self.available_from[group].fetch_min(seq, Ordering::SeqCst);
                }
                expired.push(Expired {
                    deadline_ms,
                    group,
                    seq,
                    lease_id: LeaseId(lease_id),
                    dead_lettered,
                    stale_timer: None,
                });
            }
            self.deadline_floor[group].store(floor, Ordering::SeqCst);
            drop(gate);
            if settled_any {
                self.advance_frontier(group);
            }
        }
        if !expired.is_empty() {
            self.notify();
        }
        expired
    }

    /// Seqs of `group` that may hold a lease: above the frontier, up to the highest ever leased.
    fn leased_range(&self, group: GroupIx) -> std::ops::RangeInclusive<Seq> {
        let low = self.frontiers[group].load(Ordering::SeqCst) + 1;
        let high = self.leased_high[group].load(Ordering::SeqCst);
        low..=high
    }

    /// The earliest deadline of a current lease, for a simulator's timer.
    pub fn next_deadline(&self) -> Option<Ms> {
        (0..self.group_count)
            .flat_map(|group| self.leased_range(group).map(move |seq| (group, seq)))
            .filter_map(|(group, seq)| {
                let slot = self.store.slot(group, seq);
                (slot.load().tag == Tag::Leased).then(|| slot.time_ms())
            })
            .min()
    }

    /// A broker restart. Every part of this broker's state is durable under `fenced` (acks,
    /// the lease-id counter, leases and their deadlines, which stay armed), so a restart
    /// changes nothing but waking blocked fetchers.
    pub fn restart(&self) {
        self.notify();
    }

    /// The configured default lease duration.
    pub fn lease_ms(&self) -> Ms {
        self.lease_ms
    }

    /// Checks the scan hints against every record (for tests; at a quiescent point): no
    /// available record below a group's `available_from`, no lease with a deadline before its
    /// `deadline_floor`. The error names the first record that breaks one.
    pub fn audit_scan_hints(&self) -> Result<(), String> {
        for group in 0..self.group_count {
            let from = self.available_from[group].load(Ordering::SeqCst);
            let floor = self.deadline_floor[group].load(Ordering::SeqCst);
            for seq in 1..=self.event_count.load(Ordering::SeqCst) {
                let slot = self.store.slot(group, seq);
                match slot.load().tag {
                    Tag::Available if seq < from => {
                        return Err(format!(
                            "group {group}: event {seq} is available below available_from {from}"
                        ));
                    }
                    Tag::Leased if slot.time_ms() < floor => {
                        return Err(format!(
                            "group {group}: event {seq}'s lease ends at {} ms, before deadline_floor {floor}",
                            slot.time_ms()
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl BrokerView for EmbeddedBroker {
    fn group_count(&self) -> usize {
        self.group_count
    }

    fn event_count(&self) -> Seq {
        self.event_count.load(Ordering::SeqCst)
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        if group >= self.group_count || seq == 0 || seq > BrokerView::event_count(self) {
            return (Status::Dropped, None);
        }
        let word = self.store.slot(group, seq).load();
        match word.tag {
            Tag::DeadMaxAttempts => (Status::DeadLettered, Some(REASON_MAX_ATTEMPTS.to_string())),
            Tag::DeadReason => {
                let reason = lock(&self.reasons).get(&(group, seq)).cloned();
                assert!(
                    reason.is_some(),
                    "a reason is stored before its dead letter"
                );
                (Status::DeadLettered, reason)
            }
            _ => (word.status(), None),
        }
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.frontiers[group].load(Ordering::SeqCst)
    }

    /// The slot's state alone: no reason to look up, nothing allocated.
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        if group >= self.group_count || seq == 0 || seq > BrokerView::event_count(self) {
            return Status::Dropped;
        }
        self.store.slot(group, seq).load().status()
    }

    /// From the counter of settled records: every record is published into every group, and
    /// each settles once.
    fn unsettled_count(&self) -> u64 {
        let settled = self.settled.load(Ordering::SeqCst);
        let records = u64::from(BrokerView::event_count(self)) * self.group_count as u64;
        records.saturating_sub(settled)
    }
}

fn read(gate: &RwLock<()>) -> impl Drop + '_ {
    gate.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(gate: &RwLock<()>) -> impl Drop + '_ {
    gate.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
