//! The engines' traits over [`PgBackend`]: the only place this crate implements
//! `leasehold_model::Backend` and `BrokerView`.

use crate::backend::PgBackend;
use leasehold_model::{
    Backend, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError, SettleRequest, Status,
};

impl BrokerView for PgBackend {
    fn group_count(&self) -> usize {
        self.config().group_count
    }

    fn event_count(&self) -> Seq {
        self.snapshot().event_count()
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.snapshot().status(group, seq)
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.snapshot().frontier(group)
    }

    fn unsettled_count(&self) -> u64 {
        self.snapshot().unsettled_count()
    }
}

impl Backend for PgBackend {
    fn publish(&mut self) -> Seq {
        PgBackend::publish(self)
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        PgBackend::fetch(self, group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        PgBackend::settle(self, request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        PgBackend::expire_due(self, now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        PgBackend::next_deadline(self)
    }

    fn restart(&mut self) {
        PgBackend::restart(self)
    }
}
