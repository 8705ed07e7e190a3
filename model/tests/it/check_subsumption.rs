//! Subsumption against the search without it: on every variant at events 2 / workers 2 /
//! attempts 2, with every handler outcome, a renew and several kinds of fault, both searches
//! give the same verdict on every invariant and every `sometimes` property, reach the same
//! cells of the protocol's surface, give counterexamples of the same length, and the search
//! with it never has more states; on two threads too. And the fact its argument rests on: a
//! state with no action enabled has none either with fewer crashes, drops, duplicates, lost
//! replies or renews used.

use crate::support::reduced::{config, faults};
use leasehold_model::check::config::BudgetCodes;
use leasehold_model::check::fingerprint::{coded, fingerprint};
use leasehold_model::check::{Budgets, CheckConfig, LeaseModel, Limits, Options, Time};
use leasehold_model::Variant;
use std::collections::{BTreeSet, VecDeque};

/// Compares the search with subsumption (on `threads`) with the one without; returns the
/// unique states of both.
fn compare(config: &CheckConfig, threads: usize) -> (u64, u64) {
    let with = |subsumption, threads| Options {
        subsumption,
        limits: Limits {
            threads,
            ..Limits::default()
        },
        ..Options::default()
    };
    let (full, reduced) =
        crate::support::reduced::compare(config, &with(false, 1), &with(true, threads));
    assert!(!full.subsumption && reduced.subsumption, "{config}");
    assert_eq!(full.subsumed, 0, "{config}");
    (full.counts.unique, reduced.counts.unique)
}

#[test]
#[ignore = "slow (about 70 s in a debug build): the search with and without subsumption on \
            every variant; .ci/run runs it (--include-ignored)"]
