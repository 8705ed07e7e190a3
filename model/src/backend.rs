//! `Backend`: a broker under test. The scenario executor and the simulator drive this trait, so
//! any implementation — the pure broker, the embedded broker, a user's own adapter — runs
//! through every scenario and campaign.

use crate::broker::{Broker, BrokerView, Expired, SettleRequest};
use crate::types::{GroupIx, Lease, Ms, SettleError};

/// A broker under test, driven on an injected clock.
pub trait Backend: BrokerView {
    /// Appends an event; returns its sequence number.
    fn publish(&mut self) -> crate::types::Seq;
    /// Makes room for `events` more events (a hint: what is published does not depend on it).
    fn reserve(&mut self, events: usize) {
        let _ = events;
    }
    /// Applies due expiries, then leases up to `limit` available records of `group`.
    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError>;
    /// Applies a settle or renew; an accepted renew returns the renewed lease.
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
    /// A broker restart: durable state survives.
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
    fn fetch_as_into(
        &mut self,
        _worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
        out: &mut Vec<Lease>,
    ) -> Result<(), SettleError> {
        Broker::fetch_into(self, group, limit, now_ms, lease_ms, out)
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
