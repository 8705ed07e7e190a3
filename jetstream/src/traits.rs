//! The engines' traits over [`JsBackend`]: the only place this crate implements
//! `leasehold_model::Backend` and `BrokerView`.

use crate::backend::JsBackend;
use leasehold_model::{
    Backend, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError, SettleRequest, Status,
};

impl BrokerView for JsBackend {
    fn group_count(&self) -> usize {
        self.config().group_count
    }

    fn event_count(&self) -> Seq {
        self.slots_len()
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.status_of(group, seq)
    }

    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.record(group, seq)
            .map_or(Status::Dropped, |record| record.status())
    }

    /// The contiguous prefix of acked and dead-lettered records. (Not the consumer's ack
    /// floor: after a server restart it can lag behind, docs/jetstream.md, F13.)
    fn frontier(&self, group: GroupIx) -> Seq {
        self.settled_prefix(group)
    }

    /// The records neither acked nor dead-lettered. (Not the consumers' `num_pending` +
    /// `num_ack_pending`: after a server restart they can count an acked message again,
    /// docs/jetstream.md, F14; the conformance suite compares them where they hold.)
    fn unsettled_count(&self) -> u64 {
        self.mirror_unsettled()
    }
}

impl Backend for JsBackend {
    fn publish(&mut self) -> Seq {
        JsBackend::publish(self)
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        JsBackend::fetch(self, group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        JsBackend::settle(self, request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        JsBackend::expire_due(self, now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        JsBackend::next_deadline(self)
    }

    fn restart(&mut self) {
        JsBackend::restart(self)
    }
}
