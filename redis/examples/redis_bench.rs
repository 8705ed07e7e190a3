//! Backend operations per second: the Redis backend (both variants) against the pure broker,
//! through the engines' `Backend` trait, on one workload. A benchmark, not a test: it prints a
//! Markdown table (reports/redis-bench.md quotes it).
//!
//! `cargo run --release -p leasehold-redis --example redis_bench [EVENTS] [REPEATS]`
//!
//! The server: `LEASEHOLD_REDIS_URL` if set, else a private `redis-server` on loopback.
//!
//! Workload (one group, virtual time advancing 1 ms per fetch, lease 5 ms): EVENTS events are
//! published, then one consumer fetches one lease at a time until every event is settled. An
//! event whose seq is a multiple of 5 is rejected on its first delivery; an even one is renewed
//! and nacked on its first delivery (it stays pending until its lease passes, then is claimed
//! again) and acked on its second; the others are acked at once. Operations = publishes +
//! fetches + settles and renews; the pure broker and both Redis variants must end in the same
//! state.

use leasehold_model::{Backend, Broker, BrokerConfig, SettleOp, SettleRequest, Variant};
#[path = "../tests/it/testing.rs"]
mod testing;

use leasehold_redis::{RedisBackend, Target};
use std::time::{Duration, Instant};

struct Run {
    ops: u64,
    wall: Duration,
    end: String,
}

fn workload(backend: &mut dyn Backend, events: u32) -> Run {
    let started = Instant::now();
    let mut ops = 0u64;
    for _ in 0..events {
        backend.publish();
        ops += 1;
    }
    let mut now_ms = 0;
    while backend.frontier(0) < events {
        now_ms += 1;
        let leases = backend.fetch_as("c1", 0, 1, now_ms, None).expect("fetch");
        ops += 1;
        let Some(lease) = leases.first() else {
            continue;
        };
        let settle = |op: SettleOp| SettleRequest::new(lease, op, now_ms);
        let first = lease.attempt == 1;
        let requests = if first && lease.seq % 5 == 0 {
            vec![settle(SettleOp::Reject {
                reason: leasehold_model::Reason::new("poison"),
            })]
        } else if first && lease.seq % 2 == 0 {
            vec![
                settle(SettleOp::Renew { extend_ms: 5 }),
                settle(SettleOp::Nack {
                    delay_ms: 0,
                    reason: None,
                }),
            ]
        } else {
            vec![settle(SettleOp::Ack)]
        };
        for request in requests {
            backend
                .settle_as("c1", &request, now_ms)
                .expect("a current lease settles");
            ops += 1;
        }
    }
    let wall = started.elapsed();
    let dead = (1..=events)
        .filter(|&seq| backend.status_kind(0, seq) == leasehold_model::Status::DeadLettered)
        .count();
    Run {
        ops,
        wall,
        end: format!(
            "frontier {}, {dead} dead letters, clock {now_ms} ms",
            backend.frontier(0)
        ),
    }
}

fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by_key(|run| run.wall);
    let middle = runs.len() / 2;
    runs.swap_remove(middle)
}

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
    println!("| backend | ops/s | µs per op | vs pure |");
    println!("|---|---|---|---|");
    for (name, run) in &rows {
        let per_s = run.ops as f64 / run.wall.as_secs_f64();
        let pure = &rows[if name.contains("fenced") { 1 } else { 0 }].1;
        let pure_per_s = pure.ops as f64 / pure.wall.as_secs_f64();
        println!(
            "| {name} | {per_s:.0} | {:.1} | {:.3}× |",
            1e6 / per_s,
            per_s / pure_per_s
        );
    }
}
