//! Each property of the stateright model reports its discovery once: the first state that
//! violates an `always` property (satisfies a `sometimes` one) is reported, later ones are not,
//! and the other properties are not affected.

use leasehold_model::check::{shortest_counterexamples, CheckConfig, LeaseModel, SAFETY};
use leasehold_model::{Invariant, Variant};
use stateright::Model;

#[test]
fn a_property_reports_its_first_discovery_only() {
    let config = CheckConfig::default_for(Variant::UnfencedSettle);
    // unfenced-settle breaks I1 (stale-never-counts): take the state at the end of its
    // shortest counterexample, which violates I1 and nothing else the search asked for.
    let search = shortest_counterexamples(
        &LeaseModel::new(config.clone()),
        &[Invariant::I1],
        1_000_000,
    );
    let violating = search.found[0].states.last().expect("a path").clone();
    let initial = search.found[0].states[0].clone();

    let model = LeaseModel::new(config);
    let properties = model.properties();
    let i1 = SAFETY
        .iter()
        .position(|(i, _)| *i == Invariant::I1)
        .expect("I1");
    let i2 = SAFETY
        .iter()
        .position(|(i, _)| *i == Invariant::I2)
        .expect("I2");
    assert_eq!(properties[i1].name, SAFETY[i1].1);
    let holds = |index: usize, state| (properties[index].condition)(&model, state);

    // The initial state violates nothing.
    assert!(holds(i1, &initial));
    assert!(holds(i2, &initial));
    // The first violating state is the discovery...
    assert!(
        !holds(i1, &violating),
        "I1 discovered at its first violation"
    );
    // ...a second one is not reported again,
    assert!(holds(i1, &violating), "I1 reported once");
    // and another property is still evaluated on its own.
    assert!(holds(i2, &violating), "I2 holds at that state");
    assert!(!violating.oracle.violated(Invariant::I2));
}
