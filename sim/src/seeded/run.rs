//! One seeded run: a driver that plays N workers, the network and the fault plan on top of
//! the deterministic [`Engine`].
//!
//! The engine owns time, the broker, in-flight requests and replies, the consumer runtime, the
//! oracle and the trace. The driver owns the workers' decisions — when each fetches, how its
//! handler behaves, when it renews — and every fault, drawn from the seed's named generators.
//! Its own timers sit in a queue ordered by (time, insertion sequence) and interleave with the
//! engine's: the earlier goes first, the engine on a tie. The oracle's `end_step` runs after each
//! engine time point and each driver action.
//!
//! Phases: the safety phase injects faults until every event is settled or `safety_ms_max`
//! passes; then faults heal (clocks are fixed, partitions end, the driver stops) and the
//! engine's liveness phase ([`Engine::drain`]) must settle everything within
//! `liveness_ms_max`, else I6 is violated with the reason.

use super::prng::Prng;
use super::ratio::Ratio;
use super::setup::Setup;
use super::world::World;
use crate::engine::{self, Delivery, Engine, HandlerRun};
use crate::timeline;
use crate::trace::{Fault as WireFault, LineKind, Part};
use leasehold_model::{
    AckPolicy, Backend, HandleCall, Issuance, Ms, Outcome, Reason, Seq, SettleOp, Violation,
};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What one seeded run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The root seed.
    pub seed: u64,
    /// The first violation of each broken invariant, in the order found.
    pub violations: Vec<Violation>,
    /// Why the run ended.
    pub end: String,
    /// The named bound that ended the run without a verdict, if any (`steps_max`).
    pub bound_hit: Option<&'static str>,
    /// Steps executed (oracle checks).
    pub steps: u64,
    /// Simulated time at the end.
    pub sim_ms: Ms,
    /// FNV-1a 64 of the timeline text.
    pub trace_hash: u64,
    /// The timeline text, when it was kept.
    pub trace: Option<String>,
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

#[derive(Clone, Copy, Debug)]
enum Event {
    Wake { worker: usize, token: u64 },
    Restart { worker: usize },
}

struct Queued {
    at_ms: Ms,
    seq: u64,
    event: Event,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at_ms, self.seq) == (other.at_ms, other.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    /// Reversed: the heap pops the earliest (time, insertion sequence) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_ms, other.seq).cmp(&(self.at_ms, self.seq))
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

struct Driver<'a, B: Backend> {
    setup: &'a Setup,
    engine: Engine<B>,
    queue: BinaryHeap<Queued>,
    queue_seq: u64,
    workers: Vec<Worker>,
    poison: Vec<bool>,
    network: Prng,
    faults: Prng,
    handler: Prng,
    /// Handler runs the driver started: (lease, planned finish).
    finishes: Vec<(Issuance, Ms)>,
}

/// Runs `setup` against `backend` (a fresh broker built from [`Setup::broker_config`]);
/// keeps the timeline text when `keep_trace`.
pub fn run<B: Backend>(setup: &Setup, backend: B, keep_trace: bool) -> RunOutcome {
    let mut driver = Driver::new(setup, backend);
    let (end, bound_hit) = driver.run();
    driver.outcome(end, bound_hit, keep_trace)
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
        setup.lease_ms + setup.lease_ms / 2
    } else {
        (setup.workload.handler_ms_max / 2).max(1)
    };
    HandlerRun {
        outcome,
        calls: Vec::new(),
        handler_ms,
    }
}

