//! Each variant deviates from the reference exactly where docs/variants.md says, and nowhere
//! else: every test below runs one small story on the pure broker of *every* variant and
//! names the variants whose answer differs from `fenced`'s.

use leasehold_model::broker::{Broker, BrokerView, SettleRequest};
use leasehold_model::types::{Lease, Reason, Receipt, Record, Seq, SettleError, SettleOp, Status};
use leasehold_model::{Variant, VariantKind};

const LEASE_MS: u64 = 100;

use crate::support::published;

fn broker(variant: Variant, events: u32, max_attempts: u32) -> Broker {
    published::published(variant, 1, LEASE_MS, events, max_attempts)
}

fn fetch(broker: &mut Broker, now_ms: u64) -> Lease {
    let leases = broker.fetch(0, 1, now_ms, None).expect("fetch");
    assert_eq!(
        leases.len(),
        1,
        "{}: nothing to fetch at {now_ms}",
        broker.variant()
    );
    leases[0]
}

/// Asserts that `story` answers `true` exactly for the variants in `deviating`.
fn deviates_exactly(deviating: &[Variant], story: impl Fn(Variant) -> bool) {
    for &variant in Variant::ALL {
        assert_eq!(
            story(variant),
            deviating.contains(&variant),
            "{variant}: {}",
            if deviating.contains(&variant) {
                "expected to deviate"
            } else {
                "expected to behave like the reference"
            }
        );
    }
}

/// A stale request: lease L1 expired at its deadline and the event was leased again as L2;
/// the holder of L1 then sends `op`. Returns whether the broker accepted it.
fn stale_request_accepted(variant: Variant, op: SettleOp) -> bool {
    let mut broker = broker(variant, 1, 3);
    let l1 = fetch(&mut broker, 0);
    let l2 = fetch(&mut broker, LEASE_MS);
    assert_ne!(l1.lease_id, l2.lease_id);
    let now = LEASE_MS + 10;
    let result = broker.settle(&SettleRequest::new(&l1, op, now), now);
    match result {
        Ok(_) => true,
        Err(SettleError::StaleLease) => false,
        // RabbitMQ refuses every renew, stale or not (no per-delivery extension).
        Err(SettleError::Invalid(_)) if !variant.renews() => false,
        Err(other) => panic!("{variant}: unexpected {other}"),
    }
}

#[test]
fn a_stale_ack_counts_only_where_the_ack_is_unfenced() {
    deviates_exactly(
        &[
            Variant::RedisStreams,
            Variant::JetStream,
            Variant::PgVisibility,
            Variant::UnfencedSettle,
            Variant::NackOnAmbiguous,
            // L1's tag, sent on the worker's new channel, names L2's delivery there.
            Variant::RabbitMqChannel,
        ],
        |v| stale_request_accepted(v, SettleOp::Ack),
    );
}

#[test]
fn a_stale_nack_or_reject_also_counts_where_only_the_ack_is_fenced() {
    let unfenced = [
        Variant::RedisStreams,
        Variant::JetStream,
        Variant::PgVisibility,
        Variant::UnfencedSettle,
        Variant::NackOnAmbiguous,
        Variant::OnlyAckFenced,
        Variant::RabbitMqChannel,
    ];
    deviates_exactly(&unfenced, |v| {
        stale_request_accepted(
            v,
            SettleOp::Nack {
                delay_ms: 0,
                reason: None,
            },
        )
    });
    deviates_exactly(&unfenced, |v| {
        stale_request_accepted(
            v,
            SettleOp::Reject {
                reason: Reason::new("poison"),
            },
        )
    });
}

#[test]
fn a_stale_renew_counts_only_where_renew_revives() {
    // Renew is fenced on the lease id in every variant, Redis and unfenced ones included,
    // except pg-visibility, where extending the visibility names the row by id alone.
    deviates_exactly(&[Variant::RenewRevives, Variant::PgVisibility], |v| {
        stale_request_accepted(v, SettleOp::Renew { extend_ms: 50 })
    });
}

/// An ack of L1 sent when the worker's clock reads 50 and reaching the broker at `now_ms`,
/// at or past L1's deadline (100), before anything else happened to the record.
fn late_ack_accepted(variant: Variant, now_ms: u64) -> bool {
    let mut broker = broker(variant, 1, 3);
    let l1 = fetch(&mut broker, 0);
    assert_eq!(l1.deadline_ms, LEASE_MS);
    broker
        .settle(&SettleRequest::new(&l1, SettleOp::Ack, 50), now_ms)
        .is_ok()
}

