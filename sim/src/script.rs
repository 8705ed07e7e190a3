//! Running a scripted scenario on the engine and checking what it expects.
//!
//! [`run`] is generic over the broker under test: any [`Backend`] replays the same file. Each
//! step runs at its `at_ms` (due expiries and in-flight messages first), its requests travel
//! instantly unless the step injects a fault, and the oracle checks the broker after it. The
//! [`Replay`] holds the trace, the timeline, every step's result against its `expect`, the
//! `[expect]` block's verdict, and whether the whole run matched (docs/cli.md: a file that
//! expects `violated = "I1"` and reproduces it matched; a file with no `[expect]` matches only
//! when every invariant held).

use crate::engine::{Delivery, Engine, HandlerRun, Setup};
use crate::scenario::Scenario;
use crate::timeline::{self, Timeline};
use crate::trace::{Fault, Found, Trace, WorkerIx};
use leasehold_model::{
    Backend, GroupIx, Invariant, Issuance, Ms, Outcome, Receipt, SettleError, SettleOp, Status,
    Variant,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many times a lasso's loop runs at least (once shows nothing repeats) …
pub const LOOP_PASSES_MIN: u32 = 2;
/// … and at most.
pub const LOOP_PASSES_MAX: u32 = 1_000;
/// How many times a lasso's loop runs when `[expect]` does not say.
pub const LOOP_PASSES_DEFAULT: u32 = 3;

/// The names a fetch with `bind = name` and `limit` gives its leases: `name`, then `name-2`,
/// `name-3`, …
pub fn bind_names(name: &str, limit: usize) -> Vec<String> {
    (1..=limit)
        .map(|i| {
            if i == 1 {
                name.to_string()
            } else {
                format!("{name}-{i}")
            }
        })
        .collect()
}

/// A validated scenario, ready to run (built by the scenario parser, `parse::parse`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The file's display name.
    pub file: String,
    /// The file as written.
    pub scenario: Scenario,
    /// The variant.
    pub variant: Variant,
    /// The engine's configuration.
    pub setup: Setup,
    /// Events published at time 0.
    pub events: u32,
    /// The steps, resolved.
    pub steps: Vec<ScriptStep>,
    /// The `[expect]` block.
    pub expect: Expectations,
}

/// One resolved step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptStep {
    /// Its index in the file (`step[i]`).
    pub index: usize,
    /// When it runs.
    pub at_ms: Ms,
    /// The acting worker.
    pub worker: Option<WorkerIx>,
    /// What it does.
    pub op: Op,
    /// The fault injected on its requests.
    pub fault: Fault,
    /// The expected result.
    pub expect: Option<String>,
    /// Its line in the file.
    pub line: usize,
    /// It belongs to a lasso's loop (see [`crate::scenario`]).
    pub repeat: bool,
    /// Its requests land before the broker's expiries due at `at_ms`.
    pub before_timer: bool,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Fetch up to `limit` leases of `group`; bind the first to `bind` (then `bind-2`, …).
    Fetch {
        /// The group.
        group: GroupIx,
        /// How many.
        limit: usize,
        /// Lease duration (default: the config's).
        lease_ms: Option<Ms>,
        /// The name of the first lease.
        bind: Option<String>,
    },
    /// A settle or renew sent by the worker itself.
    Settle {
        /// The lease name.
        lease: String,
        /// What.
        op: SettleOp,
        /// A forged receipt.
        receipt: Option<u64>,
    },
    /// A handler run under the consumer runtime.
    Handle {
        /// The lease name.
        lease: String,
        /// The handler.
        run: HandlerRun,
    },
    /// The worker crashes.
    Crash,
    /// The worker restarts.
    Restart,
    /// The worker stalls.
    Pause {
        /// How long.
        for_ms: Ms,
    },
    /// One more event.
    Publish,
    /// The broker restarts.
    BrokerRestart,
    /// Time reaches the step's `at_ms` and nothing else happens: the step's checks run, and
    /// a lease whose deadline passed while the broker (expiring lazily) still holds its
    /// record is told as lapsed.
    Wait,
    /// The liveness phase.
    Drain {
        /// The handler's outcome.
        default: Outcome,
        /// Per-event outcomes, by `seq - 1`.
        per_event: Vec<Outcome>,
        /// The bound on the phase.
        liveness_ms_max: Ms,
    },
}

