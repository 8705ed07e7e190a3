//! What only some callers read: `BrokerView`'s default methods (a backend that implements only
//! the four required ones gets them) against the pure broker's own overrides, on every broker
//! state the checker reaches; and the oracle's counters of handler runs (duplicates, acks
//! without a completed run) and its live-lease queries.

use leasehold_model::broker::{Broker, BrokerConfig, BrokerView};
use leasehold_model::check::model::Actions;
use leasehold_model::check::{Budgets, CheckConfig, Fairness, LeaseModel, Renews};
use leasehold_model::types::{GroupIx, Reason, Seq, Status};
use leasehold_model::{AckPolicy, Invariant, Oracle, OracleConfig, Variant};

/// A backend that implements only the required methods.
struct Plain<'a>(&'a Broker);

impl BrokerView for Plain<'_> {
    fn group_count(&self) -> usize {
        BrokerView::group_count(self.0)
    }
    fn event_count(&self) -> Seq {
        BrokerView::event_count(self.0)
    }
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.0.status(group, seq)
    }
    fn frontier(&self, group: GroupIx) -> Seq {
        BrokerView::frontier(self.0, group)
    }
}

/// Brokers reached by the checker on `variant` with two groups and every fault.
fn brokers(variant: Variant) -> Vec<Broker> {
    let config = CheckConfig {
        variant,
        group_count: 2,
        event_count: 2,
        worker_count: 1,
        max_attempts: 1,
        policy: AckPolicy::NackOnError,
        budgets: Budgets {
            crashes: 1,
            broker_restarts: 1,
            dups: 1,
            ..Budgets::default()
        },
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    };
    let model = LeaseModel::new(config).beyond_first_violation();
    let mut states = vec![model.init_state(true)];
    let mut actions = Actions::new();
    let mut index = 0;
    while index < states.len() && states.len() < 400 {
        let state = states[index].clone();
        index += 1;
        model.actions(&state, &mut actions);
        states.extend(actions.iter().map(|&a| model.successor(&state, a).0));
    }
    states.into_iter().map(|s| s.broker).collect()
}

fn compare(broker: &Broker) {
    let plain = Plain(broker);
    let count = BrokerView::event_count(broker);
    // Unsettled records, counted here from the statuses.
    let unsettled = (0..BrokerView::group_count(broker))
        .flat_map(|group| (1..=count).map(move |seq| (group, seq)))
        .filter(|&(group, seq)| {
            !matches!(
                broker.status(group, seq).0,
                Status::Acked | Status::DeadLettered
            )
        })
        .count() as u64;
    assert_eq!(plain.unsettled_count(), unsettled);
    assert_eq!(BrokerView::unsettled_count(broker), unsettled);
    for group in 0..BrokerView::group_count(broker) {
        for seq in 0..=count + 1 {
            let kind = broker.status_kind(group, seq);
            assert_eq!(plain.status_kind(group, seq), kind);
            assert_eq!(broker.status(group, seq).0, kind);
            let reason = broker.dead_letter_reason(group, seq);
            assert_eq!(plain.dead_letter_reason(group, seq), reason);
            assert_eq!(reason.is_some(), kind == Status::DeadLettered);
            if let Some(reason) = reason {
                assert!(plain.dead_letter_reason_is(group, seq, &reason));
                assert!(broker.dead_letter_reason_is(group, seq, &reason));
                assert!(!plain.dead_letter_reason_is(group, seq, "another reason"));
                assert!(!broker.dead_letter_reason_is(group, seq, "another reason"));
            }
        }
        // Seqs start at 1 (the default and the override differ on 0, which no caller asks).
        for first in 1..=count + 1 {
            for len in 0..=count as usize + 1 {
                let mut mine = vec![Status::Acked; len];
                let mut theirs = vec![Status::Acked; len];
                let written = broker.status_kinds(group, first, &mut mine);
                assert_eq!(plain.status_kinds(group, first, &mut theirs), written);
                assert_eq!(mine[..written], theirs[..written]);
                let expected = len.min((count + 1 - first) as usize);
                assert_eq!(written, expected, "first {first} len {len}");
                for (offset, status) in mine[..written].iter().enumerate() {
                    assert_eq!(*status, broker.status_kind(group, first + offset as Seq));
                }
            }
        }
    }
}