impl<'a, B: Backend> Driver<'a, B> {
    fn new(setup: &'a Setup, backend: B) -> Driver<'a, B> {
        let seed = setup.seed;
        let mut workload = Prng::named(seed, "workload");
        let poison: Vec<bool> = (0..setup.events)
            .map(|_| workload.chance(setup.workload.poison))
            .collect();
        let mut clocks = Prng::named(seed, "clocks");
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
        let mut engine = Engine::new(backend, engine_setup);
        engine.publish_initial(setup.events);
        Driver {
            setup,
            engine,
            queue: BinaryHeap::new(),
            queue_seq: 0,
            workers,
            poison,
            network: Prng::named(seed, "network"),
            faults: Prng::named(seed, "faults"),
            handler: Prng::named(seed, "handler"),
            finishes: Vec::new(),
        }
    }

    fn run(&mut self) -> (String, Option<&'static str>) {
        let setup = self.setup;
        self.engine.end_step();
        for worker in 0..self.workers.len() {
            let at = self.network.below(setup.workload.poll_ms.max(1));
            self.schedule_wake(worker, at);
        }
        let steps_max = setup.workload.steps_max;
        let safety_end_ms = setup.workload.safety_ms_max;
        loop {
            if self.engine.oracle().step() >= steps_max {
                return (
                    format!("steps_max = {steps_max} reached"),
                    Some("steps_max"),
                );
            }
            let now = self.engine.now_ms();
            let deadline = self.engine.backend().next_deadline().filter(|&d| d > now);
            let engine_next = match (self.engine.next_event_ms(), deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let driver_next = self.queue.peek().map(|q| q.at_ms);
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
                let Queued { at_ms, event, .. } = self.queue.pop().expect("peeked");
                self.engine.run_until(at_ms);
                if !self.handle(event) {
                    continue;
                }
            }
            self.engine.end_step();
            if self.engine.all_settled() {
                break;
            }
        }
        self.heal_and_drain()
    }

    /// Ends the safety phase: clocks are fixed, the driver stops, what is in flight lands, and
    /// the engine's liveness phase runs within `liveness_ms_max`.
    fn heal_and_drain(&mut self) -> (String, Option<&'static str>) {
        let setup = self.setup;
        for worker in 0..self.workers.len() {
            self.engine.set_clock_offset(worker, 0);
        }
        self.queue.clear();
        let liveness_ms_max = setup.liveness_ms_max();
        let end_ms = self.engine.now_ms().saturating_add(liveness_ms_max);
        // Let what is already in flight land (late settles of crashed or paused workers).
        while let Some(at) = self.engine.next_event_ms() {
            if at > end_ms || self.engine.oracle().step() >= setup.workload.steps_max {
                break;
            }
            self.engine.run_until(at);
            self.engine.end_step();
        }
        let poison = self.poison.clone();
        let handler = move |_group, seq: Seq, _attempt| healed_run(setup, poison[seq as usize - 1]);
        let report = self.engine.drain(liveness_ms_max, &handler);
        (report.why, None)
    }

    fn outcome(self, end: String, bound_hit: Option<&'static str>, keep: bool) -> RunOutcome {
        let setup = self.setup;
        let oracle = self.engine.oracle();
        let violations = oracle.violations().to_vec();
        let steps = oracle.step();
        let duplicate_runs = oracle.duplicate_runs();
        let at_most_once_losses = if setup.policy.at_least_once() {
            0
        } else {
            oracle.acked_unprocessed()
        };
        let sim_ms = self.engine.now_ms();
        let trace = self.engine.into_trace();
        let mut world = World::new(setup.group_names.len());
        let mut finishes = self.finishes;
        finishes.sort_unstable();
        for line in &trace.lines {
            let LineKind::Handle { issuance } = line.kind else {
                continue;
            };
            let finished = line
                .parts
                .iter()
                .any(|p| matches!(p, Part::HandlerFinished { success: true, .. }));
            if !finished {
                continue;
            }
            let info = trace.lease(issuance);
            let finish_ms = match finishes.binary_search_by_key(&issuance, |&(i, _)| i) {
                Ok(index) => finishes[index].1,
                Err(_) => {
                    let poison = self.poison[info.lease.seq as usize - 1];
                    line.at_ms + healed_run(setup, poison).handler_ms
                }
            };
            let current = finish_ms < info.lease.deadline_ms;
            world.write(info.lease.group, info.lease.seq, current);
        }
        let (trace_hash, text) = if keep {
            let text = timeline::text(&trace);
            (crate::trace::fnv1a64(text.as_bytes()), Some(text))
        } else {
            (timeline::trace_hash(&trace), None)
        };
        RunOutcome {
            seed: setup.seed,
            violations,
            end,
            bound_hit,
            steps,
            sim_ms,
            trace_hash,
            trace: text,
            duplicate_runs,
            duplicate_writes: world.duplicates(),
            ghost_writes: world.ghost_writes(),
            at_most_once_losses,
        }
    }

    fn push(&mut self, at_ms: Ms, event: Event) {
        self.queue_seq += 1;
        self.queue.push(Queued {
            at_ms,
            seq: self.queue_seq,
            event,
        });
    }

    fn schedule_wake(&mut self, worker: usize, at_ms: Ms) {
        let w = &mut self.workers[worker];
        w.token += 1;
        let token = w.token;
        self.push(at_ms, Event::Wake { worker, token });
    }

    fn fault(&mut self, ratio: Ratio) -> bool {
        self.faults.chance(ratio)
    }

    fn net_fault(&mut self, ratio: Ratio) -> bool {
        self.network.chance(ratio)
    }

    /// Broker milliseconds for `ms` on the worker's drifting clock.
    fn worker_duration_ms(&self, worker: usize, ms: Ms) -> Ms {
        let rate = 1_000_000 + self.workers[worker].drift_ppm;
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

    fn latency_ms(&mut self) -> Ms {
        let f = &self.setup.faults;
        let (delay, delay_max, reorder, reorder_max) =
            (f.delay, f.delay_ms_max, f.reorder, f.reorder_ms_max);
        let mut ms = 1;
        if self.net_fault(delay) {
            ms += self.network.between(0, delay_max);
        }
        if self.net_fault(reorder) {
            ms += self.network.between(0, reorder_max);
        }
        ms
    }

    /// How a settle from `worker` travels now.
    fn delivery(&mut self, worker: usize) -> Delivery {
        let f = &self.setup.faults;
        let (unavailable, drop, lost_reply, duplicate) =
            (f.unavailable, f.drop, f.lost_reply, f.duplicate);
        let partitioned = self.engine.now_ms() < self.workers[worker].partitioned_until_ms;
        let fault = if partitioned {
            WireFault::Dropped
        } else if self.fault(unavailable) {
            WireFault::Unavailable
        } else if self.net_fault(drop) {
            WireFault::Dropped
        } else if self.fault(lost_reply) {
            WireFault::LostReply
        } else {
            WireFault::None
        };
        let duplicate_after_ms = if self.net_fault(duplicate) {
            Some(self.latency_ms())
        } else {
            None
        };
        Delivery {
            delay_ms: self.latency_ms(),
            reply_delay_ms: self.latency_ms(),
            fault,
            duplicate_after_ms,
        }
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
                self.workers[worker].crashed = false;
                self.engine.restart(worker);
                let now = self.engine.now_ms();
                self.schedule_wake(worker, now);
                true
            }
        }
    }

