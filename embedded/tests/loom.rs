//! The loom suite: every interleaving (up to a preemption bound) of the races that matter, on
//! the very code that ships (only the sync primitives are swapped for loom's).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p leasehold-embedded --test loom --release`
//!
//! Each race asserts the protocol's invariants inside the interleaving (right after each
//! operation returns) and after the joins: at most one winner per record, no stale settle
//! counted, the frontier sound. Each has a deliberately broken twin (`PlantedBug`) in a
//! `should_panic` test, proving the suite can fail.
//!
//! loom is configured so that it cannot pass silently on its own caps: the preemption bound is
//! explicit ([`PREEMPTION_BOUND`]), there is no duration cap and no permutation cap (loom returns
//! success when it hits either), environment variables cannot change that, and each test prints
//! and checks the number of executions explored.
#![cfg(loom)]

use leasehold_embedded::{EmbeddedBroker, ManualClock, PlantedBug};
use leasehold_model::{BrokerConfig, BrokerView, Lease, SettleError, Status, Variant};
use loom::thread;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Preemptions loom explores per execution. Every model below saturates before it: the
/// number of executions stops growing at 8 preemptions or fewer (measured: bounds 3 / 5 / 8 /
/// 12 / 20 give 176 / 437 / 561 / 561 / 561 executions for the ack race, 438 / 1764 / 3492 /
/// 3720 / 3720 for the fetch race). [`explore`] checks this on every run by exploring once more
/// with [`PREEMPTION_BOUND_CHECK`] and requiring the same count, so the bound provably cuts
/// nothing. Each broken twin needs at most 2 preemptions to show its bug.
///
/// Every race has two threads besides the main one. A three-thread race (ack, expiry and
/// re-fetch each on its own thread) did not finish within 5 minutes even at bound 3 — the
/// back-off loops of three threads multiply the schedules — so it is not in the suite; the
/// ack race below covers the same record race with the expiry run inside the re-fetch.
const PREEMPTION_BOUND: usize = 12;

/// Branches loom allows in one execution: its default, set explicitly so that an environment
/// variable cannot change it. Exceeding it fails the test, never passes it.
const MAX_BRANCHES: usize = 1_000;

/// The larger bound that must explore exactly as many executions as [`PREEMPTION_BOUND`].
const PREEMPTION_BOUND_CHECK: usize = 16;

/// Runs `model` under loom with the suite's fixed configuration, twice: at
/// [`PREEMPTION_BOUND`] and at [`PREEMPTION_BOUND_CHECK`]; requires both to explore the same
/// number of executions (so the bound cut nothing) and returns it.
fn explore(name: &str, model: impl Fn() + Sync + Send + 'static) -> usize {
    let (bound, check_bound) = (PREEMPTION_BOUND, PREEMPTION_BOUND_CHECK);
    let model = Arc::new(model);
    let executions = explore_bounded(bound, model.clone());
    eprintln!("loom {name}: {executions} executions explored (preemption bound {bound}, no caps)");
    assert!(
        executions > 1,
        "loom explored a single execution: no race was checked"
    );
    let check = explore_bounded(check_bound, model);
    assert_eq!(
        executions, check,
        "loom {name}: preemption bound {bound} cuts the exploration \
         ({check_bound} explores {check})"
    );
    executions
}

fn explore_bounded<F: Fn() + Sync + Send + 'static>(bound: usize, model: Arc<F>) -> usize {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.max_permutations = None;
    builder.max_duration = None;
    builder.checkpoint_file = None;
    builder.max_branches = MAX_BRANCHES;
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = executions.clone();
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    executions.load(Ordering::Relaxed)
}

fn broker(max_attempts: u32, bug: Option<PlantedBug>) -> Arc<EmbeddedBroker> {
    let config = BrokerConfig {
        group_count: 1,
        lease_ms: 10,
        max_attempts,
        variant: Variant::Fenced,
    };
    let broker = EmbeddedBroker::new(&config, Arc::new(ManualClock::new(0))).expect("fenced");
    Arc::new(match bug {
        Some(bug) => broker.with_planted_bug(bug),
        None => broker,
    })
}

/// I4 as an observer sees it: every event at or below the frontier is settled (settled is
/// final, so reading the frontier first and the records after is sound).
fn assert_frontier_sound(broker: &EmbeddedBroker) {
    let frontier = broker.frontier(0);
    for seq in 1..=frontier {
        let (status, _) = broker.status(0, seq);
        assert!(
            matches!(status, Status::Acked | Status::DeadLettered),
            "frontier {frontier} passes event {seq}, which is {status:?}"
        );
    }
}

