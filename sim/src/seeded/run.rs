//! One seeded run: a driver that plays N workers, the network and the fault plan on top of
//! the deterministic [`Engine`].
//!
//! The engine owns time, the broker, in-flight requests and replies, the consumer runtime, the
//! oracle and the trace hash. The driver owns the workers' decisions — when each fetches, how
//! its handler behaves, when it renews — and every fault, drawn from the seed's named
//! generators. Its own timers sit in a queue ordered by (time, insertion sequence) and
//! interleave with the engine's: the earlier goes first, the engine on a tie. The oracle's
//! `end_step` runs after each engine time point and each driver action.
//!
//! Phases: the safety phase injects faults until every event is settled or `safety_ms_max`
//! passes, and ends with a full audit; then faults heal (clocks are fixed, partitions end, the
//! driver stops) and the engine's liveness phase ([`Engine::drain`]) must settle everything.
//! A run stopped by a named bound (`steps_max`, `liveness_ms_max`, `drain_handler_runs_max`)
//! is *inconclusive*: it reports the bound, never a violation for it.

use super::prng::{Odds, Prng, Span};
use super::setup::Setup;
use crate::bound::Bound;
use crate::coverage::{Hits, Probe};
use crate::engine::{self, Delivery, Engine, HandlerRun};
use crate::recorder::{Recorder, Stamped, Streamed, TimelineSink};
use crate::timeline;
use crate::trace::{Fault as WireFault, Trace};
use leasehold_model::{
    AckPolicy, Backend, Invariant, Issuance, Ms, Outcome, Reason, SettleOp, Violation,
};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// What one seeded run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The root seed.
    pub seed: u64,
    /// The first violation of each broken invariant, in the order found.
    pub violations: Vec<Violation>,
    /// Why the run ended.
    pub end: String,
    /// The named bound that stopped the run without a verdict, if any: the run is
    /// inconclusive (its violations, if any, were found before and stand).
    pub inconclusive: Option<Bound>,
    /// Steps executed (oracle checks).
    pub steps: u64,
    /// Records (events × groups) the run published: at the start and during the run.
    pub records: u64,
    /// Simulated time at the end.
    pub sim_ms: Ms,
    /// The trace hash: a rolling hash of the binary encoding of every event of the run.
    pub trace_hash: u64,
    /// The timeline text, when the run was recorded.
    pub trace: Option<String>,
    /// The recorded trace and event log, when the run was recorded (streamed: what is left of
    /// the trace — its violations — and no event log).
    pub recorded: Option<Box<Recorded>>,
    /// What a streamed timeline ([`RunOptions::timeline`]) told besides its lines.
    pub streamed: Option<Streamed>,
    /// How often the run reached each coverage probe.
    pub hits: Hits,
    /// Handler runs beyond the first per (group, event), as the oracle counted them.
    pub duplicate_runs: u64,
    /// World writes beyond the first per (group, event).
    pub duplicate_writes: u64,
    /// World writes by a worker whose lease was no longer current.
    pub ghost_writes: u64,
    /// Events acked without a successful handler run under `ack_first` / `ack_always`: the
    /// at-most-once guarantee those policies document, not a protocol failure.
    pub at_most_once_losses: u64,
}

/// A recorded run: its line-by-line trace and its event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The trace the timelines are rendered from.
    pub trace: Trace,
    /// Every event, with its time, in the order it happened.
    pub events: Vec<Stamped>,
}

/// How to run a seed.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Attach a recorder: keep the trace, its timeline text and the event log.
    pub record: bool,
    /// Audit every record after every step (tests).
    pub audit_every_step: bool,
    /// Where the run publishes its progress (read by another thread to draw a progress bar).
    pub progress: Option<std::sync::Arc<Progress>>,
    /// With `record`: called with the trace and the broker at the end of every step.
    pub observer: Option<crate::recorder::StepObserver>,
    /// Stream the run's timeline: each line goes to this sink as soon as it is final, and the
    /// recorder keeps only what is still open (its memory follows the live set, not the run's
    /// length). Implies `record`, without the event log or the timeline text.
    pub timeline: Option<TimelineSink>,
    /// End the run after the step that found its first violation (the rest of a failing
    /// seed's story is not needed: a campaign re-runs a failing seed to show the lines before
    /// its first violation). A violation in the liveness phase is found at its end, as
    /// always.
    pub stop_at_first_violation: bool,
    /// End the run after the step that found a violation of this invariant (whatever else it
    /// broke before): a shrinker asking "does it still break I2?" needs no more of the run.
    pub stop_at_violation_of: Option<Invariant>,
    /// With `timeline`: also hand each shown line's structured record to this sink, as the
    /// line is streamed.
    pub records: Option<crate::recorder::RecordSink>,
    /// With `timeline`: also hand each shown line's `tN` and time to this sink.
    pub times: Option<crate::recorder::TimeSink>,
    /// With `timeline`: keep the whole story of this stretch of virtual time, for a drawing of
    /// it ([`Recorder::keeping`]); the timeline then goes to the sink only up to its start.
    pub keep: Option<crate::svg::View>,
    /// With `timeline`: how its lines are rendered ([`crate::timeline::Style`]).
    pub style: crate::timeline::Style,
}

