//! Every check of the oracle can fire: each test feeds the oracle a story that breaks exactly one
//! rule, through a hand-written broker view where no variant of the pure broker breaks it that way
//! (a user's own backend might).

use leasehold_model::broker::BrokerView;
use leasehold_model::types::{GroupIx, LeaseId, Ms, Reason, Seq, SettleOp, Status};
use leasehold_model::{Invariant, Lease, Oracle, OracleConfig};

/// A broker as an observer sees it, written by hand.
struct View {
    statuses: Vec<(Status, Option<String>)>,
    frontier: Seq,
}

impl View {
    fn new(statuses: &[Status]) -> View {
        View {
            statuses: statuses.iter().map(|&s| (s, None)).collect(),
            frontier: 0,
        }
    }
}

impl BrokerView for View {
    fn group_count(&self) -> usize {
        1
    }
    fn event_count(&self) -> Seq {
        self.statuses.len() as Seq
    }
    fn status(&self, _group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.statuses
            .get(seq as usize - 1)
            .cloned()
            .unwrap_or((Status::Dropped, None))
    }
    fn frontier(&self, _group: GroupIx) -> Seq {
        self.frontier
    }
}

fn oracle(events: u32, check_at_least_once: bool) -> Oracle {
    // Hand-written views change records without telling the oracle: audit every step.
    let mut oracle = Oracle::new(OracleConfig {
        audit_every_step: true,
        ..OracleConfig::new(1, 2, check_at_least_once)
    });
    for _ in 0..events {
        oracle.published();
    }
    oracle
}

fn lease(id: u64, seq: Seq, attempt: u32, now_ms: Ms) -> Lease {
    Lease {
        lease_id: LeaseId(id),
        group: 0,
        seq,
        attempt,
        deadline_ms: now_ms + 100,
        receipt: None,
    }
}

/// The worker's copy of a lease on event `seq` (only its record matters to `settled`).
fn on(seq: Seq) -> Lease {
    lease(0, seq, 1, 0)
}

/// The only violation is `invariant`, and its detail contains `text`.
fn only(oracle: &Oracle, invariant: Invariant, text: &str) {
    let violations = oracle.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].invariant, invariant, "{violations:?}");
    assert!(violations[0].detail.contains(text), "{violations:?}");
}

#[test]
fn a_correct_story_breaks_nothing() {
    let mut oracle = oracle(2, true);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.end_step(&View::new(&[Status::Leased, Status::Available]));
    let started_l1 = oracle.handler_started(l1, 0, 1);
    oracle.handler_finished(0, 1, started_l1, true);
    oracle.settled(l1, &on(1), &SettleOp::Ack, true, 10);
    let mut view = View::new(&[Status::Acked, Status::Available]);
    view.frontier = 1;
    oracle.end_step(&view);
    assert_eq!(oracle.violations(), []);
    assert_eq!(oracle.step(), 2);
}

#[test]
fn i1_an_accepted_settle_of_a_superseded_lease() {
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.advance(100);
    let _l2 = oracle.fetched(&lease(2, 1, 2, 100), 100, 100);
    oracle.settled(l1, &on(1), &SettleOp::Ack, true, 150);
    only(&oracle, Invariant::I1, "ack of L1 accepted");
    // A refused settle is never a violation.
    let mut refused = self::oracle(1, false);
    let l1 = refused.fetched(&lease(1, 1, 1, 0), 0, 100);
    refused.advance(100);
    refused.settled(l1, &on(1), &SettleOp::Ack, false, 150);
    assert_eq!(refused.violations(), []);
}

#[test]
fn i2_a_second_unexpired_lease() {
    let mut oracle = oracle(1, false);
    oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.advance(99);
    oracle.fetched(&lease(2, 1, 2, 99), 99, 100);
    only(&oracle, Invariant::I2, "while L1 is unexpired");
}

#[test]
fn i2_a_renew_accepted_while_another_lease_is_unexpired() {
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.advance(100);
    oracle.fetched(&lease(2, 1, 2, 100), 100, 100);
    oracle.settled(l1, &on(1), &SettleOp::Renew { extend_ms: 100 }, true, 110);
    only(&oracle, Invariant::I2, "renew of L1 accepted");
}

