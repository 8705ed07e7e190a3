//! The deterministic executor: a broker under test and N workers on virtual time.
//!
//! The engine is an interpreter of the protocol's effects. A *driver* — the scenario runner
//! ([`crate::script`]) or a seeded simulator — tells it what the actors do; the engine does it,
//! feeds the [`Oracle`] the truth, and records a [`Trace`].
//!
//! # Time and the event queue
//! Time is virtual milliseconds owned by the engine. Messages in flight and timers sit in an
//! event queue ordered by `(time_ms, insertion sequence)`; nothing reads a clock. The driver
//! moves time with [`Engine::run_until`], which processes, in order, every broker expiry
//! (`Backend::next_deadline`) and every queued event due at or before the target time. An
//! expiry due at the same time as an event runs first: a lease is valid while
//! `now < deadline`. With [`Expiry::OnFetch`] the broker expires leases only when it next
//! fetches instead.
//!
//! # Nodes
//! * The **broker** is any [`Backend`], owned by the engine (`Engine<B: Backend>`); the pure
//!   `Broker` and an embedded broker run the same drivers.
//! * **Workers** have a name, are up or crashed, may be paused until a time (a stalled worker
//!   acts on replies and handler completions only when the pause ends), have a clock offset
//!   (their clock reads `now + offset`, sent with each settle), and hold leases by
//!   [`Issuance`]. A crash starts a new *incarnation*: the worker forgets its leases and its
//!   running handler, and replies addressed to the old incarnation are discarded — but requests
//!   it already sent stay in flight and may land late.
//!
//! # Requests
//! [`Engine::send`] puts a settle or renew on the wire with a [`Delivery`]: a delay, a reply
//! delay, a [`Fault`] (lost reply → applied but the worker sees `Ambiguous`; dropped → not
//! applied, `Ambiguous`; unavailable → not applied, `BackendUnavailable`; failed → not applied,
//! `Failed`) and an optional duplicate. On delivery the engine calls `Backend::settle` and
//! reports the broker's **true** answer to the oracle ([`Oracle::settled`]), whatever the worker
//! later sees. On the reply the worker runs the consumer runtime: a failed settle is classified
//! by [`runtime::classify`] — `Drop`, `LeaveToExpire`, or `Nack` (sent once).
//!
//! # The handler
//! [`Engine::handle`] runs the consumer runtime on a held lease: [`runtime::decide`] turns the
//! ack policy, the handler's handle calls and its outcome into settles, sent in order (before
//! the handler for `ack_first`, during it for handle calls, after it otherwise). The handler
//! takes `handler_ms`; a crash before it finishes kills it.
//!
//! # Checking
//! The driver calls [`Engine::end_step`] after each step; the engine then lets the oracle read
//! the broker ([`Oracle::end_step`]) and records every new violation with the line and step at
//! which it was found. [`Engine::drain`] is the liveness phase: faults heal, the workers run
//! until every event is settled or a named bound is hit, and I6 is checked.
//!
//! # A driver's loop
//! ```
//! use leasehold_model::{AckPolicy, Broker, BrokerConfig, Variant};
//! use leasehold_sim::engine::{Delivery, Engine, HandlerRun, Setup};
//!
//! let setup = Setup::new(Variant::Fenced, &["g"], &["A", "B"], 30_000, 3, AckPolicy::NackOnError);
//! let broker = Broker::new(setup.broker_config());
//! let mut engine = Engine::new(broker, setup);
//! engine.publish_initial(1);
//! let leases = engine.fetch(0, 0, 1, None, &["L1".to_string()], Default::default()).unwrap();
//! engine.end_step();
//! engine.handle(0, leases[0], HandlerRun::ok(), Delivery::INSTANT);
//! engine.run_until(engine.now_ms());
//! engine.end_step();
//! assert!(engine.oracle().violations().is_empty());
//! assert_eq!(engine.trace().lines.len(), 2);
//! ```

use crate::trace::{
    Effect, Fault, FetchResult, Found, LeaseEnd, LeaseInfo, Line, LineKind, Part, Request,
    RequestId, Trace, WorkerIx,
};
use leasehold_model::runtime::{self, When};
use leasehold_model::{
    AckPolicy, Backend, BrokerConfig, ErrorAction, GroupIx, HandleCall, Issuance, Lease, Ms,
    Oracle, OracleConfig, Outcome, Reason, Seq, SettleError, SettleOp, SettleRequest, Status,
    Variant,
};
use std::collections::BTreeMap;

