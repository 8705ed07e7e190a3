//! The three classes of broker bugs that hide between the engines' usual steps, on a manual
//! clock: the lease boundary (`now == deadline`), timers that outlive their lease, and events
//! published while others are leased. For each: the reference broker's behaviour at that
//! point (docs/protocol.md), and the planted mutant's one-point deviation from it.

use leasehold_model::broker::{Broker, BrokerConfig, Timer};
use leasehold_model::types::{LeaseId, Record, SettleError};
use leasehold_model::{BrokerView, Lease, Variant};

const LEASE_MS: u64 = 100;

fn broker(variant: Variant, events: u32) -> Broker {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: LEASE_MS,
        max_attempts: 3,
        variant,
    });
    for _ in 0..events {
        broker.publish();
    }
    broker
}

fn fetch_one(broker: &mut Broker, now_ms: u64) -> Lease {
    let mut leases = broker.fetch(0, 1, now_ms, None).expect("fetch");
    assert_eq!(leases.len(), 1, "one lease at {now_ms}");
    leases.pop().expect("one")
}

// ----- the lease boundary -----

#[test]
fn a_settle_at_exactly_the_deadline_is_stale() {
    // Valid while now < deadline: at now == deadline the lease is over, whether or not the
    // broker has expired it yet (lazily, its record is still leased).
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        let mut broker = broker(variant, 1);
        let lease = fetch_one(&mut broker, 0);
        assert_eq!(lease.deadline_ms, LEASE_MS);
        assert!(matches!(broker.record(0, 1), Some(Record::Leased { .. })));
        assert_eq!(
            broker.ack(&lease, LEASE_MS - 1).map(|()| "accepted"),
            Ok("accepted"),
            "{variant}: one millisecond before"
        );
        let mut broker = self::broker(variant, 1);
        let lease = fetch_one(&mut broker, 0);
        assert_eq!(
            broker.ack(&lease, LEASE_MS),
            Err(SettleError::StaleLease),
            "{variant}"
        );
        assert_eq!(
            broker.renew(&lease, LEASE_MS, LEASE_MS),
            Err(SettleError::StaleLease)
        );
    }
}

#[test]
fn inclusive_deadline_accepts_a_settle_at_exactly_the_deadline() {
    let mut broker = broker(Variant::InclusiveDeadline, 1);
    let lease = fetch_one(&mut broker, 0);
    assert_eq!(broker.ack(&lease, LEASE_MS), Ok(()));
    assert_eq!(broker.record(0, 1), Some(&Record::Acked));
    // One millisecond later it is stale, as for the reference.
    let mut broker = self::broker(Variant::InclusiveDeadline, 1);
    let lease = fetch_one(&mut broker, 0);
    assert_eq!(
        broker.ack(&lease, LEASE_MS + 1),
        Err(SettleError::StaleLease)
    );
}

// ----- timers -----

#[test]
fn a_settle_cancels_its_timer_and_a_renew_replaces_it() {
    let mut broker = broker(Variant::Fenced, 2);
    let l1 = fetch_one(&mut broker, 0);
    let l2 = fetch_one(&mut broker, 10);
    let timer = |lease: &Lease, deadline_ms| Timer {
        deadline_ms,
        group: 0,
        seq: lease.seq,
        lease_id: lease.lease_id,
    };
    assert_eq!(broker.timers(), [timer(&l1, 100), timer(&l2, 110)]);
    assert_eq!(broker.next_deadline(), Some(100));
    broker.renew(&l1, 50, 200).expect("renew");
    assert_eq!(broker.timers(), [timer(&l2, 110), timer(&l1, 250)]);
    broker.nack(&l2, 60, 0).expect("nack");
    assert_eq!(broker.timers(), [timer(&l1, 250)]);
    broker.ack(&l1, 70).expect("ack");
    assert_eq!(broker.timers(), []);
    assert_eq!(broker.next_deadline(), None);
    // Event 2 was nacked: its next lease has a timer of its own, and nothing else fires.
    let l3 = fetch_one(&mut broker, 80);
    assert_eq!(l3.seq, 2);
    assert_eq!(broker.timers(), [timer(&l3, 180)]);
    assert_eq!(broker.expire_due(179), []);
    assert!(matches!(broker.record(0, 2), Some(Record::Leased { .. })));
}