/// The broker's one event, leased at time 0 until 10.
fn leased_event(broker: &EmbeddedBroker) -> Lease {
    broker.publish();
    let mut leases = broker.fetch_at(0, 1, 0, None).expect("valid fetch");
    assert_eq!(leases.len(), 1);
    leases.remove(0)
}

fn ack_races_expiry_and_refetch(bug: Option<PlantedBug>) {
    explore("ack vs expiry vs re-fetch", move || {
        let broker = broker(3, bug);
        let first = leased_event(&broker);
        let acker = {
            let (broker, first) = (broker.clone(), first);
            thread::spawn(move || {
                // Before the deadline: valid unless the expiry won.
                let acked = broker.settle_at(&request(&first, ack()), 5);
                if acked.is_ok() {
                    assert_eq!(
                        broker.status(0, 1).0,
                        Status::Acked,
                        "an accepted ack is final"
                    );
                    assert_eq!(broker.frontier(0), 1, "an accepted ack moves the frontier");
                }
                assert_frontier_sound(&broker);
                acked
            })
        };
        let fetcher = {
            let broker = broker.clone();
            thread::spawn(move || {
                // At the deadline: expires the first lease (if still held), then re-fetches.
                let leases = broker.fetch_at(0, 1, 10, None).expect("valid fetch");
                if let Some(second) = leases.first() {
                    assert_eq!(second.attempt, 2, "a re-fetch is the second delivery");
                    assert_ne!(
                        second.lease_id, first.lease_id,
                        "lease ids are never reused"
                    );
                    assert_eq!(broker.status(0, 1).0, Status::Leased);
                }
                assert_frontier_sound(&broker);
                leases
            })
        };
        let acked = acker.join().expect("acker");
        let refetched = fetcher.join().expect("fetcher");
        let (ack_won, refetch_won) = (acked.is_ok(), !refetched.is_empty());
        assert!(
            ack_won ^ refetch_won,
            "exactly one of the ack and the re-fetch wins: ack {acked:?}, re-fetch {refetched:?}"
        );
        assert_eq!(broker.audit_scan_hints(), Ok(()));
        if acked.is_err() {
            assert_eq!(
                acked,
                Err(SettleError::StaleLease),
                "a lost ack is stale, not counted"
            );
        }
        let (status, frontier) = (broker.status(0, 1).0, broker.frontier(0));
        let expected = if acked.is_ok() {
            (Status::Acked, 1)
        } else {
            (Status::Leased, 0)
        };
        assert_eq!((status, frontier), expected, "final record and frontier");
    });
}

fn reject_races_expiry_at_max_attempts(bug: Option<PlantedBug>) {
    explore("reject vs expiry at max attempts", move || {
        // One attempt allowed: the expiry dead-letters ("max attempts"), the reject keeps its
        // own reason; either way the record is dead-lettered exactly once, with one reason.
        let broker = broker(1, bug);
        let lease = leased_event(&broker);
        let rejecter = {
            let (broker, lease) = (broker.clone(), lease);
            thread::spawn(move || {
                let rejected = broker.settle_at(&request(&lease, reject("poison")), 5);
                if rejected.is_ok() {
                    let reason = broker.status(0, 1).1;
                    assert_eq!(
                        reason.as_deref(),
                        Some("poison"),
                        "exactly one of the reject and the expiry wins: an accepted reject keeps its reason"
                    );
                }
                assert_frontier_sound(&broker);
                rejected
            })
        };
        let expirer = {
            let broker = broker.clone();
            thread::spawn(move || {
                let expired = broker.expire_due_at(10);
                assert_frontier_sound(&broker);
                expired
            })
        };
        let rejected = rejecter.join().expect("rejecter");
        let expired = expirer.join().expect("expirer");
        let (reject_won, expiry_won) = (rejected.is_ok(), !expired.is_empty());
        assert!(
            reject_won ^ expiry_won,
            "exactly one of the reject and the expiry wins: reject {rejected:?}, expiry {expired:?}"
        );
        let reason = if reject_won { "poison" } else { "max attempts" };
        assert_eq!(
            broker.status(0, 1),
            (Status::DeadLettered, Some(reason.to_string()))
        );
        assert_eq!(broker.frontier(0), 1);
    });
}

