//! Settles the server refuses, many of them in one run: each `406` closes a channel whose
//! number the client keeps until its connection closes, and a RabbitMQ connection has 2047.
//! A run that sends more refused settles than that must go on as before (the backend replaces
//! the connection that carries them).

use crate::testing;
use leasehold_model::{Backend, BrokerConfig, SettleError, SettleOp, SettleRequest, Variant};
use leasehold_rabbitmq::RabbitBackend;

/// More than one connection's channel numbers.
const REFUSALS: usize = 2100;

fn config(variant: Variant) -> BrokerConfig {
    BrokerConfig {
        group_count: 1,
        lease_ms: 100,
        max_attempts: 3,
        variant,
    }
}

fn ack(lease: leasehold_model::Lease) -> SettleRequest {
    SettleRequest {
        lease,
        op: SettleOp::Ack,
        worker_clock_ms: 0,
    }
}

#[test]
#[ignore = "slow: 2,100 refused settles on the server; .ci/run runs it (--include-ignored)"]
fn more_refused_settles_than_a_connection_has_channels_rabbitmq() {
    let Some(url) = testing::url("refused settles (rabbitmq)") else {
        return;
    };
    let mut backend = RabbitBackend::new(&config(Variant::RabbitMq), &url).expect("a backend");
    backend.publish();
    let first = backend.fetch(0, 1, 0, None).expect("fetch")[0];
    assert_eq!(backend.expire_due(100).len(), 1, "the first lease expires");
    let second = backend.fetch(0, 1, 100, None).expect("fetch")[0];
    for n in 0..REFUSALS {
        assert_eq!(
            backend.settle(&ack(first), 101),
            Err(SettleError::StaleLease),
            "refused settle {n}"
        );
    }
    assert_eq!(backend.settle(&ack(second), 102), Ok(None));
    assert_eq!(leasehold_model::BrokerView::frontier(&backend, 0), 1);
}

#[test]
#[ignore = "slow: 2,100 refused settles on the server; .ci/run runs it (--include-ignored)"]
fn more_refused_settles_than_a_connection_has_channels_rabbitmq_channel() {
    let Some(url) = testing::url("refused settles (rabbitmq-channel)") else {
        return;
    };
    let mut backend =
        RabbitBackend::new(&config(Variant::RabbitMqChannel), &url).expect("a backend");
    backend.publish();
    backend.publish();
    let first = backend.fetch_as("w", 0, 1, 0, None).expect("fetch")[0];
    assert_eq!(backend.settle(&ack(first), 1), Ok(None));
    // The same tag again names nothing on the worker's channel: each time the server closes
    // that channel and the next settle travels on the worker's next one.
    for n in 0..REFUSALS {
        assert_eq!(
            backend.settle(&ack(first), 2),
            Err(SettleError::StaleLease),
            "refused settle {n}"
        );
    }
    let second = backend.fetch_as("w", 0, 1, 3, None).expect("fetch")[0];
    assert_eq!(second.seq, 2);
    assert_eq!(backend.settle(&ack(second), 4), Ok(None));
    assert_eq!(leasehold_model::BrokerView::frontier(&backend, 0), 2);
}
