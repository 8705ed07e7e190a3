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
//! The oracle's notes of leases (what a violation names as its cause) follow the same table:
//! a lease the engine lets go of is forgotten ([`Oracle::forget`]), unless the driver may name
//! any lease ([`Engine::names_any_lease`]: a scripted scenario).
//! The story of the run is the recorder's business, and only when one is attached.
//!
//! # Time and the event queue
//! Time is virtual milliseconds owned by the engine. Messages in flight and handler runs sit in
//! an event queue ordered by `(time_ms, insertion sequence)`; nothing reads a clock. The driver
//! moves time with [`Engine::run_until`], which processes, in order, every broker expiry
//! (`Backend::next_deadline`) and every queued event due at or before the target time. An
//! expiry due at the same time as an event runs first: a lease is valid while
//! `now < deadline` — except a request sent with [`Delivery::before_timer`], which lands before
//! the broker's timers of its millisecond (a settle at exactly the deadline meets a lease the
//! broker has not expired yet; [`Engine::run_before`] lets a driver send one at that instant). With [`Expiry::OnFetch`] the broker expires leases only when it next
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
//! delay, a [`Fault`](crate::seeded::Fault) (lost reply → applied but the worker sees `Ambiguous`; dropped → not
//! applied, `Ambiguous`; unavailable → not applied, `BackendUnavailable`; failed → not applied,
//! `Failed`) and an optional duplicate. On delivery the engine calls `Backend::settle` and
//! reports the broker's **true** answer to the oracle ([`Oracle::settled`]), whatever the worker
//! later sees. On the reply the worker runs the consumer runtime: a failed settle is classified
//! by [`leasehold_model::runtime::classify`] — `Drop`, `LeaveToExpire`, or `Nack` (sent once).
//!
//! # The handler
//! [`Engine::handle`] runs the consumer runtime on a held lease: [`leasehold_model::runtime::decide`] turns the
//! ack policy, the handler's handle calls and its outcome into settles, sent in order (before
//! the handler for `ack_first`, during it for handle calls, after it otherwise). The handler
//! takes `handler_ms`; a crash before it finishes kills it. A handler that completes writes its
//! event to the simulated [`World`] (duplicates and ghost writes are counted there).
//!
//! # Checking
//! The driver calls [`Engine::end_step`] after each step; the oracle then checks what the step
//! touched ([`Oracle::end_step`]). A step that made no call changing the broker (no publish,
//! fetch, settle, expiry or restart) has nothing new to read and ends at once
//! ([`Oracle::end_quiet_step`]); test builds check such a step in full anyway. A broker
//! restart may change records the step did not name: a small broker (at most
//! [`RESTART_AUDIT_RECORDS_MAX`] records) is audited in full at that step, a large one in
//! slices of [`ROLLING_AUDIT_SLICE`] records per step until every record was read again.
//! [`Engine::audit`] reads every record: drivers run it at the end of each phase.
//! [`Engine::drain`] is the liveness phase: faults heal, the workers run until every
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

mod actions;
mod checks;
mod drain;
pub mod live;
pub mod queue;
mod setup;
mod time;
mod wire;

pub use drain::DrainReport;
pub use setup::{Delivery, Expiry, HandlerRun, Setup, Worker};

use crate::coverage::{Hits, Probe};
use crate::event::Event;
use crate::hash::TraceHasher;
use crate::recorder::Recorder;
use crate::trace::{Trace, WorkerIx};
use crate::world::World;
use leasehold_model::{Backend, Expired, Issuance, Lease, Ms, Oracle, OracleConfig, Seq, Status};
use live::{Flight, LiveLease, LiveLeases, Run, Slab};
use queue::Queue;
use smallvec::SmallVec;

/// A broker with at most this many records is audited in full at the step it restarts. The
/// break-even of the two ways: under the default fault mix a broker restarts about every 75
/// steps, and a rolling audit reads 16 records per step, some 1,200 records between restarts;
/// a larger broker read in full at each restart would cost more per step than the rolling audit.
pub const RESTART_AUDIT_RECORDS_MAX: u64 = 1_024;