/// A run's progress, published every [`PROGRESS_EVERY_STEPS`] steps (written by the run, read
/// by whoever draws it; never read back by the run).
#[derive(Debug, Default)]
pub struct Progress {
    /// Steps so far.
    pub steps: AtomicU64,
    /// Records (event × group) settled so far.
    pub settled: AtomicU64,
    /// Records in the run.
    pub records: AtomicU64,
    /// Simulated time so far.
    pub sim_ms: AtomicU64,
    /// Set when the run ended.
    pub done: AtomicU64,
}

/// [`RunOutcome::end`] of a run stopped by [`RunOptions::stop_at_first_violation`].
pub const STOPPED_AT_FIRST_VIOLATION: &str = "stopped at the first violation";

/// How often a run publishes its progress.
pub const PROGRESS_EVERY_STEPS: u64 = 1 << 14;
const _: () = assert!(PROGRESS_EVERY_STEPS.is_power_of_two());

impl Progress {
    fn publish<B: Backend>(&self, engine: &Engine<B>) {
        let records = engine.record_count();
        let settled = records.saturating_sub(engine.unsettled_count());
        self.steps
            .store(engine.oracle().step(), AtomicOrdering::Relaxed);
        self.settled.store(settled, AtomicOrdering::Relaxed);
        self.records.store(records, AtomicOrdering::Relaxed);
        self.sim_ms.store(engine.now_ms(), AtomicOrdering::Relaxed);
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Wake { worker: usize, token: u64 },
    Restart { worker: usize },
}

struct Queued {
    at_ms: Ms,
    event: Event,
}

/// The driver's timers by (time, insertion sequence): ties go in insertion order.
///
/// It holds a few entries per worker, so a vector kept sorted latest first beats a heap: the
/// earliest entry pops from the end, and an insertion moves the few later entries.
#[derive(Default)]
struct Timers {
    /// Sorted by (time, insertion sequence), latest first.
    entries: Vec<Queued>,
}

impl Timers {
    /// Schedules `event` at `at_ms`, after every entry already due then.
    #[inline]
    fn push(&mut self, at_ms: Ms, event: Event) {
        // Every queued entry was inserted earlier: a tie in time goes after them. The entries
        // due before it move up one place, from the earliest (as the engine's queue).
        let entries = &mut self.entries;
        entries.push(Queued { at_ms, event });
        let mut i = entries.len() - 1;
        while i > 0 && entries[i - 1].at_ms <= at_ms {
            entries.swap(i, i - 1);
            i -= 1;
        }
    }

    /// The time of the earliest entry.
    #[inline]
    fn next_ms(&self) -> Option<Ms> {
        self.entries.last().map(|q| q.at_ms)
    }

    /// Takes the earliest entry.
    #[inline]
    fn pop(&mut self) -> Option<Queued> {
        self.entries.pop()
    }

