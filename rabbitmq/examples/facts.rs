//! Observes, on a running RabbitMQ server, the behaviours the `rabbitmq` variant models
//! (docs/rabbitmq.md): `cargo run -p leasehold-rabbitmq --features facts --example facts -- amqp://guest:guest@127.0.0.1:5672/%2f`.
//! Every experiment declares its own queues and deletes them. `--timeout` also waits for the
//! server's `consumer_timeout` (run it on a node configured with a short one).

use amqprs::callbacks::ChannelCallback;
use amqprs::channel::{
    BasicAckArguments, BasicGetArguments, BasicNackArguments, BasicPublishArguments,
    BasicRejectArguments, Channel, ConfirmSelectArguments, QueueDeclareArguments,
    QueueDeleteArguments,
};
use amqprs::connection::Connection;
use amqprs::error::Error as AmqpError;
use amqprs::{Ack, BasicProperties, Cancel, CloseChannel, FieldTable, FieldValue, Nack, Return};
use leasehold_rabbitmq::conn;
use std::sync::{Arc, Mutex};

type Result<T> = std::result::Result<T, AmqpError>;

type R<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Records what the server tells a channel on its own: a close (code, text), confirms.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl ChannelCallback for Heard {
    async fn close(&mut self, _: &Channel, close: CloseChannel) -> Result<()> {
        let line = format!(
            "channel closed by the server: {} {}",
            close.reply_code(),
            close.reply_text()
        );
        self.0.lock().unwrap().push(line);
        Ok(())
    }
    async fn cancel(&mut self, _: &Channel, _: Cancel) -> Result<()> {
        Ok(())
    }
    async fn flow(&mut self, _: &Channel, active: bool) -> Result<bool> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _: &Channel, ack: Ack) {
        self.0
            .lock()
            .unwrap()
            .push(format!("confirm ack {}", ack.delivery_tag()));
    }
    async fn publish_nack(&mut self, _: &Channel, nack: Nack) {
        self.0
            .lock()
            .unwrap()
            .push(format!("confirm nack {}", nack.delivery_tag()));
    }
    async fn publish_return(&mut self, _: &Channel, _: Return, _: BasicProperties, _: Vec<u8>) {}
}

async fn channel(c: &Connection) -> R<(Channel, Heard)> {
    let ch = c.open_channel(None).await?;
    let heard = Heard::default();
    ch.register_callback(heard.clone()).await?;
    Ok((ch, heard))
}

/// A quorum queue `name` (delivery limit `limit`, if any) dead-lettering to `name.dlq`, or a
/// classic queue when `limit` is `None` and `classic`.
async fn declare(ch: &Channel, name: &str, quorum: bool, limit: Option<i64>) -> R<()> {
    let dlq = format!("{name}.dlq");
    let _ = ch.queue_delete(QueueDeleteArguments::new(name)).await;
    let _ = ch.queue_delete(QueueDeleteArguments::new(&dlq)).await;
    let mut args = FieldTable::new();
    if quorum {
        args.insert("x-queue-type".try_into()?, "quorum".into());
    }
    if let Some(limit) = limit {
        args.insert("x-delivery-limit".try_into()?, FieldValue::l(limit));
    }
    args.insert("x-dead-letter-exchange".try_into()?, "".into());
    args.insert("x-dead-letter-routing-key".try_into()?, dlq.as_str().into());
    let mut dargs = FieldTable::new();
    if quorum {
        dargs.insert("x-queue-type".try_into()?, "quorum".into());
    }
    ch.queue_declare(
        QueueDeclareArguments::new(&dlq)
            .durable(true)
            .arguments(dargs)
            .finish(),
    )
    .await?;
    ch.queue_declare(
        QueueDeclareArguments::new(name)
            .durable(true)
            .arguments(args)
            .finish(),
    )
    .await?;
    Ok(())
}

async fn cleanup(c: &Connection, name: &str) -> R<()> {
    let (ch, _) = channel(c).await?;
    ch.queue_delete(QueueDeleteArguments::new(name)).await?;
    ch.queue_delete(QueueDeleteArguments::new(&format!("{name}.dlq")))
        .await?;
    ch.close().await?;
    Ok(())
}

