//! The oracle's ghost bookkeeping: a group's records and the reasons it keeps, the words of a
//! stale settle's I1, and which broker statuses plainly agree with a ghost record.

use leasehold_model::detail::{Detail, Happened, Part};
use leasehold_model::inline::InlineVec;
use leasehold_model::oracle::{
    plainly_agrees, Final, GhostGroup, GhostRecord, Issuance, Oracle, OracleConfig, OPEN,
    PROCESSED, RAN,
};
use leasehold_model::types::{Lease, LeaseId, Ms, Reason, SettleOp, Status};
use leasehold_model::Invariant;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

fn hash_of(group: &GhostGroup) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(group)
}

/// A group of `finals.len()` records, settled as given, its reasons kept in that order.
fn group_of(finals: &[Option<Final>]) -> GhostGroup {
    let mut group = GhostGroup {
        records: InlineVec::new(),
        kept: InlineVec::new(),
        frontier: 0,
        settled_prefix: 0,
    };
    for settled in finals {
        let code = settled.map_or(OPEN, |settled| group.code(settled));
        group.records.push(GhostRecord {
            deliveries: 1,
            bits: code,
        });
    }
    group
}

#[test]
fn groups_that_kept_their_reasons_in_another_order_are_equal() {
    let (a, b) = (Reason::new("a"), Reason::new("b"));
    let first = group_of(&[Some(Final::DeadLettered(a)), Some(Final::DeadLettered(b))]);
    let mut second = group_of(&[None, None]);
    // The same records, the reasons kept b first.
    second.records[1].bits = second.code(Final::DeadLettered(b));
    second.records[0].bits = second.code(Final::DeadLettered(a));
    assert_ne!(first.kept, second.kept);
    assert_eq!(first, second);
    assert_eq!(hash_of(&first), hash_of(&second));
    // A handler's marks are part of the record, apart from its settled state.
    let mut marked = second.clone();
    marked.records[0].bits |= PROCESSED | RAN;
    assert_eq!(
        marked.settled(&marked.records[0]),
        Some(Final::DeadLettered(a))
    );
    assert!(marked.records[0].processed() && marked.records[0].ran());
    assert_ne!(first, marked);
    assert_ne!(hash_of(&first), hash_of(&marked));
    // The reasons the other way round: a different state.
    let swapped = group_of(&[Some(Final::DeadLettered(b)), Some(Final::DeadLettered(a))]);
    assert_ne!(first, swapped);
    assert_ne!(hash_of(&first), hash_of(&swapped));
    // A reason is kept once; the records read back what was settled.
    let same = group_of(&[Some(Final::DeadLettered(a)), Some(Final::DeadLettered(a))]);
    assert_eq!(same.kept.len(), 1);
    let read: Vec<_> = same.records.iter().map(|r| same.settled(r)).collect();
    assert_eq!(read, [Some(Final::DeadLettered(a)); 2]);
    // "max attempts", the common reason, has a code of its own.
    let finals = [
        Some(Final::DeadLettered(Reason::MAX_ATTEMPTS)),
        Some(Final::DeadLettered(b)),
        Some(Final::Acked),
        None,
    ];
    let mixed = group_of(&finals);
    assert_eq!(mixed.kept.len(), 1);
    let read: Vec<_> = mixed.records.iter().map(|r| mixed.settled(r)).collect();
    assert_eq!(read, finals);
}

/// A reason per record (a text that names its event, say) is kept per record, past any
/// small limit; a few reasons in turn stay a few entries.
#[test]
fn reasons_are_kept_however_many_a_run_makes_up() {
    let many: Vec<_> = (0..70_000)
        .map(|i| Some(Final::DeadLettered(Reason::new(&format!("bad order {i}")))))
        .collect();
    let group = group_of(&many);
    assert_eq!(group.kept.len(), many.len());
    for (record, settled) in group.records.iter().zip(&many) {
        assert_eq!(group.settled(record), *settled);
    }
    let (a, b) = (Reason::new("a"), Reason::new("b"));
    let turns: Vec<_> = (0..1_000)
        .map(|i| Some(Final::DeadLettered(if i % 2 == 0 { a } else { b })))
        .collect();
    let group = group_of(&turns);
    assert_eq!(group.kept.len(), 2);
    for (record, settled) in group.records.iter().zip(&turns) {
        assert_eq!(group.settled(record), *settled);
    }
}

fn lease_on(id: u64, now_ms: Ms) -> Lease {
    Lease {
        lease_id: LeaseId(id),
        group: 0,
        seq: 1,
        attempt: 1,
        deadline_ms: now_ms + 100,
        receipt: None,
    }
}

