//! The committed scripted scenarios of the `rabbitmq` variant, replayed on a real RabbitMQ
//! server as well as on the pure broker: the same timeline, step results, violations,
//! expectation verdicts and trace hash. The server's timelines are pinned as snapshots.

use crate::testing;
use leasehold_model::{Broker, Variant};
use leasehold_rabbitmq::RabbitBackend;
use leasehold_sim::seeded::seeded_file::parse_toml;
use leasehold_sim::{parse, script};
use std::path::PathBuf;

/// Every scenario file of `scenarios/` (not its sub-folders) whose variant is `rabbitmq` or
/// `rabbitmq-channel`, in name order.
fn rabbitmq_scenarios() -> Vec<(String, String)> {
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
            Variant::from_name(&variant)
                .is_some_and(|v| v.is_rabbitmq())
                .then_some((name, src))
        })
        .collect()
}

#[cfg_attr(
    leasehold_no_rabbitmq,
    ignore = "no RabbitMQ server: set LEASEHOLD_RABBITMQ_URL"
)]
#[test]
fn the_rabbitmq_scenarios_replay_on_the_server_as_on_the_pure_broker() {
    let Some(url) = testing::url("rabbitmq scenarios") else {
        return;
    };
    let mut names = Vec::new();
    for (name, src) in rabbitmq_scenarios() {
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        let config = script.setup.broker_config();
        let pure = script::run(&script, Broker::new(config));
        let backend = RabbitBackend::new(&config, &url).unwrap_or_else(|e| panic!("{e}"));
        let actual = script::run(&script, backend);
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        assert_eq!(actual.steps, pure.steps, "{name}: step results");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        assert_eq!(actual.trace_hash, pure.trace_hash, "{name}: trace hash");
        assert!(actual.matched, "{name}: {:?}", actual.mismatches);
        let results: Vec<&str> = actual.steps.iter().map(|s| s.actual.as_str()).collect();
        match name.as_str() {
            // Each 406 closed c1's channel and returned its other delivery to c2 while c1
            // held it (I2): first E2 (a duplicated ack), then E3 (E2's stale tag on c1's new
            // channel).
            "rabbitmq-channel-406-returns-siblings.toml" => {
                assert_eq!(
                    results,
                    [
                        "ok",
                        "ok",
                        "stale_lease",
                        "ok",
                        "ok",
                        "stale_lease",
                        "ok",
                        "ok",
                        "ok"
                    ]
                );
                assert!(!actual.violations.is_empty());
                assert!(
                    actual.timeline[4].contains("c2 fetches event E2"),
                    "{}",
                    actual.timeline[4]
                );
                assert!(
                    actual.timeline[8].contains("c2 fetches event E3"),
                    "{}",
                    actual.timeline[8]
                );
            }
            // c1's late ack is refused by the server's 406; c2's counts.
            "rabbitmq-stale-tag.toml" => {
                assert_eq!(results[results.len() - 2..], ["stale_lease", "ok"])
            }
            // The dead letter came back from the dead-letter queue (x-death delivery_limit).
            "rabbitmq-delivery-limit.toml" => assert!(actual.timeline[3].contains("dead-lettered")),
            _ => {}
        }
        let shown = format!("{}\n{}", actual.header, actual.timeline.join("\n"));
        insta::assert_snapshot!(name.trim_end_matches(".toml"), shown);
        names.push(name);
    }
    assert_eq!(
        names,
        [
            "rabbitmq-channel-406-returns-siblings.toml",
            "rabbitmq-crash-redelivered.toml",
            "rabbitmq-delivery-limit.toml",
            "rabbitmq-stale-tag.toml"
        ]
    );
}
