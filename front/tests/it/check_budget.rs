//! A check with a time budget, as a test calls it: a search the budget cuts short is bounded,
//! never holds, and says the budget stopped it; a budget the search does not need changes
//! nothing.

use leasehold_front::model::check::Outcome;
use leasehold_front::{self as leasehold, CheckConfig, Variant};
use std::time::Duration;

use crate::scratch;
use scratch::out;

#[test]
fn a_time_budget_bounds_a_long_check_and_says_so() {
    let (_scratch, dir) = out("budget");
    // Minutes of search: 15 million states (`leasehold check --events 3 --workers 3
    // --max-attempts 3`, reports/check-bench.md).
    let mut big = CheckConfig::tailored_for(Variant::Fenced);
    big.event_count = 3;
    big.worker_count = 3;
    big.max_attempts = 3;
    let cut = leasehold::check(big)
        .for_at_most(Duration::from_millis(300))
        .out(&dir)
        .run()
        .unwrap();
    assert!(cut.budget_spent);
    assert!(cut.report.interrupted);
    assert_eq!(cut.report.outcome, Outcome::Bounded);
    assert_eq!(cut.report.bounded, Some(cut.report.counts.generated));
    assert!(cut.command.ends_with(" --for 300ms"), "{}", cut.command);
    let told = std::panic::catch_unwind(|| {
        cut.assert_holds();
    })
    .expect_err("a bounded check does not hold");
    let message = told.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("its time or memory budget stopped the search"),
        "{message}"
    );

    let small = leasehold::check(CheckConfig::tailored_for(Variant::UnfencedSettle))
        .for_at_most(Duration::from_secs(3600))
        .out(&dir)
        .run()
        .unwrap();
    assert!(!small.budget_spent && !small.report.interrupted);
    assert_eq!(small.report.outcome, Outcome::Violated);
    assert!(!small.counterexamples.is_empty());
}

/// A memory budget the process is already past stops the search at its first check, bounded;
/// the command says it (`--max-memory`).
#[test]
fn a_memory_budget_bounds_a_check_and_says_so() {
    let (_scratch, dir) = out("memory");
    if leasehold::budget::resident_bytes().is_none() {
        return; // No /proc: the memory budget is never spent on this system.
    }
    let cut = leasehold::check(CheckConfig::tailored_for(Variant::Fenced))
        .memory_at_most(1 << 20)
        .out(&dir)
        .run()
        .unwrap();
    assert!(cut.budget_spent && cut.report.interrupted);
    assert_eq!(cut.report.outcome, Outcome::Bounded);
    assert!(
        cut.command.ends_with(" --max-memory 1048576"),
        "{}",
        cut.command
    );
}

/// `Check::first_violation`: a planted bug in the covering configuration stops at its first
/// counterexample, names the stop in the command that reproduces it, and leaves the other
/// invariants not proven.
#[test]
fn a_check_stopped_at_the_first_violation_keeps_its_counterexample() {
    let (_scratch, dir) = out("first");
    let stopped = leasehold::check(CheckConfig::covering_for(Variant::UnfencedSettle))
        .first_violation()
        .out(&dir)
        .run()
        .unwrap();
    assert!(stopped.report.stopped_at_violation);
    assert_eq!(stopped.report.outcome, Outcome::Violated);
    assert!(stopped.report.bounded.is_some());
    assert!(
        stopped.command.ends_with(" --first-violation"),
        "{}",
        stopped.command
    );
    let broken = stopped.report.violated();
    assert!(!broken.is_empty());
    for invariant in broken {
        assert!(
            stopped.report.counterexample(invariant).is_some(),
            "{invariant}"
        );
    }
    assert!(!stopped.counterexamples.is_empty());
    for found in &stopped.counterexamples {
        assert!(
            found.replays,
            "{}: {}",
            found.invariant,
            found.scenario.display()
        );
    }
}
