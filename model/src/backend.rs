//! `Backend`: a broker under test. The scenario executor and the simulator drive this trait, so
//! any implementation — the pure broker, the embedded broker, a user's own adapter — runs
//! through every scenario and campaign.

use crate::broker::{Broker, BrokerView, Expired, SettleRequest};
use crate::types::{GroupIx, Lease, Ms, SettleError};

/// A broker under test, driven on an injected clock.
pub trait Backend: BrokerView {
    /// Appends an event; returns its sequence number.
    fn publish(&mut self) -> crate::types::Seq;
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
    /// Expires every lease whose deadline is `<= now_ms`; returns them in firing order (by
    /// deadline, then group, then seq: sort the list when the backend finds them otherwise).
    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired>;
    /// The earliest deadline of a lease that will expire, for the simulator's timer.
    fn next_deadline(&self) -> Option<Ms>;
    /// A broker restart: durable state survives.
    fn restart(&mut self);
}

impl Backend for Broker {
    fn publish(&mut self) -> crate::types::Seq {
        Broker::publish(self)
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        Broker::fetch(self, group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        Broker::settle(self, request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        Broker::expire_due(self, now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        Broker::next_deadline(self)
    }

    fn restart(&mut self) {
        Broker::restart(self)
    }
}
