//! What the actors do: publish, fetch, run a handler, crash, restart, stall; the broker's
//! restart.

use super::live::{LiveLease, Run, SendFrom};
use super::queue::Due;
use super::{Delivery, Engine, Expiry, HandlerRun, Issued};
use crate::coverage::Probe;
use crate::event::{Event, FetchOutcome, Origin, RunId};
use crate::trace::{Fault, WorkerIx};
use leasehold_model::runtime::{self, When};
use leasehold_model::{Backend, GroupIx, Issuance, Lease, Ms, Seq, SettleError, Status};
use smallvec::SmallVec;

impl<B: Backend> Engine<B> {
    /// The record (group, seq) went back to the available pool: its next delivery counts for
    /// `probe`.
    pub(super) fn mark_returned(&mut self, group: GroupIx, seq: Seq, probe: Probe) {
        let key = (group as u32, seq);
        match self
            .returned
            .binary_search_by_key(&key, |&(g, s, _)| (g, s))
        {
            Ok(i) => self.returned[i].2 = probe,
            Err(i) => self.returned.insert(i, (key.0, key.1, probe)),
        }
    }

    /// A lease of (group, seq) was issued: a redelivery after an expiry or a nack counts.
    fn note_delivery(&mut self, group: GroupIx, seq: Seq) {
        if self.returned.is_empty() {
            return;
        }
        let key = (group as u32, seq);
        if let Ok(i) = self
            .returned
            .binary_search_by_key(&key, |&(g, s, _)| (g, s))
        {
            let probe = self.returned.remove(i).2;
            self.hits.hit(probe);
        }
    }

    /// Publishes `count` events at the start of a run, without timeline lines.
    pub fn publish_initial(&mut self, count: u32) {
        self.changed_backend();
        self.backend.reserve(count as usize);
        self.oracle.reserve(count as usize);
        for _ in 0..count {
            self.backend.publish();
            self.oracle.published();
        }
        self.world.publish(self.backend.event_count());
    }

    /// Publishes one event now, as a line of its own.
    pub fn publish(&mut self) -> Seq {
        self.changed_backend();
        let seq = self.backend.publish();
        self.oracle.published();
        self.world.publish(seq);
        self.emit(self.now_ms, Event::Published { seq });
        seq
    }

    /// `worker` fetches up to `limit` leases of `group` now (synchronously: the fetch's own
    /// network is not simulated, but `fault` may make it fail — `Unavailable`, `Failed`: nothing
    /// issued — or lose its reply — `LostReply`, `Dropped`: leases issued, nobody holds them).
    /// Leases are named from `names` in order, then `L<n>` by issuance. An empty fetch records a
    /// line only when `record_empty`.
    pub fn fetch(
        &mut self,
        worker: WorkerIx,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
        names: &[String],
        fault: Fault,
    ) -> Result<Issued, SettleError> {
        self.fetch_with(worker, group, limit, lease_ms, names, fault, true)
    }

