//! [`JsBackend`]: the `jetstream` variant on a real nats-server.
//!
//! One stream per run (`leasehold_<pid>_<n>`, file storage, one subject), one durable pull
//! consumer per group (`g0`, `g1`, …, `AckPolicy::Explicit`, `MaxDeliver` = the run's
//! `max_attempts`), deleted with the backend. A lease is a delivery: a fetch is one pull
//! (`$JS.API.CONSUMER.MSG.NEXT`, `no_wait`), and the lease's attempt and receipt are the
//! delivery count and the stream sequence of the delivery's reply subject. Every settle is sent
//! to the reply subject of the delivery the lease names, as a request (`AckSync`): ack `+ACK`,
//! reject `+TERM`, nack `-NAK`, renew `+WPI`.
//!
//! **Time comes from the engine.** The server's `AckWait` is [`ACK_WAIT`] (an hour of wall
//! time: it never passes during a run), so the server never redelivers on its own clock. A
//! lease's virtual deadline is kept here; when the engine's `now` passes it the lease expires
//! here, and the next fetch that may take the message sends `-NAK` on its last delivery (the
//! server puts it on its redelivery queue) right before the pull, lowest stream sequence first.
//! A nack is sent as `-NAK {"delay": AckWait}` (the server keeps the message pending) and
//! released the same way once its virtual delay has passed. An expiry or nack that exhausts the
//! attempts terminates the message (`+TERM`) and keeps the dead letter with its reason here:
//! the server never reaches `MaxDeliver` on its own.
//!
//! What the server decides: which message a pull delivers and its delivery count; whether an
//! ack or a term is taken (the consumer's `num_ack_pending` read before and after). The
//! frontier and the unsettled count are the records' (the settled prefix, the records neither
//! acked nor dead-lettered): after a server restart the consumer's ack floor can lag behind
//! and its `num_ack_pending` count an acked message again (docs/jetstream.md, F13, F14). What is kept here: each record's state as the server's answers left it
//! (the server has no per-message read), the virtual deadlines, the lease ids.

use crate::conn::{connect, redacted, restart_refusal, runtime, Target};
use crate::stop;
use leasehold_model::{
    BrokerConfig, Expired, GroupIx, Lease, LeaseId, Ms, Reason, Receipt, Record, Seq, SettleError,
    SettleOp, SettleRequest, Status, Variant,
};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The variants this backend runs.
pub const VARIANTS: [Variant; 1] = [Variant::JetStream];

/// The consumers' `AckWait`: longer than any run, so that the server's clock never expires a
/// delivery (the engine's virtual time does).
pub const ACK_WAIT: Duration = Duration::from_secs(3600);

/// How long one request to the server may take before the run is abandoned.
const REQUEST_WAIT_MAX: Duration = Duration::from_secs(5);

/// Checks that the backend can run `config` (one-line error otherwise), without a server.
pub fn check_config(config: &BrokerConfig) -> Result<(), String> {
    if !VARIANTS.contains(&config.variant) {
        return Err(format!(
            "runs the jetstream variant only, not '{}'",
            config.variant
        ));
    }
    if config.group_count == 0 || config.group_count > 1000 {
        return Err("between 1 and 1000 groups".to_string());
    }
    if config.max_attempts == 0 || i64::from(config.max_attempts) > i64::from(i32::MAX) {
        return Err("max_attempts must be at least 1".to_string());
    }
    Ok(())
}

/// What one consumer's `CONSUMER.INFO` says, the part the backend reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumerState {
    /// `ack_floor.stream_seq`: every message up to it is acked or terminated.
    pub ack_floor: Seq,
    /// `num_ack_pending`: delivered, neither acked nor terminated.
    pub ack_pending: u64,
    /// `num_pending`: in the stream, never delivered to this consumer.
    pub pending: u64,
    /// `delivered.stream_seq`: the highest stream sequence delivered.
    pub delivered: Seq,
    /// `num_redelivered`: the pending messages delivered more than once.
    pub redelivered: u64,
}