async fn publish(c: &Connection, queue: &str, bodies: &[&str]) -> R<()> {
    let (ch, heard) = channel(c).await?;
    ch.confirm_select(ConfirmSelectArguments::new(false))
        .await?;
    for body in bodies {
        let mut props = BasicProperties::default();
        props.with_delivery_mode(2).with_message_id(body);
        ch.basic_publish(
            props,
            body.as_bytes().to_vec(),
            BasicPublishArguments::new("", queue),
        )
        .await?;
    }
    for _ in 0..200 {
        if heard.0.lock().unwrap().len() >= bodies.len() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    println!(
        "  publish {bodies:?} with confirms: {:?}",
        heard.0.lock().unwrap()
    );
    ch.close().await?;
    Ok(())
}

fn header(props: &BasicProperties, key: &str) -> String {
    props
        .headers()
        .and_then(|h| h.get(&key.try_into().ok()?).map(|v| v.to_string()))
        .unwrap_or_else(|| "-".into())
}

/// One basic.get with manual ack; prints and returns (tag, body).
async fn get(ch: &Channel, queue: &str, who: &str) -> R<Option<(u64, String)>> {
    match ch
        .basic_get(BasicGetArguments::new(queue).no_ack(false).finish())
        .await?
    {
        None => {
            println!("  {who}: get {queue} → empty");
            Ok(None)
        }
        Some((ok, props, body)) => {
            let body = String::from_utf8_lossy(&body).to_string();
            println!(
                "  {who}: get {queue} → {body} tag {} redelivered {} x-delivery-count {}",
                ok.delivery_tag(),
                ok.redelivered(),
                header(&props, "x-delivery-count")
            );
            if queue.ends_with(".dlq") {
                println!("      x-death {}", header(&props, "x-death"));
                println!(
                    "      x-first-death-reason {}",
                    header(&props, "x-first-death-reason")
                );
            }
            Ok(Some((ok.delivery_tag(), body)))
        }
    }
}

async fn settle_wait(heard: &Heard, what: &str) {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let heard = heard.0.lock().unwrap();
    let closes: Vec<&String> = heard.iter().filter(|l| l.starts_with("channel")).collect();
    println!("  after {what}: {closes:?}");
}

async fn crash_requeues(c: &Connection) -> R<()> {
    println!("1. a channel closing with an unacked delivery requeues it (redelivered set)");
    let q = "lh-facts-crash";
    let (admin, _) = channel(c).await?;
    declare(&admin, q, true, Some(5)).await?;
    publish(c, q, &["E1", "E2"]).await?;
    let (a, _) = channel(c).await?;
    get(&a, q, "A").await?;
    a.close().await?;
    println!("  A's channel closed without an ack");
    let conn2 = conn::open(&conn::parse(&url())?, "server", "crash").await?;
    let (b, _) = channel(&conn2).await?;
    get(&b, q, "B").await?;
    println!("  B's whole connection closes without an ack");
    conn2.close().await?;
    let (d, _) = channel(c).await?;
    get(&d, q, "D").await?;
    get(&d, q, "D").await?;
    d.close().await?;
    cleanup(c, q).await
}

async fn stale_tags(c: &Connection) -> R<()> {
    println!("2. a delivery tag belongs to its channel");
    let q = "lh-facts-tags";
    let (admin, _) = channel(c).await?;
    declare(&admin, q, true, Some(5)).await?;
    publish(c, q, &["E1", "E2", "E3"]).await?;
    let (a, _) = channel(c).await?;
    let (tag_a, _) = get(&a, q, "A").await?.unwrap();
    a.close().await?;
    println!("  A's channel closed (A holds tag {tag_a})");
    let (b, heard_b) = channel(c).await?;
    get(&b, q, "B").await?;
    get(&b, q, "B").await?;
    println!("  B acks tag 7 (no such tag on B's channel)");
    b.basic_ack(BasicAckArguments::new(7, false)).await?;
    settle_wait(&heard_b, "ack 7 on B").await;
    println!("  B's channel open: {}", b.is_open());
    let (d, _) = channel(c).await?;
    get(&d, q, "D").await?;
    get(&d, q, "D").await?;
    println!("  D acks tag {tag_a} (A's tag, reused on D's channel: D's own delivery {tag_a})");
    d.basic_ack(BasicAckArguments::new(tag_a, false)).await?;
    println!("  D acks tag {tag_a} again");
    let heard_d = Heard::default();
    d.register_callback(heard_d.clone()).await?;
    d.basic_ack(BasicAckArguments::new(tag_a, false)).await?;
    settle_wait(&heard_d, "the second ack on D").await;
    let (e, _) = channel(c).await?;
    get(&e, q, "E").await?;
    get(&e, q, "E").await?;
    get(&e, q, "E").await?;
    e.close().await?;
    cleanup(c, q).await
}

async fn nack_reject_limit(c: &Connection) -> R<()> {
    println!("3. nack with requeue, reject without, and the quorum queue's delivery limit");
    let q = "lh-facts-limit";
    let (admin, _) = channel(c).await?;
    declare(&admin, q, true, Some(1)).await?;
    publish(c, q, &["E1", "E2"]).await?;
    let (a, _) = channel(c).await?;
    let (t, _) = get(&a, q, "A").await?.unwrap();
    println!("  A nacks E1 with requeue");
    a.basic_nack(BasicNackArguments::new(t, false, true))
        .await?;
    let (t, _) = get(&a, q, "A").await?.unwrap();
    println!("  A nacks it again with requeue (x-delivery-limit 1)");
    a.basic_nack(BasicNackArguments::new(t, false, true))
        .await?;
    let (t, body) = get(&a, q, "A").await?.unwrap();
    println!("  A rejects {body} without requeue");
    a.basic_reject(BasicRejectArguments::new(t, false)).await?;
    get(&a, q, "A").await?;
    let dlq = format!("{q}.dlq");
    while get(&a, &dlq, "A").await?.is_some() {}
    a.close().await?;
    println!("  the limit by channel closes: x-delivery-limit 1, E3 returned twice by closes");
    publish(c, q, &["E3"]).await?;
    for round in 1..=3 {
        let (x, _) = channel(c).await?;
        let got = get(&x, q, &format!("X{round}")).await?;
        x.close().await?;
        if got.is_none() {
            break;
        }
    }
    let (y, _) = channel(c).await?;
    while get(&y, &dlq, "Y").await?.is_some() {}
    y.close().await?;
    cleanup(c, q).await
}

async fn classic_unbounded(c: &Connection) -> R<()> {
    println!("4. a classic queue has no delivery limit and no delivery count");
    let q = "lh-facts-classic";
    let (admin, _) = channel(c).await?;
    let _ = admin.queue_delete(QueueDeleteArguments::new(q)).await;
    admin
        .queue_declare(QueueDeclareArguments::new(q).durable(true).finish())
        .await?;
    publish(c, q, &["E1"]).await?;
    for round in 1..=4 {
        let (x, _) = channel(c).await?;
        let (t, _) = get(&x, q, &format!("X{round}")).await?.unwrap();
        x.basic_nack(BasicNackArguments::new(t, false, true))
            .await?;
        x.close().await?;
    }
    admin.queue_delete(QueueDeleteArguments::new(q)).await?;
    Ok(())
}

async fn return_order(c: &Connection) -> R<()> {
    println!("6. returned deliveries come back first, in the order they were returned");
    let q = "lh-facts-order";
    let (admin, _) = channel(c).await?;
    declare(&admin, q, true, Some(5)).await?;
    publish(c, q, &["E1", "E2", "E3", "E4"]).await?;
    let (a, _) = channel(c).await?;
    let (b, _) = channel(c).await?;
    get(&a, q, "A").await?;
    get(&b, q, "B").await?;
    println!("  B's channel closes, then A's");
    b.close().await?;
    a.close().await?;
    let (d, _) = channel(c).await?;
    let (t, _) = get(&d, q, "D").await?.unwrap();
    get(&d, q, "D").await?;
    println!("  D nacks its first delivery with requeue");
    d.basic_nack(BasicNackArguments::new(t, false, true))
        .await?;
    for _ in 0..3 {
        get(&d, q, "D").await?;
    }
    d.close().await?;
    cleanup(c, q).await
}

async fn consumer_timeout(c: &Connection) -> R<()> {
    println!("5. consumer_timeout closes the channel of a delivery held too long");
    let q = "lh-facts-timeout";
    let (admin, _) = channel(c).await?;
    declare(&admin, q, true, Some(5)).await?;
    publish(c, q, &["E1", "E2"]).await?;
    let (a, heard) = channel(c).await?;
    get(&a, q, "A").await?;
    get(&a, q, "A").await?;
    let started = std::time::Instant::now();
    while heard.0.lock().unwrap().is_empty() && started.elapsed().as_secs() < 120 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    println!(
        "  after {:.1} s: {:?}; A's channel open: {}",
        started.elapsed().as_secs_f64(),
        heard.0.lock().unwrap(),
        a.is_open()
    );
    let (b, _) = channel(c).await?;
    get(&b, q, "B").await?;
    get(&b, q, "B").await?;
    b.close().await?;
    cleanup(c, q).await
}

fn url() -> String {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .or_else(|| std::env::var("LEASEHOLD_RABBITMQ_URL").ok())
        .unwrap_or_else(|| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

fn main() -> R<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let url = url();
        let c = conn::open(&conn::parse(&url)?, &conn::redacted(&url), "facts").await?;
        println!(
            "server: {} {}",
            c.server_properties().product(),
            c.server_properties().version()
        );
        crash_requeues(&c).await?;
        stale_tags(&c).await?;
        nack_reject_limit(&c).await?;
        classic_unbounded(&c).await?;
        return_order(&c).await?;
        if std::env::args().any(|a| a == "--timeout") {
            consumer_timeout(&c).await?;
        }
        c.close().await?;
        Ok(())
    })
}
