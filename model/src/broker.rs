//! The broker as a pure state machine: `(state, input, now) -> (state, output)`.
//!
//! One implementation for every variant: each decision a variant can change is asked of
//! [`Variant`]. No clock, no randomness, no I/O; collections iterate in a fixed order.
//!
//! # What the state holds
//! Only what a future step or a reply can observe: the records, the frontier, the lease-id
//! counter, the acks not yet durable (`volatile-ack`) and the pending expiry **timers**. A
//! timer is the broker's promise to expire one lease at its deadline; a correct broker arms
//! one per lease and cancels it when the lease ends. Records are `Copy` and the collections
//! keep small sizes inline, so the model checker clones a broker without allocating.
//!
//! # What a step costs
//! Every operation costs what it changes, whatever the number of events: `fetch` finds the
//! lowest available record through an index (the never-delivered records form a suffix; the
//! few others sit in a short sorted list), expiry pops timers in deadline order, the frontier
//! advances over the settled prefix once, and the count of unsettled records is kept. A
//! broker restart, which loses the broker's volatile state, costs what it restores (the
//! acks it undoes, the timers it re-arms) and re-derives the frontier from the lowest record
//! that may have changed. The index is derived data: equality and hashing ignore it.

use crate::channels::{self, Channels};
use crate::inline::InlineVec;
use crate::types::{
    GroupIx, Lease, LeaseId, Ms, Reason, Receipt, Record, Seq, SettleError, SettleOp, Status,
    REASON_MAX_ATTEMPTS,
};
use crate::variant::{Fence, FrontierRule, RenewBase, Variant};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// The broker's static configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BrokerConfig {
    /// Number of consumer groups.
    pub group_count: usize,
    /// Default lease duration (for Redis variants: the claim idle time).
    pub lease_ms: Ms,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// Which protocol variant or mutant the broker runs.
    pub variant: Variant,
}

/// A settle (or renew) request as it reaches the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SettleRequest {
    /// The lease the worker holds (its copy, as `fetch` or the last renew returned it).
    pub lease: Lease,
    /// What to do.
    pub op: SettleOp,
    /// The worker's own clock when it sent the request. Only the `worker-clock-expiry` mutant
    /// looks at it.
    pub worker_clock_ms: Ms,
}

/// A lease the broker expired. `expire_due` returns them in firing order: by deadline, then
/// group, then seq (the order of the fields).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Expired {
    /// The deadline the lease had when it expired.
    pub deadline_ms: Ms,
    /// The record's group.
    pub group: GroupIx,
    /// The record's event.
    pub seq: Seq,
    /// The lease that expired.
    pub lease_id: LeaseId,
    /// Whether the expiry dead-lettered the record (attempts exhausted).
    pub dead_lettered: bool,
    /// The lease the timer that fired was armed for, when it is not the lease that expired:
    /// a timer that outlived its lease (`stale-timer`) expired the record's next one. `None`
    /// when the lease's own timer ended it, as a correct broker's always does.
    pub stale_timer: Option<LeaseId>,
}

/// A pending expiry timer: the broker will expire `lease_id` on (group, seq) at `deadline_ms`.
/// Timers order by deadline, then record: the order in which they fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Timer {
    /// When the timer fires, on the broker's clock.
    pub deadline_ms: Ms,
    /// The record's group.
    pub group: u32,
    /// The record's event.
    pub seq: Seq,
    /// The lease it was armed for.
    pub lease_id: LeaseId,
}

/// Packs the record's group and seq in one word (fewer words to fingerprint).
impl Hash for Timer {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.deadline_ms);
        state.write_u64(u64::from(self.group) | u64::from(self.seq) << 32);
        state.write_u64(self.lease_id.0);
    }
}

/// What an outside observer can read of a broker: record statuses, dead-letter reasons and the
/// committed frontier. The oracle reads brokers only through this trait.
pub trait BrokerView {
    /// Number of consumer groups.
    fn group_count(&self) -> usize;
    /// Number of events published so far.
    fn event_count(&self) -> Seq;
    /// The status of (group, seq) and, for a dead letter, its reason.
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>);
    /// The committed frontier of `group`.
    fn frontier(&self, group: GroupIx) -> Seq;
    /// The status of (group, seq) without its reason. Override it when [`BrokerView::status`]
    /// allocates: the oracle calls it for every record a step touches.
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.status(group, seq).0
    }
    /// Whether (group, seq) is dead-lettered with exactly `reason`. Override it when
    /// [`BrokerView::status`] allocates.
    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        matches!(self.status(group, seq), (Status::DeadLettered, Some(kept)) if kept == reason)
    }
    /// The dead-letter reason of (group, seq), if it is dead-lettered. Override it when
    /// [`BrokerView::status`] allocates: the oracle calls it when it first sees a dead letter.
    fn dead_letter_reason(&self, group: GroupIx, seq: Seq) -> Option<Reason> {
        match self.status(group, seq) {
            (Status::DeadLettered, reason) => Some(Reason::new(&reason.unwrap_or_default())),
            _ => None,
        }
    }
    /// Records of every group that are neither acked nor dead-lettered. The default reads every
    /// record; override it when the backend keeps the count (engines ask it after every step).
    fn unsettled_count(&self) -> u64 {
        let count = self.event_count();
        (0..self.group_count())
            .map(|group| {
                (1..=count)
                    .filter(|&seq| {
                        !matches!(
                            self.status_kind(group, seq),
                            Status::Acked | Status::DeadLettered
                        )
                    })
                    .count() as u64
            })
            .sum()
    }
    /// Writes the statuses of (group, first), (group, first + 1), … into `out`, as many as fit
    /// and are published; returns how many it wrote. Override it to read a group's records in
    /// one pass: the oracle's full audit reads every record through it.
    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        let count = self.event_count();
        let mut written = 0;
        for (slot, seq) in out.iter_mut().zip(first..=count) {
            *slot = self.status_kind(group, seq);
            written += 1;
        }
        written
    }
}

/// A boxed view reads like the view inside: every method forwards, the defaults included.
impl<V: BrokerView + ?Sized> BrokerView for Box<V> {
    fn group_count(&self) -> usize {
        (**self).group_count()
    }
    fn event_count(&self) -> Seq {
        (**self).event_count()
    }
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        (**self).status(group, seq)
    }
    fn frontier(&self, group: GroupIx) -> Seq {
        (**self).frontier(group)
    }
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        (**self).status_kind(group, seq)
    }
    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        (**self).dead_letter_reason_is(group, seq, reason)
    }
    fn dead_letter_reason(&self, group: GroupIx, seq: Seq) -> Option<Reason> {
        (**self).dead_letter_reason(group, seq)
    }
    fn unsettled_count(&self) -> u64 {
        (**self).unsettled_count()
    }
    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        (**self).status_kinds(group, first, out)
    }
}

