//! The `rabbitmq-channel` variant on the server: each worker a connection of its own and one
//! channel per group on it, several deliveries held on that channel (docs/rabbitmq.md).
//!
//! The bookkeeping is the model's own ([`Channels`]): which logical channel is a worker's
//! current one, the tags it handed out, the deliveries it holds. Each logical channel is an
//! AMQP channel on the worker's connection, opened when first used; its delivery tags are
//! the server's (checked on every `basic.get`).
//!
//! * fetch: `basic.get` (manual ack) on the worker's current channel for the group.
//! * ack / nack / reject naming a tag the current channel holds: sent there; a round trip on
//!   the same channel (`queue.declare passive`) follows, so the server has read it.
//! * a tag the current channel does not hold: sent there all the same; the backend waits for
//!   the server's `406 … unknown delivery tag` closing the channel, and answers
//!   `stale_lease`. The channel's other deliveries went back to the queue with it: they are
//!   reported as expired at the next expiry, as the model does.
//! * a delivery past its deadline: its channel is closed (`consumer_timeout`), which returns
//!   every delivery on it.

use crate::backend::{fail, RabbitBackend, Rec, DELIVERY_LIMIT_WAIT, SERVER_CLOSES_MAX};
use crate::conn::{open, Endpoint};
use amqprs::channel::{
    BasicAckArguments, BasicGetArguments, BasicNackArguments, BasicRejectArguments, Channel,
    QueueDeclareArguments,
};
use amqprs::connection::Connection;
use leasehold_model::channels::{self, Channels};
use leasehold_model::{
    Expired, GroupIx, Lease, LeaseId, Ms, Seq, SettleError, SettleOp, SettleRequest, Status,
};
use std::collections::BTreeMap;
use std::time::Instant;

/// A delivery the backend holds for a worker.
pub(crate) struct Held {
    group: GroupIx,
    seq: Seq,
    deadline_ms: Ms,
}

/// The workers' connections and channels.
#[derive(Default)]
pub(crate) struct Mode {
    pub(crate) endpoint: Option<Endpoint>,
    channels: Channels,
    /// The connections of each consumer (by the model's consumer index), by generation: a
    /// consumer's new channels open on its latest one.
    connections: BTreeMap<(u32, u32), Connection>,
    /// Each consumer's latest generation and how many of its channels the server closed.
    generation: BTreeMap<u32, (u32, u32)>,
    /// The AMQP channel of each open logical channel, with what it heard and the generation
    /// of the connection it is on.
    amqp: BTreeMap<u32, (Channel, crate::backend::Heard, u32)>,
    held: BTreeMap<LeaseId, Held>,
    /// Deliveries a channel's close returned, not yet reported by an expiry.
    returned: Vec<Expired>,
}

impl Mode {
    /// The mode for a run on the server at `endpoint`.
    pub(crate) fn new(endpoint: Endpoint) -> Mode {
        Mode {
            endpoint: Some(endpoint),
            ..Mode::default()
        }
    }

    /// Closes every connection (the backend is dropped).
    pub(crate) async fn shut(&mut self) {
        for (_, connection) in std::mem::take(&mut self.connections) {
            let _ = connection.close().await;
        }
    }
}

impl RabbitBackend {
    fn mode(&mut self) -> &mut Mode {
        self.ch.as_mut().expect("rabbitmq-channel only")
    }

