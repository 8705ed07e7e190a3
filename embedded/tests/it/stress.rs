//! Real threads on a moving clock: workers fetch, ack, nack, renew, reject and abandon leases
//! while time advances, so expiries race with settles. Afterwards the invariants are checked
//! from the outside: no record accepted two finalising settles, an acked record accepted
//! exactly one ack, attempts stayed bounded, lease ids were never reused, every event of every
//! group is settled and the frontier reached the end. Bounded iterations, no sleeps.
#![cfg(not(loom))]

use leasehold_embedded::{EmbeddedBroker, ManualClock};
use leasehold_model::{BrokerConfig, BrokerView, Lease, SettleError, Status, Variant};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

const GROUPS: usize = 2;
const EVENTS: u32 = 2_000;
const WORKERS: u64 = 3;
const MAX_ATTEMPTS: u32 = 3;
const ITERATIONS_MAX: u32 = 200_000;

struct Counters {
    /// Accepted acks per (group, seq).
    acks: Vec<AtomicU32>,
    /// Accepted rejects per (group, seq).
    rejects: Vec<AtomicU32>,
    /// The lease id of the last accepted ack or reject per (group, seq).
    settled_by: Vec<AtomicU64>,
}

impl Counters {
    fn index(lease: &Lease) -> usize {
        lease.group * EVENTS as usize + lease.seq as usize - 1
    }

    fn accepted(&self, lease: &Lease, counter: &[AtomicU32]) -> u32 {
        let index = Counters::index(lease);
        self.settled_by[index].store(lease.lease_id.0, Ordering::SeqCst);
        counter[index].fetch_add(1, Ordering::SeqCst)
    }
}

fn worker(
    broker: &EmbeddedBroker,
    clock: &ManualClock,
    counters: &Counters,
    mut prng: u64,
) -> Vec<Lease> {
    let mut issued = Vec::new();
    let mut next = move |n: u64| {
        prng ^= prng << 13;
        prng ^= prng >> 7;
        prng ^= prng << 17;
        prng % n
    };
    for iteration in 0..ITERATIONS_MAX {
        if (0..GROUPS).all(|group| broker.frontier(group) == EVENTS) {
            break;
        }
        if iteration % 4 == 0 {
            clock.advance(1);
            // Give the other workers a turn (on a busy machine a worker could otherwise drain
            // the whole stream within one time slice).
            std::thread::yield_now();
        }
        let group = (iteration as usize) % GROUPS;
        for lease in broker.fetch(group, 2, None).expect("valid fetch") {
            assert!(lease.attempt <= MAX_ATTEMPTS, "attempts bounded: {lease:?}");
            issued.push(lease);
            // Now and then, first replay an ack of a recent lease of this worker: usually
            // stale, it must count only when that lease is still the record's current one.
            if next(5) == 0 {
                let recent = issued.len().min(8) as u64;
                let old = issued[issued.len() - 1 - next(recent) as usize];
                match broker.ack(&old) {
                    Ok(()) => counters.accepted(&old, &counters.acks),
                    Err(SettleError::StaleLease) => 0,
                    Err(error) => panic!("unexpected settle error {error:?}"),
                };
            }
            let outcome = match next(20) {
                0..=11 => broker.ack(&lease).map(|()| "ack"),
                12..=14 => broker.nack(&lease, next(3)).map(|()| "nack"),
                15 => broker.reject(&lease, "poison").map(|()| "reject"),
                16..=17 => broker
                    .renew(&lease, 2)
                    .and_then(|renewed| broker.ack(&renewed))
                    .map(|()| "ack"),
                _ => Ok("abandon"), // left to expire
            };
            match outcome {
                Ok("ack") => counters.accepted(&lease, &counters.acks),
                Ok("reject") => counters.accepted(&lease, &counters.rejects),
                Ok(_) => 0,
                Err(SettleError::StaleLease) => 0, // expired under us: a no, not a retry
                Err(error) => panic!("unexpected settle error {error:?}"),
            };
        }
    }
    issued
}

#[test]
fn settles_race_expiries_without_breaking_an_invariant() {
    let config = BrokerConfig {
        group_count: GROUPS,
        lease_ms: 3,
        max_attempts: MAX_ATTEMPTS,
        variant: Variant::Fenced,
    };
    let clock = Arc::new(ManualClock::new(0));
    let broker = Arc::new(EmbeddedBroker::new(&config, clock.clone()).expect("fenced"));
    for _ in 0..EVENTS {
        broker.publish();
    }
    let slots = GROUPS * EVENTS as usize;
    let counters = Arc::new(Counters {
        acks: (0..slots).map(|_| AtomicU32::new(0)).collect(),
        rejects: (0..slots).map(|_| AtomicU32::new(0)).collect(),
        settled_by: (0..slots).map(|_| AtomicU64::new(0)).collect(),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            let (broker, clock, counters) = (broker.clone(), clock.clone(), counters.clone());
            std::thread::spawn(move || worker(&broker, &clock, &counters, 0x9e37_79b9 + index))
        })
        .collect();
    let per_worker: Vec<Vec<Lease>> = workers
        .into_iter()
        .map(|worker| worker.join().expect("worker"))
        .collect();
    let shares: Vec<usize> = per_worker.iter().map(Vec::len).collect();
    let issued: Vec<Lease> = per_worker.into_iter().flatten().collect();

    let ids: BTreeSet<_> = issued.iter().map(|lease| lease.lease_id).collect();
    assert_eq!(ids.len(), issued.len(), "a lease id was handed out twice");
    // Leases of one record are issued one after the other (each claim is exclusive), so the
    // record's current lease is the one with the highest id: only it may settle the record.
    let mut last_issued = vec![0u64; slots];
    for lease in &issued {
        let index = Counters::index(lease);
        last_issued[index] = last_issued[index].max(lease.lease_id.0);
    }
    for group in 0..GROUPS {
        assert_eq!(
            broker.frontier(group),
            EVENTS,
            "group {group} drained (liveness)"
        );
        for seq in 1..=EVENTS {
            let index = group * EVENTS as usize + seq as usize - 1;
            let acks = counters.acks[index].load(Ordering::SeqCst);
            let rejects = counters.rejects[index].load(Ordering::SeqCst);
            let (status, reason) = broker.status(group, seq);
            if acks + rejects > 0 {
                assert_eq!(
                    counters.settled_by[index].load(Ordering::SeqCst),
                    last_issued[index],
                    "g{group} e{seq}: settled by a lease that was not the current one (I1)"
                );
            }
            match status {
                Status::Acked => assert_eq!((acks, rejects), (1, 0), "g{group} e{seq}"),
                Status::DeadLettered => {
                    assert_eq!(
                        acks, 0,
                        "g{group} e{seq}: dead-lettered after an accepted ack"
                    );
                    assert!(rejects <= 1, "g{group} e{seq}: two rejects accepted");
                    let expected = if rejects == 1 {
                        "poison"
                    } else {
                        "max attempts"
                    };
                    assert_eq!(reason.as_deref(), Some(expected), "g{group} e{seq}");
                }
                other => panic!("g{group} e{seq} is {other:?} after the frontier passed it"),
            }
        }
    }
    let dead = (0..GROUPS)
        .flat_map(|group| (1..=EVENTS).map(move |seq| (group, seq)))
        .filter(|&(group, seq)| broker.status(group, seq).0 == Status::DeadLettered)
        .count();
    eprintln!(
        "{} leases issued ({shares:?} per worker) for {} records; {dead} dead-lettered; clock at {}",
        issued.len(),
        GROUPS * EVENTS as usize,
        broker.now_ms()
    );
}
