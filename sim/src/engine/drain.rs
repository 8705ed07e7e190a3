//! The liveness phase: faults heal and the workers drain the queue.

use super::{Delivery, Engine, HandlerRun};
use crate::bound::{drain_handler_runs_max, Bound};
use crate::event::{DrainEnd, Event};
use crate::trace::Fault;
use leasehold_model::{Backend, GroupIx, Ms, Seq};

/// What ended a liveness phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Every event of every group settled.
    pub settled: bool,
    /// Why the phase ended.
    pub end: DrainEnd,
}

impl DrainReport {
    /// The bound that stopped the phase, when one did (the run is then inconclusive).
    pub fn bound(&self) -> Option<Bound> {
        match self.end {
            DrainEnd::Bound(bound) => Some(bound),
            _ => None,
        }
    }
}

/// Idle ticks (a lease each, with nothing scheduled and nothing fetched) before the phase
/// declares the run quiescent: a redelivery delay (a nack's, a Redis entry pending until idle)
/// is at most a lease, so three leases of silence mean nothing is left to happen.
const QUIESCENT_TICKS: u32 = 3;

impl<B: Backend> Engine<B> {
    /// The liveness phase: faults heal (crashed workers restart, requests travel instantly),
    /// then the up workers, in order, fetch one lease at a time from each group and run
    /// `handler(group, seq, attempt)` on it (a worker runs one handler at a time), until every event is settled, nothing is left to
    /// happen (quiescent), `liveness_ms_max` has passed, or [`drain_handler_runs_max`] handler
    /// runs happened. Then the oracle audits every record, and I6 is checked — unless a bound
    /// ended the phase: the run is then inconclusive, not a violation.
    pub fn drain(
        &mut self,
        liveness_ms_max: Ms,
        handler: &dyn Fn(GroupIx, Seq, u32) -> HandlerRun,
    ) -> DrainReport {
        self.emit(self.now_ms, Event::DrainStarted);
        for worker in 0..self.workers.len() {
            if !self.workers[worker].up {
                self.restart(worker);
            }
        }
        let deadline_ms = self.now_ms.saturating_add(liveness_ms_max);
        let tick_ms = self.setup.lease_ms.max(1);
        let runs_max = drain_handler_runs_max(
            self.record_count(),
            self.setup.max_attempts,
            self.workers.len(),
        );
        let mut idle_ticks = 0u32;
        let mut handler_runs = 0u64;
        let end = loop {
            self.run_until(self.now_ms);
            if self.all_settled() {
                break DrainEnd::Settled;
            }
            if handler_runs >= runs_max {
                break DrainEnd::Bound(Bound::DrainHandlerRunsMax);
            }
            let ran = self.drain_round(handler);
            handler_runs += ran;
            if ran > 0 {
                idle_ticks = 0;
                continue;
            }
            // A deadline already due is applied by the next fetch (lazy expiry): wait for
            // what comes after it.
            let now_ms = self.now_ms;
            let deadline = self.next_deadline().filter(|&d| d > now_ms);
            let next = [self.next_event_ms(), deadline].into_iter().flatten().min();
            let target = match next {
                Some(at) => at.max(self.now_ms),
                None => {
                    idle_ticks += 1;
                    if idle_ticks >= QUIESCENT_TICKS {
                        break DrainEnd::Quiescent { at_ms: self.now_ms };
                    }
                    self.now_ms.saturating_add(tick_ms)
                }
            };
            if target > deadline_ms {
                self.run_until(deadline_ms);
                break DrainEnd::Bound(Bound::LivenessMsMax);
            }
            self.run_until(target);
        };
        self.end_drain(end)
    }

    /// One round of the liveness phase: each worker that is not stalled fetches one lease from
    /// each group and runs the handler on it, one run at a time (a worker whose handler is still
    /// running fetches nothing more). Returns the number of handler runs.
    fn drain_round(&mut self, handler: &dyn Fn(GroupIx, Seq, u32) -> HandlerRun) -> u64 {
        let mut runs = 0;
        for worker in 0..self.workers.len() {
            if self.workers[worker].paused_until_ms > self.now_ms {
                continue;
            }
            for group in 0..self.setup.groups.len() {
                if self.workers[worker].running > 0 {
                    break;
                }
                let got = self.fetch_with(worker, group, 1, None, &[], Fault::None, false);
                let Ok(leases) = got else { continue };
                for issuance in leases {
                    let lease = self.leases.get(issuance).expect("just issued").lease;
                    let run = handler(group, lease.seq, lease.attempt);
                    self.handle(worker, issuance, run, Delivery::INSTANT);
                    self.run_until(self.now_ms);
                    self.end_step();
                    runs += 1;
                }
            }
        }
        runs
    }

    /// Closes the liveness phase: its last step, a full audit, and the I6 check unless a bound
    /// ended it.
    fn end_drain(&mut self, end: DrainEnd) -> DrainReport {
        let settled = self.all_settled();
        let frontier = (0..self.setup.groups.len())
            .map(|g| self.backend.frontier(g))
            .collect();
        self.emit(
            self.now_ms,
            Event::DrainEnded {
                end,
                settled,
                frontier,
            },
        );
        self.end_step();
        self.audit();
        if !matches!(end, DrainEnd::Bound(_)) {
            let context = format!("after the liveness phase ({})", end.describe());
            self.oracle
                .check_eventually_settled(&self.backend, &context);
            self.collect_violations();
        }
        DrainReport { settled, end }
    }
}
