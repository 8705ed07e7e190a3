//! The recorder: an optional sink of the engine's event stream that keeps the whole story.
//!
//! A campaign seed runs without one (its trace is a hash); a scenario replay, a `--trace` run
//! and a failing seed re-run for its file attach one. The recorder keeps two views of the run:
//!
//! * the **event log** ([`Recorder::events`]): every [`Event`] with its virtual time and the
//!   driver's step, in the order it happened — a request's send and its landing are separate
//!   entries at their own times;
//! * the **trace** ([`Trace`]): the same events folded into lines, one per action, with each
//!   request's later consequences (its answer, the reply, the runtime's follow-up) attached to
//!   the line that sent it — what [`crate::timeline`] and [`crate::svg`] render.
//!
//! Memory grows with the run: a recorder is for runs a person will read.

use crate::engine::describe_outcome;
use crate::event::{Event, FetchOutcome, Origin, Readback};
use crate::trace::{
    Effect, FetchResult, Found, LeaseEnd, LeaseInfo, Line, LineKind, Part, Request, RequestId,
    Trace, WorkerIx,
};
use leasehold_model::{BrokerView, GroupIx, Issuance, Lease, Ms, Seq, SettleError};
use serde::Serialize;
use std::collections::BTreeMap;

/// One entry of the event log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stamped {
    /// Virtual time when it happened.
    pub at_ms: Ms,
    /// The driver's step index (a scenario step) at that moment.
    pub step: Option<usize>,
    /// What happened.
    pub event: Event,
}

/// Called with the trace so far and the broker at the end of every step: a test compares the
/// story told so far with the broker's own state.
#[derive(Clone)]
pub struct StepObserver(pub std::sync::Arc<ObserveFn>);

/// What a [`StepObserver`] calls.
pub type ObserveFn = dyn Fn(&Trace, &dyn BrokerView) + Send + Sync;

impl std::fmt::Debug for StepObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepObserver")
    }
}

/// Keeps a run's events and builds its trace.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    observer: Option<StepObserver>,
    trace: Trace,
    events: Vec<Stamped>,
    /// The line of each handler run, by run id.
    run_line: Vec<usize>,
    /// Leases issued by the fetch in progress.
    issued: Vec<Issuance>,
    /// Renewed leases carried by replies not yet received.
    renewed: BTreeMap<RequestId, Lease>,
    step: Option<usize>,
}

impl Recorder {
    /// A recorder for a run of these workers and groups.
    pub fn new(workers: &[String], groups: &[String]) -> Recorder {
        Recorder {
            trace: Trace {
                workers: workers.to_vec(),
                groups: groups.to_vec(),
                ..Trace::default()
            },
            ..Recorder::default()
        }
    }

    /// Calls `observer` at the end of every step from now on.
    pub fn observe_with(&mut self, observer: StepObserver) {
        self.observer = Some(observer);
    }