/// One consumer group's records, frontier and fetch index.
#[derive(Debug)]
struct Group {
    /// `records[seq - 1]`.
    records: InlineVec<Record, 4>,
    frontier: Seq,
    /// Highest acked seq (only the `max-seen-frontier` mutant reads it).
    max_acked: Seq,
    /// Index: every record from this seq on was never delivered (available, no delay).
    fresh_from: Seq,
    /// Index: the available records below `fresh_from`, in seq order (in the order they came
    /// back when `returns_first`).
    returned: InlineVec<Seq, 4>,
    /// The variant delivers returned records first, in the order they came back
    /// ([`Variant::returns_first`](crate::Variant::returns_first)): `returned` is then state,
    /// not an index.
    returns_first: bool,
    /// The lowest seq at or below the frontier that became unsettled since the frontier was
    /// last derived from the records (`Seq::MAX`: none): where a restart re-derives it from.
    unsettled_below: Seq,
}

/// Copies the record lists as blocks (see [`InlineVec`]): the model checker clones a broker
/// per transition.
impl Clone for Group {
    fn clone(&self) -> Group {
        Group {
            records: self.records.clone(),
            frontier: self.frontier,
            max_acked: self.max_acked,
            fresh_from: self.fresh_from,
            returned: self.returned.clone(),
            returns_first: self.returns_first,
            unsettled_below: self.unsettled_below,
        }
    }

    fn clone_from(&mut self, source: &Group) {
        self.records.clone_from(&source.records);
        self.frontier = source.frontier;
        self.max_acked = source.max_acked;
        self.fresh_from = source.fresh_from;
        self.returned.clone_from(&source.returned);
        self.returns_first = source.returns_first;
        self.unsettled_below = source.unsettled_below;
    }
}

impl PartialEq for Group {
    fn eq(&self, other: &Group) -> bool {
        self.records == other.records
            && self.frontier == other.frontier
            && self.max_acked == other.max_acked
            && (!self.returns_first || self.returned == other.returned)
    }
}

impl Eq for Group {}

impl Hash for Group {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.records.hash(state);
        state.write_u64(u64::from(self.frontier) | u64::from(self.max_acked) << 32);
        if self.returns_first {
            // The delivery order is state here (the other variants' fingerprints stay as
            // pinned).
            state.write_usize(self.returned.len());
            for &seq in &self.returned {
                state.write_u32(seq);
            }
        }
    }
}

impl Group {
    fn new(returns_first: bool) -> Group {
        Group {
            records: InlineVec::new(),
            frontier: 0,
            max_acked: 0,
            fresh_from: 1,
            returned: InlineVec::new(),
            returns_first,
            unsettled_below: Seq::MAX,
        }
    }

    /// The lowest available record with `not_before_ms <= now_ms`.
    fn first_available(&self, now_ms: Ms) -> Option<Seq> {
        let returned = self.returned.iter().copied().find(|&seq| {
            matches!(self.records[seq as usize - 1],
                Record::Available { not_before_ms, .. } if not_before_ms <= now_ms)
        });
        let fresh = (self.fresh_from as usize <= self.records.len()).then_some(self.fresh_from);
        if self.returns_first {
            return returned.or(fresh);
        }
        match (returned, fresh) {
            (Some(r), Some(f)) => Some(r.min(f)),
            (r, f) => r.or(f),
        }
    }

    /// The available records the index names, in seq order (tests).
    fn available(&self) -> Vec<Seq> {
        let fresh = self.fresh_from..=self.records.len() as Seq;
        self.returned.iter().copied().chain(fresh).collect()
    }

    /// Rebuilds the index from the records.
    fn reindex(&mut self) {
        let mut fresh_from = self.records.len() as Seq + 1;
        while fresh_from > 1
            && self.records[fresh_from as usize - 2]
                == (Record::Available {
                    attempts: 0,
                    not_before_ms: 0,
                })
        {
            fresh_from -= 1;
        }
        self.fresh_from = fresh_from;
        self.returned = (1..fresh_from)
            .filter(|&seq| matches!(self.records[seq as usize - 1], Record::Available { .. }))
            .collect();
    }
}

impl Group {
    /// `seq` became available again: into the index (at its end, in the order records came
    /// back, when `returns_first`).
    fn push_returned(&mut self, seq: Seq) {
        if !self.returns_first {
            insert_sorted(&mut self.returned, seq);
        } else if !self.returned.contains(&seq) {
            self.returned.push(seq);
        }
    }

    /// `seq` is no longer available: out of the index.
    fn drop_returned(&mut self, seq: Seq) {
        if !self.returns_first {
            remove_sorted(&mut self.returned, seq);
        } else if let Some(position) = self.returned.iter().position(|&s| s == seq) {
            self.returned.remove(position);
        }
    }
}

fn insert_sorted(list: &mut InlineVec<Seq, 4>, seq: Seq) {
    if let Err(position) = list.binary_search(&seq) {
        list.insert(position, seq);
    }
}

fn remove_sorted(list: &mut InlineVec<Seq, 4>, seq: Seq) {
    if let Ok(position) = list.binary_search(&seq) {
        list.remove(position);
    }
}

/// The broker's whole state.
#[derive(Debug)]
pub struct Broker {
    config: BrokerConfig,
    /// A `Vec` (not inline): cloned into a recycled state, it keeps its allocation.
    groups: Vec<Group>,
    next_lease_id: u64,
    /// Acks accepted but not yet durable, with the record they replaced (`volatile-ack`), in
    /// (group, seq) order (insertion order among entries of one record).
    unflushed: InlineVec<(u32, Seq, Record), 1>,
    /// Events published but not yet durable, the last ones of the stream
    /// (`volatile-publish`).
    unflushed_events: u32,
    /// Pending expiry timers, in firing order (as many inline as records).
    timers: InlineVec<Timer, 4>,
    /// Records of every group not acked or dead-lettered (derived; kept so that "is everything
    /// settled?" costs nothing).
    unsettled: u64,
    /// The workers' channels and the deliveries they hold (`rabbitmq-channel` only: `None` in
    /// every other variant). Boxed so that the other variants' brokers stay as small; a
    /// recycled state's `clone_from` reuses the box.
    channels: Option<Box<Channels>>,
}

/// See `Group`'s `Clone`.
impl Clone for Broker {
    fn clone(&self) -> Broker {
        Broker {
            config: self.config,
            groups: self.groups.clone(),
            next_lease_id: self.next_lease_id,
            unflushed: self.unflushed.clone(),
            unflushed_events: self.unflushed_events,
            timers: self.timers.clone(),
            unsettled: self.unsettled,
            channels: self.channels.clone(),
        }
    }

    fn clone_from(&mut self, source: &Broker) {
        self.config = source.config;
        // Group by group in place (`Vec::clone_from` reuses each element's storage).
        self.groups.clone_from(&source.groups);
        self.next_lease_id = source.next_lease_id;
        self.unflushed.clone_from(&source.unflushed);
        self.unflushed_events = source.unflushed_events;
        self.timers.clone_from(&source.timers);
        self.unsettled = source.unsettled;
        self.channels.clone_from(&source.channels);
    }
}

impl PartialEq for Broker {
    fn eq(&self, other: &Broker) -> bool {
        self.config == other.config
            && self.groups == other.groups
            && self.next_lease_id == other.next_lease_id
            && self.unflushed == other.unflushed
            && self.unflushed_events == other.unflushed_events
            && self.timers == other.timers
            && self.channels == other.channels
    }
}

impl Eq for Broker {}

