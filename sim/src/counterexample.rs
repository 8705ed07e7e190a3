//! A model-checker counterexample as a scripted scenario (docs/scenarios.md): what `check` writes
//! and what `leasehold replay` reproduces. The checker shows a counterexample by replaying
//! this scenario through the scenario executor and printing its timeline ([`replay`]): one
//! renderer for both engines.
//!
//! Model step `i` happens `STEP_MS` after step `i - 1`, except the step after a model expiry,
//! which happens at the same time. The model is untimed; time is chosen so that the replay sees
//! the same interleaving: a lease whose timer the model lets time reach at step `k` gets a
//! duration (on its fetch, or its last accepted renew) that puts its deadline at step `k`'s
//! time, so a request the next step delivers lands exactly at the deadline, as in the model;
//! every other lease outlives the run. The broker expires leases lazily (`expiry =
//! "on_fetch"`), as the model's broker does: at its next fetch. A lost reply
//! is a settle step with `fault = "lost_reply"`; a dropped request sends nothing; a duplicated
//! request is the same settle step twice; a crash is a `crash` step and a `restart` step at the
//! same time (the model's crashed worker is idle at once); the `worker-clock-expiry` mutant
//! gets clock offsets that keep the workers' clocks before every deadline, as the model's
//! workers' clocks are. The runtime's nack after a settle it saw fail is part of that settle's
//! step, sent and landed at once as the scenario executor does: the model's delivery of it is
//! not a step of its own (a follow-up the model delivers only after other steps, or drops, is
//! still landed at once by the replay). Each model expiry is a `wait` step at the lease's deadline, so that the
//! replay ends an oracle step right after the expiry, as the model does, and tells the lease
//! as lapsed.
//!
//! An I6 counterexample that ends in a state with no action enabled ends with a `drain` step
//! (the liveness phase), after which the replay checks I6. A lasso (I6 with cycles) marks its
//! loop's steps `repeat = true` and runs them [`LOOP_PASSES`] times; the loop's steps are
//! shifted in time so that its period is `STEP_MS ×` the model loop's length, and leases
//! whose expiry falls in the next pass get durations reaching into it.

use crate::parse;
use crate::scenario::{Config, Expect, Scenario, Step};
use crate::script::{self, Replay};
use leasehold_model::check::path::{self, Heard, Step as Told};
use leasehold_model::check::{CheckedBroker, Counterexample, LeaseModel};
use leasehold_model::{GroupIx, Invariant, Issuance, SettleError, SettleOp, Variant};
use std::collections::BTreeMap;

/// Virtual time between two model steps.
pub const STEP_MS: u64 = 1_000;

/// A lease duration that outlives any counterexample.
pub const LONG_LEASE_MS: u64 = 3_600_000;

/// In a timed model's scenario, the time of the first step: later than any worker's skew, so
/// that no worker's clock reads below zero.
pub const TIMED_START_MS: u64 = 100_000;

/// How many times a lasso's loop runs in the scenario.
pub const LOOP_PASSES: u32 = 3;

/// A worker's name: A, B, C, …
pub fn worker_name(worker: usize) -> String {
    char::from(b'A' + worker as u8).to_string()
}

/// A group's name: g1, g2, …
pub fn group_name(group: GroupIx) -> String {
    format!("g{}", group + 1)
}

fn lease_name(issuance: Issuance) -> String {
    issuance.to_string()
}

fn expect_name(result: &Result<(), SettleError>) -> String {
    match result {
        Ok(()) => "ok".to_string(),
        Err(error) => error.name().to_string(),
    }
}

/// The counterexample's steps, unrolled: the prefix, then the loop twice for a lasso (so that
/// a lease whose expiry falls in the next pass is seen), with each step's time.
struct Unrolled {
    told: Vec<Told>,
    at_ms: Vec<u64>,
    /// Steps of the scenario: `told[..written]` (prefix and one pass).
    written: usize,
    loop_start: Option<usize>,
}

