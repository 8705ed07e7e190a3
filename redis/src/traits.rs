//! The engines' traits over [`RedisBackend`]: the only place this crate implements
//! `leasehold_model::Backend` and `BrokerView`, so a change of those traits is adapted here.

use crate::backend::{RedisBackend, DEFAULT_CONSUMER};
use leasehold_model::{
    Backend, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError, SettleRequest, Status,
};

impl BrokerView for RedisBackend {
    fn group_count(&self) -> usize {
        self.mirror().group_count()
    }

    fn event_count(&self) -> Seq {
        self.mirror().event_count()
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.mirror().status(group, seq)
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.mirror().frontier(group)
    }

    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.mirror().status_kind(group, seq)
    }

    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        self.mirror().status_kinds(group, first, out)
    }

    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        self.mirror().dead_letter_reason_is(group, seq, reason)
    }

    fn unsettled_count(&self) -> u64 {
        self.mirror().unsettled_count()
    }
}

impl Backend for RedisBackend {
    fn publish(&mut self) -> Seq {
        RedisBackend::publish(self)
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.fetch_as(DEFAULT_CONSUMER, group, limit, now_ms, lease_ms)
    }

    fn fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        RedisBackend::fetch_as(self, worker, group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        self.settle_as(DEFAULT_CONSUMER, request, now_ms)
    }

    fn settle_as(
        &mut self,
        worker: &str,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        RedisBackend::settle_as(self, worker, request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        RedisBackend::expire_due(self, now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        RedisBackend::next_deadline(self)
    }

    fn restart(&mut self) {
        RedisBackend::restart(self)
    }
}
