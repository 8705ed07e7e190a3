//! Late duplicates against the search that duplicates a request at any step: on every variant
//! at events 2 / workers 2 / attempts 2, with a crash, a duplicate and a lost reply (and with
//! every handler outcome, a renew, a drop, a restart, two groups or the clock on a few), both
//! searches give the same verdict on every invariant and
//! every `sometimes` property, reach the same cells of the protocol's surface, give
//! counterexamples of the same length, and the search with late duplicates never has more
//! states. And a path that takes a duplicate at its delivery is told as the duplicate, then
//! the delivery.

use crate::support::reduced::{config, faults};
use leasehold_model::check::fingerprint::fingerprint;
use leasehold_model::check::path::{replay, steps, Step};
use leasehold_model::check::{Action, CheckConfig, LeaseModel, Options, Outcomes, Time};
use leasehold_model::Variant;
use std::collections::{BTreeSet, VecDeque};

/// Compares the search with late duplicates with the one without (subsumption off: its
/// counts depend on the order of the search); returns the unique states of both.
fn compare(config: &CheckConfig) -> (u64, u64) {
    let with = |late_duplicates| Options {
        late_duplicates,
        subsumption: false,
        ..Options::default()
    };
    let (full, reduced) = crate::support::reduced::compare(config, &with(false), &with(true));
    assert!(!full.late_duplicates && reduced.late_duplicates, "{config}");
    (full.counts.unique, reduced.counts.unique)
}

#[test]
#[ignore = "slow (about 15 s in a debug build): the search with and without late \
            duplicates on every variant; .ci/run runs it (--include-ignored)"]
fn late_duplicates_keep_every_verdict_cell_and_counterexample_length_on_every_variant() {
    let mut strictly_fewer = 0;
    for &variant in Variant::ALL {
        // A channel-scoped broker's channels multiply the space: no lost reply there.
        let lost = u8::from(!variant.channel_scoped());
        let mut config = config(variant, 1, Time::Untimed, faults(1, 0, 1, lost, 0));
        config.outcomes = Outcomes::Plain;
        config.budgets.renews = 0;
        let (full, reduced) = compare(&config);
        strictly_fewer += usize::from(reduced < full);
    }
    // A search that never skips a state would pass every comparison above.
    assert!(
        strictly_fewer * 2 > Variant::ALL.len(),
        "{strictly_fewer} of {}",
        Variant::ALL.len()
    );
}

#[test]
fn late_duplicates_keep_every_verdict_at_one_event() {
    for variant in [
        Variant::Fenced,
        Variant::UnfencedSettle,
        Variant::AckAllGroups,
    ] {
        let mut one_event = config(variant, 1, Time::Untimed, faults(1, 1, 1, 1, 0));
        one_event.event_count = 1;
        let (full, reduced) = compare(&one_event);
        assert!(reduced < full, "{one_event}: {reduced} of {full}");
    }
}

#[test]
#[ignore = "slow (about 15 s in a debug build): the search with and without late duplicates \
            with two groups and with the clock; .ci/run runs it (--include-ignored)"]
fn late_duplicates_keep_every_verdict_with_two_groups_a_drop_and_the_clock() {
    for variant in [
        Variant::Fenced,
        Variant::UnfencedSettle,
        Variant::AckAllGroups,
    ] {
        let mut two_groups = config(variant, 2, Time::Untimed, faults(0, 1, 1, 1, 1));
        two_groups.event_count = 1;
        let (full, reduced) = compare(&two_groups);
        assert!(reduced < full, "{two_groups}: {reduced} of {full}");
    }
    let lease = Time::Ticks {
        tick_ms: 1,
        lease_ticks: 2,
        skew_ticks: 1,
    };
    for variant in [Variant::Fenced, Variant::RenewFromDeadline] {
        let mut timed = config(variant, 1, lease, faults(0, 0, 1, 1, 0));
        timed.worker_count = 1;
        let (full, reduced) = compare(&timed);
        assert!(reduced < full, "{timed}: {reduced} of {full}");
    }
}

#[test]
fn a_duplicate_taken_at_its_delivery_is_told_as_the_duplicate_then_the_delivery() {
    let config = config(Variant::Fenced, 1, Time::Untimed, faults(0, 0, 1, 0, 0));
    let model = LeaseModel::new(config).with_late_duplicates(true);
    let actions = [
        Action::Fetch {
            worker: 0,
            group: 0,
        },
        Action::Handle {
            worker: 0,
            outcome: 0,
        },
        Action::DuplicateDelivered {
            message: 0,
            reply_lost: false,
        },
    ];
    let states = replay(&model, &actions);
    // After the handler's settle, the model offers the duplicate only at a delivery.
    let mut offered = leasehold_model::check::model::Actions::new();
    model.actions(&states[2], &mut offered);
    assert!(offered.contains(&actions[2]), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|a| matches!(a, Action::Duplicate { .. })),
        "{offered:?}"
    );
    // One copy applied, the other still in flight.
    assert_eq!(states[2].in_flight.len(), 1);
    assert_eq!(states[3].in_flight.len(), 1);
    assert_eq!(states[3].used.dups, 1);
    let told = steps(&model, &actions, &states);
    assert_eq!(told.len(), 4, "{told:?}");
    assert!(
        matches!(told[2], Step::Duplicate { worker: 0, .. }),
        "{told:?}"
    );
    assert!(
        matches!(
            told[3],
            Step::Deliver {
                worker: 0,
                result: Ok(()),
                ..
            }
        ),
        "{told:?}"
    );
}

/// The broker and oracle pairs reachable in `config` (symmetry on, as the proof search runs),
/// by their fingerprints: everything an invariant, a property or a cell can read.
fn reachable_brokers(config: &CheckConfig, late_duplicates: bool) -> BTreeSet<u64> {
    let model = LeaseModel::new(config.clone())
        .with_symmetry(true)
        .with_late_duplicates(late_duplicates);
    let init = model.init_state(true);
    let mut seen = BTreeSet::from([fingerprint(&init)]);
    let mut brokers = BTreeSet::new();
    let mut queue = VecDeque::from([init]);
    while let Some(state) = queue.pop_front() {
        brokers.insert(fingerprint(&(&state.broker, &state.oracle)));
        let mut actions = Default::default();
        model.actions(&state, &mut actions);
        for &action in actions.iter() {
            let (next, _) = model.successor(&state, action);
            if seen.insert(fingerprint(&next)) {
                queue.push_back(next);
            }
        }
    }
    brokers
}

/// With duplicates as the only fault, the search with late duplicates reaches every broker
/// and oracle the other one does, on every variant, and on a broker whose settles are not
/// fenced a duplicate reaches some that no other step does (so a duplicate that lost its
/// copy would be seen here).
#[test]
fn late_duplicates_reach_every_broker_and_oracle_on_every_variant() {
    for &variant in Variant::ALL {
        let mut config = config(variant, 1, Time::Untimed, faults(0, 0, 1, 0, 0));
        config.outcomes = Outcomes::Plain;
        config.budgets.renews = 0;
        let full = reachable_brokers(&config, false);
        let late = reachable_brokers(&config, true);
        assert!(
            late == full,
            "{config}: {} reached only without late duplicates, {} only with them",
            full.difference(&late).count(),
            late.difference(&full).count()
        );
        if variant == Variant::UnfencedSettle {
            config.budgets.dups = 0;
            let without = reachable_brokers(&config, false);
            assert!(without.len() < full.len(), "{config}");
        }
    }
}
