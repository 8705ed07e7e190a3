//! The pure broker against a recomputation from its own records, on seeded random runs of
//! every variant, and its operations one by one against docs/protocol.md.
//!
//! After every operation of a run: the fetch index names exactly the available records; the
//! unsettled count is the number of records neither acked nor dead-lettered; the frontier is
//! the settled prefix (the highest acked seq for `max-seen-frontier`); the timers are in
//! firing order, one per lease for the variants that cancel and re-arm them; a boxed view reads
//! like the broker; a clone is equal and hashes the same. At a restart, the restart that costs
//! what it restores equals the one that re-reads every record.

use leasehold_model::broker::{Broker, BrokerConfig, BrokerView, SettleRequest, Timer};
use leasehold_model::types::{
    GroupIx, Lease, LeaseId, Ms, Reason, Receipt, Record, Seq, SettleError, SettleOp, Status,
};
use leasehold_model::Variant;
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

const LEASE_MS: Ms = 100;

use crate::support::published;

fn broker(variant: Variant, groups: usize, events: u32, max_attempts: u32) -> Broker {
    published::published(variant, groups, LEASE_MS, events, max_attempts)
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

fn fetch(broker: &mut Broker, group: GroupIx, now_ms: Ms) -> Lease {
    let leases = broker.fetch(group, 1, now_ms, None).expect("fetch");
    assert_eq!(leases.len(), 1, "nothing to fetch at {now_ms}");
    leases[0]
}

// --- Recomputation from the records ---------------------------------------------------------

/// Checks everything the broker keeps besides its records against the records.
fn check_derived(broker: &Broker) {
    let variant = broker.variant();
    let groups = BrokerView::group_count(broker);
    assert_eq!(groups, broker.config().group_count);
    let count = broker.event_count();
    let index = broker.fetch_index();
    assert_eq!(index.len(), groups);
    let mut unsettled = 0;
    for (group, named) in index.iter().enumerate() {
        let records = broker.records(group);
        assert_eq!(records.len(), count as usize, "every group has every event");
        let available: Vec<Seq> = (1..=count)
            .filter(|&seq| matches!(records[seq as usize - 1], Record::Available { .. }))
            .collect();
        // In return order (RabbitMQ) the index is state, not an index: compare as sets.
        let mut named = named.clone();
        if variant.returns_first() {
            named.sort_unstable();
        }
        assert_eq!(
            named, available,
            "{variant}: the fetch index of group {group}"
        );
        unsettled += records.iter().filter(|r| !r.is_settled()).count() as u64;
        let expected_frontier = if variant == Variant::MaxSeenFrontier {
            records
                .iter()
                .rposition(|r| *r == Record::Acked)
                .map_or(0, |i| i as Seq + 1)
        } else {
            records
                .iter()
                .position(|r| !r.is_settled())
                .map_or(count, |i| i as Seq)
        };
        if matches!(
            variant,
            Variant::UnfencedSettle | Variant::NackOnAmbiguous | Variant::OnlyAckFenced
        ) {
            // An unfenced nack can reopen a settled record; the frontier does not go back
            // (the oracle reports that as I3/I4), so it is at least the settled prefix.
            assert!(broker.frontier(group) >= expected_frontier, "{variant}");
        } else {
            assert_eq!(
                broker.frontier(group),
                expected_frontier,
                "{variant}: frontier of group {group} in {records:?}"
            );
        }
    }
    assert_eq!(broker.unsettled_count(), unsettled, "{variant}");
    assert_eq!(BrokerView::unsettled_count(broker), unsettled);
    assert_eq!(broker.all_settled(), unsettled == 0);
    let timers = broker.timers();
    assert!(timers.windows(2).all(|w| w[0] <= w[1]), "{timers:?}");
    let first_timer = timers.first().map(|t| t.deadline_ms);
    if variant.channel_scoped() {
        // A channel's close returns its deliveries at once; their deadlines stay due until
        // an `expire_due` reports them.
        if let Some(first) = first_timer {
            assert!(
                broker.next_deadline().is_some_and(|d| d <= first),
                "{variant}"
            );
        }
    } else {
        assert_eq!(broker.next_deadline(), first_timer, "{variant}");
    }
    if !matches!(
        variant,
        Variant::StaleTimer | Variant::StuckLease | Variant::RenewKeepsTimer
    ) {
        // One timer per lease, armed for its lease id and deadline.
        let mut leases = BTreeSet::new();
        for group in 0..groups {
            for (index, record) in broker.records(group).iter().enumerate() {
                if let Record::Leased {
                    lease_id,
                    deadline_ms,
                    ..
                } = *record
                {
                    leases.insert(Timer {
                        deadline_ms,
                        group: group as u32,
                        seq: index as Seq + 1,
                        lease_id,
                    });
                }
            }
        }
        let armed: BTreeSet<Timer> = timers.iter().copied().collect();
        assert_eq!(armed.len(), timers.len(), "{variant}: a duplicate timer");
        assert_eq!(armed, leases, "{variant}: timers and leases");
    }
    check_views(broker);
    let copy = broker.clone();
    assert_eq!(&copy, broker);
    assert_eq!(hash_of(&copy), hash_of(broker));
    assert_eq!(copy.fetch_index(), index);
}

/// A boxed view, sized or not, answers what the broker answers.
fn check_views(broker: &Broker) {
    let boxed: Box<Broker> = Box::new(broker.clone());
    let dynamic: Box<dyn BrokerView> = Box::new(broker.clone());
    let count = broker.event_count();
    fn same(view: &impl BrokerView, broker: &Broker, count: Seq) {
        assert_eq!(view.group_count(), BrokerView::group_count(broker));
        assert_eq!(view.event_count(), count);
        assert_eq!(view.unsettled_count(), broker.unsettled_count());
        for group in 0..BrokerView::group_count(broker) {
            assert_eq!(view.frontier(group), broker.frontier(group));
            for seq in 1..=count {
                let (status, reason) = broker.status(group, seq);
                assert_eq!(view.status(group, seq), (status, reason.clone()));
                assert_eq!(view.status_kind(group, seq), status);
                assert_eq!(
                    view.dead_letter_reason(group, seq),
                    broker.dead_letter_reason(group, seq)
                );
                if let Some(reason) = reason {
                    assert!(view.dead_letter_reason_is(group, seq, &reason));
                    assert!(!view.dead_letter_reason_is(group, seq, "not the reason"));
                } else {
                    assert!(!view.dead_letter_reason_is(group, seq, "max attempts"));
                }
            }
            let mut out = vec![Status::Dropped; count as usize + 1];
            let written = view.status_kinds(group, 1, &mut out);
            assert_eq!(written, count as usize);
            for (offset, status) in out[..written].iter().enumerate() {
                assert_eq!(*status, broker.status_kind(group, offset as Seq + 1));
            }
        }
    }
    same(&boxed, broker, count);
    same(&dynamic, broker, count);
}

/// A small deterministic generator (xorshift), so that every run is the same.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One seeded random run of `variant`: publishes, fetches, settles (current and stale),
/// expiries, the untimed model's time steps, restarts.
fn random_run(variant: Variant, seed: u64, steps: usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let groups = 1 + (seed % 2) as usize;
    let mut broker = broker(variant, groups, 1, 2);
    let mut now: Ms = 0;
    let mut held: Vec<Lease> = Vec::new();
    let mut ids = BTreeSet::new();
    for _ in 0..steps {
        let group = rng.below(groups as u64) as GroupIx;
        match rng.below(12) {
            0 if broker.event_count() < 5 => {
                let before = broker.unsettled_count();
                assert_eq!(broker.publish(), broker.event_count());
                assert_eq!(broker.unsettled_count(), before + groups as u64);
            }
            1 | 2 => {
                let limit = 1 + rng.below(2) as usize;
                let lease_ms = [None, Some(0), Some(30), Some(250)][rng.below(4) as usize];
                let leases = broker.fetch(group, limit, now, lease_ms).expect("fetch");
                assert!(leases.len() <= limit);
                for lease in leases {
                    assert_eq!(lease.deadline_ms, now + lease_ms.unwrap_or(LEASE_MS));
                    assert_eq!(lease.receipt, broker.receipt(lease.seq));
                    if variant.lease_ids_durable() {
                        assert!(ids.insert(lease.lease_id), "{variant}: id reused");
                    }
                    held.push(lease);
                }
            }
            3 if !held.is_empty() => {
                let lease = held[rng.below(held.len() as u64) as usize];
                let op = match rng.below(4) {
                    0 => SettleOp::Ack,
                    1 => SettleOp::Nack {
                        delay_ms: rng.below(60),
                        reason: None,
                    },
                    2 => SettleOp::Reject {
                        reason: Reason::new("poison"),
                    },
                    _ => SettleOp::Renew {
                        extend_ms: rng.below(150),
                    },
                };
                let clock = now.saturating_sub(rng.below(80));
                if let Ok(Some(renewed)) =
                    broker.settle(&SettleRequest::new(&lease, op, clock), now)
                {
                    assert_eq!(renewed.lease_id, lease.lease_id);
                    for copy in &mut held {
                        if copy.lease_id == lease.lease_id && copy.seq == lease.seq {
                            *copy = renewed;
                        }
                    }
                }
            }
            4 => {
                now += rng.below(120);
                let expired = broker.expire_due(now);
                assert!(expired.windows(2).all(|w| w[0] <= w[1]));
                assert!(expired.iter().all(|e| e.deadline_ms <= now));
            }
            5 => {
                let mut expected = broker.clone();
                expected.restart_by_scan();
                broker.restart();
                assert_eq!(broker, expected, "{variant}: restart and restart by scan");
                assert_eq!(broker.fetch_index(), expected.fetch_index());
                assert_eq!(broker.unsettled_count(), expected.unsettled_count());
                check_derived(&expected);
            }
            6 => {
                let seq = 1 + rng.below(u64::from(broker.event_count().max(1))) as Seq;
                let _ = broker.lapse(group, seq, now);
            }
            7 => broker.release_delays(now),
            8 => {
                let seq = 1 + rng.below(u64::from(broker.event_count().max(1))) as Seq;
                let _ = broker.expire(group, seq, now);
            }
            9 if !broker.timers().is_empty() => {
                let timers = broker.timers();
                let timer = timers[rng.below(timers.len() as u64) as usize];
                let _ = broker.fire_timer(&timer);
            }
            10 => {
                if let Some(lease) = broker.fetch_one(group, now, None).expect("fetch_one") {
                    held.push(lease);
                }
            }
            _ => now += rng.below(40),
        }
        check_derived(&broker);
    }
}

#[test]
fn every_variants_derived_state_matches_its_records_on_random_runs() {
    for &variant in Variant::ALL {
        for seed in 1..=12 {
            random_run(variant, seed, 60);
        }
    }
}

// --- Operations one by one -----------------------------------------------------------------

#[test]
fn fetch_leases_at_most_limit_lowest_seq_first_and_refuses_bad_requests() {
    let mut broker = broker(Variant::Fenced, 2, 3, 3);
    assert!(matches!(
        broker.fetch(2, 1, 0, None),
        Err(SettleError::Invalid(_))
    ));
    assert!(matches!(
        broker.fetch_one(2, 0, None),
        Err(SettleError::Invalid(_))
    ));
    assert!(matches!(
        broker.fetch(0, 0, 0, None),
        Err(SettleError::Invalid(_))
    ));
    let leases = broker.fetch(0, 2, 0, None).expect("fetch");
    assert_eq!(leases.iter().map(|l| l.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        leases.iter().map(|l| l.lease_id).collect::<Vec<_>>(),
        [LeaseId(1), LeaseId(2)]
    );
    assert_eq!(broker.next_lease_id(), LeaseId(3));
    assert!(leases
        .iter()
        .all(|l| l.attempt == 1 && l.deadline_ms == LEASE_MS));
    // Nack event 2 for redelivery at once: it is fetched before event 3.
    broker.nack(&leases[1], 10, 0).expect("nack");
    let again = broker.fetch(0, 5, 10, Some(7)).expect("fetch");
    assert_eq!(
        again.iter().map(|l| (l.seq, l.attempt)).collect::<Vec<_>>(),
        [(2, 2), (3, 1)]
    );
    assert!(again.iter().all(|l| l.deadline_ms == 17));
    // Group 1 is independent.
    let other = broker
        .fetch_one(1, 15, None)
        .expect("fetch_one")
        .expect("a lease");
    assert_eq!((other.group, other.seq, other.lease_id), (1, 1, LeaseId(5)));
    assert_eq!(broker.fetch_one(0, 15, None).expect("fetch_one"), None);
    // At 17 the two short leases expire and are fetched again, lowest seq first.
    let third = broker
        .fetch_one(0, 17, None)
        .expect("fetch_one")
        .expect("a lease");
    assert_eq!((third.seq, third.attempt), (2, 3));
}

#[test]
fn a_failed_settle_returns_its_error_and_changes_nothing() {
    let mut broker = broker(Variant::Fenced, 1, 1, 3);
    let l1 = fetch(&mut broker, 0, 0);
    let mut stale = l1;
    stale.lease_id = LeaseId(99);
    let before = broker.clone();
    assert_eq!(broker.ack(&stale, 10), Err(SettleError::StaleLease));
    assert_eq!(broker.nack(&stale, 10, 0), Err(SettleError::StaleLease));
    assert_eq!(broker.reject(&stale, 10, "x"), Err(SettleError::StaleLease));
    assert_eq!(broker.renew(&stale, 10, 50), Err(SettleError::StaleLease));
    // At its deadline the lease is no longer valid.
    assert_eq!(broker.ack(&l1, LEASE_MS), Err(SettleError::StaleLease));
    let mut missing = l1;
    missing.seq = 2;
    assert!(matches!(
        broker.ack(&missing, 10),
        Err(SettleError::Invalid(_))
    ));
    missing.seq = 0;
    assert!(matches!(
        broker.ack(&missing, 10),
        Err(SettleError::Invalid(_))
    ));
    assert_eq!(broker, before);
    assert_eq!(broker.timers(), before.timers());
    // A renew moves the deadline, keeps the id and re-arms the timer.
    let renewed = broker.renew(&l1, 50, 80).expect("renew");
    assert_eq!(
        renewed,
        Lease {
            deadline_ms: 130,
            ..l1
        }
    );
    assert_eq!(broker.timers().len(), 1);
    assert_eq!(broker.timers()[0].deadline_ms, 130);
    assert_eq!(broker.ack(&renewed, 120), Ok(()));
    assert_eq!(broker.status_kind(0, 1), Status::Acked);
    assert!(broker.timers().is_empty());
}

#[test]
fn a_nack_of_the_last_attempt_dead_letters_with_max_attempts_or_the_nacks_reason() {
    let mut broker = broker(Variant::Fenced, 1, 2, 2);
    let l1 = fetch(&mut broker, 0, 0);
    broker.nack(&l1, 10, 0).expect("nack");
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 10
        })
    );
    let l2 = fetch(&mut broker, 0, 10);
    assert_eq!((l2.seq, l2.attempt), (1, 2));
    broker.nack(&l2, 20, 0).expect("nack");
    assert_eq!(
        broker.status(0, 1),
        (Status::DeadLettered, Some("max attempts".to_string()))
    );
    // A nack that names its reason dead-letters with it.
    let l3 = fetch(&mut broker, 0, 20);
    let l3 = broker.renew(&l3, 20, 100).expect("renew");
    broker.nack(&l3, 30, 0).expect("nack");
    let l4 = fetch(&mut broker, 0, 30);
    let op = SettleOp::Nack {
        delay_ms: 0,
        reason: Some(Reason::new("bad payload")),
    };
    broker
        .settle(&SettleRequest::new(&l4, op, 40), 40)
        .expect("nack");
    assert_eq!(
        broker.dead_letter_reason(0, 2),
        Some(Reason::new("bad payload"))
    );
    assert_eq!(broker.frontier(0), 2);
    assert!(broker.all_settled());
}