/// The configuration an engine runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The protocol variant or mutant (the broker's and the runtime's decisions).
    pub variant: Variant,
    /// Consumer group names.
    pub groups: Vec<String>,
    /// Worker names.
    pub workers: Vec<String>,
    /// Default lease duration (Redis variants: the claim idle time).
    pub lease_ms: Ms,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// The consumer runtime's ack policy.
    pub ack_policy: AckPolicy,
    /// Per-worker clock offset, by worker index (missing entries are 0).
    pub clock_offset_ms: Vec<i64>,
    /// Whether the oracle checks I7 (every ack comes from a handler run under an at-least-once
    /// policy).
    pub check_at_least_once: bool,
    /// When the broker applies due expiries.
    pub expiry: Expiry,
}

/// When the engine lets the broker expire due leases. The oracle's ghost leases expire at their
/// contract deadline either way, so a settle the broker accepts after the deadline is caught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expiry {
    /// At the deadline: before anything happens at time `t`, every lease whose deadline is
    /// `<= t` expires (SPEC section 6).
    #[default]
    AtDeadline,
    /// Lazily, when the broker next fetches (as Redis claims idle entries): until then an
    /// expired lease's record stays leased, and only the broker's own deadline check fences
    /// settles.
    OnFetch,
}

impl Expiry {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Expiry::AtDeadline => "at_deadline",
            Expiry::OnFetch => "on_fetch",
        }
    }

    /// Parses a scenario file's name.
    pub fn from_name(name: &str) -> Option<Expiry> {
        [Expiry::AtDeadline, Expiry::OnFetch]
            .into_iter()
            .find(|e| e.name() == name)
    }
}

impl Setup {
    /// A setup with no clock offsets; I7 is checked when the policy is at-least-once.
    pub fn new(
        variant: Variant,
        groups: &[&str],
        workers: &[&str],
        lease_ms: Ms,
        max_attempts: u32,
        ack_policy: AckPolicy,
    ) -> Setup {
        Setup {
            variant,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            workers: workers.iter().map(|w| w.to_string()).collect(),
            lease_ms,
            max_attempts,
            ack_policy,
            clock_offset_ms: Vec::new(),
            check_at_least_once: ack_policy.at_least_once(),
            expiry: Expiry::AtDeadline,
        }
    }

    /// The pure broker's configuration for this setup.
    pub fn broker_config(&self) -> BrokerConfig {
        BrokerConfig {
            group_count: self.groups.len(),
            lease_ms: self.lease_ms,
            max_attempts: self.max_attempts,
            variant: self.variant,
        }
    }
}

/// How a request travels: delays, a fault, a duplicate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Time from sending to reaching the broker.
    pub delay_ms: Ms,
    /// Time from the broker to the worker's reply (or its timeout, for a lost reply).
    pub reply_delay_ms: Ms,
    /// The injected fault.
    pub fault: Fault,
    /// Deliver a copy again this long after the first delivery (its answer is recorded; its
    /// reply is not sent).
    pub duplicate_after_ms: Option<Ms>,
}

impl Delivery {
    /// No delay, no fault.
    pub const INSTANT: Delivery = Delivery {
        delay_ms: 0,
        reply_delay_ms: 0,
        fault: Fault::None,
        duplicate_after_ms: None,
    };

    /// No delay, with `fault`.
    pub fn with_fault(fault: Fault) -> Delivery {
        Delivery {
            fault,
            ..Delivery::INSTANT
        }
    }
}

/// One handler run: how it ends, what it calls on its message handle, how long it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerRun {
    /// How the handler leaves.
    pub outcome: Outcome,
    /// Calls on the message handle, in order.
    pub calls: Vec<HandleCall>,
    /// How long the handler runs.
    pub handler_ms: Ms,
}

impl HandlerRun {
    /// A handler that returns at once without handle calls.
    pub fn ok() -> HandlerRun {
        HandlerRun::of(Outcome::Ok)
    }

    /// A handler that leaves with `outcome` at once without handle calls.
    pub fn of(outcome: Outcome) -> HandlerRun {
        HandlerRun {
            outcome,
            calls: Vec::new(),
            handler_ms: 0,
        }
    }
}

/// A worker's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    /// Its name.
    pub name: String,
    /// Up or crashed.
    pub up: bool,
    /// Incremented by each crash.
    pub incarnation: u32,
    /// Stalled until this time (0: not paused).
    pub paused_until_ms: Ms,
    /// Its clock reads `now + clock_offset_ms` (never below 0).
    pub clock_offset_ms: i64,
    /// Leases it holds and has not settled, in fetch order.
    pub held: Vec<Issuance>,
}

/// One handler run, as the runtime recorded it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HandlerCall {
    /// The worker.
    pub worker: WorkerIx,
    /// The lease.
    pub issuance: Issuance,
    /// The group.
    pub group: GroupIx,
    /// The event.
    pub seq: Seq,
    /// The delivery number (the lease's attempt), as the handler sees it.
    pub attempt: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Deliver {
        request: RequestId,
        duplicate: bool,
    },
    Reply {
        request: RequestId,
    },
    HandlerDone {
        worker: WorkerIx,
        incarnation: u32,
        issuance: Issuance,
        group: GroupIx,
        seq: Seq,
        /// Whether the lease was live and current when the handler started (for I7).
        started_current: bool,
        success: bool,
        outcome: String,
        after: Vec<SettleOp>,
        line: usize,
        delivery: Delivery,
    },
}