    /// [`Engine::fetch`], recording an empty fetch only when `record_empty` (a seeded driver's
    /// idle polls stay off the timeline).
    #[allow(clippy::too_many_arguments)]
    pub fn fetch_with(
        &mut self,
        worker: WorkerIx,
        group: GroupIx,
        limit: usize,
        lease_ms: Option<Ms>,
        names: &[String],
        fault: Fault,
        record_empty: bool,
    ) -> Result<Issued, SettleError> {
        let now_ms = self.now_ms;
        if self.setup.expiry == Expiry::OnFetch
            && !matches!(fault, Fault::Unavailable | Fault::Failed)
        {
            // The broker expires due leases as it fetches; doing it here shows them.
            self.expire_at(now_ms);
        }
        let mut leases = std::mem::take(&mut self.fetch_scratch);
        let result = match fault {
            Fault::Unavailable => Err(SettleError::BackendUnavailable),
            Fault::Failed => Err(SettleError::Failed("injected".into())),
            _ => {
                self.changed_backend();
                let name = &self.setup.workers[worker];
                self.backend
                    .fetch_as_into(name, group, limit, now_ms, lease_ms, &mut leases)
            }
        };
        match result {
            Ok(()) => {}
            Err(error) => {
                self.fetch_scratch = leases;
                if error == SettleError::BackendUnavailable {
                    self.hits.hit(Probe::BackendUnavailable);
                }
                let outcome = FetchOutcome::Failed(error.clone());
                self.emit(
                    now_ms,
                    Event::Fetched {
                        worker,
                        group,
                        outcome,
                    },
                );
                return Err(error);
            }
        }
        if leases.is_empty() && !record_empty {
            self.fetch_scratch = leases;
            return Ok(Issued::new());
        }
        let reply_lost = matches!(fault, Fault::LostReply | Fault::Dropped);
        let duration_ms = lease_ms.unwrap_or(self.setup.lease_ms);
        let mut issued = Issued::new();
        let count = leases.len() as u32;
        for (index, &lease) in leases.iter().enumerate() {
            let issuance = self.issue(worker, lease, duration_ms, !reply_lost);
            if let (Some(recorder), Some(name)) = (&mut self.recorder, names.get(index)) {
                recorder.name_lease(issuance, name.clone());
            }
            issued.push(issuance);
        }
        self.fetch_scratch = leases;
        let outcome = FetchOutcome::Leased { count, reply_lost };
        self.emit(
            now_ms,
            Event::Fetched {
                worker,
                group,
                outcome,
            },
        );
        if reply_lost {
            self.hits.hit(Probe::FetchReplyLost);
            return Err(SettleError::Ambiguous("reply lost".into()));
        }
        Ok(issued)
    }

