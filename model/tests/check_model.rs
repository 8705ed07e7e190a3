//! The stateright model: verdicts on the reference and on every mutant, minimal
//! counterexamples, symmetry reduction, and the acyclicity that the I6 check relies on.

use leasehold_model::check::{
    shortest_counterexamples, trace, Budgets, CheckConfig, LeaseModel, State, REACHABILITY, SAFETY,
};
use leasehold_model::{AckPolicy, Invariant, Variant};
use stateright::{Checker, Model};

fn small(variant: Variant) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: 1,
        worker_count: 2,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets: Budgets {
            crashes: 1,
            lost_replies: 1,
            ..Budgets::default()
        },
    }
}

fn property_name(invariant: Invariant) -> &'static str {
    SAFETY
        .iter()
        .find(|(i, _)| *i == invariant)
        .expect("checked")
        .1
}

/// Runs stateright's DFS; returns (unique states, names of the properties discovered).
fn dfs(model: LeaseModel) -> (usize, Vec<&'static str>) {
    let checker = model.checker().spawn_dfs().join();
    let names = checker
        .model()
        .properties()
        .iter()
        .map(|p| p.name)
        .filter(|n| checker.discovery(n).is_some())
        .collect();
    (checker.unique_state_count(), names)
}

#[test]
fn fenced_holds_and_every_sometimes_property_is_reached() {
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        let (_, found) = dfs(LeaseModel::new(small(variant)).with_symmetry(true));
        for (_, name) in SAFETY {
            assert!(!found.contains(&name), "{variant}: {name} violated");
        }
        for name in REACHABILITY {
            assert!(found.contains(&name), "{variant}: '{name}' not reached");
        }
    }
}

#[test]
fn every_mutant_and_redis_streams_is_caught_with_its_expected_invariant() {
    for &variant in Variant::ALL {
        let Some(expected) = variant.expected_violation() else {
            continue;
        };
        let (_, found) =
            dfs(LeaseModel::new(CheckConfig::default_for(variant)).with_symmetry(true));
        assert!(
            found.contains(&property_name(expected)),
            "{variant}: expected {expected}, found {found:?}"
        );
    }
}

#[test]
fn protocols_expected_to_hold_hold_on_their_default_bounds_without_symmetry_too() {
    // The per-variant defaults of the protocols are the general default: check the smaller
    // configuration here with symmetry off (the default one is run by the CLI test).
    let (_, found) = dfs(LeaseModel::new(small(Variant::Fenced)));
    assert!(SAFETY.iter().all(|(_, n)| !found.contains(n)), "{found:?}");
}

fn shortest_len(config: CheckConfig, invariant: Invariant) -> usize {
    let model = LeaseModel::new(config);
    let search = shortest_counterexamples(&model, &[invariant], 1_000_000);
    assert!(search.bounded.is_none());
    let cx = search.found.first().expect("a counterexample exists");
    assert_eq!(cx.invariant, invariant);
    assert!(model.violates(cx.states.last().expect("non-empty"), invariant));
    cx.len()
}

fn bare(variant: Variant, workers: usize, max_attempts: u32) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: 1,
        worker_count: workers,
        max_attempts,
        policy: AckPolicy::NackOnError,
        budgets: Budgets::default(),
    }
}

/// unfenced-settle, one worker, no faults. A settle needs a lease (Fetch), a request (the
/// only way to send one is Handle) and its delivery (Deliver); for I1 the lease must be
/// expired or superseded when the settle lands, and superseding needs the record available
/// again, so at least one Expire. Fetch, Handle, Expire, Deliver: 4 steps, and no fewer.
#[test]
fn shortest_unfenced_counterexample_has_the_length_worked_out_by_hand() {
    assert_eq!(
        shortest_len(bare(Variant::UnfencedSettle, 1, 2), Invariant::I1),
        4
    );
    // More workers cannot shorten it (the bound above does not depend on them).
    assert_eq!(
        shortest_len(bare(Variant::UnfencedSettle, 2, 2), Invariant::I1),
        4
    );
}

