//! Virtual time: the event queue and the broker's expiries, in order.

use super::live::{End, SendFrom};
use super::queue::Due;
use super::{Engine, Expiry};
use crate::coverage::Probe;
use crate::event::{Event, Origin};
use leasehold_model::{Backend, Ms};

impl<B: Backend> Engine<B> {
    /// Advances time to `until_ms` (never backwards), processing in order every broker expiry
    /// and every queued event due at or before it.
    pub fn run_until(&mut self, until_ms: Ms) {
        let until_ms = until_ms.max(self.now_ms);
        // A backend whose next_deadline does not expire anything must not loop forever.
        let mut exhausted_deadline: Option<Ms> = None;
        let eager = self.setup.expiry == Expiry::AtDeadline;
        loop {
            let deadline = self
                .next_deadline()
                .filter(|_| eager)
                .filter(|&d| d <= until_ms && exhausted_deadline.filter(|&x| d <= x).is_none());
            let event = self.next_event_ms().filter(|&e| e <= until_ms);
            // An expiry runs before the events of its millisecond, except a request that lands
            // before the timer (a boundary arrival).
            let first = self.queue.next_is_first();
            match (deadline, event) {
                (Some(d), e) if e.filter(|&e| d > e || (d == e && first)).is_none() => {
                    if !self.expire_at(d.max(self.now_ms)) {
                        exhausted_deadline = Some(d);
                    }
                }
                (_, Some(_)) => {
                    let (at_ms, due) = self.queue.pop().expect("peeked");
                    self.now_ms = self.now_ms.max(at_ms);
                    self.advance_oracle(self.now_ms);
                    self.process(due);
                }
                _ => break,
            }
        }
        self.now_ms = until_ms;
        if eager {
            self.expire_at(until_ms);
        } else {
            self.advance_oracle(until_ms);
        }
    }

    /// Advances time to `at_ms` without running what is due at `at_ms` itself: every queued
    /// event and every broker expiry due before it runs, the oracle's leases lapse at `at_ms`,
    /// and the broker's timers of `at_ms` wait. A request sent now with
    /// [`Delivery::before_timer`](super::Delivery) and no delay lands before them.
    pub fn run_before(&mut self, at_ms: Ms) {
        if at_ms <= self.now_ms {
            return;
        }
        self.run_until(at_ms - 1);
        self.now_ms = at_ms;
        self.advance_oracle(at_ms);
    }

    /// Expires due leases at `at_ms`; returns whether the broker expired any.
    #[inline]
    pub(super) fn expire_at(&mut self, at_ms: Ms) -> bool {
        self.now_ms = self.now_ms.max(at_ms);
        let now_ms = self.now_ms;
        if self.next_deadline().is_none_or(|d| d > now_ms) {
            // Nothing is due: the broker would expire nothing.
            self.advance_oracle(now_ms);
            return false;
        }
        self.expire_due_now()
    }

    /// [`Engine::expire_at`] once a lease is due at `now`.
    #[inline(never)]
    fn expire_due_now(&mut self) -> bool {
        let now_ms = self.now_ms;
        let mut before = std::mem::take(&mut self.frontier_scratch);
        before.clear();
        before.extend((0..self.setup.groups.len()).map(|g| self.backend.frontier(g)));
        let mut expired = std::mem::take(&mut self.expired_scratch);
        self.changed_backend();
        self.backend.expire_due_into(now_ms, &mut expired);
        self.advance_oracle(now_ms);
        for item in &expired {
            self.oracle.observe(item.group, item.seq);
        }
        for item in &expired {
            if item.dead_lettered {
                self.hits.hit(Probe::DeadLetterByAttempts);
            } else {
                self.mark_returned(item.group, item.seq, Probe::RedeliveryAfterExpiry);
            }
            let found = self
                .leases
                .find_unended(item.group, item.seq, item.lease_id);
            let Some(issuance) = found else { continue };
            // Only the worker that fetched a lease ever holds it.
            let holder = self.leases.get(issuance).map(|l| l.holder);
            self.leases.end_as(issuance, End::Expired);
            if let Some(holder) = holder {
                self.forget(holder, issuance);
            }
            let after = self.backend.frontier(item.group);
            let frontier = (after != before[item.group]).then_some((before[item.group], after));
            // Stamped when the broker expired it (a lazy broker, at its next fetch): its line
            // stands there. The event keeps the deadline it passed, where its lease ended.
            self.emit(
                now_ms,
                Event::Expired {
                    issuance,
                    at_ms: item.deadline_ms.min(now_ms),
                    dead_lettered: item.dead_lettered,
                    frontier,
                    stale_timer: item.stale_timer,
                },
            );
        }
        self.frontier_scratch = before;
        let any = !expired.is_empty();
        self.expired_scratch = expired;
        any
    }

    /// Runs one queued event. (Each kind is a function of its own: inlined here, the three
    /// bodies would crowd the time loop's registers.)
    pub(super) fn process(&mut self, due: Due) {
        match due {
            Due::Deliver { slot, duplicate } => self.deliver(slot, duplicate),
            Due::Reply { slot } => self.reply(slot),
            Due::HandlerDone { slot } => self.handler_done(slot),
        }
    }

    /// A handler run whose worker is paused (it finishes when the pause ends) or crashed since
    /// it started (it never finishes). (Rare: kept out of [`Engine::handler_done`]'s code.)
    #[cold]
    #[inline(never)]
    fn handler_not_done(&mut self, slot: u32, alive: bool) {
        let run = self.runs.get(slot);
        let (id, issuance, worker) = (run.id, run.issuance, run.worker);
        if alive {
            let at = self.workers[worker].paused_until_ms;
            self.queue.push(at, Due::HandlerDone { slot });
            return;
        }
        self.runs.free(slot);
        self.hits.hit(Probe::HandlerKilledByCrash);
        self.emit(self.now_ms, Event::HandlerKilled { run: id });
        self.leases.release(issuance);
    }

    #[inline(never)]
    fn handler_done(&mut self, slot: u32) {
        let (worker, incarnation) = {
            let run = self.runs.get(slot);
            (run.worker, run.incarnation)
        };
        let w = &self.workers[worker];
        let alive = w.up && w.incarnation == incarnation;
        if !alive || w.paused_until_ms > self.now_ms {
            self.handler_not_done(slot, alive);
            return;
        }
        // The run's slot is freed once its settles are sent (nothing below starts a run).
        let run = self.runs.get(slot);
        let (id, issuance, delivery) = (run.id, run.issuance, run.delivery);
        self.workers[worker].running -= 1;
        let (group, seq, started_current) = (run.group, run.seq, run.started_current);
        let outcome = run.outcome.clone();
        let success = outcome.is_success();
        self.oracle
            .handler_finished(group, seq, started_current, success);
        if success {
            let current = self.oracle.is_current(issuance);
            if !current {
                self.hits.hit(Probe::GhostWrite);
            }
            self.world.write(group, seq, current);
        }
        self.emit(self.now_ms, Event::HandlerFinished { run: id, outcome });
        let from = SendFrom {
            origin: Origin::Handler(id),
            nack_on_failure: true,
        };
        for index in 0..self.runs.get(slot).after.len() {
            let op = self.runs.get(slot).after[index];
            self.send_on(worker, issuance, None, op, delivery, from);
        }
        self.runs.free(slot);
        self.leases.release(issuance);
    }
}
