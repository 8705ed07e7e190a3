//! Conformance: the RabbitMQ backend against the reference broker of the `rabbitmq` variant,
//! through the shared suite (`leasehold-conformance`): identical outputs — leases (ids,
//! attempts, deadlines), errors, expiries — and identical `BrokerView` state after every
//! step, on a real server. No broker restarts (outside the model: docs/rabbitmq.md).

use crate::testing;
use leasehold_conformance::Suite;
use leasehold_model::{BrokerConfig, Variant};
use leasehold_rabbitmq::RabbitBackend;

const IGNORE: &str = "no RabbitMQ server: set LEASEHOLD_RABBITMQ_URL";

fn cases() -> u32 {
    std::env::var("LEASEHOLD_RABBITMQ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(320)
}

#[test]
#[ignore = "slow: the conformance suite on the server; .ci/run runs it (--include-ignored)"]
fn rabbitmq_matches_the_pure_broker() {
    let _ = IGNORE;
    let Some(url) = testing::url("conformance rabbitmq") else {
        return;
    };
    let cases = cases();
    let ran = Suite::new(Variant::RabbitMq)
        .cases(cases)
        .seed(0x4ab1)
        .ops_max(40)
        .restarts_percent(0)
        .run(|config| RabbitBackend::new(config, &url), |_, _, _| Ok(()));
    match ran {
        Ok(_) => eprintln!(
            "rabbitmq: {cases} sequences identical on the reference broker and on RabbitMQ"
        ),
        Err(e) => panic!("{e}"),
    }
}

/// The suite can fail on the server: the real queue judged as `fenced` (lowest seq first, a
/// nack's delay, renews) differs within a few sequences.
#[test]
#[ignore = "slow: the conformance suite on the server, run against another variant; .ci/run runs it (--include-ignored)"]
fn the_server_is_not_the_fenced_reference() {
    let Some(url) = testing::url("rabbitmq judged as fenced") else {
        return;
    };
    let error = Suite::new(Variant::Fenced)
        .cases(64)
        .restarts_percent(0)
        .run(
            |config| {
                let rabbit = BrokerConfig {
                    variant: Variant::RabbitMq,
                    ..*config
                };
                RabbitBackend::new(&rabbit, &url)
            },
            |_, _, _| Ok(()),
        )
        .expect_err("the server is not the fenced reference");
    assert!(error.contains("step"), "{error}");
}

/// `rabbitmq-channel`: each worker its own connection and a channel per group holding several
/// deliveries; the suite's settles of stale tags reach the server's `406` and its returns.
#[test]
#[ignore = "slow: the conformance suite on the server; .ci/run runs it (--include-ignored)"]
fn rabbitmq_channel_matches_the_pure_broker() {
    let Some(url) = testing::url("conformance rabbitmq-channel") else {
        return;
    };
    let cases = cases();
    let ran = Suite::new(Variant::RabbitMqChannel)
        .cases(cases)
        .seed(0x4ab2)
        .ops_max(40)
        .restarts_percent(0)
        .run(|config| RabbitBackend::new(config, &url), |_, _, _| Ok(()));
    match ran {
        Ok(_) => eprintln!(
            "rabbitmq-channel: {cases} sequences identical on the reference broker and on RabbitMQ"
        ),
        Err(e) => panic!("{e}"),
    }
}

/// The suite can fail there too: the channel-per-worker server judged as the channel-per-
/// delivery `rabbitmq` reference differs (a stale tag on a new channel settles a delivery).
#[test]
#[ignore = "slow: the conformance suite on the server, run against another variant; .ci/run runs it (--include-ignored)"]
fn the_channel_server_is_not_the_rabbitmq_reference() {
    let Some(url) = testing::url("rabbitmq-channel judged as rabbitmq") else {
        return;
    };
    let error = Suite::new(Variant::RabbitMq)
        .cases(64)
        .restarts_percent(0)
        .run(
            |config| {
                let channel = BrokerConfig {
                    variant: Variant::RabbitMqChannel,
                    ..*config
                };
                RabbitBackend::new(&channel, &url)
            },
            |_, _, _| Ok(()),
        )
        .expect_err("a channel per worker is not a channel per delivery");
    assert!(error.contains("step"), "{error}");
}