/// Hashes what equality compares, small fields packed together (the model checker
/// fingerprints brokers by the million), except the configuration: it is the same in every
/// state of a search, and leaving it out keeps equal brokers' hashes equal.
impl Hash for Broker {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.groups.hash(state);
        state.write_u64(self.next_lease_id);
        state.write_usize(self.unflushed.len());
        for (group, seq, prior) in &self.unflushed {
            state.write_u64(u64::from(*group) | u64::from(*seq) << 32);
            prior.hash(state);
        }
        if self.unflushed_events != 0 {
            // Only `volatile-publish` has any: the other variants' fingerprints stay as pinned.
            state.write_u32(self.unflushed_events);
        }
        self.timers.hash(state);
        if let Some(channels) = &self.channels {
            // Only `rabbitmq-channel` has channels: the other fingerprints stay as pinned.
            channels.hash(state);
        }
    }
}

const _: () = assert!(!REASON_MAX_ATTEMPTS.is_empty());

impl Broker {
    /// A broker with no events.
    ///
    /// # Panics
    /// On a configuration no user input can produce (zero groups or zero attempts): callers
    /// validate user configuration first.
    pub fn new(config: BrokerConfig) -> Broker {
        assert!(config.group_count > 0, "a broker needs at least one group");
        assert!(config.max_attempts > 0, "max_attempts must be at least 1");
        Broker {
            groups: (0..config.group_count)
                .map(|_| Group::new(config.variant.returns_first()))
                .collect(),
            next_lease_id: 1,
            unflushed: InlineVec::new(),
            unflushed_events: 0,
            timers: InlineVec::new(),
            unsettled: 0,
            channels: config
                .variant
                .channel_scoped()
                .then(|| Box::new(Channels::default())),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The variant the broker runs.
    pub fn variant(&self) -> Variant {
        self.config.variant
    }

    /// The record of (group, seq), if both exist.
    #[inline]
    pub fn record(&self, group: GroupIx, seq: Seq) -> Option<&Record> {
        let index = (seq as usize).checked_sub(1)?;
        self.groups.get(group)?.records.get(index)
    }

    /// The records of `group`, in sequence order.
    pub fn records(&self, group: GroupIx) -> &[Record] {
        &self.groups[group].records
    }

    /// The pending expiry timers, in firing order.
    pub fn timers(&self) -> &[Timer] {
        &self.timers
    }

    /// The lease-id counter: the id the next fetch hands out.
    pub fn next_lease_id(&self) -> LeaseId {
        LeaseId(self.next_lease_id)
    }

    /// The receipt the broker gives leases on event `seq`: the Redis variants' stream entry
    /// id, `jetstream`'s stream sequence, nothing for the others.
    pub fn receipt(&self, seq: Seq) -> Option<Receipt> {
        self.config
            .variant
            .receipts_name_entries()
            .then_some(entry_id(seq))
    }

    /// Makes room for `events` more events in every group.
    pub fn reserve(&mut self, events: usize) {
        for group in &mut self.groups {
            group.records.reserve(events);
        }
    }

    /// Appends an event; every group gets an `Available { attempts: 0 }` record.
    pub fn publish(&mut self) -> Seq {
        for group in &mut self.groups {
            group.records.push(Record::Available {
                attempts: 0,
                not_before_ms: 0,
            });
        }
        self.unsettled += self.groups.len() as u64;
        if !self.config.variant.publishes_durable() {
            self.unflushed_events += 1;
        }
        self.event_count()
    }

    /// Applies due expiries, then leases up to `limit` available records of `group` (lowest
    /// seq first) for `lease_ms` (default: the configured lease).
    pub fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        let mut leases = Vec::new();
        self.fetch_into(group, limit, now_ms, lease_ms, &mut leases)?;
        Ok(leases)
    }

    /// [`Broker::fetch`] into `out` (cleared first): a driver that fetches in a loop reuses
    /// one buffer.
    pub fn fetch_into(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        self.fetch_into_for(0, group, limit, now_ms, lease_ms, out)
    }

    /// [`Broker::fetch_into`] on behalf of the worker named `worker`: in `rabbitmq-channel`
    /// its deliveries go on that worker's channel for the group; every other variant ignores
    /// the name.
    pub fn fetch_as_into(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        let consumer = match &mut self.channels {
            Some(channels) => channels.consumer(worker),
            None => 0,
        };
        self.fetch_into_for(consumer, group, limit, now_ms, lease_ms, out)
    }

    fn fetch_into_for(
        &mut self,
        consumer: u32,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        out.clear();
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        let deadline_ms = self.begin_fetch(now_ms, lease_ms);
        while out.len() < limit {
            let Some(seq) = self.groups[group].first_available(now_ms) else {
                break;
            };
            let lease = self.lease(consumer, group, seq, deadline_ms);
            out.push(lease);
        }
        Ok(())
    }

    /// [`Broker::fetch`] with `limit` 1, without allocating (the model checker's fetch).
    pub fn fetch_one(
        &mut self,
        group: GroupIx,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Option<Lease>, SettleError> {
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        let deadline_ms = self.begin_fetch(now_ms, lease_ms);
        let seq = self.groups[group].first_available(now_ms);
        Ok(seq.map(|seq| self.lease(0, group, seq, deadline_ms)))
    }

    /// [`Broker::fetch_one`] on behalf of the model checker's worker `worker` (an index): in
    /// `rabbitmq-channel` its delivery goes on that worker's channel (consumer `worker + 1`;
    /// 0 is a plain fetch's).
    pub fn fetch_one_for(
        &mut self,
        worker: usize,
        group: GroupIx,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        if self.channels.is_none() {
            return self.fetch_one(group, now_ms, None);
        }
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        let deadline_ms = self.begin_fetch(now_ms, None);
        let seq = self.groups[group].first_available(now_ms);
        Ok(seq.map(|seq| self.lease(worker as u32 + 1, group, seq, deadline_ms)))
    }

    /// What every fetch does before leasing: due expiries, the periodic flush. Returns the
    /// deadline of the leases it hands out.
    fn begin_fetch(&mut self, now_ms: Ms, lease_ms: Option<Ms>) -> Ms {
        self.expire_due_each(now_ms, |_| {});
        // The periodic flush rides on fetch.
        self.unflushed.clear();
        self.unflushed_events = 0;
        let lease_ms = lease_ms.unwrap_or(self.config.lease_ms);
        now_ms.saturating_add(lease_ms)
    }

    /// Leases the available record (group, seq) until `deadline_ms` and arms its timer (in
    /// `rabbitmq-channel`, as a delivery on `consumer`'s channel for the group).
    fn lease(&mut self, consumer: u32, group: GroupIx, seq: Seq, deadline_ms: Ms) -> Lease {
        let Record::Available { attempts, .. } = self.groups[group].records[seq as usize - 1]
        else {
            unreachable!("the index names available records only")
        };
        let lease_id = match &mut self.channels {
            Some(channels) => channels.deliver(consumer, group, seq),
            None => LeaseId(self.next_lease_id),
        };
        let lease = Lease {
            lease_id,
            group,
            seq,
            attempt: attempts + 1,
            deadline_ms,
            receipt: self.receipt(seq),
        };
        // A lease id count cannot reach 2^64: no overflow check on the hot path. (Channel
        // leases are named by their channel and tag: the counter stays.)
        if lease_id.0 == self.next_lease_id {
            self.next_lease_id = self.next_lease_id.wrapping_add(1);
        }
        self.set(
            group,
            seq,
            Record::Leased {
                lease_id: lease.lease_id,
                attempts: lease.attempt,
                deadline_ms,
            },
        );
        self.arm(group, seq, lease.lease_id, deadline_ms);
        lease
    }

    /// Acks `lease`.
    pub fn ack(&mut self, lease: &Lease, now_ms: Ms) -> Result<(), SettleError> {
        self.settle(&SettleRequest::new(lease, SettleOp::Ack, now_ms), now_ms)
            .map(drop)
    }

    /// Nacks `lease` for redelivery after `delay_ms` (or dead-letters it when attempts are
    /// exhausted, with reason "max attempts").
    pub fn nack(&mut self, lease: &Lease, now_ms: Ms, delay_ms: Ms) -> Result<(), SettleError> {
        let op = SettleOp::Nack {
            delay_ms,
            reason: None,
        };
        self.settle(&SettleRequest::new(lease, op, now_ms), now_ms)
            .map(drop)
    }

    /// Renews `lease` to `now + extend_ms`; returns the renewed lease (same id).
    pub fn renew(
        &mut self,
        lease: &Lease,
        now_ms: Ms,
        extend_ms: Ms,
    ) -> Result<Lease, SettleError> {
        let op = SettleOp::Renew { extend_ms };
        let renewed = self.settle(&SettleRequest::new(lease, op, now_ms), now_ms)?;
        Ok(renewed.expect("an accepted renew returns the renewed lease"))
    }

    /// Dead-letters `lease` at once with `reason`.
    pub fn reject(&mut self, lease: &Lease, now_ms: Ms, reason: &str) -> Result<(), SettleError> {
        let op = SettleOp::Reject {
            reason: Reason::new(reason),
        };
        self.settle(&SettleRequest::new(lease, op, now_ms), now_ms)
            .map(drop)
    }

    /// Applies a settle or renew request. A request that fails changes nothing. An accepted
    /// renew returns the renewed lease.
    pub fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let Some(&record) = self.record(lease.group, lease.seq) else {
            return Err(SettleError::Invalid(
                format!("no record for group {} seq {}", lease.group, lease.seq).into(),
            ));
        };
        if matches!(request.op, SettleOp::Renew { .. }) && !self.config.variant.renews() {
            return Err(SettleError::Invalid(
                "a delivery's timeout cannot be extended (no renew on this broker)".into(),
            ));
        }
        if self.config.variant.channel_scoped() {
            return self.settle_on_channel(request, now_ms);
        }
        self.settle_fenced(request, record, now_ms)
    }

    /// [`Broker::settle`] once the record exists: by the variant's fence.
    fn settle_fenced(
        &mut self,
        request: &SettleRequest,
        record: Record,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let verdict = self.fence_check(&record, request, now_ms);
        match (request.op, verdict) {
            (SettleOp::Renew { extend_ms }, Ok(())) => {
                Ok(Some(self.apply_renew(request, &record, now_ms, extend_ms)))
            }
            (SettleOp::Renew { extend_ms }, Err(SettleError::StaleLease))
                if self.config.variant.renew_revives() && !record.is_settled() =>
            {
                Ok(Some(self.apply_renew(request, &record, now_ms, extend_ms)))
            }
            (_, Err(error)) => Err(error),
            (SettleOp::Ack, Ok(())) => {
                self.cancel_timer(lease.group, lease.seq);
                self.apply_ack(lease.group, lease.seq, record);
                if !self.config.variant.acks_per_group() {
                    // `ack-all-groups`: the event is settled in every group that has not.
                    for group in 0..self.config.group_count {
                        match self.record(group, lease.seq) {
                            Some(&other) if group != lease.group && !other.is_settled() => {
                                self.cancel_timer(group, lease.seq);
                                self.apply_ack(group, lease.seq, other);
                            }
                            _ => {}
                        }
                    }
                }
                Ok(None)
            }
            (SettleOp::Nack { delay_ms, reason }, Ok(())) => {
                self.cancel_timer(lease.group, lease.seq);
                let attempts = record.attempts().unwrap_or(lease.attempt);
                if attempts >= self.config.max_attempts {
                    let reason = reason.unwrap_or(Reason::MAX_ATTEMPTS);
                    self.dead_letter(lease.group, lease.seq, reason);
                } else {
                    let delay_ms = if self.config.variant.nack_delays() {
                        delay_ms
                    } else {
                        0
                    };
                    let mut not_before_ms = now_ms.saturating_add(delay_ms);
                    if self.config.variant.is_redis() {
                        // No XNACK: the entry stays pending and is claimable once idle.
                        not_before_ms = not_before_ms.max(pending_until(&record));
                    }
                    self.set(
                        lease.group,
                        lease.seq,
                        Record::Available {
                            attempts,
                            not_before_ms,
                        },
                    );
                }
                Ok(None)
            }
            (SettleOp::Reject { reason }, Ok(())) => {
                self.cancel_timer(lease.group, lease.seq);
                self.dead_letter(lease.group, lease.seq, reason);
                Ok(None)
            }
        }
    }

    /// Whether `request` may act on `record`, by the variant's fence.
    fn fence_check(
        &self,
        record: &Record,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<(), SettleError> {
        let lease = &request.lease;
        let fence = self.config.variant.fence(&request.op);
        // The clock the deadline is checked against: the broker's own, except in the
        // `worker-clock-expiry` mutant, which trusts the time the worker reports.
        let clock_ms = match fence {
            Fence::WorkerClock => request.worker_clock_ms,
            _ => now_ms,
        };
        let accepted = match fence {
            Fence::LeaseId | Fence::WorkerClock => match record {
                Record::Leased {
                    lease_id,
                    deadline_ms,
                    ..
                } if *lease_id == lease.lease_id
                    && (clock_ms < *deadline_ms
                        || self.config.variant.deadline_inclusive()
                            && clock_ms == *deadline_ms) =>
                {
                    if self.receipt(lease.seq) != lease.receipt {
                        return Err(SettleError::ReceiptMismatch);
                    }
                    true
                }
                _ => false,
            },
            Fence::Pending => {
                let pending = match record {
                    Record::Leased { .. } => true,
                    Record::Available { attempts, .. } => *attempts > 0,
                    _ => false,
                };
                // XACK names the entry by its id (JetStream's reply subject its stream sequence):
                // another id does not settle this entry.
                if pending && lease.receipt != Some(entry_id(lease.seq)) {
                    return Err(SettleError::ReceiptMismatch);
                }
                pending
            }
            Fence::None => true,
            // `WHERE id = $1`: the row is there until an ack deletes it or a dead letter moves it.
            Fence::Row => {
                let present = !record.is_settled();
                if present && self.receipt(lease.seq) != lease.receipt {
                    return Err(SettleError::ReceiptMismatch);
                }
                present
            }
        };
        if accepted {
            Ok(())
        } else {
            Err(SettleError::StaleLease)
        }
    }

    fn apply_renew(
        &mut self,
        request: &SettleRequest,
        record: &Record,
        now_ms: Ms,
        extend_ms: Ms,
    ) -> Lease {
        let lease = &request.lease;
        let from_ms = match self.config.variant.renew_base() {
            RenewBase::Now => now_ms,
            RenewBase::Deadline => match record {
                Record::Leased { deadline_ms, .. } => *deadline_ms,
                _ => now_ms,
            },
            RenewBase::WorkerClock => request.worker_clock_ms,
        };
        let deadline_ms = from_ms.saturating_add(extend_ms);
        let attempts = record.attempts().unwrap_or(lease.attempt);
        // `renew-keeps-timer`: the record's deadline moves, its timer does not.
        let rearm = self.config.variant.renew_rearms_timer();
        if rearm {
            self.disarm(lease.group, lease.seq);
        }
        self.set(
            lease.group,
            lease.seq,
            Record::Leased {
                lease_id: lease.lease_id,
                attempts,
                deadline_ms,
            },
        );
        if rearm {
            self.arm(lease.group, lease.seq, lease.lease_id, deadline_ms);
        }
        Lease {
            deadline_ms,
            ..*lease
        }
    }

    fn apply_ack(&mut self, group: GroupIx, seq: Seq, prior: Record) {
        if !self.config.variant.acks_durable() {
            let key = (group as u32, seq);
            let position = self.unflushed.partition_point(|&(g, s, _)| (g, s) <= key);
            self.unflushed.insert(position, (key.0, key.1, prior));
        }
        let g = &mut self.groups[group];
        g.max_acked = g.max_acked.max(seq);
        self.set(group, seq, Record::Acked);
    }

    fn dead_letter(&mut self, group: GroupIx, seq: Seq, reason: Reason) {
        let record = if self.config.variant.keeps_dead_letters() {
            Record::DeadLettered { reason }
        } else {
            Record::Dropped
        };
        self.set(group, seq, record);
    }

    /// Arms the expiry timer of a lease.
    fn arm(&mut self, group: GroupIx, seq: Seq, lease_id: LeaseId, deadline_ms: Ms) {
        let timer = Timer {
            deadline_ms,
            group: group as u32,
            seq,
            lease_id,
        };
        // A new lease's deadline is most often the latest: it goes last without a search.
        if self.timers.last().is_none_or(|last| *last < timer) {
            self.timers.push(timer);
            return;
        }
        let position = self.timers.partition_point(|t| *t < timer);
        self.timers.insert(position, timer);
    }

    /// A settle ended the lease on (group, seq): its timer is cancelled (not in
    /// `stale-timer`).
    fn cancel_timer(&mut self, group: GroupIx, seq: Seq) {
        if self.config.variant.cancels_timers() {
            self.disarm(group, seq);
        }
    }

    /// Removes the expiry timers of (group, seq).
    fn disarm(&mut self, group: GroupIx, seq: Seq) {
        let group = group as u32;
        self.timers.retain(|t| !(t.group == group && t.seq == seq));
    }

    /// Replaces a record; keeps the fetch index, the unsettled count and the frontier.
    fn set(&mut self, group: GroupIx, seq: Seq, record: Record) {
        let g = &mut self.groups[group];
        let index = seq as usize - 1;
        let old = std::mem::replace(&mut g.records[index], record);
        let was_available = matches!(old, Record::Available { .. });
        let is_available = matches!(record, Record::Available { .. });
        if seq >= g.fresh_from {
            // Leaving the never-delivered suffix (a fetch takes its lowest record, so the
            // loop below only runs for a settle that names a record never delivered).
            for below in g.fresh_from..seq {
                g.push_returned(below);
            }
            g.fresh_from = seq + 1;
            if is_available {
                g.push_returned(seq);
            }
        } else if was_available && !is_available {
            g.drop_returned(seq);
        } else if is_available && !was_available {
            g.push_returned(seq);
        }
        let settles = match (old.is_settled(), record.is_settled()) {
            (false, true) => {
                self.unsettled -= 1;
                true
            }
            (true, false) => {
                self.unsettled += 1;
                if seq <= g.frontier {
                    g.unsettled_below = g.unsettled_below.min(seq);
                }
                false
            }
            _ => false,
        };
        // The frontier stands on the first unsettled record: only a record that settles can
        // move it (or, by the highest ack, an ack, which moved `max_acked` before this).
        if settles || self.config.variant.frontier_rule() == FrontierRule::MaxAcked {
            self.advance_frontier(group);
        }
    }

    fn advance_frontier(&mut self, group: GroupIx) {
        let g = &mut self.groups[group];
        match self.config.variant.frontier_rule() {
            FrontierRule::Contiguous => {
                let mut frontier = g.frontier;
                while (frontier as usize) < g.records.len()
                    && g.records[frontier as usize].is_settled()
                {
                    frontier += 1;
                }
                g.frontier = frontier;
            }
            FrontierRule::MaxAcked => g.frontier = g.max_acked,
        }
    }

    /// Fires every timer whose deadline is `<= now_ms`, in firing order; returns the leases
    /// they expired.
    pub fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let mut expired = Vec::new();
        self.expire_due_each(now_ms, |e| expired.push(e));
        expired
    }

    /// [`Broker::expire_due`], handing each expired lease to `f` instead of collecting them.
    pub fn expire_due_each(&mut self, now_ms: Ms, mut f: impl FnMut(Expired)) {
        if self.channels.is_some() {
            return self.expire_due_channels(now_ms, f);
        }
        while let Some(&timer) = self.timers.first() {
            if timer.deadline_ms > now_ms {
                break;
            }
            if self.channels.is_some() && self.close_for_timer(&timer) {
                // Its channel's other deliveries are due now too: fire in order.
                continue;
            }
            self.timers.remove(0);
            if let Some(expired) = self.fire(timer) {
                f(expired);
            }
        }
    }

    /// Fires one pending timer now, whatever its deadline — the untimed model's "the broker's
    /// clock reaches this timer". Returns `None` when no such timer is pending or the record
    /// holds no lease.
    pub fn fire_timer(&mut self, timer: &Timer) -> Option<Expired> {
        let position = self.timers.iter().position(|t| t == timer)?;
        let timer = self.timers.remove(position);
        self.fire(timer)
    }

    /// A timer fires: the broker expires the lease that holds the record. It trusts its
    /// timers: it cancels a lease's timer when the lease is settled and replaces it when the
    /// lease is renewed, so the timer that fires is the record's lease's, at its deadline.
    fn fire(&mut self, timer: Timer) -> Option<Expired> {
        let (group, seq) = (timer.group as GroupIx, timer.seq);
        match self.record(group, seq) {
            Some(Record::Leased { .. }) => {
                let mut expired = self.expire_record(group, seq, timer.deadline_ms)?;
                if expired.lease_id != timer.lease_id {
                    expired.stale_timer = Some(timer.lease_id);
                }
                Some(expired)
            }
            _ => None,
        }
    }

    /// Expires the lease on (group, seq) now, whatever its deadline — the untimed model's
    /// expiry action. Returns `None` when the record holds no lease with a pending timer.
    pub fn expire(&mut self, group: GroupIx, seq: Seq, not_before_ms: Ms) -> Option<Expired> {
        let armed = self
            .timers
            .iter()
            .any(|t| t.group == group as u32 && t.seq == seq);
        if !armed {
            return None;
        }
        self.disarm(group, seq);
        self.expire_record(group, seq, not_before_ms)
    }

    fn expire_record(&mut self, group: GroupIx, seq: Seq, not_before_ms: Ms) -> Option<Expired> {
        let Some(&Record::Leased {
            lease_id,
            attempts,
            deadline_ms,
        }) = self.record(group, seq)
        else {
            return None;
        };
        if self.channels.is_some() {
            // A delivery's timeout closes its channel (`consumer_timeout`): every delivery on
            // it returns, this one with the others.
            let _ = self.close_channel(channels::channel_of(lease_id), not_before_ms);
            let returned = &mut self.chan().returned;
            let position = returned
                .iter()
                .position(|e| e.group == group && e.seq == seq)?;
            return Some(returned.remove(position));
        }
        let variant = self.config.variant;
        let exhausted = attempts >= self.config.max_attempts && variant.expiry_dead_letters();
        if exhausted {
            self.dead_letter(group, seq, Reason::MAX_ATTEMPTS);
        } else {
            let attempts = if variant.expiry_resets_attempts() {
                0
            } else {
                attempts
            };
            self.set(
                group,
                seq,
                Record::Available {
                    attempts,
                    not_before_ms,
                },
            );
        }
        Some(Expired {
            deadline_ms,
            group,
            seq,
            lease_id,
            dead_lettered: exhausted,
            stale_timer: None,
        })
    }

    /// The untimed model's passage of time up to the deadline of the first pending timer on
    /// (group, seq) that is not due yet: its deadline becomes `now_ms`, and so does the
    /// deadline of the lease it was armed for if that lease still holds the record. The lease
    /// is then no longer valid (valid while `now < deadline`, so a request landing now lands
    /// exactly at its deadline) and the broker expires it when the timer fires, at its next
    /// `expire_due` (lazily, on the next fetch). Returns `None` when no such timer is pending,
    /// else whether the lease it was armed for held the record (`false`: a timer that outlived
    /// its lease, `stale-timer`).
    pub fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> Option<bool> {
        let position = self
            .timers
            .iter()
            .position(|t| t.group == group as u32 && t.seq == seq && t.deadline_ms > now_ms)?;
        let mut timer = self.timers.remove(position);
        timer.deadline_ms = now_ms;
        let record = self.groups[group]
            .records
            .get_mut((seq as usize).wrapping_sub(1));
        let held = match record {
            Some(Record::Leased {
                lease_id,
                deadline_ms,
                ..
            }) if *lease_id == timer.lease_id => {
                *deadline_ms = (*deadline_ms).min(now_ms);
                true
            }
            _ => false,
        };
        let position = self.timers.partition_point(|t| *t < timer);
        self.timers.insert(position, timer);
        Some(held)
    }

    /// The timed model's clock advanced by `by_ms`: every time the broker keeps (deadlines,
    /// timers, redelivery times) moves `by_ms` earlier, so that the model's clock can stay at
    /// one value (times relative to now keep the space finite). A time that would fall below
    /// `floor_ms` becomes `floor_ms`: the model chooses the floor far enough in the past that
    /// no comparison with a present or future time changes.
    pub fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) {
        let shift = |t: &mut Ms| *t = t.saturating_sub(by_ms).max(floor_ms);
        let shift_record = |record: &mut Record| match record {
            Record::Leased { deadline_ms, .. } => shift(deadline_ms),
            Record::Available { not_before_ms, .. } => shift(not_before_ms),
            _ => {}
        };
        for group in &mut self.groups {
            group.records.iter_mut().for_each(shift_record);
        }
        for (_, _, record) in self.unflushed.iter_mut() {
            shift_record(record);
        }
        for timer in self.timers.iter_mut() {
            shift(&mut timer.deadline_ms);
        }
        // Times at the floor may now tie: the firing order breaks ties by record.
        self.timers.sort_unstable();
        if let Some(channels) = &mut self.channels {
            for expired in channels.returned.iter_mut() {
                shift(&mut expired.deadline_ms);
            }
        }
    }