#[test]
fn the_redis_fences_check_the_entry_id() {
    for variant in [Variant::RedisStreams, Variant::RedisStreamsFenced] {
        let mut broker = broker(variant, 1, 2, 3);
        let l1 = fetch(&mut broker, 0, 0);
        assert_eq!(l1.receipt, Some(Receipt(1)));
        let mut other_entry = l1;
        other_entry.receipt = Some(Receipt(2));
        assert_eq!(
            broker.ack(&other_entry, 10),
            Err(SettleError::ReceiptMismatch),
            "{variant}"
        );
        other_entry.receipt = None;
        assert_eq!(
            broker.ack(&other_entry, 10),
            Err(SettleError::ReceiptMismatch)
        );
        // Event 2 was never delivered: nothing is pending to settle.
        let never = Lease {
            seq: 2,
            receipt: Some(Receipt(2)),
            ..l1
        };
        assert_eq!(
            broker.ack(&never, 10),
            Err(SettleError::StaleLease),
            "{variant}"
        );
        broker.ack(&l1, 10).expect("ack");
        // A settled entry is no longer pending.
        assert_eq!(
            broker.ack(&l1, 20),
            Err(SettleError::StaleLease),
            "{variant}"
        );
    }
    // Plain Redis: an entry nacked back to idle-pending can still be acked by its id.
    let mut broker = broker(Variant::RedisStreams, 1, 1, 3);
    let l1 = fetch(&mut broker, 0, 0);
    broker.nack(&l1, 10, 0).expect("nack");
    assert_eq!(broker.ack(&l1, 20), Ok(()));
}

