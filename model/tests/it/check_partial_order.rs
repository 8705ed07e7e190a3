//! Partial-order reduction against the unreduced search: on every variant at events 2 /
//! workers 2 / attempts 2, with every handler outcome, a renew and faults on, both searches
//! give the same verdict on every invariant and every `sometimes` property, reach the same
//! cells of the protocol's surface, give counterexamples of the same length, and the reduced
//! search never has more states. A few configurations add a second group or the clock.

use crate::support::reduced::{config, faults};
use leasehold_model::check::{CheckConfig, Options, Time};
use leasehold_model::Variant;

fn compare(config: &CheckConfig) -> (u64, u64) {
    // The reduction alone: subsumption's counts would depend on the order of the search.
    let with = |partial_order| Options {
        partial_order,
        subsumption: false,
        ..Options::default()
    };
    let (full, reduced) = crate::support::reduced::compare(config, &with(false), &with(true));
    assert!(!full.partial_order && reduced.partial_order, "{config}");
    (full.counts.unique, reduced.counts.unique)
}

#[test]
#[ignore = "slow (about 40 s in a debug build): the reduced and the unreduced search on every \
            variant; .ci/run runs it (--include-ignored)"]
fn the_reduction_keeps_every_verdict_cell_and_counterexample_length_on_every_variant() {
    let mut strictly_fewer = 0;
    for &variant in Variant::ALL {
        // A channel-scoped broker's channels multiply the space: no lost reply there.
        let lost = u8::from(!variant.channel_scoped());
        let config = config(variant, 1, Time::Untimed, faults(1, 0, 0, lost, 0));
        let (full, reduced) = compare(&config);
        strictly_fewer += usize::from(reduced < full);
    }
    // A reduction that never prunes would pass every comparison above.
    assert!(
        strictly_fewer * 2 > Variant::ALL.len(),
        "{strictly_fewer} of {}",
        Variant::ALL.len()
    );
}

#[test]
#[ignore = "slow (about 13 s in a debug build): the reduced and the unreduced search with two \
            groups and with the clock; .ci/run runs it (--include-ignored)"]
fn the_reduction_keeps_every_verdict_with_two_groups_and_with_the_clock() {
    let lease = Time::Ticks {
        tick_ms: 1,
        lease_ticks: 2,
        skew_ticks: 1,
    };
    for variant in [Variant::Fenced, Variant::AckAllGroups] {
        let mut one_event = config(variant, 2, Time::Untimed, faults(1, 0, 1, 0, 1));
        one_event.event_count = 1;
        compare(&one_event);
    }
    for variant in [
        Variant::Fenced,
        Variant::UnfencedSettle,
        Variant::RenewFromDeadline,
        Variant::RenewWorkerClock,
        Variant::LeaseIdReuse,
    ] {
        let mut timed = config(variant, 1, lease, faults(1, 1, 0, 0, 0));
        timed.worker_count = 1;
        compare(&timed);
    }
}