#[test]
fn i3_a_lease_for_an_unpublished_event() {
    let mut oracle = oracle(1, false);
    oracle.fetched(&lease(1, 2, 1, 0), 0, 100);
    only(&oracle, Invariant::I3, "unpublished event 2");
}

#[test]
fn i3_a_settled_event_delivered_again() {
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.settled(l1, &on(1), &SettleOp::Ack, true, 1);
    oracle.fetched(&lease(2, 1, 2, 2), 2, 100);
    only(&oracle, Invariant::I3, "was acked and was delivered again");
}

#[test]
fn i3_the_broker_lost_or_invented_an_event() {
    let mut oracle = oracle(2, false);
    oracle.end_step(&View::new(&[Status::Available]));
    only(
        &oracle,
        Invariant::I3,
        "2 events published, the broker has 1",
    );
}

#[test]
fn i3_a_record_gone_from_the_broker() {
    let mut oracle = oracle(1, false);
    oracle.end_step(&View::new(&[Status::Dropped]));
    only(&oracle, Invariant::I3, "gone from the broker");
}

#[test]
fn i3_an_ack_nobody_sent() {
    let mut oracle = oracle(1, false);
    oracle.end_step(&View::new(&[Status::Acked]));
    only(&oracle, Invariant::I3, "acked but no ack was accepted");
}

#[test]
fn i3_a_dead_letter_before_attempts_are_exhausted() {
    let mut oracle = oracle(1, false);
    oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    let mut view = View::new(&[Status::DeadLettered]);
    view.statuses[0].1 = Some("max attempts".to_string());
    view.frontier = 1;
    oracle.end_step(&view);
    only(
        &oracle,
        Invariant::I3,
        "after 1 of 2 attempts, without a reject",
    );
}

#[test]
fn i3_a_dead_letter_that_changes_its_reason() {
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    let reject = SettleOp::Reject {
        reason: Reason::new("poison"),
    };
    oracle.settled(l1, &on(1), &reject, true, 1);
    let mut view = View::new(&[Status::DeadLettered]);
    view.statuses[0].1 = Some("poison".to_string());
    view.frontier = 1;
    oracle.end_step(&view);
    assert_eq!(oracle.violations(), []);
    view.statuses[0].1 = Some("other".to_string());
    oracle.end_step(&view);
    only(&oracle, Invariant::I3, "is now dead-lettered (other)");
}

#[test]
fn i3_an_acked_event_that_becomes_available_again() {
    let mut oracle = oracle(2, false);
    let l1 = oracle.fetched(&lease(1, 2, 1, 0), 0, 100);
    oracle.settled(l1, &on(2), &SettleOp::Ack, true, 1);
    oracle.end_step(&View::new(&[Status::Available, Status::Acked]));
    assert_eq!(oracle.violations(), []);
    oracle.end_step(&View::new(&[Status::Available, Status::Available]));
    only(&oracle, Invariant::I3, "was acked and is now available");
}

#[test]
fn i4_a_frontier_that_goes_back() {
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.settled(l1, &on(1), &SettleOp::Ack, true, 1);
    let mut view = View::new(&[Status::Acked]);
    view.frontier = 1;
    oracle.end_step(&view);
    view.frontier = 0;
    oracle.end_step(&view);
    only(&oracle, Invariant::I4, "went back from 1 to 0");
}

#[test]
fn i4_a_frontier_past_an_event_nobody_settled() {
    let mut oracle = oracle(2, false);
    let l2 = oracle.fetched(&lease(1, 2, 1, 0), 0, 100);
    oracle.settled(l2, &on(2), &SettleOp::Ack, true, 1);
    let mut view = View::new(&[Status::Available, Status::Acked]);
    view.frontier = 2;
    oracle.end_step(&view);
    only(
        &oracle,
        Invariant::I4,
        "frontier of group 0 is 2 but event 1",
    );
}

