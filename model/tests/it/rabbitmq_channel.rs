//! `rabbitmq-channel` on the pure broker: the stories of docs/rabbitmq.md's facts 2 and 5,
//! where several deliveries share a worker's channel.

use leasehold_model::broker::{Broker, BrokerConfig, BrokerView, SettleRequest};
use leasehold_model::types::{Lease, SettleError, SettleOp, Status};
use leasehold_model::{Backend, Variant};

const LEASE_MS: u64 = 100;

fn broker(events: u32, max_attempts: u32) -> Broker {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: LEASE_MS,
        max_attempts,
        variant: Variant::RabbitMqChannel,
    });
    for _ in 0..events {
        broker.publish();
    }
    broker
}

fn fetch(broker: &mut Broker, worker: &str, limit: usize, now_ms: u64) -> Vec<Lease> {
    broker
        .fetch_as(worker, 0, limit, now_ms, None)
        .expect("fetch")
}

fn ack(broker: &mut Broker, lease: &Lease, now_ms: u64) -> Result<(), SettleError> {
    broker
        .settle(&SettleRequest::new(lease, SettleOp::Ack, now_ms), now_ms)
        .map(drop)
}

fn statuses(broker: &Broker) -> Vec<Status> {
    (1..=broker.event_count())
        .map(|seq| broker.status_kind(0, seq))
        .collect()
}

#[test]
fn an_unknown_tag_closes_the_channel_and_returns_its_other_deliveries() {
    let mut broker = broker(2, 3);
    let held = fetch(&mut broker, "c1", 2, 0);
    assert_eq!(held.iter().map(|l| l.seq).collect::<Vec<_>>(), [1, 2]);
    ack(&mut broker, &held[0], 1).expect("the first ack");
    // The same tag again: the channel no longer holds it.
    assert_eq!(ack(&mut broker, &held[0], 2), Err(SettleError::StaleLease));
    // E2's delivery ended with the channel: returned at the next expiry, delivered again.
    let expired = broker.expire_due(2);
    assert_eq!(
        expired
            .iter()
            .map(|e| (e.seq, e.deadline_ms))
            .collect::<Vec<_>>(),
        [(2, 2)]
    );
    assert_eq!(ack(&mut broker, &held[1], 3), Err(SettleError::StaleLease));
    let again = fetch(&mut broker, "c2", 1, 4);
    assert_eq!((again[0].seq, again[0].attempt), (2, 2));
    assert_eq!(statuses(&broker), [Status::Acked, Status::Leased]);
}

#[test]
fn a_tag_from_a_closed_channel_settles_the_delivery_with_that_number_on_the_new_one() {
    let mut broker = broker(2, 3);
    let old = fetch(&mut broker, "c1", 1, 0).remove(0);
    // Its timeout closes the channel; the worker's next channel gets tag 1 again, for E1.
    assert_eq!(broker.expire_due(LEASE_MS).len(), 1);
    let new = fetch(&mut broker, "c1", 2, LEASE_MS);
    assert_eq!(new.iter().map(|l| l.seq).collect::<Vec<_>>(), [1, 2]);
    assert_ne!(new[0].lease_id, old.lease_id);
    // The old lease's ack is accepted: it acked the new delivery with its tag number.
    ack(&mut broker, &old, LEASE_MS + 1).expect("accepted on the new channel");
    assert_eq!(statuses(&broker), [Status::Acked, Status::Leased]);
    // The new holder's own ack then names a tag the channel no longer holds: 406, and E2
    // comes back.
    assert_eq!(
        ack(&mut broker, &new[0], LEASE_MS + 2),
        Err(SettleError::StaleLease)
    );
    assert_eq!(broker.expire_due(LEASE_MS + 2).len(), 1);
    assert_eq!(statuses(&broker), [Status::Acked, Status::Available]);
}

#[test]
fn a_timeout_returns_every_delivery_of_the_channel_and_other_workers_keep_theirs() {
    let mut broker = broker(3, 3);
    let early = fetch(&mut broker, "c1", 1, 0).remove(0);
    let late = fetch(&mut broker, "c1", 1, 50).remove(0);
    let other = fetch(&mut broker, "c2", 1, 50).remove(0);
    assert_eq!((early.seq, late.seq, other.seq), (1, 2, 3));
    let expired = broker.expire_due(LEASE_MS);
    assert_eq!(
        expired.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2],
        "the late delivery ends with its channel, before its own deadline"
    );
    assert_eq!(
        ack(&mut broker, &late, LEASE_MS + 1),
        Err(SettleError::StaleLease)
    );
    ack(&mut broker, &other, LEASE_MS + 1).expect("another worker's channel stays open");
    // Returned in the order they came back, delivery count kept.
    let again = fetch(&mut broker, "c2", 2, LEASE_MS + 2);
    assert_eq!(
        again.iter().map(|l| (l.seq, l.attempt)).collect::<Vec<_>>(),
        [(1, 2), (2, 2)]
    );
}

#[test]
fn a_channel_closed_at_the_delivery_limit_dead_letters_its_deliveries() {
    let mut broker = broker(2, 1);
    let held = fetch(&mut broker, "c1", 2, 0);
    let nack = SettleOp::Nack {
        delay_ms: 0,
        reason: None,
    };
    // An unknown tag (nothing was acked: a lease from a forged channel number 1, tag 3).
    let mut forged = held[0];
    forged.lease_id = leasehold_model::channels::lease_id(1, 3);
    let refused = broker.settle(&SettleRequest::new(&forged, nack, 1), 1);
    assert_eq!(refused, Err(SettleError::StaleLease));
    let expired = broker.expire_due(1);
    assert!(expired.iter().all(|e| e.dead_lettered), "{expired:?}");
    assert_eq!(
        statuses(&broker),
        [Status::DeadLettered, Status::DeadLettered]
    );
}

#[test]
fn a_renew_is_refused_and_a_receipt_names_nothing() {
    let mut broker = broker(1, 2);
    let lease = fetch(&mut broker, "c1", 1, 0).remove(0);
    let renew = SettleOp::Renew { extend_ms: 10 };
    assert!(matches!(
        broker.settle(&SettleRequest::new(&lease, renew, 1), 1),
        Err(SettleError::Invalid(_))
    ));
    let mut forged = lease;
    forged.receipt = Some(leasehold_model::Receipt(7));
    assert_eq!(
        ack(&mut broker, &forged, 1),
        Err(SettleError::ReceiptMismatch)
    );
    ack(&mut broker, &lease, 2).expect("the holder's own ack");
}
