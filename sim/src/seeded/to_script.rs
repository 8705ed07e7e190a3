//! A recorded seeded run as a scripted scenario: every step that reached the broker written
//! out as a `[[step]]` at the moment it landed, so that the script replays the same broker
//! history and breaks the same invariant.
//!
//! What is written, from the run's event log:
//! * a fetch that issued leases (or failed) is a `fetch` step, its leases bound to their names
//!   (`L3`; a fetch of several leases binds `L3`, `L3-2`, …); a lost reply is
//!   `fault = "lost_reply"` (the leases exist, nobody holds them);
//! * each landing of a settle or renew is a settle step at its landing time: a lost reply is
//!   `fault = "lost_reply"`, a duplicate delivery is the same step again, a request lost on the
//!   way or refused is `fault = "dropped" | "unavailable" | "failed"`; a request whose sender
//!   crashed since it fetched the lease is, as in any script, one sent before the crash;
//! * crashes, restarts, broker restarts and publishes are steps of their own;
//! * the liveness phase is a `drain` step.
//!
//! Expiries are not written: the replay expires each lease at its deadline, as the run did.
//! Pauses and handler runs are not written either: what they changed at the broker is the
//! requests they sent, and those are written where they landed. The runtime's follow-up nack
//! after a failed request is not written: the replay's runtime sends it again. A worker's
//! clock offset (read only by the `worker-clock-expiry` broker) is the one its last
//! request carried (`worker_clock_ms − landing time`).
//! The script ends at the event on which the target invariant was first found (with a `wait`
//! until then when it was found after the last step: a timer the broker fired).

use super::run::Recorded;
use super::seeded_file::scenario_of;
use super::setup::Setup;
use crate::event::{Event, FetchOutcome, Origin};
use crate::scenario::{Scenario, Step};
use crate::trace::{Fault, RequestId};
use leasehold_model::{AckPolicy, Invariant, Issuance, SettleOp};
use std::collections::BTreeMap;

/// What the conversion keeps of a request while it travels.
#[derive(Clone, Debug)]
struct Sent {
    worker: usize,
    issuance: Issuance,
    op: SettleOp,
    fault: Fault,
    worker_clock_ms: u64,
    follow_up: bool,
    before_timer: bool,
}

/// The state of a conversion: names given so far and the steps written.
struct Writer<'a> {
    setup: &'a Setup,
    names: BTreeMap<Issuance, String>,
    issued: Vec<Issuance>,
    requests: BTreeMap<RequestId, Sent>,
    offsets: BTreeMap<usize, i64>,
    steps: Vec<Step>,
}

/// The scripted scenario of `recorded`, a recorded run of `setup` that broke `target`, cut at
/// the event on which `target` was first found. `note` says where it came from.
pub fn script_of(setup: &Setup, recorded: &Recorded, target: Invariant, note: String) -> Scenario {
    let mut writer = Writer {
        setup,
        names: BTreeMap::new(),
        issued: Vec::new(),
        requests: BTreeMap::new(),
        offsets: BTreeMap::new(),
        steps: Vec::new(),
    };
    for stamped in &recorded.events {
        if let Event::Violated { violation } = &stamped.event {
            if violation.invariant == target {
                // Found when a timer fired after the last step (a broker's own expiry): the
                // script waits until then, so that its replay reaches the same moment.
                if writer.steps.last().is_none_or(|s| s.at_ms < stamped.at_ms) {
                    writer.push(stamped.at_ms, None, "wait");
                }
                break;
            }
        }
        if !writer.event(stamped.at_ms, &stamped.event) {
            break;
        }
    }
    writer.scenario(target, note)
}

