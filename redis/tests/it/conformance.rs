//! Conformance: the Redis backend and the pure broker, driven through the same `Backend` trait
//! by the same operation sequences, give identical outputs — leases (ids, delivery counts,
//! receipts), errors, expiries — and identical state after every step, read twice on the Redis
//! side: from the adapter's mirror (what the oracle reads) and from the server alone (stream
//! length, last-delivered ids, pending lists, lease hashes, the dead-letter stream). Both
//! `redis-streams` and `redis-streams-fenced`, 320 sequences each, on a private server that
//! the `Restart` operation kills and restarts (AOF, `appendfsync always`).

use leasehold_model::{
    Backend, Broker, BrokerConfig, BrokerView, Lease, Receipt, SettleOp, SettleRequest, Variant,
};
use leasehold_redis::{testing, Mirror, RedisBackend, RedisServer, Target};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, RngSeed, TestRunner};
use std::collections::BTreeMap;
use std::sync::Arc;

const WORKERS: [&str; 2] = ["c1", "c2"];

#[derive(Clone, Debug)]
enum Op {
    Publish,
    Fetch {
        worker: usize,
        group: usize,
        limit: usize,
        lease_ms: Option<u64>,
    },
    /// Settle a lease from the pool of every lease handed out so far (current or stale), sent
    /// by the worker that fetched it.
    Settle {
        pick: usize,
        op: SettleOp,
        forged_receipt: bool,
    },
    /// A request naming a record that does not exist.
    SettleUnknown {
        seq_beyond: u32,
    },
    Advance {
        ms: u64,
    },
    ExpireDue,
    Restart,
}

fn settle_op() -> impl Strategy<Value = SettleOp> {
    let reason = prop_oneof![Just("max attempts".to_string()), "[a-c ]{0,3}"]
        .prop_map(|text| leasehold_model::Reason::new(&text));
    prop_oneof![
        3 => Just(SettleOp::Ack),
        2 => (0u64..15, proptest::option::of(reason.clone()))
            .prop_map(|(delay_ms, reason)| SettleOp::Nack { delay_ms, reason }),
        2 => (0u64..40).prop_map(|extend_ms| SettleOp::Renew { extend_ms }),
        1 => reason.prop_map(|reason| SettleOp::Reject { reason }),
    ]
}

fn op(group_count: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Publish),
        4 => (0..WORKERS.len(), 0..group_count + 1, 0usize..4, proptest::option::of(0u64..40))
            .prop_map(|(worker, group, limit, lease_ms)| Op::Fetch { worker, group, limit, lease_ms }),
        6 => (any::<usize>(), settle_op(), proptest::bool::weighted(0.05)).prop_map(
            |(pick, op, forged_receipt)| Op::Settle { pick, op, forged_receipt }
        ),
        1 => (0u32..3).prop_map(|seq_beyond| Op::SettleUnknown { seq_beyond }),
        3 => (0u64..25).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::ExpireDue),
        // Rare: each one kills and restarts the server process.
        1 => proptest::bool::weighted(0.3).prop_map(|restart| if restart { Op::Restart } else { Op::ExpireDue }),
    ]
}

fn case(variant: Variant) -> impl Strategy<Value = (BrokerConfig, Vec<Op>)> {
    (1usize..=2, 5u64..30, 1u32..=3).prop_flat_map(move |(group_count, lease_ms, max_attempts)| {
        let config = BrokerConfig {
            group_count,
            lease_ms,
            max_attempts,
            variant,
        };
        (
            Just(config),
            proptest::collection::vec(op(group_count), 1..40),
        )
    })
}

/// Everything an observer can read of a broker.
fn view(broker: &dyn BrokerView, next_deadline: Option<u64>) -> String {
    let mut out = format!("events {} ", broker.event_count());
    for group in 0..broker.group_count() {
        out += &format!("| g{group} frontier {} :", broker.frontier(group));
        for seq in 0..=broker.event_count() + 1 {
            out += &format!(" {:?}", broker.status(group, seq));
        }
    }
    out + &format!(" | next deadline {next_deadline:?}")
}

/// The driver's side of a run: the clock, the leases handed out (with who fetched them).
#[derive(Default)]
struct Driver {
    now_ms: u64,
    pool: Vec<(Lease, usize)>,
}