#[test]
fn expiry_fires_at_the_deadline_in_firing_order() {
    let mut broker = broker(Variant::Fenced, 2, 2, 1);
    let a = broker.fetch(0, 2, 0, Some(50)).expect("fetch");
    let b = fetch(&mut broker, 1, 10);
    assert_eq!(broker.expire_due(49), vec![]);
    let expired = broker.expire_due(110);
    let order: Vec<_> = expired
        .iter()
        .map(|e| (e.deadline_ms, e.group, e.seq, e.lease_id, e.dead_lettered))
        .collect();
    assert_eq!(
        order,
        [
            (50, 0, 1, a[0].lease_id, true),
            (50, 0, 2, a[1].lease_id, true),
            (110, 1, 1, b.lease_id, true),
        ]
    );
    assert!(broker.timers().is_empty());
    assert_eq!(broker.next_deadline(), None);
    assert_eq!(broker.frontier(0), 2);
}

#[test]
fn the_untimed_expiry_acts_only_on_an_armed_record() {
    let mut broker = broker(Variant::Fenced, 2, 2, 3);
    assert_eq!(broker.expire(0, 1, 0), None);
    let l1 = fetch(&mut broker, 0, 0);
    let l2 = fetch(&mut broker, 1, 0);
    assert_eq!(
        broker.expire(0, 2, 5),
        None,
        "event 2 of group 0 is not leased"
    );
    assert_eq!(broker.expire(1, 2, 5), None);
    let expired = broker.expire(0, 1, 5).expect("expires");
    assert_eq!(
        (expired.lease_id, expired.deadline_ms),
        (l1.lease_id, LEASE_MS)
    );
    assert!(!expired.dead_lettered);
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 5
        })
    );
    assert_eq!(
        broker.record(1, 1).map(Record::status),
        Some(Status::Leased)
    );
    assert_eq!(broker.timers().len(), 1);
    assert_eq!(broker.timers()[0].lease_id, l2.lease_id);
    // Firing a timer by hand expires its lease; a timer no longer pending fires nothing.
    let timer = broker.timers()[0];
    let fired = broker.fire_timer(&timer).expect("fires");
    assert_eq!(
        (fired.group, fired.seq, fired.lease_id),
        (1, 1, l2.lease_id)
    );
    assert_eq!(broker.fire_timer(&timer), None);
    assert_eq!(broker.status_kind(1, 1), Status::Available);
}

