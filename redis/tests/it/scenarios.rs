//! Every committed scenario of a Redis variant, replayed on a real Redis server as well as on
//! the pure broker: scripted ones by the scenario executor (same timeline, step results,
//! violations and expectation verdicts — among them the late XACK that counts and its fenced
//! twin that is refused), seeded ones by the simulator (same trace, same trace hash, same
//! violations).

use crate::testing;
use leasehold_model::{Broker, Variant};
use leasehold_redis::{RedisBackend, RedisServer, Target};
use leasehold_sim::seeded::seeded_file::{check_expect, parse_toml, setup_from_scenario};
use leasehold_sim::{parse, script};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            scenario_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "toml") {
            out.push(path);
        }
    }
}

fn redis_scenarios() -> Vec<(String, String)> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"))
        .canonicalize()
        .expect("the scenarios folder");
    let mut files = Vec::new();
    scenario_files(&root, &mut files);
    files
        .into_iter()
        .filter_map(|path| {
            let name = path.display().to_string();
            let src = std::fs::read_to_string(&path).expect("readable scenario");
            let variant = parse_toml(&src).ok()?.variant;
            Variant::from_name(&variant)
                .is_some_and(Variant::is_redis)
                .then_some((name, src))
        })
        .collect()
}

fn backend(server: &Arc<RedisServer>, config: &leasehold_model::BrokerConfig) -> RedisBackend {
    RedisBackend::new(config, Target::Owned(server.clone())).expect("a redis variant")
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn scripted_redis_scenarios_replay_identically_on_redis() {
    let Some(server) = testing::owned_server("scripted redis scenarios") else {
        return;
    };
    let mut replayed = Vec::new();
    for (name, src) in redis_scenarios() {
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        if script.steps.is_empty() {
            continue; // Seeded: the simulator's (next test).
        }
        let config = script.setup.broker_config();
        let pure = script::run(&script, Broker::new(config));
        let actual = script::run(&script, backend(&server, &config));
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        assert_eq!(actual.steps, pure.steps, "{name}: step results");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        assert_eq!(actual.mismatches, pure.mismatches, "{name}: expectations");
        assert_eq!(actual.trace_hash, pure.trace_hash, "{name}: trace hash");
        assert!(actual.matched, "{name}: {:?}", actual.mismatches);
        replayed.push((name, actual));
    }
    let find = |file: &str| {
        replayed
            .iter()
            .find(|(name, _)| name.ends_with(file))
            .map(|(_, replay)| replay)
            .unwrap_or_else(|| panic!("{file} replayed"))
    };
    // The late XACK counts on the real server: I1 breaks, and the rightful holder's ack is
    // the one refused.
    let late = find("redis-streams-late-xack.toml");
    assert!(late.violated(leasehold_model::Invariant::I1));
    let results: Vec<&str> = late.steps.iter().map(|s| s.actual.as_str()).collect();
    assert_eq!(results[4..], ["ok", "stale_lease"], "{:?}", late.timeline);
    // Fenced by the server-side script: the late XACK is refused, the holder's ack counts.
    let fenced = find("redis-streams-fenced-late-xack.toml");
    assert!(fenced.violations.is_empty());
    let results: Vec<&str> = fenced.steps.iter().map(|s| s.actual.as_str()).collect();
    assert_eq!(results[4..], ["stale_lease", "ok"], "{:?}", fenced.timeline);
    eprintln!(
        "{} scripted redis scenarios replayed on Redis:",
        replayed.len()
    );
    for (name, replay) in &replayed {
        eprintln!("  {name}: trace hash {}", replay.trace_hash);
    }
    assert!(
        replayed.len() >= 7,
        "the policy table (4), the control-flow example, the late XACKs (2)"
    );
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn seeded_redis_scenarios_replay_identically_on_redis() {
    let Some(server) = testing::owned_server("seeded redis scenarios") else {
        return;
    };
    let mut replayed = 0;
    for (name, src) in redis_scenarios() {
        let scenario = parse_toml(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        if scenario.seed.is_none() {
            continue;
        }
        let setup = setup_from_scenario(&scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        let config = setup.broker_config();
        let pure = leasehold_sim::seeded::run::run(&setup, Broker::new(config), &recorded());
        let restarts = server.restarts();
        let actual =
            leasehold_sim::seeded::run::run(&setup, backend(&server, &config), &recorded());
        assert_eq!(actual.trace, pure.trace, "{name}: trace");
        assert_eq!(actual.trace_hash, pure.trace_hash, "{name}: trace hash");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        let mismatches = check_expect(&scenario, &actual);
        assert!(mismatches.is_empty(), "{name}: {mismatches:?}");
        eprintln!(
            "{name}: trace hash {:016x}, {} server restarts",
            actual.trace_hash,
            server.restarts() - restarts
        );
        replayed += 1;
    }
    assert!(replayed >= 1, "the saved redis-streams finding");
}

/// Run options that keep the trace.
fn recorded() -> leasehold_sim::seeded::run::RunOptions {
    leasehold_sim::seeded::run::RunOptions {
        record: true,
        ..Default::default()
    }
}