#[test]
fn an_ack_past_the_deadline_counts_where_the_broker_trusts_the_workers_clock() {
    // Exactly at the deadline the lease is no longer valid (valid while now < deadline).
    deviates_exactly(
        &[
            Variant::RedisStreams,
            Variant::JetStream,
            Variant::PgVisibility,
            Variant::UnfencedSettle,
            Variant::NackOnAmbiguous,
            Variant::WorkerClockExpiry,
            Variant::InclusiveDeadline,
        ],
        |v| late_ack_accepted(v, LEASE_MS),
    );
    // One millisecond later only the inclusive comparison stops deviating.
    deviates_exactly(
        &[
            Variant::RedisStreams,
            Variant::JetStream,
            Variant::PgVisibility,
            Variant::UnfencedSettle,
            Variant::NackOnAmbiguous,
            Variant::WorkerClockExpiry,
        ],
        |v| late_ack_accepted(v, LEASE_MS + 1),
    );
}

#[test]
fn lease_ids_are_never_reused_across_a_restart_except_in_lease_id_reuse() {
    deviates_exactly(&[Variant::LeaseIdReuse], |v| {
        let mut broker = broker(v, 2, 3);
        let l1 = fetch(&mut broker, 0);
        broker.restart();
        let l2 = fetch(&mut broker, 0);
        assert_eq!(l2.seq, 2);
        l2.lease_id == l1.lease_id
    });
}

#[test]
fn the_frontier_passes_an_unsettled_event_only_in_max_seen_frontier() {
    deviates_exactly(&[Variant::MaxSeenFrontier], |v| {
        let mut broker = broker(v, 2, 3);
        let leases = broker.fetch(0, 2, 0, None).expect("fetch");
        assert_eq!(leases.len(), 2);
        broker.ack(&leases[1], 10).expect("ack of event 2");
        match broker.frontier(0) {
            0 => false,
            2 => true,
            other => panic!("{v}: frontier {other}"),
        }
    });
}

#[test]
fn an_exhausted_expiry_dead_letters_with_max_attempts_unless_the_variant_says_otherwise() {
    // `no-dead-letter` makes the event available again; `dlq-drop` drops the record.
    deviates_exactly(&[Variant::NoDeadLetter, Variant::DlqDrop], |v| {
        let mut broker = broker(v, 1, 1);
        let l1 = fetch(&mut broker, 0);
        let expired = broker.expire_due(LEASE_MS);
        assert_eq!(expired.len(), 1, "{v}");
        assert_eq!(expired[0].lease_id, l1.lease_id);
        assert_eq!(expired[0].deadline_ms, LEASE_MS);
        match *broker.record(0, 1).expect("record") {
            Record::DeadLettered { reason } => {
                assert_eq!(reason, "max attempts");
                assert!(expired[0].dead_lettered);
                false
            }
            Record::Available { attempts, .. } => {
                assert_eq!(v, Variant::NoDeadLetter);
                assert_eq!(attempts, 1);
                assert!(!expired[0].dead_lettered);
                true
            }
            Record::Dropped => {
                assert_eq!(v, Variant::DlqDrop);
                true
            }
            other => panic!("{v}: {other:?}"),
        }
    });
}

#[test]
fn an_acknowledged_ack_survives_a_restart_except_in_volatile_ack() {
    deviates_exactly(&[Variant::VolatileAck], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.ack(&l1, 10).expect("ack");
        assert_eq!(broker.frontier(0), 1);
        broker.restart();
        match broker.status_kind(0, 1) {
            Status::Acked => {
                assert_eq!(broker.frontier(0), 1);
                false
            }
            Status::Leased => {
                assert_eq!(broker.frontier(0), 0);
                true
            }
            other => panic!("{v}: {other:?}"),
        }
    });
}

#[test]
fn a_reject_keeps_the_record_with_its_reason_except_in_dlq_drop() {
    deviates_exactly(&[Variant::DlqDrop], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.reject(&l1, 10, "poison").expect("reject");
        match broker.status(0, 1) {
            (Status::DeadLettered, Some(reason)) => {
                assert_eq!(reason, "poison");
                false
            }
            (Status::Dropped, None) => true,
            other => panic!("{v}: {other:?}"),
        }
    });
}