    /// The untimed model's "time may pass before a fetch": every delayed available record
    /// becomes eligible now (`not_before_ms` ≤ `now_ms`).
    pub fn release_delays(&mut self, now_ms: Ms) {
        for group in &mut self.groups {
            for &seq in &group.returned {
                if let Record::Available { not_before_ms, .. } =
                    &mut group.records[seq as usize - 1]
                {
                    *not_before_ms = (*not_before_ms).min(now_ms);
                }
            }
        }
    }

    /// The earliest deadline of a pending timer, for a simulator's timer (in
    /// `rabbitmq-channel`, or of a return a channel's close made and no `expire_due` reported
    /// yet).
    #[inline]
    pub fn next_deadline(&self) -> Option<Ms> {
        let timer = self.timers.first().map(|t| t.deadline_ms);
        match &self.channels {
            None => timer,
            Some(channels) => channels
                .returned
                .iter()
                .map(|e| e.deadline_ms)
                .chain(timer)
                .min(),
        }
    }

    /// A broker restart: durable state survives, volatile state is lost (per the variant).
    /// Costs what it restores: the acks it undoes (`volatile-ack`), the timers it re-arms, and
    /// the frontier from the lowest record that may have changed — not the number of records.
    pub fn restart(&mut self) {
        let variant = self.config.variant;
        let reverted = std::mem::take(&mut self.unflushed);
        for &(group, seq, prior) in reverted.iter().rev() {
            // The ack never became durable: the record is what it was before it.
            self.set(group as GroupIx, seq, prior);
        }
        self.lose_unflushed_events();
        if !variant.lease_ids_durable() {
            self.next_lease_id = 1;
        }
        // Timers live in memory: a correct broker re-arms one per lease from its records. Every
        // leased record still has its timer (a timer is disarmed only when its lease ends),
        // except the records an undone ack leased again: those are armed here. A timer that
        // outlived its lease (`stale-timer`) is not re-armed.
        if !variant.cancels_timers() {
            self.drop_stale_timers();
        }
        if !variant.renew_rearms_timer() {
            // `renew-keeps-timer`: a renewed lease's timer is at its old deadline; the restart
            // arms one per lease from the records, at the deadline the record holds.
            self.timers.clear();
            for group in 0..self.config.group_count {
                for index in 0..self.groups[group].records.len() {
                    if let Record::Leased {
                        lease_id,
                        deadline_ms,
                        ..
                    } = self.groups[group].records[index]
                    {
                        self.arm(group, index as Seq + 1, lease_id, deadline_ms);
                    }
                }
            }
        } else if variant.rearms_expiry_on_restart() {
            for &(group, seq, _) in &reverted {
                let group = group as GroupIx;
                if let Record::Leased {
                    lease_id,
                    deadline_ms,
                    ..
                } = self.groups[group].records[seq as usize - 1]
                {
                    self.disarm(group, seq);
                    self.arm(group, seq, lease_id, deadline_ms);
                }
            }
        } else {
            self.timers.clear();
        }
        for group in 0..self.config.group_count {
            self.rederive_frontier(group);
        }
    }