    /// The AMQP channel of logical channel `channel` of `consumer`, opened (with the
    /// consumer's connection) when first used.
    fn amqp(&mut self, consumer: u32, channel: u32) -> Channel {
        if let Some((amqp, _, _)) = self.mode().amqp.get(&channel) {
            return amqp.clone();
        }
        let shown = self.shown_url.clone();
        let prefix = format!("{}-w{consumer}", self.prefix);
        // The runtime itself, not a handle of it: a current-thread runtime drives its I/O and
        // timers only inside `Runtime::block_on`.
        let rt = &self.rt;
        let mode = self.ch.as_mut().expect("rabbitmq-channel only");
        let endpoint = mode.endpoint.clone().expect("kept at creation");
        let opened = rt.block_on(async {
            let generation = mode.generation.entry(consumer).or_default().0;
            if let std::collections::btree_map::Entry::Vacant(entry) =
                mode.connections.entry((consumer, generation))
            {
                entry.insert(open(&endpoint, &shown, &format!("{prefix}-{generation}")).await?);
            }
            let connection = &mode.connections[&(consumer, generation)];
            let amqp = connection
                .open_channel(None)
                .await
                .map_err(|e| e.to_string())?;
            let heard = crate::backend::Heard::default();
            amqp.register_callback(heard.clone())
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((amqp, heard, generation))
        });
        match opened {
            Ok(opened) => {
                let amqp = opened.0.clone();
                mode.amqp.insert(channel, opened);
                amqp
            }
            Err(e) => fail(&shown, "opening a worker's channel", e),
        }
    }