    /// One lease a fetch by `worker` issued: the oracle names it, the engine tracks it, the
    /// worker holds it when the reply reached it.
    fn issue(
        &mut self,
        worker: WorkerIx,
        lease: Lease,
        duration_ms: Ms,
        delivered: bool,
    ) -> Issuance {
        let now_ms = self.now_ms;
        let issuance = self.oracle.fetched(&lease, now_ms, duration_ms);
        // A lease of zero duration ends at once: the next advance, even to now, must see it.
        self.advanced_ms = None;
        self.note_delivery(lease.group, lease.seq);
        let incarnation = self.workers[worker].incarnation;
        let (oracle, forget) = (&mut self.oracle, !self.names_any_lease);
        let dropped = |issuance| {
            if forget {
                oracle.forget(issuance);
            }
        };
        self.leases.issue_dropping(
            LiveLease {
                issuance,
                lease,
                holder: worker,
                holder_incarnation: incarnation,
                first_deadline_ms: lease.deadline_ms,
                ended: None,
                refs: u32::from(delivered),
            },
            dropped,
        );
        if delivered {
            self.workers[worker].held.push(issuance);
        }
        self.emit(
            now_ms,
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            },
        );
        issuance
    }

    /// `worker` runs its handler on `issuance` under the consumer runtime: the ack policy, the
    /// handle calls and the outcome decide the settles ([`runtime::decide`]), sent with
    /// `delivery` in order. The handler finishes `run.handler_ms` later (call
    /// [`Engine::run_until`]); a crash first kills it. Returns the run's id.
    ///
    /// # Panics
    /// When the engine no longer tracks `issuance` and has no recorder (see
    /// [`Engine::send`]).
    pub fn handle(
        &mut self,
        worker: WorkerIx,
        issuance: Issuance,
        run: HandlerRun,
        delivery: Delivery,
    ) -> RunId {
        // The run names the lease from now on.
        let lease = self.tracked_and_retained(issuance).lease;
        let id = RunId(self.runs_started);
        self.runs_started += 1;
        self.emit(
            self.now_ms,
            Event::HandlerStarted {
                run: id,
                worker,
                issuance,
            },
        );
        let actions = runtime::decide(self.setup.ack_policy, &run.calls, &run.outcome);
        let from = SendFrom {
            origin: Origin::Handler(id),
            nack_on_failure: true,
        };
        for action in actions.iter().filter(|a| a.when == When::Before) {
            self.send_on(worker, issuance, None, action.op, delivery, from);
        }
        let duplicates = self.oracle.duplicate_runs();
        let started_current = self
            .oracle
            .handler_started(issuance, lease.group, lease.seq);
        if self.oracle.duplicate_runs() > duplicates {
            self.hits.hit(Probe::DuplicateHandlerRun);
        }
        let mut after = SmallVec::new();
        for action in &actions {
            match action.when {
                When::Before => {}
                When::During(_) => {
                    self.send_on(worker, issuance, None, action.op, delivery, from);
                }
                When::After => after.push(action.op),
            }
        }
        let slot = self.runs.insert_with(|| Run {
            id,
            worker,
            incarnation: self.workers[worker].incarnation,
            issuance,
            group: lease.group,
            seq: lease.seq,
            started_current,
            outcome: run.outcome,
            after,
            delivery,
        });
        self.workers[worker].running += 1;
        let at = self.now_ms.saturating_add(run.handler_ms);
        self.queue.push(at, Due::HandlerDone { slot });
        id
    }

    /// `worker` crashes: it forgets its leases and its running handler; its requests in flight
    /// stay in flight.
    pub fn crash(&mut self, worker: WorkerIx) {
        let held = std::mem::take(&mut self.workers[worker].held);
        let w = &mut self.workers[worker];
        w.up = false;
        w.incarnation += 1;
        w.paused_until_ms = 0;
        w.running = 0;
        for &issuance in &held {
            self.leases.release(issuance);
        }
        let held = held.into_iter().collect();
        self.emit(self.now_ms, Event::Crashed { worker, held });
    }

    /// `worker` restarts (empty-handed).
    pub fn restart(&mut self, worker: WorkerIx) {
        self.workers[worker].up = true;
        self.emit(self.now_ms, Event::Restarted { worker });
    }

    /// Sets `worker`'s clock offset from now on (a driver models drift by moving it).
    pub fn set_clock_offset(&mut self, worker: WorkerIx, clock_offset_ms: i64) {
        self.workers[worker].clock_offset_ms = clock_offset_ms;
    }

    /// `worker` stalls for `for_ms` (a GC pause): replies and handler completions wait.
    pub fn pause(&mut self, worker: WorkerIx, for_ms: Ms) {
        let until_ms = self.now_ms.saturating_add(for_ms);
        self.workers[worker].paused_until_ms = until_ms;
        let past_lease = self.workers[worker]
            .held
            .iter()
            .filter_map(|&i| self.leases.get(i))
            .any(|l| l.lease.deadline_ms <= until_ms);
        if past_lease {
            self.hits.hit(Probe::PausePastLease);
        }
        self.emit(self.now_ms, Event::Paused { worker, until_ms });
    }

    /// The leases live by their contract whose deadline is at or before `at_ms`: those that
    /// lapse when time reaches it.
    pub fn lapsing(&self, at_ms: Ms) -> Vec<Issuance> {
        let mut due: Vec<Issuance> = self
            .oracle
            .live_deadlines()
            .filter(|&(_, deadline_ms)| deadline_ms <= at_ms)
            .map(|(issuance, _)| issuance)
            .collect();
        due.sort_unstable();
        due
    }

    /// Tells which of `leases` (from [`Engine::lapsing`], time having reached their deadline
    /// since) ended by their contract while the broker still holds their record leased: a
    /// broker that expires lazily has not expired them yet. (One the broker expired already
    /// has its expiry's line.)
    pub fn tell_lapsed(&mut self, leases: &[Issuance]) {
        for &issuance in leases {
            let Some(lease) = self.leases.get(issuance).map(|l| l.lease) else {
                continue;
            };
            if self.backend.status_kind(lease.group, lease.seq) == Status::Leased {
                self.emit(self.now_ms, Event::Lapsed { issuance });
            }
        }
    }

    /// The broker restarts: durable state survives, volatile state is lost (per variant).
    pub fn broker_restart(&mut self) {
        let groups = self.setup.groups.len();
        if self.leases.any_outstanding() {
            self.hits.hit(Probe::BrokerRestartWithLiveLeases);
        }
        let before: SmallVec<[Seq; 4]> = (0..groups).map(|g| self.backend.frontier(g)).collect();
        self.changed_backend();
        self.backend.restart();
        self.oracle.broker_restarted(self.now_ms);
        self.after_restart_audit();
        let frontier = (0..groups)
            .filter_map(|g| {
                let after = self.backend.frontier(g);
                (after != before[g]).then_some((g, before[g], after))
            })
            .collect();
        self.emit(self.now_ms, Event::BrokerRestarted { frontier });
    }
}