#[test]
fn a_redelivery_after_expiry_counts_as_another_attempt_except_in_attempts_reset() {
    deviates_exactly(&[Variant::AttemptsReset], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        assert_eq!(l1.attempt, 1);
        let l2 = fetch(&mut broker, LEASE_MS);
        match l2.attempt {
            2 => false,
            1 => true,
            other => panic!("{v}: attempt {other}"),
        }
    });
}

#[test]
fn a_lease_held_at_a_restart_still_expires_except_in_stuck_lease() {
    deviates_exactly(&[Variant::StuckLease], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.restart();
        let expired = broker.expire_due(LEASE_MS);
        match expired.as_slice() {
            [one] => {
                assert_eq!(one.lease_id, l1.lease_id);
                assert_eq!(broker.status_kind(0, 1), Status::Available);
                false
            }
            [] => {
                assert!(broker.timers().is_empty());
                assert_eq!(broker.status_kind(0, 1), Status::Leased);
                true
            }
            more => panic!("{v}: {more:?}"),
        }
    });
}

#[test]
fn a_settled_lease_leaves_no_timer_except_in_stale_timer() {
    deviates_exactly(&[Variant::StaleTimer], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        assert_eq!(broker.timers().len(), 1);
        assert_eq!(broker.next_deadline(), Some(LEASE_MS));
        broker.ack(&l1, 10).expect("ack");
        !broker.timers().is_empty()
    });
}

#[test]
fn a_published_event_survives_a_restart_except_in_volatile_publish() {
    deviates_exactly(&[Variant::VolatilePublish], |v| {
        let mut broker = broker(v, 1, 3);
        broker.restart();
        match broker.event_count() {
            1 => false,
            0 => true,
            other => panic!("{v}: {other} events"),
        }
    });
}

#[test]
fn only_the_redis_and_jetstream_variants_hand_out_the_entry_id_as_a_receipt() {
    let named = [
        Variant::RedisStreams,
        Variant::RedisStreamsFenced,
        Variant::JetStream,
    ];
    deviates_exactly(&named, |v| {
        let mut broker = broker(v, 2, 3);
        let leases = broker.fetch(0, 2, 0, None).expect("fetch");
        assert_eq!(leases[0].receipt, broker.receipt(1));
        assert_eq!(leases[1].receipt, broker.receipt(2));
        assert_eq!(v.receipts_name_entries(), broker.receipt(2).is_some());
        match broker.receipt(2) {
            None => false,
            Some(receipt) => {
                assert_eq!(receipt, Receipt(2));
                true
            }
        }
    });
}

#[test]
fn a_nack_on_redis_leaves_the_entry_pending_until_it_is_idle() {
    // No XNACK: the entry is claimable again once idle for the claim time since its delivery,
    // whatever the nack's delay; the other brokers redeliver after the delay.
    deviates_exactly(&[Variant::RedisStreams, Variant::RedisStreamsFenced], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.nack(&l1, 10, 5).expect("nack");
        let early = broker.fetch(0, 1, 50, None).expect("fetch");
        if early.is_empty() {
            let again = fetch(&mut broker, LEASE_MS);
            assert_eq!(again.attempt, 2);
            true
        } else {
            assert_eq!(early[0].attempt, 2);
            false
        }
    });
}

#[test]
fn a_second_nack_of_a_pending_redis_entry_does_not_make_it_idle_sooner() {
    // Plain Redis accepts a nack of an entry that is still pending after an earlier nack; the
    // entry stays pending until idle since its delivery.
    let mut broker = broker(Variant::RedisStreams, 1, 3);
    let l1 = fetch(&mut broker, 0);
    broker.nack(&l1, 10, 0).expect("nack");
    broker
        .nack(&l1, 20, 0)
        .expect("a second nack of a pending entry");
    assert!(broker.fetch(0, 1, 50, None).expect("fetch").is_empty());
    assert_eq!(fetch(&mut broker, LEASE_MS).attempt, 2);
}

