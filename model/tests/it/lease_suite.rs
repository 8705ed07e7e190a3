//! The lease suite on a manual clock: stale ACK, expiry, retry, max attempts, reject, renew,
//! receipts, lease ids across restarts and the committed frontier.
//!
//! Expected values come from docs/protocol.md (the `fenced` reference), not from running the
//! broker. Every test asserts the exact error and the record's resulting state.

use leasehold_model::broker::{Broker, BrokerConfig, Expired};
use leasehold_model::types::{LeaseId, Reason, Receipt, Record, SettleError, REASON_MAX_ATTEMPTS};
use leasehold_model::{Lease, Variant};

const LEASE_MS: u64 = 30_000;

fn broker(variant: Variant, max_attempts: u32) -> Broker {
    Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: LEASE_MS,
        max_attempts,
        variant,
    })
}

/// A broker with one published event.
fn one_event(variant: Variant, max_attempts: u32) -> Broker {
    let mut broker = broker(variant, max_attempts);
    assert_eq!(broker.publish(), 1);
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 0,
            not_before_ms: 0
        })
    );
    broker
}

/// Fetches exactly one lease of group 0 at `now_ms`.
fn fetch_one(broker: &mut Broker, now_ms: u64) -> Lease {
    let mut leases = broker.fetch(0, 1, now_ms, None).expect("fetch");
    assert_eq!(leases.len(), 1, "expected one lease at {now_ms}");
    leases.pop().expect("one lease")
}

fn leased(lease: &Lease) -> Record {
    Record::Leased {
        lease_id: lease.lease_id,
        attempts: lease.attempt,
        deadline_ms: lease.deadline_ms,
    }
}

fn dead(reason: &str) -> Record {
    Record::DeadLettered {
        reason: Reason::new(reason),
    }
}

#[test]
fn fetch_leases_lowest_seq_first_with_a_deadline() {
    let mut broker = one_event(Variant::Fenced, 3);
    broker.publish();
    let leases = broker.fetch(0, 5, 1_000, None).expect("fetch");
    assert_eq!(leases.len(), 2);
    assert_eq!((leases[0].seq, leases[1].seq), (1, 2));
    for lease in &leases {
        assert_eq!(lease.group, 0);
        assert_eq!(lease.attempt, 1);
        assert_eq!(lease.deadline_ms, 1_000 + LEASE_MS);
        assert_eq!(lease.receipt, None);
        assert_eq!(broker.record(0, lease.seq), Some(&leased(lease)));
    }
    assert_ne!(leases[0].lease_id, leases[1].lease_id);
    // Nothing left to lease: an empty answer, not an error.
    assert_eq!(broker.fetch(0, 1, 1_000, None), Ok(vec![]));
    // A lease duration given by the caller overrides the configured one.
    broker.publish();
    let short = broker.fetch(0, 1, 1_000, Some(5)).expect("fetch");
    assert_eq!(short[0].deadline_ms, 1_005);
}

#[test]
fn fetch_rejects_unknown_group_and_zero_limit() {
    let mut broker = one_event(Variant::Fenced, 3);
    assert!(matches!(
        broker.fetch(1, 1, 0, None),
        Err(SettleError::Invalid(_))
    ));
    assert!(matches!(
        broker.fetch(0, 0, 0, None),
        Err(SettleError::Invalid(_))
    ));
    // Neither failed fetch leased anything.
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 0,
            not_before_ms: 0
        })
    );
}

#[test]
fn stale_ack_after_expiry_and_release() {
    // The seed's timeline: A fetches (t0), crashes, L1 expires, B fetches (t3), A's late ACK is
    // rejected (t4), B's ACK is durable progress (t5).
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(l1.deadline_ms, 30_000);

    // Expired but not yet re-leased: still stale, and the failed ack changes nothing.
    assert_eq!(broker.ack(&l1, 30_000), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&leased(&l1)));

    let l2 = fetch_one(&mut broker, 31_000);
    assert_eq!(l2.attempt, 2);
    assert_ne!(l2.lease_id, l1.lease_id);
    assert_eq!(l2.deadline_ms, 61_000);

    assert_eq!(broker.ack(&l1, 31_500), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&leased(&l2)));
    assert_eq!(broker.frontier(0), 0);

    assert_eq!(broker.ack(&l2, 32_000), Ok(()));
    assert_eq!(broker.record(0, 1), Some(&Record::Acked));
    assert_eq!(broker.frontier(0), 1);

    // Acked is final: neither lease can settle it again.
    assert_eq!(broker.ack(&l1, 32_000), Err(SettleError::StaleLease));
    assert_eq!(broker.ack(&l2, 32_000), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&Record::Acked));
}

