//! Throughput of the embedded broker against a `Mutex` around the pure broker: fetch + ack
//! loops over many events, at 1 and 2 threads. A benchmark, not a test: it prints a Markdown
//! report (reports/embedded-bench.md is this output).
//!
//! `cargo run --release -p leasehold-embedded --example bench [EVENTS] [REPEATS]`

use leasehold_embedded::{EmbeddedBroker, ManualClock};
use leasehold_model::{Broker, BrokerConfig, Lease, SettleError, Variant};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The operations the workload needs, whatever the broker behind them.
trait Queue: Send + Sync {
    fn fetch_one(&self) -> Option<Lease>;
    fn ack(&self, lease: &Lease) -> Result<(), SettleError>;
    fn frontier(&self) -> u32;
}

const NOW_MS: u64 = 0;

impl Queue for EmbeddedBroker {
    fn fetch_one(&self) -> Option<Lease> {
        self.fetch_at(0, 1, NOW_MS, None)
            .expect("valid fetch")
            .pop()
    }
    fn ack(&self, lease: &Lease) -> Result<(), SettleError> {
        let request = leasehold_model::SettleRequest::new(lease, leasehold_model::SettleOp::Ack, 0);
        self.settle_at(&request, NOW_MS).map(drop)
    }
    fn frontier(&self) -> u32 {
        leasehold_model::BrokerView::frontier(self, 0)
    }
}

impl Queue for Mutex<Broker> {
    fn fetch_one(&self) -> Option<Lease> {
        let mut broker = self.lock().expect("lock");
        broker.fetch(0, 1, NOW_MS, None).expect("valid fetch").pop()
    }
    fn ack(&self, lease: &Lease) -> Result<(), SettleError> {
        self.lock().expect("lock").ack(lease, NOW_MS)
    }
    fn frontier(&self) -> u32 {
        self.lock().expect("lock").frontier(0)
    }
}

/// The embedded broker behind one global lock: its algorithms without its concurrency.
struct Serialized(Mutex<EmbeddedBroker>);

impl Queue for Serialized {
    fn fetch_one(&self) -> Option<Lease> {
        self.0.lock().expect("lock").fetch_one()
    }
    fn ack(&self, lease: &Lease) -> Result<(), SettleError> {
        Queue::ack(&*self.0.lock().expect("lock"), lease)
    }
    fn frontier(&self) -> u32 {
        Queue::frontier(&*self.0.lock().expect("lock"))
    }
}

fn config() -> BrokerConfig {
    BrokerConfig {
        group_count: 1,
        lease_ms: 60_000,
        max_attempts: 3,
        variant: Variant::Fenced,
    }
}

fn embedded(events: u32) -> EmbeddedBroker {
    let broker =
        EmbeddedBroker::new(&config(), Arc::new(ManualClock::new(NOW_MS))).expect("fenced");
    for _ in 0..events {
        broker.publish();
    }
    broker
}

fn pure(events: u32) -> Mutex<Broker> {
    let mut broker = Broker::new(config());
    for _ in 0..events {
        broker.publish();
    }
    Mutex::new(broker)
}

/// Every thread fetches and acks until nothing is left; returns operations (fetches + acks)
/// per second. With `held`, the first event is fetched before and its lease held throughout (a
/// poison event's): the frontier stays at 0 while everything after it is acked.
fn run(queue: Arc<dyn Queue>, threads: usize, events: u32, held: bool) -> f64 {
    let _held = held.then(|| queue.fetch_one().expect("an event to hold"));
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let queue = queue.clone();
            std::thread::spawn(move || {
                let mut ops = 0u64;
                while let Some(lease) = queue.fetch_one() {
                    queue.ack(&lease).expect("a current lease acks");
                    ops += 2;
                }
                ops + 1 // the final empty fetch
            })
        })
        .collect();
    let ops: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    let elapsed = start.elapsed();
    let frontier = if held { 0 } else { events };
    assert_eq!(
        queue.frontier(),
        frontier,
        "every event acked but the one held"
    );
    ops as f64 / elapsed.max(Duration::from_nanos(1)).as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Builds a fresh, fully published queue for one run.
type MakeQueue<'a> = dyn Fn() -> Arc<dyn Queue> + 'a;

fn measure(make: &MakeQueue<'_>, threads: usize, events: u32, repeats: usize, held: bool) -> f64 {
    median(
        (0..repeats)
            .map(|_| run(make(), threads, events, held))
            .collect(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u32 = args
        .next()
        .map_or(20_000, |a| a.parse().expect("EVENTS is a number"));
    let repeats: usize = args
        .next()
        .map_or(5, |a| a.parse().expect("REPEATS is a number"));
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!("# Embedded broker throughput");
    println!();
    println!(
        "Command: `cargo run --release -p leasehold-embedded --example bench {events} {repeats}`"
    );
    println!();
    println!(
        "Workload: {events} events published up front, one group; each thread loops fetch(limit 1) + ack \
         until the stream is drained. Operations/s = (fetches + acks) / wall time, median of \
         {repeats} runs. Machine: {cores} cores, shared with other builds while measured."
    );
    println!();
    let candidates: [(&str, &MakeQueue<'_>); 3] = [
        ("Mutex<Broker> (pure, baseline)", &|| Arc::new(pure(events))),
        ("Mutex<EmbeddedBroker> (serialised)", &|| {
            Arc::new(Serialized(Mutex::new(embedded(events))))
        }),
        ("EmbeddedBroker (lock-free slots)", &|| {
            Arc::new(embedded(events))
        }),
    ];
    for held in [false, true] {
        if held {
            println!();
            println!(
                "With one lease held at the front (fetched before the loop, never settled: a \
                 poison event's), so the frontier stays at 0 while the {} events after it are acked:",
                events.saturating_sub(1)
            );
        }
        println!();
        println!("| broker | threads | ops/s | vs Mutex<Broker> at the same threads |");
        println!("|---|---|---|---|");
        for threads in [1, 2] {
            let mut baseline = None;
            for (name, make) in candidates {
                let ops = measure(make, threads, events, repeats, held);
                let base = *baseline.get_or_insert(ops);
                println!("| {name} | {threads} | {ops:.0} | {:.2}× |", ops / base);
            }
        }
    }
}
