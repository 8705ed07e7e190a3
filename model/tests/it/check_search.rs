//! The search against stateright's on the same `Model` (same unique counts), and the
//! counterexample replay against the search (the replayed states, put in canonical form, are
//! the states the search saw).

use leasehold_model::check::path::replay;
use leasehold_model::check::{
    run, Budgets, CheckConfig, Fairness, LeaseModel, Options, Renews, State,
};
use leasehold_model::{AckPolicy, Variant};
use stateright::{Checker, Model};

fn small(variant: Variant, events: u32, workers: usize, budgets: Budgets) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: workers,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets,
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    }
}

fn crash_and_loss() -> Budgets {
    Budgets {
        crashes: 1,
        lost_replies: 1,
        ..Budgets::default()
    }
}

#[test]
fn the_search_and_stateright_count_the_same_unique_states() {
    let configs = [
        small(Variant::Fenced, 1, 2, crash_and_loss()),
        small(Variant::Fenced, 2, 2, crash_and_loss()),
        small(Variant::RedisStreams, 1, 2, crash_and_loss()),
        small(
            Variant::LeaseIdReuse,
            1,
            2,
            Budgets {
                broker_restarts: 1,
                dups: 1,
                ..Budgets::default()
            },
        ),
        small(
            Variant::VolatileAck,
            2,
            1,
            Budgets {
                broker_restarts: 1,
                drops: 1,
                ..Budgets::default()
            },
        ),
    ];
    for config in configs {
        for symmetry in [false, true] {
            let ours = run(
                &config,
                &Options {
                    symmetry,
                    partial_order: false,
                    subsumption: false,
                    late_duplicates: false,
                    ..Options::default()
                },
                None,
            );
            let model = LeaseModel::new(config.clone()).with_symmetry(symmetry);
            let theirs = if symmetry {
                // stateright's own representative mechanism (depth-first only).
                model
                    .checker()
                    .symmetry()
                    .spawn_dfs()
                    .join()
                    .unique_state_count()
            } else {
                model.checker().spawn_bfs().join().unique_state_count()
            };
            assert_eq!(
                ours.counts.unique, theirs as u64,
                "{config} symmetry {symmetry}"
            );
        }
    }
}

fn same_up_to_the_oracle_log(model: &LeaseModel, full: &State, lean: &State) {
    let mut full = full.clone();
    model.canonicalize(&mut full);
    assert_eq!(full.broker, lean.broker);
    assert_eq!(full.workers, lean.workers);
    assert_eq!(full.in_flight, lean.in_flight);
    assert_eq!(full.used, lean.used);
    let invariants: Vec<_> = full.oracle.violated_invariants().collect();
    let lean_invariants: Vec<_> = lean.oracle.violated_invariants().collect();
    assert_eq!(invariants, lean_invariants);
    let mut issuances = (Vec::new(), Vec::new());
    full.oracle.for_each_issuance(|i| issuances.0.push(i));
    lean.oracle.for_each_issuance(|i| issuances.1.push(i));
    assert_eq!(issuances.0, issuances.1);
}

#[test]
fn a_replayed_counterexample_is_the_path_the_search_saw() {
    for &variant in Variant::ALL {
        if variant.expected_violation().is_none() {
            continue; // no counterexample to replay
        }
        let config = CheckConfig::tailored_for(variant);
        let report = run(&config, &Options::default(), None);
        let model = LeaseModel::new(config.clone());
        for cx in &report.counterexamples {
            let full = replay(&model, &cx.actions);
            let mut lean = model.init_state(true);
            same_up_to_the_oracle_log(&model, &full[0], &lean);
            for (i, &action) in cx.actions.iter().enumerate() {
                lean = model.successor(&lean, action).0;
                same_up_to_the_oracle_log(&model, &full[i + 1], &lean);
            }
            // The full oracle names the violation the lean one only flags.
            let last = full.last().expect("non-empty");
            if cx.invariant != leasehold_model::Invariant::I6 {
                assert!(
                    last.oracle
                        .violations()
                        .iter()
                        .any(|v| v.invariant == cx.invariant),
                    "{variant}: {:?}",
                    last.oracle.violations()
                );
            }
        }
    }
}

/// The `sometimes` properties of [`LeaseModel`]'s own stateright `Model` (the one the
/// cross-checks use), those a state can show (an event redelivered, an event dead-lettered):
/// stateright's checker discovers them on a configuration where `check` reaches them, and never
/// where none can happen (one attempt: no redelivery).
#[test]
fn the_models_state_sometimes_properties_are_discovered_where_they_happen() {
    let redelivered = "an event is redelivered (a lease of attempt 2 or more)";
    let dead = "an event is dead-lettered";
    let both = LeaseModel::new(small(Variant::Fenced, 1, 2, crash_and_loss()));
    let checker = both.checker().spawn_bfs().join();
    for name in [redelivered, dead] {
        let path = checker.discovery(name).unwrap_or_else(|| panic!("{name}"));
        assert!(path.into_actions().len() > 1, "{name}");
    }
    let once = CheckConfig {
        max_attempts: 1,
        ..small(Variant::Fenced, 1, 2, crash_and_loss())
    };
    let checker = LeaseModel::new(once).checker().spawn_bfs().join();
    assert!(checker.discovery(redelivered).is_none());
    assert!(checker.discovery(dead).is_some());
}