/// One record of one group, as the server's answers left it.
#[derive(Clone, Debug)]
struct Slot {
    record: Record,
    /// The reply subject of its latest delivery.
    reply: Option<String>,
}

/// A run of the `jetstream` variant on a nats-server: see the module documentation.
pub struct JsBackend {
    config: BrokerConfig,
    target: Target,
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
    stream: String,
    subject: String,
    published: Seq,
    next_lease_id: u64,
    slots: Vec<Vec<Slot>>,
    /// The reply subject of every delivery handed out as a lease.
    replies: BTreeMap<LeaseId, String>,
    infos: RefCell<Vec<Option<ConsumerState>>>,
    keep_stream: bool,
    /// When the last request that can change a consumer's stored state was answered.
    last_change: Cell<Option<Instant>>,
}

impl std::fmt::Debug for JsBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsBackend")
            .field("url", &redacted(self.target.url()))
            .field("stream", &self.stream)
            .finish()
    }
}

/// The delivery count and stream sequence of a reply subject
/// (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>`).
pub fn parse_reply(reply: &str) -> Option<(u32, Seq)> {
    let tokens: Vec<&str> = reply.split('.').collect();
    if tokens.len() < 9 || tokens[0] != "$JS" || tokens[1] != "ACK" {
        return None;
    }
    let n = tokens.len();
    // Newer servers put a domain and an account hash before the stream: count from the end.
    let delivered = tokens[n - 5].parse().ok()?;
    let seq = tokens[n - 4].parse().ok()?;
    Some((delivered, seq))
}

fn pending(record: &Record) -> bool {
    match record {
        Record::Leased { .. } => true,
        Record::Available { attempts, .. } => *attempts > 0,
        _ => false,
    }
}