/// `stuck-lease` does not re-arm expiry after a restart (docs/variants.md: the lease is never
/// reclaimed): the untimed expiry of its stuck record does nothing, even while another record
/// of the same group has a timer pending.
#[test]
fn the_untimed_expiry_ignores_a_timer_of_another_record_of_the_group() {
    let mut broker = broker(Variant::StuckLease, 1, 2, 3);
    let stuck = fetch(&mut broker, 0, 0);
    broker.restart();
    assert!(broker.timers().is_empty(), "stuck-lease re-arms nothing");
    let armed = fetch(&mut broker, 0, 0);
    assert_eq!((stuck.seq, armed.seq), (1, 2));
    assert_eq!(broker.timers().len(), 1);
    assert_eq!(broker.expire(0, 1, 5), None, "event 1 has no timer");
    assert_eq!(broker.status_kind(0, 1), Status::Leased);
    assert_eq!(broker.timers().len(), 1, "event 2's timer is still pending");
    assert!(broker.expire(0, 2, 5).is_some());
}

#[test]
fn a_stale_timer_fires_nothing_once_its_lease_is_settled() {
    let mut broker = broker(Variant::StaleTimer, 1, 1, 3);
    let l1 = fetch(&mut broker, 0, 0);
    broker.ack(&l1, 10).expect("ack");
    let timer = broker.timers()[0];
    assert_eq!(broker.fire_timer(&timer), None);
    assert_eq!(broker.status_kind(0, 1), Status::Acked);
}

