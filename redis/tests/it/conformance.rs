//! Conformance: the Redis backend against the reference broker of its variant, through the
//! shared suite (`leasehold-conformance`): identical outputs — leases (ids, delivery counts,
//! receipts), errors, expiries — and identical `BrokerView` state after every step. Beyond the
//! contract, after every step the state is read twice on the Redis side — from the adapter's
//! mirror (what the oracle reads) and from the server alone (stream length, last-delivered
//! ids, pending lists, lease hashes, the dead-letter stream) — and every record is compared
//! whole with the reference's, and every pending entry's owner is the worker that fetched it.
//! Both `redis-streams` and `redis-streams-fenced`, 320 sequences each, on a private server
//! that the `Restart` operation kills and restarts (AOF, `appendfsync always`).

use crate::testing;
use leasehold_conformance::{view_of, Op, Step, Suite, WORKERS};
use leasehold_model::{Broker, BrokerView, Variant};
use leasehold_redis::{Mirror, RedisBackend, Target};
use std::collections::BTreeMap;

/// What the Redis side shows beyond the contract after `step`, against `reference`;
/// `holder` keeps who fetched each (group, seq) last in this sequence.
fn beyond_the_contract(
    redis: &mut RedisBackend,
    reference: &Broker,
    step: Step<'_>,
    holder: &mut BTreeMap<(usize, u32), usize>,
) -> Result<(), String> {
    let server = redis
        .server_view()
        .map_err(|e| format!("server state: {e}"))?;
    let read = view_of(&server.mirror, server.mirror.next_deadline());
    let expected = view_of(reference, reference.next_deadline());
    if read != expected {
        return Err(format!(
            "the server's state differs\n  server:    {read}\n  reference: {expected}"
        ));
    }
    // The mirror's indexes, kept with every change, are those of its records read afresh.
    let groups = reference.group_count();
    let records = (0..groups).map(|g| redis.mirror().records(g).to_vec());
    if redis.mirror() != &Mirror::from_records(records.collect()) {
        return Err("the mirror's indexes are not its records'".to_string());
    }
    // Every record whole (attempts, not-before times, lease ids, deadlines, receipts).
    for group in 0..groups {
        if redis.mirror().records(group) != reference.records(group) {
            return Err(format!("the mirror's records of group {group} differ"));
        }
        if server.mirror.records(group) != reference.records(group) {
            return Err(format!("the server's records of group {group} differ"));
        }
    }
    if matches!(step.op, Op::Fetch { .. }) {
        for (lease, worker) in step.leased {
            holder.insert((lease.group, lease.seq), *worker);
        }
    }
    for (group, owners) in server.owners.iter().enumerate() {
        for (seq, owner) in owners {
            if let Some(&worker) = holder.get(&(group, *seq)) {
                if owner.as_str() != WORKERS[worker] {
                    return Err(format!(
                        "{group}/{seq} is pending to {owner}, fetched by {}",
                        WORKERS[worker]
                    ));
                }
            }
        }
    }
    Ok(())
}

fn conformance(variant: Variant) {
    let Some(server) = testing::owned_server(&format!("conformance {variant}")) else {
        return;
    };
    let mut holder = BTreeMap::new();
    let ran = Suite::new(variant)
        .cases(320)
        .seed(0x2ed15)
        .ops_max(40)
        // Rare: each one kills and restarts the server process.
        .restarts_percent(30)
        .run(
            |config| RedisBackend::new(config, Target::Owned(server.clone())),
            |redis, reference, step| beyond_the_contract(redis, reference, step, &mut holder),
        );
    if let Err(e) = ran {
        panic!("{e}");
    }
    eprintln!(
        "{variant}: 320 sequences identical on the reference broker and on Redis ({} server restarts)",
        server.restarts()
    );
}

#[test]
#[ignore = "slow: the conformance suite on the server; .ci/run runs it (--include-ignored)"]
fn redis_streams_matches_the_pure_broker() {
    conformance(Variant::RedisStreams);
}

#[test]
#[ignore = "slow: the conformance suite on the server; .ci/run runs it (--include-ignored)"]
fn redis_streams_fenced_matches_the_pure_broker() {
    conformance(Variant::RedisStreamsFenced);
}