fn unroll<B: CheckedBroker>(model: &LeaseModel<B>, cx: &Counterexample) -> Unrolled {
    let mut actions = cx.actions.clone();
    if let Some(start) = cx.loop_start {
        actions.extend_from_slice(&cx.actions[start..]);
    }
    let states = path::replay(model, &actions);
    let told = path::steps(model, &actions, &states);
    let mut at_ms: Vec<u64> = (0..told.len()).map(|i| STEP_MS * i as u64).collect();
    if let Some(clock) = model.clock() {
        // Timed: each step happens at the model's clock; only a tick moves it.
        let mut time_ms = TIMED_START_MS;
        for (index, step) in told.iter().enumerate() {
            at_ms[index] = time_ms;
            if matches!(step, Told::Tick { .. }) {
                time_ms += clock.tick_ms;
            }
        }
        return Unrolled {
            written: cx.len(),
            loop_start: cx.loop_start,
            told,
            at_ms,
        };
    }
    if cx.loop_start.is_none() {
        // The step after an expiry lands at the expiry's time: at the lease's deadline.
        let mut time_ms = 0;
        for (index, step) in told.iter().enumerate() {
            at_ms[index] = time_ms;
            if !matches!(step, Told::Expire { .. }) {
                time_ms += STEP_MS;
            }
        }
    }
    if let Some(start) = cx.loop_start {
        // The replay's period is the loop block's span plus the gap before it: shift the
        // block so that it equals the model loop's length (see the module documentation).
        let length = cx.len() - start;
        let emits = |i: usize| {
            !matches!(
                told[i],
                Told::Handle { .. }
                    | Told::Renew { .. }
                    | Told::Drop { .. }
                    | Told::Duplicate { .. }
            )
        };
        let previous = (0..start).rev().find(|&i| emits(i)).map_or(0, |i| at_ms[i]);
        let last = (start..start + length)
            .rev()
            .find(|&i| emits(i))
            .map_or(at_ms[start], |i| at_ms[i]);
        let shift = STEP_MS * length as u64 + previous;
        for (i, at) in at_ms.iter_mut().enumerate().skip(start) {
            let pass = ((i - start) / length) as u64;
            *at = STEP_MS * (start + (i - start) % length) as u64 + shift - last
                + pass * STEP_MS * length as u64;
        }
    }
    Unrolled {
        written: cx.len(),
        loop_start: cx.loop_start,
        told,
        at_ms,
    }
}

/// For each step that sets a lease's deadline and whose lease the path expires: the lease
/// duration that puts the deadline at the expiry's time.
fn durations(unrolled: &Unrolled) -> BTreeMap<usize, u64> {
    let mut deadline_set: BTreeMap<Issuance, usize> = BTreeMap::new();
    let mut durations = BTreeMap::new();
    for (index, step) in unrolled.told.iter().enumerate() {
        match step {
            Told::Fetch {
                lease: Some(lease), ..
            }
            | Told::Deliver {
                lease,
                op: SettleOp::Renew { .. },
                result: Ok(()),
                ..
            } => {
                deadline_set.insert(*lease, index);
            }
            Told::Expire {
                lease: Some(lease), ..
            } => {
                if let Some(&set) = deadline_set.get(lease) {
                    durations
                        .entry(set)
                        .or_insert(unrolled.at_ms[index] - unrolled.at_ms[set]);
                }
            }
            _ => {}
        }
    }
    durations
}