#[test]
fn a_lease_is_valid_strictly_before_its_deadline() {
    let mut broker = one_event(Variant::Fenced, 3);
    let lease = fetch_one(&mut broker, 0);
    // expire_due leaves a lease alone until its deadline.
    assert_eq!(broker.expire_due(29_999), vec![]);
    assert_eq!(broker.next_deadline(), Some(30_000));
    assert_eq!(broker.record(0, 1), Some(&leased(&lease)));
    // At the deadline itself the lease is no longer valid.
    assert_eq!(broker.ack(&lease, 30_000), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&leased(&lease)));
    // One millisecond before, it is.
    let mut other = one_event(Variant::Fenced, 3);
    let lease = fetch_one(&mut other, 0);
    assert_eq!(other.ack(&lease, 29_999), Ok(()));
    assert_eq!(other.record(0, 1), Some(&Record::Acked));
}

#[test]
fn expire_due_makes_the_record_available_at_the_deadline() {
    let mut broker = one_event(Variant::Fenced, 3);
    let lease = fetch_one(&mut broker, 0);
    assert_eq!(
        broker.expire_due(30_000),
        vec![Expired {
            deadline_ms: 30_000,
            group: 0,
            seq: 1,
            lease_id: lease.lease_id,
            dead_lettered: false,
            stale_timer: None,
        }]
    );
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 30_000
        })
    );
    assert_eq!(broker.next_deadline(), None);
    // Expiring again does nothing; the stale lease stays stale.
    assert_eq!(broker.expire_due(40_000), vec![]);
    assert_eq!(broker.ack(&lease, 40_000), Err(SettleError::StaleLease));
    let again = fetch_one(&mut broker, 40_000);
    assert_eq!(again.attempt, 2);
}

#[test]
fn fetch_applies_due_expiry_first() {
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 0);
    // Before the deadline nothing can be fetched.
    assert_eq!(broker.fetch(0, 1, 29_999, None), Ok(vec![]));
    assert_eq!(broker.record(0, 1), Some(&leased(&l1)));
    // At the deadline fetch expires L1 and leases the event again.
    let l2 = fetch_one(&mut broker, 30_000);
    assert_eq!(l2.attempt, 2);
    assert_eq!(l2.deadline_ms, 60_000);
    assert_eq!(broker.record(0, 1), Some(&leased(&l2)));
}

#[test]
fn nack_redelivers_with_one_more_attempt_after_the_delay() {
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.nack(&l1, 10, 5_000), Ok(()));
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 5_010
        })
    );
    assert_eq!(broker.frontier(0), 0);
    // The nacked lease is spent.
    assert_eq!(broker.nack(&l1, 20, 0), Err(SettleError::StaleLease));
    assert_eq!(broker.ack(&l1, 20), Err(SettleError::StaleLease));
    // The delay is respected.
    assert_eq!(broker.fetch(0, 1, 5_009, None), Ok(vec![]));
    let l2 = fetch_one(&mut broker, 5_010);
    assert_eq!(l2.attempt, 2);
    assert_ne!(l2.lease_id, l1.lease_id);
    assert_eq!(broker.record(0, 1), Some(&leased(&l2)));
}

#[test]
fn nack_without_delay_redelivers_at_once() {
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 100);
    assert_eq!(broker.nack(&l1, 200, 0), Ok(()));
    let l2 = fetch_one(&mut broker, 200);
    assert_eq!(l2.attempt, 2);
}

