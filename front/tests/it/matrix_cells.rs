//! The matrix's Markdown cells: an expected violation whose evidence does not replay is
//! marked.

use leasehold_front::matrix::render::cell_text;
use leasehold_front::matrix::{Cell, Engine, EngineResult, Evidence, Expectation, Row};
use leasehold_front::{Invariant, Variant};
use std::collections::BTreeMap;

fn row(variant: Variant, cell: Cell) -> Row {
    let target = variant.expected_violation().expect("a mutant");
    let result = EngineResult {
        command: "leasehold check".into(),
        cells: BTreeMap::from([(target, cell)]),
        seconds: 0.0,
        stats: serde_json::Value::Null,
    };
    Row {
        variant,
        kind: variant.kind(),
        expectation: Expectation::of(variant),
        results: BTreeMap::from([(Engine::Check, result)]),
    }
}

#[test]
fn an_expected_violation_that_does_not_replay_is_marked() {
    let evidence = |replays| {
        Cell::Violated(Evidence::Check {
            depth: 2,
            scenario: Some("scenarios/dlq-drop-check-I3.toml".into()),
            replays,
        })
    };
    let good = row(Variant::DlqDrop, evidence(true));
    assert_eq!(
        cell_text(&good, Engine::Check, Invariant::I3),
        "**[violated (depth 2)](scenarios/dlq-drop-check-I3.toml)**"
    );
    let bad = row(Variant::DlqDrop, evidence(false));
    assert_eq!(
        cell_text(&bad, Engine::Check, Invariant::I3),
        "⚠ [violated (depth 2, does not replay)](scenarios/dlq-drop-check-I3.toml)"
    );
    assert_eq!(
        bad.unexpected()
            .first()
            .map(|u| u.to_string())
            .as_deref(),
        Some("unexpected: dlq-drop × I3 × check: violated, but its scenario does not replay, expected violated with evidence that replays")
    );
}