    pub(crate) fn ch_fetch(
        &mut self,
        worker: &str,
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
        self.ch_expire_due(now_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.config.lease_ms));
        let consumer = self.mode().channels.consumer(worker);
        let queue = self.queue(group);
        let mut out = Vec::new();
        while out.len() < limit && self.available(group) > 0 {
            let channel = self.mode().channels.current(consumer, group);
            let amqp = self.amqp(consumer, channel);
            let got = self
                .rt
                .block_on(amqp.basic_get(BasicGetArguments::new(&queue).no_ack(false).finish()));
            let Some((ok, props, _)) =
                got.unwrap_or_else(|e| fail(&self.shown_url, "basic.get", e))
            else {
                fail(
                    &self.shown_url,
                    "basic.get",
                    format!("{queue} is empty, {} ready expected", self.available(group)),
                );
            };
            let seq = crate::backend::message_seq(&props)
                .filter(|&s| {
                    self.rec(group, s)
                        .is_some_and(|r| r.status == Status::Available)
                })
                .unwrap_or_else(|| {
                    fail(
                        &self.shown_url,
                        "basic.get",
                        format!(
                            "{queue} delivered {:?}, which is not available",
                            props.message_id()
                        ),
                    )
                });
            let attempts =
                crate::backend::header_int(&props, "x-delivery-count").unwrap_or(0) as u32 + 1;
            let lease_id = self.mode().channels.deliver(consumer, group, seq);
            if u64::from(channels::tag_of(lease_id)) != ok.delivery_tag() {
                fail(
                    &self.shown_url,
                    "basic.get",
                    format!(
                        "delivery tag {} on the channel, {} expected",
                        ok.delivery_tag(),
                        channels::tag_of(lease_id)
                    ),
                );
            }
            self.set(
                group,
                seq,
                Rec {
                    status: Status::Leased,
                    attempts,
                    reason: None,
                },
            );
            self.mode().held.insert(
                lease_id,
                Held {
                    group,
                    seq,
                    deadline_ms,
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

    pub(crate) fn ch_settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
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
        if lease.receipt.is_some() {
            return Err(SettleError::ReceiptMismatch);
        }
        let Some((consumer, _)) = self.mode().channels.route(lease.lease_id, lease.group) else {
            return Err(SettleError::StaleLease);
        };
        // Every channel whose delivery timed out by now closed at that time, in that order
        // (the order the server returns their deliveries in); the settle travels on the
        // worker's channel that is open now.
        self.close_due_channels(now_ms);
        let channel = self.mode().channels.current(consumer, lease.group);
        let tag = channels::tag_of(lease.lease_id);
        let amqp = self.amqp(consumer, channel);
        let sent = self.rt.block_on(async {
            match request.op {
                SettleOp::Ack => {
                    amqp.basic_ack(BasicAckArguments::new(u64::from(tag), false))
                        .await
                }
                SettleOp::Nack { .. } => {
                    amqp.basic_nack(BasicNackArguments::new(u64::from(tag), false, true))
                        .await
                }
                SettleOp::Reject { .. } => {
                    amqp.basic_reject(BasicRejectArguments::new(u64::from(tag), false))
                        .await
                }
                SettleOp::Renew { .. } => unreachable!("refused above"),
            }
        });
        if let Err(e) = sent {
            fail(&self.shown_url, "a settle", e);
        }
        let Some(delivery) = self.mode().channels.find(channel, tag) else {
            self.await_refusal(channel, now_ms);
            return Err(SettleError::StaleLease);
        };
        self.round_trip(&amqp);
        let (group, seq) = (delivery.group as GroupIx, delivery.seq);
        let id = channels::lease_id(channel, tag);
        self.mode().channels.remove(channel, tag);
        self.mode().held.remove(&id);
        let attempts = self.rec(group, seq).map_or(0, |r| r.attempts);
        self.settled(request.op, group, seq, attempts);
        Ok(None)
    }

    /// A round trip on `amqp`: the server has read what was sent on it before.
    fn round_trip(&self, amqp: &Channel) {
        let queue = self.queue(0);
        let answered = self.rt.block_on(
            amqp.queue_declare(QueueDeclareArguments::new(&queue).passive(true).finish()),
        );
        if let Err(e) = answered {
            fail(&self.shown_url, "queue.declare (passive)", e);
        }
    }

    /// Waits for the server's `406 … unknown delivery tag` closing `channel`; its deliveries
    /// end now (reported at the next expiry).
    fn await_refusal(&mut self, channel: u32, now_ms: Ms) {
        let heard = self
            .mode()
            .amqp
            .get(&channel)
            .expect("opened to send")
            .1
            .clone();
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
            if started.elapsed() > DELIVERY_LIMIT_WAIT {
                fail(&self.shown_url, "a stale settle", "the server accepted it");
            }
            self.rt
                .block_on(tokio::time::sleep(std::time::Duration::from_millis(1)));
        }
        self.forget_closed_by_server(channel);
        self.end_channel(channel, now_ms);
    }

    /// Closes every open channel holding a delivery whose deadline is `<= now_ms`, earliest
    /// deadline first, each at that deadline (as `consumer_timeout` would have).
    fn close_due_channels(&mut self, now_ms: Ms) {
        loop {
            let mode = self.mode();
            let due = mode
                .held
                .iter()
                .filter(|(id, h)| {
                    h.deadline_ms <= now_ms && mode.channels.is_current(channels::channel_of(**id))
                })
                .map(|(id, h)| (h.deadline_ms, h.group, h.seq, *id))
                .min();
            let Some((deadline_ms, _, _, id)) = due else {
                break;
            };
            self.close_timed_out(channels::channel_of(id), deadline_ms);
        }
    }

    /// `channel` times out at `at_ms`: closed by the client, as `consumer_timeout` closes it.
    fn close_timed_out(&mut self, channel: u32, at_ms: Ms) {
        if let Some((amqp, _, generation)) = self.mode().amqp.remove(&channel) {
            if let Err(e) = self.rt.block_on(amqp.close()) {
                fail(&self.shown_url, "channel.close", e);
            }
            let consumer = self.consumer_of(channel);
            self.close_retired(consumer, generation);
        }
        self.end_channel(channel, at_ms);
    }

    /// The consumer a logical channel belongs to.
    fn consumer_of(&mut self, channel: u32) -> u32 {
        self.mode().channels.owner(channel).unwrap_or(0)
    }

    /// The server closed `channel` (a refused tag's `406`). Its connection keeps the
    /// channel's number until the connection closes (`amqprs` frees a number only at a close
    /// the client starts), and a RabbitMQ connection has at most 2047: after
    /// [`SERVER_CLOSES_MAX`] of them, the consumer's new channels open on a new connection,
    /// and the old one closes once none of its channels is open.
    fn forget_closed_by_server(&mut self, channel: u32) {
        let consumer = self.consumer_of(channel);
        let Some((_, _, generation)) = self.mode().amqp.remove(&channel) else {
            return;
        };
        let latest = self.mode().generation.entry(consumer).or_default();
        if latest.0 == generation {
            latest.1 += 1;
            if latest.1 >= SERVER_CLOSES_MAX {
                *latest = (generation + 1, 0);
            }
        }
        self.close_retired(consumer, generation);
    }

    /// Closes the consumer's connection of `generation` when it is not the latest and none of
    /// its channels is open.
    fn close_retired(&mut self, consumer: u32, generation: u32) {
        let mode = self.ch.as_mut().expect("rabbitmq-channel only");
        let latest = mode.generation.get(&consumer).map_or(0, |g| g.0);
        if generation == latest
            || mode
                .amqp
                .iter()
                .any(|(&c, (_, _, g))| *g == generation && mode.channels.owner(c) == Some(consumer))
        {
            return;
        }
        if let Some(connection) = mode.connections.remove(&(consumer, generation)) {
            if let Err(e) = self.rt.block_on(connection.close()) {
                fail(&self.shown_url, "closing a worker's connection", e);
            }
        }
    }

    /// `channel` closed at `at_ms`: each delivery it held ends then; the worker's next channel
    /// is current.
    fn end_channel(&mut self, channel: u32, at_ms: Ms) {
        if !self.mode().channels.is_current(channel) {
            return;
        }
        let closed = self.mode().channels.close(channel);
        let mut returned = Vec::new();
        for d in closed.iter() {
            let lease_id = channels::lease_id(d.channel, d.tag);
            let Some(held) = self.mode().held.remove(&lease_id) else {
                continue;
            };
            let (group, seq) = (held.group, held.seq);
            let attempts = self.rec(group, seq).map_or(0, |r| r.attempts);
            let dead_lettered = attempts >= self.config.max_attempts;
            let (status, reason) = if dead_lettered {
                (
                    Status::DeadLettered,
                    Some(leasehold_model::Reason::MAX_ATTEMPTS),
                )
            } else {
                (Status::Available, None)
            };
            self.set(
                group,
                seq,
                Rec {
                    status,
                    attempts,
                    reason,
                },
            );
            returned.push(Expired {
                deadline_ms: held.deadline_ms.min(at_ms),
                group,
                seq,
                lease_id,
                dead_lettered,
                stale_timer: None,
            });
        }
        // The server returned them together: wait until it shows all of them.
        for group in 0..self.config.group_count {
            let dead: Vec<Seq> = returned
                .iter()
                .filter(|e| e.group == group && e.dead_lettered)
                .map(|e| e.seq)
                .collect();
            self.await_dead_letters(group, dead);
            if returned
                .iter()
                .any(|e| e.group == group && !e.dead_lettered)
            {
                let expected = self.available(group);
                self.await_ready(group, expected);
            }
        }
        self.mode().returned.extend(returned);
    }

    /// Every channel holding a delivery due by `now_ms` closes (earliest first); the returns
    /// the closes made since the last call, in firing order.
    pub(crate) fn ch_expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        self.close_due_channels(now_ms);
        let mut out = std::mem::take(&mut self.mode().returned);
        out.sort_unstable();
        out
    }

    /// Waits until every seq of `seqs` arrived in `group`'s dead-letter queue with
    /// `x-first-death-reason` `delivery_limit`, in any order.
    fn await_dead_letters(&self, group: GroupIx, seqs: Vec<Seq>) {
        for seq in seqs {
            let why = self.await_dead_letter(group, seq);
            if why != crate::backend::DELIVERY_LIMIT {
                fail(
                    &self.shown_url,
                    "dead-lettering",
                    format!("seq {seq}: x-death reason '{why}'"),
                );
            }
        }
    }

    pub(crate) fn ch_next_deadline(&self) -> Option<Ms> {
        let mode = self.ch.as_ref()?;
        mode.held
            .values()
            .map(|h| h.deadline_ms)
            .chain(mode.returned.iter().map(|e| e.deadline_ms))
            .min()
    }
}