#[test]
fn every_variant_is_found_by_its_name_and_prints_it() {
    let names = Variant::names();
    for &variant in Variant::ALL {
        assert_eq!(Variant::from_name(variant.name()), Some(variant));
        assert_eq!(variant.to_string(), variant.name());
        assert!(names.split(", ").any(|n| n == variant.name()), "{names}");
    }
    assert_eq!(names.split(", ").count(), Variant::ALL.len());
    assert!(names.starts_with("fenced, redis-streams, redis-streams-fenced"));
    for unknown in ["", "Fenced", "unfenced", "fenced "] {
        assert_eq!(Variant::from_name(unknown), None, "{unknown:?}");
    }
    // The variants docs/variants.md names, by name.
    for name in [
        "fenced",
        "redis-streams",
        "redis-streams-fenced",
        "jetstream",
        "unfenced-settle",
        "renew-revives",
        "lease-id-reuse",
        "max-seen-frontier",
        "no-dead-letter",
        "volatile-ack",
        "nack-on-ambiguous",
        "worker-clock-expiry",
        "dlq-drop",
        "only-ack-fenced",
        "attempts-reset",
        "stuck-lease",
    ] {
        let variant = Variant::from_name(name).expect(name);
        let protocol = matches!(
            name,
            "fenced" | "redis-streams" | "redis-streams-fenced" | "jetstream"
        );
        assert_eq!(variant.kind() == VariantKind::Protocol, protocol, "{name}");
    }
}

#[test]
fn a_nack_on_jetstream_redelivers_after_its_delay_and_a_stale_one_counts() {
    // Observed on nats-server 2.9.10 (docs/jetstream.md): `-NAK` redelivers at the next pull,
    // `-NAK {"delay": …}` after the delay, and a `-NAK` on the reply subject of an earlier
    // delivery is taken while the message is ack-pending.
    let mut broker = broker(Variant::JetStream, 1, 3);
    let l1 = fetch(&mut broker, 0);
    broker.nack(&l1, 10, 30).expect("nack");
    assert!(broker.fetch(0, 1, 20, None).expect("fetch").is_empty());
    let l2 = fetch(&mut broker, 40);
    assert_eq!(l2.attempt, 2);
    broker
        .nack(&l1, 50, 0)
        .expect("a stale nack while the message is ack-pending");
    assert_eq!(fetch(&mut broker, 60).attempt, 3);
}

/// pg-visibility names a row by its id alone, like `DELETE FROM jobs WHERE id = $1`: once the
/// row is gone (acked) or moved (dead-lettered), a second delete changes nothing and is
/// refused, unlike `unfenced-settle`, which accepts a settle whatever the record holds.
#[test]
fn pg_visibility_refuses_a_settle_once_the_row_is_gone() {
    for (variant, accepted) in [
        (Variant::PgVisibility, false),
        (Variant::UnfencedSettle, true),
    ] {
        let mut broker = broker(variant, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.ack(&l1, 10).expect("ack");
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        let again = broker.settle(&SettleRequest::new(&l1, nack, 20), 20);
        assert_eq!(again.is_ok(), accepted, "{variant}: {again:?}");
        let status = broker.status(0, 1).0;
        assert_eq!(status == Status::Acked, !accepted, "{variant}: {status:?}");
    }
}

/// pg-visibility's renew is `UPDATE … SET visible_at = now + extend WHERE id = $1`: a stale
/// holder hides the row again even after it became visible and was read by someone else;
/// pg-fenced refuses it (`WHERE id = $1 AND lease_id = $2`).
#[test]
fn pg_visibility_extends_a_row_another_worker_holds() {
    for (variant, accepted) in [(Variant::PgVisibility, true), (Variant::PgFenced, false)] {
        let mut broker = broker(variant, 1, 3);
        let l1 = fetch(&mut broker, 0);
        let l2 = fetch(&mut broker, LEASE_MS);
        let now = LEASE_MS + 10;
        let renew = SettleOp::Renew { extend_ms: 50 };
        let result = broker.settle(&SettleRequest::new(&l1, renew, now), now);
        assert_eq!(result.is_ok(), accepted, "{variant}: {result:?}");
        let holder = if accepted { l1.lease_id } else { l2.lease_id };
        assert!(
            matches!(broker.record(0, 1), Some(Record::Leased { lease_id, .. }) if *lease_id == holder),
            "{variant}: {:?}",
            broker.record(0, 1)
        );
    }
}

#[test]
fn rabbitmq_refuses_every_renew_and_changes_nothing() {
    deviates_exactly(&[Variant::RabbitMq, Variant::RabbitMqChannel], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        let renew = SettleOp::Renew { extend_ms: 50 };
        match broker.settle(&SettleRequest::new(&l1, renew, 10), 10) {
            Ok(Some(renewed)) => {
                // The renew mutants count the deadline from elsewhere (the test below).
                if !matches!(v, Variant::RenewFromDeadline | Variant::RenewWorkerClock) {
                    assert_eq!(renewed.deadline_ms, 60, "{v}");
                }
                false
            }
            Err(SettleError::Invalid(_)) => {
                assert_eq!(broker.next_deadline(), Some(l1.deadline_ms));
                true
            }
            other => panic!("{v}: {other:?}"),
        }
    });
}

