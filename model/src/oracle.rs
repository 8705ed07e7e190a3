//! The oracle: ghost bookkeeping, independent of the broker's own, that checks I1–I7.
//!
//! An engine (the model checker, the simulator, the scenario executor) reports what happened —
//! leases issued, settles accepted or refused, expiries, handler runs — and, at the end of each
//! step, lets the oracle read the broker through [`BrokerView`]. The oracle identifies a lease by
//! its *issuance* (which fetch handed it out), never by the broker's lease id, so a broker that
//! reuses or confuses ids is caught; it counts deliveries itself.

use crate::broker::BrokerView;
use crate::invariant::Invariant;
use crate::types::{GroupIx, Lease, Ms, Seq, SettleOp, Status};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The oracle's own name for one lease: the index of the fetch that issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Issuance(pub u32);

impl fmt::Display for Issuance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0 + 1)
    }
}

/// What the oracle needs to know of the configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OracleConfig {
    /// Number of consumer groups.
    pub group_count: usize,
    /// The configured bound on deliveries.
    pub max_attempts: u32,
    /// Whether I7 is checked: true when every ack comes from the consumer runtime after a
    /// handler run under an at-least-once policy (`nack_on_error`, `manual`).
    pub check_at_least_once: bool,
}

/// One broken invariant: which, at which step, and what the oracle saw.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// The invariant.
    pub invariant: Invariant,
    /// The engine's step index (counted by [`Oracle::end_step`]) at which it broke.
    pub step: u64,
    /// What happened, in one line.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} violated at step {}: {}",
            self.invariant, self.step, self.detail
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum LeaseState {
    Live,
    Expired,
    Settled,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct GhostLease {
    group: GroupIx,
    seq: Seq,
    /// Contract deadline: issuance time + lease duration, moved by accepted renews.
    deadline_ms: Ms,
    state: LeaseState,
    /// A handler started under this lease while it was current.
    started_current: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Final {
    Acked,
    DeadLettered(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct GhostRecord {
    /// The latest issuance for this record.
    current: Option<Issuance>,
    /// Issuances the oracle considers unexpired and unsettled.
    live: Vec<Issuance>,
    /// Deliveries counted by the oracle.
    deliveries: u32,
    /// Settled state, once known.
    settled: Option<Final>,
    /// A handler completed successfully under a lease that was current when it started.
    processed: bool,
    /// Handler runs started (duplicates are counted, not failed).
    handler_runs: u32,
}

/// Groups for which [`Oracle::end_step`] remembers, between its record and frontier checks,
/// the first record the broker does not show settled (further groups read them again).
const FIRST_OPEN_GROUPS: usize = 16;

/// Records read per [`BrokerView::status_kinds`] call.
const STATUS_CHUNK: usize = 64;

/// The ghost state and the violations found so far.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Oracle {
    config: OracleConfig,
    leases: Vec<GhostLease>,
    /// `records[group][seq - 1]`.
    records: Vec<Vec<GhostRecord>>,
    /// Last observed frontier per group.
    frontier: Vec<Seq>,
    /// Length of the ghost-settled prefix per group.
    settled_prefix: Vec<Seq>,
    step: u64,
    /// The first violation of each invariant, in the order found.
    violations: Vec<Violation>,
}

impl Oracle {
    /// An oracle for a broker with no events.
    pub fn new(config: OracleConfig) -> Oracle {
        Oracle {
            leases: Vec::new(),
            records: vec![Vec::new(); config.group_count],
            frontier: vec![0; config.group_count],
            settled_prefix: vec![0; config.group_count],
            step: 0,
            violations: Vec::new(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OracleConfig {
        &self.config
    }

    /// The violations found so far: the first of each invariant, in the order found.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Whether `invariant` has been violated.
    pub fn violated(&self, invariant: Invariant) -> bool {
        self.violations.iter().any(|v| v.invariant == invariant)
    }

    /// The number of steps ended so far.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Handler runs beyond the first, summed over every record (at-least-once duplicates).
    pub fn duplicate_runs(&self) -> u64 {
        self.records
            .iter()
            .flatten()
            .map(|r| u64::from(r.handler_runs.saturating_sub(1)))
            .sum()
    }

    /// Deliveries the oracle counted for (group, seq).
    pub fn deliveries(&self, group: GroupIx, seq: Seq) -> u32 {
        self.ghost(group, seq).map_or(0, |r| r.deliveries)
    }

    /// Records acked without a successful handler run under a current lease (what `ack_first`
    /// and `ack_always` give up by design).
    pub fn acked_unprocessed(&self) -> u64 {
        self.records
            .iter()
            .flatten()
            .filter(|r| r.settled == Some(Final::Acked) && !r.processed)
            .count() as u64
    }

    /// Whether the oracle considers `issuance` unexpired and unsettled.
    pub fn is_live(&self, issuance: Issuance) -> bool {
        self.lease(issuance).state == LeaseState::Live
    }

    fn fail(&mut self, invariant: Invariant, detail: String) {
        if !self.violated(invariant) {
            self.violations.push(Violation {
                invariant,
                step: self.step,
                detail,
            });
        }
    }

    /// Like [`Oracle::fail`], building the detail only when the invariant is newly violated.
    fn fail_with(&mut self, invariant: Invariant, detail: impl FnOnce() -> String) {
        if !self.violated(invariant) {
            self.fail(invariant, detail());
        }
    }

    fn ghost(&self, group: GroupIx, seq: Seq) -> Option<&GhostRecord> {
        self.records.get(group)?.get((seq as usize).checked_sub(1)?)
    }

    fn ghost_mut(&mut self, group: GroupIx, seq: Seq) -> &mut GhostRecord {
        &mut self.records[group][seq as usize - 1]
    }

    fn lease(&self, issuance: Issuance) -> &GhostLease {
        &self.leases[issuance.0 as usize]
    }

    /// An event was published.
    pub fn published(&mut self) {
        for records in &mut self.records {
            records.push(GhostRecord::default());
        }
    }

    /// The broker handed out `lease` at `now_ms` for `lease_ms`. Checks I2, I3 (a settled event
    /// is never delivered again) and I5. Returns the oracle's name for the lease.
    pub fn fetched(&mut self, lease: &Lease, now_ms: Ms, lease_ms: Ms) -> Issuance {
        let issuance = Issuance(self.leases.len() as u32);
        let (group, seq) = (lease.group, lease.seq);
        if self.ghost(group, seq).is_none() {
            self.fail(
                Invariant::I3,
                format!("a lease was issued for unpublished event {seq} of group {group}"),
            );
            self.leases.push(GhostLease {
                group,
                seq,
                deadline_ms: now_ms,
                state: LeaseState::Settled,
                started_current: false,
            });
            return issuance;
        }
        let record = self.ghost(group, seq).expect("checked");
        let redelivered = record.settled.as_ref().map(|settled| {
            format!("event {seq} of group {group} was {settled:?} and was delivered again as {issuance}")
        });
        let other = record.live.first().copied();
        let deliveries = record.deliveries + 1;
        if let Some(detail) = redelivered {
            self.fail(Invariant::I3, detail);
        }
        if let Some(other) = other {
            let detail = format!(
                "{issuance} issued for event {seq} of group {group} while {other} is unexpired"
            );
            self.fail(Invariant::I2, detail);
        }
        let max_attempts = self.config.max_attempts;
        if deliveries > max_attempts || lease.attempt > max_attempts {
            let detail = format!(
                "event {seq} of group {group} delivered {deliveries} times (attempt {}), max_attempts {max_attempts}",
                lease.attempt
            );
            self.fail(Invariant::I5, detail);
        }
        self.leases.push(GhostLease {
            group,
            seq,
            deadline_ms: now_ms.saturating_add(lease_ms),
            state: LeaseState::Live,
            started_current: false,
        });
        let record = self.ghost_mut(group, seq);
        record.deliveries = deliveries;
        record.current = Some(issuance);
        record.live.push(issuance);
        issuance
    }

    fn end_lease(&mut self, issuance: Issuance, state: LeaseState) {
        let lease = &mut self.leases[issuance.0 as usize];
        lease.state = state;
        let (group, seq) = (lease.group, lease.seq);
        self.ghost_mut(group, seq).live.retain(|&i| i != issuance);
    }

    /// Time passed to `now_ms`: every live lease whose contract deadline is `<= now_ms` expires
    /// (a lease is valid while `now < deadline`). Engines on virtual time call it before
    /// reporting anything that happens at `now_ms` (also when time did not move: a renew or a
    /// fetch with a zero duration ends at once).
    pub fn advance(&mut self, now_ms: Ms) {
        for index in 0..self.leases.len() {
            let lease = &self.leases[index];
            if lease.state == LeaseState::Live && lease.deadline_ms <= now_ms {
                self.end_lease(Issuance(index as u32), LeaseState::Expired);
            }
        }
    }

    /// The untimed model's expiry of (group, seq): its live leases expire.
    pub fn expired(&mut self, group: GroupIx, seq: Seq) {
        let live = self
            .ghost(group, seq)
            .map(|r| r.live.clone())
            .unwrap_or_default();
        for issuance in live {
            self.end_lease(issuance, LeaseState::Expired);
        }
    }

    /// A settle or renew of `issuance` reached the broker, which accepted it or not
    /// (`accepted` is the broker's true answer, even when the worker saw a lost reply). For a
    /// renew, `renewed_deadline_ms` is the contract deadline it set. Checks I1 and I2, and I7
    /// on accepted acks.
    pub fn settled(&mut self, issuance: Issuance, op: &SettleOp, accepted: bool, now_ms: Ms) {
        if !accepted {
            return;
        }
        let lease = self.lease(issuance).clone();
        let (group, seq) = (lease.group, lease.seq);
        let record = self
            .ghost(group, seq)
            .expect("issued leases name published events")
            .clone();
        let is_current = record.current == Some(issuance);
        if let SettleOp::Renew { extend_ms } = op {
            let others: Vec<Issuance> = record
                .live
                .iter()
                .copied()
                .filter(|&i| i != issuance)
                .collect();
            if let Some(other) = others.first() {
                let detail = format!("renew of {issuance} accepted on event {seq} of group {group} while {other} is unexpired");
                self.fail(Invariant::I2, detail);
            }
            let ghost = &mut self.leases[issuance.0 as usize];
            ghost.deadline_ms = now_ms.saturating_add(*extend_ms);
            if ghost.state != LeaseState::Live {
                ghost.state = LeaseState::Live;
                self.ghost_mut(group, seq).live.push(issuance);
            }
            return;
        }
        if lease.state != LeaseState::Live || !is_current {
            let why = match (lease.state, is_current) {
                (LeaseState::Expired, _) => "expired",
                (LeaseState::Settled, _) => "already settled",
                _ => "superseded",
            };
            let detail = format!(
                "{} of {issuance} accepted on event {seq} of group {group}, but that lease is {why}",
                op.name()
            );
            self.fail(Invariant::I1, detail);
        }
        if lease.state == LeaseState::Live {
            self.end_lease(issuance, LeaseState::Settled);
        }
        match op {
            SettleOp::Ack => {
                let processed = self.ghost(group, seq).expect("checked").processed;
                if self.config.check_at_least_once && !processed {
                    let detail = format!("event {seq} of group {group} acked by {issuance} without a successful handler run under a current lease");
                    self.fail(Invariant::I7, detail);
                }
                self.settle_record(group, seq, Final::Acked);
            }
            SettleOp::Reject { reason } => {
                self.settle_record(group, seq, Final::DeadLettered(reason.clone()));
            }
            SettleOp::Nack { .. } | SettleOp::Renew { .. } => {}
        }
    }

    fn settle_record(&mut self, group: GroupIx, seq: Seq, settled: Final) {
        let record = self.ghost_mut(group, seq);
        if record.settled.is_none() {
            record.settled = Some(settled);
        }
        let records = &self.records[group];
        let mut prefix = self.settled_prefix[group];
        while (prefix as usize) < records.len() && records[prefix as usize].settled.is_some() {
            prefix += 1;
        }
        self.settled_prefix[group] = prefix;
    }

    /// A handler started under `issuance`.
    pub fn handler_started(&mut self, issuance: Issuance) {
        let lease = self.lease(issuance);
        let (group, seq) = (lease.group, lease.seq);
        let current = lease.state == LeaseState::Live
            && self
                .ghost(group, seq)
                .is_some_and(|r| r.current == Some(issuance));
        self.leases[issuance.0 as usize].started_current = current;
        self.ghost_mut(group, seq).handler_runs += 1;
    }

    /// A handler that ran under `issuance` finished; `success` is [`crate::runtime::Outcome::is_success`].
    pub fn handler_finished(&mut self, issuance: Issuance, success: bool) {
        let lease = self.lease(issuance);
        if success && lease.started_current {
            let (group, seq) = (lease.group, lease.seq);
            self.ghost_mut(group, seq).processed = true;
        }
    }

    /// Ends a step: reads the broker and checks I3 and I4.
    pub fn end_step(&mut self, view: &impl BrokerView) {
        let mut first_open = [None; FIRST_OPEN_GROUPS];
        self.observe_records(view, &mut first_open);
        self.observe_frontier(view, &first_open);
        self.step += 1;
    }

    /// Reads every record of every group; for the first [`FIRST_OPEN_GROUPS`] groups, notes in
    /// `first_open` the first read seq the broker does not show acked or dead-lettered, so that
    /// [`Oracle::observe_frontier`] need not read the records again.
    fn observe_records(
        &mut self,
        view: &impl BrokerView,
        first_open: &mut [Option<Seq>; FIRST_OPEN_GROUPS],
    ) {
        let published = self.records.first().map_or(0, Vec::len) as Seq;
        let count = view.event_count();
        if count != published {
            let detail = format!("{published} events published, the broker has {count}");
            self.fail(Invariant::I3, detail);
        }
        let count = published.min(count);
        let mut statuses = [Status::Dropped; STATUS_CHUNK];
        for group in 0..self.config.group_count {
            let mut open = None;
            let mut first: Seq = 1;
            while first <= count {
                let len = ((count - first) as usize + 1).min(STATUS_CHUNK);
                let chunk = &mut statuses[..len];
                let written = view.status_kinds(group, first, chunk).min(len);
                for (offset, slot) in chunk.iter_mut().enumerate().skip(written) {
                    *slot = view.status_kind(group, first + offset as Seq);
                }
                if open.is_none() {
                    open = chunk
                        .iter()
                        .position(|&status| !matches!(status, Status::Acked | Status::DeadLettered))
                        .map(|offset| first + offset as Seq);
                }
                // The common cases, decided without building anything: the ghost and the broker
                // agree that the record is acked, or that it is not settled. Every other record
                // gets the full comparison, in seq order.
                let base = first as usize - 1;
                let mut offset = 0;
                while offset < len {
                    let ghosts = &self.records[group][base + offset..base + len];
                    let disagree =
                        ghosts
                            .iter()
                            .zip(&chunk[offset..])
                            .position(|(ghost, &status)| {
                                !matches!(
                                    (&ghost.settled, status),
                                    (Some(Final::Acked), Status::Acked)
                                        | (None, Status::Available | Status::Leased)
                                )
                            });
                    let Some(found) = disagree else { break };
                    let at = offset + found;
                    self.observe_record(view, group, first + at as Seq, chunk[at]);
                    offset = at + 1;
                }
                first += len as Seq;
            }
            if let Some(slot) = first_open.get_mut(group) {
                // `None` here means every read record is settled; reads stopped at `count`.
                *slot = Some(open.unwrap_or(count + 1));
            }
        }
    }

    /// Compares one broker record with the ghost. Allocation-free unless a violation or a new
    /// dead letter is found (this runs for every record after every step).
    fn observe_record(&mut self, view: &impl BrokerView, group: GroupIx, seq: Seq, status: Status) {
        let record = self.ghost(group, seq).expect("published");
        let deliveries = record.deliveries;
        match (&record.settled, status) {
            (_, Status::Dropped) => {
                self.fail_with(Invariant::I3, || {
                    format!("event {seq} of group {group} is gone from the broker")
                });
            }
            (Some(Final::Acked), Status::Acked) | (None, Status::Available | Status::Leased) => {}
            (Some(Final::DeadLettered(kept)), Status::DeadLettered)
                if view.dead_letter_reason_is(group, seq, kept) => {}
            (Some(settled), _) => {
                let settled = format!("{settled:?}");
                let (status, reason) = view.status(group, seq);
                let detail = format!(
                    "event {seq} of group {group} was {settled} and is now {status:?} {}",
                    reason.as_deref().unwrap_or("")
                );
                self.fail(Invariant::I3, detail.trim_end().to_string());
            }
            (None, Status::DeadLettered) => {
                let reason = view.status(group, seq).1.unwrap_or_default();
                let max_attempts = self.config.max_attempts;
                if deliveries < max_attempts {
                    let detail = format!(
                        "event {seq} of group {group} dead-lettered ({reason}) after {deliveries} of {max_attempts} attempts, without a reject",
                    );
                    self.fail(Invariant::I3, detail);
                }
                self.settle_record(group, seq, Final::DeadLettered(reason));
            }
            (None, Status::Acked) => {
                self.fail_with(Invariant::I3, || {
                    format!("event {seq} of group {group} is acked but no ack was accepted")
                });
                self.settle_record(group, seq, Final::Acked);
            }
        }
    }

    fn observe_frontier(
        &mut self,
        view: &impl BrokerView,
        first_open: &[Option<Seq>; FIRST_OPEN_GROUPS],
    ) {
        let published = self.records.first().map_or(0, Vec::len) as Seq;
        let count = published.min(view.event_count());
        for group in 0..self.config.group_count {
            let frontier = view.frontier(group);
            let before = self.frontier[group];
            if frontier < before {
                self.fail_with(Invariant::I4, || {
                    format!("frontier of group {group} went back from {before} to {frontier}")
                });
            }
            // Settled by the ghost's account (accepted settles, observed dead letters) and, now,
            // by the broker's own records: a record that left its settled state (an unfenced
            // settle after an ack, a lost ack) must not stay under the frontier.
            let prefix = self.settled_prefix[group];
            let is_open = |seq: Seq| {
                !matches!(
                    view.status_kind(group, seq),
                    Status::Acked | Status::DeadLettered
                )
            };
            let unsettled = if frontier > prefix {
                Some(prefix + 1)
            } else {
                match first_open.get(group).copied().flatten() {
                    // Read this step: records before `open` settled, `open` itself open.
                    Some(open) if open <= count => (open <= frontier).then_some(open),
                    // Every read record settled; the rest was not read.
                    Some(open) => (open..=frontier).find(|&seq| is_open(seq)),
                    None => (1..=frontier).find(|&seq| is_open(seq)),
                }
            };
            if let Some(seq) = unsettled {
                self.fail_with(Invariant::I4, || {
                    format!(
                        "frontier of group {group} is {frontier} but event {seq} is not settled"
                    )
                });
            }
            self.frontier[group] = frontier;
        }
    }

    /// The liveness check at the end of a run with faults healed (I6): every event of every
    /// group acked or dead-lettered, and every frontier at the last event. `why` says what bound
    /// ended the run.
    pub fn check_eventually_settled(&mut self, view: &impl BrokerView, why: &str) {
        let count = view.event_count();
        for group in 0..view.group_count() {
            let stuck = (1..=count).find(|&seq| {
                !matches!(
                    view.status(group, seq).0,
                    Status::Acked | Status::DeadLettered
                )
            });
            if let Some(seq) = stuck {
                let status = view.status(group, seq).0;
                let detail = format!("event {seq} of group {group} is still {status:?} {why}");
                self.fail(Invariant::I6, detail);
                return;
            }
            if view.frontier(group) != count {
                let detail = format!(
                    "frontier of group {group} is {} of {count} {why}",
                    view.frontier(group)
                );
                self.fail(Invariant::I6, detail);
                return;
            }
        }
    }

    /// Records a violation found by an engine's own check (e.g. I6 by the model checker's
    /// cycle analysis).
    pub fn report(&mut self, invariant: Invariant, detail: String) {
        self.fail(invariant, detail);
    }
}