/// The scenario replaying `cx`.
pub fn scenario<B: CheckedBroker>(model: &LeaseModel<B>, cx: &Counterexample) -> Scenario {
    let config = model.config();
    let unrolled = unroll(model, cx);
    // Timed, every lease lasts the configured duration: the broker computes its deadline.
    let durations = match model.clock() {
        Some(_) => BTreeMap::new(),
        None => durations(&unrolled),
    };
    let renew_ms = model.clock().map_or(LONG_LEASE_MS, |clock| clock.lease_ms);
    let follow_ups = follow_up_deliveries(&unrolled.told[..unrolled.written]);
    let mut out = Vec::new();
    for index in 0..unrolled.written {
        if follow_ups.contains(&index) {
            // The scenario's settle step already sends and lands the runtime's nack.
            continue;
        }
        let repeat = unrolled.loop_start.is_some_and(|start| index >= start);
        let base = Step {
            at_ms: unrolled.at_ms[index],
            repeat,
            ..Step::default()
        };
        let duration = durations.get(&index).copied();
        out.extend(steps_of(
            &unrolled.told[index],
            base,
            duration,
            renew_ms,
            config.group_count,
        ));
    }
    let last_ms = out.last().map_or(0, |s| s.at_ms);
    let mut end_ms = last_ms + STEP_MS;
    if cx.invariant == Invariant::I6 && cx.loop_start.is_none() {
        // The model's path ends in a state with no action enabled; the replay's liveness
        // phase (faults healed, workers draining) must then find the event stuck.
        out.push(Step {
            at_ms: end_ms,
            op: "drain".to_string(),
            ..Step::default()
        });
        end_ms += STEP_MS;
    }
    if let Some(start) = cx.loop_start {
        end_ms += STEP_MS * (cx.len() - start) as u64 * u64::from(LOOP_PASSES);
    }
    Scenario {
        steps: out,
        ..frame(model, cx, end_ms)
    }
}

/// Everything of `cx`'s scenario but its steps; `end_ms` is after its last step.
fn frame<B: CheckedBroker>(model: &LeaseModel<B>, cx: &Counterexample, end_ms: u64) -> Scenario {
    let config = model.config();
    let workers: Vec<String> = (0..config.worker_count).map(worker_name).collect();
    let clock_offset_ms = if let Some(clock) = model.clock() {
        // The timed model's skewed workers: A behind, B ahead.
        (0..model.fixed_workers())
            .map(|worker| {
                let offset = i64::from(model.clock_of(worker)) * clock.skew_ms as i64;
                (worker_name(worker), offset)
            })
            .collect()
    } else if config.variant == Variant::WorkerClockExpiry {
        workers
            .iter()
            .map(|w| (w.clone(), -(end_ms as i64)))
            .collect()
    } else {
        BTreeMap::new()
    };
    let kind = if cx.loop_start.is_some() {
        "lasso counterexample"
    } else {
        "shortest counterexample"
    };
    Scenario {
        name: format!(
            "{} breaks {} ({kind} found by check)",
            config.variant, cx.invariant
        ),
        variant: config.variant.name().to_string(),
        note: Some(format!(
            "written by `leasehold check {}`; {} model steps{}",
            config,
            cx.len(),
            cx.loop_start
                .map(|s| format!(", the last {} of them a loop", cx.len() - s))
                .unwrap_or_default()
        )),
        config: Config {
            groups: (0..config.group_count).map(group_name).collect(),
            events: config.event_count,
            workers,
            lease_ms: model.clock().map_or(LONG_LEASE_MS, |clock| clock.lease_ms),
            max_attempts: config.max_attempts,
            ack_policy: config.policy.name().to_string(),
            clock_offset_ms,
            // The model's broker expires leases lazily (at its next fetch).
            expiry: Some("on_fetch".to_string()),
        },
        seed: None,
        draws: None,
        faults: None,
        workload: None,
        steps: Vec::new(),
        expect: Some(Expect {
            violated: Some(cx.invariant.id().to_string()),
            loop_passes: cx.loop_start.map(|_| LOOP_PASSES),
            ..Expect::default()
        }),
    }
}

