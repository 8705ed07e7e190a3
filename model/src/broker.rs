//! The broker as a pure state machine: `(state, input, now) -> (state, output)`.
//!
//! One implementation for every variant: each decision a variant can change is asked of
//! [`Variant`]. No clock, no randomness, no I/O; collections iterate in a fixed order.

use crate::types::{
    GroupIx, Lease, LeaseId, Ms, Receipt, Record, Seq, SettleError, SettleOp, Status,
    REASON_MAX_ATTEMPTS,
};
use crate::variant::{Fence, FrontierRule, Variant};
use serde::{Deserialize, Serialize};

/// The broker's static configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BrokerConfig {
    /// Number of consumer groups (each sees every event).
    pub group_count: usize,
    /// Default lease duration (for Redis variants: the claim idle time).
    pub lease_ms: Ms,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// Which protocol variant or mutant the broker runs.
    pub variant: Variant,
}

/// A settle (or renew) request as it reaches the broker.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SettleRequest {
    /// The lease the worker holds (its copy, as `fetch` or the last renew returned it).
    pub lease: Lease,
    /// What to do.
    pub op: SettleOp,
    /// The worker's own clock when it sent the request. Only the `worker-clock-expiry` mutant
    /// looks at it.
    pub worker_clock_ms: Ms,
}

/// A lease the broker expired.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Expired {
    /// The record's group.
    pub group: GroupIx,
    /// The record's event.
    pub seq: Seq,
    /// The lease that expired.
    pub lease_id: LeaseId,
    /// Whether the expiry dead-lettered the record (attempts exhausted).
    pub dead_lettered: bool,
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
    /// allocates: the oracle calls this for every record after every step.
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.status(group, seq).0
    }
    /// Whether (group, seq) is dead-lettered with exactly `reason`. Override it when
    /// [`BrokerView::status`] allocates.
    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        matches!(self.status(group, seq), (Status::DeadLettered, Some(kept)) if kept == reason)
    }
    /// Writes the statuses of (group, first), (group, first + 1), … into `out`, as many as fit
    /// and are published; returns how many it wrote. Override it to read a group's records in
    /// one pass: the oracle reads every record through it after every step.
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