    /// A step ended: the observer, if any, sees the trace and the broker.
    pub fn end_step(&self, broker: &dyn BrokerView) {
        if let Some(observer) = &self.observer {
            (observer.0)(&self.trace, broker);
        }
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The event log so far.
    pub fn events(&self) -> &[Stamped] {
        &self.events
    }

    /// The finished trace (its end time set to `end_ms`) and the event log.
    pub fn finish(mut self, end_ms: Ms) -> (Trace, Vec<Stamped>) {
        self.trace.end_ms = end_ms;
        (self.trace, self.events)
    }

    /// The latest line of handler run `run` (where it started, or where it went on), once it
    /// started.
    pub fn run_line(&self, run: crate::event::RunId) -> Option<usize> {
        self.run_line.get(run.0 as usize).copied()
    }

    /// Sets the driver's step index recorded with the following lines and events.
    pub fn set_step(&mut self, step: Option<usize>) {
        self.step = step;
    }

    /// Names a lease in the timeline (a scenario's `bind`); leases are `L<n>` by default.
    pub fn name_lease(&mut self, issuance: Issuance, name: String) {
        if let Some(info) = self.trace.leases.get_mut(issuance.0 as usize) {
            info.name = name;
        }
    }

    fn line(&mut self, at_ms: Ms, worker: Option<WorkerIx>, kind: LineKind) -> usize {
        self.trace.lines.push(Line {
            at_ms,
            worker,
            step: self.step,
            kind,
            parts: Vec::new(),
        });
        self.trace.lines.len() - 1
    }

    /// The line to tell something of `line`'s story at `at_ms`: `line` itself when it is the
    /// last line and tells the same moment, else a new line (nothing is told out of order).
    fn continue_on(
        &mut self,
        line: usize,
        at_ms: Ms,
        worker: Option<WorkerIx>,
        kind: impl FnOnce() -> LineKind,
    ) -> usize {
        let last = self.trace.lines.len().checked_sub(1);
        if last == Some(line) && self.trace.lines[line].at_ms == at_ms {
            line
        } else {
            self.line(at_ms, worker, kind())
        }
    }

    /// The line on which a landing of request `id` at `at_ms` is told, with its part.
    fn landing_line(&mut self, at_ms: Ms, id: RequestId, duplicate: Option<u32>) -> usize {
        let r = &self.trace.requests[id.0 as usize];
        let (base, worker) = (r.landed_line.unwrap_or(r.line), r.worker);
        let line = self.continue_on(base, at_ms, Some(worker), || LineKind::Landing);
        let part = Part::Landed {
            request: id,
            duplicate,
        };
        self.trace.lines[line].parts.push(part);
        if duplicate.is_none() {
            self.request(id).landed_line = Some(line);
        }
        line
    }

    fn request(&mut self, id: RequestId) -> &mut Request {
        &mut self.trace.requests[id.0 as usize]
    }

    fn lease(&mut self, issuance: Issuance) -> &mut LeaseInfo {
        &mut self.trace.leases[issuance.0 as usize]
    }

    /// Records `event`, which happened at `at_ms` (a copy of it: see [`Recorder::record_owned`]).
    pub fn record(&mut self, at_ms: Ms, event: &Event) {
        self.record_owned(at_ms, event.clone());
    }

    /// Records `event`, which happened at `at_ms`, taking it (no copy of it is made).
    #[inline(never)]
    pub fn record_owned(&mut self, at_ms: Ms, event: Event) {
        self.apply(at_ms, &event);
        self.events.push(Stamped {
            at_ms,
            step: self.step,
            event,
        });
    }

    fn apply(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Published { seq } => {
                self.line(at_ms, None, LineKind::Published { seq: *seq });
            }
            Event::Issued { .. } | Event::Fetched { .. } => self.fetch(at_ms, event),
            Event::Sent { .. } => self.sent(at_ms, event),
            Event::Landed {
                request,
                duplicate,
                answer,
                effect,
                renewed,
            } => self.landed(at_ms, *request, *duplicate, answer, effect, *renewed),
            Event::NotApplied {
                request,
                reached,
                seen,
            } => {
                self.landing_line(at_ms, *request, None);
                let r = self.request(*request);
                if *reached {
                    r.delivered_ms = Some(at_ms);
                }
                r.seen = Some(Err(seen.clone()));
            }
            Event::Replied {
                request,
                discarded,
                follow_up,
            } => self.replied(*request, *discarded, *follow_up),
            Event::HandlerStarted { .. }
            | Event::HandlerFinished { .. }
            | Event::HandlerKilled { .. } => self.handler(at_ms, event),
            Event::Expired {
                issuance,
                at_ms,
                dead_lettered,
                frontier,
            } => {
                let end = LeaseEnd::Expired {
                    dead_lettered: *dead_lettered,
                };
                self.lease(*issuance).ended = Some((*at_ms, end));
                let group = self.trace.leases[issuance.0 as usize].lease.group;
                let frontier = self.tell_batch_move_once(group, *frontier, *dead_lettered);
                let kind = LineKind::Expired {
                    issuance: *issuance,
                    dead_lettered: *dead_lettered,
                    frontier,
                };
                self.line(*at_ms, None, kind);
            }
            _ => self.worker_or_phase(at_ms, event),
        }
    }

