//! The history-free state against the history-carrying one it replaced
//! (`support/reference_model.rs`): on small configurations over every variant, with faults on,
//! both give the same verdict on every invariant and every `sometimes` property, the same
//! shortest counterexample length, and the reduced model never has more states.

use crate::support;

use leasehold_model::check::{
    run, Budgets, CheckConfig, Fairness, Options, Renews, Verdict, SOMETIMES,
};
use leasehold_model::{AckPolicy, Invariant, Record, Variant};
use stateright::Model;
use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use support::reference_model::{seen, ReferenceModel, State};

/// What an exhaustive breadth-first search of the reference model finds.
struct Reference {
    unique: u64,
    /// Per invariant, the depth of the shallowest violating state.
    shortest: Vec<(Invariant, usize)>,
    /// Per `sometimes` property (in [`SOMETIMES`] order), whether it is reached.
    reached: [bool; 4],
}

fn fingerprint(state: &State) -> u64 {
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

fn sometimes(model: &ReferenceModel, state: &State) -> [bool; 4] {
    let groups = model.config().group_count;
    let events = state.broker.event_count();
    let records = || (0..groups).flat_map(|g| state.broker.records(g).iter());
    [
        state.seen & seen::STALE_REJECTED != 0,
        (0..groups).any(|g| (1..=events).any(|q| state.oracle.deliveries(g, q) > 1)),
        records().any(|r| matches!(r, Record::DeadLettered { .. })),
        state.seen & seen::AMBIGUOUS != 0,
    ]
}

fn explore_reference(config: &CheckConfig) -> Reference {
    let model = ReferenceModel::new(config.clone());
    let mut level = model.init_states();
    let mut seen_states: BTreeSet<u64> = level.iter().map(fingerprint).collect();
    let mut out = Reference {
        unique: seen_states.len() as u64,
        shortest: Vec::new(),
        reached: [false; 4],
    };
    let mut depth = 0;
    let mut actions = Vec::new();
    while !level.is_empty() {
        let mut next_level = Vec::new();
        for state in &level {
            for (i, hit) in sometimes(&model, state).into_iter().enumerate() {
                out.reached[i] |= hit;
            }
            let mut found = |invariant: Invariant| {
                if !out.shortest.iter().any(|(i, _)| *i == invariant) {
                    out.shortest.push((invariant, depth));
                }
            };
            for invariant in Invariant::ALL {
                if model.violates(state, invariant) {
                    found(invariant);
                }
            }
            actions.clear();
            model.actions(state, &mut actions);
            for action in actions.drain(..) {
                let next = model.next_state(state, action).expect("enabled");
                if seen_states.insert(fingerprint(&next)) {
                    next_level.push(next);
                }
            }
        }
        out.unique += next_level.len() as u64;
        level = next_level;
        depth += 1;
    }
    out
}

fn faults(crashes: u8, drops: u8, dups: u8, lost: u8, restarts: u8, renews: u8) -> Budgets {
    Budgets {
        crashes,
        drops,
        dups,
        lost_replies: lost,
        broker_restarts: restarts,
        renews,
    }
}

/// Small configurations over every variant, with faults on.
fn configurations() -> Vec<CheckConfig> {
    let base = |variant, events, workers, attempts, budgets| CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: workers,
        max_attempts: attempts,
        policy: AckPolicy::NackOnError,
        budgets,
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    };
    let mut out = Vec::new();
    for &variant in Variant::ALL {
        out.push(base(variant, 1, 2, 2, faults(1, 0, 0, 1, 1, 0)));
        out.push(base(variant, 1, 1, 2, faults(1, 1, 1, 0, 0, 1)));
    }
    out.push(base(Variant::Fenced, 2, 2, 2, faults(1, 0, 0, 0, 0, 0)));
    out.push(base(Variant::Fenced, 2, 1, 2, faults(1, 1, 0, 1, 1, 1)));
    out.push(base(
        Variant::RedisStreams,
        2,
        2,
        1,
        faults(1, 0, 0, 1, 0, 0),
    ));
    out.push(base(
        Variant::LeaseIdReuse,
        1,
        2,
        3,
        faults(0, 0, 0, 0, 2, 0),
    ));
    out.push(base(
        Variant::RenewRevives,
        1,
        2,
        2,
        faults(1, 0, 0, 0, 0, 2),
    ));
    out.push(base(
        Variant::VolatileAck,
        2,
        1,
        1,
        faults(0, 0, 1, 0, 1, 0),
    ));
    let mut policy = base(Variant::Fenced, 1, 2, 2, faults(1, 0, 0, 1, 0, 0));
    for p in [AckPolicy::AckFirst, AckPolicy::Manual, AckPolicy::AckAlways] {
        policy.policy = p;
        out.push(policy.clone());
    }
    out
}

#[test]
#[ignore = "slow: the reduced and the unreduced search on every variant; .ci/run runs it (--include-ignored)"]
fn the_reduction_keeps_every_verdict_and_counterexample_length_with_fewer_states() {
    let configs = configurations();
    assert!(configs.len() >= 20);
    let mut strictly_fewer = 0;
    for config in configs {
        let reference = explore_reference(&config);
        let options = Options {
            symmetry: false,
            ..Options::default()
        };
        let reduced = run(&config, &options, None);
        for invariant in [
            Invariant::I1,
            Invariant::I2,
            Invariant::I3,
            Invariant::I4,
            Invariant::I5,
            Invariant::I6,
        ] {
            let before = reference.shortest.iter().find(|(i, _)| *i == invariant);
            let after = reduced.counterexample(invariant);
            assert_eq!(
                before.is_some(),
                reduced.verdict(invariant) == Some(Verdict::Violated),
                "{config}: {invariant}"
            );
            if let (Some((_, depth)), Some(cx)) = (before, after) {
                // The reference's crash is two steps (crash, restart); the reduced one, one.
                // Its path to a violation is never shorter, and the reduced one never longer.
                assert!(
                    cx.len() <= *depth,
                    "{config}: {invariant} {} > {depth}",
                    cx.len()
                );
                if config.budgets.crashes == 0 {
                    assert_eq!(cx.len(), *depth, "{config}: {invariant}");
                }
            }
        }
        for (i, (_, name)) in SOMETIMES.iter().enumerate() {
            let verdict = reduced
                .properties
                .iter()
                .find(|p| p.name == *name)
                .expect("listed")
                .verdict;
            assert_eq!(
                reference.reached[i],
                verdict == Verdict::Reached,
                "{config}: {name}"
            );
        }
        assert!(
            reduced.counts.unique <= reference.unique,
            "{config}: {} > {}",
            reduced.counts.unique,
            reference.unique
        );
        strictly_fewer += usize::from(reduced.counts.unique < reference.unique);
    }
    assert!(strictly_fewer >= 20, "{strictly_fewer}");
}