fn subsumption_keeps_every_verdict_cell_and_counterexample_length_on_every_variant() {
    let mut strictly_fewer = 0;
    for &variant in Variant::ALL {
        // A channel-scoped broker's channels multiply the space: no lost reply there.
        let lost = u8::from(!variant.channel_scoped());
        let config = config(variant, 1, Time::Untimed, faults(1, 1, 0, lost, 0));
        let (full, reduced) = compare(&config, 1);
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
#[ignore = "slow (about 65 s in a debug build): the search with and without subsumption with two \
            groups and with the clock; .ci/run runs it (--include-ignored)"]
fn subsumption_keeps_every_verdict_on_two_threads_with_two_groups_and_with_the_clock() {
    let lease = Time::Ticks {
        tick_ms: 1,
        lease_ticks: 2,
        skew_ticks: 1,
    };
    for variant in [
        Variant::Fenced,
        Variant::AckAllGroups,
        Variant::UnfencedSettle,
    ] {
        let mut one_event = config(variant, 2, Time::Untimed, faults(1, 0, 1, 1, 1));
        one_event.event_count = 1;
        let (full, reduced) = compare(&one_event, 2);
        assert!(reduced < full, "{one_event}: {reduced} of {full}");
    }
    for variant in [
        Variant::Fenced,
        Variant::RenewFromDeadline,
        Variant::RenewWorkerClock,
        Variant::LeaseIdReuse,
    ] {
        let mut timed = config(variant, 1, lease, faults(1, 1, 0, 1, 0));
        timed.worker_count = 1;
        compare(&timed, 2);
    }
}

/// Calls `visit` with every state reachable in `config` (partial-order reduction on, as the
/// proof search runs).
fn each_reachable(
    config: &CheckConfig,
    mut visit: impl FnMut(&LeaseModel, &leasehold_model::check::State),
) {
    let model = LeaseModel::new(config.clone())
        .with_symmetry(true)
        .with_partial_order(true);
    let init = model.init_state(true);
    let mut seen = BTreeSet::from([fingerprint(&init)]);
    let mut queue = VecDeque::from([init]);
    while let Some(state) = queue.pop_front() {
        let mut actions = Default::default();
        model.actions(&state, &mut actions);
        for &action in actions.iter() {
            let (next, _) = model.successor(&state, action);
            if seen.insert(fingerprint(&next)) {
                queue.push_back(next);
            }
        }
        visit(&model, &state);
    }
}

#[test]
fn a_state_with_no_action_has_none_with_fewer_budgets_used_but_restarts() {
    let mut terminal = 0;
    let mut lowered = 0;
    for &variant in Variant::ALL {
        let mut config = config(variant, 1, Time::Untimed, faults(2, 1, 1, 1, 1));
        config.event_count = 1;
        each_reachable(&config, |model, state| {
            if model.has_action(state) {
                return;
            }
            terminal += 1;
            let used = state.used;
            for below in used.below() {
                lowered += 1;
                let mut lower = state.clone();
                lower.used = below;
                assert!(
                    !model.has_action(&lower),
                    "{config}: a terminal state has an action with {below:?} used instead of \
                     {used:?}: {lower:?}"
                );
            }
        });
    }
    // The claim is about terminal states some budget was used to reach.
    assert!(
        terminal > 0 && lowered > 0,
        "{terminal} terminal, {lowered} lowered"
    );
}

/// The counterpart: a broker restart is enabled on its own, so a terminal state with a restart
/// used is not terminal with it left — which is why subsumption keeps restarts equal.
#[test]
fn a_restart_left_enables_an_action_in_a_terminal_state() {
    let mut config = config(Variant::Fenced, 1, Time::Untimed, faults(0, 0, 0, 0, 1));
    config.event_count = 1;
    let mut found = false;
    each_reachable(&config, |model, state| {
        if !found && !model.has_action(state) && state.used.broker_restarts == 1 {
            let mut before = state.clone();
            before.used.broker_restarts = 0;
            assert!(model.has_action(&before));
            found = true;
        }
    });
    assert!(found, "a terminal state after a restart");
}

/// The collision estimate counts every fingerprint the table keeps (the skipped states' too)
/// and every lookup subsumption makes, each of which may meet another state's fingerprint.
#[test]
fn the_collision_estimate_counts_the_skipped_states_and_the_lookups() {
    let mut config = config(Variant::Fenced, 1, Time::Untimed, faults(1, 1, 0, 1, 0));
    config.event_count = 1;
    let with = |subsumption| Options {
        subsumption,
        ..Options::default()
    };
    let off = leasehold_model::check::run(&config, &with(false), None);
    assert_eq!((off.subsumed, off.subsumption_lookups), (0, 0));
    let unique = off.counts.unique as f64;
    assert_eq!(off.collision_estimate(), unique * unique / 2f64.powi(65));
    let on = leasehold_model::check::run(&config, &with(true), None);
    assert!(
        on.subsumed > 0 && on.subsumption_lookups >= on.subsumed,
        "{on:?}"
    );
    let kept = (on.counts.unique + on.subsumed) as f64;
    let lookups = on.subsumption_lookups as f64;
    assert_eq!(
        on.collision_estimate(),
        kept * kept / 2f64.powi(65) + lookups * kept / 2f64.powi(64)
    );
}

/// `Budgets::below` names every smaller set of the five budgets subsumption compares, once,
/// never the set itself, and keeps the broker restarts.
#[test]
fn below_names_every_smaller_set_of_budgets_once() {
    let used = Budgets {
        crashes: 2,
        drops: 1,
        dups: 0,
        lost_replies: 1,
        broker_restarts: 1,
        renews: 1,
    };
    let below: Vec<Budgets> = used.below().collect();
    let distinct: BTreeSet<u64> = below.iter().map(Budgets::word).collect();
    assert_eq!(distinct.len(), below.len());
    // 3 × 2 × 1 × 2 × 2 vectors, less `used` itself.
    assert_eq!(below.len(), 23);
    for b in &below {
        assert_ne!(*b, used);
        assert_eq!(b.broker_restarts, 1);
        assert!(
            b.crashes <= 2 && b.drops <= 1 && b.dups == 0 && b.lost_replies <= 1 && b.renews <= 1
        );
    }
    assert_eq!(Budgets::default().below().count(), 0);
}

/// Every set of budgets within the limits has its own code below 2²⁴, and `any_below` walks
/// the codes of the sets `Budgets::below` names, in its order; limits with more sets than
/// that have no codes.
#[test]
fn budget_codes_number_each_set_once_and_walk_the_smaller_sets() {
    let limits = Budgets {
        crashes: 2,
        drops: 1,
        dups: 3,
        lost_replies: 1,
        broker_restarts: 2,
        renews: 1,
    };
    let codes = BudgetCodes::new(&limits).expect("3 × 2 × 4 × 2 × 3 × 2 sets");
    let mut every = Vec::new();
    for restarts in 0..=limits.broker_restarts {
        let top = Budgets {
            broker_restarts: restarts,
            ..limits
        };
        every.push(top);
        every.extend(top.below());
    }
    let numbered: BTreeSet<u64> = every.iter().map(|used| codes.code(used)).collect();
    assert_eq!((every.len(), numbered.len()), (288, 288));
    assert!(numbered.iter().all(|&code| code < 288), "{numbered:?}");
    // One core's fingerprints with different codes differ.
    let core = fingerprint(&limits);
    let fingerprints: BTreeSet<u64> = numbered.iter().map(|&c| coded(core, c)).collect();
    assert_eq!(fingerprints.len(), 288);
    for used in &every {
        let mut walked = Vec::new();
        assert!(!codes.any_below(used, |code| {
            walked.push(code);
            false
        }));
        let below: Vec<u64> = used.below().map(|b| codes.code(&b)).collect();
        assert_eq!(walked, below, "{used:?}");
        // It stops at the first code `f` accepts.
        if let Some(&last) = below.last() {
            let mut calls = 0;
            assert!(codes.any_below(used, |code| {
                calls += 1;
                code == last
            }));
            assert_eq!(calls, below.len());
        }
    }
    let wide = Budgets {
        crashes: 255,
        drops: 255,
        dups: 1,
        lost_replies: 255,
        ..limits
    };
    assert!(BudgetCodes::new(&wide).is_none());
}

/// Budgets too wide for codes: the fingerprints hash them last, and subsumption keeps every
/// verdict there too.
#[test]
fn subsumption_keeps_every_verdict_with_budgets_too_wide_for_codes() {
    let wide = Budgets {
        crashes: 255,
        drops: 255,
        dups: 1,
        lost_replies: 255,
        broker_restarts: 1,
        renews: 1,
    };
    for variant in [
        Variant::Fenced,
        Variant::UnfencedSettle,
        Variant::AckAllGroups,
    ] {
        let mut config = config(variant, 1, Time::Untimed, wide);
        config.event_count = 1;
        let model = LeaseModel::new(config.clone()).with_subsumption(true);
        assert!(model.budget_codes().is_none());
        let (full, reduced) = compare(&config, 1);
        assert!(reduced < full, "{config}: {reduced} of {full}");
    }
    let narrow = config(Variant::Fenced, 1, Time::Untimed, faults(1, 1, 0, 1, 0));
    assert!(LeaseModel::new(narrow)
        .with_subsumption(true)
        .budget_codes()
        .is_some());
}