    fn clear(&mut self) {
        self.entries.clear();
    }
}

struct Job {
    issuance: Issuance,
    end_ms: Ms,
    next_renew_ms: Option<Ms>,
}

#[derive(Default)]
struct Worker {
    token: u64,
    crashed: bool,
    partitioned_until_ms: Ms,
    offset_ms: i64,
    drift_ppm: i64,
    next_group: usize,
    idle_polls: u32,
    job: Option<Job>,
}

/// The probabilities a run draws as it goes, prepared once ([`Odds`]).
struct Chances {
    crash: Odds,
    pause: Odds,
    delay: Odds,
    reorder: Odds,
    drop: Odds,
    duplicate: Odds,
    partition: Odds,
    unavailable: Odds,
    failed: Odds,
    lost_reply: Odds,
    broker_restart: Odds,
    slow_handler: Odds,
    handler_error: Odds,
    boundary: Odds,
    long_handler: Odds,
    outcome_ack: Odds,
    outcome_nack: Odds,
    outcome_reject: Odds,
    publish: Odds,
    /// The extra delay of a delayed message.
    delay_ms: Span,
    /// The extra delay of a reordered message.
    reorder_ms: Span,
    /// A normal handler's duration.
    handler_ms: Span,
    /// A long (renewing) handler's duration.
    long_handler_ms: Span,
    /// A slow handler's duration.
    slow_handler_ms: Span,
    /// A pause's length.
    pause_ms: Span,
}

impl Chances {
    fn of(setup: &Setup) -> Chances {
        let (f, w, d) = (&setup.faults, &setup.workload, setup.draws);
        let lease_ms = setup.lease_ms;
        Chances {
            crash: Odds::of(f.crash, d),
            pause: Odds::of(f.pause, d),
            delay: Odds::of(f.delay, d),
            reorder: Odds::of(f.reorder, d),
            drop: Odds::of(f.drop, d),
            duplicate: Odds::of(f.duplicate, d),
            partition: Odds::of(f.partition, d),
            unavailable: Odds::of(f.unavailable, d),
            failed: Odds::of(f.failed, d),
            lost_reply: Odds::of(f.lost_reply, d),
            broker_restart: Odds::of(f.broker_restart, d),
            slow_handler: Odds::of(f.slow_handler, d),
            handler_error: Odds::of(f.handler_error, d),
            boundary: Odds::of(f.boundary, d),
            long_handler: Odds::of(w.long_handler, d),
            outcome_ack: Odds::of(w.outcome_ack, d),
            outcome_nack: Odds::of(w.outcome_nack, d),
            outcome_reject: Odds::of(w.outcome_reject, d),
            publish: Odds::of(w.publish, d),
            delay_ms: Span::new(0, f.delay_ms_max, d),
            reorder_ms: Span::new(0, f.reorder_ms_max, d),
            handler_ms: Span::new(1, w.handler_ms_max.max(1), d),
            long_handler_ms: Span::new(lease_ms / 2, 3 * lease_ms, d),
            slow_handler_ms: Span::new(lease_ms, f.slow_handler_ms_max.max(lease_ms), d),
            pause_ms: Span::new(lease_ms, f.pause_ms_max.max(lease_ms), d),
        }
    }
}

struct Driver<'a, B: Backend> {
    setup: &'a Setup,
    chances: Chances,
    engine: Engine<B>,
    queue: Timers,
    workers: Vec<Worker>,
    /// Bit `seq - 1`: the event is poison.
    poison: Vec<u64>,
    network: Prng,
    faults: Prng,
    handler: Prng,
    /// Draws of the boundary fault (a stream of its own: a plan without it draws nothing).
    boundary: Prng,
    /// Draws of the publishes during the run (a stream of its own, likewise).
    publishes: Prng,
    /// Events published during the run so far.
    published: u32,
    progress: Option<std::sync::Arc<Progress>>,
    stop_at_first_violation: bool,
    stop_at_violation_of: Option<Invariant>,
}

/// Runs `setup` against `backend` (a fresh broker built from [`Setup::broker_config`]).
pub fn run<B: Backend>(setup: &Setup, backend: B, options: &RunOptions) -> RunOutcome {
    let mut driver = Driver::new(setup, backend, options);
    let (end, bound) = driver.run();
    if let Some(progress) = &driver.progress {
        progress.publish(&driver.engine);
        progress.done.store(1, AtomicOrdering::Relaxed);
    }
    driver.outcome(end, bound)
}

/// The handler a healed worker runs in the liveness phase: a poison event still hangs past
/// its lease; everything else succeeds quickly.
fn healed_run(setup: &Setup, poison: bool) -> HandlerRun {
    // A correct manual handler acks when its work is done (see `draw_handler`).
    let outcome = if setup.policy == AckPolicy::Manual {
        Outcome::Ack
    } else {
        Outcome::Ok
    };
    let handler_ms = if poison {
        setup.lease_ms.saturating_add(setup.lease_ms / 2)
    } else {
        (setup.workload.handler_ms_max / 2).max(1)
    };
    HandlerRun {
        outcome,
        calls: Vec::new(),
        handler_ms,
    }
}

fn is_poison(poison: &[u64], seq: u32) -> bool {
    let index = seq as usize - 1;
    poison
        .get(index / 64)
        .is_some_and(|word| word & (1 << (index % 64)) != 0)
}

