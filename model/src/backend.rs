//! `Backend`: a broker under test. The scenario executor and the simulator drive this trait, so
//! any implementation — the pure broker, the embedded broker, a user's own adapter — runs
//! through every scenario and campaign.

use crate::broker::{Broker, BrokerView, Expired, SettleRequest};
use crate::types::{GroupIx, Lease, Ms, SettleError};

/// A broker under test, driven on an injected clock.
///
/// This is the contract a backend implements; the engines check it through the oracle (the
/// invariants I1–I7) and the conformance suite (`leasehold::conformance`) compares a backend
/// with the reference broker of a variant step by step. It is the `fenced` protocol; a
/// variant of the protocol changes a rule named here (docs/variants.md).
///
/// # The time rule
/// Time is passed in as `now_ms` (virtual milliseconds, the broker's clock): a backend never
/// reads a wall clock, or its runs cannot replay. **A lease is valid while
/// `now_ms < deadline`**: at `now_ms == deadline` it has ended, whether or not the backend has
/// run its expiry yet. A worker's clock never decides (the request carries it only for the
/// `worker-clock-expiry` mutant).
///
/// # What a settle does, by the record it finds
///
/// | the record is | ack | nack | reject | renew |
/// |---|---|---|---|---|
/// | `Leased` by this lease id, `now < deadline`, same receipt | → `Acked` | → `Available` (attempts kept, not before `now + delay_ms`), or → `DeadLettered` when attempts ≥ `max_attempts` (the nack's reason, else `max attempts`) | → `DeadLettered` (its reason) | deadline → `now + extend_ms`, same id; returns the renewed lease |
/// | `Leased` by this lease id, `now < deadline`, another receipt | `ReceiptMismatch` | `ReceiptMismatch` | `ReceiptMismatch` | `ReceiptMismatch` |
/// | `Leased` by this lease id, `now >= deadline` | `StaleLease` | `StaleLease` | `StaleLease` | `StaleLease` |
/// | `Leased` by another lease | `StaleLease` | `StaleLease` | `StaleLease` | `StaleLease` |
/// | `Available`, `Acked` or `DeadLettered` | `StaleLease` | `StaleLease` | `StaleLease` | `StaleLease` |
/// | no such record (unknown group, unpublished seq) | `Invalid` | `Invalid` | `Invalid` | `Invalid` |
///
/// **A refused request changes nothing.** An accepted ack, nack or reject ends the lease (its
/// expiry will not fire); an accepted renew moves its deadline. `BackendUnavailable` (nothing
/// applied, failed fast), `Failed` (nothing applied) and `Ambiguous` (maybe applied) are for a
/// backend that cannot answer; the runtime's reaction depends on the class.
///
/// # Fetch and expiry
/// A fetch first expires every lease with `deadline <= now_ms`, then leases up to `limit`
/// available records of the group whose redelivery time has come, lowest sequence number
/// first: each gets one more attempt, a lease id never issued before (across restarts too) and
/// `deadline = now_ms + lease_ms` (the configured lease when `None`). An expired record becomes
/// available again, or dead-lettered with reason `max attempts` when its attempts are
/// exhausted. A record is dead-lettered only by a reject, a nack on the last attempt, or an
/// expiry on the last attempt, and never changes again.
///
/// # What a restart keeps
/// [`Backend::restart`] is a broker process restart: every record keeps its status, attempts,
/// lease id, deadline and dead-letter reason; the lease-id counter continues; leases that
/// existed still expire at their deadlines (re-arm the timers); the frontier is what the
/// records say. A backend that cannot restart (a shared server) refuses runs that restart the
/// broker rather than pretend to.
///
/// # The view
/// The oracle reads the broker after every step through [`BrokerView`]: statuses, dead-letter
/// reasons, frontiers (the largest `k` with `1..=k` all acked or dead-lettered), the count of
/// unsettled records. Answer `status_kind` and `unsettled_count` from what the backend keeps:
/// they are asked on every step.
///
/// docs/backend.md has the same contract with a worked example; docs/protocol.md has the
/// protocol it comes from.
pub trait Backend: BrokerView {
    /// Appends an event to every group (an available, never-delivered record in each); returns
    /// its sequence number (1, 2, 3, …).
    fn publish(&mut self) -> crate::types::Seq;
    /// Makes room for `events` more events (a hint: what is published does not depend on it).
    fn reserve(&mut self, events: usize) {
        let _ = events;
    }
    /// Applies due expiries, then leases up to `limit` available records of `group` (see
    /// "Fetch and expiry" above); `Invalid` for an unknown group or `limit` 0.
    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError>;
    /// Applies a settle or renew as the table above says; `Ok(Some(lease))` for an accepted
    /// renew (the renewed lease, same id), `Ok(None)` for another accepted settle.
    fn settle(&mut self, request: &SettleRequest, now_ms: Ms)
        -> Result<Option<Lease>, SettleError>;
    /// [`Backend::fetch`] on behalf of the worker named `worker`. A backend that keeps an
    /// identity per consumer (Redis: one consumer per worker) overrides it; by default the name
    /// is ignored.
    fn fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        let _ = worker;
        self.fetch(group, limit, now_ms, lease_ms)
    }
    /// [`Backend::settle`] on behalf of the worker named `worker` (see [`Backend::fetch_as`]).
    fn settle_as(
        &mut self,
        worker: &str,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let _ = worker;
        self.settle(request, now_ms)
    }
    /// [`Backend::fetch_as`] into `out` (cleared first), so that a driver that fetches in a
    /// loop reuses one buffer. The default collects [`Backend::fetch_as`]'s list; override it
    /// when the backend can fill `out` itself.
    fn fetch_as_into(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        out.clear();
        out.extend(self.fetch_as(worker, group, limit, now_ms, lease_ms)?);
        Ok(())
    }
    /// Expires every lease whose deadline is `<= now_ms`; returns them in firing order (by
    /// deadline, then group, then seq: sort the list when the backend finds them otherwise).
    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired>;
    /// [`Backend::expire_due`] into `out` (cleared first), in the same order. The default
    /// collects [`Backend::expire_due`]'s list; override it when the backend can fill `out`
    /// itself.
    fn expire_due_into(&mut self, now_ms: Ms, out: &mut Vec<Expired>) {
        out.clear();
        out.extend(self.expire_due(now_ms));
    }
    /// The earliest deadline of a lease that will expire, for the simulator's timer.
    fn next_deadline(&self) -> Option<Ms>;
    /// A broker restart: durable state survives (see "What a restart keeps" above).
    fn restart(&mut self);
}