/// The `[expect]` block, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectations {
    /// Whether the file has an `[expect]` block.
    pub present: bool,
    /// The invariant the run must break (`None`: every invariant must hold).
    pub violated: Option<Invariant>,
    /// Frontier at the end (single group).
    pub frontier: Option<u32>,
    /// Dead letters at the end.
    pub dead_letters: Option<u32>,
    /// Handler runs.
    pub handler_calls: Option<u32>,
    /// Handler runs in order, `E<seq>#<delivery>`.
    pub handler_runs: Option<Vec<String>>,
    /// Unsettled records at the end.
    pub pending: Option<u32>,
    /// Dead-letter reasons, by group then seq.
    pub dead_letter_reasons: Option<Vec<String>>,
    /// How many times a lasso's loop runs (`None`: the default).
    pub loop_passes: Option<u32>,
    /// The run's trace hash.
    pub trace_hash: Option<u64>,
}

/// One step's result against its `expect`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepResult {
    /// `step[i]`.
    pub index: usize,
    /// The `tN` of its line, if it has one.
    pub t: Option<usize>,
    /// What the step returned (`ok`, `empty`, `stale_lease`, …).
    pub actual: String,
    /// What the file expected.
    pub expected: Option<String>,
}

impl StepResult {
    /// Whether the result matches the expectation (or nothing was expected).
    pub fn matched(&self) -> bool {
        match &self.expected {
            None => true,
            Some(expected) => *expected == self.actual,
        }
    }
}

/// A replayed scenario.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    /// The scenario file's display name.
    pub file: String,
    /// The replay recipe: variant and config, one line.
    pub header: String,
    /// The timeline, `tN` lines.
    pub timeline: Vec<String>,
    /// Every violation found, with the `tN` and step where it was found.
    pub violations: Vec<ViolationReport>,
    /// Each step's result.
    pub steps: Vec<StepResult>,
    /// Every expectation that failed, one line each.
    pub mismatches: Vec<String>,
    /// Notes that are not failures (e.g. the at-most-once policies' documented losses).
    pub notes: Vec<String>,
    /// The trace hash: a rolling hash of the binary encoding of every event of the run.
    pub trace_hash: String,
    /// Whether the run matched the file.
    pub matched: bool,
    /// The full trace.
    #[serde(skip)]
    pub trace: Trace,
}

/// A violation, as reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ViolationReport {
    /// `I1`.
    pub id: &'static str,
    /// `stale-never-counts`.
    pub name: &'static str,
    /// The timeline line at which it was found.
    pub t: Option<usize>,
    /// The step at which it was found.
    pub step: Option<usize>,
    /// What the oracle saw.
    pub detail: String,
}

impl ViolationReport {
    fn new(found: &Found, timeline: &Timeline) -> ViolationReport {
        let invariant = found.invariant();
        ViolationReport {
            id: invariant.id(),
            name: invariant.name(),
            t: timeline.t_of(found.line),
            step: found.step,
            detail: timeline.told(found),
        }
    }
}

impl std::fmt::Display for ViolationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "violated: {} {}", self.id, self.name)?;
        match (self.t, self.step) {
            (Some(t), Some(step)) => write!(f, " at t{t} (step[{step}])")?,
            (Some(t), None) => write!(f, " at t{t}")?,
            (None, Some(step)) => write!(f, " at step[{step}]")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.detail)
    }
}

/// The replay recipe line: variant and configuration.
pub fn header(script: &Script) -> String {
    let s = &script.setup;
    let mut text = format!(
        "replay {}: variant {}, groups [{}], workers [{}], events {}, lease_ms {}, max_attempts {}, ack_policy {}",
        script.file,
        s.variant,
        s.groups.join(", "),
        s.workers.join(", "),
        script.events,
        s.lease_ms,
        s.max_attempts,
        s.ack_policy
    );
    let offsets: Vec<String> = s
        .clock_offset_ms
        .iter()
        .enumerate()
        .filter(|(_, &o)| o != 0)
        .map(|(w, o)| format!("{}={o}", s.workers[w]))
        .collect();
    if !offsets.is_empty() {
        text.push_str(&format!(", clock_offset_ms [{}]", offsets.join(", ")));
    }
    if s.expiry != crate::engine::Expiry::AtDeadline {
        text.push_str(&format!(", expiry {}", s.expiry.name()));
    }
    text
}