    /// A restart loses the events published since the last flush (`volatile-publish`): the
    /// last ones of every group's stream, never delivered (a fetch flushes).
    fn lose_unflushed_events(&mut self) {
        let lost = std::mem::take(&mut self.unflushed_events) as usize;
        if lost == 0 {
            return;
        }
        for g in &mut self.groups {
            let kept = g.records.len() - lost;
            let unsettled = g.records[kept..].iter().filter(|r| !r.is_settled()).count();
            self.unsettled -= unsettled as u64;
            g.records.truncate(kept);
            g.fresh_from = g.fresh_from.min(kept as Seq + 1);
            g.returned.retain(|seq| *seq as usize <= kept);
        }
    }

    /// Keeps only the timers of the leases that hold their records (a restart re-arms timers
    /// from the records).
    fn drop_stale_timers(&mut self) {
        let groups = &self.groups;
        self.timers.retain(|t| {
            let record = groups[t.group as usize].records.get(t.seq as usize - 1);
            matches!(record, Some(Record::Leased { lease_id, deadline_ms, .. })
                if *lease_id == t.lease_id && *deadline_ms == t.deadline_ms)
        });
    }

    /// The frontier (and the highest acked seq) as a restart derives them from the durable
    /// records: from the lowest record that became unsettled below the frontier, if any.
    fn rederive_frontier(&mut self, group: GroupIx) {
        let g = &mut self.groups[group];
        while g.max_acked > 0 && g.records[g.max_acked as usize - 1] != Record::Acked {
            g.max_acked -= 1;
        }
        g.frontier = g.frontier.min(g.unsettled_below.saturating_sub(1));
        g.unsettled_below = Seq::MAX;
        self.advance_frontier(group);
    }

