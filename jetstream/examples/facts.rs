//! Observes, on a running nats-server, the JetStream behaviours the `jetstream` variant models
//! (docs/jetstream.md): `cargo run -p leasehold-jetstream --features facts --example facts -- nats://127.0.0.1:4222`.
//! Every experiment uses its own stream and deletes it.

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures_util::StreamExt;
use std::time::Duration;

type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const ACK_WAIT: Duration = Duration::from_millis(300);

struct Setup {
    js: jetstream::Context,
    consumer: jetstream::consumer::Consumer<pull::Config>,
    name: String,
}

async fn setup(url: &str, name: &str, max_deliver: i64) -> R<Setup> {
    let client = async_nats::ConnectOptions::new()
        .name("setup")
        .connect(url)
        .await?;
    let js = jetstream::new(client);
    let _ = js.delete_stream(name).await;
    let stream = js
        .create_stream(stream::Config {
            name: name.to_string(),
            subjects: vec![format!("{name}.events")],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("g0".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: ACK_WAIT,
            max_deliver,
            ..Default::default()
        })
        .await?;
    js.publish(format!("{name}.events"), "E1".into())
        .await?
        .await?;
    Ok(Setup {
        js,
        consumer,
        name: name.to_string(),
    })
}

/// One delivery, pulled by a client of its own (a worker): (reply subject, delivery count).
async fn pull_one(url: &str, worker: &str, s: &Setup) -> R<Option<(String, jetstream::Message)>> {
    let client = async_nats::ConnectOptions::new()
        .name(worker)
        .connect(url)
        .await?;
    let js = jetstream::new(client);
    let stream = js.get_stream(&s.name).await?;
    let consumer: jetstream::consumer::PullConsumer = stream.get_consumer("g0").await?;
    let mut batch = consumer.fetch().max_messages(1).messages().await?;
    let next = tokio::time::timeout(Duration::from_secs(2), batch.next()).await;
    let Ok(next) = next else {
        println!("  ({worker}: the pull got no answer within 2 s)");
        return Ok(None);
    };
    match next {
        Some(m) => {
            let m = m?;
            let reply = m.reply.as_ref().map(|r| r.to_string()).unwrap_or_default();
            Ok(Some((reply, m)))
        }
        None => Ok(None),
    }
}

async fn state(s: &Setup, label: &str) -> R<()> {
    let mut c = s.consumer.clone();
    let info = c.info().await?;
    println!(
        "  [{label}] num_ack_pending={} num_redelivered={} ack_floor.stream={} delivered.stream={} num_pending={}",
        info.num_ack_pending, info.num_redelivered, info.ack_floor.stream_sequence, info.delivered.stream_sequence, info.num_pending
    );
    Ok(())
}

/// Sends `body` to `reply` as a request (AckSync): the server's answer, or "no reply".
async fn ack_sync(url: &str, reply: &str, body: &'static str) -> R<String> {
    let client = async_nats::connect(url).await?;
    match tokio::time::timeout(
        Duration::from_millis(500),
        client.request(reply.to_string(), body.into()),
    )
    .await
    {
        Ok(Ok(m)) => Ok(format!("reply {:?}", String::from_utf8_lossy(&m.payload))),
        Ok(Err(e)) => Ok(format!("error {e}")),
        Err(_) => Ok("no reply within 500 ms".to_string()),
    }
}

async fn plain(url: &str, reply: &str, body: &'static str) -> R<()> {
    let client = async_nats::connect(url).await?;
    client.publish(reply.to_string(), body.into()).await?;
    client.flush().await?;
    Ok(())
}

async fn run(url: &str) -> R<()> {
    let wait = ACK_WAIT + Duration::from_millis(200);

    println!("== 1. AckWait expiry -> redelivery; the late ack of delivery 1");
    let s = setup(url, "facts1", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("delivery 1");
    println!("  w1 got {r1}");
    tokio::time::sleep(wait).await;
    let (r2, _) = pull_one(url, "w2", &s).await?.expect("delivery 2");
    println!("  w2 got {r2}");
    state(&s, "after redelivery").await?;
    println!(
        "  w1 late +ACK (sync): {}",
        ack_sync(url, &r1, "+ACK").await?
    );
    state(&s, "after late ack").await?;
    tokio::time::sleep(wait).await;
    println!(
        "  after another AckWait, pull: {:?}",
        pull_one(url, "w3", &s).await?.map(|d| d.0)
    );
    println!(
        "  w2 +ACK (sync) after the late ack: {}",
        ack_sync(url, &r2, "+ACK").await?
    );
    s.js.delete_stream(&s.name).await?;

    println!("== 2. Nak, Nak with delay, InProgress, Term; stale Nak/Term/WPI");
    let s = setup(url, "facts2", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    plain(url, &r1, "-NAK").await?;
    println!(
        "  after -NAK, pull: {:?}",
        pull_one(url, "w2", &s).await?.map(|d| d.0)
    );
    state(&s, "after nak+pull").await?;
    s.js.delete_stream(&s.name).await?;
    let s = setup(url, "facts2b", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    plain(url, &r1, "-NAK {\"delay\": 400000000}").await?;
    println!(
        "  after -NAK delay 400ms, pull at once: {:?}",
        pull_one(url, "w2", &s).await?.map(|d| d.0)
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "  500 ms later, pull: {:?}",
        pull_one(url, "w2", &s).await?.map(|d| d.0)
    );
    s.js.delete_stream(&s.name).await?;
    let s = setup(url, "facts2c", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        println!("  +WPI (sync): {}", ack_sync(url, &r1, "+WPI").await?);
    }
    println!(
        "  after 800 ms with +WPI every 200 ms (AckWait 300), pull: {:?}",
        pull_one(url, "w2", &s).await?.map(|d| d.0)
    );
    tokio::time::sleep(wait).await;
    let d2 = pull_one(url, "w2", &s).await?.map(|d| d.0);
    println!("  +WPI stopped, AckWait later, pull: {d2:?}");
    let r2 = d2.expect("d2");
    // Stale +WPI: does it extend w2's delivery?
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        println!(
            "  stale +WPI by w1 on delivery 1: {}",
            ack_sync(url, &r1, "+WPI").await?
        );
    }
    println!(
        "  after 600 ms of stale +WPI, pull: {:?}",
        pull_one(url, "w3", &s).await?.map(|d| d.0)
    );
    println!(
        "  stale +TERM by w1 (sync): {}",
        ack_sync(url, &r1, "+TERM").await?
    );
    state(&s, "after stale term").await?;
    tokio::time::sleep(wait).await;
    println!(
        "  AckWait later, pull: {:?}",
        pull_one(url, "w3", &s).await?.map(|d| d.0)
    );
    println!(
        "  w2 +ACK after the stale term: {}",
        ack_sync(url, &r2, "+ACK").await?
    );
    s.js.delete_stream(&s.name).await?;
    let s = setup(url, "facts2d", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    tokio::time::sleep(wait).await;
    let (_r2, _) = pull_one(url, "w2", &s).await?.expect("d2");
    println!(
        "  stale -NAK by w1 (sync): {}",
        ack_sync(url, &r1, "-NAK").await?
    );
    println!(
        "  pull at once after the stale nak: {:?}",
        pull_one(url, "w3", &s).await?.map(|d| d.0)
    );
    s.js.delete_stream(&s.name).await?;

    println!("== 3. MaxDeliver 2: advisory, and an ack after it");
    let s = setup(url, "facts3", 2).await?;
    let client = async_nats::connect(url).await?;
    let mut adv = client
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.facts3.g0")
        .await?;
    client.flush().await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    tokio::time::sleep(wait).await;
    let (r2, _) = pull_one(url, "w2", &s).await?.expect("d2");
    println!("  deliveries: {r1} / {r2}");
    tokio::time::sleep(wait).await;
    println!(
        "  AckWait after the 2nd delivery, pull: {:?}",
        pull_one(url, "w3", &s).await?.map(|d| d.0)
    );
    match tokio::time::timeout(Duration::from_secs(2), adv.next()).await {
        Ok(Some(m)) => println!(
            "  advisory on {}: {}",
            m.subject,
            String::from_utf8_lossy(&m.payload)
        ),
        _ => println!("  no advisory within 2 s"),
    }
    state(&s, "after max deliver").await?;
    println!(
        "  w2 +ACK of the last delivery after MaxDeliver (sync): {}",
        ack_sync(url, &r2, "+ACK").await?
    );
    state(&s, "after ack past max deliver").await?;
    println!(
        "  w1 +ACK of delivery 1 (sync): {}",
        ack_sync(url, &r1, "+ACK").await?
    );
    s.js.delete_stream(&s.name).await?;

    println!("== 4. Double ack (AckSync) of an already acked message");
    let s = setup(url, "facts4", -1).await?;
    let (r1, _) = pull_one(url, "w1", &s).await?.expect("d1");
    println!("  first +ACK (sync): {}", ack_sync(url, &r1, "+ACK").await?);
    println!(
        "  second +ACK (sync): {}",
        ack_sync(url, &r1, "+ACK").await?
    );
    state(&s, "after two acks").await?;
    s.js.delete_stream(&s.name).await?;
    Ok(())
}

fn main() -> R<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "nats://127.0.0.1:4222".to_string());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(&url))
}