fn fetches_race_for_one_event(bug: Option<PlantedBug>) {
    explore("fetch vs fetch", move || {
        let broker = broker(3, bug);
        broker.publish();
        let fetchers: Vec<_> = (0..2)
            .map(|_| {
                let broker = broker.clone();
                thread::spawn(move || {
                    let leases = broker.fetch_at(0, 1, 0, None).expect("valid fetch");
                    for lease in &leases {
                        assert_eq!((lease.seq, lease.attempt), (1, 1));
                        assert_eq!(broker.status(0, 1).0, Status::Leased);
                    }
                    leases
                })
            })
            .collect();
        let won: Vec<Lease> = fetchers
            .into_iter()
            .flat_map(|fetcher| fetcher.join().expect("fetcher"))
            .collect();
        assert_eq!(won.len(), 1, "exactly one fetch wins the event: {won:?}");
        assert_eq!(broker.next_deadline(), Some(10));
        assert_eq!(broker.audit_scan_hints(), Ok(()));
    });
}

fn renew_races_expiry(bug: Option<PlantedBug>) {
    explore("renew vs expiry", move || {
        let broker = broker(3, bug);
        let lease = leased_event(&broker);
        let renewer = {
            let (broker, lease) = (broker.clone(), lease);
            thread::spawn(move || {
                let renewed = broker.settle_at(&request(&lease, renew(100)), 5);
                if let Ok(Some(renewed)) = &renewed {
                    assert_eq!(
                        (renewed.lease_id, renewed.deadline_ms),
                        (lease.lease_id, 105)
                    );
                }
                renewed
            })
        };
        let expirer = {
            let broker = broker.clone();
            thread::spawn(move || broker.expire_due_at(10))
        };
        let renewed = renewer.join().expect("renewer");
        let expired = expirer.join().expect("expirer");
        let (renew_won, expiry_won) = (renewed.is_ok(), !expired.is_empty());
        assert!(
            renew_won ^ expiry_won,
            "exactly one of the renew and the expiry wins: renew {renewed:?}, expiry {expired:?}"
        );
        let (status, deadline) = (broker.status(0, 1).0, broker.next_deadline());
        if renewed.is_ok() {
            assert_eq!(
                (status, deadline),
                (Status::Leased, Some(105)),
                "the renew holds"
            );
            // The renewed lease is still current after the old deadline.
            assert_eq!(broker.settle_at(&request(&lease, ack()), 50), Ok(None));
        } else {
            assert_eq!(renewed, Err(SettleError::StaleLease));
            assert_eq!(
                (status, deadline),
                (Status::Available, None),
                "the expiry holds"
            );
        }
        assert_eq!(broker.audit_scan_hints(), Ok(()));
    });
}

/// A renew and an ack of one lease (a worker renewing while its handler's ack goes out): in
/// either order both may be accepted, but an accepted ack is final — a renew that lands after
/// it is stale, never a lease again. (A renew takes the group's gate shared and an ack takes
/// none, so the two race on the slot's claim alone.)
fn renew_races_ack(bug: Option<PlantedBug>) {
    explore("renew vs ack", move || {
        let broker = broker(3, bug);
        let lease = leased_event(&broker);
        let renewer = {
            let (broker, lease) = (broker.clone(), lease);
            thread::spawn(move || broker.settle_at(&request(&lease, renew(100)), 5))
        };
        let acker = {
            let (broker, lease) = (broker.clone(), lease);
            thread::spawn(move || broker.settle_at(&request(&lease, ack()), 5))
        };
        let renewed = renewer.join().expect("renewer");
        let acked = acker.join().expect("acker");
        let status = broker.status(0, 1).0;
        if acked.is_ok() {
            assert_eq!(
                status,
                Status::Acked,
                "an accepted ack is final: renew {renewed:?}, ack {acked:?}"
            );
            assert_eq!(broker.next_deadline(), None, "no lease is left");
        } else {
            // The ack was refused only if the record is no longer this lease's: impossible
            // here, since nothing else ends it.
            panic!("the ack of the current lease is refused: {acked:?}");
        }
        assert_frontier_sound(&broker);
        assert_eq!(broker.audit_scan_hints(), Ok(()));
    });
}

fn blocked_fetch_races_publish(bug: Option<PlantedBug>) {
    explore("blocked fetch vs publish", move || {
        let broker = broker(3, bug);
        let waiter = {
            let broker = broker.clone();
            thread::spawn(move || {
                // loom never times a wait out: only a wake-up can end this call.
                broker
                    .fetch_blocking(0, 1, None, Duration::from_secs(3600))
                    .expect("valid fetch")
            })
        };
        let publisher = {
            let broker = broker.clone();
            thread::spawn(move || broker.publish())
        };
        assert_eq!(publisher.join().expect("publisher"), 1);
        let leases = waiter.join().expect("waiter");
        assert_eq!(
            leases.len(),
            1,
            "the blocked fetch gets the published event"
        );
        assert_eq!((leases[0].seq, leases[0].attempt), (1, 1));
    });
}

