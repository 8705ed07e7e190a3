//! [`RabbitBackend`]: the `rabbitmq` variant on a real RabbitMQ server.
//!
//! Per run: a fanout exchange `lh-<run>.events` publishing to one quorum queue per group
//! (`lh-<run>.g<i>`, `x-delivery-limit` = `max_attempts − 1`, dead-lettering through the
//! default exchange to the classic queue `lh-<run>.g<i>.dlq`). Everything is deleted when the
//! backend is dropped.
//!
//! * publish: `basic.publish` with publisher confirms (persistent, `message_id` = the seq);
//!   the call returns once the server confirmed it.
//! * fetch: a new channel per delivery and one `basic.get` (manual ack) on it: a lease is a
//!   delivery on a channel of its own. Its attempt is the server's `x-delivery-count` + 1.
//! * ack / nack / reject: `basic.ack`, `basic.nack` (`requeue=true`), `basic.reject`
//!   (`requeue=false`) on the lease's channel, which is then closed (its close-ok follows the
//!   settle on the server). A settle of a lease whose channel is closed, or whose deadline has
//!   passed, is sent on a new channel with the delivery's tag: the server refuses it with
//!   `406 PRECONDITION_FAILED - unknown delivery tag` and closes that channel
//!   (`stale_lease`).
//! * expiry: the lease's channel is closed at its deadline (what `consumer_timeout` or the
//!   holder's connection dying does): the server returns the message, or dead-letters it
//!   (`delivery_limit`) once it was delivered `max_attempts` times.
//! * a dead letter is read back from the dead-letter queue with its `x-first-death-reason`.
//!
//! Time is the engine's: deadlines are kept here and a channel closes when the engine's clock
//! passes them; the server's `consumer_timeout` (30 minutes by default) never fires in a run.

use crate::conn::{open, parse, redacted, Endpoint};
use amqprs::callbacks::ChannelCallback;
use amqprs::channel::{
    BasicAckArguments, BasicGetArguments, BasicNackArguments, BasicPublishArguments,
    BasicRejectArguments, Channel, ConfirmSelectArguments, ExchangeDeclareArguments,
    ExchangeDeleteArguments, ExchangeType, QueueBindArguments, QueueDeclareArguments,
    QueueDeleteArguments,
};
use amqprs::connection::Connection;
use amqprs::{Ack, BasicProperties, Cancel, CloseChannel, FieldTable, FieldValue, Nack, Return};
use leasehold_model::{
    BrokerConfig, Expired, GroupIx, Lease, LeaseId, Ms, Reason, Seq, SettleError, SettleOp,
    SettleRequest, Status, Variant,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The variants this backend implements.
pub const VARIANTS: &[Variant] = &[Variant::RabbitMq, Variant::RabbitMqChannel];

/// RabbitMQ's `x-death` reason for a message whose deliveries reached `x-delivery-limit`.
pub const DELIVERY_LIMIT: &str = "delivery_limit";
/// RabbitMQ's `x-death` reason for a message rejected without requeue.
pub const REJECTED: &str = "rejected";

/// How long the backend waits for something the server does asynchronously (a returned
/// message to be ready again, a dead letter to arrive, a confirm, a channel's close).
const SETTLE_WAIT_MAX: Duration = Duration::from_secs(5);
/// See [`SETTLE_WAIT_MAX`] (for the channel module).
pub(crate) const DELIVERY_LIMIT_WAIT: Duration = SETTLE_WAIT_MAX;

/// Whether `config` is one this backend runs; the error is one line.
pub fn check_config(config: &BrokerConfig) -> Result<(), String> {
    if !VARIANTS.contains(&config.variant) {
        return Err(format!(
            "the rabbitmq backend implements the rabbitmq and rabbitmq-channel variants only, not '{}'",
            config.variant
        ));
    }
    Ok(())
}

/// What the server told a channel on its own: confirms and its close.
#[derive(Clone, Default)]
pub(crate) struct Heard(pub(crate) Arc<Mutex<HeardInner>>);

#[derive(Default)]
pub(crate) struct HeardInner {
    /// The highest publish confirmed (every one up to it, on this channel's numbering).
    confirmed: u64,
    nacked: bool,
    /// The server closed the channel: (code, text).
    pub(crate) closed: Option<(u16, String)>,
}

#[async_trait::async_trait]
impl ChannelCallback for Heard {
    async fn close(
        &mut self,
        _: &Channel,
        close: CloseChannel,
    ) -> Result<(), amqprs::error::Error> {
        self.0.lock().unwrap().closed = Some((close.reply_code(), close.reply_text().clone()));
        Ok(())
    }
    async fn cancel(&mut self, _: &Channel, _: Cancel) -> Result<(), amqprs::error::Error> {
        Ok(())
    }
    async fn flow(&mut self, _: &Channel, active: bool) -> Result<bool, amqprs::error::Error> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _: &Channel, ack: Ack) {
        let mut inner = self.0.lock().unwrap();
        inner.confirmed = inner.confirmed.max(ack.delivery_tag());
    }
    async fn publish_nack(&mut self, _: &Channel, _: Nack) {
        self.0.lock().unwrap().nacked = true;
    }
    async fn publish_return(&mut self, _: &Channel, _: Return, _: BasicProperties, _: Vec<u8>) {}
}

