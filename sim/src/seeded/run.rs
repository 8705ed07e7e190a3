//! One seeded run: a broker behind [`Backend`], N workers running the consumer runtime, a
//! faulty network, the world, and the oracle, on virtual time.
//!
//! Time is an event queue ordered by (time, insertion sequence). Every popped event is one
//! step; the oracle checks I1–I5 after each. The safety phase injects faults until every event
//! is settled or `safety_ms_max` passes; then faults heal (crashed workers restart, partitions
//! end, clocks are fixed, no new faults) and the liveness phase must settle everything within
//! `liveness_ms_max` (I6).

use super::prng::Prng;
use super::ratio::Ratio;
use super::setup::Setup;
use super::trace::Trace;
use super::world::World;
use leasehold_model::runtime::{classify, decide, ErrorAction, When};
use leasehold_model::{
    AckPolicy, Backend, GroupIx, HandleCall, Issuance, Lease, Ms, Oracle, Outcome, SettleError,
    SettleOp, SettleRequest, Violation,
};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// What one seeded run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The root seed.
    pub seed: u64,
    /// The first violation of each broken invariant, in the order found.
    pub violations: Vec<Violation>,
    /// Why the run ended (`all settled`, `liveness_ms_max reached`, `steps_max reached`, or
    /// the violation).
    pub end: String,
    /// The named bound that ended the run without a verdict, if any (`steps_max`).
    pub bound_hit: Option<&'static str>,
    /// Steps executed.
    pub steps: u64,
    /// Simulated time at the end.
    pub sim_ms: Ms,
    /// FNV-1a 64 of the trace text.
    pub trace_hash: u64,
    /// The trace text, when it was kept.
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

#[derive(Clone, Debug)]
enum Request {
    Fetch {
        group: GroupIx,
    },
    Settle {
        lease: Lease,
        issuance: Issuance,
        op: SettleOp,
        worker_clock_ms: Ms,
    },
}

#[derive(Clone, Debug)]
enum Reply {
    Fetched(Result<Vec<(Lease, Issuance)>, SettleError>),
    Settled(Result<Option<Lease>, SettleError>),
}

#[derive(Clone, Debug)]
enum Event {
    Wake {
        worker: usize,
        token: u64,
    },
    Restart {
        worker: usize,
    },
    Arrive {
        worker: usize,
        incarnation: u32,
        req: u64,
        request: Request,
    },
    Deliver {
        worker: usize,
        incarnation: u32,
        req: u64,
        reply: Reply,
    },
    Timeout {
        worker: usize,
        incarnation: u32,
        req: u64,
    },
    Expire,
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
    lease: Lease,
    issuance: Issuance,
    outcome: Outcome,
    after: Vec<SettleOp>,
    end_ms: Ms,
    finished: bool,
    renew_every_ms: Option<Ms>,
    next_renew_ms: Ms,
    renew_req: Option<u64>,
    lost: bool,
    settles: VecDeque<SettleOp>,
    settle_req: Option<(u64, SettleOp)>,
    nacked: bool,
}

#[derive(Default)]
struct Worker {
    incarnation: u32,
    wake_token: u64,
    crashed: bool,
    paused_until_ms: Ms,
    partitioned_until_ms: Ms,
    offset_ms: i64,
    drift_ppm: i64,
    next_group: usize,
    fetch_req: Option<u64>,
    backlog: VecDeque<(Lease, Issuance)>,
    job: Option<Job>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Safety,
    Liveness,
    Drain,
}

struct Prngs {
    network: Prng,
    faults: Prng,
    handler: Prng,
}

/// The simulator's state for one run.
struct Sim<'a, B: Backend> {
    setup: &'a Setup,
    backend: B,
    oracle: Oracle,
    world: World,
    trace: Trace,
    queue: BinaryHeap<Queued>,
    queue_seq: u64,
    workers: Vec<Worker>,
    prng: Prngs,
    poison: Vec<bool>,
    now_ms: Ms,
    phase: Phase,
    next_req: u64,
}

