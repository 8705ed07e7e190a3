//! Linearizability: real threads run operations on one embedded broker at the same time; each
//! operation's invocation and return are stamped from one atomic sequence; stateright's
//! `LinearizabilityTester` then searches for a sequential order that the pure `Broker` (the
//! sequential specification) accepts with the same outputs.
//!
//! Time is frozen (every operation runs at the same `now`) so that time is no part of the
//! concurrency; leases are long enough never to expire at that instant. Lease ids are opaque
//! tokens: the specification maps each id the embedded broker hands out to the id the pure
//! broker hands out at the same point of the order, and requires the embedded ids to be fresh.
//! Fetches take one record (`limit = 1`): a batch is not atomic under concurrent fetchers (see
//! `EmbeddedBroker::fetch_at`).
#![cfg(not(loom))]

use leasehold_embedded::{EmbeddedBroker, ManualClock};
use leasehold_model::{
    Broker, BrokerConfig, Lease, LeaseId, Ms, Seq, SettleError, SettleOp, SettleRequest, Variant,
};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const NOW_MS: Ms = 1_000;
const THREADS: usize = 3;
const OPS_PER_THREAD: usize = 6;
const ROUNDS: u64 = 3_000;

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Publish,
    Fetch {
        group: usize,
    },
    /// A settle or renew of a lease as the embedded broker issued it.
    Settle(SettleRequest),
}

#[derive(Clone, Debug, PartialEq)]
enum Ret {
    Published(Seq),
    Fetched(Result<Vec<Lease>, SettleError>),
    Settled(Result<Option<Lease>, SettleError>),
}

/// The pure broker plus the renaming of embedded lease ids to pure ones.
#[derive(Clone, Debug)]
struct Spec {
    broker: Broker,
    ids: BTreeMap<LeaseId, LeaseId>,
}

impl Spec {
    fn translate(&self, lease: &Lease) -> Lease {
        Lease {
            // An id the pure broker never issued stays unknown to it (it can only be stale).
            lease_id: self
                .ids
                .get(&lease.lease_id)
                .copied()
                .unwrap_or(LeaseId(u64::MAX)),
            ..*lease
        }
    }
}

impl SequentialSpec for Spec {
    type Op = Op;
    type Ret = Ret;

    fn invoke(&mut self, op: &Op) -> Ret {
        match op {
            Op::Publish => Ret::Published(self.broker.publish()),
            Op::Fetch { group } => Ret::Fetched(self.broker.fetch(*group, 1, NOW_MS, None)),
            Op::Settle(request) => {
                let request = SettleRequest {
                    lease: self.translate(&request.lease),
                    ..*request
                };
                Ret::Settled(self.broker.settle(&request, NOW_MS))
            }
        }
    }

    fn is_valid_step(&mut self, op: &Op, ret: &Ret) -> bool {
        match (op, self.invoke(op), ret) {
            (_, Ret::Fetched(Ok(expected)), Ret::Fetched(Ok(actual))) => {
                expected.len() == actual.len()
                    && expected.iter().zip(actual).all(|(expected, actual)| {
                        let fresh = !self.ids.contains_key(&actual.lease_id);
                        self.ids.insert(actual.lease_id, expected.lease_id);
                        fresh && self.translate(actual) == *expected
                    })
            }
            (_, Ret::Settled(Ok(Some(expected))), Ret::Settled(Ok(Some(actual)))) => {
                self.translate(actual) == expected
            }
            (_, expected, actual) => expected == *actual,
        }
    }
}

fn config(group_count: usize) -> BrokerConfig {
    BrokerConfig {
        group_count,
        lease_ms: 60_000,
        max_attempts: 2,
        variant: Variant::Fenced,
    }
}

/// A small deterministic generator (splitmix64) for the per-thread scripts.
struct Prng(u64);

impl Prng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// One thread's next operation: mostly fetches and settles of its own latest lease, some
/// settles of any lease seen so far (often stale), some publishes.
fn next_op(prng: &mut Prng, group_count: usize, own: Option<&Lease>, seen: &[Lease]) -> Op {
    let settle = |lease: &Lease, pick: u64| {
        let op = match pick {
            0 | 1 => SettleOp::Ack,
            2 => SettleOp::Nack {
                delay_ms: 0,
                reason: None,
            },
            3 => SettleOp::Renew { extend_ms: 30_000 },
            _ => SettleOp::Reject {
                reason: leasehold_model::Reason::new("poison"),
            },
        };
        Op::Settle(SettleRequest::new(lease, op, NOW_MS))
    };
    match (prng.below(10), own) {
        (0, _) => Op::Publish,
        (1..=4, _) | (5..=7, None) => Op::Fetch {
            group: prng.below(group_count as u64) as usize,
        },
        (5..=7, Some(lease)) => settle(lease, prng.below(5)),
        _ if seen.is_empty() => Op::Publish,
        _ => {
            let lease = &seen[prng.below(seen.len() as u64) as usize];
            settle(lease, prng.below(5))
        }
    }
}

#[derive(Debug)]
enum Event {
    Invoke(usize, Op),
    Return(usize, Ret),
}