/// The I1 of an accepted settle of `stale` after `story` ran on a one-event oracle.
fn stale_i1(story: impl FnOnce(&mut Oracle) -> (Issuance, Lease)) -> (Detail, Oracle) {
    let mut oracle = Oracle::new(OracleConfig::new(1, 3, false));
    oracle.published();
    let (stale, copy) = story(&mut oracle);
    oracle.settled(stale, &copy, &SettleOp::Ack, true, 500);
    let violations = oracle.violations();
    let i1 = violations.iter().find(|v| v.invariant == Invariant::I1);
    let detail = i1.expect("an I1").detail.clone();
    (detail, oracle)
}

/// A stale settle names how its lease ended, and when, as a moment a timeline can place.
#[test]
fn an_accepted_stale_settle_names_how_and_when_its_lease_ended() {
    let at = |detail: &Detail| -> Vec<Happened> {
        let parts = detail.parts().iter();
        parts
            .filter_map(|p| match p {
                Part::At(moment) => Some(moment.what),
                _ => None,
            })
            .collect()
    };
    // Its deadline passed.
    let (detail, _) = stale_i1(|o| {
        let l1 = lease_on(1, 0);
        let i1 = o.fetched(&l1, 0, 100);
        o.advance(150);
        (i1, l1)
    });
    assert_eq!(
        detail.to_string(),
        "ack of L1 accepted on event 1 of group 0, but L1 expired at 100 ms"
    );
    assert_eq!(at(&detail), [Happened::Expired(Issuance(0))]);
    // A nack of it was accepted.
    let (detail, _) = stale_i1(|o| {
        let l1 = lease_on(1, 0);
        let i1 = o.fetched(&l1, 0, 100);
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        o.settled(i1, &l1, &nack, true, 20);
        o.fetched(&lease_on(2, 30), 30, 100);
        (i1, l1)
    });
    assert_eq!(
        detail.to_string(),
        "ack of L1 accepted on event 1 of group 0, but L1 was nacked at 20 ms"
    );
    assert_eq!(at(&detail), [Happened::Settled(Issuance(0))]);
    // A later lease was issued while it lived (I2 first), which the broker gave its id
    // after a restart.
    let (detail, oracle) = stale_i1(|o| {
        let l1 = lease_on(7, 0);
        let i1 = o.fetched(&l1, 0, 100);
        o.broker_restarted(10);
        o.fetched(&lease_on(7, 20), 20, 100);
        (i1, l1)
    });
    assert_eq!(
        detail.to_string(),
        "ack of L1 accepted on event 1 of group 0, but L1 was superseded by L2 at 20 ms \
         and its lease id was issued again to L2 at 20 ms, after the broker restart at 10 ms"
    );
    assert_eq!(
        at(&detail),
        [
            Happened::Issued(Issuance(1)),
            Happened::Issued(Issuance(1)),
            Happened::RestartedBefore(Issuance(1)),
        ]
    );
    let i2 = &oracle.violations()[0];
    assert_eq!(i2.invariant, Invariant::I2);
    assert_eq!(
        i2.detail.to_string(),
        "L2 issued for event 1 of group 0 while L1 is unexpired (issued at 0 ms, until 100 ms)"
    );
    // A lean oracle keeps no notes, and the engine's word lets an ended lease's note go.
    let mut lean = Oracle::new(OracleConfig {
        lean: true,
        ..OracleConfig::new(1, 3, false)
    });
    lean.published();
    lean.fetched(&lease_on(1, 0), 0, 100);
    assert_eq!(lean.notes_kept(), 0);
    let mut full = Oracle::new(OracleConfig::new(1, 3, false));
    full.published();
    let i1 = full.fetched(&lease_on(1, 0), 0, 100);
    full.forget(i1);
    assert_eq!(full.notes_kept(), 1, "live: kept");
    full.advance(100);
    assert_eq!(full.notes_kept(), 0, "ended and forgotten: gone");
}

#[test]
fn plainly_agrees_is_both_acked_or_both_open() {
    let statuses = [
        Status::Available,
        Status::Leased,
        Status::Acked,
        Status::DeadLettered,
        Status::Dropped,
    ];
    let group = group_of(&[
        None,
        Some(Final::Acked),
        Some(Final::DeadLettered(Reason::new("a"))),
        Some(Final::DeadLettered(Reason::new("b"))),
    ]);
    for record in group.records.iter() {
        for status in statuses {
            let expected = matches!(
                (group.settled(record), status),
                (Some(Final::Acked), Status::Acked) | (None, Status::Available | Status::Leased)
            );
            assert_eq!(
                plainly_agrees(record.settled(), status),
                expected,
                "{:?} against {status:?}",
                group.settled(record)
            );
        }
    }
}
