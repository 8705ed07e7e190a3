//! [`Mirror`]: the delivery records of a run as read from the server's replies, in the model's
//! own types, so that [`BrokerView`] (which the oracle calls for every record after every step)
//! answers without a round trip. The server stays the authority: a broker restart and
//! [`crate::RedisBackend::server_view`] rebuild a mirror from the server alone
//! (`crate::state`), and the conformance tests compare both with the pure broker.

use leasehold_model::{BrokerView, GroupIx, LeaseId, Ms, Record, Seq, Status};
use std::collections::BTreeSet;

/// Delivery records per (group, seq), the committed frontiers, and indexes kept with every
/// change so that no question the engines ask after each step reads every record: the leases
/// by deadline, the records a claim may take, the records never delivered, the unsettled count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// `records[group][seq - 1]`.
    records: Vec<Vec<Record>>,
    frontier: Vec<Seq>,
    /// Every lease as (deadline, group, seq).
    deadlines: BTreeSet<(Ms, GroupIx, Seq)>,
    /// Per group: the delivered, unsettled, unleased records (a claim takes them once idle).
    redeliverable: Vec<BTreeSet<Seq>>,
    /// Per group: how many records were never delivered.
    undelivered: Vec<u64>,
    /// Records of every group neither acked nor dead-lettered.
    unsettled: u64,
}

/// A lease whose deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Due {
    pub group: GroupIx,
    pub seq: Seq,
    pub lease_id: LeaseId,
    pub attempts: u32,
    pub deadline_ms: Ms,
}

impl Mirror {
    /// The records of a run, `records[group][seq - 1]` (every group has the same length).
    pub fn from_records(records: Vec<Vec<Record>>) -> Mirror {
        assert!(!records.is_empty(), "at least one group");
        let groups = records.len();
        let mut mirror = Mirror {
            frontier: vec![0; groups],
            records,
            deadlines: BTreeSet::new(),
            redeliverable: vec![BTreeSet::new(); groups],
            undelivered: vec![0; groups],
            unsettled: 0,
        };
        for group in 0..groups {
            for index in 0..mirror.records[group].len() {
                let record = mirror.records[group][index];
                mirror.index(group, index as Seq + 1, record, true);
            }
            mirror.advance_frontier(group);
        }
        mirror
    }

    /// The records of `group`, in sequence order.
    pub fn records(&self, group: GroupIx) -> &[Record] {
        &self.records[group]
    }

    /// The record of (group, seq), if both exist.
    pub fn get(&self, group: GroupIx, seq: Seq) -> Option<&Record> {
        let index = (seq as usize).checked_sub(1)?;
        self.records.get(group)?.get(index)
    }

    /// One more event, available to every group.
    pub(crate) fn push_event(&mut self) {
        let record = Record::Available {
            attempts: 0,
            not_before_ms: 0,
        };
        for group in 0..self.records.len() {
            self.records[group].push(record);
            let seq = self.records[group].len() as Seq;
            self.index(group, seq, record, true);
        }
    }

    /// Replaces a record; advances the frontier and the indexes.
    pub(crate) fn set(&mut self, group: GroupIx, seq: Seq, record: Record) {
        let old = std::mem::replace(&mut self.records[group][seq as usize - 1], record);
        self.index(group, seq, old, false);
        self.index(group, seq, record, true);
        self.advance_frontier(group);
    }

    /// Adds `record` of (group, seq) to the indexes, or takes it out of them.
    fn index(&mut self, group: GroupIx, seq: Seq, record: Record, add: bool) {
        let count = |n: &mut u64| {
            *n = if add { *n + 1 } else { *n - 1 };
        };
        if !record.is_settled() {
            count(&mut self.unsettled);
        }
        match record {
            Record::Leased { deadline_ms, .. } => {
                let key = (deadline_ms, group, seq);
                if add {
                    self.deadlines.insert(key);
                } else {
                    self.deadlines.remove(&key);
                }
            }
            Record::Available { attempts: 0, .. } => count(&mut self.undelivered[group]),
            Record::Available { .. } => {
                if add {
                    self.redeliverable[group].insert(seq);
                } else {
                    self.redeliverable[group].remove(&seq);
                }
            }
            _ => {}
        }
    }

    /// The pending entries of `group` that may be claimed at `now_ms` (delivered, unsettled,
    /// not leased, idle since `not_before_ms`), lowest seq first, at most `limit`.
    pub(crate) fn claimable(&self, group: GroupIx, now_ms: Ms, limit: usize) -> Vec<Seq> {
        let idle = |&&seq: &&Seq| match self.get(group, seq) {
            Some(Record::Available { not_before_ms, .. }) => *not_before_ms <= now_ms,
            _ => unreachable!("the index holds available records only"),
        };
        let redeliverable = self.redeliverable[group].iter();
        redeliverable.filter(idle).take(limit).copied().collect()
    }

    /// Whether `group` has entries it was never delivered.
    pub(crate) fn has_undelivered(&self, group: GroupIx) -> bool {
        self.undelivered[group] > 0
    }

    /// The leases whose deadline is `<= now_ms`, in (group, seq) order.
    pub(crate) fn due(&self, now_ms: Ms) -> Vec<Due> {
        let mut due: Vec<Due> = self
            .deadlines
            .range(..=(now_ms, GroupIx::MAX, Seq::MAX))
            .map(|&(deadline_ms, group, seq)| match self.get(group, seq) {
                Some(&Record::Leased {
                    lease_id, attempts, ..
                }) => Due {
                    group,
                    seq,
                    lease_id,
                    attempts,
                    deadline_ms,
                },
                _ => unreachable!("the index holds leased records only"),
            })
            .collect();
        due.sort_unstable_by_key(|d| (d.group, d.seq));
        due
    }

    /// The earliest lease deadline.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.deadlines
            .first()
            .map(|&(deadline_ms, _, _)| deadline_ms)
    }

    fn advance_frontier(&mut self, group: GroupIx) {
        let records = &self.records[group];
        let mut frontier = self.frontier[group] as usize;
        while frontier < records.len() && records[frontier].is_settled() {
            frontier += 1;
        }
        self.frontier[group] = frontier as Seq;
    }
}

impl BrokerView for Mirror {
    fn group_count(&self) -> usize {
        self.records.len()
    }

    fn event_count(&self) -> Seq {
        self.records[0].len() as Seq
    }

    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.get(group, seq) {
            Some(Record::DeadLettered { reason }) => {
                (Status::DeadLettered, Some(reason.to_string()))
            }
            Some(record) => (record.status(), None),
            None => (Status::Dropped, None),
        }
    }

    fn frontier(&self, group: GroupIx) -> Seq {
        self.frontier[group]
    }

    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.get(group, seq).map_or(Status::Dropped, Record::status)
    }

    fn unsettled_count(&self) -> u64 {
        self.unsettled
    }

    fn status_kinds(&self, group: GroupIx, first: Seq, out: &mut [Status]) -> usize {
        let records = match (first, self.records.get(group)) {
            (1.., Some(records)) => records.get(first as usize - 1..).unwrap_or(&[]),
            _ => &[],
        };
        for (slot, record) in out.iter_mut().zip(records) {
            *slot = record.status();
        }
        out.len().min(records.len())
    }

    fn dead_letter_reason_is(&self, group: GroupIx, seq: Seq, reason: &str) -> bool {
        matches!(self.get(group, seq), Some(Record::DeadLettered { reason: kept }) if kept == reason)
    }
}
