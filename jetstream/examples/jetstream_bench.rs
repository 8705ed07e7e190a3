//! Backend operations per second: the JetStream backend against the pure broker of the
//! `jetstream` variant, through the engines' `Backend` trait, on one workload
//! (`leasehold_conformance::bench::workload`). A benchmark, not a test: it prints a Markdown
//! table (reports/jetstream-bench.md quotes it); the pure broker and the server must end in
//! the same state.
//!
//! `cargo run --release -p leasehold-jetstream --example jetstream_bench [EVENTS] [REPEATS]`
//!
//! The server: `LEASEHOLD_NATS_URL` if set, else a private server on loopback.

#[path = "../tests/it/testing.rs"]
mod testing;

use leasehold_conformance::bench::{median, print_table, workload};
use leasehold_jetstream::JsBackend;
use leasehold_model::{Broker, BrokerConfig, Variant};

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u32 = args.next().map_or(2000, |a| a.parse().expect("EVENTS"));
    let repeats: usize = args.next().map_or(5, |a| a.parse().expect("REPEATS"));
    let server = testing::shared_target("bench").expect("bench: no nats-server");
    let config = BrokerConfig {
        group_count: 1,
        lease_ms: 5,
        max_attempts: 3,
        variant: Variant::JetStream,
    };
    let mut rows = Vec::new();
    for name in ["pure broker (jetstream)", "nats-server, jetstream"] {
        let runs = (0..repeats)
            .map(|_| {
                if name.starts_with("pure") {
                    workload(&mut Broker::new(config), events)
                } else {
                    let mut js = JsBackend::new(&config, server.clone()).expect("backend");
                    workload(&mut js, events)
                }
            })
            .collect();
        rows.push((name, median(runs)));
    }
    let ends: Vec<&str> = rows.iter().map(|(_, run)| run.end.as_str()).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?}");
    println!(
        "Command: `cargo run --release -p leasehold-jetstream --example jetstream_bench {events} {repeats}`\n"
    );
    println!(
        "Workload: {events} events, one group, one consumer; {} operations per run; end state: {}; median of {repeats} runs. Server: {}.\n",
        rows[0].1.ops,
        rows[0].1.end,
        leasehold_jetstream::redacted(server.url())
    );
    print_table(&rows, |_| 0);
}