    /// The available records of each group as the fetch index names them, in seq order (tests
    /// compare it with the records).
    #[doc(hidden)]
    pub fn fetch_index(&self) -> Vec<Vec<Seq>> {
        self.groups.iter().map(Group::available).collect()
    }

    /// A restart that re-reads every record: what [`Broker::restart`] must be equal to (tests
    /// compare the two; a run uses [`Broker::restart`], which costs what it restores).
    #[doc(hidden)]
    pub fn restart_by_scan(&mut self) {
        let variant = self.config.variant;
        for &(group, seq, prior) in std::mem::take(&mut self.unflushed).iter().rev() {
            let g = &mut self.groups[group as usize];
            let old = std::mem::replace(&mut g.records[seq as usize - 1], prior);
            match (old.is_settled(), prior.is_settled()) {
                (false, true) => self.unsettled -= 1,
                (true, false) => self.unsettled += 1,
                _ => {}
            }
        }
        self.lose_unflushed_events();
        if !variant.lease_ids_durable() {
            self.next_lease_id = 1;
        }
        self.timers.clear();
        let rearm = variant.rearms_expiry_on_restart();
        for (group, g) in self.groups.iter_mut().enumerate() {
            if rearm {
                for (index, record) in g.records.iter().enumerate() {
                    if let Record::Leased {
                        lease_id,
                        deadline_ms,
                        ..
                    } = *record
                    {
                        self.timers.push(Timer {
                            deadline_ms,
                            group: group as u32,
                            seq: index as Seq + 1,
                            lease_id,
                        });
                    }
                }
            }
            // Forgotten, then rebuilt from the records alone (a scan owes nothing to the
            // index it replaces).
            if !g.returns_first {
                // (In return order the index is state, and a restart keeps the records.)
                g.returned = InlineVec::new();
                g.fresh_from = 1;
                g.reindex();
            }
            g.max_acked = g
                .records
                .iter()
                .rposition(|record| *record == Record::Acked)
                .map_or(0, |index| index as Seq + 1);
            g.frontier = 0;
        }
        self.timers.sort_unstable();
        for group in 0..self.config.group_count {
            self.advance_frontier(group);
        }
    }

