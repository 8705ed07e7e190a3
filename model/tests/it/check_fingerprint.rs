//! Fingerprints identify states: over every state reachable in small configurations of every
//! variant (timers left behind by a broker restart, acks not yet durable, lapsed leases, reused
//! lease ids included), two states have the same fingerprint exactly when they are equal. The
//! search deduplicates by fingerprint alone, so a `Hash` that forgot a field would merge states
//! that are not the same.

use leasehold_model::check::fingerprint::fingerprint;
use leasehold_model::check::model::Actions;
use leasehold_model::check::{Budgets, CheckConfig, Fairness, LeaseModel, Renews, State};
use leasehold_model::{AckPolicy, Variant};
use std::collections::BTreeMap;

fn reachable(config: &CheckConfig, limit: usize) -> Vec<State> {
    let model = LeaseModel::new(config.clone()).beyond_first_violation();
    let mut states = vec![model.init_state(true)];
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    seen.insert(fingerprint(&states[0]), 0);
    let mut actions = Actions::new();
    let mut index = 0;
    while index < states.len() && states.len() < limit {
        let state = states[index].clone();
        index += 1;
        model.actions(&state, &mut actions);
        for &action in actions.iter() {
            let next = model.successor(&state, action).0;
            match seen.get(&fingerprint(&next)) {
                Some(&same) => assert_eq!(
                    states[same], next,
                    "{config}: two states share a fingerprint"
                ),
                None => {
                    seen.insert(fingerprint(&next), states.len());
                    states.push(next);
                }
            }
        }
    }
    states
}

#[test]
#[ignore = "slow: every variant at two sizes, every reachable state compared by fingerprint; .ci/run runs it (--include-ignored)"]
fn distinct_reachable_states_have_distinct_fingerprints() {
    let faults = Budgets {
        crashes: 1,
        lost_replies: 1,
        dups: 1,
        broker_restarts: 1,
        renews: 1,
        drops: 0,
    };
    for &variant in Variant::ALL {
        for (events, workers, attempts) in [(1, 2, 2), (2, 2, 1)] {
            let config = CheckConfig {
                variant,
                group_count: 1,
                event_count: events,
                worker_count: workers,
                max_attempts: attempts,
                policy: AckPolicy::NackOnError,
                budgets: faults,
                renews: Renews::Budget,
                fairness: Fairness::Weak,
                outcomes: Default::default(),
                time: Default::default(),
            };
            let states = reachable(&config, 20_000);
            // Equal states, equal fingerprints: a clone hashes the same.
            for state in states.iter().step_by(97) {
                assert_eq!(fingerprint(state), fingerprint(&state.clone()));
            }
            // Equality agrees with the fingerprints, part by part: brokers (or oracles) with
            // different fingerprints are different, with the same ones equal.
            for pair in states.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                assert_eq!(
                    a.broker == b.broker,
                    fingerprint(&a.broker) == fingerprint(&b.broker),
                    "{config}: {a:?} {b:?}"
                );
                assert_eq!(
                    a.oracle == b.oracle,
                    fingerprint(&a.oracle) == fingerprint(&b.oracle),
                    "{config}"
                );
                assert_ne!(a, b);
            }
            assert!(states.len() > 20, "{config}");
        }
    }
}

/// Two groups: the packed words of records, timers and ghost leases carry the group.
#[test]
fn states_of_two_groups_have_distinct_fingerprints() {
    let config = CheckConfig {
        variant: Variant::Fenced,
        group_count: 2,
        event_count: 2,
        worker_count: 2,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets: Budgets {
            crashes: 1,
            ..Budgets::default()
        },
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    };
    assert!(reachable(&config, 20_000).len() > 1_000);
}

/// Fingerprints are a fixed function of the state (no per-process seed, no addresses; 64-bit
/// platforms): the
/// sum of the fingerprints of every state reachable in these configurations is pinned. A
/// change to how any part of a state is hashed changes it (run with `PIN=1` to print the new
/// values after a deliberate change).
#[test]
fn fingerprints_are_the_same_on_every_run_and_platform() {
    let pinned: [(Variant, u64); 8] = [
        (Variant::Fenced, 0x32cc366247603789),
        (Variant::RedisStreams, 0x2fe6e0bb003b5d62),
        (Variant::LeaseIdReuse, 0xc36460a5424aec87),
        (Variant::VolatileAck, 0x24ab79b371cb2dda),
        (Variant::DlqDrop, 0x4915e36d8984690c),
        (Variant::StuckLease, 0x49911414c1a3c948),
        (Variant::WorkerClockExpiry, 0x2fe6e0bb003b5d62),
        (Variant::RenewRevives, 0xe99f24447412c5e1),
    ];
    let print = std::env::var("PIN").is_ok();
    for (variant, sum) in pinned {
        let config = CheckConfig {
            variant,
            group_count: 2,
            event_count: 2,
            worker_count: 1,
            max_attempts: 1,
            policy: AckPolicy::NackOnError,
            budgets: Budgets {
                crashes: 1,
                dups: 1,
                broker_restarts: 1,
                renews: 1,
                ..Budgets::default()
            },
            renews: Renews::Budget,
            fairness: Fairness::Weak,
            outcomes: Default::default(),
            time: Default::default(),
        };
        let measured = reachable(&config, 5_000)
            .iter()
            .fold(0u64, |acc, s| acc.wrapping_add(fingerprint(s)));
        if print {
            println!("        (Variant::{variant:?}, {measured:#018x}),");
        } else {
            assert_eq!(measured, sum, "{variant}");
        }
    }
}