/// The broker's whole state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Broker {
    config: BrokerConfig,
    /// `records[group][seq - 1]`.
    records: Vec<Vec<Record>>,
    frontier: Vec<Seq>,
    /// Highest acked seq per group (only the `max-seen-frontier` mutant uses it).
    max_acked: Vec<Seq>,
    next_lease_id: u64,
    /// Acks accepted but not yet durable, with the record they replaced (`volatile-ack`).
    unflushed: Vec<(GroupIx, Seq, Record)>,
    /// The earliest deadline of an armed lease: a function of `records`, refreshed by every
    /// method that changes them, so that `next_deadline` and `expire_due` need not scan.
    earliest_deadline: Option<Ms>,
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
            records: vec![Vec::new(); config.group_count],
            frontier: vec![0; config.group_count],
            max_acked: vec![0; config.group_count],
            next_lease_id: 1,
            unflushed: Vec::new(),
            earliest_deadline: None,
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
        self.records.get(group)?.get(index)
    }

    /// The records of `group`, in sequence order.
    pub fn records(&self, group: GroupIx) -> &[Record] {
        &self.records[group]
    }

    /// Appends an event; every group gets an `Available { attempts: 0 }` record.
    pub fn publish(&mut self) -> Seq {
        for records in &mut self.records {
            records.push(Record::Available {
                attempts: 0,
                not_before_ms: 0,
            });
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
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(format!("unknown group {group}")));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".to_string()));
        }
        self.expire_due(now_ms);
        self.unflushed.clear(); // The periodic flush rides on fetch.
        let lease_ms = lease_ms.unwrap_or(self.config.lease_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms);
        let redis = self.config.variant.is_redis();
        let mut leases = Vec::new();
        for index in 0..self.records[group].len() {
            if leases.len() == limit {
                break;
            }
            let Record::Available {
                attempts,
                not_before_ms,
            } = self.records[group][index]
            else {
                continue;
            };
            if not_before_ms > now_ms {
                continue;
            }
            let seq = index as Seq + 1;
            let lease = Lease {
                lease_id: LeaseId(self.next_lease_id),
                group,
                seq,
                attempt: attempts + 1,
                deadline_ms,
                receipt: redis.then_some(entry_id(seq)),
            };
            self.next_lease_id += 1;
            self.records[group][index] = Record::Leased {
                lease_id: lease.lease_id,
                attempts: lease.attempt,
                deadline_ms,
                receipt: lease.receipt,
                armed: true,
            };
            leases.push(lease);
        }
        if !leases.is_empty() {
            self.earliest_deadline = Some(
                self.earliest_deadline
                    .map_or(deadline_ms, |earliest| earliest.min(deadline_ms)),
            );
        }
        Ok(leases)
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
            reason: reason.to_string(),
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
        let result = self.settle_records(request, now_ms);
        if result.is_ok() {
            self.refresh_earliest_deadline();
        }
        result
    }

    fn settle_records(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let Some(record) = self.record(lease.group, lease.seq) else {
            return Err(SettleError::Invalid(format!(
                "no record for group {} seq {}",
                lease.group, lease.seq
            )));
        };
        let verdict = self.fence_check(record, request, now_ms);
        match (&request.op, verdict) {
            (SettleOp::Renew { extend_ms }, Ok(())) => {
                Ok(Some(self.apply_renew(lease, now_ms, *extend_ms)))
            }
            (SettleOp::Renew { extend_ms }, Err(SettleError::StaleLease))
                if self.config.variant.renew_revives() && !record.is_settled() =>
            {
                Ok(Some(self.apply_renew(lease, now_ms, *extend_ms)))
            }
            (_, Err(error)) => Err(error),
            (SettleOp::Ack, Ok(())) => {
                self.apply_ack(lease.group, lease.seq);
                Ok(None)
            }
            (SettleOp::Nack { delay_ms, reason }, Ok(())) => {
                let attempts = record.attempts().unwrap_or(lease.attempt);
                if attempts >= self.config.max_attempts {
                    let reason = reason.as_deref().unwrap_or(REASON_MAX_ATTEMPTS);
                    self.dead_letter(lease.group, lease.seq, reason);
                } else {
                    let mut not_before_ms = now_ms.saturating_add(*delay_ms);
                    if self.config.variant.is_redis() {
                        // No XNACK: the entry stays pending and is claimable once idle.
                        not_before_ms = not_before_ms.max(pending_until(record));
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
                    receipt,
                    ..
                } if *lease_id == lease.lease_id && clock_ms < *deadline_ms => {
                    if *receipt != lease.receipt {
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
                // XACK names the entry by its id: another id does not settle this entry.
                if pending && lease.receipt != Some(entry_id(lease.seq)) {
                    return Err(SettleError::ReceiptMismatch);
                }
                pending
            }
            Fence::None => true,
        };
        if accepted {
            Ok(())
        } else {
            Err(SettleError::StaleLease)
        }
    }

    fn apply_renew(&mut self, lease: &Lease, now_ms: Ms, extend_ms: Ms) -> Lease {
        let deadline_ms = now_ms.saturating_add(extend_ms);
        let record = self.record(lease.group, lease.seq).expect("checked");
        let attempts = record.attempts().unwrap_or(lease.attempt);
        self.set(
            lease.group,
            lease.seq,
            Record::Leased {
                lease_id: lease.lease_id,
                attempts,
                deadline_ms,
                receipt: lease.receipt,
                armed: true,
            },
        );
        Lease {
            deadline_ms,
            ..lease.clone()
        }
    }

    fn apply_ack(&mut self, group: GroupIx, seq: Seq) {
        let prior = self.record(group, seq).expect("checked").clone();
        if !self.config.variant.acks_durable() {
            self.unflushed.push((group, seq, prior));
        }
        self.max_acked[group] = self.max_acked[group].max(seq);
        self.set(group, seq, Record::Acked);
    }

    fn dead_letter(&mut self, group: GroupIx, seq: Seq, reason: &str) {
        let record = if self.config.variant.keeps_dead_letters() {
            Record::DeadLettered {
                reason: reason.to_string(),
            }
        } else {
            Record::Dropped
        };
        self.set(group, seq, record);
    }

    /// Replaces a record and advances the frontier.
    fn set(&mut self, group: GroupIx, seq: Seq, record: Record) {
        self.records[group][seq as usize - 1] = record;
        self.advance_frontier(group);
    }

    fn advance_frontier(&mut self, group: GroupIx) {
        match self.config.variant.frontier_rule() {
            FrontierRule::Contiguous => {
                let records = &self.records[group];
                let mut frontier = self.frontier[group];
                while (frontier as usize) < records.len() && records[frontier as usize].is_settled()
                {
                    frontier += 1;
                }
                self.frontier[group] = frontier;
            }
            FrontierRule::MaxAcked => self.frontier[group] = self.max_acked[group],
        }
    }

    /// Expires every armed lease whose deadline is `<= now_ms`, in (group, seq) order.
    pub fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let mut expired = Vec::new();
        if self
            .earliest_deadline
            .is_none_or(|earliest| earliest > now_ms)
        {
            return expired;
        }
        for group in 0..self.records.len() {
            for index in 0..self.records[group].len() {
                if let Record::Leased {
                    deadline_ms,
                    armed: true,
                    ..
                } = self.records[group][index]
                {
                    if deadline_ms <= now_ms {
                        let seq = index as Seq + 1;
                        expired.extend(self.expire_record(group, seq, deadline_ms));
                    }
                }
            }
        }
        self.refresh_earliest_deadline();
        expired
    }

    /// Expires the lease on (group, seq) now, whatever its deadline — the untimed model's
    /// expiry action. Returns `None` when the record holds no armed lease.
    pub fn expire(&mut self, group: GroupIx, seq: Seq, not_before_ms: Ms) -> Option<Expired> {
        let expired = self.expire_record(group, seq, not_before_ms);
        if expired.is_some() {
            self.refresh_earliest_deadline();
        }
        expired
    }

    fn expire_record(&mut self, group: GroupIx, seq: Seq, not_before_ms: Ms) -> Option<Expired> {
        let Some(Record::Leased {
            lease_id,
            attempts,
            armed: true,
            ..
        }) = self.record(group, seq).cloned()
        else {
            return None;
        };
        let variant = self.config.variant;
        let exhausted = attempts >= self.config.max_attempts && variant.expiry_dead_letters();
        if exhausted {
            self.dead_letter(group, seq, REASON_MAX_ATTEMPTS);
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
            group,
            seq,
            lease_id,
            dead_lettered: exhausted,
        })
    }

    /// The untimed model's passage of time over one lease: the deadline of the armed lease on
    /// (group, seq) becomes `now_ms`, so the lease is no longer valid (valid while
    /// `now < deadline`) and the broker expires it at its next `expire_due` (lazily, on the next
    /// fetch). Returns whether there was such a lease.
    pub fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> bool {
        let Some(Record::Leased {
            deadline_ms,
            armed: true,
            ..
        }) = self
            .records
            .get_mut(group)
            .and_then(|records| records.get_mut((seq as usize).checked_sub(1)?))
        else {
            return false;
        };
        *deadline_ms = (*deadline_ms).min(now_ms);
        self.refresh_earliest_deadline();
        true
    }

    /// The untimed model's "time may pass before a fetch": every delayed available record
    /// becomes eligible now (`not_before_ms` ≤ `now_ms`).
    pub fn release_delays(&mut self, now_ms: Ms) {
        for record in self.records.iter_mut().flatten() {
            if let Record::Available { not_before_ms, .. } = record {
                *not_before_ms = (*not_before_ms).min(now_ms);
            }
        }
    }

    /// Whether (group, seq) holds a lease the broker will expire.
    pub fn has_armed_lease(&self, group: GroupIx, seq: Seq) -> bool {
        matches!(
            self.record(group, seq),
            Some(Record::Leased { armed: true, .. })
        )
    }

    /// The earliest deadline of an armed lease, for a simulator's timer.
    #[inline]
    pub fn next_deadline(&self) -> Option<Ms> {
        debug_assert_eq!(self.earliest_deadline, self.scan_earliest_deadline());
        self.earliest_deadline
    }

    fn refresh_earliest_deadline(&mut self) {
        self.earliest_deadline = self.scan_earliest_deadline();
    }

    fn scan_earliest_deadline(&self) -> Option<Ms> {
        self.records
            .iter()
            .flatten()
            .filter_map(|record| match record {
                Record::Leased {
                    deadline_ms,
                    armed: true,
                    ..
                } => Some(*deadline_ms),
                _ => None,
            })
            .min()
    }

    /// A broker restart: durable state survives, volatile state is lost (per the variant).
    pub fn restart(&mut self) {
        let variant = self.config.variant;
        for (group, seq, prior) in std::mem::take(&mut self.unflushed).into_iter().rev() {
            self.records[group][seq as usize - 1] = prior;
        }
        if !variant.lease_ids_durable() {
            self.next_lease_id = 1;
        }
        if !variant.rearms_expiry_on_restart() {
            for record in self.records.iter_mut().flatten() {
                if let Record::Leased { armed, .. } = record {
                    *armed = false;
                }
            }
        }
        // The frontier is derived from the durable records.
        self.max_acked = self
            .records
            .iter()
            .map(|records| {
                records
                    .iter()
                    .rposition(|record| *record == Record::Acked)
                    .map_or(0, |index| index as Seq + 1)
            })
            .collect();
        self.frontier = vec![0; self.config.group_count];
        for group in 0..self.config.group_count {
            self.advance_frontier(group);
        }
        self.refresh_earliest_deadline();
    }

    /// Whether every record of every group is settled.
    pub fn all_settled(&self) -> bool {
        self.records.iter().flatten().all(Record::is_settled)
    }
}

impl BrokerView for Broker {
    fn group_count(&self) -> usize {
        self.config.group_count
    }

    #[inline]
    fn event_count(&self) -> Seq {
        self.records[0].len() as Seq
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.record(group, seq) {
            Some(Record::DeadLettered { reason }) => (Status::DeadLettered, Some(reason.clone())),
            Some(record) => (record.status(), None),
            None => (Status::Dropped, None),
        }
    }

    #[inline]
    fn frontier(&self, group: GroupIx) -> Seq {
        self.frontier[group]
    }

    #[inline]
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.record(group, seq)
            .map_or(Status::Dropped, Record::status)
    }

    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        let start = (first as usize).saturating_sub(1);
        let records = match (first, self.records.get(group)) {
            (1.., Some(records)) => records.get(start..).unwrap_or(&[]),
            _ => &[],
        };
        let written = out.len().min(records.len());
        for (slot, record) in out.iter_mut().zip(records) {
            *slot = record.status();
        }
        written
    }

    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        matches!(self.record(group, seq), Some(Record::DeadLettered { reason: kept }) if kept == reason)
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
            lease: lease.clone(),
            op,
            worker_clock_ms,
        }
    }
}