/// Applies `op`; `as_worker` is true for the Redis backend (which keeps a consumer per worker).
fn apply(backend: &mut dyn Backend, op: &Op, driver: &mut Driver, as_worker: bool) -> String {
    let now_ms = driver.now_ms;
    match op {
        Op::Publish => format!("{:?}", backend.publish()),
        Op::Fetch {
            worker,
            group,
            limit,
            lease_ms,
        } => {
            let result = if as_worker {
                backend.fetch_as(WORKERS[*worker], *group, *limit, now_ms, *lease_ms)
            } else {
                backend.fetch(*group, *limit, now_ms, *lease_ms)
            };
            if let Ok(leases) = &result {
                driver.pool.extend(leases.iter().map(|l| (*l, *worker)));
            }
            format!("{result:?}")
        }
        Op::Settle {
            pick,
            op,
            forged_receipt,
        } => {
            if driver.pool.is_empty() {
                return "no lease yet".to_string();
            }
            let (mut lease, worker) = driver.pool[pick % driver.pool.len()];
            if *forged_receipt {
                lease.receipt = Some(Receipt(7));
            }
            let request = SettleRequest::new(&lease, *op, now_ms);
            let result = if as_worker {
                backend.settle_as(WORKERS[worker], &request, now_ms)
            } else {
                backend.settle(&request, now_ms)
            };
            if let Ok(Some(renewed)) = &result {
                driver.pool.push((*renewed, worker));
            }
            format!("{result:?}")
        }
        Op::SettleUnknown { seq_beyond } => {
            let lease = Lease {
                lease_id: leasehold_model::LeaseId(1),
                group: 0,
                seq: if *seq_beyond == 0 {
                    0
                } else {
                    backend.event_count() + seq_beyond
                },
                attempt: 1,
                deadline_ms: now_ms + 100,
                receipt: None,
            };
            let request = SettleRequest::new(&lease, SettleOp::Ack, now_ms);
            format!("{:?}", backend.settle(&request, now_ms))
        }
        Op::Advance { ms } => {
            driver.now_ms += ms;
            format!("now {}", driver.now_ms)
        }
        Op::ExpireDue => format!("{:?}", backend.expire_due(now_ms)),
        Op::Restart => {
            backend.restart();
            "restarted".to_string()
        }
    }
}

fn run_case(
    server: &Arc<RedisServer>,
    config: &BrokerConfig,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut pure = Broker::new(*config);
    let mut redis = RedisBackend::new(config, Target::Owned(server.clone()))
        .map_err(|e| TestCaseError::fail(format!("backend: {e}")))?;
    let (mut pure_driver, mut redis_driver) = (Driver::default(), Driver::default());
    // Who fetched each (group, seq) last: its consumer must own the pending entry.
    let mut holder: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (step, op) in ops.iter().enumerate() {
        let pool_before = redis_driver.pool.len();
        let expected = apply(&mut pure, op, &mut pure_driver, false);
        let actual = apply(&mut redis, op, &mut redis_driver, true);
        prop_assert_eq!(&actual, &expected, "output of step {} {:?}", step, op);
        let pure_view = view(&pure, pure.next_deadline());
        prop_assert_eq!(
            view(&redis, Backend::next_deadline(&redis)),
            pure_view.clone(),
            "mirror after step {} {:?}",
            step,
            op
        );
        let server_state = redis
            .server_view()
            .map_err(|e| TestCaseError::fail(format!("server state: {e}")))?;
        prop_assert_eq!(
            view(&server_state.mirror, server_state.mirror.next_deadline()),
            pure_view,
            "server state after step {} {:?}",
            step,
            op
        );
        // The mirror's indexes, kept with every change, are those of its records read afresh
        // (and the server's, built from its records, the same).
        let groups = config.group_count;
        let records = (0..groups)
            .map(|g| redis.mirror().records(g).to_vec())
            .collect();
        prop_assert_eq!(
            redis.mirror(),
            &Mirror::from_records(records),
            "mirror indexes"
        );
        prop_assert_eq!(
            redis.mirror().unsettled_count(),
            pure.unsettled_count(),
            "unsettled records"
        );
        // Beyond what BrokerView shows: every record whole (attempts, not-before times, lease
        // ids, deadlines, receipts), from the mirror and from the server.
        for group in 0..config.group_count {
            prop_assert_eq!(
                redis.mirror().records(group),
                pure.records(group),
                "mirror records"
            );
            prop_assert_eq!(
                server_state.mirror.records(group),
                pure.records(group),
                "server records of group {} after step {} {:?}",
                group,
                step,
                op
            );
        }
        if let Op::Fetch { worker, .. } = op {
            for (lease, _) in &redis_driver.pool[pool_before..] {
                holder.insert((lease.group, lease.seq), *worker);
            }
        }
        for (group, owners) in server_state.owners.iter().enumerate() {
            for (seq, owner) in owners {
                if let Some(&worker) = holder.get(&(group, *seq)) {
                    prop_assert_eq!(
                        owner.as_str(),
                        WORKERS[worker],
                        "owner of {}/{}",
                        group,
                        seq
                    );
                }
            }
        }
    }
    Ok(())
}

fn config() -> Config {
    Config {
        cases: 320,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x2ed15),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

fn conformance(variant: Variant) {
    let Some(server) = testing::owned_server(&format!("conformance {variant}")) else {
        return;
    };
    let mut runner = TestRunner::new(config());
    let result = runner.run(&case(variant), |(config, ops)| {
        run_case(&server, &config, &ops)
    });
    if let Err(e) = result {
        panic!("{variant}: {e}");
    }
    eprintln!(
        "{variant}: 320 sequences identical on the pure broker and on Redis ({} server restarts)",
        server.restarts()
    );
}

#[test]
fn redis_streams_matches_the_pure_broker() {
    conformance(Variant::RedisStreams);
}

#[test]
fn redis_streams_fenced_matches_the_pure_broker() {
    conformance(Variant::RedisStreamsFenced);
}