/// The bound on handler runs in one liveness phase (besides its time bound): hitting it ends
/// the phase with that reason instead of running forever on a protocol that redelivers forever.
pub const DRAIN_HANDLER_RUNS_MAX: u64 = 10_000;

/// What ended a liveness phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Every event of every group settled.
    pub settled: bool,
    /// Why the phase ended.
    pub why: String,
}

/// The executor: one backend, the workers, the event queue, the oracle and the trace.
pub struct Engine<B: Backend> {
    backend: B,
    setup: Setup,
    oracle: Oracle,
    now_ms: Ms,
    queue: BTreeMap<(Ms, u64), Event>,
    inserted: u64,
    workers: Vec<Worker>,
    trace: Trace,
    handler_calls: Vec<HandlerCall>,
    step: Option<usize>,
    /// How each request travels, by request id.
    deliveries: Vec<Delivery>,
    /// Renewed leases carried by replies not yet received.
    renewed: BTreeMap<RequestId, Lease>,
    /// Follow-up nacks the runtime sends travel this way.
    pub follow_up_delivery: Delivery,
    /// Reused buffer: the frontiers before an expiry.
    frontier_scratch: Vec<Seq>,
}

impl<B: Backend> Engine<B> {
    /// An engine at time 0 driving `backend` (which must have no events yet).
    pub fn new(backend: B, setup: Setup) -> Engine<B> {
        let oracle = Oracle::new(OracleConfig::new(
            setup.groups.len(),
            setup.max_attempts,
            setup.check_at_least_once,
        ));
        let workers = setup
            .workers
            .iter()
            .enumerate()
            .map(|(index, name)| Worker {
                name: name.clone(),
                up: true,
                incarnation: 0,
                paused_until_ms: 0,
                clock_offset_ms: setup.clock_offset_ms.get(index).copied().unwrap_or(0),
                held: Vec::new(),
            })
            .collect();
        let trace = Trace {
            workers: setup.workers.clone(),
            groups: setup.groups.clone(),
            ..Trace::default()
        };
        Engine {
            backend,
            oracle,
            now_ms: 0,
            queue: BTreeMap::new(),
            inserted: 0,
            workers,
            trace,
            handler_calls: Vec::new(),
            step: None,
            deliveries: Vec::new(),
            renewed: BTreeMap::new(),
            follow_up_delivery: Delivery::INSTANT,
            frontier_scratch: Vec::new(),
            setup,
        }
    }

    /// Current virtual time.
    pub fn now_ms(&self) -> Ms {
        self.now_ms
    }

