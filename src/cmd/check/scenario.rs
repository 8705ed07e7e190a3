//! A counterexample as a scripted scenario file (SPEC section 6), for `leasehold replay`.
//!
//! Model step `i` happens at `at_ms = STEP_MS * i`. The model is untimed; time is chosen so
//! that the replay sees the same interleaving: a lease the model expires at step `k` gets a
//! duration (on its fetch, or its last accepted renew) that puts its deadline at step `k`'s
//! time, so it expires before the next step; every other lease outlives the run. A lost reply
//! is a settle step with `fault = "lost_reply"`; a dropped request sends nothing; a duplicated
//! request is the same settle step twice; the `worker-clock-expiry` mutant gets clock offsets
//! that keep the workers' clocks before every deadline, as the model's workers' clocks are.
//! An I6 counterexample ends in a state where no action is enabled; its scenario ends with a
//! `drain` step (the liveness phase), after which the replay checks I6. Each model expiry is a
//! zero-length `pause` step at the lease's deadline, so that the replay ends an oracle step
//! right after the expiry, as the model does.

use leasehold_model::check::trace::{group_name, steps, worker_name, Heard, Step as Told};
use leasehold_model::check::{Counterexample, LeaseModel};
use leasehold_model::{Invariant, SettleError, SettleOp, Variant};
use leasehold_sim::scenario::{Config, Expect, Scenario, Step};
use std::collections::BTreeMap;

/// Virtual time between two model steps.
pub const STEP_MS: u64 = 1_000;

/// A lease duration that outlives any counterexample.
pub const LONG_LEASE_MS: u64 = 3_600_000;

fn lease_name(issuance: leasehold_model::Issuance) -> String {
    issuance.to_string()
}

fn expect_name(result: &Result<(), SettleError>) -> String {
    match result {
        Ok(()) => "ok".to_string(),
        Err(error) => error.name().to_string(),
    }
}

/// The scenario replaying `cx`.
pub fn scenario(model: &LeaseModel, cx: &Counterexample) -> Scenario {
    let config = model.config();
    let told = steps(model, cx);
    let at = |index: usize| STEP_MS * index as u64;
    // For each lease that expires on the path: the step that last set its deadline → the
    // step at which it must expire.
    let mut deadline_set: BTreeMap<_, usize> = BTreeMap::new();
    let mut expires_at: BTreeMap<usize, usize> = BTreeMap::new();
    for (index, step) in told.iter().enumerate() {
        match step {
            Told::Fetch { lease, .. } => {
                deadline_set.insert(*lease, index);
            }
            Told::Deliver {
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
                    expires_at.insert(set, index);
                }
            }
            _ => {}
        }
    }
    let duration = |index: usize| expires_at.get(&index).map(|&expiry| at(expiry) - at(index));
    let mut out = Vec::new();
    for (index, step) in told.iter().enumerate() {
        let base = Step {
            at_ms: at(index),
            ..Step::default()
        };
        match step {
            Told::Fetch {
                worker,
                group,
                lease,
                ..
            } => out.push(Step {
                worker: Some(worker_name(*worker)),
                op: "fetch".to_string(),
                bind: Some(lease_name(*lease)),
                group: (config.group_count > 1).then(|| group_name(*group)),
                lease_ms: duration(index),
                expect: Some("ok".to_string()),
                ..base
            }),
            Told::Deliver {
                worker,
                lease,
                op,
                result,
                heard,
                ..
            } => {
                let mut step = Step {
                    worker: Some(worker_name(*worker)),
                    op: op.name().to_string(),
                    lease: Some(lease_name(*lease)),
                    expect: Some(expect_name(result)),
                    ..base
                };
                match op {
                    SettleOp::Nack { delay_ms, reason } => {
                        step.delay_ms = (*delay_ms != 0).then_some(*delay_ms);
                        step.reason = reason.map(|r| r.to_string());
                    }
                    SettleOp::Reject { reason } => step.reason = Some(reason.to_string()),
                    SettleOp::Renew { .. } => {
                        step.extend_ms = Some(duration(index).unwrap_or(LONG_LEASE_MS));
                    }
                    SettleOp::Ack => {}
                }
                if *heard == Heard::Lost {
                    step.fault = Some("lost_reply".to_string());
                    step.expect = Some("ambiguous".to_string());
                }
                out.push(step);
            }
            Told::Crash { worker, .. } => out.push(Step {
                worker: Some(worker_name(*worker)),
                op: "crash".to_string(),
                expect: Some("ok".to_string()),
                ..base
            }),
            Told::Restart { worker } => out.push(Step {
                worker: Some(worker_name(*worker)),
                op: "restart".to_string(),
                expect: Some("ok".to_string()),
                ..base
            }),
            Told::BrokerRestart => out.push(Step {
                op: "broker_restart".to_string(),
                ..base
            }),
            Told::Expire { .. } => out.push(Step {
                // The lease's deadline is this step's time: the replay expires it before
                // this step and the oracle observes the expiry on its own, as the model did.
                // A zero-length pause changes nothing else.
                worker: Some(worker_name(0)),
                op: "pause".to_string(),
                for_ms: Some(0),
                ..base
            }),
            Told::Handle { .. }
            | Told::Renew { .. }
            | Told::Drop { .. }
            | Told::Duplicate { .. } => {}
        }
    }
    if cx.invariant == Invariant::I6 {
        // The model's path ends in a state with no action enabled; the replay's liveness
        // phase (faults healed, workers draining) must then find the event stuck.
        out.push(Step {
            at_ms: at(told.len()),
            op: "drain".to_string(),
            ..Step::default()
        });
    }
    let workers: Vec<String> = (0..config.worker_count).map(worker_name).collect();
    let end_ms = at(told.len() + 1);
    let clock_offset_ms = if config.variant == Variant::WorkerClockExpiry {
        workers
            .iter()
            .map(|w| (w.clone(), -(end_ms as i64)))
            .collect()
    } else {
        BTreeMap::new()
    };
    Scenario {
        name: format!(
            "{} breaks {} (shortest counterexample found by check)",
            config.variant, cx.invariant
        ),
        variant: config.variant.name().to_string(),
        note: Some(format!(
            "written by `leasehold check {}`; {} model steps",
            config,
            cx.len()
        )),
        config: Config {
            groups: (0..config.group_count).map(group_name).collect(),
            events: config.event_count,
            workers,
            lease_ms: LONG_LEASE_MS,
            max_attempts: config.max_attempts,
            ack_policy: config.policy.name().to_string(),
            clock_offset_ms,
            // The model expired this variant's leases lazily (at the broker's next fetch).
            expiry: model.config().lazy_expiry().then(|| "on_fetch".to_string()),
        },
        seed: None,
        faults: None,
        workload: None,
        steps: out,
        expect: Some(Expect {
            violated: Some(cx.invariant.id().to_string()),
            ..Expect::default()
        }),
    }
}