/// Runs `script` against `backend` (fresh, with no events).
pub fn run<B: Backend>(script: &Script, backend: B) -> Replay {
    let mut engine = Engine::new(backend, script.setup.clone());
    engine.names_any_lease();
    engine.publish_initial(script.events);
    let mut names: BTreeMap<String, Issuance> = BTreeMap::new();
    let mut results = Vec::new();
    let split = script
        .steps
        .iter()
        .position(|s| s.repeat)
        .unwrap_or(script.steps.len());
    let (prefix, looped) = script.steps.split_at(split);
    for step in prefix {
        results.push(run_one(&mut engine, step, &mut names));
    }
    let lasso = (!looped.is_empty()).then(|| {
        let passes = script.expect.loop_passes.unwrap_or(LOOP_PASSES_DEFAULT);
        let previous_ms = prefix.last().map_or(0, |s| s.at_ms);
        run_loop(
            &mut engine,
            looped,
            previous_ms,
            passes,
            &mut names,
            &mut results,
        )
    });
    engine.set_step(None);
    let end = engine.now_ms();
    engine.run_until(end);
    engine.end_step();
    let outcome = EndState::of(&engine);
    let trace_hash = engine.trace_hash();
    let trace = engine.into_trace();
    let timeline = timeline::render(&trace);
    let steps = results
        .into_iter()
        .map(|(index, expected, first_line, actual)| StepResult {
            index,
            t: (first_line..trace.lines.len())
                .find(|&i| trace.lines[i].step == Some(index))
                .and_then(|i| timeline.t_of(Some(i))),
            actual,
            expected,
        })
        .collect::<Vec<_>>();
    let mut violations: Vec<ViolationReport> = trace
        .violations
        .iter()
        .map(|found| ViolationReport::new(found, &timeline))
        .collect();
    let no_cycle = lasso.and_then(|lasso| lasso.report(&steps, &mut violations));
    let mut mismatches = mismatches(script, &steps, &violations, &outcome);
    mismatches.extend(no_cycle);
    mismatches.extend(trace_hash_mismatch(script.expect.trace_hash, trace_hash));
    Replay {
        file: script.file.clone(),
        header: header(script),
        trace_hash: format!("{trace_hash:016x}"),
        matched: mismatches.is_empty(),
        notes: outcome.notes(script),
        timeline: timeline.lines,
        violations,
        steps,
        mismatches,
        trace,
    }
}

/// One step's index, expectation, first trace line and result.
type Ran = (usize, Option<String>, usize, String);

fn run_one<B: Backend>(
    engine: &mut Engine<B>,
    step: &ScriptStep,
    names: &mut BTreeMap<String, Issuance>,
) -> Ran {
    engine.set_step(Some(step.index));
    // The leases a wait sees lapse: live before time moves to the step.
    let lapsing = match &step.op {
        Op::Wait => engine.lapsing(step.at_ms),
        _ => Vec::new(),
    };
    if step.before_timer {
        engine.run_before(step.at_ms);
    } else {
        engine.run_until(step.at_ms);
    }
    let first_line = engine.trace().lines.len();
    let actual = run_step(engine, step, names, &lapsing);
    engine.end_step();
    (step.index, step.expect.clone(), first_line, actual)
}

/// What running a lasso's loop showed.
enum Lasso {
    /// Every pass came back to where the first began, with an event unsettled: the detail.
    Cycle(String),
    /// It did not: why.
    NoCycle(String),
}

impl Lasso {
    /// Adds the I6 violation a cycle shows to `violations`; returns the mismatch when the
    /// loop is not a cycle.
    fn report(self, steps: &[StepResult], violations: &mut Vec<ViolationReport>) -> Option<String> {
        match self {
            Lasso::Cycle(detail) => {
                let last = steps.last().expect("a loop has steps");
                violations.push(ViolationReport {
                    id: Invariant::I6.id(),
                    name: Invariant::I6.name(),
                    t: last.t,
                    step: Some(last.index),
                    detail,
                });
                None
            }
            Lasso::NoCycle(why) => Some(why),
        }
    }
}

/// What a pass must leave as it found it: every record's status (and dead-letter reason)
/// and every group's frontier.
fn snapshot<B: Backend>(engine: &Engine<B>) -> Vec<(Status, Option<String>, u32)> {
    let backend = engine.backend();
    let groups = engine.setup().groups.len();
    let mut out = Vec::new();
    for group in 0..groups {
        for seq in 1..=backend.event_count() {
            let (status, reason) = backend.status(group, seq);
            out.push((status, reason, backend.frontier(group)));
        }
    }
    out
}

