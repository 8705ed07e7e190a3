//! Backend operations per second on one workload, through the engines' `Backend` trait: what
//! the benchmarks of the server-backed backends (`redis/examples/redis_bench.rs`,
//! `postgres/examples/postgres_bench.rs`) run on the pure broker and on the server alike.
//!
//! Workload (one group, virtual time advancing 1 ms per fetch, lease 5 ms): EVENTS events are
//! published, then one consumer fetches one lease at a time until every event is settled. An
//! event whose seq is a multiple of 5 is rejected on its first delivery; an even one is renewed
//! and nacked on its first delivery (it stays pending until its lease passes, then is claimed
//! again) and acked on its second; the others are acked at once. Operations = publishes +
//! fetches + settles and renews.

use leasehold_model::{Backend, SettleOp, SettleRequest};
use std::time::{Duration, Instant};

/// One run of [`workload`].
#[derive(Debug, Clone)]
pub struct Run {
    /// Operations sent: publishes, fetches, settles and renews.
    pub ops: u64,
    /// How long they took.
    pub wall: Duration,
    /// The end state (the frontier, dead letters, the virtual clock): every backend of a
    /// variant must end in the same one.
    pub end: String,
}

/// Runs the workload of the module documentation on `backend` (one group, `events` events).
///
/// # Panics
/// When the backend refuses an operation a conforming backend accepts.
pub fn workload(backend: &mut dyn Backend, events: u32) -> Run {
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

/// The run of median wall time.
///
/// # Panics
/// When `runs` is empty.
pub fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by_key(|run| run.wall);
    let middle = runs.len() / 2;
    runs.swap_remove(middle)
}

/// Prints the Markdown table of `rows` (name, median run): operations per second, µs per
/// operation, and the ratio against the row `pure_of(name)` (the pure broker of that row's
/// variant), measured in the same process.
pub fn print_table(rows: &[(&str, Run)], pure_of: impl Fn(&str) -> usize) {
    println!("| backend | ops/s | µs per op | vs pure |");
    println!("|---|---|---|---|");
    for (name, run) in rows {
        let per_s = run.ops as f64 / run.wall.as_secs_f64();
        let pure = &rows[pure_of(name)].1;
        let pure_per_s = pure.ops as f64 / pure.wall.as_secs_f64();
        println!(
            "| {name} | {per_s:.0} | {:.1} | {:.3}× |",
            1e6 / per_s,
            per_s / pure_per_s
        );
    }
}
