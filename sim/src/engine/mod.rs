//! The deterministic executor: a broker under test and N workers on virtual time.
//!
//! The engine is an interpreter of the protocol's effects. A *driver* — the scenario runner
//! ([`crate::script`]) or the seeded simulator ([`crate::seeded::run`]) — tells it what the
//! actors do; the engine does it, feeds the [`Oracle`] the truth, and emits every happening as
//! an [`Event`]: into the trace hash always, into a [`Recorder`] when one is attached.
//!
//! # Live state only
//! The engine keeps what a future step can observe — the workers, the leases something still
//! names ([`live::LiveLeases`]), the requests in flight and the handler runs in progress (slabs
//! whose slots are freed when their last queued event has run) — and nothing of the past: a
//! step costs what it changes, and memory follows the live set, whatever the run's length.
//! The story of the run is the recorder's business, and only when one is attached.
//!
//! # Time and the event queue
//! Time is virtual milliseconds owned by the engine. Messages in flight and handler runs sit in
//! an event queue ordered by `(time_ms, insertion sequence)`; nothing reads a clock. The driver
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
//! takes `handler_ms`; a crash before it finishes kills it. A handler that completes writes its
//! event to the simulated [`World`] (duplicates and ghost writes are counted there).
//!
//! # Checking
//! The driver calls [`Engine::end_step`] after each step; the oracle then checks what the step
//! touched ([`Oracle::end_step`]). A broker restart may change records the step did not name:
//! a small broker (at most [`RESTART_AUDIT_RECORDS_MAX`] records) is audited in full at that
//! step, a large one in slices of [`ROLLING_AUDIT_SLICE`] records per step until every record
//! was read again. [`Engine::audit`] reads every record: drivers run it at the end of each
//! phase. [`Engine::drain`] is the liveness phase: faults heal, the workers run until every
//! event is settled (I6 holds), nothing is left to happen (I6 is violated), or a named bound is
//! hit (the run is inconclusive).
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

mod drain;
pub mod live;
pub mod queue;
mod wire;

pub use drain::DrainReport;

use crate::coverage::{Hits, Probe};
use crate::event::{Event, FetchOutcome, Origin, RunId};
use crate::hash::TraceHasher;
use crate::recorder::Recorder;
use crate::trace::{Fault, Trace, WorkerIx};
use crate::world::World;
use leasehold_model::runtime::{self, When};
use leasehold_model::{
    AckPolicy, Backend, BrokerConfig, GroupIx, HandleCall, Issuance, Lease, Ms, Oracle,
    OracleConfig, Outcome, Seq, SettleError, Variant,
};
use live::{Flight, LiveLease, LiveLeases, Run, SendFrom, Slab};
use queue::{Due, Queue};
use smallvec::SmallVec;

/// A broker with at most this many records is audited in full at the step it restarts.
pub const RESTART_AUDIT_RECORDS_MAX: u64 = 4_096;

/// Records a larger broker's rolling audit reads per step after a restart.
pub const ROLLING_AUDIT_SLICE: u32 = 16;

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
    /// The oracle audits every record after every step (tests: checks the incremental checks
    /// against the full ones).
    pub audit_every_step: bool,
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
            audit_every_step: false,
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
    /// Handler runs of this incarnation in progress.
    pub running: u32,
}

/// Where a rolling audit after a broker restart stands.
#[derive(Clone, Copy, Debug, Default)]
struct RollingAudit {
    group: usize,
    next_seq: Seq,
    /// Records still to read before every record was read since the last restart.
    remaining: u64,
}

/// Leases of a fetch, in issuance order.
pub type Issued = SmallVec<[Issuance; 2]>;

/// The executor: one backend, the workers, the event queue, the oracle, the trace hash and an
/// optional recorder.
pub struct Engine<B: Backend> {
    backend: B,
    setup: Setup,
    oracle: Oracle,
    now_ms: Ms,
    queue: Queue,
    workers: Vec<Worker>,
    leases: LiveLeases,
    flights: Slab<Flight>,
    runs: Slab<Run>,
    requests_sent: u32,
    runs_started: u32,
    hasher: TraceHasher,
    recorder: Option<Box<Recorder>>,
    hits: Hits,
    world: World,
    /// Records returned to the available pool by an expiry or a nack, waiting to be
    /// redelivered (for the coverage probes), in (group, seq) order.
    returned: SmallVec<[(u32, Seq, Probe); 4]>,
    violations_seen: usize,
    rolling_audit: RollingAudit,
    /// Follow-up nacks the runtime sends travel this way.
    pub follow_up_delivery: Delivery,
    /// Reused buffer: the frontiers before an expiry.
    frontier_scratch: Vec<Seq>,
}