    /// The configuration.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The broker under test.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The oracle (violations, duplicate runs, delivery counts).
    pub fn oracle(&self) -> &Oracle {
        &self.oracle
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The workers.
    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// Every handler run so far, in order.
    pub fn handler_calls(&self) -> &[HandlerCall] {
        &self.handler_calls
    }

    /// Ends the run and returns the trace.
    pub fn into_trace(mut self) -> Trace {
        self.trace.end_ms = self.now_ms;
        self.trace
    }

    /// Sets the driver's step index recorded with the following lines and violations.
    pub fn set_step(&mut self, step: Option<usize>) {
        self.step = step;
    }

    /// The time of the next queued event, if any.
    pub fn next_event_ms(&self) -> Option<Ms> {
        self.queue.keys().next().map(|&(at, _)| at)
    }

    /// Whether nothing is in flight (no queued message, reply or running handler).
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    fn enqueue(&mut self, at_ms: Ms, event: Event) {
        self.queue.insert((at_ms, self.inserted), event);
        self.inserted += 1;
    }

    fn line(&mut self, worker: Option<WorkerIx>, kind: LineKind) -> usize {
        self.trace.lines.push(Line {
            at_ms: self.now_ms,
            worker,
            step: self.step,
            kind,
            parts: Vec::new(),
        });
        self.trace.lines.len() - 1
    }

    // ----- time -----

    /// Advances time to `until_ms` (never backwards), processing in order every broker expiry
    /// and every queued event due at or before it.
    pub fn run_until(&mut self, until_ms: Ms) {
        let until_ms = until_ms.max(self.now_ms);
        // A backend whose next_deadline does not expire anything must not loop forever.
        let mut exhausted_deadline: Option<Ms> = None;
        let eager = self.setup.expiry == Expiry::AtDeadline;
        loop {
            let deadline = self
                .backend
                .next_deadline()
                .filter(|_| eager)
                .filter(|&d| d <= until_ms && exhausted_deadline.filter(|&x| d <= x).is_none());
            let event = self.next_event_ms().filter(|&e| e <= until_ms);
            match (deadline, event) {
                (Some(d), e) if e.filter(|&e| d > e).is_none() => {
                    if !self.expire_at(d.max(self.now_ms)) {
                        exhausted_deadline = Some(d);
                    }
                }
                (_, Some(_)) => {
                    let ((at_ms, _), event) = self.queue.pop_first().expect("peeked");
                    self.now_ms = self.now_ms.max(at_ms);
                    self.oracle.advance(self.now_ms);
                    self.process(event);
                }
                _ => break,
            }
        }
        self.now_ms = until_ms;
        if eager {
            self.expire_at(until_ms);
        } else {
            self.oracle.advance(until_ms);
        }
    }

    /// Expires due leases at `at_ms`; returns whether the broker expired any.
    fn expire_at(&mut self, at_ms: Ms) -> bool {
        self.now_ms = self.now_ms.max(at_ms);
        let now_ms = self.now_ms;
        let mut before = std::mem::take(&mut self.frontier_scratch);
        before.clear();
        before.extend((0..self.setup.groups.len()).map(|g| self.backend.frontier(g)));
        let expired = self.backend.expire_due(now_ms);
        self.oracle.advance(now_ms);
        for item in &expired {
            self.oracle.observe(item.group, item.seq);
        }
        for item in &expired {
            let found = self.trace.leases.iter().rposition(|info| {
                info.lease.group == item.group
                    && info.lease.seq == item.seq
                    && info.lease.lease_id == item.lease_id
                    && info.ended.is_none()
            });
            let Some(index) = found else { continue };
            let issuance = Issuance(index as u32);
            let at = self.trace.leases[index].lease.deadline_ms.min(now_ms);
            self.trace.leases[index].ended = Some((
                at,
                LeaseEnd::Expired {
                    dead_lettered: item.dead_lettered,
                },
            ));
            for worker in &mut self.workers {
                worker.held.retain(|&held| held != issuance);
            }
            let after = self.backend.frontier(item.group);
            let frontier = (after != before[item.group]).then_some((before[item.group], after));
            let line = self.line(
                None,
                LineKind::Expired {
                    issuance,
                    dead_lettered: item.dead_lettered,
                    frontier,
                },
            );
            self.trace.lines[line].at_ms = at;
        }
        self.frontier_scratch = before;
        !expired.is_empty()
    }

    fn process(&mut self, event: Event) {
        // A handler that finishes while its worker is paused finishes when the pause ends.
        if let Event::HandlerDone {
            worker,
            incarnation,
            ..
        } = event
        {
            let w = &self.workers[worker];
            let alive = w.up && w.incarnation == incarnation;
            if alive && w.paused_until_ms > self.now_ms {
                let at = w.paused_until_ms;
                self.enqueue(at, event);
                return;
            }
        }
        match event {
            Event::Deliver { request, duplicate } => self.deliver(request, duplicate),
            Event::Reply { request } => self.reply(request),
            Event::HandlerDone {
                worker,
                incarnation,
                issuance,
                group,
                seq,
                started_current,
                success,
                outcome,
                after,
                line,
                delivery,
            } => {
                let w = &self.workers[worker];
                if !w.up || w.incarnation != incarnation {
                    self.trace.lines[line].parts.push(Part::HandlerKilled);
                    return;
                }
                self.oracle
                    .handler_finished(group, seq, started_current, success);
                let part = Part::HandlerFinished { outcome, success };
                self.trace.lines[line].parts.push(part);
                for op in after {
                    self.send_on(line, worker, issuance, None, op, delivery, true);
                }
            }
        }
    }

    // ----- the broker side of a request -----

    fn deliver(&mut self, id: RequestId, duplicate: bool) {
        let now_ms = self.now_ms;
        let request = self.trace.request(id).clone();
        let fault = if duplicate {
            Fault::None
        } else {
            request.fault
        };
        let reply_at = now_ms.saturating_add(self.deliveries[id.0 as usize].reply_delay_ms);
        match fault {
            Fault::Dropped => {
                self.trace.requests[id.0 as usize].seen =
                    Some(Err(SettleError::Ambiguous("request lost".into())));
                self.enqueue(reply_at, Event::Reply { request: id });
                return;
            }
            Fault::Unavailable | Fault::Failed => {
                let error = if fault == Fault::Unavailable {
                    SettleError::BackendUnavailable
                } else {
                    SettleError::Failed("injected".into())
                };
                let r = &mut self.trace.requests[id.0 as usize];
                r.delivered_ms = Some(now_ms);
                r.seen = Some(Err(error));
                self.enqueue(reply_at, Event::Reply { request: id });
                return;
            }
            Fault::None | Fault::LostReply => {}
        }
        let before = self.backend.frontier(request.lease.group);
        let wire = SettleRequest {
            lease: request.lease,
            op: request.op,
            worker_clock_ms: request.worker_clock_ms,
        };
        let name = &self.setup.workers[request.worker];
        let answer = self.backend.settle_as(name, &wire, now_ms);
        self.oracle.settled(
            request.issuance,
            &request.lease,
            &request.op,
            answer.is_ok(),
            now_ms,
        );
        let effect = match &answer {
            Ok(renewed) => self.accepted(&request, renewed.as_ref(), before),
            Err(_) => Effect::default(),
        };
        let plain = answer.clone().map(drop);
        let r = &mut self.trace.requests[id.0 as usize];
        if duplicate {
            r.duplicate_answers.push(plain);
            return;
        }
        r.delivered_ms = Some(now_ms);
        r.answer = Some(plain.clone());
        r.effect = effect;
        r.seen = Some(match fault {
            Fault::LostReply => Err(SettleError::Ambiguous("reply lost".into())),
            _ => plain,
        });
        if let Ok(Some(renewed)) = answer {
            // Carried by the reply: the holder updates its copy when it arrives.
            self.renewed.insert(id, renewed);
        }
        self.enqueue(reply_at, Event::Reply { request: id });
        if let Some(after) = self.deliveries[id.0 as usize].duplicate_after_ms {
            self.enqueue(
                now_ms.saturating_add(after),
                Event::Deliver {
                    request: id,
                    duplicate: true,
                },
            );
        }
    }

    /// What an accepted request did to the broker, and to the engine's record of its lease.
    fn accepted(&mut self, request: &Request, renewed: Option<&Lease>, before: Seq) -> Effect {
        let (group, seq) = (request.lease.group, request.lease.seq);
        let after = self.backend.frontier(group);
        let (status, reason) = self.backend.status(group, seq);
        let info = &mut self.trace.leases[request.issuance.0 as usize];
        if request.op.is_settle() && info.ended.is_none() {
            let op = request.op.name();
            info.ended = Some((self.now_ms, LeaseEnd::Settled { op }));
        }
        if let (Some(renewed), Some((_, LeaseEnd::Expired { .. }))) = (renewed, &info.ended) {
            // A renew that revived an expired lease (renew-revives): the lease lives again.
            info.ended = None;
            info.lease.deadline_ms = renewed.deadline_ms;
        }
        Effect {
            frontier: (after != before).then_some((before, after)),
            frontier_after: after,
            status: Some(status),
            reason,
            renewed_until_ms: renewed.map(|l| l.deadline_ms),
        }
    }

    // ----- the worker side of a request -----

    fn reply(&mut self, id: RequestId) {
        let request = self.trace.request(id).clone();
        let worker = &self.workers[request.worker];
        if !worker.up || worker.incarnation != request.incarnation {
            self.trace.requests[id.0 as usize].reply_discarded = true;
            self.renewed.remove(&id);
            return;
        }
        if worker.paused_until_ms > self.now_ms {
            let at = worker.paused_until_ms;
            self.enqueue(at, Event::Reply { request: id });
            return;
        }
        let seen = request.seen.clone().expect("a reply carries a result");
        match seen {
            Ok(()) => {
                if let Some(renewed) = self.renewed.remove(&id) {
                    self.trace.leases[request.issuance.0 as usize].lease = renewed;
                } else if request.op.is_settle() {
                    self.forget(request.worker, request.issuance);
                }
            }
            Err(error) => {
                let mut action = runtime::classify(&error, self.setup.variant);
                let nack_once = action == ErrorAction::Nack
                    && request.nack_on_failure
                    && !matches!(request.op, SettleOp::Nack { .. });
                if action == ErrorAction::Nack && !nack_once {
                    action = ErrorAction::LeaveToExpire;
                }
                self.trace.requests[id.0 as usize].follow_up = Some(action);
                if nack_once {
                    let op = SettleOp::Nack {
                        delay_ms: 0,
                        reason: Some(Reason::from_static(error.name())),
                    };
                    let delivery = self.follow_up_delivery;
                    let line = self.line_of(id);
                    let nack = self.send_on(
                        line,
                        request.worker,
                        request.issuance,
                        None,
                        op,
                        delivery,
                        false,
                    );
                    self.trace.requests[id.0 as usize].follow_up_request = Some(nack);
                } else {
                    self.forget(request.worker, request.issuance);
                }
            }
        }
    }

    fn line_of(&self, id: RequestId) -> usize {
        self.trace
            .lines
            .iter()
            .rposition(|line| line.parts.contains(&Part::Request(id)))
            .expect("every request is part of a line")
    }

    fn forget(&mut self, worker: WorkerIx, issuance: Issuance) {
        self.workers[worker].held.retain(|&held| held != issuance);
    }

    /// Puts a settle or renew of `issuance` on the wire from `worker`, as its own line. The
    /// lease sent is the holder's copy, or `lease` when given (e.g. with a forged receipt).
    /// If `worker` fetched the lease in an earlier incarnation (it crashed since), the request
    /// is one it sent before crashing that was still in flight: it is marked delayed and its
    /// reply is discarded. Call [`Engine::run_until`] to deliver it.
    pub fn send(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        lease: Option<Lease>,
        op: SettleOp,
        delivery: Delivery,
    ) -> RequestId {
        let line = self.line(Some(worker), LineKind::Settle);
        self.send_on(line, worker, issuance, lease, op, delivery, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn send_on(
        &mut self,
        line: usize,
        worker: WorkerIx,
        issuance: Issuance,
        lease: Option<Lease>,
        op: SettleOp,
        delivery: Delivery,
        nack_on_failure: bool,
    ) -> RequestId {
        let info = self.trace.lease(issuance).clone();
        let w = &self.workers[worker];
        let delayed = info.holder == worker && info.holder_incarnation != w.incarnation;
        let incarnation = if delayed {
            info.holder_incarnation
        } else {
            w.incarnation
        };
        let worker_clock_ms = self.now_ms.saturating_add_signed(w.clock_offset_ms);
        let send_ms = self.now_ms.max(if delayed { 0 } else { w.paused_until_ms });
        let id = RequestId(self.trace.requests.len() as u32);
        self.trace.requests.push(Request {
            id,
            worker,
            incarnation,
            issuance,
            op,
            lease: lease.unwrap_or(info.lease),
            worker_clock_ms,
            sent_ms: send_ms,
            fault: delivery.fault,
            delayed,
            nack_on_failure,
            delivered_ms: None,
            answer: None,
            effect: Effect::default(),
            duplicate_answers: Vec::new(),
            seen: None,
            reply_discarded: false,
            follow_up: None,
            follow_up_request: None,
        });
        self.deliveries.push(delivery);
        self.trace.lines[line].parts.push(Part::Request(id));
        let at = send_ms.saturating_add(delivery.delay_ms);
        self.enqueue(
            at,
            Event::Deliver {
                request: id,
                duplicate: false,
            },
        );
        id
    }

    // ----- actions -----

    /// Publishes `count` events at the start of a run, without timeline lines.
    pub fn publish_initial(&mut self, count: u32) {
        for _ in 0..count {
            self.backend.publish();
            self.oracle.published();
        }
    }

    /// Publishes one event now, as a line of its own.
    pub fn publish(&mut self) -> Seq {
        let seq = self.backend.publish();
        self.oracle.published();
        self.line(None, LineKind::Published { seq });
        seq
    }

    /// `worker` fetches up to `limit` leases of `group` now (synchronously: the fetch's own
    /// network is not simulated, but `fault` may make it fail — `Unavailable`, `Failed`: nothing
    /// issued — or lose its reply — `LostReply`, `Dropped`: leases issued, nobody holds them).
    /// Leases are named from `names` in order, then `L<n>` by issuance. An empty fetch records a
    /// line only when `record_empty`.
    pub fn fetch(
        &mut self,
        worker: WorkerIx,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
        names: &[String],
        fault: Fault,
    ) -> Result<Vec<Issuance>, SettleError> {
        self.fetch_with(worker, group, limit, lease_ms, names, fault, true)
    }

    /// [`Engine::fetch`], recording an empty fetch as a line only when `record_empty` (a
    /// seeded driver's idle polls stay off the timeline).
    #[allow(clippy::too_many_arguments)]
    pub fn fetch_with(
        &mut self,
        worker: WorkerIx,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
        names: &[String],
        fault: Fault,
        record_empty: bool,
    ) -> Result<Vec<Issuance>, SettleError> {
        let now_ms = self.now_ms;
        if self.setup.expiry == Expiry::OnFetch
            && !matches!(fault, Fault::Unavailable | Fault::Failed)
        {
            // The broker expires due leases as it fetches; doing it here shows them.
            self.expire_at(now_ms);
        }
        let result = match fault {
            Fault::Unavailable => Err(SettleError::BackendUnavailable),
            Fault::Failed => Err(SettleError::Failed("injected".into())),
            _ => {
                let name = &self.setup.workers[worker];
                self.backend.fetch_as(name, group, limit, now_ms, lease_ms)
            }
        };
        let leases = match result {
            Ok(leases) => leases,
            Err(error) => {
                let kind = LineKind::Fetched {
                    group,
                    result: FetchResult::Failed(error.clone()),
                };
                self.line(Some(worker), kind);
                return Err(error);
            }
        };
        if leases.is_empty() && !record_empty {
            return Ok(Vec::new());
        }
        let reply_lost = matches!(fault, Fault::LostReply | Fault::Dropped);
        let duration_ms = lease_ms.unwrap_or(self.setup.lease_ms);
        let mut issued = Vec::new();
        for (index, lease) in leases.into_iter().enumerate() {
            let issuance = self.oracle.fetched(&lease, now_ms, duration_ms);
            debug_assert_eq!(issuance.0 as usize, self.trace.leases.len());
            let name = names
                .get(index)
                .cloned()
                .unwrap_or_else(|| issuance.to_string());
            self.trace.leases.push(LeaseInfo {
                name,
                issuance,
                lease,
                holder: worker,
                holder_incarnation: self.workers[worker].incarnation,
                delivered: !reply_lost,
                fetched_ms: now_ms,
                ended: None,
            });
            if !reply_lost {
                self.workers[worker].held.push(issuance);
            }
            issued.push(issuance);
        }
        let result = FetchResult::Leased {
            leases: issued.clone(),
            reply_lost,
        };
        self.line(Some(worker), LineKind::Fetched { group, result });
        if reply_lost {
            return Err(SettleError::Ambiguous("reply lost".into()));
        }
        Ok(issued)
    }

    /// `worker` runs its handler on `issuance` under the consumer runtime: the ack policy, the
    /// handle calls and the outcome decide the settles ([`runtime::decide`]), sent with
    /// `delivery` in order. The handler finishes `run.handler_ms` later (call
    /// [`Engine::run_until`]); a crash first kills it. Returns the line index.
    pub fn handle(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        run: HandlerRun,
        delivery: Delivery,
    ) -> usize {
        let line = self.line(Some(worker), LineKind::Handle { issuance });
        let lease = self.trace.lease(issuance).lease;
        let actions = runtime::decide(self.setup.ack_policy, &run.calls, &run.outcome);
        let mut after = Vec::new();
        for action in actions.iter().filter(|a| a.when == When::Before) {
            self.send_on(line, worker, issuance, None, action.op, delivery, true);
        }
        let started_current = self
            .oracle
            .handler_started(issuance, lease.group, lease.seq);
        self.handler_calls.push(HandlerCall {
            worker,
            issuance,
            group: lease.group,
            seq: lease.seq,
            attempt: lease.attempt,
        });
        for action in &actions {
            match action.when {
                When::Before => {}
                When::During(_) => {
                    self.send_on(line, worker, issuance, None, action.op, delivery, true);
                }
                When::After => after.push(action.op),
            }
        }
        let done = Event::HandlerDone {
            worker,
            incarnation: self.workers[worker].incarnation,
            issuance,
            group: lease.group,
            seq: lease.seq,
            started_current,
            success: run.outcome.is_success(),
            outcome: describe_outcome(&run.outcome),
            after,
            line,
            delivery,
        };
        let at = self.now_ms.saturating_add(run.handler_ms);
        self.enqueue(at, done);
        line
    }

    /// `worker` crashes: it forgets its leases and its running handler; its requests in flight
    /// stay in flight.
    pub fn crash(&mut self, worker: WorkerIx) {
        let held = std::mem::take(&mut self.workers[worker].held);
        let w = &mut self.workers[worker];
        w.up = false;
        w.incarnation += 1;
        w.paused_until_ms = 0;
        self.line(Some(worker), LineKind::Crashed { held });
    }

    /// `worker` restarts (empty-handed).
    pub fn restart(&mut self, worker: WorkerIx) {
        self.workers[worker].up = true;
        self.line(Some(worker), LineKind::Restarted);
    }

    /// Sets `worker`'s clock offset from now on (a driver models drift by moving it).
    pub fn set_clock_offset(&mut self, worker: WorkerIx, clock_offset_ms: i64) {
        self.workers[worker].clock_offset_ms = clock_offset_ms;
    }

    /// `worker` stalls for `for_ms` (a GC pause): replies and handler completions wait.
    pub fn pause(&mut self, worker: WorkerIx, for_ms: Ms) {
        let until_ms = self.now_ms.saturating_add(for_ms);
        self.workers[worker].paused_until_ms = until_ms;
        self.line(Some(worker), LineKind::Paused { until_ms });
    }

    /// The broker restarts: durable state survives, volatile state is lost (per variant).
    pub fn broker_restart(&mut self) {
        let groups = self.setup.groups.len();
        let before: Vec<Seq> = (0..groups).map(|g| self.backend.frontier(g)).collect();
        self.backend.restart();
        self.oracle.restarted();
        let frontier = (0..groups)
            .filter_map(|g| {
                let after = self.backend.frontier(g);
                (after != before[g]).then_some((g, before[g], after))
            })
            .collect();
        self.line(None, LineKind::BrokerRestarted { frontier });
    }

    /// Ends a step: the oracle reads the broker (I3, I4) and new violations are recorded with
    /// the current line and step.
    pub fn end_step(&mut self) {
        self.oracle.end_step(&self.backend);
        self.collect_violations();
    }

    fn collect_violations(&mut self) {
        let known = self.trace.violations.len();
        let line = self.trace.lines.len().checked_sub(1);
        for violation in self.oracle.violations().iter().skip(known) {
            self.trace.violations.push(Found {
                violation: violation.clone(),
                line,
                step: self.step,
            });
        }
    }

    /// The liveness phase: faults heal (crashed workers restart, requests travel instantly),
    /// then the up workers, in order, fetch one lease at a time from each group and run
    /// `handler(group, seq, attempt)` on it, until every event is settled or the queue is
    /// quiescent, `liveness_ms_max` has passed, or [`DRAIN_HANDLER_RUNS_MAX`] handler runs
    /// happened. Then I6 is checked.
    pub fn drain(
        &mut self,
        liveness_ms_max: Ms,
        handler: &dyn Fn(GroupIx, Seq, u32) -> HandlerRun,
    ) -> DrainReport {
        self.line(None, LineKind::DrainStarted);
        for worker in 0..self.workers.len() {
            if !self.workers[worker].up {
                self.restart(worker);
            }
        }
        let deadline_ms = self.now_ms.saturating_add(liveness_ms_max);
        let tick_ms = self.setup.lease_ms.max(1);
        let mut idle_ticks = 0u32;
        let mut handler_runs = 0u64;
        let why = loop {
            self.run_until(self.now_ms);
            if self.all_settled() {
                break "every event settled".to_string();
            }
            if handler_runs >= DRAIN_HANDLER_RUNS_MAX {
                break format!("drain_handler_runs_max = {DRAIN_HANDLER_RUNS_MAX} reached");
            }
            let ran = self.drain_round(handler);
            handler_runs += ran;
            let progressed = ran > 0;
            if progressed {
                idle_ticks = 0;
                continue;
            }
            let next = [self.next_event_ms(), self.backend.next_deadline()]
                .into_iter()
                .flatten()
                .min();
            let target = match next {
                Some(at) => at.max(self.now_ms),
                None => {
                    idle_ticks += 1;
                    if idle_ticks > 2 {
                        break format!("quiescent at {} ms", self.now_ms);
                    }
                    self.now_ms.saturating_add(tick_ms)
                }
            };
            if target > deadline_ms {
                self.run_until(deadline_ms);
                break format!("liveness_ms_max = {liveness_ms_max} ms reached");
            }
            self.run_until(target);
        };
        self.end_drain(why)
    }

    /// One round of the liveness phase: each worker that is not stalled fetches one lease from
    /// each group and runs the handler on it. Returns the number of handler runs.
    fn drain_round(&mut self, handler: &dyn Fn(GroupIx, Seq, u32) -> HandlerRun) -> u64 {
        let mut runs = 0;
        for worker in 0..self.workers.len() {
            if self.workers[worker].paused_until_ms > self.now_ms {
                continue;
            }
            for group in 0..self.setup.groups.len() {
                let got = self.fetch_with(worker, group, 1, None, &[], Fault::None, false);
                let Ok(leases) = got else { continue };
                for issuance in leases {
                    let lease = self.trace.lease(issuance).lease;
                    let run = handler(group, lease.seq, lease.attempt);
                    self.handle(worker, issuance, run, Delivery::INSTANT);
                    self.run_until(self.now_ms);
                    self.end_step();
                    runs += 1;
                }
            }
        }
        runs
    }

    /// Closes the liveness phase: a line, the last step, and the I6 check.
    fn end_drain(&mut self, why: String) -> DrainReport {
        let settled = self.all_settled();
        let frontier = (0..self.setup.groups.len())
            .map(|g| self.backend.frontier(g))
            .collect();
        self.line(
            None,
            LineKind::DrainEnded {
                settled,
                why: why.clone(),
                frontier,
            },
        );
        self.oracle.end_step(&self.backend);
        let context = format!("after the liveness phase ({why})");
        self.oracle
            .check_eventually_settled(&self.backend, &context);
        self.collect_violations();
        DrainReport { settled, why }
    }

    /// Whether every event of every group is acked or dead-lettered.
    pub fn all_settled(&self) -> bool {
        (0..self.setup.groups.len()).all(|group| {
            (1..=self.backend.event_count()).all(|seq| {
                matches!(
                    self.backend.status_kind(group, seq),
                    Status::Acked | Status::DeadLettered
                )
            })
        })
    }
}

/// How a handler's outcome reads in a timeline.
pub fn describe_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok => "returns".to_string(),
        Outcome::Ack => "raises AckMessage".to_string(),
        Outcome::Error { kind, text } if text.is_empty() => format!("raises {kind}"),
        Outcome::Error { kind, text } => format!("raises {kind} ({text})"),
        Outcome::Nack(text) if text.is_empty() => "raises NackMessage".to_string(),
        Outcome::Nack(text) => format!("raises NackMessage ({text})"),
        Outcome::Reject(text) if text.is_empty() => "raises RejectMessage".to_string(),
        Outcome::Reject(text) => format!("raises RejectMessage ({text})"),
    }
}