#[test]
fn lapse_brings_the_next_deadline_of_a_record_to_now() {
    let mut broker = broker(Variant::Fenced, 2, 2, 3);
    assert_eq!(broker.lapse(0, 1, 0), None, "no timer");
    let l1 = fetch(&mut broker, 0, 0);
    let _other = fetch(&mut broker, 1, 0);
    assert_eq!(broker.lapse(0, 2, 10), None, "no timer on event 2");
    assert_eq!(broker.lapse(0, 1, 40), Some(true));
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Leased {
            lease_id: l1.lease_id,
            attempts: 1,
            deadline_ms: 40
        })
    );
    assert_eq!(broker.next_deadline(), Some(40));
    assert_eq!(broker.timers()[0].group, 0);
    assert_eq!(broker.timers()[1].deadline_ms, LEASE_MS);
    // The timer is due now: nothing is left to lapse on that record.
    assert_eq!(broker.lapse(0, 1, 40), None);
    assert_eq!(broker.ack(&l1, 40), Err(SettleError::StaleLease));
    let expired = broker.expire_due(40);
    assert_eq!(expired.len(), 1);
    assert_eq!((expired[0].group, expired[0].seq), (0, 1));
    // A timer that outlived its lease (stale-timer) lapses without touching the record.
    let mut broker = self::broker(Variant::StaleTimer, 1, 1, 3);
    let l1 = fetch(&mut broker, 0, 0);
    broker.ack(&l1, 10).expect("ack");
    assert_eq!(broker.lapse(0, 1, 20), Some(false));
    assert_eq!(broker.timers()[0].deadline_ms, 20);
    assert_eq!(broker.status_kind(0, 1), Status::Acked);
}

