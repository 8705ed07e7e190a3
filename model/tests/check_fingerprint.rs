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
            };
            let states = reachable(&config, 20_000);
            // Equal states, equal fingerprints: a clone hashes the same.
            for state in states.iter().step_by(97) {
                assert_eq!(fingerprint(state), fingerprint(&state.clone()));
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
    };
    assert!(reachable(&config, 20_000).len() > 1_000);
}