#[test]
fn stale_timer_expires_the_next_lease_before_its_deadline() {
    let mut broker = broker(Variant::StaleTimer, 1);
    let l1 = fetch_one(&mut broker, 0);
    broker.nack(&l1, 10, 0).expect("nack");
    // The nacked lease's timer is still pending (deadline 100).
    assert_eq!(broker.next_deadline(), Some(100));
    let l2 = fetch_one(&mut broker, 20);
    assert_eq!(l2.deadline_ms, 120);
    let expired = broker.expire_due(100);
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0].lease_id, l2.lease_id);
    // L2 is 20 ms from its deadline, and the broker hands the event out again.
    let l3 = fetch_one(&mut broker, 100);
    assert_eq!(l3.seq, 1);
    assert_eq!(broker.ack(&l2, 101), Err(SettleError::StaleLease));
}

#[test]
fn the_reference_timer_of_a_nacked_lease_never_fires() {
    let mut broker = broker(Variant::Fenced, 1);
    let l1 = fetch_one(&mut broker, 0);
    broker.nack(&l1, 10, 0).expect("nack");
    let l2 = fetch_one(&mut broker, 20);
    assert_eq!(broker.expire_due(100), []);
    assert_eq!(broker.expire_due(119), []);
    let expired = broker.expire_due(120);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].lease_id, l2.lease_id);
    assert_eq!(expired[0].deadline_ms, 120);
}

#[test]
fn fire_timer_fires_one_pending_timer_whatever_its_deadline() {
    let mut broker = broker(Variant::Fenced, 1);
    let lease = fetch_one(&mut broker, 0);
    let timer = broker.timers()[0];
    let forged = Timer {
        lease_id: LeaseId(99),
        ..timer
    };
    assert_eq!(broker.fire_timer(&forged), None, "not pending");
    let expired = broker.fire_timer(&timer).expect("fires");
    assert_eq!(expired.lease_id, lease.lease_id);
    assert_eq!(broker.timers(), []);
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: LEASE_MS
        })
    );
    assert_eq!(broker.fire_timer(&timer), None, "fired once");
}

// ----- publishes during the run -----

#[test]
fn a_publish_survives_a_broker_restart() {
    let mut broker = broker(Variant::Fenced, 2);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.publish(), 3);
    broker.restart();
    assert_eq!(BrokerView::event_count(&broker), 3);
    assert!(matches!(broker.record(0, 1), Some(Record::Leased { .. })));
    broker.ack(&l1, 1).expect("the lease survives the restart");
    let leases = broker.fetch(0, 5, 2, None).expect("fetch");
    let seqs: Vec<u32> = leases.iter().map(|l| l.seq).collect();
    assert_eq!(
        seqs,
        [2, 3],
        "the event published while 1 was leased is delivered"
    );
}

#[test]
fn volatile_publish_loses_the_events_published_since_the_last_fetch() {
    let mut broker = broker(Variant::VolatilePublish, 2);
    let l1 = fetch_one(&mut broker, 0); // flushes events 1 and 2
    assert_eq!(broker.publish(), 3);
    assert_eq!(broker.publish(), 4);
    broker.restart();
    assert_eq!(
        BrokerView::event_count(&broker),
        2,
        "events 3 and 4 are gone"
    );
    assert_eq!(broker.unsettled_count(), 2);
    broker.ack(&l1, 1).expect("ack");
    let leases = broker.fetch(0, 5, 2, None).expect("fetch");
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].seq, 2);
    // A publish flushed by a fetch survives.
    assert_eq!(broker.publish(), 3);
    fetch_one(&mut broker, 3);
    broker.restart();
    assert_eq!(BrokerView::event_count(&broker), 3);
}