impl<B: Backend> Engine<B> {
    /// An engine at time 0 driving `backend` (which must have no events yet), with a recorder:
    /// [`Engine::trace`] tells the whole run.
    pub fn new(backend: B, setup: Setup) -> Engine<B> {
        Engine::build(backend, setup, true)
    }

    /// An engine without a recorder: the run keeps its trace hash only (campaign seeds).
    pub fn without_trace(backend: B, setup: Setup) -> Engine<B> {
        Engine::build(backend, setup, false)
    }

    fn build(backend: B, setup: Setup, record: bool) -> Engine<B> {
        let mut config = OracleConfig::new(
            setup.groups.len(),
            setup.max_attempts,
            setup.check_at_least_once,
        );
        config.audit_every_step = setup.audit_every_step;
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
                running: 0,
            })
            .collect();
        let recorder = record.then(|| Box::new(Recorder::new(&setup.workers, &setup.groups)));
        Engine {
            backend,
            oracle: Oracle::new(config),
            now_ms: 0,
            queue: Queue::default(),
            workers,
            leases: LiveLeases::default(),
            flights: Slab::default(),
            runs: Slab::default(),
            requests_sent: 0,
            runs_started: 0,
            hasher: TraceHasher::new(),
            recorder,
            hits: Hits::default(),
            world: World::new(setup.groups.len()),
            returned: SmallVec::new(),
            violations_seen: 0,
            rolling_audit: RollingAudit::default(),
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

    /// The recorder, when one is attached.
    pub fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_deref()
    }

    /// The trace so far.
    ///
    /// # Panics
    /// On an engine built [`Engine::without_trace`]: asking it for a story it did not keep is
    /// a bug in the driver.
    pub fn trace(&self) -> &Trace {
        self.recorder
            .as_ref()
            .expect("the engine was built without a recorder")
            .trace()
    }

    /// The trace hash of the run so far: a rolling hash of every event's binary encoding.
    pub fn trace_hash(&self) -> u64 {
        self.hasher.finish()
    }

    /// The coverage probes' counts so far.
    pub fn hits(&self) -> &Hits {
        &self.hits
    }

    /// Counts one occurrence of a probe the driver observed.
    pub fn hit(&mut self, probe: Probe) {
        self.hits.hit(probe);
    }

    /// The simulated world the handlers write to.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The workers.
    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// The holder's copy of lease `issuance`, while the engine tracks it (something names it,
    /// or the broker may still expire it).
    pub fn lease(&self, issuance: Issuance) -> Option<&Lease> {
        self.leases.get(issuance).map(|l| &l.lease)
    }

    /// Leases the engine tracks (the live set).
    pub fn live_lease_count(&self) -> usize {
        self.leases.len()
    }

    /// Requests in flight and handler runs in progress.
    pub fn in_flight_count(&self) -> usize {
        self.flights.len() + self.runs.len()
    }

    /// Keeps lease `issuance` nameable for the rest of the run (a scenario binds leases by
    /// name and may send a request naming one long after it ended).
    pub fn pin(&mut self, issuance: Issuance) {
        self.leases.retain(issuance);
    }

    /// Ends the run: the trace (empty without a recorder) and the final trace hash.
    pub fn into_trace(self) -> Trace {
        let end_ms = self.now_ms;
        self.recorder
            .map(|r| r.finish(end_ms).0)
            .unwrap_or_default()
    }

    /// Ends the run: the recorder (if any), with the trace's end time set.
    pub fn into_recorder(self) -> Option<Recorder> {
        self.recorder.map(|r| *r)
    }

    /// Sets the driver's step index recorded with the following lines and violations.
    pub fn set_step(&mut self, step: Option<usize>) {
        if let Some(recorder) = &mut self.recorder {
            recorder.set_step(step);
        }
    }

    /// The time of the next queued event, if any.
    pub fn next_event_ms(&self) -> Option<Ms> {
        self.queue.next_ms()
    }

    /// Whether nothing is in flight (no queued message, reply or running handler).
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Emits `event`, which happened at `at_ms`: into the trace hash, and to the recorder.
    #[inline]
    fn emit(&mut self, at_ms: Ms, event: Event) {
        event.hash_into(at_ms, &mut self.hasher);
        if let Some(recorder) = &mut self.recorder {
            recorder.record(at_ms, &event);
        }
    }

    /// Records published at time 0 and since (every group's).
    pub fn record_count(&self) -> u64 {
        u64::from(self.backend.event_count()) * self.setup.groups.len() as u64
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
                    let (at_ms, due) = self.queue.pop().expect("peeked");
                    self.now_ms = self.now_ms.max(at_ms);
                    self.oracle.advance(self.now_ms);
                    self.process(due);
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
        if self.backend.next_deadline().is_none_or(|d| d > now_ms) {
            // Nothing is due: the broker would expire nothing.
            self.oracle.advance(now_ms);
            return false;
        }
        let mut before = std::mem::take(&mut self.frontier_scratch);
        before.clear();
        before.extend((0..self.setup.groups.len()).map(|g| self.backend.frontier(g)));
        let expired = self.backend.expire_due(now_ms);
        self.oracle.advance(now_ms);
        for item in &expired {
            self.oracle.observe(item.group, item.seq);
        }
        for item in &expired {
            if item.dead_lettered {
                self.hits.hit(Probe::DeadLetterByAttempts);
            } else {
                self.mark_returned(item.group, item.seq, Probe::RedeliveryAfterExpiry);
            }
            let found = self
                .leases
                .find_unended(item.group, item.seq, item.lease_id);
            let Some(issuance) = found else { continue };
            self.leases.end_as(issuance, live::End::Expired);
            for worker in 0..self.workers.len() {
                self.forget(worker, issuance);
            }
            let after = self.backend.frontier(item.group);
            let frontier = (after != before[item.group]).then_some((before[item.group], after));
            let at = item.deadline_ms.min(now_ms);
            self.emit(
                at,
                Event::Expired {
                    issuance,
                    at_ms: at,
                    dead_lettered: item.dead_lettered,
                    frontier,
                },
            );
        }
        self.frontier_scratch = before;
        !expired.is_empty()
    }

    fn process(&mut self, due: Due) {
        match due {
            Due::Deliver { slot, duplicate } => self.deliver(slot, duplicate),
            Due::Reply { slot } => self.reply(slot),
            Due::HandlerDone { slot } => self.handler_done(slot),
        }
    }

    fn handler_done(&mut self, slot: u32) {
        let (worker, incarnation) = {
            let run = self.runs.get(slot);
            (run.worker, run.incarnation)
        };
        let w = &self.workers[worker];
        let alive = w.up && w.incarnation == incarnation;
        if alive && w.paused_until_ms > self.now_ms {
            // A handler that finishes while its worker is paused finishes when the pause ends.
            let at = w.paused_until_ms;
            self.queue.push(at, Due::HandlerDone { slot });
            return;
        }
        let run = self.runs.remove(slot);
        if alive {
            self.workers[worker].running -= 1;
        }
        if !alive {
            self.hits.hit(Probe::HandlerKilledByCrash);
            self.emit(self.now_ms, Event::HandlerKilled { run: run.id });
            self.leases.release(run.issuance);
            return;
        }
        let success = run.outcome.is_success();
        self.oracle
            .handler_finished(run.group, run.seq, run.started_current, success);
        if success {
            let current = self.oracle.is_current(run.issuance);
            if !current {
                self.hits.hit(Probe::GhostWrite);
            }
            self.world.write(run.group, run.seq, current);
        }
        let event = Event::HandlerFinished {
            run: run.id,
            outcome: run.outcome.clone(),
        };
        self.emit(self.now_ms, event);
        let from = SendFrom {
            origin: Origin::Handler(run.id),
            nack_on_failure: true,
        };
        for &op in &run.after {
            self.send_on(worker, run.issuance, None, op, run.delivery, from);
        }
        self.leases.release(run.issuance);
    }

    /// The record (group, seq) went back to the available pool: its next delivery counts for
    /// `probe`.
    fn mark_returned(&mut self, group: GroupIx, seq: Seq, probe: Probe) {
        let key = (group as u32, seq);
        match self
            .returned
            .binary_search_by_key(&key, |&(g, s, _)| (g, s))
        {
            Ok(i) => self.returned[i].2 = probe,
            Err(i) => self.returned.insert(i, (key.0, key.1, probe)),
        }
    }

    /// A lease of (group, seq) was issued: a redelivery after an expiry or a nack counts.
    fn note_delivery(&mut self, group: GroupIx, seq: Seq) {
        if self.returned.is_empty() {
            return;
        }
        let key = (group as u32, seq);
        if let Ok(i) = self
            .returned
            .binary_search_by_key(&key, |&(g, s, _)| (g, s))
        {
            let probe = self.returned.remove(i).2;
            self.hits.hit(probe);
        }
    }

    // ----- actions -----

    /// Publishes `count` events at the start of a run, without timeline lines.
    pub fn publish_initial(&mut self, count: u32) {
        for _ in 0..count {
            self.backend.publish();
            self.oracle.published();
        }
        self.world.publish(self.backend.event_count());
    }

    /// Publishes one event now, as a line of its own.
    pub fn publish(&mut self) -> Seq {
        let seq = self.backend.publish();
        self.oracle.published();
        self.world.publish(seq);
        self.emit(self.now_ms, Event::Published { seq });
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
    ) -> Result<Issued, SettleError> {
        self.fetch_with(worker, group, limit, lease_ms, names, fault, true)
    }

    /// [`Engine::fetch`], recording an empty fetch only when `record_empty` (a seeded driver's
    /// idle polls stay off the timeline).
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
    ) -> Result<Issued, SettleError> {
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
            _ => self.backend.fetch(group, limit, now_ms, lease_ms),
        };
        let leases = match result {
            Ok(leases) => leases,
            Err(error) => {
                if error == SettleError::BackendUnavailable {
                    self.hits.hit(Probe::BackendUnavailable);
                }
                let outcome = FetchOutcome::Failed(error.clone());
                self.emit(
                    now_ms,
                    Event::Fetched {
                        worker,
                        group,
                        outcome,
                    },
                );
                return Err(error);
            }
        };
        if leases.is_empty() && !record_empty {
            return Ok(Issued::new());
        }
        let reply_lost = matches!(fault, Fault::LostReply | Fault::Dropped);
        let duration_ms = lease_ms.unwrap_or(self.setup.lease_ms);
        let mut issued = Issued::new();
        let count = leases.len() as u32;
        for (index, lease) in leases.into_iter().enumerate() {
            let issuance = self.issue(worker, lease, duration_ms, !reply_lost);
            if let (Some(recorder), Some(name)) = (&mut self.recorder, names.get(index)) {
                recorder.name_lease(issuance, name.clone());
            }
            issued.push(issuance);
        }
        let outcome = FetchOutcome::Leased { count, reply_lost };
        self.emit(
            now_ms,
            Event::Fetched {
                worker,
                group,
                outcome,
            },
        );
        if reply_lost {
            self.hits.hit(Probe::FetchReplyLost);
            return Err(SettleError::Ambiguous("reply lost".into()));
        }
        Ok(issued)
    }

    /// One lease a fetch by `worker` issued: the oracle names it, the engine tracks it, the
    /// worker holds it when the reply reached it.
    fn issue(
        &mut self,
        worker: WorkerIx,
        lease: Lease,
        duration_ms: Ms,
        delivered: bool,
    ) -> Issuance {
        let now_ms = self.now_ms;
        let issuance = self.oracle.fetched(&lease, now_ms, duration_ms);
        self.note_delivery(lease.group, lease.seq);
        let incarnation = self.workers[worker].incarnation;
        self.leases.issue(LiveLease {
            issuance,
            lease,
            holder: worker,
            holder_incarnation: incarnation,
            first_deadline_ms: lease.deadline_ms,
            ended: None,
            refs: u32::from(delivered),
        });
        if delivered {
            self.workers[worker].held.push(issuance);
        }
        self.emit(
            now_ms,
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            },
        );
        issuance
    }

    /// `worker` runs its handler on `issuance` under the consumer runtime: the ack policy, the
    /// handle calls and the outcome decide the settles ([`runtime::decide`]), sent with
    /// `delivery` in order. The handler finishes `run.handler_ms` later (call
    /// [`Engine::run_until`]); a crash first kills it. Returns the run's id.
    ///
    /// # Panics
    /// When the engine no longer tracks `issuance` and has no recorder (see
    /// [`Engine::send`]).
    pub fn handle(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        run: HandlerRun,
        delivery: Delivery,
    ) -> RunId {
        let lease = self.tracked(issuance).lease;
        let id = RunId(self.runs_started);
        self.runs_started += 1;
        self.emit(
            self.now_ms,
            Event::HandlerStarted {
                run: id,
                worker,
                issuance,
            },
        );
        let actions = runtime::decide(self.setup.ack_policy, &run.calls, &run.outcome);
        let from = SendFrom {
            origin: Origin::Handler(id),
            nack_on_failure: true,
        };
        for action in actions.iter().filter(|a| a.when == When::Before) {
            self.send_on(worker, issuance, None, action.op, delivery, from);
        }
        let duplicates = self.oracle.duplicate_runs();
        let started_current = self
            .oracle
            .handler_started(issuance, lease.group, lease.seq);
        if self.oracle.duplicate_runs() > duplicates {
            self.hits.hit(Probe::DuplicateHandlerRun);
        }
        let mut after = SmallVec::new();
        for action in &actions {
            match action.when {
                When::Before => {}
                When::During(_) => {
                    self.send_on(worker, issuance, None, action.op, delivery, from);
                }
                When::After => after.push(action.op),
            }
        }
        let slot = self.runs.insert(Run {
            id,
            worker,
            incarnation: self.workers[worker].incarnation,
            issuance,
            group: lease.group,
            seq: lease.seq,
            started_current,
            outcome: run.outcome,
            after,
            delivery,
        });
        self.leases.retain(issuance);
        self.workers[worker].running += 1;
        let at = self.now_ms.saturating_add(run.handler_ms);
        self.queue.push(at, Due::HandlerDone { slot });
        id
    }

    /// `worker` crashes: it forgets its leases and its running handler; its requests in flight
    /// stay in flight.
    pub fn crash(&mut self, worker: WorkerIx) {
        let held = std::mem::take(&mut self.workers[worker].held);
        let w = &mut self.workers[worker];
        w.up = false;
        w.incarnation += 1;
        w.paused_until_ms = 0;
        w.running = 0;
        for &issuance in &held {
            self.leases.release(issuance);
        }
        let held = held.into_iter().collect();
        self.emit(self.now_ms, Event::Crashed { worker, held });
    }

    /// `worker` restarts (empty-handed).
    pub fn restart(&mut self, worker: WorkerIx) {
        self.workers[worker].up = true;
        self.emit(self.now_ms, Event::Restarted { worker });
    }

    /// Sets `worker`'s clock offset from now on (a driver models drift by moving it).
    pub fn set_clock_offset(&mut self, worker: WorkerIx, clock_offset_ms: i64) {
        self.workers[worker].clock_offset_ms = clock_offset_ms;
    }

    /// `worker` stalls for `for_ms` (a GC pause): replies and handler completions wait.
    pub fn pause(&mut self, worker: WorkerIx, for_ms: Ms) {
        let until_ms = self.now_ms.saturating_add(for_ms);
        self.workers[worker].paused_until_ms = until_ms;
        let past_lease = self.workers[worker]
            .held
            .iter()
            .filter_map(|&i| self.leases.get(i))
            .any(|l| l.lease.deadline_ms <= until_ms);
        if past_lease {
            self.hits.hit(Probe::PausePastLease);
        }
        self.emit(self.now_ms, Event::Paused { worker, until_ms });
    }

    /// The broker restarts: durable state survives, volatile state is lost (per variant).
    pub fn broker_restart(&mut self) {
        let groups = self.setup.groups.len();
        if self.leases.any_outstanding() {
            self.hits.hit(Probe::BrokerRestartWithLiveLeases);
        }
        let before: SmallVec<[Seq; 4]> = (0..groups).map(|g| self.backend.frontier(g)).collect();
        self.backend.restart();
        self.after_restart_audit();
        let frontier = (0..groups)
            .filter_map(|g| {
                let after = self.backend.frontier(g);
                (after != before[g]).then_some((g, before[g], after))
            })
            .collect();
        self.emit(self.now_ms, Event::BrokerRestarted { frontier });
    }

    /// A restart may have changed any record: a small broker is audited in full at the end of
    /// this step, a large one record by record over the next steps (and in full at the phase's
    /// end, as always).
    fn after_restart_audit(&mut self) {
        let records = self.record_count();
        if records <= RESTART_AUDIT_RECORDS_MAX {
            self.oracle.restarted();
        } else {
            self.rolling_audit.remaining = records;
        }
    }

    /// Ends a step: the oracle checks what the step touched (I3, I4), a rolling audit reads its
    /// next slice, and new violations are emitted.
    pub fn end_step(&mut self) {
        self.oracle.end_step(&self.backend);
        if self.rolling_audit.remaining > 0 {
            self.audit_slice();
        }
        self.collect_violations();
    }

    /// Reads the next [`ROLLING_AUDIT_SLICE`] records of the rolling audit.
    fn audit_slice(&mut self) {
        let events = self.backend.event_count();
        let groups = self.setup.groups.len();
        let mut budget = ROLLING_AUDIT_SLICE;
        let audit = &mut self.rolling_audit;
        while budget > 0 && audit.remaining > 0 && events > 0 {
            if audit.next_seq == 0 || audit.next_seq > events {
                audit.next_seq = 1;
                audit.group = (audit.group + 1) % groups;
            }
            let count = budget
                .min(events - audit.next_seq + 1)
                .min(audit.remaining.min(u64::from(u32::MAX)) as u32);
            self.oracle
                .audit_records(&self.backend, audit.group, audit.next_seq, count);
            audit.next_seq += count;
            audit.remaining -= u64::from(count);
            budget -= count;
        }
    }

    /// Reads every record and frontier and checks them against the oracle's ghost (I3, I4): the
    /// full audit drivers run at the end of each phase.
    pub fn audit(&mut self) {
        self.oracle.audit(&self.backend);
        self.rolling_audit.remaining = 0;
        self.collect_violations();
    }

    fn collect_violations(&mut self) {
        if !self.oracle.any_violated() {
            return;
        }
        let found = self.oracle.violations().len();
        if found == self.violations_seen {
            return;
        }
        for index in self.violations_seen..found {
            let violation = self.oracle.violations()[index].clone();
            self.emit(self.now_ms, Event::Violated { violation });
        }
        self.violations_seen = found;
    }

    /// Whether every event of every group is acked or dead-lettered, as the broker says.
    pub fn all_settled(&self) -> bool {
        self.backend.unsettled_count() == 0
    }

    /// Records of every group the broker shows neither acked nor dead-lettered.
    pub fn unsettled_count(&self) -> u64 {
        self.backend.unsettled_count()
    }

    /// The engine's record of lease `issuance`. A lease nothing named any more has left the
    /// live table; an engine with a recorder brings it back from the recording (so a scenario
    /// may name any lease it bound, at any time).
    ///
    /// # Panics
    /// When the lease left the table and there is no recorder: a driver without a recorder
    /// names only leases its workers hold (or that it pinned).
    fn tracked(&mut self, issuance: Issuance) -> LiveLease {
        if let Some(lease) = self.leases.get(issuance) {
            return *lease;
        }
        let info = self
            .recorder
            .as_ref()
            .and_then(|r| r.trace().leases.get(issuance.0 as usize))
            .expect("a request or handler names a lease the engine tracks");
        let lease = LiveLease {
            issuance,
            lease: info.lease,
            holder: info.holder,
            holder_incarnation: info.holder_incarnation,
            first_deadline_ms: info.lease.deadline_ms,
            ended: info.ended.as_ref().map(|(_, end)| match end {
                crate::trace::LeaseEnd::Expired { .. } => live::End::Expired,
                crate::trace::LeaseEnd::Settled { .. } => live::End::Settled,
            }),
            refs: 0,
        };
        self.leases.reinsert(lease);
        lease
    }

    /// `worker` drops lease `issuance` from its hand.
    fn forget(&mut self, worker: WorkerIx, issuance: Issuance) {
        let held = &mut self.workers[worker].held;
        let before = held.len();
        held.retain(|&h| h != issuance);
        for _ in held.len()..before {
            self.leases.release(issuance);
        }
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