#[test]
fn nack_at_max_attempts_dead_letters() {
    let mut broker = one_event(Variant::Fenced, 2);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.nack(&l1, 1, 0), Ok(()));
    let l2 = fetch_one(&mut broker, 1);
    assert_eq!(l2.attempt, 2);
    assert_eq!(broker.nack(&l2, 2, 0), Ok(()));
    assert_eq!(broker.record(0, 1), Some(&dead(REASON_MAX_ATTEMPTS)));
    assert_eq!(REASON_MAX_ATTEMPTS, "max attempts");
    assert_eq!(broker.frontier(0), 1);
    // Dead letters are final and never delivered again.
    assert_eq!(broker.fetch(0, 1, 100_000, None), Ok(vec![]));
    assert_eq!(broker.ack(&l2, 3), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&dead(REASON_MAX_ATTEMPTS)));
}

#[test]
fn expiry_at_max_attempts_dead_letters() {
    let mut broker = one_event(Variant::Fenced, 2);
    let l1 = fetch_one(&mut broker, 0);
    let l2 = fetch_one(&mut broker, 30_000);
    assert_eq!(l2.attempt, 2);
    assert_eq!(
        broker.expire_due(60_000),
        vec![Expired {
            deadline_ms: 60_000,
            group: 0,
            seq: 1,
            lease_id: l2.lease_id,
            dead_lettered: true,
            stale_timer: None,
        }]
    );
    assert_eq!(broker.record(0, 1), Some(&dead(REASON_MAX_ATTEMPTS)));
    assert_eq!(broker.frontier(0), 1);
    assert_eq!(broker.ack(&l1, 60_000), Err(SettleError::StaleLease));
    assert_eq!(broker.ack(&l2, 60_000), Err(SettleError::StaleLease));
    assert_eq!(broker.fetch(0, 1, 90_000, None), Ok(vec![]));
}

#[test]
fn expiry_at_max_attempts_dead_letters_on_fetch_too() {
    let mut broker = one_event(Variant::Fenced, 1);
    let _l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.fetch(0, 1, 30_000, None), Ok(vec![]));
    assert_eq!(broker.record(0, 1), Some(&dead(REASON_MAX_ATTEMPTS)));
}

#[test]
fn reject_dead_letters_at_once_with_its_reason_and_is_final() {
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.reject(&l1, 10, "unknown customer"), Ok(()));
    // No retries, although attempts (1) < max_attempts (3).
    assert_eq!(broker.record(0, 1), Some(&dead("unknown customer")));
    assert_eq!(broker.frontier(0), 1);
    assert_eq!(broker.fetch(0, 1, 100_000, None), Ok(vec![]));
    // Every later settle by the same lease is stale and changes nothing.
    assert_eq!(broker.ack(&l1, 20), Err(SettleError::StaleLease));
    assert_eq!(broker.nack(&l1, 20, 0), Err(SettleError::StaleLease));
    assert_eq!(
        broker.reject(&l1, 20, "other"),
        Err(SettleError::StaleLease)
    );
    assert_eq!(broker.renew(&l1, 20, 1_000), Err(SettleError::StaleLease));
    assert_eq!(broker.record(0, 1), Some(&dead("unknown customer")));
}

#[test]
fn renew_extends_the_deadline_with_the_same_lease_id() {
    let mut broker = one_event(Variant::Fenced, 3);
    let lease = fetch_one(&mut broker, 0);
    let renewed = broker.renew(&lease, 20_000, 30_000).expect("renew");
    assert_eq!(renewed.lease_id, lease.lease_id);
    assert_eq!(renewed.attempt, 1);
    assert_eq!(renewed.deadline_ms, 50_000);
    assert_eq!(broker.record(0, 1), Some(&leased(&renewed)));
    assert_eq!(broker.next_deadline(), Some(50_000));
    // The old deadline has passed, the renewed one has not.
    assert_eq!(broker.expire_due(40_000), vec![]);
    assert_eq!(broker.ack(&renewed, 49_999), Ok(()));
    assert_eq!(broker.record(0, 1), Some(&Record::Acked));
}