/// Records a larger broker's rolling audit reads per step after a restart.
pub const ROLLING_AUDIT_SLICE: u32 = 16;

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
    /// The engine called the broker to change it (publish, fetch, settle, expire, restart)
    /// since the last [`Engine::end_step`]: the step's checks have something to read.
    backend_changed: bool,
    /// The broker's earliest lease deadline as last read ([`Engine::next_deadline`]), while
    /// `deadline_known`: no call that may change the broker's timers was made since.
    deadline_ms: Option<Ms>,
    deadline_known: bool,
    rolling_audit: RollingAudit,
    /// The time the oracle was last advanced to (advancing again to it changes nothing).
    advanced_ms: Option<Ms>,
    /// Follow-up nacks the runtime sends travel this way.
    pub follow_up_delivery: Delivery,
    /// Reused buffer: the frontiers before an expiry.
    frontier_scratch: Vec<Seq>,
    /// Reused buffer: the leases of a fetch.
    fetch_scratch: Vec<Lease>,
    /// Reused buffer: the leases an expiry ended.
    expired_scratch: Vec<Expired>,
    /// The driver may name any lease it was handed ([`Engine::names_any_lease`]).
    names_any_lease: bool,
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
            backend_changed: true,
            deadline_ms: None,
            deadline_known: false,
            rolling_audit: RollingAudit::default(),
            advanced_ms: None,
            follow_up_delivery: Delivery::INSTANT,
            frontier_scratch: Vec::new(),
            fetch_scratch: Vec::new(),
            expired_scratch: Vec::new(),
            names_any_lease: false,
            setup,
        }
    }

    /// The driver may name any lease it was handed, at any time (a scripted scenario names
    /// the leases it bound): the oracle keeps its note of every lease, and the recorder tells
    /// where every lease's life is told, for the violations that name them. A seeded driver
    /// names only the leases its workers hold: both let go of the others.
    pub fn names_any_lease(&mut self) {
        self.names_any_lease = true;
        if let Some(recorder) = &mut self.recorder {
            recorder.names_any_lease();
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

    /// The broker's earliest lease deadline ([`Backend::next_deadline`]). It is read from the
    /// broker again only after a call that may have changed its timers (a publish, fetch,
    /// settle, expiry or restart); a step reads it several times.
    #[inline]
    pub fn next_deadline(&mut self) -> Option<Ms> {
        if !self.deadline_known {
            self.deadline_ms = self.backend.next_deadline();
            self.deadline_known = true;
        } else if cfg!(debug_assertions) {
            // Test builds check the argument on every read: the broker says the same.
            assert_eq!(
                self.deadline_ms,
                self.backend.next_deadline(),
                "the broker's timers changed without a call that may change them"
            );
        }
        self.deadline_ms
    }

    /// The engine called the broker to change it: the step's checks have something to read,
    /// and its timers may have changed.
    #[inline]
    fn changed_backend(&mut self) {
        self.backend_changed = true;
        self.deadline_known = false;
    }

    /// The oracle (violations, duplicate runs, delivery counts).
    pub fn oracle(&self) -> &Oracle {
        &self.oracle
    }

    /// The recorder, when one is attached.
    pub fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_deref()
    }

    /// The recorder, when one is attached, to change.
    pub fn recorder_mut(&mut self) -> Option<&mut Recorder> {
        self.recorder.as_deref_mut()
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

    /// Lets time pass to `now_ms` for the oracle (its leases expire by contract); once per
    /// time point.
    #[inline]
    fn advance_oracle(&mut self, now_ms: Ms) {
        if self.advanced_ms != Some(now_ms) {
            if self.setup.tell_lapses && self.recorder.is_some() {
                self.tell_lapses_until(now_ms);
            }
            self.oracle.advance(now_ms);
            self.advanced_ms = Some(now_ms);
        }
    }

    /// Tells the recorder, in deadline order and at their deadlines, the leases whose deadline
    /// time reaches at `now_ms` while the broker still holds their record leased
    /// ([`Setup::tell_lapses`]). These lines are the story's only: a lapse follows from the
    /// deadlines and expiries the trace hash covers, so it is not hashed, and a run without a
    /// recorder does not look for them.
    #[cold]
    #[inline(never)]
    fn tell_lapses_until(&mut self, now_ms: Ms) {
        let mut due: SmallVec<[(Ms, Issuance); 4]> = self
            .oracle
            .live_deadlines()
            .filter(|&(_, deadline_ms)| deadline_ms <= now_ms)
            .map(|(issuance, deadline_ms)| (deadline_ms, issuance))
            .collect();
        due.sort_unstable();
        for (deadline_ms, issuance) in due {
            let Some(lease) = self.leases.get(issuance).map(|l| l.lease) else {
                continue;
            };
            if self.backend.status_kind(lease.group, lease.seq) != Status::Leased {
                continue;
            }
            if let Some(recorder) = &mut self.recorder {
                recorder.record_owned(deadline_ms, Event::Lapsed { issuance });
            }
        }
    }

    /// Emits `event`, which happened at `at_ms`: into the trace hash, and to the recorder.
    #[inline(always)]
    fn emit(&mut self, at_ms: Ms, event: Event) {
        // Inlined into each site, the hashing and the check below fold to the site's variant:
        // an event that owns nothing on the heap is not dropped through the enum's drop glue.
        // Only the recorder takes the event whole (moved in): without one, nothing takes its
        // address, and its fields stay in registers to be hashed.
        event.hash_into(at_ms, &mut self.hasher);
        match &mut self.recorder {
            Some(recorder) => recorder.record_owned(at_ms, event),
            None if event.may_own_heap() => drop(event),
            None => std::mem::forget(event),
        }
    }

    /// Records published at time 0 and since (every group's).
    pub fn record_count(&self) -> u64 {
        u64::from(self.backend.event_count()) * self.setup.groups.len() as u64
    }

    /// The engine's record of lease `issuance`, which one more thing names from now on (a
    /// request or a handler run). A lease nothing named any more has left the live table; an
    /// engine with a recorder brings it back from the recording (so a scenario may name any
    /// lease it bound, at any time).
    ///
    /// # Panics
    /// When the lease left the table and there is no recorder: a driver without a recorder
    /// names only leases its workers hold (or that it pinned).
    #[inline]
    fn tracked_and_retained(&mut self, issuance: Issuance) -> LiveLease {
        if let Some(lease) = self.leases.get_mut(issuance) {
            lease.refs += 1;
            return *lease;
        }
        self.tracked_from_recording(issuance)
    }

    /// [`Engine::tracked_and_retained`] for a lease that left the live table: back in it,
    /// named once.
    #[cold]
    #[inline(never)]
    fn tracked_from_recording(&mut self, issuance: Issuance) -> LiveLease {
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
            refs: 1,
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
