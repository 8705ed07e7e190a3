//! The oracle's queries, counters, boundaries and state identity, on stories whose expected
//! answers follow from docs/protocol.md and docs/invariants.md: a lease is valid while
//! `now < deadline`; at most `max_attempts` deliveries; a handler run counts for I7 only when
//! it completed under a lease current when it started; duplicate runs are counted, not failed;
//! a full audit reads every record, however many; two oracles that differ in anything a future
//! check can read are different states (unequal, and hashed apart), and a clone is the same
//! state.

use leasehold_model::broker::BrokerView;
use leasehold_model::types::{GroupIx, LeaseId, Ms, Reason, Seq, SettleOp, Status};
use leasehold_model::{Invariant, Issuance, Lease, Oracle, OracleConfig};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// A broker as an observer sees it, written by hand: statuses (and dead-letter reasons) and a
/// frontier per group. `chunk` limits how many statuses one `status_kinds` call writes.
#[derive(Clone)]
struct View {
    groups: Vec<Vec<(Status, Option<String>)>>,
    frontiers: Vec<Seq>,
    chunk: usize,
}

impl View {
    fn new(groups: usize, events: usize) -> View {
        View {
            groups: vec![vec![(Status::Available, None); events]; groups],
            frontiers: vec![0; groups],
            chunk: usize::MAX,
        }
    }

    fn set(&mut self, group: GroupIx, seq: Seq, status: Status) {
        let reason = (status == Status::DeadLettered).then(|| "max attempts".to_string());
        self.groups[group][seq as usize - 1] = (status, reason);
    }

    fn dead_letter(&mut self, group: GroupIx, seq: Seq, reason: &str) {
        self.groups[group][seq as usize - 1] = (Status::DeadLettered, Some(reason.to_string()));
    }
}

impl BrokerView for View {
    fn group_count(&self) -> usize {
        self.groups.len()
    }
    fn event_count(&self) -> Seq {
        self.groups[0].len() as Seq
    }
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        self.groups[group]
            .get((seq as usize).wrapping_sub(1))
            .cloned()
            .unwrap_or((Status::Dropped, None))
    }
    fn frontier(&self, group: GroupIx) -> Seq {
        self.frontiers[group]
    }
    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        let count = self.event_count();
        let mut written = 0;
        for (slot, seq) in out.iter_mut().zip(first..=count).take(self.chunk) {
            *slot = self.status_kind(group, seq);
            written += 1;
        }
        written
    }
}

fn config(groups: usize, max_attempts: u32, check_at_least_once: bool) -> OracleConfig {
    OracleConfig::new(groups, max_attempts, check_at_least_once)
}

fn oracle_with(config: OracleConfig, events: usize) -> Oracle {
    let mut oracle = Oracle::new(config);
    for _ in 0..events {
        oracle.published();
    }
    oracle
}