#[test]
fn i4_a_frontier_over_an_event_that_left_its_settled_state() {
    // The ghost saw the ack; the broker's record is no longer settled, the frontier stayed.
    let mut oracle = oracle(1, false);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.settled(l1, &on(1), &SettleOp::Ack, true, 1);
    let mut view = View::new(&[Status::Acked]);
    view.frontier = 1;
    oracle.end_step(&view);
    assert_eq!(oracle.violations(), []);
    view.statuses[0].0 = Status::Available;
    oracle.end_step(&view);
    let ids: Vec<Invariant> = oracle.violations().iter().map(|v| v.invariant).collect();
    assert_eq!(ids, [Invariant::I3, Invariant::I4]);
    assert_eq!(
        oracle.violations()[1].detail,
        "frontier of group 0 is 1 but event 1 is not settled"
    );
}

#[test]
fn i5_too_many_deliveries_counted_by_the_oracle() {
    let mut oracle = oracle(1, false);
    for (id, now) in [(1, 0), (2, 100), (3, 200)] {
        oracle.advance(now);
        // The broker claims attempt 1 every time; the oracle counts for itself.
        oracle.fetched(&lease(id, 1, 1, now), now, 100);
    }
    only(&oracle, Invariant::I5, "delivered 3 times (attempt 1)");
}

#[test]
fn i5_an_attempt_number_beyond_the_bound() {
    let mut oracle = oracle(1, false);
    oracle.fetched(&lease(1, 1, 3, 0), 0, 100);
    only(&oracle, Invariant::I5, "attempt 3");
}

#[test]
fn i6_an_event_never_settled() {
    let mut oracle = oracle(1, false);
    oracle.check_eventually_settled(&View::new(&[Status::Leased]), "after 5000 ms");
    only(
        &oracle,
        Invariant::I6,
        "event 1 of group 0 is still leased after 5000 ms",
    );
    let mut oracle = self::oracle(1, false);
    let mut view = View::new(&[Status::Acked]);
    view.frontier = 0;
    oracle.check_eventually_settled(&view, "at the end");
    only(
        &oracle,
        Invariant::I6,
        "frontier of group 0 is 0 of 1 at the end",
    );
}

#[test]
fn i7_an_ack_without_a_successful_run_under_a_current_lease() {
    // A handler that started under a stale lease does not count.
    let mut oracle = oracle(1, true);
    let l1 = oracle.fetched(&lease(1, 1, 1, 0), 0, 100);
    oracle.advance(100);
    let l2 = oracle.fetched(&lease(2, 1, 2, 100), 100, 100);
    let started_l1 = oracle.handler_started(l1, 0, 1);
    oracle.handler_finished(0, 1, started_l1, true);
    let started_l2 = oracle.handler_started(l2, 0, 1);
    oracle.handler_finished(0, 1, started_l2, false);
    oracle.settled(l2, &on(1), &SettleOp::Ack, true, 110);
    only(&oracle, Invariant::I7, "without a successful handler run");
    assert_eq!(oracle.duplicate_runs(), 1);
    // Under an at-most-once policy the check is off.
    let mut off = self::oracle(1, false);
    let l1 = off.fetched(&lease(1, 1, 1, 0), 0, 100);
    off.settled(l1, &on(1), &SettleOp::Ack, true, 1);
    assert_eq!(off.violations(), []);
    assert_eq!(off.acked_unprocessed(), 1);
}

#[test]
fn only_the_first_violation_of_each_invariant_is_kept_with_its_step() {
    let mut oracle = oracle(1, false);
    oracle.end_step(&View::new(&[Status::Available]));
    oracle.end_step(&View::new(&[Status::Dropped]));
    oracle.end_step(&View::new(&[Status::Dropped]));
    assert_eq!(oracle.violations().len(), 1);
    assert_eq!(oracle.violations()[0].step, 1);
    assert_eq!(
        oracle.violations()[0].to_string(),
        "I3 no-lost-event violated at step 1: event 1 of group 0 is gone from the broker"
    );
}