#[test]
fn release_delays_makes_every_delayed_record_fetchable_now() {
    let mut broker = broker(Variant::Fenced, 1, 3, 3);
    let leases = broker.fetch(0, 3, 0, None).expect("fetch");
    broker.nack(&leases[1], 10, 500).expect("nack");
    broker.nack(&leases[2], 10, 5).expect("nack");
    assert_eq!(
        broker.fetch(0, 1, 20, None).expect("fetch")[0].seq,
        3,
        "event 2 is still delayed"
    );
    broker.release_delays(30);
    assert_eq!(
        broker.record(0, 2),
        Some(&Record::Available {
            attempts: 1,
            not_before_ms: 30
        })
    );
    assert_eq!(broker.fetch(0, 1, 30, None).expect("fetch")[0].seq, 2);
}

#[test]
fn a_restart_re_arms_the_lease_an_undone_ack_restores() {
    let mut broker = broker(Variant::VolatileAck, 1, 3, 3);
    let leases = broker.fetch(0, 3, 0, None).expect("fetch");
    broker.ack(&leases[1], 10).expect("ack");
    broker.ack(&leases[0], 10).expect("ack");
    assert!(broker.timers().iter().all(|t| t.seq == 3));
    assert_eq!(broker.frontier(0), 2);
    broker.restart();
    assert_eq!(broker.frontier(0), 0);
    for lease in &leases {
        assert_eq!(
            broker.record(0, lease.seq),
            Some(&Record::Leased {
                lease_id: lease.lease_id,
                attempts: 1,
                deadline_ms: LEASE_MS
            })
        );
    }
    let armed: Vec<_> = broker
        .timers()
        .iter()
        .map(|t| (t.seq, t.lease_id))
        .collect();
    assert_eq!(
        armed,
        leases
            .iter()
            .map(|l| (l.seq, l.lease_id))
            .collect::<Vec<_>>()
    );
    assert_eq!(broker.unsettled_count(), 3);
    let next = broker.next_lease_id();
    assert_eq!(next, LeaseId(4), "ids stay unique after a restart");
    assert_eq!(broker.expire_due(LEASE_MS).len(), 3);
}

#[test]
fn the_order_of_acks_not_yet_durable_does_not_make_two_states() {
    let run = |first: usize, second: usize| {
        let mut broker = broker(Variant::VolatileAck, 1, 3, 3);
        let leases = broker.fetch(0, 3, 0, None).expect("fetch");
        broker.ack(&leases[first], 10).expect("ack");
        broker.ack(&leases[second], 10).expect("ack");
        broker
    };
    let a = run(0, 2);
    let b = run(2, 0);
    assert_eq!(a, b);
    assert_eq!(hash_of(&a), hash_of(&b));
}

#[test]
fn a_restart_of_volatile_publish_loses_only_the_events_never_flushed() {
    let mut broker = broker(Variant::VolatilePublish, 2, 2, 3);
    let l1 = fetch(&mut broker, 0, 0); // a fetch flushes events 1 and 2
    broker.publish();
    broker.publish();
    assert_eq!(broker.unsettled_count(), 8);
    broker.restart();
    assert_eq!(broker.event_count(), 2);
    assert_eq!(broker.unsettled_count(), 4);
    assert_eq!(broker.fetch_index(), vec![vec![2], vec![1, 2]]);
    broker.ack(&l1, 10).expect("ack");
    let leases = broker.fetch(0, 5, 10, None).expect("fetch");
    assert_eq!(leases.iter().map(|l| l.seq).collect::<Vec<_>>(), [2]);
}

