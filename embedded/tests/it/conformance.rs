//! Conformance: the embedded broker and the pure broker, driven through the same `Backend`
//! trait by the same single-threaded operation sequences, give identical outputs — leases
//! (ids included), errors, expiries, statuses, dead-letter reasons, frontiers and deadlines.
#![cfg(not(loom))]

use leasehold_embedded::EmbeddedBackend;
use leasehold_model::{
    Backend, Broker, BrokerConfig, Lease, Receipt, SettleOp, SettleRequest, Status, Variant,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, RngSeed};

#[derive(Clone, Debug)]
enum Op {
    Publish,
    Fetch {
        group: usize,
        limit: usize,
        lease_ms: Option<u64>,
    },
    /// Settle a lease from the pool of every lease handed out so far (current or stale).
    Settle {
        pick: usize,
        op: SettleOp,
        forged_receipt: bool,
        worker_clock_skew_ms: u64,
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
    let reason = prop_oneof![Just("max attempts".to_string()), "[a-c]{0,2}"]
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
        4 => (0..group_count + 1, 0usize..4, proptest::option::of(0u64..40))
            .prop_map(|(group, limit, lease_ms)| Op::Fetch { group, limit, lease_ms }),
        6 => (any::<usize>(), settle_op(), proptest::bool::weighted(0.05), 0u64..30).prop_map(
            |(pick, op, forged_receipt, worker_clock_skew_ms)| Op::Settle {
                pick,
                op,
                forged_receipt,
                worker_clock_skew_ms,
            }
        ),
        1 => (0u32..3).prop_map(|seq_beyond| Op::SettleUnknown { seq_beyond }),
        3 => (0u64..25).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::ExpireDue),
        1 => Just(Op::Restart),
    ]
}

fn case() -> impl Strategy<Value = (BrokerConfig, Vec<Op>)> {
    (1usize..=2, 5u64..30, 1u32..=3).prop_flat_map(|(group_count, lease_ms, max_attempts)| {
        let config = BrokerConfig {
            group_count,
            lease_ms,
            max_attempts,
            variant: Variant::Fenced,
        };
        (
            Just(config),
            proptest::collection::vec(op(group_count), 1..60),
        )
    })
}

/// Everything an observer can read of a backend.
fn view(backend: &dyn Backend) -> String {
    let mut out = format!("events {} ", backend.event_count());
    for group in 0..backend.group_count() {
        out += &format!("| g{group} frontier {} :", backend.frontier(group));
        for seq in 0..=backend.event_count() + 1 {
            let (status, reason) = backend.status(group, seq);
            // The reason-free read agrees with the full one.
            assert_eq!(backend.status_kind(group, seq), status);
            out += &format!(" {:?}", (status, reason));
        }
    }
    // The backend's own count of unsettled records (a counter, not a scan) is what its
    // records say.
    let read: usize = (0..backend.group_count())
        .map(|group| {
            (1..=backend.event_count())
                .filter(|&seq| {
                    !matches!(
                        backend.status_kind(group, seq),
                        Status::Acked | Status::DeadLettered
                    )
                })
                .count()
        })
        .sum();
    assert_eq!(backend.unsettled_count(), read as u64);
    out + &format!(
        " | next deadline {:?} | unsettled {}",
        backend.next_deadline(),
        backend.unsettled_count()
    )
}

/// Applies `op` to `backend`; returns its output as text. Leases handed out join `pool`.
fn apply(backend: &mut dyn Backend, op: &Op, now_ms: &mut u64, pool: &mut Vec<Lease>) -> String {
    match op {
        Op::Publish => format!("{:?}", backend.publish()),
        Op::Fetch {
            group,
            limit,
            lease_ms,
        } => {
            let result = backend.fetch(*group, *limit, *now_ms, *lease_ms);
            if let Ok(leases) = &result {
                pool.extend(leases.iter().cloned());
            }
            format!("{result:?}")
        }
        Op::Settle {
            pick,
            op,
            forged_receipt,
            worker_clock_skew_ms,
        } => {
            if pool.is_empty() {
                return "no lease yet".to_string();
            }
            let mut lease = pool[pick % pool.len()];
            if *forged_receipt {
                lease.receipt = Some(Receipt(7));
            }
            let request = SettleRequest::new(&lease, *op, *now_ms + worker_clock_skew_ms);
            let result = backend.settle(&request, *now_ms);
            if let Ok(Some(renewed)) = &result {
                pool.push(*renewed);
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
                deadline_ms: *now_ms + 100,
                receipt: None,
            };
            let request = SettleRequest::new(&lease, SettleOp::Ack, *now_ms);
            format!("{:?}", backend.settle(&request, *now_ms))
        }
        Op::Advance { ms } => {
            *now_ms += ms;
            format!("now {now_ms}")
        }
        Op::ExpireDue => format!("{:?}", backend.expire_due(*now_ms)),
        Op::Restart => {
            backend.restart();
            "restarted".to_string()
        }
    }
}

fn config() -> Config {
    Config {
        cases: 600,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x1ea5e401d),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn embedded_matches_pure_broker((config, ops) in case()) {
        let mut pure = Broker::new(config);
        let mut embedded = EmbeddedBackend::new(&config).expect("a fenced config is accepted");
        let (mut pure_now, mut embedded_now) = (0, 0);
        let (mut pure_pool, mut embedded_pool) = (Vec::new(), Vec::new());
        for (step, op) in ops.iter().enumerate() {
            let expected = apply(&mut pure, op, &mut pure_now, &mut pure_pool);
            let actual = apply(&mut embedded, op, &mut embedded_now, &mut embedded_pool);
            prop_assert_eq!(&actual, &expected, "output of step {} {:?}", step, op);
            prop_assert_eq!(view(&embedded), view(&pure), "state after step {} {:?}", step, op);
            // The scan hints bound what they claim to (a wrong one would hide a record from a
            // fetch or an expiry, which the comparison above may not reach).
            let hints = embedded.broker().audit_scan_hints();
            prop_assert_eq!(hints, Ok(()), "scan hints after step {} {:?}", step, op);
        }
    }
}

#[test]
fn only_the_fenced_protocol_is_accepted() {
    for &variant in Variant::ALL {
        let config = BrokerConfig {
            group_count: 1,
            lease_ms: 10,
            max_attempts: 3,
            variant,
        };
        let result = EmbeddedBackend::new(&config);
        assert_eq!(result.is_ok(), variant == Variant::Fenced, "{variant}");
        if let Err(message) = result {
            assert!(message.contains(variant.name()), "{message}");
        }
    }
}

#[test]
fn impossible_configurations_are_refused_not_panicked() {
    let base = BrokerConfig {
        group_count: 1,
        lease_ms: 10,
        max_attempts: 3,
        variant: Variant::Fenced,
    };
    for config in [
        BrokerConfig {
            group_count: 0,
            ..base
        },
        BrokerConfig {
            max_attempts: 0,
            ..base
        },
        BrokerConfig {
            max_attempts: 1 << 20,
            ..base
        },
    ] {
        assert!(EmbeddedBackend::new(&config).is_err(), "{config:?}");
    }
}
