//! Every library call, with `leasehold`'s default features off.

use leasehold::{BackendKind, CheckConfig, Invariant, Setup, Variant};
use leasehold_example_minimal::workspace;

fn out(test: &str) -> std::path::PathBuf {
    workspace().join(format!("target/leasehold/minimal/{test}"))
}

#[test]
fn check_proves_the_reference_and_catches_a_mutant() {
    let small = CheckConfig {
        event_count: 1,
        worker_count: 2,
        ..CheckConfig::tailored_for(Variant::Fenced)
    };
    let out = out("check");
    leasehold::check(small)
        .out(&out)
        .run()
        .expect("runs")
        .assert_holds();
    let mutant = leasehold::check(CheckConfig::tailored_for(Variant::UnfencedSettle))
        .out(&out)
        .run()
        .expect("runs");
    assert!(mutant.assert_violates(Invariant::I1).replays);
}

#[test]
fn a_campaign_finds_a_mutant_whose_seed_replays_and_shrinks() {
    let out = out("campaign");
    let template = leasehold::defaults::sim_template(Variant::UnfencedSettle).expect("defaults");
    let found = leasehold::campaign(template)
        .seeds(0..50)
        .out(&out)
        .run()
        .expect("runs");
    let failure = found.assert_fails(Invariant::I1);
    assert!(!failure.timeline.is_empty());
    let replayed = leasehold::replay(&failure.file, &BackendKind::Pure).expect("replays");
    replayed.assert_matches();
    assert!(!replayed.timeline().is_empty());
    let shrunk = leasehold::shrink(&failure.file)
        .out(out.join("shrunk.toml"))
        .run()
        .expect("shrinks");
    assert_eq!(shrunk.invariant, Some(Invariant::I1));
    let written = shrunk.written.expect("a scripted scenario that replays");
    leasehold::replay(written, &BackendKind::Pure)
        .expect("replays")
        .assert_matches();
}

#[test]
fn the_reference_protocol_campaign_is_clean() {
    leasehold::campaign(Setup::default_for(Variant::Fenced))
        .seeds(0..20)
        .out(out("clean"))
        .run()
        .expect("runs")
        .assert_clean();
}

#[test]
fn a_committed_scenario_replays_with_its_timeline() {
    let file = workspace().join("scenarios/t0-t5-stale-ack.toml");
    let replayed = leasehold::replay(file, &BackendKind::Pure).expect("replays");
    replayed.assert_matches();
    assert!(replayed.timeline().starts_with("t0 "));
}