/// The scenario steps of one model step (none for a step the replay does not see: a handler
/// run or a renew only sends a request, which is a step when the broker applies it; a dropped
/// request never arrives).
fn steps_of(
    told: &Told,
    base: Step,
    duration: Option<u64>,
    renew_ms: u64,
    groups: usize,
) -> Vec<Step> {
    let worker_step = |worker: usize, op: &str| Step {
        worker: Some(worker_name(worker)),
        op: op.to_string(),
        expect: Some("ok".to_string()),
        ..base.clone()
    };
    match told {
        Told::Fetch {
            worker,
            group,
            lease,
            ..
        } => vec![Step {
            bind: lease.map(lease_name),
            group: (groups > 1).then(|| group_name(*group)),
            lease_ms: duration,
            expect: Some(if lease.is_some() { "ok" } else { "empty" }.to_string()),
            ..worker_step(*worker, "fetch")
        }],
        Told::Deliver {
            worker,
            lease,
            op,
            result,
            heard,
            ..
        } => vec![settle_step(
            *worker,
            *lease,
            op,
            result,
            *heard,
            duration.unwrap_or(renew_ms),
            base,
        )],
        Told::Crash { worker, .. } => vec![
            worker_step(*worker, "crash"),
            worker_step(*worker, "restart"),
        ],
        Told::BrokerRestart => vec![Step {
            op: "broker_restart".to_string(),
            ..base
        }],
        // The lease's deadline is this step's time: the oracle's lease ends before this
        // step, as in the model; the broker expires it at its next fetch. A wait changes
        // nothing else, and tells the lease as lapsed.
        Told::Expire { .. } => vec![Step {
            op: "wait".to_string(),
            ..base
        }],
        // The clock's advance is the next step's time.
        Told::Handle { .. }
        | Told::Renew { .. }
        | Told::Drop { .. }
        | Told::Duplicate { .. }
        | Told::Tick { .. } => Vec::new(),
    }
}

fn settle_step(
    worker: usize,
    lease: Issuance,
    op: &SettleOp,
    result: &Result<(), SettleError>,
    heard: Heard,
    extend_ms: u64,
    base: Step,
) -> Step {
    let mut step = Step {
        worker: Some(worker_name(worker)),
        op: op.name().to_string(),
        lease: Some(lease_name(lease)),
        expect: Some(expect_name(result)),
        ..base
    };
    match op {
        SettleOp::Nack { delay_ms, reason } => {
            step.delay_ms = (*delay_ms != 0).then_some(*delay_ms);
            step.reason = reason.map(|r| r.to_string());
        }
        SettleOp::Reject { reason } => step.reason = Some(reason.to_string()),
        SettleOp::Renew { .. } => step.extend_ms = Some(extend_ms),
        SettleOp::Ack => {}
    }
    if heard == Heard::Lost {
        step.fault = Some("lost_reply".to_string());
        step.expect = Some("ambiguous".to_string());
    }
    step
}

/// The steps that deliver the runtime's own nack after a settle it saw fail (`then_nack`): a
/// scenario's settle step sends that nack itself, at once, so the model's delivery of it is
/// not a step of its own (written out, the broker would be sent the nack twice).
fn follow_up_deliveries(told: &[Told]) -> std::collections::BTreeSet<usize> {
    let mut out = std::collections::BTreeSet::new();
    for (index, step) in told.iter().enumerate() {
        let (Told::Deliver {
            worker,
            lease,
            then_nack: true,
            ..
        }
        | Told::Drop {
            worker,
            lease,
            then_nack: true,
            ..
        }) = step
        else {
            continue;
        };
        let delivered = told.iter().enumerate().skip(index + 1).find(|(_, later)| {
            matches!(
                later,
                Told::Deliver { worker: w, lease: l, op: SettleOp::Nack { .. }, .. }
                    if w == worker && l == lease
            )
        });
        if let Some((later, _)) = delivered {
            out.insert(later);
        }
    }
    out
}

/// The scenario of `cx` as TOML text, parsed back and replayed on the model's broker (the
/// pure broker, or the user's broker the check explored): the timeline the checker prints.
/// An error names what did not round-trip (a bug).
pub fn replay<B: CheckedBroker>(
    model: &LeaseModel<B>,
    cx: &Counterexample,
) -> Result<(String, Replay), String> {
    let scenario = scenario(model, cx);
    let text = toml::to_string(&scenario).map_err(|e| format!("cannot write the scenario: {e}"))?;
    let file = format!("{}-{}.toml", model.config().variant, cx.invariant.id());
    let script = parse::parse(&text, &file).map_err(|e| e.to_string())?;
    let replay = script::run(&script, B::with_config(&script.setup.broker_config()));
    Ok((text, replay))
}
