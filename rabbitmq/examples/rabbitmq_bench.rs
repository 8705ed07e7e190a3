//! Backend operations per second: the RabbitMQ backend against the pure broker of the
//! `rabbitmq` variant, through the engines' `Backend` trait. A benchmark, not a test: it prints
//! a Markdown table (reports/rabbitmq-bench.md quotes it); both must end in the same state.
//!
//! The workload is `leasehold_conformance::bench`'s without its renews (RabbitMQ has none):
//! publish `EVENTS` events, then one consumer fetches one at a time and settles by seq —
//! every fifth event rejected on its first delivery, every other even one nacked once, the
//! rest acked.
//!
//! `LEASEHOLD_RABBITMQ_URL=amqp://… cargo run --release -p leasehold-rabbitmq --example rabbitmq_bench [EVENTS] [REPEATS]`

use leasehold_model::{
    Backend, Broker, BrokerConfig, Reason, SettleOp, SettleRequest, Status, Variant,
};
use leasehold_rabbitmq::{RabbitBackend, DEFAULT_URL};
use std::time::{Duration, Instant};

fn workload(backend: &mut dyn Backend, events: u32) -> (u64, Duration, String) {
    let started = Instant::now();
    let mut ops = 0u64;
    for _ in 0..events {
        backend.publish();
        ops += 1;
    }
    let mut now_ms = 0;
    while backend.frontier(0) < events {
        now_ms += 1;
        let leases = backend.fetch(0, 1, now_ms, None).expect("fetch");
        ops += 1;
        let Some(lease) = leases.first() else {
            continue;
        };
        let first = lease.attempt == 1;
        let op = if first && lease.seq % 5 == 0 {
            SettleOp::Reject {
                reason: Reason::new("poison"),
            }
        } else if first && lease.seq % 2 == 0 {
            SettleOp::Nack {
                delay_ms: 0,
                reason: None,
            }
        } else {
            SettleOp::Ack
        };
        backend
            .settle(&SettleRequest::new(lease, op, now_ms), now_ms)
            .expect("a current lease settles");
        ops += 1;
    }
    let wall = started.elapsed();
    let dead = (1..=events)
        .filter(|&seq| backend.status_kind(0, seq) == Status::DeadLettered)
        .count();
    (
        ops,
        wall,
        format!(
            "frontier {}, {dead} dead letters, clock {now_ms} ms",
            backend.frontier(0)
        ),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u32 = args.next().map_or(500, |a| a.parse().expect("EVENTS"));
    let repeats: usize = args.next().map_or(3, |a| a.parse().expect("REPEATS"));
    let url = std::env::var("LEASEHOLD_RABBITMQ_URL").unwrap_or_else(|_| DEFAULT_URL.into());
    let config = BrokerConfig {
        group_count: 1,
        lease_ms: 5,
        max_attempts: 3,
        variant: Variant::RabbitMq,
    };
    let mut rows = Vec::new();
    for name in ["pure broker (rabbitmq)", "RabbitMQ server"] {
        let mut runs: Vec<(u64, Duration, String)> = (0..repeats)
            .map(|_| {
                if name.starts_with("pure") {
                    workload(&mut Broker::new(config), events)
                } else {
                    let mut mq = RabbitBackend::new(&config, &url).expect("backend");
                    workload(&mut mq, events)
                }
            })
            .collect();
        runs.sort_by_key(|r| r.1);
        rows.push((name, runs.swap_remove(repeats / 2)));
    }
    assert_eq!(rows[0].1 .2, rows[1].1 .2, "the same end state");
    println!("Command: `cargo run --release -p leasehold-rabbitmq --example rabbitmq_bench {events} {repeats}`\n");
    println!(
        "Workload: {events} events, one group, one consumer; {} operations per run; end state: {}; median of {repeats} runs. Server: {}.\n",
        rows[0].1 .0,
        rows[0].1 .2,
        leasehold_rabbitmq::redacted(&url)
    );
    println!("| backend | operations | wall | operations/s |\n|---|---|---|---|");
    for (name, (ops, wall, _)) in &rows {
        println!(
            "| {name} | {ops} | {:.6} s | {:.0} |",
            wall.as_secs_f64(),
            *ops as f64 / wall.as_secs_f64()
        );
    }
}