#[test]
fn an_expired_lease_cannot_be_renewed() {
    let mut broker = one_event(Variant::Fenced, 3);
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(
        broker.renew(&l1, 30_000, 30_000),
        Err(SettleError::StaleLease)
    );
    assert_eq!(broker.record(0, 1), Some(&leased(&l1)));
    // Nor once the event was leased again.
    let l2 = fetch_one(&mut broker, 30_000);
    assert_eq!(
        broker.renew(&l1, 30_001, 30_000),
        Err(SettleError::StaleLease)
    );
    assert_eq!(broker.record(0, 1), Some(&leased(&l2)));
}

#[test]
fn receipt_mismatch_on_the_redis_variants() {
    for variant in [Variant::RedisStreamsFenced, Variant::RedisStreams] {
        let mut broker = one_event(variant, 3);
        let lease = fetch_one(&mut broker, 0);
        // The receipt is the entry id, carried with the lease.
        assert_eq!(lease.receipt, Some(Receipt(1)), "{variant}");
        for receipt in [Some(Receipt(99)), None] {
            let forged = Lease { receipt, ..lease };
            assert_eq!(
                broker.ack(&forged, 10),
                Err(SettleError::ReceiptMismatch),
                "{variant}"
            );
            assert_eq!(
                broker.nack(&forged, 10, 0),
                Err(SettleError::ReceiptMismatch),
                "{variant}"
            );
            assert_eq!(
                broker.reject(&forged, 10, "x"),
                Err(SettleError::ReceiptMismatch),
                "{variant}"
            );
            assert_eq!(broker.record(0, 1), Some(&leased(&lease)), "{variant}");
        }
        // Renew is fenced on the lease id and the receipt on every variant.
        let forged = Lease {
            receipt: Some(Receipt(99)),
            ..lease
        };
        assert_eq!(
            broker.renew(&forged, 10, 1_000),
            Err(SettleError::ReceiptMismatch),
            "{variant}"
        );
        // The true receipt settles.
        assert_eq!(broker.ack(&lease, 10), Ok(()), "{variant}");
        assert_eq!(broker.record(0, 1), Some(&Record::Acked), "{variant}");
    }
}

#[test]
fn receipt_mismatch_needs_a_matching_lease_id() {
    let mut broker = one_event(Variant::RedisStreamsFenced, 3);
    let lease = fetch_one(&mut broker, 0);
    // Expired and forged: the lease id check comes first.
    let forged = Lease {
        receipt: Some(Receipt(99)),
        ..lease
    };
    assert_eq!(broker.ack(&forged, 30_000), Err(SettleError::StaleLease));
    // On fenced (no receipts) a lease that carries one does not match either.
    let mut fenced = one_event(Variant::Fenced, 3);
    let lease = fetch_one(&mut fenced, 0);
    let forged = Lease {
        receipt: Some(Receipt(1)),
        ..lease
    };
    assert_eq!(fenced.ack(&forged, 1), Err(SettleError::ReceiptMismatch));
    assert_eq!(fenced.record(0, 1), Some(&leased(&lease)));
}

#[test]
fn redis_nack_leaves_the_entry_pending_until_idle() {
    // docs/variants.md: nack = leave pending until idle; lease_ms is the claim idle time.
    let mut broker = Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: 200,
        max_attempts: 3,
        variant: Variant::RedisStreamsFenced,
    });
    broker.publish();
    let l1 = fetch_one(&mut broker, 0);
    assert_eq!(broker.nack(&l1, 10, 0), Ok(()));
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 200
        })
    );
    // The fenced adapter still treats the nacked lease as spent.
    assert_eq!(broker.ack(&l1, 20), Err(SettleError::StaleLease));
    assert_eq!(broker.fetch(0, 1, 199, None), Ok(vec![]));
    let l2 = fetch_one(&mut broker, 200);
    assert_eq!(l2.attempt, 2);
}

