//! Every committed scenario, replayed by the scenario executor on the embedded broker as well as
//! on the pure one: for each scripted scenario of the `fenced` protocol the two replays must be
//! identical (timeline, step results, violations, expectation mismatches), and a scenario that
//! matches its file on the pure broker — in particular every one expecting the invariants to
//! hold — matches it on the embedded broker. Scenarios of other variants are refused by the
//! embedded broker with a one-line error, which is checked too.
#![cfg(not(loom))]

use leasehold_embedded::EmbeddedBackend;
use leasehold_model::{Broker, Variant};
use leasehold_sim::{parse, script};
use std::path::PathBuf;

fn scenario_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn fenced_scenarios_replay_identically_on_the_embedded_broker() {
    let (mut replayed, mut refused, mut seeded) = (Vec::new(), 0, 0);
    for path in scenario_files() {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(&path).expect("readable scenario");
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        if script.steps.is_empty() {
            seeded += 1; // A seeded scenario is the simulator's, not the executor's.
            continue;
        }
        let config = script.setup.broker_config();
        let embedded = match EmbeddedBackend::new(&config) {
            Ok(embedded) => embedded,
            Err(message) => {
                assert_ne!(script.variant, Variant::Fenced, "{name}: {message}");
                assert!(!message.contains('\n'), "{name}: one-line error: {message}");
                refused += 1;
                continue;
            }
        };
        let pure = script::run(&script, Broker::new(config));
        let actual = script::run(&script, embedded);
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        assert_eq!(actual.steps, pure.steps, "{name}: step results");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        assert_eq!(actual.mismatches, pure.mismatches, "{name}: expectations");
        if script.expect.violated.is_none() || pure.matched {
            assert!(actual.matched, "{name}: {:?}", actual.mismatches);
        }
        replayed.push(name);
    }
    eprintln!(
        "{} fenced scenarios replayed on both brokers, {refused} of other variants refused, \
         {seeded} seeded left to the simulator",
        replayed.len()
    );
    assert!(!replayed.is_empty(), "no fenced scenario found");
}

/// The scenarios that expect every invariant to hold but are written for a Redis variant (the
/// second seed's policy table and control-flow example, the fenced late XACK): the embedded
/// broker implements `fenced` only, so each is replayed as `fenced` — the same steps, workers,
/// policy and expectations — and must match every expectation of its file on the embedded
/// broker, as it does on the pure broker.
#[test]
fn hold_scenarios_of_other_variants_hold_on_the_embedded_broker_as_fenced() {
    let mut retargeted = Vec::new();
    for path in scenario_files() {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(&path).expect("readable scenario");
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        let expects_hold = script.expect.violated.is_none() && !script.steps.is_empty();
        // `rabbitmq` settles like `fenced` but serves returned messages first, with no nack
        // delay and no renew: its scripts' expected replies are its own, not fenced's.
        if script.variant == Variant::Fenced || script.variant == Variant::RabbitMq || !expects_hold
        {
            continue;
        }
        let fenced_src = src.replacen(
            &format!("variant = \"{}\"", script.variant.name()),
            "variant = \"fenced\"",
            1,
        );
        let fenced = parse::parse(&fenced_src, &name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fenced.variant, Variant::Fenced, "{name}: retargeted");
        let config = fenced.setup.broker_config();
        let pure = script::run(&fenced, Broker::new(config));
        let embedded = EmbeddedBackend::new(&config).expect("fenced is accepted");
        let actual = script::run(&fenced, embedded);
        assert!(
            pure.matched,
            "{name} as fenced, pure: {:?}",
            pure.mismatches
        );
        assert!(
            actual.matched,
            "{name} as fenced, embedded: {:?}",
            actual.mismatches
        );
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        retargeted.push(name);
    }
    assert!(
        retargeted.len() >= 6,
        "the policy table (4), the control-flow example and the fenced late XACK: {retargeted:?}"
    );
}