/// Runs `setup` against `backend` (a fresh broker built from [`Setup::broker_config`]);
/// keeps the trace text when `keep_trace`.
pub fn run<B: Backend>(setup: &Setup, backend: B, keep_trace: bool) -> RunOutcome {
    let mut sim = Sim::new(setup, backend, keep_trace);
    let (end, bound_hit) = sim.run();
    let at_most_once_losses = if setup.policy.at_least_once() {
        0
    } else {
        sim.oracle.acked_unprocessed()
    };
    RunOutcome {
        seed: setup.seed,
        violations: sim.oracle.violations().to_vec(),
        end,
        bound_hit,
        steps: sim.oracle.step(),
        sim_ms: sim.now_ms,
        trace_hash: sim.trace.hash(),
        duplicate_runs: sim.oracle.duplicate_runs(),
        duplicate_writes: sim.world.duplicates(),
        ghost_writes: sim.world.ghost_writes(),
        at_most_once_losses,
        trace: sim.trace.into_text(),
    }
}

impl<'a, B: Backend> Sim<'a, B> {
    fn new(setup: &'a Setup, backend: B, keep_trace: bool) -> Sim<'a, B> {
        let seed = setup.seed;
        let mut workload = Prng::named(seed, "workload");
        let poison = (0..setup.events)
            .map(|_| workload.chance(setup.workload.poison))
            .collect();
        let mut clocks = Prng::named(seed, "clocks");
        let faults = &setup.faults;
        let workers = (0..setup.worker_names.len())
            .map(|index| {
                let mut worker = Worker {
                    next_group: index % setup.group_names.len(),
                    ..Worker::default()
                };
                if clocks.chance(faults.clock_skew) {
                    let offset = clocks.between(0, 2 * faults.clock_offset_ms_max) as i64;
                    worker.offset_ms = offset - faults.clock_offset_ms_max as i64;
                    let drift = clocks.between(0, 2 * faults.clock_drift_ppm_max) as i64;
                    worker.drift_ppm = drift - faults.clock_drift_ppm_max as i64;
                }
                if let Some(Some(offset)) = setup.clock_offset_ms.get(index) {
                    worker.offset_ms = *offset;
                }
                worker
            })
            .collect();
        Sim {
            setup,
            backend,
            oracle: Oracle::new(setup.oracle_config()),
            world: World::new(setup.group_names.len()),
            trace: Trace::new(keep_trace),
            queue: BinaryHeap::new(),
            queue_seq: 0,
            workers,
            prng: Prngs {
                network: Prng::named(seed, "network"),
                faults: Prng::named(seed, "faults"),
                handler: Prng::named(seed, "handler"),
            },
            poison,
            now_ms: 0,
            phase: Phase::Safety,
            next_req: 0,
        }
    }

    fn run(&mut self) -> (String, Option<&'static str>) {
        let setup = self.setup;
        let s = setup;
        self.trace.line(
            0,
            format_args!(
                "seed {} variant {} events {} groups {} workers {} lease_ms {} max_attempts {} policy {}",
                s.seed,
                s.variant,
                s.events,
                s.group_names.len(),
                s.worker_names.len(),
                s.lease_ms,
                s.max_attempts,
                s.policy
            ),
        );
        self.trace
            .line(0, format_args!("faults {}", s.faults.summary()));
        for (index, worker) in self.workers.iter().enumerate() {
            if worker.offset_ms != 0 || worker.drift_ppm != 0 {
                let name = &s.worker_names[index];
                let (offset, drift) = (worker.offset_ms, worker.drift_ppm);
                self.trace.line(
                    0,
                    format_args!("clock {name} offset {offset} ms drift {drift} ppm"),
                );
            }
        }
        for seq in 1..=s.events {
            self.backend.publish();
            self.oracle.published();
            if self.poison[seq as usize - 1] {
                self.trace.line(0, format_args!("publish E{seq} (poison)"));
            }
        }
        self.trace
            .line(0, format_args!("publish E1..E{}", s.events));
        self.oracle.end_step(&self.backend);
        for worker in 0..self.workers.len() {
            let at = self.prng.network.below(s.workload.poll_ms.max(1));
            self.schedule_wake(worker, at);
        }
        let mut liveness_end_ms = Ms::MAX;
        loop {
            if self.oracle.step() >= s.workload.steps_max {
                let end = format!("steps_max reached ({})", s.workload.steps_max);
                return (end, Some("steps_max"));
            }
            let Some(next) = self.queue.pop() else {
                break;
            };
            if self.phase == Phase::Safety && next.at_ms >= s.workload.safety_ms_max {
                self.now_ms = self.now_ms.max(s.workload.safety_ms_max);
                self.heal();
                liveness_end_ms = self.now_ms.saturating_add(s.liveness_ms_max());
            }
            if next.at_ms > liveness_end_ms {
                self.now_ms = liveness_end_ms;
                let why = format!(
                    "after liveness_ms_max = {} ms of the healed phase",
                    s.liveness_ms_max()
                );
                self.oracle.check_eventually_settled(&self.backend, &why);
                return ("liveness_ms_max reached".to_string(), None);
            }
            self.now_ms = next.at_ms;
            if !self.handle(next.event) {
                continue;
            }
            self.oracle.end_step(&self.backend);
            if self.phase != Phase::Drain && self.all_settled() {
                self.trace.line(self.now_ms, format_args!("all settled"));
                self.phase = Phase::Drain;
            }
        }
        self.oracle
            .check_eventually_settled(&self.backend, "when the run ran out of events");
        if let Some(first) = self.oracle.violations().first() {
            return (format!("{} violated", first.invariant.id()), None);
        }
        ("all settled".to_string(), None)
    }

    fn all_settled(&self) -> bool {
        let count = self.backend.event_count();
        let groups = self.backend.group_count();
        (0..groups).all(|g| self.backend.frontier(g) == count)
            && (0..groups).all(|g| {
                (1..=count).all(|seq| {
                    use leasehold_model::Status;
                    matches!(
                        self.backend.status(g, seq).0,
                        Status::Acked | Status::DeadLettered
                    )
                })
            })
    }

    /// Ends the safety phase: no new faults, crashed workers restart, partitions end, clocks
    /// are fixed.
    fn heal(&mut self) {
        self.phase = Phase::Liveness;
        self.trace
            .line(self.now_ms, format_args!("heal: faults stop"));
        for worker in 0..self.workers.len() {
            let w = &mut self.workers[worker];
            w.partitioned_until_ms = 0;
            w.offset_ms = 0;
            w.drift_ppm = 0;
            if w.crashed {
                self.restart(worker);
            }
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
        w.wake_token += 1;
        let token = w.wake_token;
        self.push(at_ms, Event::Wake { worker, token });
    }

    fn fault(&mut self, ratio: Ratio) -> bool {
        self.phase == Phase::Safety && self.prng.faults.chance(ratio)
    }

    fn net_fault(&mut self, ratio: Ratio) -> bool {
        self.phase == Phase::Safety && self.prng.network.chance(ratio)
    }

    fn name(&self, worker: usize) -> &'a str {
        &self.setup.worker_names[worker]
    }

    fn worker_clock_ms(&self, worker: usize) -> Ms {
        let w = &self.workers[worker];
        let now = self.now_ms as i64;
        let drift = now.saturating_mul(w.drift_ppm) / 1_000_000;
        now.saturating_add(w.offset_ms).saturating_add(drift).max(0) as Ms
    }

    /// Broker milliseconds for `ms` on the worker's drifting clock.
    fn worker_duration_ms(&self, worker: usize, ms: Ms) -> Ms {
        let rate = 1_000_000 + self.workers[worker].drift_ppm;
        (ms.saturating_mul(1_000_000) / rate.max(1) as u64).max(1)
    }

    fn latency_ms(&mut self) -> Ms {
        let f = &self.setup.faults;
        let (delay, delay_max, reorder, reorder_max) =
            (f.delay, f.delay_ms_max, f.reorder, f.reorder_ms_max);
        let mut ms = 1;
        if self.net_fault(delay) {
            ms += self.prng.network.between(0, delay_max);
        }
        if self.net_fault(reorder) {
            ms += self.prng.network.between(0, reorder_max);
        }
        ms
    }

    fn partitioned(&self, worker: usize) -> bool {
        self.now_ms < self.workers[worker].partitioned_until_ms
    }

    /// Handles one event; false when the event was void (a superseded timer, a reply to a
    /// worker that restarted) and is not a step.
    fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Wake { worker, token } => {
                if self.workers[worker].wake_token != token || self.workers[worker].crashed {
                    return false;
                }
                self.wake(worker);
            }
            Event::Restart { worker } => {
                if !self.workers[worker].crashed {
                    return false;
                }
                self.restart(worker);
            }
            Event::Arrive {
                worker,
                incarnation,
                req,
                request,
            } => self.arrive(worker, incarnation, req, request),
            Event::Deliver {
                worker,
                incarnation,
                req,
                reply,
            } => {
                let w = &self.workers[worker];
                if w.crashed || w.incarnation != incarnation {
                    return false;
                }
                return self.deliver(worker, req, reply);
            }
            Event::Timeout {
                worker,
                incarnation,
                req,
            } => {
                let w = &self.workers[worker];
                if w.crashed || w.incarnation != incarnation {
                    return false;
                }
                return self.timeout(worker, req);
            }
            Event::Expire => {
                self.oracle.advance(self.now_ms);
                let expired = self.backend.expire_due(self.now_ms);
                if expired.is_empty() {
                    return false;
                }
                for e in expired {
                    let group = &self.setup.group_names[e.group];
                    let dead = if e.dead_lettered {
                        " → dead letter"
                    } else {
                        ""
                    };
                    self.trace.line(
                        self.now_ms,
                        format_args!("broker expires {} E{} {}{dead}", group, e.seq, e.lease_id),
                    );
                }
            }
        }
        true
    }

    fn restart(&mut self, worker: usize) {
        let w = &mut self.workers[worker];
        w.crashed = false;
        self.trace
            .line(self.now_ms, format_args!("{} restarts", self.name(worker)));
        let now = self.now_ms;
        self.schedule_wake(worker, now);
    }

    fn crash(&mut self, worker: usize) {
        let w = &mut self.workers[worker];
        w.crashed = true;
        w.incarnation += 1;
        w.wake_token += 1;
        w.job = None;
        w.backlog.clear();
        w.fetch_req = None;
        let downtime_max = self.setup.faults.crash_downtime_ms_max.max(1);
        let downtime = self.prng.faults.between(1, downtime_max);
        self.trace.line(
            self.now_ms,
            format_args!("{} crashes (down {downtime} ms)", self.name(worker)),
        );
        let at = self.now_ms + downtime;
        self.push(at, Event::Restart { worker });
    }

    fn wake(&mut self, worker: usize) {
        let now = self.now_ms;
        if now < self.workers[worker].paused_until_ms {
            let until = self.workers[worker].paused_until_ms;
            self.schedule_wake(worker, until);
            return;
        }
        let f = &self.setup.faults;
        let (crash, partition, partition_max) = (f.crash, f.partition, f.partition_ms_max);
        if self.fault(crash) {
            self.crash(worker);
            return;
        }
        if self.net_fault(partition) {
            let ms = self.prng.network.between(1, partition_max.max(1));
            self.workers[worker].partitioned_until_ms = now + ms;
            self.trace.line(
                now,
                format_args!(
                    "{} partitioned from the broker for {ms} ms",
                    self.name(worker)
                ),
            );
        }
        let Some(job) = &self.workers[worker].job else {
            if !self.workers[worker].backlog.is_empty() {
                self.start_job(worker);
            } else if self.workers[worker].fetch_req.is_none() && self.phase != Phase::Drain {
                let w = &mut self.workers[worker];
                let group = w.next_group;
                w.next_group = (group + 1) % self.setup.group_names.len();
                let req = self.send(worker, Request::Fetch { group });
                self.workers[worker].fetch_req = Some(req);
            }
            return;
        };
        if job.finished {
            return;
        }
        if now >= job.end_ms {
            self.finish_handler(worker);
            return;
        }
        let renew_due = job.renew_every_ms.is_some()
            && now >= job.next_renew_ms
            && job.renew_req.is_none()
            && !job.lost;
        if renew_due {
            let (lease, issuance) = (job.lease.clone(), job.issuance);
            let every = job.renew_every_ms.unwrap_or(Ms::MAX);
            let op = SettleOp::Renew {
                extend_ms: self.setup.lease_ms,
            };
            let req = self.send_settle(worker, lease, issuance, op);
            let every = self.worker_duration_ms(worker, every);
            let job = self.workers[worker].job.as_mut().expect("checked");
            job.renew_req = Some(req);
            job.next_renew_ms = now + every;
        }
        let job = self.workers[worker].job.as_ref().expect("checked");
        let next = if job.renew_every_ms.is_some() && !job.lost && job.next_renew_ms > now {
            job.end_ms.min(job.next_renew_ms)
        } else {
            // A renew still in flight: the next one is planned when its reply lands.
            job.end_ms
        };
        self.schedule_wake(worker, next);
    }

    fn send_settle(
        &mut self,
        worker: usize,
        lease: Lease,
        issuance: Issuance,
        op: SettleOp,
    ) -> u64 {
        let worker_clock_ms = self.worker_clock_ms(worker);
        self.send(
            worker,
            Request::Settle {
                lease,
                issuance,
                op,
                worker_clock_ms,
            },
        )
    }

    fn send(&mut self, worker: usize, request: Request) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        let now = self.now_ms;
        let name = self.name(worker);
        match &request {
            Request::Fetch { group } => {
                let group = &self.setup.group_names[*group];
                self.trace
                    .line(now, format_args!("{name} sends fetch {group} (r{req})"));
            }
            Request::Settle {
                issuance,
                op,
                worker_clock_ms,
                ..
            } => self.trace.line(
                now,
                format_args!(
                    "{name} sends {} {issuance} (r{req}, clock {worker_clock_ms})",
                    op.name()
                ),
            ),
        }
        let drop = self.setup.faults.drop;
        let incarnation = self.workers[worker].incarnation;
        if self.partitioned(worker) || self.net_fault(drop) {
            self.trace.line(now, format_args!("network drops r{req}"));
        } else {
            let duplicate = self.setup.faults.duplicate;
            if self.net_fault(duplicate) {
                let at = now + self.latency_ms();
                self.trace
                    .line(now, format_args!("network duplicates r{req}"));
                let copy = request.clone();
                self.push(
                    at,
                    Event::Arrive {
                        worker,
                        incarnation,
                        req,
                        request: copy,
                    },
                );
            }
            let at = now + self.latency_ms();
            self.push(
                at,
                Event::Arrive {
                    worker,
                    incarnation,
                    req,
                    request,
                },
            );
        }
        let at = now + self.setup.workload.request_timeout_ms;
        self.push(
            at,
            Event::Timeout {
                worker,
                incarnation,
                req,
            },
        );
        req
    }

    fn arrive(&mut self, worker: usize, incarnation: u32, req: u64, request: Request) {
        let now = self.now_ms;
        self.oracle.advance(now);
        let f = &self.setup.faults;
        let (restart, unavailable, lost_reply) = (f.broker_restart, f.unavailable, f.lost_reply);
        if self.fault(restart) {
            self.backend.restart();
            self.trace.line(now, format_args!("broker restarts"));
        }
        let reply = if self.fault(unavailable) {
            self.trace
                .line(now, format_args!("broker unavailable for r{req}"));
            match request {
                Request::Fetch { .. } => Reply::Fetched(Err(SettleError::BackendUnavailable)),
                Request::Settle { .. } => Reply::Settled(Err(SettleError::BackendUnavailable)),
            }
        } else {
            match request {
                Request::Fetch { group } => self.broker_fetch(req, group),
                Request::Settle {
                    lease,
                    issuance,
                    op,
                    worker_clock_ms,
                } => self.broker_settle(req, lease, issuance, op, worker_clock_ms),
            }
        };
        if matches!(reply, Reply::Settled(_)) && self.fault(lost_reply) {
            self.trace.line(now, format_args!("reply to r{req} lost"));
            return;
        }
        let drop = self.setup.faults.drop;
        if self.partitioned(worker) || self.net_fault(drop) {
            self.trace
                .line(now, format_args!("network drops the reply to r{req}"));
            return;
        }
        let at = now + self.latency_ms();
        self.push(
            at,
            Event::Deliver {
                worker,
                incarnation,
                req,
                reply,
            },
        );
    }

    fn broker_fetch(&mut self, req: u64, group: GroupIx) -> Reply {
        let now = self.now_ms;
        let limit = self.setup.workload.fetch_limit.max(1) as usize;
        let result = self.backend.fetch(group, limit, now, None);
        let leases = match result {
            Ok(leases) => leases,
            Err(error) => {
                self.trace
                    .line(now, format_args!("broker r{req} fetch → {error}"));
                return Reply::Fetched(Err(error));
            }
        };
        let mut issued = Vec::with_capacity(leases.len());
        for lease in leases {
            let issuance = self.oracle.fetched(&lease, now, self.setup.lease_ms);
            self.trace.line(
                now,
                format_args!(
                    "broker r{req} leases {} E{} → {issuance} {} attempt {} until {}",
                    self.setup.group_names[group],
                    lease.seq,
                    lease.lease_id,
                    lease.attempt,
                    lease.deadline_ms
                ),
            );
            self.push(lease.deadline_ms, Event::Expire);
            issued.push((lease, issuance));
        }
        if issued.is_empty() {
            self.trace
                .line(now, format_args!("broker r{req} fetch → empty"));
        }
        Reply::Fetched(Ok(issued))
    }

    fn broker_settle(
        &mut self,
        req: u64,
        lease: Lease,
        issuance: Issuance,
        op: SettleOp,
        worker_clock_ms: Ms,
    ) -> Reply {
        let now = self.now_ms;
        let request = SettleRequest {
            lease,
            op,
            worker_clock_ms,
        };
        let result = self.backend.settle(&request, now);
        self.oracle
            .settled(issuance, &request.op, result.is_ok(), now);
        let verdict = match &result {
            Ok(_) => "ok".to_string(),
            Err(error) => error.to_string(),
        };
        self.trace.line(
            now,
            format_args!(
                "broker r{req} {} {issuance} E{} → {verdict}",
                request.op.name(),
                request.lease.seq
            ),
        );
        if let Ok(Some(renewed)) = &result {
            self.push(renewed.deadline_ms, Event::Expire);
        }
        Reply::Settled(result)
    }

    fn deliver(&mut self, worker: usize, req: u64, reply: Reply) -> bool {
        let now = self.now_ms;
        match reply {
            Reply::Fetched(result) => {
                if self.workers[worker].fetch_req != Some(req) {
                    return false;
                }
                self.workers[worker].fetch_req = None;
                let poll_ms = self.setup.workload.poll_ms;
                match result {
                    Ok(leases) if !leases.is_empty() => {
                        self.workers[worker].backlog.extend(leases);
                        self.schedule_wake(worker, now);
                    }
                    _ => self.schedule_wake(worker, now + poll_ms),
                }
                true
            }
            Reply::Settled(result) => {
                let Some(job) = self.workers[worker].job.as_mut() else {
                    return false;
                };
                if job.renew_req == Some(req) {
                    job.renew_req = None;
                    let wake_ms = job.end_ms.min(job.next_renew_ms.max(now));
                    match result {
                        Ok(Some(lease)) => job.lease = lease,
                        Ok(None) => {}
                        Err(error) => {
                            let action = classify(&error, self.setup.variant);
                            if action == ErrorAction::Drop {
                                job.lost = true;
                            }
                            let name = self.name(worker);
                            self.trace.line(
                                now,
                                format_args!("{name} renew failed: {error} → {action:?}"),
                            );
                        }
                    }
                    self.schedule_wake(worker, wake_ms);
                    return true;
                }
                let Some((settle_req, op)) = job.settle_req.clone() else {
                    return false;
                };
                if settle_req != req {
                    return false;
                }
                job.settle_req = None;
                match result {
                    Ok(_) => self.pump(worker),
                    Err(error) => self.settle_failed(worker, &op, error),
                }
                true
            }
        }
    }

    fn timeout(&mut self, worker: usize, req: u64) -> bool {
        let now = self.now_ms;
        let w = &mut self.workers[worker];
        if w.fetch_req == Some(req) {
            w.fetch_req = None;
            self.trace.line(
                now,
                format_args!("{} gives up r{req} (no reply)", self.name(worker)),
            );
            self.schedule_wake(worker, now);
            return true;
        }
        let Some(job) = w.job.as_mut() else {
            return false;
        };
        if job.renew_req == Some(req) {
            job.renew_req = None;
            let wake_ms = job.end_ms.min(job.next_renew_ms.max(now));
            self.schedule_wake(worker, wake_ms);
            return true;
        }
        match job.settle_req.clone() {
            Some((settle_req, op)) if settle_req == req => {
                job.settle_req = None;
                let error = SettleError::Ambiguous("no reply".to_string());
                self.settle_failed(worker, &op, error);
                true
            }
            _ => false,
        }
    }

    fn settle_failed(&mut self, worker: usize, op: &SettleOp, error: SettleError) {
        let action = classify(&error, self.setup.variant);
        let name = self.name(worker);
        self.trace.line(
            self.now_ms,
            format_args!("{name} {} failed: {error} → {action:?}", op.name()),
        );
        let job = self.workers[worker]
            .job
            .as_mut()
            .expect("a settle has a job");
        job.settles.clear();
        if action == ErrorAction::Nack && !job.nacked && !matches!(op, SettleOp::Nack { .. }) {
            job.nacked = true;
            job.settles.push_back(SettleOp::Nack {
                delay_ms: 0,
                reason: Some(error.name().to_string()),
            });
        }
        self.pump(worker);
    }

    /// Sends the job's next settle, or ends the job when nothing is left to send.
    fn pump(&mut self, worker: usize) {
        let job = self.workers[worker].job.as_mut().expect("pump has a job");
        if job.settle_req.is_some() {
            return;
        }
        if let Some(op) = job.settles.pop_front() {
            let (lease, issuance) = (job.lease.clone(), job.issuance);
            let req = self.send_settle(worker, lease, issuance, op.clone());
            let job = self.workers[worker].job.as_mut().expect("pump has a job");
            job.settle_req = Some((req, op));
        } else if job.finished {
            self.workers[worker].job = None;
            let now = self.now_ms;
            self.schedule_wake(worker, now);
        }
    }

    fn start_job(&mut self, worker: usize) {
        let now = self.now_ms;
        let (lease, issuance) = self.workers[worker].backlog.pop_front().expect("checked");
        let setup = self.setup;
        let (w, f) = (&setup.workload, &setup.faults);
        let lease_ms = setup.lease_ms;
        self.oracle.handler_started(issuance);
        let poison = self.poison[lease.seq as usize - 1];
        let (duration, renews, kind) = if poison {
            let ms = lease_ms + self.prng.handler.between(1, lease_ms.max(1));
            (ms, false, "hangs (poison)")
        } else if self.fault(f.slow_handler) {
            let ms = self
                .prng
                .faults
                .between(lease_ms, f.slow_handler_ms_max.max(lease_ms));
            (ms, false, "slow")
        } else if self.prng.handler.chance(w.long_handler) {
            let ms = self.prng.handler.between(lease_ms / 2, 3 * lease_ms);
            (ms, w.renew, "long")
        } else {
            (
                self.prng.handler.between(1, w.handler_ms_max.max(1)),
                false,
                "",
            )
        };
        let outcome = if self.fault(f.handler_error) {
            Outcome::Error {
                kind: "HandlerError".to_string(),
                text: String::new(),
            }
        } else if self.prng.handler.chance(w.outcome_ack) {
            Outcome::Ack
        } else if self.prng.handler.chance(w.outcome_nack) {
            Outcome::Nack(String::new())
        } else if self.prng.handler.chance(w.outcome_reject) {
            Outcome::Reject("unprocessable".to_string())
        } else {
            Outcome::Ok
        };
        // A correct manual handler acks when its work is done.
        let calls = if setup.policy == AckPolicy::Manual && outcome == Outcome::Ok {
            vec![HandleCall::Ack]
        } else {
            Vec::new()
        };
        let actions = decide(setup.policy, &calls, &outcome);
        let mut end_ms = now + self.worker_duration_ms(worker, duration);
        if self.fault(f.pause) {
            let ms = self
                .prng
                .faults
                .between(lease_ms, f.pause_ms_max.max(lease_ms));
            self.workers[worker].paused_until_ms = now + ms;
            end_ms += ms;
            self.trace.line(
                now,
                format_args!("{} pauses for {ms} ms", self.name(worker)),
            );
        }
        let renew_every_ms = renews.then_some((lease_ms / 2).max(1));
        let next_renew_ms = now + self.worker_duration_ms(worker, (lease_ms / 2).max(1));
        self.trace.line(
            now,
            format_args!(
                "{} handles {issuance} E{} {} for {duration} ms{}{} → {}",
                self.name(worker),
                lease.seq,
                setup.group_names[lease.group],
                if kind.is_empty() { "" } else { ", " },
                kind,
                outcome_name(&outcome)
            ),
        );
        let before = actions
            .iter()
            .filter(|a| a.when == When::Before)
            .map(|a| a.op.clone())
            .collect();
        let after = actions
            .into_iter()
            .filter(|a| a.when != When::Before)
            .map(|a| a.op)
            .collect();
        self.workers[worker].job = Some(Job {
            lease,
            issuance,
            outcome,
            after,
            end_ms,
            finished: false,
            renew_every_ms,
            next_renew_ms,
            renew_req: None,
            lost: false,
            settles: before,
            settle_req: None,
            nacked: false,
        });
        let next = if renew_every_ms.is_some() {
            end_ms.min(next_renew_ms)
        } else {
            end_ms
        };
        self.schedule_wake(worker, next);
        self.pump(worker);
    }

    fn finish_handler(&mut self, worker: usize) {
        let now = self.now_ms;
        let job = self.workers[worker].job.as_mut().expect("checked");
        job.finished = true;
        let success = job.outcome.is_success();
        let (group, seq, issuance) = (job.lease.group, job.lease.seq, job.issuance);
        let current = !job.lost && now < job.lease.deadline_ms;
        if !job.lost {
            let after = std::mem::take(&mut job.after);
            job.settles.extend(after);
        }
        let lost = job.lost;
        self.oracle.handler_finished(issuance, success);
        if success {
            self.world.write(group, seq, current);
        }
        let name = self.name(worker);
        let ghost = if success && !current {
            " (ghost write)"
        } else {
            ""
        };
        let lost = if lost { ", lease lost: no settle" } else { "" };
        self.trace.line(
            now,
            format_args!("{name} handler {issuance} done{ghost}{lost}"),
        );
        self.pump(worker);
    }
}

fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "ok",
        Outcome::Error { .. } => "error",
        Outcome::Ack => "AckMessage",
        Outcome::Nack(_) => "NackMessage",
        Outcome::Reject(_) => "RejectMessage",
    }
}
