//! A reduction against the search without it (the partial-order reduction, subsumption): the
//! small configurations they are compared on, and the comparison.

use leasehold_model::check::{
    run, Budgets, CheckConfig, Fairness, Options, Outcomes, Renews, Report, Time,
};
use leasehold_model::{AckPolicy, Invariant, Variant};

/// Events 2 / workers 2 / attempts 2, every handler outcome, `groups` groups, `time`.
pub fn config(variant: Variant, groups: usize, time: Time, budgets: Budgets) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: groups,
        event_count: 2,
        worker_count: 2,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets,
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Outcomes::All,
        time,
    }
}

/// These faults and one renew.
pub fn faults(crashes: u8, drops: u8, dups: u8, lost: u8, restarts: u8) -> Budgets {
    Budgets {
        crashes,
        drops,
        dups,
        lost_replies: lost,
        broker_restarts: restarts,
        renews: 1,
    }
}

/// Checks `config` with `full` and with `reduced` (each searching past the first violation:
/// which invariant is found first depends on the order of the search, which a reduction
/// changes) and asserts the same outcome, the same verdict on every property, the same
/// counterexample lengths, the same cells, and never more unique states with the reduction.
/// Returns both reports.
pub fn compare(config: &CheckConfig, full: &Options, reduced: &Options) -> (Report, Report) {
    let past = |options: &Options| Options {
        beyond_first_violation: true,
        ..options.clone()
    };
    let full = run(config, &past(full), None);
    let reduced = run(config, &past(reduced), None);
    assert_eq!(full.outcome, reduced.outcome, "{config}");
    for (a, b) in full.properties.iter().zip(&reduced.properties) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.verdict, b.verdict, "{config}: {}", a.name);
    }
    for invariant in Invariant::ALL {
        let lengths = |report: &Report| report.counterexample(invariant).map(|cx| cx.len());
        assert_eq!(lengths(&full), lengths(&reduced), "{config}: {invariant}");
    }
    assert_eq!(full.coverage, reduced.coverage, "{config}");
    assert!(
        reduced.counts.unique <= full.counts.unique,
        "{config}: {} > {}",
        reduced.counts.unique,
        full.counts.unique
    );
    (full, reduced)
}