/// Runs the steps marked `repeat` `passes` times (see [`crate::scenario`]'s *Lassos*).
fn run_loop<B: Backend>(
    engine: &mut Engine<B>,
    looped: &[ScriptStep],
    previous_ms: Ms,
    passes: u32,
    names: &mut BTreeMap<String, Issuance>,
    results: &mut Vec<Ran>,
) -> Lasso {
    let (first, last) = (&looped[0], &looped[looped.len() - 1]);
    let period_ms = (last.at_ms - first.at_ms + first.at_ms.saturating_sub(previous_ms)).max(1);
    let start = snapshot(engine);
    let mut cycle = true;
    for pass in 0..u64::from(passes) {
        for step in looped {
            let shifted = ScriptStep {
                at_ms: step.at_ms + pass * period_ms,
                ..step.clone()
            };
            results.push(run_one(engine, &shifted, names));
        }
        cycle &= snapshot(engine) == start;
    }
    let groups = &engine.setup().groups;
    let stuck = start
        .iter()
        .enumerate()
        .find(|(_, (status, _, _))| !matches!(status, Status::Acked | Status::DeadLettered));
    let events = engine.backend().event_count().max(1) as usize;
    match (cycle, stuck) {
        (true, Some((index, (status, _, _)))) => Lasso::Cycle(format!(
            "the {} steps marked repeat (step[{}] to step[{}]) ran {passes} times, each pass leaving every record and frontier as the first found them, with event {} of group {} still {status:?}: they can repeat forever (a lasso)",
            looped.len(),
            first.index,
            last.index,
            index % events + 1,
            groups[index / events],
        )),
        (true, None) => Lasso::NoCycle(
            "the steps marked repeat form a cycle, but every event is settled: not a lasso"
                .to_string(),
        ),
        (false, _) => Lasso::NoCycle(format!(
            "the steps marked repeat (step[{}] to step[{}]) do not form a cycle: a pass changed a record's status or a frontier",
            first.index, last.index
        )),
    }
}

/// What the end of a run looks like, for `[expect]`.
struct EndState {
    frontier: Vec<u32>,
    dead_letter_reasons: Vec<String>,
    pending: u32,
    handler_runs: Vec<String>,
    acked_unprocessed: u64,
}

impl EndState {
    fn of<B: Backend>(engine: &Engine<B>) -> EndState {
        let backend = engine.backend();
        let groups = engine.setup().groups.len();
        let mut dead_letter_reasons = Vec::new();
        let mut pending = 0;
        for group in 0..groups {
            for seq in 1..=backend.event_count() {
                match backend.status(group, seq) {
                    (Status::DeadLettered, reason) => {
                        dead_letter_reasons.push(reason.unwrap_or_default())
                    }
                    (Status::Available | Status::Leased, _) => pending += 1,
                    _ => {}
                }
            }
        }
        EndState {
            frontier: (0..groups).map(|g| backend.frontier(g)).collect(),
            dead_letter_reasons,
            pending,
            handler_runs: handler_runs(engine.trace()),
            acked_unprocessed: engine.oracle().acked_unprocessed(),
        }
    }

    fn notes(&self, script: &Script) -> Vec<String> {
        use leasehold_model::AckPolicy;
        let policy = script.setup.ack_policy;
        let at_most_once = matches!(policy, AckPolicy::AckFirst | AckPolicy::AckAlways);
        if at_most_once && self.acked_unprocessed > 0 {
            vec![format!(
                "note: {} event(s) acked without a completed handler run: {policy} is at most once by design (its documented guarantee, not a protocol violation)",
                self.acked_unprocessed
            )]
        } else {
            Vec::new()
        }
    }
}

/// Every handler run in order, as `E<seq>#<delivery>`.
fn handler_runs(trace: &Trace) -> Vec<String> {
    trace
        .lines
        .iter()
        .filter_map(|line| match line.kind {
            crate::trace::LineKind::Handle { issuance } => {
                let lease = trace.lease(issuance).lease;
                Some(format!("E{}#{}", lease.seq, lease.attempt))
            }
            _ => None,
        })
        .collect()
}

fn result_name(result: &Result<(), SettleError>) -> String {
    match result {
        Ok(()) => "ok".to_string(),
        Err(error) => error.name().to_string(),
    }
}

