//! Requests on the wire: sending, landing at the broker, the reply and the runtime's reaction.

use super::live::{End, Flight, SendFrom};
use super::queue::Due;
use super::{Delivery, Engine};
use crate::coverage::Probe;
use crate::event::{Event, Origin, Readback};
use crate::trace::{Fault, RequestId, WorkerIx};
use leasehold_model::runtime;
use leasehold_model::{
    Backend, ErrorAction, Issuance, Lease, Ms, Reason, Seq, SettleError, SettleOp, SettleRequest,
    Status,
};

impl<B: Backend> Engine<B> {
    /// Puts a settle or renew of `issuance` on the wire from `worker`, as its own line. The
    /// lease sent is the holder's copy, or `lease` when given (e.g. with a forged receipt).
    /// If `worker` fetched the lease in an earlier incarnation (it crashed since), the request
    /// is one it sent before crashing that was still in flight: it is marked delayed and its
    /// reply is discarded. Call [`Engine::run_until`] to deliver it.
    ///
    /// # Panics
    /// When the engine no longer tracks `issuance` (see [`Engine::handle`]).
    pub fn send(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        lease: Option<Lease>,
        op: SettleOp,
        delivery: Delivery,
    ) -> RequestId {
        let from = SendFrom {
            origin: Origin::Own,
            nack_on_failure: true,
        };
        self.send_on(worker, issuance, lease, op, delivery, from)
    }

    pub(super) fn send_on(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        lease: Option<Lease>,
        op: SettleOp,
        delivery: Delivery,
        from: SendFrom,
    ) -> RequestId {
        // The flight names the lease from now on.
        let info = self.tracked_and_retained(issuance);
        let w = &self.workers[worker];
        let delayed = info.holder == worker && info.holder_incarnation != w.incarnation;
        let incarnation = if delayed {
            info.holder_incarnation
        } else {
            w.incarnation
        };
        let worker_clock_ms = self.now_ms.saturating_add_signed(w.clock_offset_ms);
        let sent_ms = self.now_ms.max(if delayed { 0 } else { w.paused_until_ms });
        let id = RequestId(self.requests_sent);
        self.requests_sent += 1;
        let lease = lease.unwrap_or(info.lease);
        let slot = self.flights.insert_with(|| Flight {
            id,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            delivery,
            nack_on_failure: from.nack_on_failure,
            seen: None,
            renewed: None,
            pending: 1,
        });
        self.emit(
            self.now_ms,
            Event::Sent {
                request: id,
                worker,
                incarnation,
                issuance,
                op,
                lease,
                worker_clock_ms,
                sent_ms,
                fault: delivery.fault,
                delayed,
                nack_on_failure: from.nack_on_failure,
                origin: from.origin,
                before_timer: delivery.before_timer,
            },
        );
        let at = sent_ms.saturating_add(delivery.delay_ms);
        let due = Due::Deliver {
            slot,
            duplicate: false,
        };
        if delivery.before_timer {
            self.queue.push_first(at, due);
        } else {
            self.queue.push(at, due);
        }
        id
    }

    /// A queued event of flight `slot` ran: the flight ends when none is left.
    fn flight_step_done(&mut self, slot: u32) {
        let flight = self.flights.get_mut(slot);
        flight.pending -= 1;
        if flight.pending == 0 {
            let issuance = flight.issuance;
            if self.recorder.is_some() {
                self.tell_request_done(slot);
            }
            self.flights.free(slot);
            self.leases.release(issuance);
        }
    }

    /// Tells the recorder that the request of flight `slot` is done (its last message ran).
    #[cold]
    #[inline(never)]
    fn tell_request_done(&mut self, slot: u32) {
        let id = self.flights.get(slot).id;
        if let Some(recorder) = &mut self.recorder {
            recorder.request_done(id);
        }
    }

    // ----- the broker side of a request -----

    /// A request reaches the broker (or is lost on the way, or refused by a fault).
    #[inline(never)]
    pub(super) fn deliver(&mut self, slot: u32, duplicate: bool) {
        let f = self.flights.get(slot);
        let fault = if duplicate { Fault::None } else { f.fault() };
        let reply_at = self.now_ms.saturating_add(f.delivery.reply_delay_ms);
        if matches!(fault, Fault::Dropped | Fault::Unavailable | Fault::Failed) {
            self.not_applied(slot, fault, reply_at);
            return;
        }
        let (id, issuance, op, lease, worker) = (f.id, f.issuance, f.op, f.lease, f.worker);
        let wire = SettleRequest {
            lease,
            op,
            worker_clock_ms: f.worker_clock_ms,
        };
        let now_ms = self.now_ms;
        let before = self.backend.frontier(lease.group);
        self.changed_backend();
        let answer = self
            .backend
            .settle_as(&self.setup.workers[worker], &wire, now_ms);
        self.oracle
            .settled(issuance, &lease, &op, answer.is_ok(), now_ms);
        // A renew may have moved a deadline to now: the next advance must see it.
        self.advanced_ms = None;
        self.probe_landing(slot, duplicate, &answer);
        let readback = match &answer {
            Ok(renewed) => {
                let record = (lease.group, lease.seq);
                self.accepted(issuance, op, record, renewed.as_ref(), before)
            }
            Err(_) => Readback::default(),
        };
        let renewed = answer.as_ref().ok().copied().flatten();
        let plain = answer.map(drop);
        let event = Event::Landed {
            request: id,
            duplicate,
            answer: plain.clone(),
            effect: readback,
            renewed,
        };
        self.emit(now_ms, event);
        if !duplicate {
            self.schedule_reply(slot, fault, plain, renewed, reply_at);
        }
        self.flight_step_done(slot);
    }

