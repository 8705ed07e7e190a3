//! The engines' traits over [`RabbitBackend`]: the only place this crate implements
//! `leasehold_model::Backend` and `BrokerView`.

use crate::backend::RabbitBackend;
use leasehold_model::{
    Backend, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError, SettleRequest, Status,
};

impl BrokerView for RabbitBackend {
    fn group_count(&self) -> usize {
        self.groups()
    }

    fn event_count(&self) -> Seq {
        self.event_total()
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.view_status(group, seq)
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.view_frontier(group)
    }

    fn unsettled_count(&self) -> u64 {
        self.view_unsettled()
    }
}

impl Backend for RabbitBackend {
    fn publish(&mut self) -> Seq {
        self.do_publish()
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.do_fetch(group, limit, now_ms, lease_ms)
    }

    fn fetch_as(
        &mut self,
        worker: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.do_fetch_as(worker, group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        self.do_settle(request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        self.do_expire_due(now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        self.do_next_deadline()
    }

    /// A broker restart closes every channel and connection of a RabbitMQ node, which returns
    /// every delivery: not the model's restart. Runs that restart are refused up front
    /// ([`crate::RabbitMq`]'s `restarts_refused`); reaching this is a driver's error.
    fn restart(&mut self) {
        panic!(
            "backend rabbitmq: a broker restart is outside the rabbitmq model (docs/rabbitmq.md)"
        )
    }
}
