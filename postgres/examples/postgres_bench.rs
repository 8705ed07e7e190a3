//! Backend operations per second: the PostgreSQL backend (both variants) against the pure
//! broker, through the engines' `Backend` trait, on one workload
//! (`leasehold_conformance::bench::workload`). A benchmark, not a test: it prints a Markdown
//! table (reports/postgres-bench.md quotes it); the pure broker and both Postgres variants must
//! end in the same state.
//!
//! `cargo run --release -p leasehold-postgres --example postgres_bench [EVENTS] [REPEATS]`
//!
//! The server: `LEASEHOLD_POSTGRES_URL` if set, else a private server on loopback.

#[path = "../tests/it/testing.rs"]
mod testing;

use leasehold_conformance::bench::{median, print_table, workload};
use leasehold_model::{Broker, BrokerConfig, Variant};
use leasehold_postgres::PgBackend;

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u32 = args.next().map_or(2000, |a| a.parse().expect("EVENTS"));
    let repeats: usize = args.next().map_or(5, |a| a.parse().expect("REPEATS"));
    let server = testing::shared_target("bench").expect("bench: no PostgreSQL server");
    let config = |variant| BrokerConfig {
        group_count: 1,
        lease_ms: 5,
        max_attempts: 3,
        variant,
    };
    let mut rows = Vec::new();
    for (name, variant) in [
        ("pure broker (pg-visibility)", Variant::PgVisibility),
        ("pure broker (pg-fenced)", Variant::PgFenced),
        ("PostgreSQL, pg-visibility", Variant::PgVisibility),
        ("PostgreSQL, pg-fenced", Variant::PgFenced),
    ] {
        let runs = (0..repeats)
            .map(|_| {
                if name.starts_with("pure") {
                    workload(&mut Broker::new(config(variant)), events)
                } else {
                    let mut pg = PgBackend::new(&config(variant), server.clone()).expect("backend");
                    workload(&mut pg, events)
                }
            })
            .collect();
        rows.push((name, median(runs)));
    }
    let ends: Vec<&str> = rows.iter().map(|(_, run)| run.end.as_str()).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?}");
    println!(
        "Command: `cargo run --release -p leasehold-postgres --example postgres_bench {events} {repeats}`\n"
    );
    println!(
        "Workload: {events} events, one group, one consumer; {} operations per run; end state: {}; median of {repeats} runs. Server: {}.\n",
        rows[0].1.ops,
        rows[0].1.end,
        leasehold_postgres::redacted(server.url())
    );
    print_table(&rows, |name| if name.contains("fenced") { 1 } else { 0 });
}
