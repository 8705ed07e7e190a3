//! `Oracle::end_step` runs after every step of both engines: on a broker where nothing new
//! happened it must not allocate.

use leasehold_model::broker::{Broker, BrokerConfig};
use leasehold_model::{Oracle, OracleConfig, Variant};

use crate::support::counting_alloc::allocations;

#[test]
fn end_step_does_not_allocate_when_nothing_changed() {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 2,
        lease_ms: 100,
        max_attempts: 1,
        variant: Variant::Fenced,
    });
    let mut oracle = Oracle::new(OracleConfig::new(2, 1, false));
    for _ in 0..5 {
        broker.publish();
        oracle.published();
    }
    // Group 0: acked, rejected, expired at max attempts (dead letter), leased, available.
    let leases = broker.fetch(0, 4, 0, None).expect("fetch");
    let issued: Vec<_> = leases.iter().map(|l| oracle.fetched(l, 0, 100)).collect();
    broker.ack(&leases[0], 1).expect("ack");
    oracle.settled(
        issued[0],
        &leases[0],
        &leasehold_model::SettleOp::Ack,
        true,
        1,
    );
    broker.reject(&leases[1], 1, "poison").expect("reject");
    let reject = leasehold_model::SettleOp::Reject {
        reason: leasehold_model::Reason::new("poison"),
    };
    oracle.settled(issued[1], &leases[1], &reject, true, 1);
    oracle.end_step(&broker);
    let renewed = broker.renew(&leases[3], 50, 1_000).expect("renew");
    let renew = leasehold_model::SettleOp::Renew { extend_ms: 1_000 };
    oracle.settled(issued[3], &leases[3], &renew, true, 50);
    assert_eq!(renewed.deadline_ms, 1_050);
    oracle.advance(100);
    for expired in broker.expire_due(100) {
        oracle.observe(expired.group, expired.seq);
    }
    oracle.end_step(&broker); // sees the dead letter of event 3: allowed to allocate
    assert_eq!(oracle.violations(), []);
    assert_eq!(broker.frontier(0), 3);

    let before = allocations();
    for _ in 0..10 {
        oracle.end_step(&broker);
    }
    let after = allocations();
    assert_eq!(oracle.violations(), []);
    assert_eq!(after - before, 0, "end_step allocated");
}