#[test]
fn rabbitmq_delivers_returned_records_first_in_the_order_they_came_back() {
    // E1 and E2 leased; E2 expires first, then E1 is nacked: RabbitMQ's quorum queue hands out
    // E2, E1 (returns, in order), then E3; every other variant lowest seq first.
    deviates_exactly(&[Variant::RabbitMq, Variant::RabbitMqChannel], |v| {
        if v == Variant::RabbitMqChannel {
            // E1 and E2 share a channel there, and E2's timeout returns both: the order in
            // which a closed channel's deliveries come back is shown in rabbitmq_channel.rs.
            return true;
        }
        let mut broker = broker(v, 1, 3);
        for _ in 0..2 {
            broker.publish();
        }
        let l1 = broker
            .fetch(0, 1, 0, Some(LEASE_MS * 2))
            .expect("fetch")
            .remove(0);
        let l2 = fetch(&mut broker, 0);
        assert_eq!((l1.seq, l2.seq), (1, 2));
        assert_eq!(broker.expire_due(LEASE_MS).len(), 1, "{v}");
        broker.nack(&l1, LEASE_MS + 1, 0).expect("nack");
        let order: Vec<Seq> = (0..3)
            .map(|_| fetch(&mut broker, LEASE_MS * 2 + 2).seq)
            .collect();
        match order.as_slice() {
            [1, 2, 3] => false,
            [2, 1, 3] => true,
            other => panic!("{v}: {other:?}"),
        }
    });
}

#[test]
fn rabbitmq_requeues_a_nack_at_once_whatever_its_delay() {
    deviates_exactly(&[Variant::RabbitMq, Variant::RabbitMqChannel], |v| {
        let mut broker = broker(v, 1, 3);
        let l1 = fetch(&mut broker, 0);
        broker.nack(&l1, 10, 1_000).expect("nack");
        match broker.fetch(0, 1, 20, None).expect("fetch").as_slice() {
            [] => false,
            [lease] => {
                assert_eq!((lease.seq, lease.attempt), (1, 2));
                true
            }
            other => panic!("{v}: {other:?}"),
        }
    });
}

/// A renew at 10 ms extending by 50 ms, sent by a worker whose clock reads 40 ms: the contract's
/// deadline is 60 ms, with the timer re-armed there. `renew-from-deadline` counts from the
/// lease's deadline (100 ms: 150), `renew-worker-clock` from the worker's clock (90), and
/// `renew-keeps-timer` leaves the timer at the lease's first deadline.
#[test]
fn the_renew_mutants_deviate_exactly_in_the_renews_deadline_or_its_timer() {
    deviates_exactly(
        &[
            Variant::RabbitMq,
            Variant::RabbitMqChannel,
            Variant::RenewFromDeadline,
            Variant::RenewWorkerClock,
            Variant::RenewKeepsTimer,
        ],
        |v| {
            let mut broker = broker(v, 1, 3);
            let l1 = fetch(&mut broker, 0);
            let renew = SettleOp::Renew { extend_ms: 50 };
            let Ok(Some(renewed)) = broker.settle(&SettleRequest::new(&l1, renew, 40), 10) else {
                return true; // RabbitMQ refuses renews (the test above)
            };
            let expected = match v {
                Variant::RenewFromDeadline => l1.deadline_ms + 50,
                Variant::RenewWorkerClock => 90,
                _ => 60,
            };
            assert_eq!(renewed.deadline_ms, expected, "{v}");
            let timer = broker.next_deadline();
            renewed.deadline_ms != 60 || timer != Some(60)
        },
    );
}
