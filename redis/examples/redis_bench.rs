//! Backend operations per second: the Redis backend (both variants) against the pure broker,
//! through the engines' `Backend` trait, on one workload. A benchmark, not a test: it prints a
//! Markdown table (reports/redis-bench.md quotes it).
//!
//! `cargo run --release -p leasehold-redis --example redis_bench [EVENTS] [REPEATS]`
//!
//! The server: `LEASEHOLD_REDIS_URL` if set, else a private `redis-server` on loopback.
//!
//! The workload is `leasehold_conformance::bench::workload`; the pure broker and both Redis
//! variants must end in the same state.

use leasehold_conformance::bench::{median, print_table, workload};
use leasehold_model::{Broker, BrokerConfig, Variant};
#[path = "../tests/it/testing.rs"]
mod testing;

use leasehold_redis::{RedisBackend, Target};

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u32 = args.next().map_or(2000, |a| a.parse().expect("EVENTS"));
    let repeats: usize = args.next().map_or(5, |a| a.parse().expect("REPEATS"));
    let target = || match testing::shared_target("bench") {
        Some(Target::Url(url)) => Target::Url(url),
        Some(Target::Owned(server)) => Target::Owned(server),
        _ => panic!("bench: no Redis server (set LEASEHOLD_REDIS_URL or install redis-server)"),
    };
    let server = target();
    let config = |variant| BrokerConfig {
        group_count: 1,
        lease_ms: 5,
        max_attempts: 3,
        variant,
    };
    let mut rows = Vec::new();
    for (name, variant) in [
        ("pure broker (redis-streams)", Variant::RedisStreams),
        (
            "pure broker (redis-streams-fenced)",
            Variant::RedisStreamsFenced,
        ),
        ("Redis, redis-streams", Variant::RedisStreams),
        ("Redis, redis-streams-fenced", Variant::RedisStreamsFenced),
    ] {
        let runs = (0..repeats)
            .map(|_| {
                if name.starts_with("pure") {
                    workload(&mut Broker::new(config(variant)), events)
                } else {
                    let shared = match &server {
                        Target::Url(url) => Target::Url(url.clone()),
                        Target::Owned(server) => Target::Owned(server.clone()),
                        Target::Pooled(_) => unreachable!(),
                    };
                    let mut redis = RedisBackend::new(&config(variant), shared).expect("backend");
                    workload(&mut redis, events)
                }
            })
            .collect();
        rows.push((name, median(runs)));
    }
    let ends: Vec<&str> = rows.iter().map(|(_, run)| run.end.as_str()).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?}");
    println!(
        "Command: `cargo run --release -p leasehold-redis --example redis_bench {events} {repeats}`\n"
    );
    println!(
        "Workload: {events} events, one group, one consumer; {} operations per run; end state: {}; median of {repeats} runs. Server: {}.\n",
        rows[0].1.ops,
        rows[0].1.end,
        server.url()
    );
    print_table(&rows, |name| if name.contains("fenced") { 1 } else { 0 });
}
