//! [`EmbeddedBackend`]: the embedded broker as a [`Backend`], so the scenario executor and the
//! simulator run it through the same scenarios and campaigns as the pure broker.

use crate::broker::EmbeddedBroker;
use crate::clock::ManualClock;
use leasehold_model::{
    Backend, BrokerConfig, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError,
    SettleRequest, Status,
};
use std::sync::Arc;

/// An embedded broker owned by an engine that passes `now_ms` on every call.
#[derive(Debug)]
pub struct EmbeddedBackend {
    broker: Arc<EmbeddedBroker>,
}

impl EmbeddedBackend {
    /// A backend for `config`. Errors (one line, for the user) on a variant other than
    /// `fenced` and on a configuration the broker cannot hold.
    pub fn new(config: &BrokerConfig) -> Result<EmbeddedBackend, String> {
        let clock = Arc::new(ManualClock::new(0));
        Ok(EmbeddedBackend {
            broker: Arc::new(EmbeddedBroker::new(config, clock)?),
        })
    }

    /// The broker, to share with other threads.
    pub fn broker(&self) -> &Arc<EmbeddedBroker> {
        &self.broker
    }
}

impl BrokerView for EmbeddedBackend {
    fn group_count(&self) -> usize {
        self.broker.group_count()
    }

    fn event_count(&self) -> Seq {
        BrokerView::event_count(&*self.broker)
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.broker.status(group, seq)
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.broker.frontier(group)
    }

    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.broker.status_kind(group, seq)
    }

    fn unsettled_count(&self) -> u64 {
        self.broker.unsettled_count()
    }
}

impl Backend for EmbeddedBackend {
    fn publish(&mut self) -> Seq {
        self.broker.publish()
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.broker.fetch_at(group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        self.broker.settle_at(request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let mut expired = self.broker.expire_due_at(now_ms);
        expired.sort_unstable(); // Firing order: by deadline, then group, then seq.
        expired
    }

    fn next_deadline(&self) -> Option<Ms> {
        self.broker.next_deadline()
    }

    fn restart(&mut self) {
        self.broker.restart()
    }
}
