//! A broker with events already published, for the mutation tests.

use leasehold_model::broker::{Broker, BrokerConfig};
use leasehold_model::types::Ms;
use leasehold_model::Variant;

/// A broker of `variant` with `groups` groups, leases of `lease_ms` and `events` events
/// published.
pub fn published(
    variant: Variant,
    groups: usize,
    lease_ms: Ms,
    events: u32,
    max_attempts: u32,
) -> Broker {
    let mut broker = Broker::new(BrokerConfig {
        group_count: groups,
        lease_ms,
        max_attempts,
        variant,
    });
    for _ in 0..events {
        broker.publish();
    }
    broker
}