/// One record as this backend last saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) status: Status,
    /// Deliveries so far (the server's `x-delivery-count` + 1 at the last delivery).
    pub(crate) attempts: u32,
    pub(crate) reason: Option<Reason>,
}

/// A delivery held on its own channel.
struct Held {
    group: GroupIx,
    seq: Seq,
    deadline_ms: Ms,
    channel: Channel,
    tag: u64,
}

static RUNS: AtomicU64 = AtomicU64::new(0);

/// How many channels the server may close on one connection before it is replaced. `amqprs`
/// frees a channel's number only at a close the client starts, so a channel the server closes
/// (a refused tag's `406`) keeps its number until its connection closes; RabbitMQ gives a
/// connection 2047 (`channel_max`).
pub(crate) const SERVER_CLOSES_MAX: u32 = 1000;

/// The `rabbitmq` variant on a RabbitMQ server (see the module documentation).
pub struct RabbitBackend {
    pub(crate) config: BrokerConfig,
    pub(crate) rt: tokio::runtime::Runtime,
    connection: Option<Connection>,
    endpoint: Endpoint,
    /// The connection whose channels carry the settles the server refuses (each closed by the
    /// server's `406`), and how many it carried ([`SERVER_CLOSES_MAX`]).
    refusals: Option<Connection>,
    refusals_sent: u32,
    /// The channel that publishes (confirms on) and declares; its confirm count.
    admin: Option<Channel>,
    admin_heard: Heard,
    published: u64,
    pub(crate) shown_url: String,
    pub(crate) prefix: String,
    records: Vec<Vec<Rec>>,
    frontiers: Vec<Seq>,
    held: BTreeMap<LeaseId, Held>,
    next_lease_id: u64,
    /// The reason each record about to be dead-lettered will be reported with (the server
    /// keeps only its own `x-death` reason; the request's text is the client's).
    dead_letter_text: BTreeMap<(GroupIx, Seq), Reason>,
    unsettled: u64,
    /// Dead letters read from a dead-letter queue before anything waited for them: (group,
    /// seq) → `x-first-death-reason`.
    dead_letters: Mutex<BTreeMap<(GroupIx, Seq), String>>,
    /// `rabbitmq-channel`: the workers' connections and channels (`None` for `rabbitmq`).
    pub(crate) ch: Option<crate::channel::Mode>,
}

pub(crate) fn fail(url: &str, what: &str, e: impl std::fmt::Display) -> ! {
    panic!(
        "backend rabbitmq: {what} failed on {url}: {}",
        e.to_string().lines().next().unwrap_or_default()
    )
}

