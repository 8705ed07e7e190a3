//! The committed scripted scenarios of the `jetstream` variant, replayed on a real nats-server
//! as well as on the pure broker: the same timeline, step results, violations, expectation
//! verdicts and trace hash. The late ack is pinned as a snapshot: w1's `+ACK` on delivery 1,
//! sent before its crash, lands after the server redelivered the message to w2 and counts (I1).

use crate::testing;
use leasehold_jetstream::JsBackend;
use leasehold_model::{Broker, Invariant, Variant};
use leasehold_sim::seeded::seeded_file::parse_toml;
use leasehold_sim::{parse, script};
use std::path::PathBuf;

/// Every scenario file of `scenarios/` (not its sub-folders) of the `jetstream` variant, in
/// name order.
fn jetstream_scenarios() -> Vec<(String, String)> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the scenarios folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let src = std::fs::read_to_string(&path).expect("readable scenario");
            let variant = parse_toml(&src).ok()?.variant;
            let name = path.file_name()?.to_str()?.to_string();
            (Variant::from_name(&variant) == Some(Variant::JetStream)).then_some((name, src))
        })
        .collect()
}

#[cfg_attr(
    leasehold_no_nats,
    ignore = "no nats-server: set LEASEHOLD_NATS_URL or install nats-server"
)]
#[test]
fn the_late_ack_counts_on_the_server() {
    let Some(target) = testing::shared_target("jetstream scenarios") else {
        return;
    };
    let mut names = Vec::new();
    for (name, src) in jetstream_scenarios() {
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        let config = script.setup.broker_config();
        let pure = script::run(&script, Broker::new(config));
        let backend = JsBackend::new(&config, target.clone()).unwrap_or_else(|e| panic!("{e}"));
        let actual = script::run(&script, backend);
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        assert_eq!(actual.steps, pure.steps, "{name}: step results");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        assert_eq!(actual.trace_hash, pure.trace_hash, "{name}: trace hash");
        assert!(actual.matched, "{name}: {:?}", actual.mismatches);
        if name == "jetstream-late-ack.toml" {
            // w1's late ack of delivery 1 counts; w2's ack of delivery 2 finds it settled.
            assert!(actual.violated(Invariant::I1), "{:?}", actual.timeline);
            let results: Vec<&str> = actual.steps.iter().map(|s| s.actual.as_str()).collect();
            assert_eq!(&results[results.len() - 2..], ["ok", "stale_lease"]);
            let shown = format!("{}\n{}", actual.header, actual.timeline.join("\n"));
            insta::assert_snapshot!(name.trim_end_matches(".toml"), shown);
        }
        names.push(name);
    }
    assert!(
        names.iter().any(|n| n == "jetstream-late-ack.toml"),
        "{names:?}"
    );
}