impl JsBackend {
    /// A fresh run of `config` on `target`: its own stream and one consumer per group. Errors
    /// (one line): a variant this backend does not run, no server answering, JetStream off.
    pub fn new(config: &BrokerConfig, target: Target) -> Result<JsBackend, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        check_config(config)?;
        let rt = runtime()?;
        let client = rt.block_on(connect(target.url()))?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let stream = format!("leasehold_{}_{n}", std::process::id());
        let subject = format!("leasehold.{}.{n}", std::process::id());
        let mut backend = JsBackend {
            config: *config,
            target,
            rt,
            client,
            stream,
            subject,
            published: 0,
            next_lease_id: 1,
            slots: vec![Vec::new(); config.group_count],
            replies: BTreeMap::new(),
            infos: RefCell::new(vec![None; config.group_count]),
            keep_stream: false,
            last_change: Cell::new(None),
        };
        backend.create()?;
        Ok(backend)
    }

    fn create(&mut self) -> Result<(), String> {
        let stream = serde_json::json!({
            "name": self.stream,
            "subjects": [self.subject],
            "storage": "file",
            "retention": "limits",
            "num_replicas": 1,
        });
        // nats-server 2.9.10 can refuse a stream created while another one is deleted
        // ("could not create storage directory": the deletion removed the empty `streams`
        // folder); a second attempt succeeds.
        let mut created = Err(String::new());
        for _ in 0..5 {
            created = self.api(&format!("STREAM.CREATE.{}", self.stream), &stream);
            if created.is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        created.map_err(|e| format!("creating stream {}: {e}", self.stream))?;
        for group in 0..self.config.group_count {
            let consumer = serde_json::json!({
                "stream_name": self.stream,
                "config": {
                    "durable_name": format!("g{group}"),
                    "deliver_policy": "all",
                    "ack_policy": "explicit",
                    "ack_wait": ACK_WAIT.as_nanos() as u64,
                    "max_deliver": i64::from(self.config.max_attempts),
                    "max_ack_pending": -1,
                    "replay_policy": "instant",
                },
            });
            self.api(
                &format!("CONSUMER.DURABLE.CREATE.{}.g{group}", self.stream),
                &consumer,
            )
            .map_err(|e| format!("creating consumer g{group}: {e}"))?;
        }
        Ok(())
    }

    /// A JetStream API request (`$JS.API.<what>`); an error answer is an `Err`.
    fn api(&self, what: &str, body: &serde_json::Value) -> Result<serde_json::Value, String> {
        let subject = format!("$JS.API.{what}");
        let payload = body.to_string();
        let client = self.client.clone();
        let answer = self.rt.block_on(async move {
            tokio::time::timeout(REQUEST_WAIT_MAX, client.request(subject, payload.into())).await
        });
        let message = match answer {
            Ok(Ok(message)) => message,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("no answer within 5 s".to_string()),
        };
        let value: serde_json::Value =
            serde_json::from_slice(&message.payload).map_err(|e| format!("answer: {e}"))?;
        if let Some(error) = value.get("error") {
            return Err(error
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or("error")
                .to_string());
        }
        Ok(value)
    }

    /// The configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The run's stream.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The server's URL (print it through [`redacted`]).
    pub fn url(&self) -> &str {
        self.target.url()
    }

    /// Keeps the stream when the backend is dropped (to look at it afterwards).
    pub fn keep_stream(&mut self) {
        self.keep_stream = true;
    }

    fn fail(&self, what: &str, error: impl std::fmt::Display) -> ! {
        let error = error.to_string();
        let line = error.lines().next().unwrap_or_default();
        panic!(
            "backend jetstream ({}): {what}: {line}",
            redacted(self.target.url())
        )
    }

    fn changed(&mut self) {
        for info in self.infos.get_mut() {
            *info = None;
        }
    }

    /// What group `group`'s consumer says now (read again after every change).
    pub fn consumer_state(&self, group: GroupIx) -> ConsumerState {
        if let Some(state) = self.infos.borrow()[group] {
            return state;
        }
        let state = self
            .read_consumer(group)
            .unwrap_or_else(|e| self.fail(&format!("reading consumer g{group}"), e));
        self.infos.borrow_mut()[group] = Some(state);
        state
    }

    /// Reads group `group`'s consumer from the server.
    pub fn read_consumer(&self, group: GroupIx) -> Result<ConsumerState, String> {
        let info = self.api(
            &format!("CONSUMER.INFO.{}.g{group}", self.stream),
            &serde_json::json!({}),
        )?;
        let number = |path: &[&str]| {
            let mut value = &info;
            for key in path {
                value = &value[*key];
            }
            value.as_u64().unwrap_or(0)
        };
        Ok(ConsumerState {
            ack_floor: number(&["ack_floor", "stream_seq"]) as Seq,
            ack_pending: number(&["num_ack_pending"]),
            pending: number(&["num_pending"]),
            delivered: number(&["delivered", "stream_seq"]) as Seq,
            redelivered: number(&["num_redelivered"]),
        })
    }

    /// The stream's last sequence, read from the server.
    pub fn read_last_seq(&self) -> Result<Seq, String> {
        let info = self.api(
            &format!("STREAM.INFO.{}", self.stream),
            &serde_json::json!({}),
        )?;
        Ok(info["state"]["last_seq"].as_u64().unwrap_or(0) as Seq)
    }

    /// A request to a reply subject (`AckSync`); the server answers once it applied it.
    fn ack_sync(&self, reply: &str, body: &str) {
        let client = self.client.clone();
        let (reply, body) = (reply.to_string(), body.to_string());
        let answer = self.rt.block_on(async move {
            tokio::time::timeout(REQUEST_WAIT_MAX, client.request(reply, body.into())).await
        });
        self.last_change.set(Some(Instant::now()));
        match answer {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => self.fail("settle", e),
            Err(_) => self.fail("settle", "no answer within 5 s"),
        }
    }

    /// Sends `body` to `reply` and tells whether the server took it as a settle: its consumer's
    /// `num_ack_pending` went down.
    fn settle_on_server(&mut self, group: GroupIx, reply: &str, body: &str) -> bool {
        let before = self.consumer_state(group).ack_pending;
        self.ack_sync(reply, body);
        self.changed();
        self.consumer_state(group).ack_pending < before
    }

    fn slot(&self, group: GroupIx, seq: Seq) -> Option<&Slot> {
        self.slots.get(group)?.get((seq as usize).checked_sub(1)?)
    }

    fn slot_mut(&mut self, group: GroupIx, seq: Seq) -> &mut Slot {
        &mut self.slots[group][seq as usize - 1]
    }

    /// Events published so far.
    pub fn slots_len(&self) -> Seq {
        self.published
    }

    /// The records neither acked nor dead-lettered, over every group.
    pub fn mirror_unsettled(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .filter(|slot| !slot.record.is_settled())
            .count() as u64
    }

    /// The contiguous prefix of settled (acked or dead-lettered) records of `group`.
    pub fn settled_prefix(&self, group: GroupIx) -> Seq {
        self.slots[group]
            .iter()
            .take_while(|slot| slot.record.is_settled())
            .count() as Seq
    }

    /// A record's state as the server's answers left it.
    pub fn record(&self, group: GroupIx, seq: Seq) -> Option<Record> {
        self.slot(group, seq).map(|slot| slot.record)
    }

    /// Appends an event: one message on the run's subject, its stream sequence checked.
    pub fn publish(&mut self) -> Seq {
        let client = self.client.clone();
        let subject = self.subject.clone();
        let payload = format!("E{}", self.published + 1);
        let answer = self.rt.block_on(async move {
            let js = async_nats::jetstream::new(client);
            tokio::time::timeout(REQUEST_WAIT_MAX, async move {
                js.publish(subject, payload.into()).await?.await
            })
            .await
        });
        let seq = match answer {
            Ok(Ok(ack)) => ack.sequence as Seq,
            Ok(Err(e)) => self.fail("publish", e),
            Err(_) => self.fail("publish", "no answer within 5 s"),
        };
        if seq != self.published + 1 {
            self.fail(
                "publish",
                format!("stream sequence {seq}, expected {}", self.published + 1),
            );
        }
        self.published = seq;
        for group in &mut self.slots {
            group.push(Slot {
                record: Record::default(),
                reply: None,
            });
        }
        self.changed();
        seq
    }

    /// Applies due expiries, then sends `-NAK` on the records due again (lowest sequence
    /// first, at most `limit`) and pulls up to `limit` messages: each delivery is a lease.
    pub fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        self.expire_due(now_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.config.lease_ms));
        let due: Vec<String> = self.slots[group]
            .iter()
            .filter(|slot| {
                matches!(slot.record, Record::Available { attempts, not_before_ms }
                    if attempts > 0 && not_before_ms <= now_ms)
            })
            .filter_map(|slot| slot.reply.clone())
            .take(limit)
            .collect();
        for reply in &due {
            self.ack_sync(reply, "-NAK");
        }
        self.changed();
        let replies = self
            .pull(group, limit)
            .unwrap_or_else(|e| self.fail("fetch", e));
        self.last_change.set(Some(Instant::now()));
        let mut leases = Vec::with_capacity(replies.len());
        for reply in replies {
            let Some((delivered, seq)) = parse_reply(&reply) else {
                self.fail("fetch", format!("a delivery with reply subject {reply}"));
            };
            if delivered > 1 {
                // A redelivery: nats-server 2.9 stores it under its new consumer sequence while
                // the running consumer keeps the first one, and after a restart the stored one
                // makes it drop acks, deliveries and -NAKs (docs/jetstream.md, F17, F18).
                // `+WPI` writes the running consumer's sequence back to the store.
                self.ack_sync(&reply, "+WPI");
            }
            if seq == 0 || seq > self.published {
                self.fail(
                    "fetch",
                    format!("a delivery of unknown stream sequence {seq}"),
                );
            }
            let lease = Lease {
                lease_id: LeaseId(self.next_lease_id),
                group,
                seq,
                attempt: delivered,
                deadline_ms,
                receipt: Some(Receipt(u64::from(seq))),
            };
            self.next_lease_id += 1;
            self.replies.insert(lease.lease_id, reply.clone());
            *self.slot_mut(group, seq) = Slot {
                record: Record::Leased {
                    lease_id: lease.lease_id,
                    attempts: delivered,
                    deadline_ms,
                },
                reply: Some(reply),
            };
            leases.push(lease);
        }
        Ok(leases)
    }

    /// One `no_wait` pull of up to `limit` messages: their reply subjects, in delivery order.
    fn pull(&mut self, group: GroupIx, limit: usize) -> Result<Vec<String>, String> {
        use futures_util::StreamExt;
        let client = self.client.clone();
        let subject = format!("$JS.API.CONSUMER.MSG.NEXT.{}.g{group}", self.stream);
        let body = serde_json::json!({ "batch": limit, "no_wait": true }).to_string();
        self.rt.block_on(async move {
            let inbox = client.new_inbox();
            let mut sub = client
                .subscribe(inbox.clone())
                .await
                .map_err(|e| e.to_string())?;
            client
                .publish_with_reply(subject, inbox, body.into())
                .await
                .map_err(|e| e.to_string())?;
            let mut replies = Vec::new();
            while replies.len() < limit {
                let next = tokio::time::timeout(REQUEST_WAIT_MAX, sub.next()).await;
                let message = match next {
                    Ok(Some(message)) => message,
                    Ok(None) => return Err("the pull's subscription ended".to_string()),
                    Err(_) => return Err("the pull got no answer within 5 s".to_string()),
                };
                if let Some(status) = message.status {
                    // 404 no messages, 408 the batch ended short: the pull is over.
                    if status.as_u16() == 404 || status.as_u16() == 408 {
                        break;
                    }
                    return Err(format!(
                        "the pull answered {} {}",
                        status.as_u16(),
                        message.description.unwrap_or_default()
                    ));
                }
                match message.reply {
                    Some(reply) => replies.push(reply.to_string()),
                    None => return Err("a delivery without a reply subject".to_string()),
                }
            }
            let _ = sub.unsubscribe().await;
            Ok(replies)
        })
    }

    /// Applies a settle or renew to the delivery the lease names.
    pub fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = request.lease;
        let Some(slot) = self.slot(lease.group, lease.seq).cloned() else {
            return Err(SettleError::Invalid(
                format!("no record for group {} seq {}", lease.group, lease.seq).into(),
            ));
        };
        let receipt_ok = lease.receipt == Some(Receipt(u64::from(lease.seq)));
        // The delivery the lease names (a lease from before a restart too); else the latest.
        let reply = self
            .replies
            .get(&lease.lease_id)
            .cloned()
            .or(slot.reply.clone());
        if let SettleOp::Renew { extend_ms } = request.op {
            // +WPI acts on whatever delivery holds the message (docs/jetstream.md, F7): the
            // adapter checks the lease is the current one before it sends it.
            return match slot.record {
                Record::Leased {
                    lease_id,
                    attempts,
                    deadline_ms,
                } if lease_id == lease.lease_id && now_ms < deadline_ms => {
                    if !receipt_ok {
                        return Err(SettleError::ReceiptMismatch);
                    }
                    let reply = reply.expect("a leased record was delivered");
                    self.ack_sync(&reply, "+WPI");
                    let deadline_ms = now_ms.saturating_add(extend_ms);
                    self.slot_mut(lease.group, lease.seq).record = Record::Leased {
                        lease_id,
                        attempts,
                        deadline_ms,
                    };
                    Ok(Some(Lease {
                        deadline_ms,
                        ..lease
                    }))
                }
                _ => Err(SettleError::StaleLease),
            };
        }
        // The reply subject names the stream sequence: another one names another message.
        if pending(&slot.record) && !receipt_ok {
            return Err(SettleError::ReceiptMismatch);
        }
        let Some(reply) = reply.filter(|_| receipt_ok) else {
            // Never delivered: no reply subject to send to.
            return Err(SettleError::StaleLease);
        };
        match request.op {
            SettleOp::Ack => {
                if !self.settle_on_server(lease.group, &reply, "+ACK") {
                    return Err(SettleError::StaleLease);
                }
                self.slot_mut(lease.group, lease.seq).record = Record::Acked;
                Ok(None)
            }
            SettleOp::Reject { reason } => {
                if !self.settle_on_server(lease.group, &reply, "+TERM") {
                    return Err(SettleError::StaleLease);
                }
                self.slot_mut(lease.group, lease.seq).record = Record::DeadLettered { reason };
                Ok(None)
            }
            SettleOp::Nack { delay_ms, reason } => {
                // The server does not say whether it took a -NAK: pending is the record's state
                // as its answers left it.
                let Some(attempts) = slot.record.attempts().filter(|_| pending(&slot.record))
                else {
                    return Err(SettleError::StaleLease);
                };
                if attempts >= self.config.max_attempts {
                    if !self.settle_on_server(lease.group, &reply, "+TERM") {
                        self.fail(
                            "nack",
                            format!("the server refused +TERM of pending message {}", lease.seq),
                        );
                    }
                    self.slot_mut(lease.group, lease.seq).record = Record::DeadLettered {
                        reason: reason.unwrap_or(Reason::MAX_ATTEMPTS),
                    };
                } else {
                    let body = format!("-NAK {{\"delay\": {}}}", ACK_WAIT.as_nanos());
                    self.ack_sync(&reply, &body);
                    // A delayed -NAK stores the delivery count of the reply subject it names: a
                    // stale one would make the message's next delivery after a restart count
                    // too low (F19). The same -NAK on the latest delivery stores the right one.
                    if let Some(latest) = slot.reply.as_ref().filter(|latest| **latest != reply) {
                        self.ack_sync(latest, &body);
                    }
                    self.changed();
                    self.slot_mut(lease.group, lease.seq).record = Record::Available {
                        attempts,
                        not_before_ms: now_ms.saturating_add(delay_ms),
                    };
                }
                Ok(None)
            }
            SettleOp::Renew { .. } => unreachable!("handled above"),
        }
    }

    /// Expires every lease whose virtual deadline is `<= now_ms`, in firing order (deadline,
    /// group, seq). A lease on its last attempt terminates its message (`+TERM`): the dead
    /// letter.
    pub fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let mut due: Vec<Expired> = Vec::new();
        for (group, slots) in self.slots.iter().enumerate() {
            for (index, slot) in slots.iter().enumerate() {
                if let Record::Leased {
                    lease_id,
                    attempts,
                    deadline_ms,
                } = slot.record
                {
                    if deadline_ms <= now_ms {
                        due.push(Expired {
                            deadline_ms,
                            group,
                            seq: index as Seq + 1,
                            lease_id,
                            dead_lettered: attempts >= self.config.max_attempts,
                            stale_timer: None,
                        });
                    }
                }
            }
        }
        due.sort();
        for expired in &due {
            let slot = self.slot(expired.group, expired.seq).cloned();
            let slot = slot.expect("a leased record");
            if expired.dead_lettered {
                let reply = slot.reply.expect("a leased record was delivered");
                if !self.settle_on_server(expired.group, &reply, "+TERM") {
                    self.fail(
                        "expiry",
                        format!(
                            "the server refused +TERM of pending message {}",
                            expired.seq
                        ),
                    );
                }
                self.slot_mut(expired.group, expired.seq).record = Record::DeadLettered {
                    reason: Reason::MAX_ATTEMPTS,
                };
            } else {
                let attempts = slot.record.attempts().unwrap_or(0);
                self.slot_mut(expired.group, expired.seq).record = Record::Available {
                    attempts,
                    not_before_ms: expired.deadline_ms,
                };
            }
        }
        due
    }

    /// The earliest virtual deadline of a lease.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.slots
            .iter()
            .flatten()
            .filter_map(|slot| match slot.record {
                Record::Leased { deadline_ms, .. } => Some(deadline_ms),
                _ => None,
            })
            .min()
    }

    /// A record's status and dead-letter reason.
    pub fn status_of(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.record(group, seq) {
            Some(Record::DeadLettered { reason }) => {
                (Status::DeadLettered, Some(reason.as_str().to_string()))
            }
            Some(record) => (record.status(), None),
            None => (Status::Dropped, None),
        }
    }

    /// What group `group`'s consumer must say, from the records: (`num_ack_pending`,
    /// `num_pending`, `delivered.stream_seq`, `num_redelivered`).
    fn expected_counters(&self, group: GroupIx) -> (u64, u64, Seq, u64) {
        let records = || self.slots[group].iter().map(|slot| &slot.record);
        let ack_pending = records().filter(|r| pending(r)).count() as u64;
        let never = records()
            .filter(|r| matches!(r, Record::Available { attempts: 0, .. }))
            .count() as u64;
        let delivered = records()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|r| !matches!(r, Record::Available { attempts: 0, .. }))
            .map_or(0, |i| i as Seq + 1);
        let redelivered = records()
            .filter(|r| pending(r) && r.attempts().is_some_and(|a| a > 1))
            .count() as u64;
        (ack_pending, never, delivered, redelivered)
    }

    /// A broker restart: the server this process started is stopped (`SIGTERM`: it writes its
    /// stores) and started again on the same store; the backend reconnects and checks that the
    /// stream kept every message and each consumer its counters. Refused (a panic naming why)
    /// on a server given by URL.
    ///
    /// The stop comes once the server's consumer-state writers are idle, and a state file the
    /// stop emptied all the same is put back from the copy read just before it
    /// ([`crate::stop`], docs/jetstream.md F20).
    pub fn restart(&mut self) {
        let Some(server) = self.target.server() else {
            panic!("backend jetstream: {}", restart_refusal(self.target.url()));
        };
        let files = stop::state_files(&server.store_dir(), &self.stream, self.config.group_count);
        if !stop::wait_idle(self.last_change.get(), &files) {
            self.fail(
                "before a restart",
                format!(
                    "the consumers' state files were still being written after {} s",
                    stop::IDLE_WAIT_MAX.as_secs()
                ),
            );
        }
        let copies: Vec<Option<Vec<u8>>> = files.iter().map(|f| stop::read_complete(f)).collect();
        if let Err(e) = server.restart_with(|_| stop::put_back_emptied(&files, &copies)) {
            self.fail("restarting the server", e);
        }
        // The restarted server writes the states it recovered: a change like any other.
        self.last_change.set(Some(Instant::now()));
        let client = self
            .rt
            .block_on(connect(self.target.url()))
            .unwrap_or_else(|e| self.fail("after a restart", e));
        self.client = client;
        self.changed();
        // The stream and its consumers come back from the store; wait until they answer.
        let mut last = String::new();
        for _ in 0..200 {
            match self.read_last_seq() {
                Ok(seq) if seq == self.published => {
                    let consumers: Result<Vec<ConsumerState>, String> =
                        (0..self.config.group_count)
                            .map(|group| self.read_consumer(group))
                            .collect();
                    match consumers {
                        Ok(states) => return self.check_restarted(&states),
                        Err(e) => last = e,
                    }
                }
                Ok(seq) => {
                    last = format!("stream holds {seq} messages, {} published", self.published)
                }
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.fail("after a restart", last)
    }

    /// After a restart, each consumer's counters must be the records' (else the run's outcome
    /// would no longer be the server's answer to the engine's steps).
    fn check_restarted(&self, states: &[ConsumerState]) {
        for (group, state) in states.iter().enumerate() {
            let expected = self.expected_counters(group);
            let actual = (
                state.ack_pending,
                state.pending,
                state.delivered,
                state.redelivered,
            );
            if actual != expected {
                self.fail(
                    "after a restart",
                    format!(
                        "consumer g{group} came back with (num_ack_pending, num_pending, \
                         delivered, num_redelivered) {actual:?}, the records say {expected:?}"
                    ),
                );
            }
        }
    }
}

impl Drop for JsBackend {
    fn drop(&mut self) {
        if !self.keep_stream {
            let _ = self.api(
                &format!("STREAM.DELETE.{}", self.stream),
                &serde_json::json!({}),
            );
        }
    }
}
