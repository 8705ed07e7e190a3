//! The server facts the `jetstream` variant rests on (docs/jetstream.md, F2, F3, F9), pinned on
//! a real nats-server: if a server version starts refusing late acks, this test fails and the
//! variant must change.

use crate::server::server;
use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures_util::StreamExt;
use leasehold_model::{Variant, VariantKind};
use std::time::Duration;

const ACK_WAIT: Duration = Duration::from_millis(200);

/// Pulls one message as the client named `worker`: its reply subject, or `None`.
async fn pull(url: &str, worker: &str, stream_name: &str) -> Option<String> {
    let client = async_nats::ConnectOptions::new()
        .name(worker)
        .connect(url)
        .await
        .expect("connect");
    let js = jetstream::new(client);
    let consumer: jetstream::consumer::PullConsumer = js
        .get_stream(stream_name)
        .await
        .expect("stream")
        .get_consumer("g0")
        .await
        .expect("consumer");
    let mut batch = consumer
        .fetch()
        .max_messages(1)
        .messages()
        .await
        .expect("pull");
    let next = tokio::time::timeout(Duration::from_secs(2), batch.next()).await;
    let message = next.ok()??.expect("a delivery");
    Some(message.reply.as_ref().expect("a reply subject").to_string())
}

/// Sends `body` to `reply` as a request (AckSync) from a client of its own.
async fn ack_sync(url: &str, reply: &str, body: &'static str) -> String {
    let client = async_nats::connect(url).await.expect("connect");
    let answer = client
        .request(reply.to_string(), body.into())
        .await
        .expect("an answer to the ack");
    String::from_utf8_lossy(&answer.payload).into_owned()
}

/// The delivery count in a reply subject `$JS.ACK.<stream>.<consumer>.<count>.<sseq>.…`.
fn delivery_count(reply: &str) -> u64 {
    reply
        .split('.')
        .nth(4)
        .expect("count")
        .parse()
        .expect("a number")
}

async fn late_ack(url: &str, name: &str) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    let _ = js.delete_stream(name).await;
    let created = js
        .create_stream(stream::Config {
            name: name.to_string(),
            subjects: vec![format!("{name}.events")],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .expect("create stream");
    let mut consumer = created
        .create_consumer(pull::Config {
            durable_name: Some("g0".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: ACK_WAIT,
            ..Default::default()
        })
        .await
        .expect("create consumer");
    js.publish(format!("{name}.events"), "E1".into())
        .await
        .expect("publish")
        .await
        .expect("stored");

    let first = pull(url, "w1", name).await.expect("delivery 1");
    assert_eq!(delivery_count(&first), 1, "{first}");
    tokio::time::sleep(ACK_WAIT * 2).await;
    let second = pull(url, "w2", name)
        .await
        .expect("AckWait passed: a redelivery");
    assert_eq!(delivery_count(&second), 2, "{second}");

    let before = consumer.info().await.expect("info").clone();
    assert_eq!(before.num_ack_pending, 1);
    assert_eq!(before.ack_floor.stream_sequence, 0);

    // w1's ack of delivery 1, after the message went to w2: taken.
    assert_eq!(ack_sync(url, &first, "+ACK").await, "");
    let after = consumer.info().await.expect("info").clone();
    assert_eq!(
        after.num_ack_pending, 0,
        "the late ack settled w2's delivery"
    );
    assert_eq!(after.ack_floor.stream_sequence, 1);
    tokio::time::sleep(ACK_WAIT * 2).await;
    assert_eq!(pull(url, "w3", name).await, None, "never delivered again");

    js.delete_stream(name).await.expect("delete stream");
}

#[test]
#[cfg_attr(
    leasehold_no_nats,
    ignore = "no nats-server: set LEASEHOLD_NATS_URL or install nats-server"
)]
fn a_late_ack_of_the_first_delivery_settles_the_redelivered_message() {
    // The model's expectation, beside the server's behaviour.
    assert_eq!(Variant::JetStream.kind(), VariantKind::Protocol);
    assert_eq!(
        Variant::JetStream.expected_violation(),
        Some(leasehold_model::Invariant::I1)
    );
    let server = server();
    let name = format!("leasehold-facts-{}", std::process::id());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(late_ack(&server.url, &name));
}