impl Backend for Broker {
    #[inline]
    fn publish(&mut self) -> crate::types::Seq {
        Broker::publish(self)
    }

    #[inline]
    fn reserve(&mut self, events: usize) {
        Broker::reserve(self, events)
    }

    #[inline]
    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        Broker::fetch(self, group, limit, now_ms, lease_ms)
    }

    #[inline]
    fn fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        let mut leases = Vec::new();
        Broker::fetch_as_into(self, worker, group, limit, now_ms, lease_ms, &mut leases)?;
        Ok(leases)
    }

    #[inline]
    fn fetch_as_into(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        Broker::fetch_as_into(self, worker, group, limit, now_ms, lease_ms, out)
    }

    #[inline]
    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        Broker::settle(self, request, now_ms)
    }

    #[inline]
    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        Broker::expire_due(self, now_ms)
    }

    #[inline]
    fn expire_due_into(&mut self, now_ms: Ms, out: &mut Vec<Expired>) {
        out.clear();
        Broker::expire_due_each(self, now_ms, |expired| out.push(expired));
    }

    #[inline]
    fn next_deadline(&self) -> Option<Ms> {
        Broker::next_deadline(self)
    }

    #[inline]
    fn restart(&mut self) {
        Broker::restart(self)
    }
}

/// A boxed backend (`Box<dyn Backend + Send>`, as a constructor returns it) is driven like the
/// backend inside: every method forwards, the defaults included.
impl<B: Backend + ?Sized> Backend for Box<B> {
    fn publish(&mut self) -> crate::types::Seq {
        (**self).publish()
    }
    fn reserve(&mut self, events: usize) {
        (**self).reserve(events)
    }
    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        (**self).fetch(group, limit, now_ms, lease_ms)
    }
    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        (**self).settle(request, now_ms)
    }
    fn fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        (**self).fetch_as(worker, group, limit, now_ms, lease_ms)
    }
    fn settle_as(
        &mut self,
        worker: &str,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        (**self).settle_as(worker, request, now_ms)
    }
    fn fetch_as_into(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        (**self).fetch_as_into(worker, group, limit, now_ms, lease_ms, out)
    }
    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        (**self).expire_due(now_ms)
    }
    fn expire_due_into(&mut self, now_ms: Ms, out: &mut Vec<Expired>) {
        (**self).expire_due_into(now_ms, out)
    }
    fn next_deadline(&self) -> Option<Ms> {
        (**self).next_deadline()
    }
    fn restart(&mut self) {
        (**self).restart()
    }
}