fn blocked_fetch_races_nack() {
    explore("blocked fetch vs nack", || {
        let broker = broker(3, None);
        let lease = leased_event(&broker);
        let waiter = {
            let broker = broker.clone();
            thread::spawn(move || {
                broker
                    .fetch_blocking(0, 1, None, Duration::from_secs(3600))
                    .expect("valid fetch")
            })
        };
        let nacker = {
            let broker = broker.clone();
            thread::spawn(move || broker.settle_at(&request(&lease, nack()), 0))
        };
        assert_eq!(nacker.join().expect("nacker"), Ok(None));
        let leases = waiter.join().expect("waiter");
        assert_eq!(leases.len(), 1, "the blocked fetch gets the nacked event");
        assert_eq!((leases[0].seq, leases[0].attempt), (1, 2));
    });
}

fn acks_race_on_the_frontier() {
    explore("ack vs ack on the frontier", || {
        let broker = broker(3, None);
        broker.publish();
        broker.publish();
        let leases = broker.fetch_at(0, 2, 0, None).expect("valid fetch");
        assert_eq!(leases.len(), 2);
        let ackers: Vec<_> = leases
            .into_iter()
            .map(|lease| {
                let broker = broker.clone();
                thread::spawn(move || {
                    broker
                        .settle_at(&request(&lease, ack()), 1)
                        .expect("current lease");
                    assert_frontier_sound(&broker);
                })
            })
            .collect();
        for acker in ackers {
            acker.join().expect("acker");
        }
        assert_eq!(broker.frontier(0), 2, "no frontier advance is lost");
    });
}

fn request(lease: &Lease, op: leasehold_model::SettleOp) -> leasehold_model::SettleRequest {
    leasehold_model::SettleRequest::new(lease, op, 0)
}

fn ack() -> leasehold_model::SettleOp {
    leasehold_model::SettleOp::Ack
}

fn reject(reason: &str) -> leasehold_model::SettleOp {
    leasehold_model::SettleOp::Reject {
        reason: leasehold_model::Reason::new(reason),
    }
}

fn nack() -> leasehold_model::SettleOp {
    leasehold_model::SettleOp::Nack {
        delay_ms: 0,
        reason: None,
    }
}

fn renew(extend_ms: u64) -> leasehold_model::SettleOp {
    leasehold_model::SettleOp::Renew { extend_ms }
}

#[test]
fn ack_racing_expiry_and_a_refetch() {
    ack_races_expiry_and_refetch(None);
}

#[test]
#[should_panic(expected = "exactly one of the ack and the re-fetch wins")]
fn ack_racing_expiry_is_caught_without_compare_and_swap() {
    ack_races_expiry_and_refetch(Some(PlantedBug::CheckThenSet));
}

#[test]
fn two_fetches_racing_for_one_event() {
    fetches_race_for_one_event(None);
}

#[test]
#[should_panic(expected = "exactly one fetch wins the event")]
fn two_fetches_are_caught_without_compare_and_swap() {
    fetches_race_for_one_event(Some(PlantedBug::CheckThenSet));
}

#[test]
fn renew_racing_expiry() {
    renew_races_expiry(None);
}

#[test]
fn renew_racing_ack() {
    renew_races_ack(None);
}

/// Renews and expiries no longer race on a claim (a renew takes the gate shared, an expiry
/// exclusive): the planted claim bug shows between a renew and an ack.
#[test]
#[should_panic(expected = "an accepted ack is final")]
fn renew_racing_ack_is_caught_without_compare_and_swap() {
    renew_races_ack(Some(PlantedBug::CheckThenSet));
}

#[test]
fn blocked_fetch_racing_publish() {
    blocked_fetch_races_publish(None);
}

#[test]
#[should_panic(expected = "deadlock")]
fn lost_wake_up_is_caught_when_publish_notifies_first() {
    blocked_fetch_races_publish(Some(PlantedBug::NotifyBeforeChange));
}

#[test]
fn acks_racing_on_the_frontier() {
    acks_race_on_the_frontier();
}

#[test]
fn blocked_fetch_racing_nack() {
    blocked_fetch_races_nack();
}

#[test]
fn reject_racing_expiry_at_max_attempts() {
    reject_races_expiry_at_max_attempts(None);
}

#[test]
#[should_panic(expected = "exactly one of the reject and the expiry wins")]
fn reject_racing_expiry_is_caught_without_compare_and_swap() {
    reject_races_expiry_at_max_attempts(Some(PlantedBug::CheckThenSet));
}