impl Writer<'_> {
    /// Writes the steps of one event; false when the script ends with it (the liveness phase).
    fn event(&mut self, at_ms: u64, event: &Event) -> bool {
        match event {
            Event::Published { .. } => self.push(at_ms, None, "publish"),
            Event::Issued { issuance, .. } => self.issued.push(*issuance),
            Event::Fetched {
                worker,
                group,
                outcome,
            } => self.fetched(at_ms, *worker, *group, outcome),
            Event::Sent {
                request,
                worker,
                issuance,
                op,
                fault,
                worker_clock_ms,
                origin,
                before_timer,
                ..
            } => {
                let sent = Sent {
                    before_timer: *before_timer,
                    worker: *worker,
                    issuance: *issuance,
                    op: *op,
                    fault: *fault,
                    worker_clock_ms: *worker_clock_ms,
                    follow_up: matches!(origin, Origin::FollowUp(_)),
                };
                self.requests.insert(*request, sent);
            }
            Event::Landed {
                request, duplicate, ..
            } => self.landed(at_ms, *request, *duplicate),
            Event::NotApplied { request, .. } => self.landed(at_ms, *request, false),
            Event::Crashed { worker, .. } => self.push(at_ms, Some(*worker), "crash"),
            Event::Restarted { worker } => self.push(at_ms, Some(*worker), "restart"),
            Event::BrokerRestarted { .. } => self.push(at_ms, None, "broker_restart"),
            Event::DrainStarted => {
                self.drain(at_ms);
                return false;
            }
            _ => {}
        }
        true
    }

    fn push(&mut self, at_ms: u64, worker: Option<usize>, op: &str) {
        self.steps.push(Step {
            at_ms,
            worker: worker.map(|w| self.setup.worker_names[w].clone()),
            op: op.to_string(),
            ..Step::default()
        });
    }

    /// A fetch that issued leases or failed (the run records no empty fetch).
    fn fetched(&mut self, at_ms: u64, worker: usize, group: usize, outcome: &FetchOutcome) {
        let issued = std::mem::take(&mut self.issued);
        let fault = match outcome {
            FetchOutcome::Leased { reply_lost, .. } => reply_lost.then_some("lost_reply"),
            FetchOutcome::Failed(error) => Some(match error {
                leasehold_model::SettleError::BackendUnavailable => "unavailable",
                _ => "failed",
            }),
        };
        let bind = issued.first().map(|i| i.to_string());
        if let Some(first) = &bind {
            for (index, issuance) in issued.iter().enumerate() {
                let name = match index {
                    0 => first.clone(),
                    _ => format!("{first}-{}", index + 1),
                };
                self.names.insert(*issuance, name);
            }
        }
        let limit = self.setup.workload.fetch_limit.max(1);
        self.steps.push(Step {
            at_ms,
            worker: Some(self.setup.worker_names[worker].clone()),
            op: "fetch".to_string(),
            bind,
            group: (self.setup.group_names.len() > 1)
                .then(|| self.setup.group_names[group].clone()),
            limit: (limit > 1).then_some(limit),
            fault: fault.map(str::to_string),
            ..Step::default()
        });
    }

    /// A request landed (or was lost or refused) at `at_ms`.
    fn landed(&mut self, at_ms: u64, request: RequestId, duplicate: bool) {
        let Some(sent) = self.requests.get(&request).cloned() else {
            return;
        };
        let Some(lease) = self.names.get(&sent.issuance).cloned() else {
            return;
        };
        if sent.follow_up {
            return;
        }
        let fault = match (duplicate, sent.fault) {
            (true, _) | (false, Fault::None) => None,
            (false, Fault::LostReply) => Some("lost_reply"),
            (false, Fault::Dropped) => Some("dropped"),
            (false, Fault::Unavailable) => Some("unavailable"),
            (false, Fault::Failed) => Some("failed"),
        };
        let offset = sent.worker_clock_ms as i64 - at_ms as i64;
        self.offsets.insert(sent.worker, offset);
        let mut step = Step {
            at_ms,
            worker: Some(self.setup.worker_names[sent.worker].clone()),
            op: sent.op.name().to_string(),
            lease: Some(lease),
            fault: fault.map(str::to_string),
            before_timer: sent.before_timer,
            ..Step::default()
        };
        match sent.op {
            SettleOp::Nack { delay_ms, reason } => {
                step.delay_ms = (delay_ms != 0).then_some(delay_ms);
                step.reason = reason.map(|r| r.to_string());
            }
            SettleOp::Reject { reason } => step.reason = Some(reason.to_string()),
            SettleOp::Renew { extend_ms } => step.extend_ms = Some(extend_ms),
            SettleOp::Ack => {}
        }
        self.steps.push(step);
    }

    /// The liveness phase: healed workers drain the queue within the run's bound.
    fn drain(&mut self, at_ms: u64) {
        let outcome = match self.setup.policy {
            AckPolicy::Manual => "ack",
            _ => "ok",
        };
        self.steps.push(Step {
            at_ms,
            op: "drain".to_string(),
            outcome: Some(outcome.to_string()),
            liveness_ms_max: Some(self.setup.liveness_ms_max()),
            ..Step::default()
        });
    }

    fn scenario(self, target: Invariant, note: String) -> Scenario {
        let mut scenario = scenario_of(self.setup, Some(target.id()), Some(note));
        scenario.seed = None;
        scenario.workload = None;
        scenario.draws = None;
        scenario.faults = None;
        scenario.config.clock_offset_ms.clear();
        if self.setup.variant != leasehold_model::Variant::WorkerClockExpiry {
            // Only this variant's broker reads a worker's clock.
            scenario.steps = self.steps;
            return scenario;
        }
        let names = &self.setup.worker_names;
        for (worker, offset) in &self.offsets {
            if *offset != 0 {
                scenario
                    .config
                    .clock_offset_ms
                    .insert(names[*worker].clone(), *offset);
            }
        }
        scenario.steps = self.steps;
        scenario
    }
}
