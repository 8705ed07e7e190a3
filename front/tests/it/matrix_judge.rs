//! The matrix's judgements: a mutant against its named invariant, a protocol expected to
//! hold, how an unexpected cell is named, the gap between failing seeds, `--expect`
//! overrides.

use leasehold_front::matrix::{
    judge, median_gap, parse_expect, Cell, Engine, Evidence, Expectation, Judgement, Unexpected,
};
use leasehold_front::{Invariant, Variant};

fn check(depth: usize) -> Cell {
    Cell::Violated(Evidence::Check {
        depth,
        scenario: None,
        replays: true,
    })
}

#[test]
fn a_mutant_must_break_its_invariant_and_may_break_others() {
    let e = Expectation::of(Variant::DlqDrop);
    assert_eq!(e.violated, Some(Invariant::I3));
    assert_eq!(judge(e, Invariant::I3, &check(4)), Judgement::Expected);
    // A violation whose evidence does not reproduce is not a catch.
    let unreplayable = Cell::Violated(Evidence::Check {
        depth: 4,
        scenario: Some("scenarios/x.toml".into()),
        replays: false,
    });
    assert!(judge(e, Invariant::I3, &unreplayable).is_unexpected());
    assert_eq!(
        judge(e, Invariant::I4, &unreplayable),
        Judgement::AlsoViolated
    );
    assert!(judge(e, Invariant::I3, &Cell::Holds).is_unexpected());
    assert!(judge(e, Invariant::I3, &Cell::NotChecked).is_unexpected());
    assert!(judge(e, Invariant::I3, &Cell::Bounded { bound: "x".into() }).is_unexpected());
    assert_eq!(judge(e, Invariant::I4, &check(2)), Judgement::AlsoViolated);
    assert_eq!(judge(e, Invariant::I1, &Cell::Holds), Judgement::Expected);
}

#[test]
fn a_protocol_expected_to_hold_must_hold_in_every_evaluated_cell() {
    let e = Expectation::of(Variant::Fenced);
    assert_eq!(e.violated, None);
    assert_eq!(judge(e, Invariant::I2, &Cell::Holds), Judgement::Expected);
    assert!(judge(e, Invariant::I2, &check(3)).is_unexpected());
    assert!(judge(e, Invariant::I6, &Cell::NotReached { why: "x".into() }).is_unexpected());
    assert!(judge(e, Invariant::I6, &Cell::Bounded { bound: "x".into() }).is_unexpected());
    assert_eq!(
        judge(e, Invariant::I7, &Cell::NotChecked),
        Judgement::NotApplicable
    );
}

#[test]
fn the_unexpected_cell_is_named_as_variant_invariant_engine() {
    let u = Unexpected {
        variant: Variant::DlqDrop,
        invariant: Invariant::I3,
        engine: Engine::Check,
        found: "holds",
        expected: "violated",
    };
    assert_eq!(
        u.to_string(),
        "unexpected: dlq-drop × I3 × check: holds, expected violated"
    );
}

#[test]
fn median_gap_counts_seeds_between_failures() {
    // Failures at seeds 3, 5, 13 of a range from 0: gaps 4, 2, 8 → median 4.
    assert_eq!(median_gap(0, &[3, 5, 13]), Some(4));
    // Two failures: the lower median of gaps 1 (seed 0) and 9.
    assert_eq!(median_gap(0, &[0, 9]), Some(1));
    assert_eq!(median_gap(0, &[7]), None);
    // Every seed fails: one seed per failure.
    assert_eq!(median_gap(100, &[100, 101, 102, 103]), Some(1));
}

#[test]
fn expect_overrides_parse_and_reject_bad_input() {
    assert_eq!(
        parse_expect("dlq-drop=I4"),
        Ok((Variant::DlqDrop, Some(Invariant::I4)))
    );
    assert_eq!(parse_expect("fenced=holds"), Ok((Variant::Fenced, None)));
    assert!(parse_expect("dlq-drop").is_err());
    assert!(parse_expect("nope=I1")
        .unwrap_err()
        .contains("unknown variant"));
    assert!(parse_expect("fenced=I9")
        .unwrap_err()
        .contains("unknown invariant"));
}