    /// A request the network lost (`Dropped`) or the broker refused without applying it
    /// (`Unavailable`, `Failed`): the worker's reply carries the error.
    #[cold]
    #[inline(never)]
    fn not_applied(&mut self, slot: u32, fault: Fault, reply_at: Ms) {
        let (seen, reached) = match fault {
            Fault::Dropped => {
                self.hits.hit(Probe::RequestDropped);
                (SettleError::Ambiguous("request lost".into()), false)
            }
            Fault::Unavailable => {
                self.hits.hit(Probe::BackendUnavailable);
                (SettleError::BackendUnavailable, true)
            }
            _ => (SettleError::Failed("injected".into()), true),
        };
        let f = self.flights.get_mut(slot);
        f.seen = Some(Err(seen.clone()));
        f.pending += 1;
        let request = f.id;
        self.emit(
            self.now_ms,
            Event::NotApplied {
                request,
                reached,
                seen,
            },
        );
        self.queue.push(reply_at, Due::Reply { slot });
        self.flight_step_done(slot);
    }

    /// After a first landing: the reply (what the worker will see), and the duplicate delivery
    /// the network planned.
    fn schedule_reply(
        &mut self,
        slot: u32,
        fault: Fault,
        answer: Result<(), SettleError>,
        renewed: Option<Lease>,
        reply_at: Ms,
    ) {
        let f = self.flights.get_mut(slot);
        f.seen = Some(match fault {
            Fault::LostReply => Err(SettleError::Ambiguous("reply lost".into())),
            _ => answer,
        });
        // Carried by the reply: the holder updates its copy when it arrives.
        f.renewed = renewed;
        f.pending += 1;
        let duplicate_after_ms = f.delivery.duplicate_after_ms;
        self.queue.push(reply_at, Due::Reply { slot });
        if let Some(after) = duplicate_after_ms {
            self.flights.get_mut(slot).pending += 1;
            let at = self.now_ms.saturating_add(after);
            let due = Due::Deliver {
                slot,
                duplicate: true,
            };
            self.queue.push(at, due);
        }
    }

    /// Counts the coverage probes a landing request reaches.
    fn probe_landing(
        &mut self,
        slot: u32,
        duplicate: bool,
        answer: &Result<Option<Lease>, SettleError>,
    ) {
        let f = self.flights.get(slot);
        let (op, lease, worker_clock_ms) = (f.op, f.lease, f.worker_clock_ms);
        let sender_restarted = self.workers[f.worker].incarnation != f.incarnation;
        let lost_reply = f.fault() == Fault::LostReply;
        let issuance = f.issuance;
        let now_ms = self.now_ms;
        if duplicate {
            self.hits.hit(Probe::DuplicateDelivery);
        }
        if matches!(answer, Err(SettleError::StaleLease)) {
            self.hits.hit(Probe::StaleSettleRefused);
        }
        if duplicate || !op.is_settle() {
            return;
        }
        if op == SettleOp::Ack && sender_restarted {
            self.hits.hit(Probe::LateAckFromRestartedWorker);
        }
        let worker_valid = worker_clock_ms < lease.deadline_ms;
        let broker_valid = now_ms < lease.deadline_ms;
        if worker_valid != broker_valid {
            self.hits.hit(Probe::SkewedClockSettle);
        }
        if answer.is_ok() {
            if lost_reply {
                self.hits.hit(Probe::AmbiguousReply);
            }
            let first_deadline_ms = self.leases.get(issuance).map(|l| l.first_deadline_ms);
            if first_deadline_ms.is_some_and(|d| now_ms >= d) {
                self.hits.hit(Probe::RenewKeptLeaseAlive);
            }
        }
    }