    /// The broker expires due leases in a batch and the engine reads each group's frontier
    /// before and after the batch: every expiry of a group in the batch carries the same move.
    /// It is told once, on the expiry that can move a frontier (a dead letter), the latest one.
    fn tell_batch_move_once(
        &mut self,
        group: GroupIx,
        frontier: Option<(Seq, Seq)>,
        dead_lettered: bool,
    ) -> Option<(Seq, Seq)> {
        let (before, _) = frontier?;
        for i in (0..self.trace.lines.len()).rev() {
            let leases = &self.trace.leases;
            let LineKind::Expired {
                issuance,
                dead_lettered: earlier_dead,
                frontier: told,
            } = &mut self.trace.lines[i].kind
            else {
                break;
            };
            if leases[issuance.0 as usize].lease.group != group
                || told.is_none_or(|t| t.0 != before)
            {
                continue;
            }
            if *earlier_dead && !dead_lettered {
                return None;
            }
            *told = None;
        }
        frontier
    }

    /// A handler run: its line, then how it ended.
    fn handler(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::HandlerStarted {
                run,
                worker,
                issuance,
            } => {
                debug_assert_eq!(run.0 as usize, self.run_line.len());
                let kind = LineKind::Handle {
                    issuance: *issuance,
                };
                let line = self.line(at_ms, Some(*worker), kind);
                self.run_line.push(line);
            }
            Event::HandlerFinished { run, outcome } => {
                let line = self.resume_run(at_ms, run.0 as usize);
                self.trace.lines[line].parts.push(Part::HandlerFinished {
                    outcome: describe_outcome(outcome),
                    success: outcome.is_success(),
                });
            }
            Event::HandlerKilled { run } => {
                let line = self.run_line[run.0 as usize];
                self.trace.lines[line].parts.push(Part::HandlerKilled);
            }
            _ => unreachable!("handled by apply"),
        }
    }

    /// The line on which handler run `run` goes on at `at_ms` (see [`Recorder::continue_on`]).
    fn resume_run(&mut self, at_ms: Ms, run: usize) -> usize {
        let started = self.run_line[run];
        let worker = self.trace.lines[started].worker;
        let issuance = match &self.trace.lines[started].kind {
            LineKind::Handle { issuance } | LineKind::HandlerResumed { issuance } => *issuance,
            _ => unreachable!("a run line tells a handler run"),
        };
        let line = self.continue_on(started, at_ms, worker, || LineKind::HandlerResumed {
            issuance,
        });
        self.run_line[run] = line;
        line
    }

    /// A lease issued, a fetch ended.
    fn fetch(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            } => {
                debug_assert_eq!(issuance.0 as usize, self.trace.leases.len());
                self.trace.leases.push(LeaseInfo {
                    name: issuance.to_string(),
                    issuance: *issuance,
                    lease: *lease,
                    holder: *worker,
                    holder_incarnation: *incarnation,
                    delivered: *delivered,
                    fetched_ms: at_ms,
                    ended: None,
                });
                self.issued.push(*issuance);
            }
            Event::Fetched {
                worker,
                group,
                outcome,
            } => {
                let result = match outcome {
                    FetchOutcome::Leased { reply_lost, .. } => FetchResult::Leased {
                        leases: std::mem::take(&mut self.issued),
                        reply_lost: *reply_lost,
                    },
                    FetchOutcome::Failed(error) => FetchResult::Failed(error.clone()),
                };
                let kind = LineKind::Fetched {
                    group: *group,
                    result,
                };
                self.line(at_ms, Some(*worker), kind);
            }
            _ => unreachable!("handled by apply"),
        }
    }

    fn worker_or_phase(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Crashed { worker, held } => {
                let kind = LineKind::Crashed {
                    held: held.to_vec(),
                };
                self.line(at_ms, Some(*worker), kind);
            }
            Event::Restarted { worker } => {
                self.line(at_ms, Some(*worker), LineKind::Restarted);
            }
            Event::Paused { worker, until_ms } => {
                let kind = LineKind::Paused {
                    until_ms: *until_ms,
                };
                self.line(at_ms, Some(*worker), kind);
            }
            Event::BrokerRestarted { frontier } => {
                let kind = LineKind::BrokerRestarted {
                    frontier: frontier.to_vec(),
                };
                self.line(at_ms, None, kind);
            }
            Event::DrainStarted => {
                self.line(at_ms, None, LineKind::DrainStarted);
            }
            Event::DrainEnded {
                end,
                settled,
                frontier,
            } => {
                let kind = LineKind::DrainEnded {
                    settled: *settled,
                    why: end.describe(),
                    frontier: frontier.clone(),
                };
                self.line(at_ms, None, kind);
            }
            Event::Violated { violation } => {
                let line = self.trace.lines.len().checked_sub(1);
                self.trace.violations.push(Found {
                    violation: violation.clone(),
                    line,
                    step: self.step,
                });
            }
            _ => unreachable!("handled by apply"),
        }
    }

    fn sent(&mut self, at_ms: Ms, event: &Event) {
        let &Event::Sent {
            request: id,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            sent_ms,
            fault,
            delayed,
            nack_on_failure,
            origin,
            ..
        } = event
        else {
            return;
        };
        debug_assert_eq!(id.0 as usize, self.trace.requests.len());
        self.trace.requests.push(Request {
            id,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            sent_ms,
            fault,
            delayed,
            nack_on_failure,
            delivered_ms: None,
            answer: None,
            effect: Effect::default(),
            duplicate_answers: Vec::new(),
            duplicate_effects: Vec::new(),
            seen: None,
            reply_discarded: false,
            follow_up: None,
            follow_up_request: None,
            line: 0,
            landed_line: None,
        });
        let line = match origin {
            Origin::Own => self.line(at_ms, Some(worker), LineKind::Settle),
            Origin::Handler(run) => self.resume_run(at_ms, run.0 as usize),
            Origin::FollowUp(failed) => {
                let r = self.request(failed);
                r.follow_up_request = Some(id);
                let base = r.landed_line.unwrap_or(r.line);
                self.continue_on(base, at_ms, Some(worker), || LineKind::Settle)
            }
        };
        self.trace.lines[line].parts.push(Part::Request(id));
        self.request(id).line = line;
    }

    fn landed(
        &mut self,
        at_ms: Ms,
        id: RequestId,
        duplicate: bool,
        answer: &Result<(), SettleError>,
        readback: &Readback,
        renewed: Option<Lease>,
    ) {
        let (issuance, op, fault) = {
            let r = &self.trace.requests[id.0 as usize];
            (r.issuance, r.op, r.fault)
        };
        if answer.is_ok() {
            let info = self.lease(issuance);
            if op.is_settle() && info.ended.is_none() {
                info.ended = Some((at_ms, LeaseEnd::Settled { op: op.name() }));
            }
            if let (Some(renewed), Some((_, LeaseEnd::Expired { .. }))) = (renewed, &info.ended) {
                // A renew that revived an expired lease (renew-revives): it lives again.
                info.ended = None;
                info.lease.deadline_ms = renewed.deadline_ms;
            }
        }
        if duplicate {
            let k = self.trace.requests[id.0 as usize].duplicate_answers.len() as u32;
            self.landing_line(at_ms, id, Some(k));
            let effect = if answer.is_ok() {
                effect_of(readback)
            } else {
                Effect::default()
            };
            let r = self.request(id);
            r.duplicate_answers.push(answer.clone());
            r.duplicate_effects.push(effect);
            return;
        }
        self.landing_line(at_ms, id, None);
        let r = self.request(id);
        r.delivered_ms = Some(at_ms);
        r.answer = Some(answer.clone());
        if answer.is_ok() {
            r.effect = effect_of(readback);
        }
        r.seen = Some(match fault {
            crate::trace::Fault::LostReply => Err(SettleError::Ambiguous("reply lost".into())),
            _ => answer.clone(),
        });
        if let Some(renewed) = renewed {
            self.renewed.insert(id, renewed);
        }
    }

    fn replied(
        &mut self,
        id: RequestId,
        discarded: bool,
        follow_up: Option<leasehold_model::ErrorAction>,
    ) {
        let renewed = self.renewed.remove(&id);
        let r = self.request(id);
        if discarded {
            r.reply_discarded = true;
            return;
        }
        r.follow_up = follow_up;
        let issuance = r.issuance;
        if matches!(r.seen, Some(Ok(()))) {
            if let Some(renewed) = renewed {
                self.lease(issuance).lease = renewed;
            }
        }
    }
}

/// What an accepted request did, as the engine read it back from the broker.
fn effect_of(readback: &Readback) -> Effect {
    let (before, after) = (readback.frontier_before, readback.frontier_after);
    Effect {
        frontier: (after != before).then_some((before, after)),
        frontier_after: after,
        status: readback.status,
        reason: readback.reason.map(|reason| reason.as_str().to_string()),
        renewed_until_ms: readback.renewed_until_ms,
    }
}