#[test]
fn lease_ids_are_visited_and_renamed_everywhere_the_state_holds_them() {
    let mut broker = broker(Variant::VolatileAck, 1, 2, 3);
    let leases = broker.fetch(0, 2, 0, None).expect("fetch");
    broker.ack(&leases[0], 10).expect("ack"); // its lease lives on in the undo entry
    let mut seen = Vec::new();
    broker.for_each_lease_id(|id| seen.push(id.0));
    // Record 2's lease, the undone ack's prior lease, record 2's timer, the counter.
    assert_eq!(seen, [2, 1, 2, 3]);
    broker.rename_lease_ids(|id| LeaseId(id.0 * 10));
    let mut renamed = Vec::new();
    broker.for_each_lease_id(|id| renamed.push(id.0));
    assert_eq!(renamed, [20, 10, 20, 30]);
    assert_eq!(broker.next_lease_id(), LeaseId(30));
    assert_eq!(broker.timers()[0].lease_id, LeaseId(20));
    broker.restart();
    assert_eq!(
        broker.record(0, 1),
        Some(&Record::Leased {
            lease_id: LeaseId(10),
            attempts: 1,
            deadline_ms: LEASE_MS
        })
    );
}

#[test]
fn distinct_brokers_are_unequal_and_hash_apart() {
    // Small states that differ in one thing each: records, frontier, timers, counter, config.
    let mut states: Vec<Broker> = Vec::new();
    for &variant in &[
        Variant::Fenced,
        Variant::VolatileAck,
        Variant::MaxSeenFrontier,
    ] {
        for groups in 1..=2 {
            let mut broker = broker(variant, groups, 0, 2);
            states.push(broker.clone());
            for step in 0..8u64 {
                match step % 4 {
                    0 => {
                        broker.publish();
                    }
                    1 => {
                        let _ = broker.fetch(groups - 1, 1, step * 10, Some(step * 7));
                    }
                    2 => {
                        if let Some(lease) = broker
                            .fetch(0, 1, step * 10, None)
                            .ok()
                            .and_then(|l| l.first().copied())
                        {
                            broker.ack(&lease, step * 10).expect("ack");
                        }
                    }
                    _ => {
                        let _ = broker.expire(0, 1, step);
                    }
                }
                states.push(broker.clone());
            }
        }
    }
    let mut other = broker(Variant::Fenced, 1, 0, 3);
    states.push(other.clone());
    other = Broker::new(BrokerConfig {
        lease_ms: 7,
        ..*other.config()
    });
    states.push(other);
    for (i, a) in states.iter().enumerate() {
        for b in &states[i + 1..] {
            if a == b {
                assert_eq!(hash_of(a), hash_of(b));
            } else if a.config() == b.config() {
                // The configuration is left out of the hash (the same in every state of a
                // search): only brokers of one configuration must hash apart.
                assert_ne!(hash_of(a), hash_of(b), "{a:?}\n{b:?}");
            }
        }
    }
    let distinct = states
        .iter()
        .enumerate()
        .filter(|(i, a)| states[..*i].iter().all(|b| b != *a))
        .count();
    assert!(distinct > 40, "{distinct}");
}