/// no-dead-letter, max_attempts 1: I5 needs a second delivery, i.e. two fetches with an
/// Expire between them (a nack at attempt 1 dead-letters, the mutant only changes expiry).
/// With two workers: Fetch A, Expire, Fetch B = 3. With one worker the holder must first
/// become idle again, which without a crash budget takes Handle and the Deliver of its
/// settle: Fetch, Handle, Deliver, Expire, Fetch (in some order) = 5.
#[test]
fn shortest_no_dead_letter_counterexample_depends_on_the_worker_count_as_reasoned() {
    assert_eq!(
        shortest_len(bare(Variant::NoDeadLetter, 2, 1), Invariant::I5),
        3
    );
    assert_eq!(
        shortest_len(bare(Variant::NoDeadLetter, 1, 1), Invariant::I5),
        5
    );
}

#[test]
fn the_timeline_of_the_shortest_unfenced_counterexample_reads_as_the_seed() {
    let model = LeaseModel::new(bare(Variant::UnfencedSettle, 1, 2));
    let search = shortest_counterexamples(&model, &[Invariant::I1], 1_000_000);
    let text = trace::timeline(&model, &search.found[0]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "t0  worker A fetches event E1 → lease L1");
    assert!(
        lines[3].starts_with("t3  worker A ACK L1 → ")
            || lines[3].starts_with("t3  worker A NACK L1 → "),
        "{text}"
    );
    assert!(
        lines[4].starts_with("violated: I1 stale-never-counts"),
        "{text}"
    );
    assert!(text.contains("lease L1 expires"), "{text}");
}

#[test]
fn symmetry_gives_the_same_verdicts_with_fewer_states_and_a_canonical_form() {
    let config = CheckConfig {
        event_count: 2,
        ..small(Variant::Fenced)
    };
    let (plain, found_plain) = dfs(LeaseModel::new(config.clone()));
    let (reduced, found_reduced) = dfs(LeaseModel::new(config.clone()).with_symmetry(true));
    assert!(reduced < plain, "{reduced} !< {plain}");
    assert_eq!(found_plain, found_reduced);
    // stateright's own representative mechanism (DFS only) over the same canonical form
    // finds the same number of classes.
    let stateright = LeaseModel::new(config)
        .checker()
        .symmetry()
        .spawn_dfs()
        .join()
        .unique_state_count();
    assert_eq!(stateright, reduced);
    // A mutant keeps its verdict under symmetry.
    let mutant = CheckConfig::default_for(Variant::LeaseIdReuse);
    let (_, a) = dfs(LeaseModel::new(mutant.clone()));
    let (_, b) = dfs(LeaseModel::new(mutant).with_symmetry(true));
    assert!(a.contains(&property_name(Invariant::I1)) && b.contains(&property_name(Invariant::I1)));
}

/// The I6 check is sound because the state graph has no cycle: every transition ends exactly
/// one oracle step, and the step counter is part of the state. Walk the whole space of a
/// small configuration and check that claim on every transition.
#[test]
fn every_transition_advances_the_oracle_step_so_the_graph_is_acyclic() {
    let model = LeaseModel::new(small(Variant::Fenced));
    let mut stack: Vec<State> = model.init_states();
    let mut seen = std::collections::BTreeSet::new();
    let mut transitions = 0;
    while let Some(state) = stack.pop() {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        assert_eq!(model.has_action(&state), !actions.is_empty());
        for action in actions {
            let next = model.next_state(&state, action).expect("enabled");
            assert_eq!(next.oracle.step(), state.oracle.step() + 1);
            transitions += 1;
            if seen.insert(format!("{next:?}")) {
                stack.push(next);
            }
        }
    }
    assert!(transitions > 1000);
}

#[test]
fn stuck_lease_is_reported_as_i6_at_a_state_with_no_action_enabled() {
    let model = LeaseModel::new(CheckConfig::default_for(Variant::StuckLease));
    let search = shortest_counterexamples(&model, &[Invariant::I6], 1_000_000);
    let cx = &search.found[0];
    let last = cx.states.last().expect("non-empty");
    assert!(!model.has_action(last));
    assert!(!last.broker.all_settled());
    assert!(
        last.oracle.violations().is_empty(),
        "no safety invariant is broken"
    );
    // Fetch, BrokerRestart, Crash, Restart (in some order): the crash is needed (a live holder
    // would settle), the restart because a crashed worker can always restart.
    assert_eq!(cx.len(), 4);
}