    /// What an accepted request did to the broker, and to the engine's record of its lease.
    fn accepted(
        &mut self,
        issuance: Issuance,
        op: SettleOp,
        (group, seq): (usize, Seq),
        renewed: Option<&Lease>,
        before: Seq,
    ) -> Readback {
        let after = self.backend.frontier(group);
        let status = self.backend.status_kind(group, seq);
        let reason = match (status, &self.recorder) {
            (Status::DeadLettered, Some(_)) => {
                self.backend.status(group, seq).1.map(|r| Reason::new(&r))
            }
            _ => None,
        };
        match (op, status) {
            (SettleOp::Reject { .. }, Status::DeadLettered) => {
                self.hits.hit(Probe::DeadLetterByReject);
            }
            (SettleOp::Nack { .. }, Status::DeadLettered) => {
                self.hits.hit(Probe::DeadLetterByAttempts);
            }
            (SettleOp::Nack { .. }, Status::Available) => {
                self.mark_returned(group, seq, Probe::RedeliveryAfterNack);
            }
            _ => {}
        }
        if let Some(info) = self.leases.get_mut(issuance) {
            if op.is_settle() && info.ended.is_none() {
                info.ended = Some(End::Settled);
            }
            if let (Some(renewed), Some(End::Expired)) = (renewed, info.ended) {
                // A renew that revived an expired lease (renew-revives): it lives again.
                info.ended = None;
                info.lease.deadline_ms = renewed.deadline_ms;
            }
        }
        Readback {
            frontier_before: before,
            frontier_after: after,
            status: Some(status),
            reason,
            renewed_until_ms: renewed.map(|l| l.deadline_ms),
        }
    }

    // ----- the worker side of a request -----

    /// A reply reaches its worker: the runtime acts on what the worker sees.
    #[inline(never)]
    pub(super) fn reply(&mut self, slot: u32) {
        let f = self.flights.get(slot);
        let w = &self.workers[f.worker];
        let current = w.up && w.incarnation == f.incarnation;
        if !current || w.paused_until_ms > self.now_ms {
            self.reply_not_taken(slot, current);
            return;
        }
        match f.seen.clone().expect("a reply carries a result") {
            Ok(()) => self.reply_ok(slot),
            Err(error) => self.reply_failed(slot, error),
        }
        self.flight_step_done(slot);
    }

    /// A reply its worker does not take now: the worker restarted since it sent the request
    /// (the reply is discarded), or it is paused (the reply waits for the pause's end).
    /// (Rare: kept out of [`Engine::reply`]'s code.)
    #[cold]
    #[inline(never)]
    fn reply_not_taken(&mut self, slot: u32, current: bool) {
        let f = self.flights.get(slot);
        let (id, worker) = (f.id, f.worker);
        if !current {
            self.hits.hit(Probe::ReplyToRestartedWorker);
            let event = Event::Replied {
                request: id,
                discarded: true,
                follow_up: None,
            };
            self.emit(self.now_ms, event);
        } else {
            let at = self.workers[worker].paused_until_ms;
            self.flights.get_mut(slot).pending += 1;
            self.queue.push(at, Due::Reply { slot });
        }
        self.flight_step_done(slot);
    }

    /// The request succeeded: a renew's reply carries the new lease; a settle's ends the
    /// worker's hold.
    fn reply_ok(&mut self, slot: u32) {
        let f = self.flights.get(slot);
        let (id, worker, issuance, op, renewed) = (f.id, f.worker, f.issuance, f.op, f.renewed);
        let event = Event::Replied {
            request: id,
            discarded: false,
            follow_up: None,
        };
        self.emit(self.now_ms, event);
        if let Some(renewed) = renewed {
            if let Some(info) = self.leases.get_mut(issuance) {
                info.lease = renewed;
            }
        } else if op.is_settle() {
            self.forget(worker, issuance);
        }
    }

    /// The request failed: the runtime classifies the error — drop the lease, leave it to
    /// expire, or nack once.
    #[inline(never)]
    fn reply_failed(&mut self, slot: u32, error: SettleError) {
        let f = self.flights.get(slot);
        let (id, worker, issuance, op) = (f.id, f.worker, f.issuance, f.op);
        let mut action = runtime::classify(&error, self.setup.variant);
        let nack_once = action == ErrorAction::Nack
            && f.nack_on_failure
            && !matches!(op, SettleOp::Nack { .. });
        if action == ErrorAction::Nack && !nack_once {
            action = ErrorAction::LeaveToExpire;
        }
        let event = Event::Replied {
            request: id,
            discarded: false,
            follow_up: Some(action),
        };
        self.emit(self.now_ms, event);
        if !nack_once {
            self.forget(worker, issuance);
            return;
        }
        self.hits.hit(Probe::FollowUpNack);
        let op = SettleOp::Nack {
            delay_ms: 0,
            reason: Some(Reason::from_static(error.name())),
        };
        let from = SendFrom {
            origin: Origin::FollowUp(id),
            nack_on_failure: false,
        };
        let delivery = self.follow_up_delivery;
        self.send_on(worker, issuance, None, op, delivery, from);
    }
}