#[test]
fn states_that_differ_in_one_field_are_unequal() {
    let base = broker(Variant::VolatileAck, 2, 2, 3);
    let mut different = Vec::new();
    // A record.
    let mut b = base.clone();
    let _ = fetch(&mut b, 1, 0);
    different.push(b);
    // The lease-id counter only.
    let mut b = base.clone();
    b.rename_lease_ids(|id| LeaseId(id.0 + 5));
    assert_eq!(b.next_lease_id(), LeaseId(6));
    different.push(b);
    // An ack not yet durable, against the same records with the ack made durable.
    let mut c = base.clone();
    let l = fetch(&mut c, 0, 0);
    let _ = fetch(&mut c, 1, 0);
    c.ack(&l, 1).expect("ack");
    let mut d = base.clone();
    let l = fetch(&mut d, 0, 0);
    d.ack(&l, 1).expect("ack");
    let _ = fetch(&mut d, 1, 0);
    assert_eq!(c.records(0), d.records(0));
    assert_eq!(c.records(1), d.records(1));
    assert_eq!(c.timers(), d.timers());
    different.push(c);
    different.push(d);
    // A timer moved by lapse.
    let mut e = base.clone();
    let _ = fetch(&mut e, 0, 0);
    let mut f = e.clone();
    f.lapse(0, 1, 50);
    different.push(e);
    different.push(f);
    // A timer moved by lapse, the records unchanged (stale-timer).
    let mut g = broker(Variant::StaleTimer, 2, 2, 3);
    let l = fetch(&mut g, 0, 0);
    g.ack(&l, 1).expect("ack");
    let mut h = g.clone();
    assert_eq!(h.lapse(0, 1, 50), Some(false));
    assert_eq!(g.records(0), h.records(0));
    different.push(g);
    different.push(h);
    // Another configuration.
    different.push(broker(Variant::Fenced, 2, 2, 3));
    different.push(broker(Variant::VolatileAck, 2, 2, 4));
    different.push(broker(Variant::VolatileAck, 1, 2, 3));
    different.push(broker(Variant::VolatileAck, 2, 3, 3));
    different.push(base.clone());
    for (i, a) in different.iter().enumerate() {
        assert_eq!(a, &a.clone());
        for (j, b) in different.iter().enumerate() {
            assert_eq!(a == b, i == j, "{i} {j}\n{a:?}\n{b:?}");
            if a.config() == b.config() {
                assert_eq!(hash_of(a) == hash_of(b), i == j, "{i} {j}");
            }
        }
        // Cloning into a broker of any shape gives an equal one.
        for target in &different {
            let mut copy = target.clone();
            copy.clone_from(a);
            assert_eq!(&copy, a);
            assert_eq!(copy.fetch_index(), a.fetch_index());
            assert_eq!(copy.unsettled_count(), a.unsettled_count());
            assert_eq!(copy.timers(), a.timers());
        }
    }
}

#[test]
fn timers_hash_apart_when_they_name_different_records() {
    let timer = |group: u32, seq: Seq| Timer {
        deadline_ms: 100,
        group,
        seq,
        lease_id: LeaseId(1),
    };
    let timers = [
        timer(0, 1),
        timer(1, 0),
        timer(0, 2),
        timer(1, 1),
        timer(2, 1),
    ];
    for (i, a) in timers.iter().enumerate() {
        for b in &timers[i + 1..] {
            assert_ne!(hash_of(a), hash_of(b), "{a:?} {b:?}");
        }
    }
    let later = Timer {
        deadline_ms: 101,
        ..timer(0, 1)
    };
    let other_lease = Timer {
        lease_id: LeaseId(2),
        ..timer(0, 1)
    };
    assert_ne!(hash_of(&later), hash_of(&timer(0, 1)));
    assert_ne!(hash_of(&other_lease), hash_of(&timer(0, 1)));
    assert_eq!(hash_of(&timer(0, 1)), hash_of(&timer(0, 1)));
}

#[test]
fn the_broker_reports_its_configuration_and_records() {
    let config = BrokerConfig {
        group_count: 2,
        lease_ms: 42,
        max_attempts: 5,
        variant: Variant::RedisStreamsFenced,
    };
    let mut broker = Broker::new(config);
    assert_eq!(broker.config(), &config);
    assert_eq!(broker.variant(), Variant::RedisStreamsFenced);
    assert_eq!(broker.publish(), 1);
    assert_eq!(broker.publish(), 2);
    assert_eq!(broker.records(1).len(), 2);
    assert_eq!(broker.record(0, 0), None);
    assert_eq!(broker.record(2, 1), None);
    assert_eq!(broker.record(0, 3), None);
    assert_eq!(
        broker.record(1, 2),
        Some(&Record::Available {
            attempts: 0,
            not_before_ms: 0
        })
    );
    assert_eq!(broker.status(0, 3), (Status::Dropped, None));
    assert_eq!(broker.status_kind(0, 3), Status::Dropped);
    assert_eq!(broker.unsettled_count(), 4);
    assert!(!broker.all_settled());
    let lease = fetch(&mut broker, 1, 0);
    assert_eq!(lease.deadline_ms, 42);
    // status_kinds from a later seq, into a short buffer, and past the end.
    let mut out = [Status::Acked; 1];
    assert_eq!(broker.status_kinds(1, 2, &mut out), 1);
    assert_eq!(out, [Status::Available]);
    let mut out = [Status::Acked; 4];
    assert_eq!(broker.status_kinds(1, 1, &mut out), 2);
    assert_eq!(out[..2], [Status::Leased, Status::Available]);
    assert_eq!(broker.status_kinds(1, 3, &mut out), 0);
    assert_eq!(broker.status_kinds(1, 0, &mut out), 0);
    assert_eq!(broker.status_kinds(2, 1, &mut out), 0);
}
