//! Conformance: the JetStream backend against the reference broker of the `jetstream`
//! variant, through the shared suite (`leasehold-conformance`): identical outputs — leases
//! (ids, attempts, deadlines, receipts), errors, expiries — and identical `BrokerView` state
//! after every step, the frontier and the unsettled count read from the server. Beyond the
//! contract, after every step each consumer's own counters are compared with the reference's
//! records: `num_ack_pending` (delivered, neither acked nor terminated), `num_pending` (never
//! delivered), `delivered.stream_seq`, and the stream's last sequence. 320 sequences, half
//! on each of two private servers at once, which the `Restart` operation stops and starts
//! again.

use crate::testing;
use leasehold_conformance::{Step, Suite};
use leasehold_jetstream::{JsBackend, Target};
use leasehold_model::{Broker, BrokerView, Record, Variant};

fn server_matches(js: &mut JsBackend, reference: &Broker, _: Step<'_>) -> Result<(), String> {
    for group in 0..reference.group_count() {
        let state = js.read_consumer(group)?;
        let records = reference.records(group);
        let ack_pending = records
            .iter()
            .filter(|r| match r {
                Record::Leased { .. } => true,
                Record::Available { attempts, .. } => *attempts > 0,
                _ => false,
            })
            .count() as u64;
        let never = records
            .iter()
            .filter(|r| matches!(r, Record::Available { attempts: 0, .. }))
            .count() as u64;
        let delivered = records
            .iter()
            .rposition(|r| !matches!(r, Record::Available { attempts: 0, .. }))
            .map_or(0, |i| i as u32 + 1);
        let expected = (ack_pending, never, delivered);
        let actual = (state.ack_pending, state.pending, state.delivered);
        if actual != expected {
            return Err(format!(
                "consumer g{group}: (num_ack_pending, num_pending, delivered) {actual:?}, \
                 the reference's records say {expected:?}"
            ));
        }
        // The ack floor never passes the settled prefix; after a restart it may lag (F13).
        if state.ack_floor > reference.frontier(group) {
            return Err(format!(
                "consumer g{group}: ack floor {} above the frontier {}",
                state.ack_floor,
                reference.frontier(group)
            ));
        }
    }
    let last = js.read_last_seq()?;
    if last != reference.event_count() {
        return Err(format!(
            "the stream's last sequence is {last}, {} published",
            reference.event_count()
        ));
    }
    Ok(())
}

#[test]
#[ignore = "slow: the conformance suite on the server; .ci/run runs it (--include-ignored)"]
fn jetstream_matches_the_pure_broker() {
    // Two private servers, half the sequences on each, at once: the suite mostly waits on
    // the server (its restarts, its acknowledgements).
    let mut servers = Vec::new();
    for _ in 0..2 {
        let Some(server) = testing::owned_server("conformance jetstream") else {
            return;
        };
        servers.push(server);
    }
    let ran = Suite::new(Variant::JetStream)
        .cases(320)
        .seed(0x4a57)
        .ops_max(40)
        // Rare: each one is a server restart.
        .restarts_percent(20)
        .run_parts(
            servers.clone(),
            |server, config| JsBackend::new(config, Target::Owned(server.clone())),
            server_matches,
        );
    match ran {
        Ok(ran) => {
            assert!(ran.restarts > 0, "no sequence restarted the server");
            eprintln!(
                "jetstream: {} sequences identical on the reference broker and on nats-server \
                 ({} server restarts)",
                ran.cases,
                servers.iter().map(|s| s.restarts()).sum::<u64>()
            );
        }
        Err(e) => panic!("{e}"),
    }
}

/// The suite can fail on the server: judged as `fenced` (settles fenced on the lease id, no
/// receipts), the JetStream backend differs within a few sequences.
#[test]
#[ignore = "slow: the conformance suite on the server, run against another variant; .ci/run runs it (--include-ignored)"]
fn another_variants_reference_is_caught() {
    let Some(target) = testing::shared_target("another variant's reference") else {
        return;
    };
    let error = Suite::new(Variant::Fenced)
        .cases(32)
        .restarts_percent(0)
        .run(
            |config| {
                let config = leasehold_model::BrokerConfig {
                    variant: Variant::JetStream,
                    ..*config
                };
                JsBackend::new(&config, target.clone())
            },
            |_, _, _| Ok(()),
        )
        .expect_err("the jetstream backend is not fenced");
    assert!(error.contains("output of step"), "{error}");
}
