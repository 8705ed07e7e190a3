//! The blocking fetch on real threads: it times out empty-handed, and it wakes for a publish,
//! a nack and an expiry (on a real clock) well before its timeout.
#![cfg(not(loom))]

use leasehold_embedded::{Clock, EmbeddedBroker, ManualClock, MonotonicClock};
use leasehold_model::{BrokerConfig, BrokerView, Status, Variant};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn broker(clock: Arc<dyn Clock>, lease_ms: u64) -> Arc<EmbeddedBroker> {
    let config = BrokerConfig {
        group_count: 1,
        lease_ms,
        max_attempts: 2,
        variant: Variant::Fenced,
    };
    Arc::new(EmbeddedBroker::new(&config, clock).expect("fenced"))
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn times_out_empty_when_nothing_comes() {
    let broker = broker(Arc::new(ManualClock::new(0)), 1_000);
    let started = Instant::now();
    let leases = broker
        .fetch_blocking(0, 1, None, Duration::from_millis(30))
        .expect("valid fetch");
    assert!(leases.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "it waited the timeout"
    );
}

#[test]
fn wakes_for_a_publish_and_then_for_a_nack() {
    let broker = broker(Arc::new(ManualClock::new(0)), 1_000);
    let waiter = {
        let broker = broker.clone();
        std::thread::spawn(move || broker.fetch_blocking(0, 1, None, LONG))
    };
    broker.publish();
    let first = waiter.join().expect("waiter").expect("valid fetch");
    assert_eq!((first[0].seq, first[0].attempt), (1, 1));

    let waiter = {
        let broker = broker.clone();
        std::thread::spawn(move || broker.fetch_blocking(0, 1, None, LONG))
    };
    broker.nack(&first[0], 0).expect("current lease");
    let second = waiter.join().expect("waiter").expect("valid fetch");
    assert_eq!((second[0].seq, second[0].attempt), (1, 2));
    assert_ne!(second[0].lease_id, first[0].lease_id);
}

#[test]
fn wakes_when_a_lease_expires_on_a_real_clock() {
    let broker = broker(Arc::new(MonotonicClock::new()), 20);
    broker.publish();
    let first = broker.fetch(0, 1, None).expect("valid fetch");
    assert_eq!(first.len(), 1);
    let started = Instant::now();
    let second = broker
        .fetch_blocking(0, 1, None, LONG)
        .expect("valid fetch");
    assert_eq!(
        (second[0].seq, second[0].attempt),
        (1, 2),
        "redelivered after expiry"
    );
    assert!(started.elapsed() < LONG / 2, "woke long before the timeout");
    // The first holder's lease is stale now.
    assert_eq!(
        broker.ack(&first[0]),
        Err(leasehold_model::SettleError::StaleLease)
    );
    broker.ack(&second[0]).expect("current lease");
    assert_eq!(broker.status(0, 1).0, Status::Acked);
    assert_eq!(broker.frontier(0), 1);
}