#[test]
fn plain_redis_streams_accepts_a_stale_xack() {
    // The documented I1 failure: XACK counts whoever holds the entry.
    let mut broker = one_event(Variant::RedisStreams, 3);
    let l1 = fetch_one(&mut broker, 0);
    let l2 = fetch_one(&mut broker, 30_000);
    assert_eq!(broker.ack(&l1, 30_001), Ok(()));
    assert_eq!(broker.record(0, 1), Some(&Record::Acked));
    // "Already acked" and "someone else acked" look the same to B.
    assert_eq!(broker.ack(&l2, 30_002), Err(SettleError::StaleLease));
}

#[test]
fn lease_ids_are_never_reused_across_a_broker_restart() {
    let mut broker = one_event(Variant::Fenced, 3);
    broker.publish();
    let l1 = fetch_one(&mut broker, 0);
    broker.restart();
    // The lease survives the restart (durable) and is still current.
    assert_eq!(broker.record(0, 1), Some(&leased(&l1)));
    let l2 = fetch_one(&mut broker, 1);
    assert_eq!(l2.seq, 2);
    assert_ne!(l2.lease_id, l1.lease_id);
    broker.restart();
    let l3 = fetch_one(&mut broker, 30_000);
    assert_eq!((l3.seq, l3.attempt), (1, 2));
    assert!(l3.lease_id != l1.lease_id && l3.lease_id != l2.lease_id);
    assert_eq!(broker.ack(&l1, 30_001), Err(SettleError::StaleLease));
    assert_eq!(broker.ack(&l3, 30_001), Ok(()));

    // The `lease-id-reuse` mutant is the contrast: the counter restarts.
    let mut mutant = one_event(Variant::LeaseIdReuse, 3);
    let m1 = fetch_one(&mut mutant, 0);
    mutant.restart();
    let m2 = fetch_one(&mut mutant, 30_000);
    assert_eq!(m2.lease_id, m1.lease_id);
    assert_eq!(m1.lease_id, LeaseId(1));
    // ... so the stale lease settles the new delivery.
    assert_eq!(mutant.ack(&m1, 30_001), Ok(()));
}

#[test]
fn the_frontier_never_passes_an_unsettled_event() {
    let mut broker = broker(Variant::Fenced, 3);
    for _ in 0..3 {
        broker.publish();
    }
    let leases = broker.fetch(0, 3, 0, None).expect("fetch");
    let [l1, l2, l3] = [&leases[0], &leases[1], &leases[2]];
    assert_eq!(broker.ack(l3, 1), Ok(()));
    assert_eq!(broker.frontier(0), 0);
    assert_eq!(broker.reject(l2, 2, "bad"), Ok(()));
    assert_eq!(broker.frontier(0), 0);
    assert_eq!(broker.nack(l1, 3, 0), Ok(()));
    assert_eq!(broker.frontier(0), 0);
    let l1b = fetch_one(&mut broker, 4);
    assert_eq!(l1b.seq, 1);
    assert_eq!(broker.ack(&l1b, 5), Ok(()));
    assert_eq!(broker.frontier(0), 3);
    // A restart does not move it.
    broker.restart();
    assert_eq!(broker.frontier(0), 3);
    // A new event is beyond the frontier until settled.
    broker.publish();
    assert_eq!(broker.frontier(0), 3);
}

#[test]
fn groups_see_every_event_independently() {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 2,
        lease_ms: LEASE_MS,
        max_attempts: 3,
        variant: Variant::Fenced,
    });
    broker.publish();
    let a = broker.fetch(0, 1, 0, None).expect("fetch").remove(0);
    let b = broker.fetch(1, 1, 0, None).expect("fetch").remove(0);
    assert_eq!((a.group, b.group), (0, 1));
    assert_eq!((a.attempt, b.attempt), (1, 1));
    assert_eq!(broker.ack(&a, 1), Ok(()));
    assert_eq!(broker.frontier(0), 1);
    assert_eq!(broker.frontier(1), 0);
    // A lease of one group cannot settle the other group's record.
    let wrong = Lease { group: 1, ..a };
    assert_eq!(broker.ack(&wrong, 2), Err(SettleError::StaleLease));
    assert_eq!(broker.record(1, 1), Some(&leased(&b)));
}