    /// Calls `f` with every lease id the state holds — in records, in acks not yet durable,
    /// in timers — and with the counter's next id: what a canonical renumbering must cover.
    pub fn for_each_lease_id(&self, mut f: impl FnMut(LeaseId)) {
        for group in &self.groups {
            for record in &group.records {
                if let Record::Leased { lease_id, .. } = record {
                    f(*lease_id);
                }
            }
        }
        for (_, _, prior) in &self.unflushed {
            if let Record::Leased { lease_id, .. } = prior {
                f(*lease_id);
            }
        }
        for timer in &self.timers {
            f(timer.lease_id);
        }
        f(LeaseId(self.next_lease_id));
    }

    /// Renames every lease id [`Broker::for_each_lease_id`] visits, the counter included.
    /// `rename` must keep the ids' equality and order (an order-preserving renumbering), and
    /// must not map the counter below an id that lease-id-reuse could collide with.
    pub fn rename_lease_ids(&mut self, mut rename: impl FnMut(LeaseId) -> LeaseId) {
        for group in &mut self.groups {
            for record in &mut group.records {
                if let Record::Leased { lease_id, .. } = record {
                    *lease_id = rename(*lease_id);
                }
            }
        }
        for (_, _, prior) in &mut self.unflushed {
            if let Record::Leased { lease_id, .. } = prior {
                *lease_id = rename(*lease_id);
            }
        }
        for timer in &mut self.timers {
            timer.lease_id = rename(timer.lease_id);
        }
        self.next_lease_id = rename(LeaseId(self.next_lease_id)).0;
    }

    /// Exchanges groups `a` and `b` — their records, frontiers and indexes, and the timers
    /// and unflushed acks that name them — so that the broker is the one whose two groups had
    /// each other's histories (the model checker's symmetry over groups). Every group is
    /// configured alike and no step reads a group's index but to choose it, so the exchanged
    /// broker answers every request as the original answers the request with `a` and `b`
    /// exchanged. Returns `false`, changing nothing, for `rabbitmq-channel` (a worker's
    /// channel numbers its deliveries across groups).
    pub fn swap_groups(&mut self, a: GroupIx, b: GroupIx) -> bool {
        if self.channels.is_some() {
            return false;
        }
        if a == b {
            return true;
        }
        self.groups.swap(a, b);
        let (a, b) = (a as u32, b as u32);
        for timer in self.timers.iter_mut() {
            timer.group = crate::types::exchanged(timer.group, a, b);
        }
        self.timers.sort_unstable();
        for (group, _, _) in self.unflushed.iter_mut() {
            *group = crate::types::exchanged(*group, a, b);
        }
        // Stable: the entries of one record keep their insertion order.
        self.unflushed.sort_by_key(|&(group, seq, _)| (group, seq));
        true
    }

    /// Whether every record of every group is settled (acked or dead-lettered).
    #[inline]
    pub fn all_settled(&self) -> bool {
        self.unsettled == 0
    }

    /// Records of every group that are not acked or dead-lettered.
    #[inline]
    pub fn unsettled_count(&self) -> u64 {
        self.unsettled
    }
}

impl BrokerView for Broker {
    fn group_count(&self) -> usize {
        self.config.group_count
    }

    #[inline]
    fn event_count(&self) -> Seq {
        self.groups[0].records.len() as Seq
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.record(group, seq) {
            Some(Record::DeadLettered { reason }) => {
                (Status::DeadLettered, Some(reason.as_str().to_string()))
            }
            Some(record) => (record.status(), None),
            None => (Status::Dropped, None),
        }
    }

    #[inline]
    fn frontier(&self, group: GroupIx) -> Seq {
        self.groups[group].frontier
    }