    fn wake(&mut self, worker: usize) -> bool {
        let now = self.engine.now_ms();
        let f = &self.setup.faults;
        let (crash, restart, partition, partition_max) =
            (f.crash, f.broker_restart, f.partition, f.partition_ms_max);
        self.sync_clock(worker);
        if self.fault(crash) {
            let downtime_max = self.setup.faults.crash_downtime_ms_max.max(1);
            let downtime = self.faults.between(1, downtime_max);
            let w = &mut self.workers[worker];
            w.crashed = true;
            w.job = None;
            w.token += 1;
            self.engine.crash(worker);
            self.push(now + downtime, Event::Restart { worker });
            return true;
        }
        let mut acted = false;
        if self.fault(restart) {
            self.engine.broker_restart();
            acted = true;
        }
        if self.net_fault(partition) {
            let ms = self.network.between(1, partition_max.max(1));
            self.workers[worker].partitioned_until_ms = now + ms;
        }
        if let Some(job) = &self.workers[worker].job {
            if now < job.end_ms {
                return self.tend(worker) || acted;
            }
            self.workers[worker].job = None;
        }
        self.fetch(worker) || acted
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
                    let delivery = self.delivery(worker);
                    self.engine.send(worker, issuance, None, op, delivery);
                    acted = true;
                    let every = self.worker_duration_ms(worker, self.setup.lease_ms / 2);
                    next_renew = Some(now + every);
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
        w.next_group = (group + 1) % setup.group_names.len();
        let f = &setup.faults;
        let fault = if self.fault(f.unavailable) {
            WireFault::Unavailable
        } else if self.net_fault(f.drop) {
            WireFault::Dropped
        } else if self.fault(f.lost_reply) {
            WireFault::LostReply
        } else {
            WireFault::None
        };
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
                self.schedule_wake(worker, now + wait);
                return false;
            }
            Err(_) => {
                self.schedule_wake(worker, now + poll_ms);
                return true;
            }
        };
        self.workers[worker].idle_polls = 0;
        let mut end_ms = now;
        let mut next_renew_ms = None;
        for &issuance in &leases {
            let (run, renews) = self.draw_handler(worker, issuance);
            let mut finish = now + run.handler_ms;
            if self.fault(setup.faults.pause) {
                let lease_ms = setup.lease_ms;
                let ms = self
                    .faults
                    .between(lease_ms, setup.faults.pause_ms_max.max(lease_ms));
                self.engine.pause(worker, ms);
                finish = finish.max(now + ms);
            }
            let delivery = self.delivery(worker);
            self.engine.handle(worker, issuance, run, delivery);
            self.finishes.push((issuance, finish));
            end_ms = end_ms.max(finish);
            if renews {
                let every = self.worker_duration_ms(worker, setup.lease_ms / 2);
                next_renew_ms = Some(now + every);
            }
        }
        self.workers[worker].job = Some(Job {
            issuance: leases[0],
            end_ms,
            next_renew_ms,
        });
        let wake = next_renew_ms.map_or(end_ms, |r| r.min(end_ms));
        self.schedule_wake(worker, wake);
        true
    }

    /// The handler's behaviour for one delivery: poison, slow, long (renewing) or normal; its
    /// outcome; a correct manual handler's `ack()`.
    fn draw_handler(&mut self, worker: usize, issuance: Issuance) -> (HandlerRun, bool) {
        let setup = self.setup;
        let (w, f) = (&setup.workload, &setup.faults);
        let lease_ms = setup.lease_ms;
        let seq = self.engine.trace().lease(issuance).lease.seq;
        let (handler_ms, renews) = if self.poison[seq as usize - 1] {
            (lease_ms + self.handler.between(1, lease_ms.max(1)), false)
        } else if self.fault(f.slow_handler) {
            let max = f.slow_handler_ms_max.max(lease_ms);
            (self.faults.between(lease_ms, max), false)
        } else if self.handler.chance(w.long_handler) {
            (self.handler.between(lease_ms / 2, 3 * lease_ms), w.renew)
        } else {
            (self.handler.between(1, w.handler_ms_max.max(1)), false)
        };
        let outcome = if self.fault(f.handler_error) {
            Outcome::Error {
                kind: Reason::new("HandlerError"),
                text: Reason::EMPTY,
            }
        } else if self.handler.chance(w.outcome_ack) {
            Outcome::Ack
        } else if self.handler.chance(w.outcome_nack) {
            Outcome::Nack(Reason::EMPTY)
        } else if self.handler.chance(w.outcome_reject) {
            Outcome::Reject(Reason::new("unprocessable"))
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
        let calls: Vec<HandleCall> = Vec::new();
        let handler_ms = self.worker_duration_ms(worker, handler_ms);
        let run = HandlerRun {
            outcome,
            calls,
            handler_ms,
        };
        (run, renews)
    }
}