#[test]
fn the_default_view_methods_agree_with_the_brokers_own() {
    for variant in [
        Variant::Fenced,
        Variant::DlqDrop,
        Variant::VolatileAck,
        Variant::UnfencedSettle,
    ] {
        let brokers = brokers(variant);
        assert!(brokers.len() > 100);
        let dead = brokers
            .iter()
            .filter(|b| {
                b.dead_letter_reason(0, 1).is_some() || b.dead_letter_reason(1, 2).is_some()
            })
            .count();
        assert!(
            dead > 0 || variant == Variant::DlqDrop,
            "{variant}: no dead letter seen"
        );
        for broker in &brokers {
            compare(broker);
        }
    }
}

fn broker(events: u32) -> Broker {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: 100,
        max_attempts: 3,
        variant: Variant::Fenced,
    });
    for _ in 0..events {
        broker.publish();
    }
    broker
}

#[test]
fn the_oracle_counts_duplicate_runs_and_acks_without_a_completed_run() {
    let mut broker = broker(2);
    let mut oracle = Oracle::new(OracleConfig::new(1, 3, true));
    oracle.published();
    oracle.published();
    let l1 = broker.fetch(0, 1, 0, None).expect("fetch")[0];
    let i1 = oracle.fetched(&l1, 0, 100);
    assert!(oracle.is_current(i1));
    assert_eq!(oracle.deliveries(0, 1), 1);
    // Two runs under the current lease: one duplicate.
    assert!(oracle.handler_started(i1, 0, 1));
    assert!(oracle.handler_started(i1, 0, 1));
    oracle.handler_finished(0, 1, true, true);
    assert_eq!(oracle.duplicate_runs(), 1);
    broker.ack(&l1, 10).expect("ack");
    oracle.settled(i1, &l1, &leasehold_model::SettleOp::Ack, true, 10);
    oracle.end_step(&broker);
    assert!(!oracle.is_current(i1));
    assert!(oracle.is_settled(0, 1));
    assert_eq!(oracle.acked_unprocessed(), 0);
    // The second event is acked with no run at all: I7, and one ack without processing.
    let l2 = broker.fetch(0, 1, 20, None).expect("fetch")[0];
    let i2 = oracle.fetched(&l2, 20, 100);
    broker.ack(&l2, 30).expect("ack");
    oracle.settled(i2, &l2, &leasehold_model::SettleOp::Ack, true, 30);
    oracle.end_step(&broker);
    assert_eq!(oracle.acked_unprocessed(), 1);
    assert!(oracle.violated(Invariant::I7));
    assert_eq!(oracle.step(), 2);
    assert_eq!(oracle.violations().len(), 1);
}

#[test]
fn a_run_that_starts_after_its_lease_expired_does_not_count() {
    let mut broker = broker(1);
    let mut oracle = Oracle::new(OracleConfig::new(1, 3, true));
    oracle.published();
    let l1 = broker.fetch(0, 1, 0, None).expect("fetch")[0];
    let i1 = oracle.fetched(&l1, 0, 100);
    oracle.advance(100); // valid while now < deadline
    assert!(!oracle.is_current(i1));
    let current = oracle.handler_started(i1, 0, 1);
    assert!(!current);
    oracle.handler_finished(0, 1, current, true);
    let l2 = broker.fetch(0, 1, 100, None).expect("fetch")[0];
    let i2 = oracle.fetched(&l2, 100, 100);
    broker.ack(&l2, 110).expect("ack");
    oracle.settled(i2, &l2, &leasehold_model::SettleOp::Ack, true, 110);
    oracle.end_step(&broker);
    // The only completed run started under an expired lease: I7.
    assert!(oracle.violated(Invariant::I7));
    assert_eq!(oracle.acked_unprocessed(), 1);
}

#[test]
fn a_lean_oracle_keeps_no_counts_and_no_text() {
    let mut broker = broker(1);
    let mut config = OracleConfig::new(1, 3, true);
    config.lean = true;
    let mut oracle = Oracle::new(config);
    oracle.published();
    let l1 = broker.fetch(0, 1, 0, None).expect("fetch")[0];
    let i1 = oracle.fetched(&l1, 0, 100);
    oracle.handler_started(i1, 0, 1);
    oracle.handler_started(i1, 0, 1);
    broker.ack(&l1, 10).expect("ack");
    oracle.settled(i1, &l1, &leasehold_model::SettleOp::Ack, true, 10);
    oracle.end_step(&broker);
    assert_eq!(oracle.duplicate_runs(), 0);
    assert_eq!(oracle.step(), 0);
    assert!(oracle.violated(Invariant::I7));
    assert!(oracle.violations().is_empty());
    assert_eq!(
        oracle.violated_invariants().collect::<Vec<_>>(),
        vec![Invariant::I7]
    );
    let _ = Reason::EMPTY;
}