/// Runs one round on real threads; returns the stamped history.
fn run_round(round: u64) -> (BrokerConfig, u32, Vec<(u64, Event)>) {
    let group_count = 1 + (round % 2) as usize;
    let config = config(group_count);
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let broker = Arc::new(EmbeddedBroker::new(&config, clock).expect("fenced"));
    let published = 2;
    for _ in 0..published {
        broker.publish();
    }
    let stamp = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Vec::<Lease>::new()));
    let start = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (broker, stamp, seen, start) =
                (broker.clone(), stamp.clone(), seen.clone(), start.clone());
            std::thread::spawn(move || {
                let mut prng = Prng(round * 1_000 + thread as u64);
                let mut own: Option<Lease> = None;
                let mut log = Vec::new();
                // Spin (no sleep, no parking) until every thread is running, so they race.
                start.fetch_add(1, Ordering::SeqCst);
                while start.load(Ordering::SeqCst) < THREADS {
                    std::thread::yield_now();
                }
                for _ in 0..OPS_PER_THREAD {
                    let snapshot = seen.lock().expect("seen").clone();
                    let op = next_op(&mut prng, group_count, own.as_ref(), &snapshot);
                    log.push((
                        stamp.fetch_add(1, Ordering::SeqCst),
                        Event::Invoke(thread, op.clone()),
                    ));
                    let ret = match &op {
                        Op::Publish => Ret::Published(broker.publish()),
                        Op::Fetch { group } => Ret::Fetched(broker.fetch(*group, 1, None)),
                        Op::Settle(request) => Ret::Settled(broker.settle_at(request, NOW_MS)),
                    };
                    log.push((
                        stamp.fetch_add(1, Ordering::SeqCst),
                        Event::Return(thread, ret.clone()),
                    ));
                    match ret {
                        Ret::Fetched(Ok(leases)) if !leases.is_empty() => {
                            own = leases.first().cloned();
                            seen.lock().expect("seen").extend(leases);
                        }
                        Ret::Settled(Ok(Some(renewed))) => own = Some(renewed),
                        Ret::Settled(_) => own = None,
                        _ => {}
                    }
                }
                log
            })
        })
        .collect();
    let mut history: Vec<(u64, Event)> = workers
        .into_iter()
        .flat_map(|worker| worker.join().expect("worker"))
        .collect();
    history.sort_by_key(|(stamp, _)| *stamp);
    (config, published, history)
}

fn check(config: &BrokerConfig, published: u32, history: &[(u64, Event)]) -> bool {
    let mut broker = Broker::new(*config);
    for _ in 0..published {
        broker.publish();
    }
    let mut tester = LinearizabilityTester::new(Spec {
        broker,
        ids: BTreeMap::new(),
    });
    for (_, event) in history {
        match event {
            Event::Invoke(thread, op) => tester.on_invoke(*thread, op.clone()),
            Event::Return(thread, ret) => tester.on_return(*thread, ret.clone()),
        }
        .expect("a well-formed history");
    }
    tester.is_consistent()
}

#[test]
fn concurrent_histories_are_linearizable_against_the_pure_broker() {
    let mut overlapping = 0;
    for round in 0..ROUNDS {
        let (config, published, history) = run_round(round);
        assert!(
            check(&config, published, &history),
            "round {round}: no sequential order of the pure broker explains this history:\n{history:#?}"
        );
        // Count rounds where some operation was invoked while another was in flight.
        let mut in_flight = 0usize;
        let mut overlapped = false;
        for (_, event) in &history {
            match event {
                Event::Invoke(..) => {
                    overlapped |= in_flight > 0;
                    in_flight += 1;
                }
                Event::Return(..) => in_flight -= 1,
            }
        }
        overlapping += usize::from(overlapped);
    }
    eprintln!("{overlapping} of {ROUNDS} rounds had overlapping operations");
    assert!(
        overlapping > 0,
        "no round overlapped: the threads never raced"
    );
}

/// The checker itself can fail: two overlapping fetches that both got the only event (a
/// double delivery) have no sequential explanation.
#[test]
fn a_double_delivery_is_not_linearizable() {
    let lease = |id| Lease {
        lease_id: LeaseId(id),
        group: 0,
        seq: 1,
        attempt: 1,
        deadline_ms: NOW_MS + 60_000,
        receipt: None,
    };
    let history = vec![
        (0, Event::Invoke(0, Op::Fetch { group: 0 })),
        (1, Event::Invoke(1, Op::Fetch { group: 0 })),
        (2, Event::Return(0, Ret::Fetched(Ok(vec![lease(7)])))),
        (3, Event::Return(1, Ret::Fetched(Ok(vec![lease(8)])))),
    ];
    assert!(!check(&config(1), 1, &history));
    // One winner and one empty fetch is linearizable.
    let history = vec![
        (0, Event::Invoke(0, Op::Fetch { group: 0 })),
        (1, Event::Invoke(1, Op::Fetch { group: 0 })),
        (2, Event::Return(1, Ret::Fetched(Ok(Vec::new())))),
        (3, Event::Return(0, Ret::Fetched(Ok(vec![lease(7)])))),
    ];
    assert!(check(&config(1), 1, &history));
}

/// An ack the pure broker would refuse (a reused lease id after the event was re-leased) has
/// no sequential explanation either.
#[test]
fn a_reused_lease_id_is_not_linearizable() {
    let lease = |id, seq| Lease {
        lease_id: LeaseId(id),
        group: 0,
        seq,
        attempt: 1,
        deadline_ms: NOW_MS + 60_000,
        receipt: None,
    };
    let history = vec![
        (0, Event::Invoke(0, Op::Fetch { group: 0 })),
        (1, Event::Return(0, Ret::Fetched(Ok(vec![lease(5, 1)])))),
        (2, Event::Invoke(0, Op::Fetch { group: 0 })),
        (3, Event::Return(0, Ret::Fetched(Ok(vec![lease(5, 2)])))),
    ];
    assert!(!check(&config(1), 2, &history));
}