impl RabbitBackend {
    /// Connects to the server at `url` and declares this run's exchange and queues.
    pub fn new(config: &BrokerConfig, url: &str) -> Result<RabbitBackend, String> {
        check_config(config)?;
        let endpoint = parse(url)?;
        let shown_url = redacted(url);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("backend rabbitmq: no async runtime: {e}"))?;
        // Dropping a channel or a connection spawns its close: inside the runtime's context.
        let handle = rt.handle().clone();
        let _context = handle.enter();
        let prefix = format!(
            "lh-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        let (connection, admin, admin_heard) = rt.block_on(async {
            let connection = open(&endpoint, &shown_url, &prefix).await?;
            let err = |what: &str, e: amqprs::error::Error| {
                format!("backend rabbitmq: {what} on {shown_url}: {e}")
            };
            let admin = connection
                .open_channel(None)
                .await
                .map_err(|e| err("opening a channel", e))?;
            let heard = Heard::default();
            admin
                .register_callback(heard.clone())
                .await
                .map_err(|e| err("registering a callback", e))?;
            admin
                .confirm_select(ConfirmSelectArguments::new(false))
                .await
                .map_err(|e| err("confirm.select", e))?;
            let exchange = format!("{prefix}.events");
            admin
                .exchange_declare(
                    ExchangeDeclareArguments::of_type(&exchange, ExchangeType::Fanout)
                        .durable(true)
                        .finish(),
                )
                .await
                .map_err(|e| err("declaring the exchange", e))?;
            for group in 0..config.group_count {
                let queue = format!("{prefix}.g{group}");
                let dlq = format!("{queue}.dlq");
                admin
                    .queue_declare(QueueDeclareArguments::new(&dlq).durable(true).finish())
                    .await
                    .map_err(|e| err("declaring a dead-letter queue", e))?;
                let mut args = FieldTable::new();
                let key = |k: &str| k.try_into().expect("a short field name");
                args.insert(key("x-queue-type"), "quorum".into());
                args.insert(
                    key("x-delivery-limit"),
                    FieldValue::l(i64::from(config.max_attempts) - 1),
                );
                args.insert(key("x-dead-letter-exchange"), "".into());
                args.insert(key("x-dead-letter-routing-key"), dlq.as_str().into());
                admin
                    .queue_declare(
                        QueueDeclareArguments::new(&queue)
                            .durable(true)
                            .arguments(args)
                            .finish(),
                    )
                    .await
                    .map_err(|e| err("declaring a quorum queue", e))?;
                admin
                    .queue_bind(QueueBindArguments::new(&queue, &exchange, ""))
                    .await
                    .map_err(|e| err("binding a queue", e))?;
            }
            Ok::<_, String>((connection, admin, heard))
        })?;
        Ok(RabbitBackend {
            config: *config,
            rt,
            connection: Some(connection),
            endpoint: endpoint.clone(),
            refusals: None,
            refusals_sent: 0,
            admin: Some(admin),
            admin_heard,
            published: 0,
            shown_url,
            prefix,
            records: vec![Vec::new(); config.group_count],
            frontiers: vec![0; config.group_count],
            held: BTreeMap::new(),
            next_lease_id: 1,
            dead_letter_text: BTreeMap::new(),
            unsettled: 0,
            dead_letters: Mutex::default(),
            ch: config
                .variant
                .channel_scoped()
                .then(|| crate::channel::Mode::new(endpoint.clone())),
        })
    }

    pub(crate) fn queue(&self, group: GroupIx) -> String {
        format!("{}.g{group}", self.prefix)
    }

    pub(crate) fn admin(&self) -> &Channel {
        self.admin.as_ref().expect("open until dropped")
    }

    fn connection(&self) -> &Connection {
        self.connection.as_ref().expect("open until dropped")
    }

    pub(crate) fn rec(&self, group: GroupIx, seq: Seq) -> Option<&Rec> {
        self.records.get(group)?.get((seq as usize).checked_sub(1)?)
    }

    pub(crate) fn set(&mut self, group: GroupIx, seq: Seq, rec: Rec) {
        let slot = &mut self.records[group][seq as usize - 1];
        let settled = |s: Status| matches!(s, Status::Acked | Status::DeadLettered);
        match (settled(slot.status), settled(rec.status)) {
            (false, true) => self.unsettled -= 1,
            (true, false) => self.unsettled += 1,
            _ => {}
        }
        *slot = rec;
        let records = &self.records[group];
        let mut frontier = self.frontiers[group];
        while (frontier as usize) < records.len() && settled(records[frontier as usize].status) {
            frontier += 1;
        }
        self.frontiers[group] = frontier;
    }

    pub(crate) fn available(&self, group: GroupIx) -> u32 {
        self.records[group]
            .iter()
            .filter(|r| r.status == Status::Available)
            .count() as u32
    }

    /// Waits until the server reports `expected` messages ready in `group`'s queue (a return
    /// is applied by the queue after the channel that returns it has closed).
    pub(crate) fn await_ready(&self, group: GroupIx, expected: u32) {
        let queue = self.queue(group);
        let started = Instant::now();
        loop {
            let ready = self.rt.block_on(async {
                self.admin()
                    .queue_declare(QueueDeclareArguments::new(&queue).passive(true).finish())
                    .await
            });
            let ready = match ready {
                Ok(Some((_, ready, _))) => ready,
                Ok(None) => 0,
                Err(e) => fail(&self.shown_url, "queue.declare (passive)", e),
            };
            if ready == expected {
                return;
            }
            if started.elapsed() > SETTLE_WAIT_MAX {
                fail(
                    &self.shown_url,
                    "waiting for returned messages",
                    format!("{queue} has {ready} ready messages, {expected} expected"),
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits for (group, seq) to arrive in the dead-letter queue; returns its
    /// `x-first-death-reason`. Dead letters read meanwhile that other waits are for (a
    /// channel's close returns several deliveries at once) are kept for them.
    pub(crate) fn await_dead_letter(&self, group: GroupIx, seq: Seq) -> String {
        let dlq = format!("{}.dlq", self.queue(group));
        let started = Instant::now();
        loop {
            if let Some(reason) = self.dead_letters.lock().unwrap().remove(&(group, seq)) {
                return reason;
            }
            let got = self.rt.block_on(async {
                self.admin()
                    .basic_get(BasicGetArguments::new(&dlq).no_ack(true).finish())
                    .await
            });
            match got {
                Ok(Some((_, props, _))) => {
                    let Some(dead) = message_seq(&props) else {
                        fail(
                            &self.shown_url,
                            "reading the dead-letter queue",
                            format!("{dlq}: a message without a seq arrived"),
                        );
                    };
                    let reason = header_text(&props, "x-first-death-reason");
                    self.dead_letters
                        .lock()
                        .unwrap()
                        .insert((group, dead), reason.unwrap_or_default());
                    continue;
                }
                Ok(None) => {}
                Err(e) => fail(&self.shown_url, "basic.get (dead letters)", e),
            }
            if started.elapsed() > SETTLE_WAIT_MAX {
                fail(
                    &self.shown_url,
                    "waiting for a dead letter",
                    format!("seq {seq} never reached {dlq}"),
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Closes a lease's channel; its unacked delivery, if any, goes back to the queue.
    fn close(&self, channel: Channel) {
        if let Err(e) = self.rt.block_on(channel.close()) {
            fail(&self.shown_url, "channel.close", e);
        }
    }

    /// The message came back (nack, expiry): ready again, or dead-lettered past its limit.
    /// Returns whether it was dead-lettered.
    fn returned(
        &mut self,
        group: GroupIx,
        seq: Seq,
        attempts: u32,
        reason: Option<Reason>,
    ) -> bool {
        if attempts >= self.config.max_attempts {
            let why = self.await_dead_letter(group, seq);
            if why != DELIVERY_LIMIT {
                fail(
                    &self.shown_url,
                    "dead-lettering",
                    format!("seq {seq}: x-death reason '{why}', {DELIVERY_LIMIT} expected"),
                );
            }
            let reason = reason.unwrap_or(Reason::MAX_ATTEMPTS);
            self.set(
                group,
                seq,
                Rec {
                    status: Status::DeadLettered,
                    attempts,
                    reason: Some(reason),
                },
            );
            self.dead_letter_text.remove(&(group, seq));
            true
        } else {
            self.set(
                group,
                seq,
                Rec {
                    status: Status::Available,
                    attempts,
                    reason: None,
                },
            );
            let expected = self.available(group);
            self.await_ready(group, expected);
            false
        }
    }

    /// A settle the server must refuse: sent on a new channel with the delivery's tag, where
    /// no such delivery exists. Waits for the server's 406 and its close of that channel.
    fn refused(&mut self, op: &SettleOp, tag: u64) -> SettleError {
        if self.refusals_sent >= SERVER_CLOSES_MAX {
            if let Some(old) = self.refusals.take() {
                if let Err(e) = self.rt.block_on(old.close()) {
                    fail(&self.shown_url, "closing a connection", e);
                }
            }
            self.refusals_sent = 0;
        }
        if self.refusals.is_none() {
            let name = format!("{}-refusals", self.prefix);
            match self
                .rt
                .block_on(open(&self.endpoint, &self.shown_url, &name))
            {
                Ok(connection) => self.refusals = Some(connection),
                Err(e) => fail(&self.shown_url, "connecting", e),
            }
        }
        self.refusals_sent += 1;
        let refusals = self.refusals.as_ref().expect("opened above");
        let heard = Heard::default();
        let outcome = self.rt.block_on(async {
            let channel = refusals.open_channel(None).await?;
            channel.register_callback(heard.clone()).await?;
            match op {
                SettleOp::Ack | SettleOp::Renew { .. } => {
                    channel
                        .basic_ack(BasicAckArguments::new(tag, false))
                        .await?
                }
                SettleOp::Nack { .. } => {
                    channel
                        .basic_nack(BasicNackArguments::new(tag, false, true))
                        .await?
                }
                SettleOp::Reject { .. } => {
                    channel
                        .basic_reject(BasicRejectArguments::new(tag, false))
                        .await?
                }
            }
            Ok::<_, amqprs::error::Error>(channel)
        });
        let channel = match outcome {
            Ok(channel) => channel,
            Err(e) => fail(&self.shown_url, "a stale settle", e),
        };
        let started = Instant::now();
        loop {
            if let Some((code, text)) = heard.0.lock().unwrap().closed.clone() {
                if code != 406 || !text.contains("unknown delivery tag") {
                    fail(
                        &self.shown_url,
                        "a stale settle",
                        format!("closed with {code} {text}"),
                    );
                }
                break;
            }
            if started.elapsed() > SETTLE_WAIT_MAX {
                fail(&self.shown_url, "a stale settle", "the server accepted it");
            }
            // The reply arrives while the runtime runs.
            self.rt
                .block_on(tokio::time::sleep(Duration::from_millis(1)));
        }
        drop(channel);
        SettleError::StaleLease
    }

    /// The state as this backend last read it, one line per group (tests, diagnostics).
    pub fn describe_records(&self) -> Vec<String> {
        self.records
            .iter()
            .map(|g| {
                format!(
                    "{:?}",
                    g.iter().map(|r| (r.status, r.attempts)).collect::<Vec<_>>()
                )
            })
            .collect()
    }
}

pub(crate) fn header_text(props: &BasicProperties, key: &str) -> Option<String> {
    let value = props.headers()?.get(&key.try_into().ok()?)?;
    match value {
        FieldValue::S(text) => Some(String::from(text.clone())),
        other => Some(other.to_string()),
    }
}

pub(crate) fn header_int(props: &BasicProperties, key: &str) -> Option<i64> {
    match props.headers()?.get(&key.try_into().ok()?)? {
        FieldValue::l(n) => Some(*n),
        FieldValue::I(n) => Some(i64::from(*n)),
        FieldValue::i(n) => Some(i64::from(*n)),
        FieldValue::s(n) => Some(i64::from(*n)),
        FieldValue::u(n) => Some(i64::from(*n)),
        FieldValue::b(n) => Some(i64::from(*n)),
        FieldValue::B(n) => Some(i64::from(*n)),
        _ => None,
    }
}

pub(crate) fn message_seq(props: &BasicProperties) -> Option<Seq> {
    props.message_id()?.parse().ok()
}

impl Drop for RabbitBackend {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let held = std::mem::take(&mut self.held);
        let refusals = self.refusals.take();
        let mut ch = self.ch.take();
        let prefix = self.prefix.clone();
        let groups = self.config.group_count;
        let admin = self.admin.take().expect("open until dropped");
        let _context = self.rt.enter();
        self.rt.block_on(async move {
            for (_, h) in held {
                let _ = h.channel.close().await;
            }
            if let Some(ch) = &mut ch {
                ch.shut().await;
            }
            if let Some(refusals) = refusals {
                let _ = refusals.close().await;
            }
            for group in 0..groups {
                let queue = format!("{prefix}.g{group}");
                let _ = admin.queue_delete(QueueDeleteArguments::new(&queue)).await;
                let _ = admin
                    .queue_delete(QueueDeleteArguments::new(&format!("{queue}.dlq")))
                    .await;
            }
            let _ = admin
                .exchange_delete(ExchangeDeleteArguments::new(&format!("{prefix}.events")))
                .await;
            let _ = connection.close().await;
        });
    }
}

impl RabbitBackend {
    pub(crate) fn do_publish(&mut self) -> Seq {
        let rt = self.rt.handle().clone();
        let _context = rt.enter();
        let seq = self.records[0].len() as Seq + 1;
        let exchange = format!("{}.events", self.prefix);
        let mut props = BasicProperties::default();
        props
            .with_delivery_mode(2)
            .with_message_id(&seq.to_string());
        if let Err(e) = self.rt.block_on(self.admin().basic_publish(
            props,
            Vec::new(),
            BasicPublishArguments::new(&exchange, ""),
        )) {
            fail(&self.shown_url, "basic.publish", e);
        }
        self.published += 1;
        let started = Instant::now();
        loop {
            {
                let heard = self.admin_heard.0.lock().unwrap();
                if heard.nacked {
                    fail(&self.shown_url, "basic.publish", "the server nacked it");
                }
                if heard.confirmed >= self.published {
                    break;
                }
            }
            if started.elapsed() > SETTLE_WAIT_MAX {
                fail(&self.shown_url, "basic.publish", "no confirm");
            }
            self.rt
                .block_on(tokio::time::sleep(Duration::from_millis(1)));
        }
        for group in 0..self.config.group_count {
            self.records[group].push(Rec {
                status: Status::Available,
                attempts: 0,
                reason: None,
            });
            self.unsettled += 1;
        }
        seq
    }

    pub(crate) fn do_fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        let rt = self.rt.handle().clone();
        let _context = rt.enter();
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if self.ch.is_some() {
            return self.ch_fetch("", group, limit, now_ms, lease_ms);
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        self.do_expire_due(now_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.config.lease_ms));
        let queue = self.queue(group);
        let mut out = Vec::new();
        while out.len() < limit && self.available(group) > 0 {
            let got = self.rt.block_on(async {
                let channel = self.connection().open_channel(None).await?;
                let got = channel
                    .basic_get(BasicGetArguments::new(&queue).no_ack(false).finish())
                    .await?;
                Ok::<_, amqprs::error::Error>((channel, got))
            });
            let (channel, got) = match got {
                Ok(got) => got,
                Err(e) => fail(&self.shown_url, "basic.get", e),
            };
            let Some((ok, props, _)) = got else {
                fail(
                    &self.shown_url,
                    "basic.get",
                    format!("{queue} is empty, {} ready expected", self.available(group)),
                );
            };
            let Some(seq) = message_seq(&props).filter(|&s| {
                self.rec(group, s)
                    .is_some_and(|r| r.status == Status::Available)
            }) else {
                fail(
                    &self.shown_url,
                    "basic.get",
                    format!(
                        "{queue} delivered {:?}, which is not available",
                        props.message_id()
                    ),
                );
            };
            let attempts = header_int(&props, "x-delivery-count").unwrap_or(0) as u32 + 1;
            let lease_id = LeaseId(self.next_lease_id);
            self.next_lease_id += 1;
            self.set(
                group,
                seq,
                Rec {
                    status: Status::Leased,
                    attempts,
                    reason: None,
                },
            );
            self.held.insert(
                lease_id,
                Held {
                    group,
                    seq,
                    deadline_ms,
                    channel,
                    tag: ok.delivery_tag(),
                },
            );
            out.push(Lease {
                lease_id,
                group,
                seq,
                attempt: attempts,
                deadline_ms,
                receipt: None,
            });
        }
        Ok(out)
    }

    pub(crate) fn do_settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let rt = self.rt.handle().clone();
        let _context = rt.enter();
        if self.ch.is_some() {
            return self.ch_settle(request, now_ms);
        }
        let lease = &request.lease;
        if self.rec(lease.group, lease.seq).is_none() {
            return Err(SettleError::Invalid(
                format!("no record for group {} seq {}", lease.group, lease.seq).into(),
            ));
        }
        if matches!(request.op, SettleOp::Renew { .. }) {
            return Err(SettleError::Invalid(
                "a delivery's timeout cannot be extended (no renew on this broker)".into(),
            ));
        }
        let current = self
            .held
            .get(&lease.lease_id)
            .filter(|h| h.group == lease.group && h.seq == lease.seq && now_ms < h.deadline_ms);
        let Some(held) = current else {
            // The delivery's channel is closed, or its time is up (its channel closes when
            // the expiry runs): on a new channel the tag names nothing.
            let tag = self.held.get(&lease.lease_id).map_or(1, |h| h.tag);
            return Err(self.refused(&request.op, tag));
        };
        if lease.receipt.is_some() {
            // RabbitMQ issues no receipts: a request naming one names something else.
            return Err(SettleError::ReceiptMismatch);
        }
        let tag = held.tag;
        let Held { group, seq, .. } = *held;
        let attempts = self.rec(group, seq).map_or(0, |r| r.attempts);
        let held = self.held.remove(&lease.lease_id).expect("found above");
        let heard = Heard::default();
        let sent = self.rt.block_on(async {
            held.channel.register_callback(heard.clone()).await?;
            match request.op {
                SettleOp::Ack => {
                    held.channel
                        .basic_ack(BasicAckArguments::new(tag, false))
                        .await
                }
                SettleOp::Nack { .. } => {
                    held.channel
                        .basic_nack(BasicNackArguments::new(tag, false, true))
                        .await
                }
                SettleOp::Reject { .. } => {
                    held.channel
                        .basic_reject(BasicRejectArguments::new(tag, false))
                        .await
                }
                SettleOp::Renew { .. } => unreachable!("refused above"),
            }
        });
        if let Err(e) = sent {
            fail(&self.shown_url, "a settle", e);
        }
        self.close(held.channel);
        if let Some((code, text)) = heard.0.lock().unwrap().closed.clone() {
            fail(
                &self.shown_url,
                "a settle",
                format!("the server closed the channel: {code} {text}"),
            );
        }
        match request.op {
            SettleOp::Ack => {
                self.set(
                    group,
                    seq,
                    Rec {
                        status: Status::Acked,
                        attempts,
                        reason: None,
                    },
                );
            }
            SettleOp::Nack { reason, .. } => {
                self.returned(group, seq, attempts, reason);
            }
            SettleOp::Reject { reason } => {
                let why = self.await_dead_letter(group, seq);
                if why != REJECTED {
                    fail(
                        &self.shown_url,
                        "basic.reject",
                        format!("seq {seq}: x-death reason '{why}', {REJECTED} expected"),
                    );
                }
                self.set(
                    group,
                    seq,
                    Rec {
                        status: Status::DeadLettered,
                        attempts,
                        reason: Some(reason),
                    },
                );
            }
            SettleOp::Renew { .. } => unreachable!("refused above"),
        }
        Ok(None)
    }

    pub(crate) fn do_expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let rt = self.rt.handle().clone();
        let _context = rt.enter();
        if self.ch.is_some() {
            return self.ch_expire_due(now_ms);
        }
        let mut due: Vec<(Ms, GroupIx, Seq, LeaseId)> = self
            .held
            .iter()
            .filter(|(_, h)| h.deadline_ms <= now_ms)
            .map(|(id, h)| (h.deadline_ms, h.group, h.seq, *id))
            .collect();
        due.sort_unstable();
        let mut out = Vec::with_capacity(due.len());
        for (deadline_ms, group, seq, lease_id) in due {
            let held = self.held.remove(&lease_id).expect("listed above");
            let attempts = self.rec(group, seq).map_or(0, |r| r.attempts);
            self.close(held.channel);
            let dead_lettered = self.returned(group, seq, attempts, None);
            out.push(Expired {
                deadline_ms,
                group,
                seq,
                lease_id,
                dead_lettered,
                stale_timer: None,
            });
        }
        out
    }

    pub(crate) fn do_next_deadline(&self) -> Option<Ms> {
        if self.ch.is_some() {
            return self.ch_next_deadline();
        }
        self.held.values().map(|h| h.deadline_ms).min()
    }

    pub(crate) fn view_status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.rec(group, seq) {
            Some(r) => (r.status, r.reason.map(|r| r.as_str().to_string())),
            None => (Status::Dropped, None),
        }
    }

    pub(crate) fn view_frontier(&self, group: GroupIx) -> Seq {
        self.frontiers.get(group).copied().unwrap_or(0)
    }

    pub(crate) fn view_unsettled(&self) -> u64 {
        self.unsettled
    }

    pub(crate) fn event_total(&self) -> Seq {
        self.records.first().map_or(0, |g| g.len() as Seq)
    }

    pub(crate) fn groups(&self) -> usize {
        self.config.group_count
    }
}

impl RabbitBackend {
    /// [`RabbitBackend::do_fetch`] on behalf of the worker named `worker` (its own connection
    /// and channel in `rabbitmq-channel`; ignored in `rabbitmq`).
    pub(crate) fn do_fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        if self.ch.is_none() {
            return self.do_fetch(group, limit, now_ms, lease_ms);
        }
        let rt = self.rt.handle().clone();
        let _context = rt.enter();
        self.ch_fetch(worker, group, limit, now_ms, lease_ms)
    }

    /// An accepted ack, nack or reject of (group, seq): the records as the server now has them.
    pub(crate) fn settled(&mut self, op: SettleOp, group: GroupIx, seq: Seq, attempts: u32) {
        match op {
            SettleOp::Ack => self.set(
                group,
                seq,
                Rec {
                    status: Status::Acked,
                    attempts,
                    reason: None,
                },
            ),
            SettleOp::Nack { reason, .. } => {
                self.returned(group, seq, attempts, reason);
            }
            SettleOp::Reject { reason } => {
                let why = self.await_dead_letter(group, seq);
                if why != REJECTED {
                    fail(
                        &self.shown_url,
                        "basic.reject",
                        format!("seq {seq}: x-death reason '{why}', {REJECTED} expected"),
                    );
                }
                self.set(
                    group,
                    seq,
                    Rec {
                        status: Status::DeadLettered,
                        attempts,
                        reason: Some(reason),
                    },
                );
            }
            SettleOp::Renew { .. } => unreachable!("refused before"),
        }
    }
}
