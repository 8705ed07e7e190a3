//! The timed model (`--time ticks`): it finds everything the untimed model finds, the
//! deadline-arithmetic mutants the untimed model cannot see, and a coarse tick agrees with the
//! broker's own unit wherever the bug is not in the arithmetic's unit.

use leasehold_model::check::{run, Budgets, CheckConfig, Options, Outcome, Time};
use leasehold_model::{Invariant, Variant};
use std::collections::BTreeSet;

/// The mutants whose bug is in the broker's deadline arithmetic: only a clock shows them.
const DEADLINE_MUTANTS: [Variant; 3] = [
    Variant::RenewFromDeadline,
    Variant::RenewKeepsTimer,
    Variant::RenewWorkerClock,
];

/// Each variant's default configuration, at most 2 events and 2 workers (the protocols'
/// defaults are sized for a proof of a few seconds untimed; the timed model costs more).
fn small(variant: Variant) -> CheckConfig {
    let mut config = CheckConfig::tailored_for(variant);
    config.event_count = config.event_count.min(2);
    config.worker_count = config.worker_count.min(2);
    config
}

fn with_time(config: &CheckConfig, time: Time) -> CheckConfig {
    CheckConfig {
        time,
        ..config.clone()
    }
}

fn ticks(tick_ms: u64) -> Time {
    Time::Ticks {
        tick_ms,
        lease_ticks: 2,
        skew_ticks: 1,
    }
}

/// The invariants a check of `config` finds violated (the search past the first violation
/// is not needed: the verdicts compared are each configuration's first findings).
fn violated(config: &CheckConfig) -> BTreeSet<Invariant> {
    config.validate().expect("a valid configuration");
    let report = run(config, &Options::default(), None);
    assert_ne!(report.outcome, Outcome::Bounded, "{config}");
    report.violated().into_iter().collect()
}

fn timed_variants() -> impl Iterator<Item = Variant> {
    // `rabbitmq-channel`'s leases end when a channel closes: the timed model refuses it.
    Variant::ALL.iter().copied().filter(|v| !v.channel_scoped())
}

#[test]
fn the_timed_model_finds_what_the_untimed_finds_and_the_deadline_mutants() {
    for variant in timed_variants() {
        let config = small(variant);
        let untimed = violated(&with_time(&config, Time::Untimed));
        let timed = violated(&with_time(&config, ticks(1)));
        if DEADLINE_MUTANTS.contains(&variant) {
            assert!(untimed.is_empty(), "{variant}: untimed finds {untimed:?}");
            let expected = variant.expected_violation().expect("a mutant");
            assert!(
                timed.contains(&expected),
                "{variant}: timed finds {timed:?}"
            );
        } else {
            assert_eq!(timed, untimed, "{variant}: timed and untimed disagree");
            if let Some(expected) = variant.expected_violation() {
                assert!(timed.contains(&expected), "{variant}: {timed:?}");
            }
        }
    }
}

#[test]
fn a_coarse_tick_and_the_brokers_own_unit_agree() {
    for variant in timed_variants() {
        let config = small(variant);
        let exact = violated(&with_time(&config, ticks(1)));
        let coarse = violated(&with_time(&config, ticks(1_000)));
        assert_eq!(exact, coarse, "{variant}");
    }
}

#[test]
fn the_reference_holds_timed_and_reaches_both_time_cells() {
    let config = CheckConfig {
        budgets: Budgets {
            renews: 1,
            ..CheckConfig::tailored_for(Variant::Fenced).budgets
        },
        ..with_time(&small(Variant::Fenced), Time::TICKS)
    };
    let report = run(&config, &Options::default(), None);
    assert_eq!(report.outcome, Outcome::Holds, "{:?}", report.properties);
    let missing: Vec<&str> = report
        .coverage
        .rows
        .iter()
        .filter(|row| row.area == "time" && !row.reached)
        .map(|row| row.cell)
        .collect();
    assert!(missing.is_empty(), "time cells not reached: {missing:?}");
    let untimed = run(
        &with_time(&config, Time::Untimed),
        &Options::default(),
        None,
    );
    assert!(untimed.coverage.not_covered().any(|row| row.area == "time"));
}

/// A shortest counterexample of a deadline mutant is as short timed as the bug allows: a
/// fetch, a renew, the ticks to the contract's deadline and the step that breaks it.
#[test]
fn the_renew_mutants_counterexamples_are_short() {
    for variant in DEADLINE_MUTANTS {
        let config = CheckConfig::tailored_for(variant);
        let report = run(&config, &Options::default(), None);
        let invariant = variant.expected_violation().expect("a mutant");
        let cx = report.counterexample(invariant).expect("a counterexample");
        assert!(cx.len() <= 8, "{variant}: {} steps", cx.len());
    }
}