    #[inline]
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.record(group, seq)
            .map_or(Status::Dropped, Record::status)
    }

    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        let start = (first as usize).saturating_sub(1);
        let records = match (first, self.groups.get(group)) {
            (1.., Some(g)) => g.records.get(start..).unwrap_or(&[]),
            _ => &[],
        };
        let written = out.len().min(records.len());
        for (slot, record) in out.iter_mut().zip(records) {
            *slot = record.status();
        }
        written
    }

    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        matches!(self.record(group, seq), Some(Record::DeadLettered { reason: kept }) if *kept == reason)
    }

    fn dead_letter_reason(&self, group: GroupIx, seq: Seq) -> Option<Reason> {
        match self.record(group, seq) {
            Some(Record::DeadLettered { reason }) => Some(*reason),
            _ => None,
        }
    }
    #[inline]
    fn unsettled_count(&self) -> u64 {
        self.unsettled
    }
}

impl Broker {
    /// Number of events published so far.
    pub fn event_count(&self) -> Seq {
        BrokerView::event_count(self)
    }

    /// The committed frontier of `group`.
    pub fn frontier(&self, group: GroupIx) -> Seq {
        BrokerView::frontier(self, group)
    }
}

/// The Redis variants' receipt: the stream entry id of event `seq`.
fn entry_id(seq: Seq) -> Receipt {
    Receipt(u64::from(seq))
}

/// When a pending Redis entry becomes claimable again: its idle deadline (the lease's), or at
/// once for an entry that is already idle.
fn pending_until(record: &Record) -> Ms {
    match record {
        Record::Leased { deadline_ms, .. } => *deadline_ms,
        Record::Available { not_before_ms, .. } => *not_before_ms,
        _ => 0,
    }
}

impl SettleRequest {
    /// A request sent with the worker's clock equal to `worker_clock_ms`.
    pub fn new(lease: &Lease, op: SettleOp, worker_clock_ms: Ms) -> SettleRequest {
        SettleRequest {
            lease: *lease,
            op,
            worker_clock_ms,
        }
    }
}

impl Broker {
    /// `rabbitmq-channel`'s settle (docs/rabbitmq.md): the request travels on its worker's
    /// current channel for the group and names the delivery with its tag there. A channel that
    /// holds a delivery past its deadline closed at that deadline (the next channel carries the
    /// request). A tag the channel holds is settled, whichever record it delivered; an unknown
    /// tag is refused (`406`, `stale_lease`) and closes the channel, which returns every
    /// delivery it held.
    fn settle_on_channel(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        if lease.receipt.is_some() {
            // RabbitMQ issues no receipts: a request carrying one names something else.
            return Err(SettleError::ReceiptMismatch);
        }
        if self.chan().route(lease.lease_id, lease.group).is_none() {
            return Err(SettleError::StaleLease);
        }
        self.close_due_channels(now_ms);
        let (_, channel) = self
            .chan()
            .route(lease.lease_id, lease.group)
            .expect("routed above");
        let tag = channels::tag_of(lease.lease_id);
        let Some(delivery) = self.chan().find(channel, tag) else {
            let _ = self.close_channel(channel, now_ms);
            return Err(SettleError::StaleLease);
        };
        let (group, seq) = (delivery.group as GroupIx, delivery.seq);
        let record = self.groups[group].records[seq as usize - 1];
        let Record::Leased {
            attempts,
            deadline_ms,
            ..
        } = record
        else {
            unreachable!("an open delivery's record is leased")
        };
        let named = SettleRequest {
            lease: Lease {
                lease_id: channels::lease_id(channel, tag),
                group,
                seq,
                attempt: attempts,
                deadline_ms,
                receipt: None,
            },
            ..*request
        };
        self.chan().remove(channel, tag);
        self.settle_fenced(&named, record, now_ms)
    }

    /// Every open channel holding a delivery whose deadline is `<= now_ms` closed at that
    /// deadline (`consumer_timeout`), earliest first: their channels' numbers and the order
    /// their deliveries return in are those of the server, where each closed on its own.
    fn close_due_channels(&mut self, now_ms: Ms) {
        'closing: loop {
            for position in 0..self.timers.len() {
                let timer = self.timers[position];
                if timer.deadline_ms > now_ms {
                    break 'closing;
                }
                if self.close_for_timer(&timer) {
                    // The closed channel's timers moved: look again from the first.
                    continue 'closing;
                }
            }
            break;
        }
    }

    /// Closes `channel` at `at_ms`: each delivery it held ends then (its lease's deadline and
    /// timer move to `at_ms`; the timer returns it when it fires), and its worker's next
    /// channel for the group opens.
    fn close_channel(&mut self, channel: u32, at_ms: Ms) -> bool {
        if !self
            .channels
            .as_ref()
            .is_some_and(|c| c.is_current(channel))
        {
            return false;
        }
        for delivery in self.chan().close(channel).iter() {
            let (group, seq) = (delivery.group as GroupIx, delivery.seq);
            let Some(&Record::Leased {
                lease_id,
                attempts,
                deadline_ms,
            }) = self.record(group, seq)
            else {
                continue;
            };
            self.disarm(group, seq);
            let exhausted = attempts >= self.config.max_attempts;
            if exhausted {
                self.dead_letter(group, seq, Reason::MAX_ATTEMPTS);
            } else {
                self.set(
                    group,
                    seq,
                    Record::Available {
                        attempts,
                        not_before_ms: at_ms,
                    },
                );
            }
            self.chan().returned.push(Expired {
                deadline_ms: deadline_ms.min(at_ms),
                group,
                seq,
                lease_id,
                dead_lettered: exhausted,
                stale_timer: None,
            });
        }
        true
    }

    /// `rabbitmq-channel`'s [`Broker::expire_due_each`]: every channel holding a delivery due
    /// by `now_ms` closes (earliest first), and every return a close made is reported, in
    /// firing order.
    fn expire_due_channels(&mut self, now_ms: Ms, mut f: impl FnMut(Expired)) {
        self.close_due_channels(now_ms);
        // Timers left due are those of records no lease of theirs holds any more.
        while self.timers.first().is_some_and(|t| t.deadline_ms <= now_ms) {
            let timer = self.timers.remove(0);
            if let Some(expired) = self.fire(timer) {
                f(expired);
            }
        }
        let mut returned = std::mem::take(&mut self.chan().returned);
        returned.sort_unstable();
        for expired in returned.iter() {
            f(*expired);
        }
    }

    /// The channels of a `rabbitmq-channel` broker.
    fn chan(&mut self) -> &mut Channels {
        self.channels
            .as_mut()
            .expect("only rabbitmq-channel asks for its channels")
    }

    /// A timer of `rabbitmq-channel` is due: when the lease it was armed for still holds its
    /// record on an open channel, that channel closes at the timer's deadline first (its other
    /// deliveries' timers become due with it, so that they fire in order). Returns whether it
    /// closed one.
    fn close_for_timer(&mut self, timer: &Timer) -> bool {
        match self.record(timer.group as GroupIx, timer.seq) {
            Some(Record::Leased { lease_id, .. }) if *lease_id == timer.lease_id => {
                self.close_channel(channels::channel_of(timer.lease_id), timer.deadline_ms)
            }
            _ => false,
        }
    }
}