fn lease(group: GroupIx, seq: Seq, attempt: u32) -> Lease {
    Lease {
        lease_id: LeaseId(u64::from(seq)),
        group,
        seq,
        attempt,
        deadline_ms: 100,
        receipt: None,
    }
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

fn broken(oracle: &Oracle) -> Vec<Invariant> {
    oracle.violated_invariants().collect()
}

// --- Queries and counters ------------------------------------------------------------------

#[test]
fn the_oracle_counts_deliveries_and_names_issuances_in_fetch_order() {
    let mut oracle = oracle_with(config(2, 3, false), 2);
    let view = View::new(2, 2);
    assert_eq!(oracle.config(), &config(2, 3, false));
    let i0 = oracle.fetched(&lease(0, 1, 1), 0, 100);
    let i1 = oracle.fetched(&lease(1, 2, 1), 0, 100);
    assert_eq!((i0, i1), (Issuance(0), Issuance(1)));
    assert_eq!(i1.to_string(), "L2");
    oracle.end_step(&view);
    assert_eq!(oracle.deliveries(0, 1), 1);
    assert_eq!(oracle.deliveries(1, 2), 1);
    assert_eq!(oracle.deliveries(0, 2), 0);
    assert_eq!(oracle.deliveries(2, 1), 0, "no such group");
    assert_eq!(oracle.deliveries(0, 0), 0, "no such event");
    let mut seen = Vec::new();
    oracle.for_each_issuance(|i| seen.push(i.0));
    assert_eq!(seen, [0, 1, 2], "live issuances, then the next one");
    oracle.rename_issuances(|i| Issuance(i.0 + 10));
    let mut renamed = Vec::new();
    oracle.for_each_issuance(|i| renamed.push(i.0));
    assert_eq!(renamed, [10, 11, 12]);
    assert!(oracle.is_current(Issuance(10)));
    assert!(!oracle.is_current(Issuance(0)));
    // The next fetch is named after the renamed counter.
    oracle.expired(0, 1);
    assert_eq!(oracle.fetched(&lease(0, 1, 2), 10, 100), Issuance(12));
    assert_eq!(oracle.deliveries(0, 1), 2);
    assert!(!oracle.any_violated());
}

#[test]
fn the_deliveries_bound_is_max_attempts_inclusive() {
    let mut oracle = oracle_with(config(1, 2, false), 2);
    oracle.fetched(&lease(0, 1, 1), 0, 100);
    oracle.expired(0, 1);
    oracle.fetched(&lease(0, 1, 2), 0, 100);
    assert!(!oracle.violated(Invariant::I5), "two deliveries of two");
    oracle.expired(0, 1);
    oracle.fetched(&lease(0, 1, 2), 0, 100);
    assert_eq!(
        broken(&oracle),
        [Invariant::I5],
        "a third delivery, whatever it claims"
    );
    // A lease that claims an attempt beyond the bound is one, whatever the oracle counted.
    let mut oracle = oracle_with(config(1, 2, false), 1);
    oracle.fetched(&lease(0, 1, 2), 0, 100);
    assert!(!oracle.any_violated());
    let mut oracle = oracle_with(config(1, 2, false), 1);
    oracle.fetched(&lease(0, 1, 3), 0, 100);
    assert_eq!(broken(&oracle), [Invariant::I5]);
    let detail = &oracle.violations()[0].detail;
    assert!(
        detail.contains("attempt 3") && detail.contains("max_attempts 2"),
        "{detail}"
    );
}

#[test]
fn a_lease_ends_at_its_deadline_and_only_its_own_record_expires() {
    let mut oracle = oracle_with(config(2, 3, false), 2);
    let a = oracle.fetched(&lease(0, 1, 1), 0, 100);
    let b = oracle.fetched(&lease(0, 2, 1), 0, 150);
    let c = oracle.fetched(&lease(1, 1, 1), 0, 150);
    oracle.advance(99);
    assert!(oracle.is_current(a), "valid while now < deadline");
    oracle.advance(100);
    assert!(!oracle.is_current(a), "no longer valid at its deadline");
    assert!(oracle.is_current(b) && oracle.is_current(c));
    oracle.expired(0, 2);
    assert!(!oracle.is_current(b));
    assert!(oracle.is_current(c), "another group's record is untouched");
    // The same lease, issued again and settled at its deadline: I1.
    let d = oracle.fetched(&lease(0, 1, 2), 200, 100);
    let view = View::new(2, 2);
    oracle.end_step(&view);
    oracle.advance(300);
    oracle.settled(d, &lease(0, 1, 2), &SettleOp::Ack, true, 300);
    assert_eq!(broken(&oracle), [Invariant::I1]);
}

#[test]
fn handler_runs_count_duplicates_and_only_complete_runs_under_a_current_lease_process() {
    let mut oracle = oracle_with(config(1, 3, true), 2);
    let view = View::new(1, 2);
    let i0 = oracle.fetched(&lease(0, 2, 1), 0, 100);
    assert!(oracle.handler_started(i0, 0, 2));
    assert_eq!(oracle.duplicate_runs(), 0, "a first run is no duplicate");
    assert!(
        !oracle.handler_started(Issuance(7), 0, 2),
        "not a live lease"
    );
    assert_eq!(oracle.duplicate_runs(), 1);
    assert!(oracle.handler_started(i0, 0, 2));
    assert_eq!(oracle.duplicate_runs(), 2);
    // A run on another record is not a duplicate of these.
    oracle.handler_started(i0, 0, 1);
    assert_eq!(oracle.duplicate_runs(), 2);
    // A failed run, and a run that started under a lease no longer current, do not count.
    oracle.handler_finished(0, 2, true, false);
    oracle.handler_finished(0, 2, false, true);
    oracle.end_step(&view);
    let mut acked = view.clone();
    acked.set(0, 2, Status::Acked);
    let mut probe = oracle.clone();
    probe.settled(i0, &lease(0, 2, 1), &SettleOp::Ack, true, 10);
    probe.end_step(&acked);
    assert_eq!(broken(&probe), [Invariant::I7]);
    assert_eq!(probe.acked_unprocessed(), 1);
    // A complete run under a current lease does.
    oracle.handler_finished(0, 2, true, true);
    oracle.settled(i0, &lease(0, 2, 1), &SettleOp::Ack, true, 10);
    oracle.end_step(&acked);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    assert_eq!(oracle.acked_unprocessed(), 0);
    assert!(oracle.is_settled(0, 2));
    assert!(!oracle.is_settled(0, 1));
    assert_eq!(oracle.step(), 2);
}

#[test]
fn without_the_at_least_once_check_only_acks_without_a_completed_run_are_losses() {
    // ack_always / ack_first: an ack whose handler did not complete (failed, or ran under a
    // lease no longer current) is what the policy gives up; an ack whose handler completed
    // under a current lease is not, though I7 is not checked.
    let mut oracle = oracle_with(config(1, 3, false), 3);
    let mut view = View::new(1, 3);
    let runs = [(1, true, true), (2, true, false), (3, false, true)];
    for (seq, current, success) in runs {
        let issuance = oracle.fetched(&lease(0, seq, 1), 0, 100);
        assert!(oracle.handler_started(issuance, 0, seq));
        oracle.handler_finished(0, seq, current, success);
        oracle.settled(issuance, &lease(0, seq, 1), &SettleOp::Ack, true, 10);
        view.set(0, seq, Status::Acked);
    }
    view.frontiers[0] = 3;
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    assert_eq!(
        oracle.acked_unprocessed(),
        2,
        "the failed run and the stale one"
    );
    // The model checker's lean oracle keeps no such bit: its states stay as few as before.
    let mut lean = config(1, 3, false);
    lean.lean = true;
    let mut oracle = oracle_with(lean, 1);
    let issuance = oracle.fetched(&lease(0, 1, 1), 0, 100);
    assert!(oracle.handler_started(issuance, 0, 1));
    oracle.handler_finished(0, 1, true, true);
    oracle.settled(issuance, &lease(0, 1, 1), &SettleOp::Ack, true, 10);
    assert_eq!(oracle.acked_unprocessed(), 1);
}

#[test]
fn acked_unprocessed_counts_only_acked_records() {
    let mut oracle = oracle_with(config(1, 3, false), 3);
    let mut view = View::new(1, 3);
    let i0 = oracle.fetched(&lease(0, 1, 1), 0, 100);
    let i1 = oracle.fetched(&lease(0, 2, 1), 0, 100);
    oracle.settled(i0, &lease(0, 1, 1), &SettleOp::Ack, true, 10);
    let reject = SettleOp::Reject {
        reason: Reason::new("poison"),
    };
    oracle.settled(i1, &lease(0, 2, 1), &reject, true, 10);
    view.set(0, 1, Status::Acked);
    view.dead_letter(0, 2, "poison");
    view.frontiers[0] = 2;
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    assert_eq!(
        oracle.acked_unprocessed(),
        1,
        "the dead letter is not an ack"
    );
    assert!(oracle.is_settled(0, 2));
}

#[test]
fn the_violated_bits_name_exactly_the_broken_invariants() {
    let mut oracle = oracle_with(config(1, 1, false), 2);
    assert!(!oracle.any_violated());
    assert!(Invariant::ALL.iter().all(|&i| !oracle.violated(i)));
    let mut view = View::new(1, 2);
    view.frontiers[0] = 1; // passes the unsettled event 1: I4
    oracle.end_step(&view);
    assert_eq!(broken(&oracle), [Invariant::I4]);
    assert!(oracle.violated(Invariant::I4) && oracle.any_violated());
    oracle.fetched(&lease(0, 2, 1), 0, 100);
    oracle.expired(0, 2);
    oracle.fetched(&lease(0, 2, 2), 0, 100);
    assert_eq!(broken(&oracle), [Invariant::I4, Invariant::I5]);
    oracle.check_eventually_settled(&view, "after the run");
    assert_eq!(
        broken(&oracle),
        [Invariant::I4, Invariant::I5, Invariant::I6]
    );
    let names: Vec<_> = oracle.violations().iter().map(|v| v.invariant).collect();
    assert_eq!(names, [Invariant::I4, Invariant::I5, Invariant::I6]);
    let printed = oracle.violations()[0].to_string();
    assert!(printed.starts_with("I4"), "{printed}");
    assert!(printed.contains("violated at step 0"), "{printed}");
    assert!(printed.contains("event 1 is not settled"), "{printed}");
}

// --- Audits --------------------------------------------------------------------------------

/// An oracle that saw `events` events of one group acked, and a view that shows them so.
fn acked_run(events: usize, check: bool) -> (Oracle, View) {
    let mut oracle = oracle_with(config(1, 3, check), events);
    let mut view = View::new(1, events);
    for seq in 1..=events as Seq {
        let issuance = oracle.fetched(&lease(0, seq, 1), 0, 100);
        let current = oracle.handler_started(issuance, 0, seq);
        oracle.handler_finished(0, seq, current, true);
        oracle.settled(issuance, &lease(0, seq, 1), &SettleOp::Ack, true, 1);
        view.set(0, seq, Status::Acked);
    }
    view.frontiers[0] = events as Seq;
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    (oracle, view)
}

#[test]
fn a_full_audit_reads_every_record_past_one_chunk() {
    for chunk in [usize::MAX, 1, 5] {
        for changed in [1, 64, 65, 129, 150] {
            let (mut oracle, mut view) = acked_run(150, true);
            view.chunk = chunk;
            // The broker forgets one ack: I3 on that event, found only by reading it.
            view.set(0, changed, Status::Available);
            view.frontiers[0] = changed - 1;
            oracle.restarted();
            oracle.end_step(&view);
            // The frontier went back, too.
            assert_eq!(
                broken(&oracle),
                [Invariant::I3, Invariant::I4],
                "chunk {chunk} event {changed}"
            );
            let detail = &oracle.violations()[0].detail;
            assert!(detail.contains(&format!("event {changed} ")), "{detail}");
        }
    }
}

#[test]
fn a_full_audit_finds_an_open_event_the_frontier_passes_in_any_chunk() {
    for chunk in [usize::MAX, 3] {
        let (mut oracle, mut view) = acked_run(100, false);
        view.chunk = chunk;
        oracle.audit(&view);
        assert!(!oracle.any_violated());
        // The broker shows event 70 leased again yet keeps the frontier at 100.
        view.set(0, 70, Status::Leased);
        oracle.audit(&view);
        assert!(oracle.violated(Invariant::I4), "chunk {chunk}");
        assert!(oracle.violated(Invariant::I3));
        assert!(
            oracle.violations()[1]
                .detail
                .contains("event 70 is not settled"),
            "{:?}",
            oracle.violations()
        );
    }
}

#[test]
fn a_frontier_past_the_published_events_is_audited_on_the_records_it_names() {
    // The oracle knows two events; the broker shows a third, open one under its frontier.
    let (mut oracle, mut view) = acked_run(2, false);
    view.groups[0].push((Status::Available, None));
    view.frontiers[0] = 3;
    oracle.audit(&view);
    assert!(oracle.violated(Invariant::I3), "event count");
    assert!(
        oracle.violated(Invariant::I4),
        "frontier past an open event"
    );
    // The broker lost the last event, and its frontier still names it.
    let (mut oracle, mut view) = acked_run(3, false);
    view.groups[0].pop();
    oracle.audit(&view);
    assert_eq!(broken(&oracle), [Invariant::I3, Invariant::I4]);
    assert!(oracle.violations()[1]
        .detail
        .contains("event 3 is not settled"));
}

#[test]
fn an_audit_of_a_record_range_reads_exactly_that_range() {
    let (oracle, mut view) = acked_run(10, false);
    view.set(0, 4, Status::Available);
    view.set(0, 9, Status::Available);
    let check = |first: Seq, count: Seq, group: GroupIx| {
        let mut probe = oracle.clone();
        probe.audit_records(&view, group, first, count);
        probe.violated(Invariant::I3)
    };
    assert!(check(4, 1, 0));
    assert!(check(1, 4, 0));
    assert!(!check(1, 3, 0));
    assert!(!check(5, 4, 0));
    assert!(check(5, 5, 0));
    assert!(
        check(9, 100, 0),
        "a range past the end stops at the last event"
    );
    assert!(!check(10, 100, 0));
    assert!(!check(0, 10, 0), "seqs start at 1");
    assert!(!check(11, 5, 0), "past the published events");
    assert!(!check(1, 10, 1), "no such group");
    // A range that starts at the last published event reads it.
    let mut last_open = view.clone();
    last_open.set(0, 10, Status::Available);
    let mut probe = oracle.clone();
    probe.audit_records(&last_open, 0, 10, 1);
    assert!(probe.violated(Invariant::I3), "the last event alone");
}

#[test]
fn a_frontier_that_goes_back_breaks_i4_even_within_the_settled_prefix() {
    // Every event stays acked; only the frontier moves back (5 to 3). Nothing the step
    // touched is open, so only the comparison with the frontier before can tell.
    let (mut oracle, mut view) = acked_run(5, false);
    view.frontiers[0] = 3;
    oracle.end_step(&view);
    assert_eq!(broken(&oracle), [Invariant::I4]);
    let detail = &oracle.violations()[0].detail;
    assert!(detail.contains("went back from 5 to 3"), "{detail}");
    // Forward again, to the end: nothing more is broken (the frontier it left is 3).
    let (mut oracle, mut view) = acked_run(5, false);
    view.frontiers[0] = 5;
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
}

#[test]
fn the_incremental_frontier_check_reads_only_touched_records_at_or_below_it() {
    // Group 0 event 2 is open; a step touches it while the frontier stays below it.
    let mut oracle = oracle_with(config(1, 3, false), 3);
    let mut view = View::new(1, 3);
    let i0 = oracle.fetched(&lease(0, 1, 1), 0, 100);
    oracle.settled(i0, &lease(0, 1, 1), &SettleOp::Ack, true, 1);
    view.set(0, 1, Status::Acked);
    view.frontiers[0] = 1;
    oracle.end_step(&view);
    let i1 = oracle.fetched(&lease(0, 2, 1), 2, 100);
    let i2 = oracle.fetched(&lease(0, 3, 1), 2, 100);
    oracle.settled(i2, &lease(0, 3, 1), &SettleOp::Ack, true, 3);
    view.set(0, 2, Status::Leased);
    view.set(0, 3, Status::Acked);
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    // Now the frontier passes event 2, which a step touches: I4.
    let mut probe = oracle.clone();
    probe.observe(0, 2);
    let mut passed = view.clone();
    passed.frontiers[0] = 3;
    probe.end_step(&passed);
    assert_eq!(broken(&probe), [Invariant::I4]);
    // The broker shows event 1, which the oracle saw acked, open again: I3, and I4 for the
    // frontier that passes it, found among the records the step touched.
    let mut probe = oracle.clone();
    probe.observe(0, 1);
    let mut reopened = view.clone();
    reopened.set(0, 1, Status::Available);
    probe.end_step(&reopened);
    assert_eq!(broken(&probe), [Invariant::I3, Invariant::I4]);
    // Event 2 acked: the frontier may pass it.
    oracle.settled(i1, &lease(0, 2, 1), &SettleOp::Ack, true, 4);
    passed.set(0, 2, Status::Acked);
    oracle.end_step(&passed);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
}

#[test]
fn a_dead_letter_is_accepted_when_attempts_ran_out_and_kept_with_its_reason() {
    let mut oracle = oracle_with(config(1, 2, false), 1);
    let mut view = View::new(1, 1);
    for attempt in 1..=2 {
        oracle.fetched(&lease(0, 1, attempt), 0, 100);
        oracle.expired(0, 1);
    }
    view.set(0, 1, Status::DeadLettered);
    view.frontiers[0] = 1;
    oracle.end_step(&view);
    assert!(!oracle.any_violated(), "{:?}", oracle.violations());
    assert!(oracle.is_settled(0, 1));
    // Kept with the same reason: fine; another reason: I3.
    oracle.audit(&view);
    assert!(!oracle.any_violated());
    view.dead_letter(0, 1, "another reason");
    oracle.audit(&view);
    assert_eq!(broken(&oracle), [Invariant::I3]);
    // One delivery short of the bound, without a reject: I3.
    let mut oracle = oracle_with(config(1, 2, false), 1);
    let mut view = View::new(1, 1);
    oracle.fetched(&lease(0, 1, 1), 0, 100);
    oracle.expired(0, 1);
    view.set(0, 1, Status::DeadLettered);
    view.frontiers[0] = 1;
    oracle.end_step(&view);
    assert_eq!(broken(&oracle), [Invariant::I3]);
}

#[test]
fn eventually_settled_needs_every_event_of_every_group_and_the_frontier_at_the_end() {
    let mut view = View::new(2, 2);
    for group in 0..2 {
        for seq in 1..=2 {
            view.set(group, seq, Status::Acked);
        }
        view.frontiers[group] = 2;
    }
    let check = |view: &View| {
        let mut oracle = oracle_with(config(2, 3, false), 2);
        oracle.check_eventually_settled(view, "at the end");
        oracle.violated(Invariant::I6)
    };
    assert!(!check(&view));
    let mut open = view.clone();
    open.set(1, 2, Status::Leased);
    assert!(check(&open), "an open event in the last group");
    let mut dead = view.clone();
    dead.set(1, 1, Status::DeadLettered);
    assert!(!check(&dead), "a dead letter is settled");
    let mut behind = view.clone();
    behind.frontiers[1] = 1;
    assert!(check(&behind), "a frontier short of the last event");
}

// --- State identity ------------------------------------------------------------------------

/// Oracles that differ in one thing each; the index of the pair names it.
fn one_field_apart() -> Vec<(&'static str, Oracle, Oracle)> {
    let base = || oracle_with(config(2, 3, true), 2);
    let lean = || {
        oracle_with(
            OracleConfig {
                lean: true,
                ..config(1, 3, false)
            },
            1,
        )
    };
    let view = View::new(2, 2);
    let mut pairs = Vec::new();
    let mut with = |name, a: Oracle, b: Oracle| pairs.push((name, a, b));

    let renewed = |group: GroupIx, seq: Seq, extend_ms: Ms| {
        // A renew of a lease the oracle had forgotten (renew-revives) makes it live without
        // a delivery.
        let mut o = base();
        let op = SettleOp::Renew { extend_ms };
        o.settled(Issuance(0), &lease(group, seq, 1), &op, true, 0);
        o.end_step(&view);
        o
    };
    with("lease group", renewed(0, 1, 50), renewed(1, 1, 50));
    with("lease seq", renewed(0, 1, 50), renewed(0, 2, 50));
    with("lease deadline", renewed(0, 1, 50), renewed(0, 1, 60));
    let a = renewed(0, 1, 50);
    let mut b = renewed(0, 1, 50);
    let mut first = true;
    b.rename_issuances(|i| {
        if std::mem::take(&mut first) {
            Issuance(1)
        } else {
            i
        }
    });
    with("lease issuance", a, b);
    let mut a = base();
    a.rename_issuances(|_| Issuance(4));
    with("next issuance", a, base());

    let mut a = base();
    a.fetched(&lease(0, 1, 1), 0, 100);
    a.expired(0, 1);
    a.end_step(&view);
    let mut b = base();
    b.rename_issuances(|_| Issuance(1));
    b.end_step(&view);
    with("deliveries", a, b);
    let mut a = base();
    a.handler_finished(0, 1, true, true);
    with("processed", a, base());
    let mut a = base();
    a.handler_started(Issuance(0), 0, 1);
    with("ran", a, base());

    let settled = |status: Status, frontier: Seq| {
        let mut o = lean();
        let mut v = View::new(1, 1);
        v.set(0, 1, status);
        v.frontiers[0] = frontier;
        o.observe(0, 1);
        o.end_step(&v);
        assert!(o.violated(Invariant::I3));
        o
    };
    with(
        "acked or dead-lettered",
        settled(Status::Acked, 1),
        settled(Status::DeadLettered, 1),
    );
    with(
        "frontier",
        settled(Status::Acked, 1),
        settled(Status::Acked, 0),
    );

    let mut a = lean();
    a.end_step(&View::new(1, 2)); // two events shown, one published: I3
    let mut b = lean();
    b.end_step(&View::new(1, 1));
    with("violated", a, b);
    let mut a = base();
    a.restarted();
    with("audit due", a, base());
    let mut a = base();
    a.observe(0, 1);
    let mut b = base();
    b.observe(0, 2);
    with("touched seq", a, b);
    let mut a = base();
    a.observe(0, 1);
    let mut b = base();
    b.observe(1, 1);
    with("touched group", a, b);
    let mut a = base();
    a.observe(0, 1);
    with("touched", a, base());
    let mut a = base();
    a.end_step(&view);
    with("step", a, base());

    with(
        "max attempts",
        oracle_with(config(2, 4, true), 2),
        oracle_with(config(2, 3, true), 2),
    );
    with(
        "at least once",
        oracle_with(config(2, 3, false), 2),
        oracle_with(config(2, 3, true), 2),
    );
    with(
        "audit every step",
        oracle_with(
            OracleConfig {
                audit_every_step: true,
                ..config(2, 3, true)
            },
            2,
        ),
        base(),
    );
    with(
        "group count",
        oracle_with(config(1, 3, true), 2),
        oracle_with(config(2, 3, true), 2),
    );
    with("events", oracle_with(config(2, 3, true), 1), base());
    pairs
}

#[test]
fn oracles_one_field_apart_are_unequal_and_hash_apart() {
    // Oracles that differ only in their configuration are unequal, but the configuration is
    // left out of the hash (the same in every state of a search).
    let configuration_only = ["max attempts", "at least once", "audit every step"];
    for (name, a, b) in one_field_apart() {
        assert_ne!(a, b, "{name}");
        if !configuration_only.contains(&name) {
            assert_ne!(hash_of(&a), hash_of(&b), "{name}");
        }
        assert_eq!(hash_of(&a), hash_of(&a.clone()), "{name}");
    }
}

#[test]
fn a_clone_is_the_same_state_whatever_it_was_cloned_into() {
    let pairs = one_field_apart();
    let all: Vec<&Oracle> = pairs.iter().flat_map(|(_, a, b)| [a, b]).collect();
    for source in &all {
        let copy = (*source).clone();
        assert_eq!(&&copy, source);
        for target in &all {
            let mut into = (*target).clone();
            into.clone_from(source);
            assert_eq!(&&into, source);
            assert_eq!(hash_of(&into), hash_of(*source));
        }
    }
    // The clone keeps checking as the original does.
    let (oracle, mut view) = acked_run(3, true);
    let mut a = oracle.clone();
    let mut b = Oracle::new(config(1, 1, false));
    b.clone_from(&oracle);
    view.set(0, 2, Status::Available);
    view.frontiers[0] = 1;
    for o in [&mut a, &mut b] {
        o.audit(&view);
        assert_eq!(broken(o), [Invariant::I3, Invariant::I4]);
    }
}

#[test]
fn oracles_apart_only_in_their_violated_bits_hash_apart() {
    // Five events acked by both. One oracle saw the frontier at 5 and then back at 3 (I4);
    // the other saw it reach 3 only. Both end at frontier 3 with the same records: only the
    // violated bits differ, and the checker's fingerprint must tell them apart (else a
    // violating state could pass for a sound one it met first).
    let lean = OracleConfig {
        lean: true,
        ..config(1, 3, false)
    };
    let run = |frontiers: &[Seq]| {
        let mut oracle = oracle_with(lean.clone(), 5);
        let mut view = View::new(1, 5);
        for seq in 1..=5 {
            let issuance = oracle.fetched(&lease(0, seq, 1), 0, 100);
            oracle.settled(issuance, &lease(0, seq, 1), &SettleOp::Ack, true, 1);
            view.set(0, seq, Status::Acked);
        }
        for &frontier in frontiers {
            view.frontiers[0] = frontier;
            oracle.end_step(&view);
        }
        oracle
    };
    let went_back = run(&[5, 3]);
    let stayed = run(&[3, 3]);
    assert_eq!(broken(&went_back), [Invariant::I4]);
    assert!(!stayed.any_violated(), "{:?}", stayed.violations());
    assert_ne!(went_back, stayed);
    assert_ne!(hash_of(&went_back), hash_of(&stayed));
}
