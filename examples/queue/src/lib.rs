//! A user's queue under test: an in-memory queue behind leasehold's `Backend` trait, in two
//! builds — [`ACKS_BY_ID`], with a planted bug, and [`FIXED`].
//!
//! The bug is a classic: a settle names its event, and the queue acks **the event**, whoever
//! holds it now, instead of checking that the request's lease (its fencing token) is the
//! current one. A worker whose lease expired, and whose event went to another worker, still
//! gets its late ack counted. `tests/front_door.rs` catches it with every front-door call and
//! passes on [`FIXED`].
//!
//! To keep the example short the queue keeps its records in leasehold's reference state
//! machine (`leasehold::model::Broker`); the buggy build looks records up by event id only,
//! which in that state machine's vocabulary is the `unfenced-settle` rule.

use leasehold::model::{
    Broker, BrokerConfig, BrokerView, Expired, GroupIx, Lease, Ms, Seq, SettleError, SettleRequest,
    Status,
};
use leasehold::{Backend, BackendKind, Variant};

/// The queue with the planted bug: a settle applies to its event, whatever lease it names.
pub const ACKS_BY_ID: BackendKind = BackendKind::Other {
    name: "acks-by-id",
    make: |config| Ok(Box::new(InMemoryQueue::new(config, true))),
};

/// The fixed queue: a settle applies to the lease it names, or is refused as stale.
pub const FIXED: BackendKind = BackendKind::Other {
    name: "in-memory",
    make: |config| Ok(Box::new(InMemoryQueue::new(config, false))),
};

/// An in-memory queue: records in a state machine, leases handed out by `fetch`.
pub struct InMemoryQueue {
    records: Broker,
}

impl InMemoryQueue {
    /// A queue for `config`; `acks_by_event_id` plants the bug.
    pub fn new(config: &BrokerConfig, acks_by_event_id: bool) -> InMemoryQueue {
        let mut config = *config;
        if acks_by_event_id {
            // THE BUG: a settle finds its record by event id; the lease's token is not checked.
            config.variant = Variant::UnfencedSettle;
        }
        InMemoryQueue {
            records: Broker::new(config),
        }
    }
}

impl BrokerView for InMemoryQueue {
    fn group_count(&self) -> usize {
        self.records.group_count()
    }
    fn event_count(&self) -> Seq {
        self.records.event_count()
    }
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        BrokerView::status(&self.records, group, seq)
    }
    fn frontier(&self, group: GroupIx) -> Seq {
        BrokerView::frontier(&self.records, group)
    }
    // The engines ask these two after every step. Their defaults read records through
    // `status()`, every record for the count: answer from what the queue keeps instead, or a
    // seed's cost per step grows with its records.
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        BrokerView::status_kind(&self.records, group, seq)
    }
    fn unsettled_count(&self) -> u64 {
        BrokerView::unsettled_count(&self.records)
    }
}

impl Backend for InMemoryQueue {
    fn publish(&mut self) -> Seq {
        self.records.publish()
    }

    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        self.records.fetch(group, limit, now_ms, lease_ms)
    }

    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        self.records.settle(request, now_ms)
    }

    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        self.records.expire_due(now_ms)
    }

    fn next_deadline(&self) -> Option<Ms> {
        self.records.next_deadline()
    }

    fn restart(&mut self) {
        self.records.restart()
    }
}