/// The Explorer's model (`check --explore`) shows every `sometimes` property `check` reports,
/// the two that happen on a transition included: stateright's checker discovers each one exactly
/// where `check` reports it reached, and none that `check` finds unreached or not applicable.
#[test]
fn the_explorer_discovers_the_sometimes_properties_check_reaches() {
    use leasehold_model::check::{ExplorerModel, Verdict, SOMETIMES};
    let no_loss = Budgets {
        crashes: 1,
        ..Budgets::default()
    };
    let once = CheckConfig {
        max_attempts: 1,
        ..small(Variant::Fenced, 1, 2, crash_and_loss())
    };
    let configs = [
        small(Variant::Fenced, 1, 2, crash_and_loss()),
        small(Variant::Fenced, 2, 2, no_loss),
        small(Variant::RedisStreamsFenced, 1, 2, crash_and_loss()),
        once,
    ];
    let mut discovered = std::collections::BTreeSet::new();
    let mut undiscovered = 0;
    for config in configs {
        let report = run(&config, &Options::default(), None);
        let explorer = ExplorerModel(LeaseModel::new(config.clone()));
        let checker = explorer.checker().spawn_bfs().join();
        for (_, name) in SOMETIMES {
            let verdict = report
                .properties
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("{name}"))
                .verdict;
            let found = checker.discovery(name).is_some();
            assert_eq!(found, verdict == Verdict::Reached, "{config}: {name}");
            if found {
                discovered.insert(name);
            } else {
                undiscovered += 1;
            }
        }
    }
    // Each property is discovered somewhere (the transition-only ones too), and some are not.
    assert_eq!(discovered.len(), SOMETIMES.len(), "{discovered:?}");
    assert!(undiscovered > 0);
}

/// `check --engine stateright` (stateright's breadth-first search on the same model) against
/// leasehold's search: the same unique states and the same verdict on every property, for
/// every variant at events 2 / workers 2 / attempts 2 and two variants at events 3, on the
/// plain fault set without symmetry. (`benches/engines.sh` runs every variant at events 3
/// too, on the release binary.)
#[test]
#[ignore = "slow: every variant through both engines; .ci/run runs it (--include-ignored)"]
fn the_stateright_engine_gives_the_same_counts_and_verdicts_on_every_variant() {
    use leasehold_model::check::{Engine, Outcome};
    let plain = Budgets {
        crashes: 1,
        ..Budgets::default()
    };
    let mut outcomes = std::collections::BTreeSet::new();
    let larger = [(Variant::Fenced, 3), (Variant::UnfencedSettle, 3)];
    let every = Variant::ALL.iter().map(|&v| (v, 2));
    for (variant, events) in every.chain(larger) {
        {
            let config = small(variant, events, 2, plain);
            let options = |engine| Options {
                symmetry: false,
                engine,
                partial_order: false,
                subsumption: false,
                late_duplicates: false,
                ..Options::default()
            };
            let ours = run(&config, &options(Engine::Leasehold), None);
            let theirs = run(&config, &options(Engine::Stateright), None);
            assert_eq!(theirs.engine, Engine::Stateright);
            assert_eq!(ours.counts.unique, theirs.counts.unique, "{config}");
            assert_eq!(ours.properties, theirs.properties, "{config}");
            assert_eq!(ours.outcome, theirs.outcome, "{config}");
            outcomes.insert(format!("{:?}", ours.outcome));
        }
    }
    // The comparison covers proofs and refutations both.
    assert!(
        outcomes.contains(&format!("{:?}", Outcome::Holds)),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&format!("{:?}", Outcome::Violated)),
        "{outcomes:?}"
    );
}

/// With symmetry on, the stateright engine runs stateright's depth-first search with its own
/// symmetry reduction: the same unique states as leasehold's canonical workers.
#[test]
fn the_stateright_engine_with_symmetry_counts_the_same_representatives() {
    use leasehold_model::check::Engine;
    for variant in [
        Variant::Fenced,
        Variant::UnfencedSettle,
        Variant::RenewRevives,
    ] {
        let config = small(variant, 2, 3, crash_and_loss());
        let options = |engine| Options {
            engine,
            partial_order: false,
            subsumption: false,
            late_duplicates: false,
            ..Options::default()
        };
        let ours = run(&config, &options(Engine::Leasehold), None);
        let theirs = run(&config, &options(Engine::Stateright), None);
        assert!(ours.symmetry && theirs.symmetry);
        assert_eq!(ours.counts.unique, theirs.counts.unique, "{config}");
        assert_eq!(ours.properties, theirs.properties, "{config}");
    }
}

/// What stateright's checker cannot do is refused, not done otherwise: fair cycles and the
/// search past the first violation.
#[test]
fn the_stateright_engine_refuses_what_it_cannot_search() {
    use leasehold_model::check::Engine;
    let cyclic = CheckConfig {
        renews: Renews::Unbounded,
        ..small(Variant::Fenced, 1, 2, crash_and_loss())
    };
    let options = Options {
        engine: Engine::Stateright,
        ..Options::default()
    };
    assert!(options.unsupported(&cyclic).is_some());
    let beyond = Options {
        beyond_first_violation: true,
        ..options.clone()
    };
    let plain = small(Variant::Fenced, 1, 2, crash_and_loss());
    assert!(beyond.unsupported(&plain).is_some());
    assert!(options.unsupported(&plain).is_none());
    assert!(Options::default().unsupported(&cyclic).is_none());
}