fn run_step<B: Backend>(
    engine: &mut Engine<B>,
    step: &ScriptStep,
    names: &mut BTreeMap<String, Issuance>,
    lapsing: &[Issuance],
) -> String {
    let worker = step.worker.unwrap_or(0);
    match &step.op {
        Op::Fetch { .. } => fetch_step(engine, step, names),
        Op::Settle { .. } | Op::Handle { .. } => settle_step(engine, step, names),
        Op::Crash => {
            engine.crash(worker);
            "ok".to_string()
        }
        Op::Restart => {
            engine.restart(worker);
            "ok".to_string()
        }
        Op::Pause { for_ms } => {
            engine.pause(worker, *for_ms);
            "ok".to_string()
        }
        Op::Publish => {
            engine.publish();
            "ok".to_string()
        }
        Op::BrokerRestart => {
            engine.broker_restart();
            "ok".to_string()
        }
        Op::Wait => {
            engine.tell_lapsed(lapsing);
            "ok".to_string()
        }
        Op::Drain {
            default,
            per_event,
            liveness_ms_max,
        } => {
            let handler = |_group, seq: u32, _attempt| {
                let outcome = per_event
                    .get(seq as usize - 1)
                    .cloned()
                    .unwrap_or_else(|| default.clone());
                HandlerRun::of(outcome)
            };
            let report = engine.drain(*liveness_ms_max, &handler);
            if report.settled { "ok" } else { "unsettled" }.to_string()
        }
    }
}

/// A `fetch` step: binds the leases it issued to their names (and keeps them nameable).
fn fetch_step<B: Backend>(
    engine: &mut Engine<B>,
    step: &ScriptStep,
    names: &mut BTreeMap<String, Issuance>,
) -> String {
    let Op::Fetch {
        group,
        limit,
        lease_ms,
        bind,
    } = &step.op
    else {
        unreachable!("a fetch step")
    };
    let worker = step.worker.unwrap_or(0);
    let wanted = bind
        .as_deref()
        .map(|b| bind_names(b, *limit))
        .unwrap_or_default();
    let before = engine.trace().leases.len();
    let result = engine.fetch(worker, *group, *limit, *lease_ms, &wanted, step.fault);
    let issued: Vec<(String, Issuance)> = engine
        .trace()
        .leases
        .range(before..usize::MAX)
        .map(|info| (info.name.clone(), info.issuance))
        .collect();
    for (name, issuance) in issued {
        // A step may name the lease at any later time: keep it nameable.
        engine.pin(issuance);
        names.insert(name, issuance);
    }
    match result {
        Ok(leases) if leases.is_empty() => "empty".to_string(),
        Ok(_) => "ok".to_string(),
        Err(error) => error.name().to_string(),
    }
}

/// A settle or `handle` step: what the worker saw (a handler run's first failed settle).
fn settle_step<B: Backend>(
    engine: &mut Engine<B>,
    step: &ScriptStep,
    names: &BTreeMap<String, Issuance>,
) -> String {
    let (now, worker) = (step.at_ms, step.worker.unwrap_or(0));
    let delivery = Delivery {
        before_timer: step.before_timer,
        ..Delivery::with_fault(step.fault)
    };
    let (Op::Settle { lease, .. } | Op::Handle { lease, .. }) = &step.op else {
        unreachable!("a settle or handle step")
    };
    let Some(&issuance) = names.get(lease) else {
        // Bound by a fetch that issued nothing: there is no lease to send.
        return "invalid".to_string();
    };
    if let Op::Settle { op, receipt, .. } = &step.op {
        let forged = receipt.map(|r| {
            let mut copy = engine.trace().lease(issuance).lease;
            copy.receipt = Some(Receipt(r));
            copy
        });
        let id = engine.send(worker, issuance, forged, *op, delivery);
        engine.run_until(now);
        return engine
            .trace()
            .request(id)
            .result()
            .map_or_else(|| "ambiguous".to_string(), |r| result_name(&r));
    }
    let Op::Handle { run, .. } = &step.op else {
        unreachable!("a handle step")
    };
    let first = engine.trace().requests.len();
    engine.handle(worker, issuance, run.clone(), delivery);
    engine.run_until(now);
    let trace = engine.trace();
    trace
        .requests
        .range(first..usize::MAX)
        .filter(|r| r.worker == worker && r.issuance == issuance)
        .filter_map(|r| r.result())
        .find(Result::is_err)
        .map_or_else(|| "ok".to_string(), |r| result_name(&r))
}