impl<'a, B: Backend> Driver<'a, B> {
    #[inline(never)]
    fn new(setup: &'a Setup, backend: B, options: &RunOptions) -> Driver<'a, B> {
        let seed = setup.seed;
        let draws = setup.draws;
        let mut workload = Prng::named(seed, "workload", draws);
        let mut poison = vec![0u64; (setup.events as usize).div_ceil(64)];
        for index in 0..setup.events as usize {
            if workload.chance(setup.workload.poison) {
                poison[index / 64] |= 1 << (index % 64);
            }
        }
        let mut clocks = Prng::named(seed, "clocks", draws);
        let f = &setup.faults;
        let workers: Vec<Worker> = (0..setup.worker_names.len())
            .map(|index| {
                let mut worker = Worker {
                    next_group: index % setup.group_names.len(),
                    ..Worker::default()
                };
                if clocks.chance(f.clock_skew) {
                    let offset = clocks.between(0, 2 * f.clock_offset_ms_max) as i64;
                    worker.offset_ms = offset - f.clock_offset_ms_max as i64;
                    let drift = clocks.between(0, 2 * f.clock_drift_ppm_max) as i64;
                    worker.drift_ppm = drift - f.clock_drift_ppm_max as i64;
                }
                if let Some(Some(offset)) = setup.clock_offset_ms.get(index) {
                    worker.offset_ms = *offset;
                }
                worker
            })
            .collect();
        let mut engine_setup = engine::Setup {
            groups: setup.group_names.clone(),
            workers: setup.worker_names.clone(),
            ..engine::Setup::new(
                setup.variant,
                &[],
                &[],
                setup.lease_ms,
                setup.max_attempts,
                setup.policy,
            )
        };
        engine_setup.clock_offset_ms = workers.iter().map(|w| w.offset_ms).collect();
        engine_setup.expiry = setup.expiry;
        engine_setup.tell_lapses = setup.expiry == engine::Expiry::OnFetch;
        engine_setup.audit_every_step = options.audit_every_step;
        let mut engine = if options.record || options.timeline.is_some() {
            Engine::new(backend, engine_setup)
        } else {
            Engine::without_trace(backend, engine_setup)
        };
        if let (Some(recorder), Some(sink)) = (engine.recorder_mut(), &options.timeline) {
            *recorder = Recorder::streaming(&setup.worker_names, &setup.group_names, sink.clone())
                .styled(options.style);
            if let Some(records) = &options.records {
                *recorder = std::mem::take(recorder).with_records(records.clone());
            }
            if let Some(times) = &options.times {
                *recorder = std::mem::take(recorder).with_times(times.clone());
            }
            if let Some(view) = options.keep {
                *recorder = std::mem::take(recorder).keeping(view.from_ms, view.to_ms);
            }
        }
        if let (Some(recorder), Some(observer)) = (engine.recorder_mut(), &options.observer) {
            recorder.observe_with(observer.clone());
        }
        engine.publish_initial(setup.events);
        Driver {
            setup,
            chances: Chances::of(setup),
            engine,
            queue: Timers::default(),
            workers,
            poison,
            network: Prng::named(seed, "network", draws),
            faults: Prng::named(seed, "faults", draws),
            handler: Prng::named(seed, "handler", draws),
            boundary: Prng::named(seed, "boundary", draws),
            publishes: Prng::named(seed, "publish", draws),
            published: 0,
            progress: options.progress.clone(),
            stop_at_first_violation: options.stop_at_first_violation,
            stop_at_violation_of: options.stop_at_violation_of,
        }
    }

    fn end_step(&mut self) {
        self.engine.end_step();
        if let Some(progress) = &self.progress {
            if self.engine.oracle().step() & (PROGRESS_EVERY_STEPS - 1) == 0 {
                progress.publish(&self.engine);
            }
        }
    }

    /// Whether the run ends here: it was asked to stop at its first violation, or at one of an
    /// invariant, and has one. (One test of the violated bits per step when nothing broke.)
    fn stops_here(&self) -> bool {
        let oracle = self.engine.oracle();
        oracle.any_violated()
            && (self.stop_at_first_violation
                || self
                    .stop_at_violation_of
                    .is_some_and(|invariant| oracle.violated(invariant)))
    }

    fn run(&mut self) -> (String, Option<Bound>) {
        let setup = self.setup;
        self.end_step();
        for worker in 0..self.workers.len() {
            let at = self.network.below(setup.workload.poll_ms.max(1));
            self.schedule_wake(worker, at);
        }
        let steps_max = setup.workload.steps_max;
        let safety_end_ms = setup.workload.safety_ms_max;
        loop {
            if self.engine.oracle().step() >= steps_max {
                self.engine.audit();
                return (
                    format!("{} = {steps_max} reached", Bound::StepsMax),
                    Some(Bound::StepsMax),
                );
            }
            let now = self.engine.now_ms();
            let deadline = self.engine.next_deadline().filter(|&d| d > now);
            let engine_next = match (self.engine.next_event_ms(), deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let driver_next = self.queue.next_ms();
            let next = match (engine_next, driver_next) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => break,
            };
            if next >= safety_end_ms {
                break;
            }
            if engine_next == Some(next) {
                self.engine.run_until(next);
            } else {
                let Queued { at_ms, event } = self.queue.pop().expect("peeked");
                self.engine.run_until(at_ms);
                if !self.handle(event) {
                    continue;
                }
            }
            self.end_step();
            if self.stops_here() {
                return (STOPPED_AT_FIRST_VIOLATION.to_string(), None);
            }
            if self.engine.all_settled() {
                break;
            }
        }
        self.engine.audit();
        if self.stops_here() {
            return (STOPPED_AT_FIRST_VIOLATION.to_string(), None);
        }
        self.heal_and_drain()
    }

    /// Ends the safety phase: clocks are fixed, the driver stops, what is in flight lands, and
    /// the engine's liveness phase runs within `liveness_ms_max`.
    #[inline(never)]
    fn heal_and_drain(&mut self) -> (String, Option<Bound>) {
        let setup = self.setup;
        for worker in 0..self.workers.len() {
            self.engine.set_clock_offset(worker, 0);
        }
        self.queue.clear();
        let liveness_ms_max = setup.liveness_ms_max();
        let end_ms = self.engine.now_ms().saturating_add(liveness_ms_max);
        // Let what is already in flight land (late settles of crashed or paused workers).
        while let Some(at) = self.engine.next_event_ms() {
            if at > end_ms {
                break;
            }
            if self.engine.oracle().step() >= setup.workload.steps_max {
                let bound = Bound::StepsMax;
                return (format!("{bound} reached"), Some(bound));
            }
            self.engine.run_until(at);
            self.end_step();
            if self.stops_here() {
                return (STOPPED_AT_FIRST_VIOLATION.to_string(), None);
            }
        }
        let poison = &self.poison;
        let handler = |_group, seq: u32, _attempt| healed_run(setup, is_poison(poison, seq));
        let report = self.engine.drain(liveness_ms_max, &handler);
        (report.end.describe(), report.bound())
    }

    #[inline(never)]
    fn outcome(self, end: String, inconclusive: Option<Bound>) -> RunOutcome {
        let setup = self.setup;
        let oracle = self.engine.oracle();
        let violations = oracle.violations().to_vec();
        let steps = oracle.step();
        let records = self.engine.record_count();
        let duplicate_runs = oracle.duplicate_runs();
        let at_most_once_losses = if setup.policy.at_least_once() {
            0
        } else {
            oracle.acked_unprocessed()
        };
        let world = self.engine.world();
        let (duplicate_writes, ghost_writes) = (world.duplicates(), world.ghost_writes());
        let sim_ms = self.engine.now_ms();
        let trace_hash = self.engine.trace_hash();
        let hits = *self.engine.hits();
        let (recorded, text, streamed) = match self.engine.into_recorder() {
            None => (None, None, None),
            Some(recorder) if recorder.is_streaming() => {
                let (trace, streamed) = recorder.finish_streaming(sim_ms).expect("streaming");
                let recorded = Recorded {
                    trace,
                    events: Vec::new(),
                };
                (Some(Box::new(recorded)), None, Some(streamed))
            }
            Some(recorder) => {
                let (trace, events) = recorder.finish(sim_ms);
                let text = timeline::text(&trace);
                (Some(Box::new(Recorded { trace, events })), Some(text), None)
            }
        };
        RunOutcome {
            seed: setup.seed,
            violations,
            end,
            inconclusive,
            steps,
            records,
            sim_ms,
            trace_hash,
            trace: text,
            recorded,
            streamed,
            hits,
            duplicate_runs,
            duplicate_writes,
            ghost_writes,
            at_most_once_losses,
        }
    }

    fn push(&mut self, at_ms: Ms, event: Event) {
        self.queue.push(at_ms, event);
    }

    #[inline]
    fn schedule_wake(&mut self, worker: usize, at_ms: Ms) {
        let w = &mut self.workers[worker];
        w.token += 1;
        let token = w.token;
        self.push(at_ms, Event::Wake { worker, token });
    }

    #[inline]
    fn fault(&mut self, odds: fn(&Chances) -> &Odds) -> bool {
        self.faults.odds(odds(&self.chances))
    }

    #[inline]
    fn net_fault(&mut self, odds: fn(&Chances) -> &Odds) -> bool {
        self.network.odds(odds(&self.chances))
    }

    /// Broker milliseconds for `ms` on the worker's drifting clock.
    fn worker_duration_ms(&self, worker: usize, ms: Ms) -> Ms {
        let drift_ppm = self.workers[worker].drift_ppm;
        if drift_ppm == 0 && ms <= Ms::MAX / 1_000_000 {
            // What the division below gives for a clock without drift, without dividing.
            return ms.max(1);
        }
        let rate = 1_000_000 + drift_ppm;
        (ms.saturating_mul(1_000_000) / rate.max(1) as u64).max(1)
    }

    /// Moves the worker's clock offset by its drift up to now.
    fn sync_clock(&mut self, worker: usize) {
        let w = &self.workers[worker];
        if w.drift_ppm == 0 {
            return;
        }
        let now = self.engine.now_ms() as i64;
        let offset = w.offset_ms + now.saturating_mul(w.drift_ppm) / 1_000_000;
        self.engine.set_clock_offset(worker, offset);
    }

    #[inline(always)]
    fn latency_ms(&mut self) -> Ms {
        let mut ms = 1;
        if self.net_fault(|c| &c.delay) {
            ms += self.network.span(&self.chances.delay_ms);
        }
        if self.net_fault(|c| &c.reorder) {
            ms += self.network.span(&self.chances.reorder_ms);
        }
        ms
    }

    /// How a settle from `worker` travels now.
    fn delivery(&mut self, worker: usize) -> Delivery {
        let partitioned = self.engine.now_ms() < self.workers[worker].partitioned_until_ms;
        let fault = if partitioned {
            WireFault::Dropped
        } else if self.fault(|c| &c.unavailable) {
            WireFault::Unavailable
        } else if self.fault(|c| &c.failed) {
            WireFault::Failed
        } else if self.net_fault(|c| &c.drop) {
            WireFault::Dropped
        } else if self.fault(|c| &c.lost_reply) {
            WireFault::LostReply
        } else {
            WireFault::None
        };
        let duplicate_after_ms = if self.net_fault(|c| &c.duplicate) {
            Some(self.latency_ms())
        } else {
            None
        };
        Delivery {
            delay_ms: self.latency_ms(),
            reply_delay_ms: self.latency_ms(),
            fault,
            duplicate_after_ms,
            before_timer: false,
        }
    }

    /// The boundary fault: when it strikes, a time aimed at lease `issuance`'s deadline — the
    /// deadline − 1 ms, exactly it, or + 1 ms — and whether the request lands before the
    /// broker's timers of that millisecond.
    #[inline]
    fn boundary_target(&mut self, issuance: Issuance) -> Option<(Ms, bool)> {
        if !self.boundary.odds(&self.chances.boundary) {
            return None;
        }
        self.boundary_strikes(issuance)
    }

    /// [`Driver::boundary_target`] once the fault struck.
    #[inline(never)]
    fn boundary_strikes(&mut self, issuance: Issuance) -> Option<(Ms, bool)> {
        let deadline_ms = self.engine.lease(issuance)?.deadline_ms;
        let target = (deadline_ms + self.boundary.below(3)).checked_sub(1)?;
        Some((target, self.boundary.coin()))
    }

    /// A request sent now on `delivery`, aimed at its lease's deadline when the boundary fault
    /// strikes (and the deadline is still ahead).
    fn aim_request(&mut self, issuance: Issuance, delivery: &mut Delivery) {
        let now = self.engine.now_ms();
        if let Some((target, before_timer)) = self.boundary_target(issuance) {
            if let Some(delay_ms) = target.checked_sub(now) {
                delivery.delay_ms = delay_ms;
                delivery.before_timer = before_timer;
            }
        }
    }

    /// A handler run aimed at its lease's deadline when the boundary fault strikes: it ends
    /// 1 ms before the target and its settles take 1 ms (it does not renew).
    fn aim_handler(
        &mut self,
        issuance: Issuance,
        run: &mut HandlerRun,
        renews: &mut bool,
    ) -> Option<Delivery> {
        let now = self.engine.now_ms();
        let (target, before_timer) = self.boundary_target(issuance)?;
        let handler_ms = target
            .checked_sub(now)?
            .checked_sub(1)
            .filter(|&ms| ms > 0)?;
        run.handler_ms = handler_ms;
        *renews = false;
        Some(Delivery {
            delay_ms: 1,
            before_timer,
            ..Delivery::INSTANT
        })
    }

    /// Publishes one more event when the workload draws it (at most `[config] events` during
    /// the run); whether it did.
    fn publish_more(&mut self) -> bool {
        if self.published >= self.setup.events || !self.publishes.odds(&self.chances.publish) {
            return false;
        }
        self.published += 1;
        self.engine.publish();
        true
    }

    /// One driver event; false when it was void (a superseded timer) and is not a step.
    fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Wake { worker, token } => {
                let w = &self.workers[worker];
                if w.token != token || w.crashed {
                    return false;
                }
                self.wake(worker)
            }
            Event::Restart { worker } => {
                self.restart(worker);
                true
            }
        }
    }

    /// A crashed worker comes back.
    #[cold]
    #[inline(never)]
    fn restart(&mut self, worker: usize) {
        self.workers[worker].crashed = false;
        self.engine.restart(worker);
        let now = self.engine.now_ms();
        self.schedule_wake(worker, now);
    }

    fn wake(&mut self, worker: usize) -> bool {
        let now = self.engine.now_ms();
        let partition_max = self.setup.faults.partition_ms_max;
        self.sync_clock(worker);
        self.note_partition_healed(worker);
        if self.fault(|c| &c.crash) {
            self.crash(worker);
            return true;
        }
        let mut acted = false;
        if self.fault(|c| &c.broker_restart) {
            self.engine.broker_restart();
            acted = true;
        }
        if self.net_fault(|c| &c.partition) {
            let ms = self.network.between(1, partition_max.max(1));
            self.workers[worker].partitioned_until_ms = now.saturating_add(ms);
        }
        let busy = self.workers[worker]
            .job
            .as_ref()
            .is_some_and(|job| now < job.end_ms);
        let worked = if busy {
            self.tend(worker)
        } else {
            self.workers[worker].job = None;
            self.fetch(worker)
        };
        let published = self.publish_more();
        worked || acted || published
    }

    /// The worker crashes now, and restarts after a downtime the faults draw. (Rare: kept out
    /// of the wake's own code.)
    #[cold]
    #[inline(never)]
    fn crash(&mut self, worker: usize) {
        let now = self.engine.now_ms();
        let downtime_max = self.setup.faults.crash_downtime_ms_max.max(1);
        let downtime = self.faults.between(1, downtime_max);
        let w = &mut self.workers[worker];
        w.crashed = true;
        w.job = None;
        w.token += 1;
        self.engine.crash(worker);
        self.push(now.saturating_add(downtime), Event::Restart { worker });
    }

    /// The first wake after a partition ended: a coverage probe when the worker still holds
    /// leases. (Clearing the end time changes nothing else: every use compares `now` with it.)
    fn note_partition_healed(&mut self, worker: usize) {
        let until = self.workers[worker].partitioned_until_ms;
        if until == 0 || self.engine.now_ms() < until {
            return;
        }
        self.workers[worker].partitioned_until_ms = 0;
        if !self.engine.workers()[worker].held.is_empty() {
            self.engine.hit(Probe::PartitionHealedWithLeases);
        }
    }

    /// A running handler: renew its lease when due.
    fn tend(&mut self, worker: usize) -> bool {
        let now = self.engine.now_ms();
        let job = self.workers[worker].job.as_ref().expect("checked");
        let (issuance, end_ms) = (job.issuance, job.end_ms);
        let mut acted = false;
        let mut next_renew = job.next_renew_ms;
        if let Some(due) = next_renew {
            if now >= due {
                let held = self.engine.workers()[worker].held.contains(&issuance);
                if held {
                    let op = SettleOp::Renew {
                        extend_ms: self.setup.lease_ms,
                    };
                    let mut delivery = self.delivery(worker);
                    self.aim_request(issuance, &mut delivery);
                    self.engine.send(worker, issuance, None, op, delivery);
                    acted = true;
                    let every = self.worker_duration_ms(worker, self.setup.lease_ms / 2);
                    next_renew = Some(now.saturating_add(every));
                } else {
                    next_renew = None;
                }
            }
        }
        let job = self.workers[worker].job.as_mut().expect("checked");
        job.next_renew_ms = next_renew;
        let wake = next_renew.map_or(end_ms, |r| r.min(end_ms));
        self.schedule_wake(worker, wake);
        acted
    }

    fn fetch(&mut self, worker: usize) -> bool {
        let now = self.engine.now_ms();
        let setup = self.setup;
        let poll_ms = setup.workload.poll_ms.max(1);
        if now < self.workers[worker].partitioned_until_ms {
            let until = self.workers[worker].partitioned_until_ms;
            self.schedule_wake(worker, until);
            return false;
        }
        let w = &mut self.workers[worker];
        let group = w.next_group;
        // The next group in turn (a comparison, not a division: every fetch takes one).
        w.next_group = if group + 1 == setup.group_names.len() {
            0
        } else {
            group + 1
        };
        let fault = self.fetch_fault();
        let limit = setup.workload.fetch_limit.max(1) as usize;
        let got = self
            .engine
            .fetch_with(worker, group, limit, None, &[], fault, false);
        let leases = match got {
            Ok(leases) if !leases.is_empty() => leases,
            Ok(_) => {
                // Idle: back off up to a lease between empty polls.
                let w = &mut self.workers[worker];
                w.idle_polls = (w.idle_polls + 1).min(16);
                let wait = (poll_ms << w.idle_polls.min(8)).min(setup.lease_ms.max(poll_ms));
                self.schedule_wake(worker, now.saturating_add(wait));
                return false;
            }
            Err(_) => {
                self.schedule_wake(worker, now.saturating_add(poll_ms));
                return true;
            }
        };
        self.workers[worker].idle_polls = 0;
        self.start_job(worker, &leases);
        true
    }

    /// How a fetch travels now: refused by an unavailable broker, its reply dropped or lost.
    fn fetch_fault(&mut self) -> WireFault {
        if self.fault(|c| &c.unavailable) {
            WireFault::Unavailable
        } else if self.net_fault(|c| &c.drop) {
            WireFault::Dropped
        } else if self.fault(|c| &c.lost_reply) {
            WireFault::LostReply
        } else {
            WireFault::None
        }
    }

    /// The worker handles the leases it just fetched (maybe stalling first), renewing while
    /// a long handler runs; it wakes when the job ends or a renewal is due.
    fn start_job(&mut self, worker: usize, leases: &[Issuance]) {
        let setup = self.setup;
        let now = self.engine.now_ms();
        let mut end_ms = now;
        let mut next_renew_ms = None;
        for &issuance in leases {
            let (mut run, mut renews) = self.draw_handler(worker, issuance);
            let aimed = self.aim_handler(issuance, &mut run, &mut renews);
            let mut finish = now.saturating_add(run.handler_ms);
            if self.fault(|c| &c.pause) {
                let ms = self.faults.span(&self.chances.pause_ms);
                self.engine.pause(worker, ms);
                finish = finish.max(now.saturating_add(ms));
            }
            let mut delivery = self.delivery(worker);
            if let Some(aimed) = aimed {
                delivery.delay_ms = aimed.delay_ms;
                delivery.before_timer = aimed.before_timer;
            }
            self.engine.handle(worker, issuance, run, delivery);
            end_ms = end_ms.max(finish);
            if renews {
                let every = self.worker_duration_ms(worker, setup.lease_ms / 2);
                next_renew_ms = Some(now.saturating_add(every));
            }
        }
        self.workers[worker].job = Some(Job {
            issuance: leases[0],
            end_ms,
            next_renew_ms,
        });
        let wake = next_renew_ms.map_or(end_ms, |r| r.min(end_ms));
        self.schedule_wake(worker, wake);
    }

    /// The handler's behaviour for one delivery: poison, slow, long (renewing) or normal; its
    /// outcome; a correct manual handler's `ack()`.
    fn draw_handler(&mut self, worker: usize, issuance: Issuance) -> (HandlerRun, bool) {
        let setup = self.setup;
        let w = &setup.workload;
        let lease_ms = setup.lease_ms;
        let seq = self.engine.lease(issuance).expect("just fetched").seq;
        let (handler_ms, renews) = if is_poison(&self.poison, seq) {
            (lease_ms + self.handler.between(1, lease_ms.max(1)), false)
        } else if self.fault(|c| &c.slow_handler) {
            (self.faults.span(&self.chances.slow_handler_ms), false)
        } else if self.handler.odds(&self.chances.long_handler) {
            (self.handler.span(&self.chances.long_handler_ms), w.renew)
        } else {
            (self.handler.span(&self.chances.handler_ms), false)
        };
        let outcome = if self.fault(|c| &c.handler_error) {
            Outcome::Error {
                kind: Reason::from_static("HandlerError"),
                text: Reason::EMPTY,
            }
        } else if self.handler.odds(&self.chances.outcome_ack) {
            Outcome::Ack
        } else if self.handler.odds(&self.chances.outcome_nack) {
            Outcome::Nack(Reason::EMPTY)
        } else if self.handler.odds(&self.chances.outcome_reject) {
            Outcome::Reject(Reason::from_static("unprocessable"))
        } else {
            Outcome::Ok
        };
        // A correct manual handler acks when its work is done. The engine sends handle calls
        // when the handler starts, so the ack at the end of the work is the handler leaving
        // with `AckMessage`, which the runtime sends after the handler.
        let outcome = if setup.policy == AckPolicy::Manual && outcome == Outcome::Ok {
            Outcome::Ack
        } else {
            outcome
        };
        let handler_ms = self.worker_duration_ms(worker, handler_ms);
        let run = HandlerRun {
            outcome,
            calls: Vec::new(),
            handler_ms,
        };
        (run, renews)
    }
}
