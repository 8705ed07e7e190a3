//! Every counterexample `check` finds, for every mutant and `redis-streams` on its default
//! bounds, replays through the scenario executor (library API, pure broker) to the same
//! violation, and every step's result is the one the model saw.

use leasehold::cmd::check::scenario;
use leasehold_model::check::{shortest_counterexamples, CheckConfig, LeaseModel, SAFETY};
use leasehold_model::{Broker, Variant};
use leasehold_sim::{parse, script};
use stateright::{Checker, Model};

#[test]
fn every_counterexample_replays_to_the_same_violation() {
    let mut replayed = 0;
    for &variant in Variant::ALL {
        let Some(expected) = variant.expected_violation() else {
            continue;
        };
        let config = CheckConfig::default_for(variant);
        let checker = LeaseModel::new(config.clone())
            .with_symmetry(true)
            .checker()
            .spawn_dfs()
            .join();
        let violated: Vec<_> = SAFETY
            .iter()
            .filter(|(_, name)| checker.discovery(name).is_some())
            .map(|(inv, _)| *inv)
            .collect();
        assert!(violated.contains(&expected), "{variant}: {violated:?}");
        let model = LeaseModel::new(config);
        let search = shortest_counterexamples(&model, &violated, 10_000_000);
        assert_eq!(search.found.len(), violated.len(), "{variant}");
        for cx in &search.found {
            let text = toml::to_string(&scenario(&model, cx)).expect("toml");
            let file = format!("{variant}-{}.toml", cx.invariant.id());
            let script = parse::parse(&text, &file).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let replay = script::run(&script, Broker::new(script.setup.broker_config()));
            assert!(
                replay.matched,
                "{file} does not replay: {:?}\n{text}\n{}",
                replay.mismatches,
                replay.timeline.join("\n")
            );
            assert!(
                replay.violations.iter().any(|v| v.id == cx.invariant.id()),
                "{file}: {:?}",
                replay.violations
            );
            replayed += 1;
        }
    }
    assert!(replayed >= 13, "{replayed}");
}