fn mismatches(
    script: &Script,
    steps: &[StepResult],
    violations: &[ViolationReport],
    outcome: &EndState,
) -> Vec<String> {
    let mut out = Vec::new();
    for step in steps.iter().filter(|s| !s.matched()) {
        let at = step.t.map(|t| format!(" (t{t})")).unwrap_or_default();
        out.push(format!(
            "step[{}]{at}: expected {}, got {}",
            step.index,
            step.expected.as_deref().unwrap_or("?"),
            step.actual
        ));
    }
    let expect = &script.expect;
    match expect.violated {
        Some(invariant) => {
            if !violations.iter().any(|v| v.id == invariant.id()) {
                out.push(format!("expected {invariant} to be violated, but it held"));
            }
        }
        None => {
            for v in violations {
                let why = if expect.present {
                    "[expect] says every invariant holds"
                } else {
                    "the file has no [expect]: every invariant must hold"
                };
                out.push(format!("{} {} was violated ({why})", v.id, v.name));
            }
        }
    }
    end_state_mismatches(expect, outcome, &mut out);
    out
}

/// A pinned trace hash (`[expect] trace_hash`) the run did not produce: the run is not the
/// one the file was written for.
pub fn trace_hash_mismatch(expected: Option<u64>, actual: u64) -> Option<String> {
    let expected = expected.filter(|&expected| expected != actual)?;
    Some(format!(
        "expected trace_hash = {expected:016x}, got {actual:016x}: this is not the run the file pins (another build, a backend that behaves otherwise, or a change to the protocol)"
    ))
}

/// The `[expect]` fields about the end of the run that do not match it.
fn end_state_mismatches(expect: &Expectations, outcome: &EndState, out: &mut Vec<String>) {
    let mut check = |what: &str, expected: Option<String>, actual: String| {
        if let Some(expected) = expected {
            if expected != actual {
                out.push(format!("expected {what} = {expected}, got {actual}"));
            }
        }
    };
    check(
        "frontier",
        expect.frontier.map(|f| f.to_string()),
        outcome.frontier.first().copied().unwrap_or(0).to_string(),
    );
    check(
        "dead_letters",
        expect.dead_letters.map(|d| d.to_string()),
        outcome.dead_letter_reasons.len().to_string(),
    );
    check(
        "pending",
        expect.pending.map(|p| p.to_string()),
        outcome.pending.to_string(),
    );
    check(
        "handler_calls",
        expect.handler_calls.map(|c| c.to_string()),
        outcome.handler_runs.len().to_string(),
    );
    check(
        "handler_runs",
        expect.handler_runs.as_ref().map(|r| format!("{r:?}")),
        format!("{:?}", outcome.handler_runs),
    );
    check(
        "dead_letter_reasons",
        expect
            .dead_letter_reasons
            .as_ref()
            .map(|r| format!("{r:?}")),
        format!("{:?}", outcome.dead_letter_reasons),
    );
}

impl Replay {
    /// The human report: the recipe, the timeline, violations, notes, mismatches, verdict.
    pub fn text(&self) -> String {
        self.text_reproduced_by(&format!("leasehold replay {}", self.file))
    }

    /// [`Replay::text`], its verdict naming `command` as the one that reproduces the run (a
    /// replay on another backend names its flags).
    pub fn text_reproduced_by(&self, command: &str) -> String {
        let mut out = format!("{}\n", self.header);
        for line in &self.timeline {
            out.push_str(line);
            out.push('\n');
        }
        for v in &self.violations {
            out.push_str(&format!("{v}\n"));
        }
        for note in &self.notes {
            out.push_str(note);
            out.push('\n');
        }
        for m in &self.mismatches {
            out.push_str(&format!("mismatch: {m}\n"));
        }
        out.push_str(&format!("trace hash {}\n", self.trace_hash));
        if self.matched {
            out.push_str("ok: the run matched the file's expectations\n");
        } else {
            out.push_str(&format!(
                "FAILED: the run did not match the file's expectations (reproduce: {command})\n"
            ));
        }
        out
    }

    /// Whether the run broke `invariant`.
    pub fn violated(&self, invariant: Invariant) -> bool {
        self.violations.iter().any(|v| v.id == invariant.id())
    }
}
