//! The committed scripted scenarios of the Postgres variants, replayed on a real PostgreSQL
//! server as well as on the pure broker: the same timeline, step results, violations,
//! expectation verdicts and trace hash. The two late deletes are pinned as snapshots: on
//! `pg-visibility` the stale delete by id counts (I1), on `pg-fenced` the same schedule is
//! refused.

use crate::testing;
use leasehold_model::{Broker, Invariant, Variant};
use leasehold_postgres::PgBackend;
use leasehold_sim::seeded::seeded_file::parse_toml;
use leasehold_sim::{parse, script};
use std::path::PathBuf;

/// Every scenario file of `scenarios/` (not its sub-folders: those are seeded findings) whose
/// variant is a Postgres one, in name order.
fn postgres_scenarios() -> Vec<(String, String)> {
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
                .is_some_and(Variant::is_postgres)
                .then_some((name, src))
        })
        .collect()
}

#[cfg_attr(
    leasehold_no_postgres,
    ignore = "no PostgreSQL server: set LEASEHOLD_POSTGRES_URL or install postgresql"
)]
#[test]
fn the_late_delete_counts_by_id_and_is_refused_by_token() {
    let Some(target) = testing::shared_target("postgres scenarios") else {
        return;
    };
    let mut replayed = Vec::new();
    for (name, src) in postgres_scenarios() {
        let script = parse::parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        let config = script.setup.broker_config();
        let pure = script::run(&script, Broker::new(config));
        let backend = PgBackend::new(&config, target.clone()).unwrap_or_else(|e| panic!("{e}"));
        let actual = script::run(&script, backend);
        assert_eq!(actual.timeline, pure.timeline, "{name}: timeline");
        assert_eq!(actual.steps, pure.steps, "{name}: step results");
        assert_eq!(actual.violations, pure.violations, "{name}: violations");
        assert_eq!(actual.trace_hash, pure.trace_hash, "{name}: trace hash");
        assert!(actual.matched, "{name}: {:?}", actual.mismatches);
        replayed.push((name, actual));
    }
    let names: Vec<&str> = replayed.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "pg-fenced-late-delete.toml",
            "pg-visibility-late-delete.toml"
        ]
    );
    for (name, replay) in &replayed {
        let results: Vec<&str> = replay.steps.iter().map(|s| s.actual.as_str()).collect();
        let late_and_rightful = &results[results.len() - 2..];
        if name.starts_with("pg-visibility") {
            // The late delete by id deletes the row c2 holds; c2's own delete finds 0 rows.
            assert!(replay.violated(Invariant::I1), "{:?}", replay.timeline);
            assert_eq!(late_and_rightful, ["ok", "stale_lease"]);
        } else {
            assert!(replay.violations.is_empty(), "{:?}", replay.violations);
            assert_eq!(late_and_rightful, ["stale_lease", "ok"]);
        }
        let shown = format!("{}\n{}", replay.header, replay.timeline.join("\n"));
        insta::assert_snapshot!(name.trim_end_matches(".toml"), shown);
    }
}
