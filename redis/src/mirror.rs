//! [`Mirror`]: the delivery records of a run as read from the server's replies, in the model's
//! own types, so that [`BrokerView`] (which the oracle calls for every record after every step)
//! answers without a round trip. The server stays the authority: a broker restart and
//! [`crate::RedisBackend::server_view`] rebuild a mirror from the server alone
//! (`crate::state`), and the conformance tests compare both with the pure broker.

use leasehold_model::{BrokerView, GroupIx, LeaseId, Ms, Record, Seq, Status};

/// Delivery records per (group, seq), the committed frontiers and the earliest lease deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// `records[group][seq - 1]`.
    records: Vec<Vec<Record>>,
    frontier: Vec<Seq>,
    earliest_deadline: Option<Ms>,
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
        let mut mirror = Mirror {
            frontier: vec![0; records.len()],
            records,
            earliest_deadline: None,
        };
        for group in 0..mirror.records.len() {
            mirror.advance_frontier(group);
        }
        mirror.refresh_earliest_deadline();
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
        for records in &mut self.records {
            records.push(Record::Available {
                attempts: 0,
                not_before_ms: 0,
            });
        }
    }

    /// Replaces a record; advances the frontier and the earliest deadline.
    pub(crate) fn set(&mut self, group: GroupIx, seq: Seq, record: Record) {
        self.records[group][seq as usize - 1] = record;
        self.advance_frontier(group);
        self.refresh_earliest_deadline();
    }

    /// The pending entries of `group` that may be claimed at `now_ms` (delivered, unsettled,
    /// not leased, idle since `not_before_ms`), lowest seq first, at most `limit`.
    pub(crate) fn claimable(&self, group: GroupIx, now_ms: Ms, limit: usize) -> Vec<Seq> {
        let mut seqs = Vec::new();
        for (index, record) in self.records[group].iter().enumerate() {
            if seqs.len() == limit {
                break;
            }
            if let Record::Available {
                attempts: 1..,
                not_before_ms,
            } = record
            {
                if *not_before_ms <= now_ms {
                    seqs.push(index as Seq + 1);
                }
            }
        }
        seqs
    }

    /// Whether `group` has entries it was never delivered.
    pub(crate) fn has_undelivered(&self, group: GroupIx) -> bool {
        self.records[group]
            .iter()
            .any(|record| matches!(record, Record::Available { attempts: 0, .. }))
    }

    /// The leases whose deadline is `<= now_ms`, in (group, seq) order.
    pub(crate) fn due(&self, now_ms: Ms) -> Vec<Due> {
        if self
            .earliest_deadline
            .is_none_or(|earliest| earliest > now_ms)
        {
            return Vec::new();
        }
        let mut due = Vec::new();
        for (group, records) in self.records.iter().enumerate() {
            for (index, record) in records.iter().enumerate() {
                if let Record::Leased {
                    lease_id,
                    attempts,
                    deadline_ms,
                    ..
                } = *record
                {
                    if deadline_ms <= now_ms {
                        due.push(Due {
                            group,
                            seq: index as Seq + 1,
                            lease_id,
                            attempts,
                            deadline_ms,
                        });
                    }
                }
            }
        }
        due
    }

    /// The earliest lease deadline.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.earliest_deadline
    }

    fn advance_frontier(&mut self, group: GroupIx) {
        let records = &self.records[group];
        let mut frontier = self.frontier[group] as usize;
        while frontier < records.len() && records[frontier].is_settled() {
            frontier += 1;
        }
        self.frontier[group] = frontier as Seq;
    }

    fn refresh_earliest_deadline(&mut self) {
        self.earliest_deadline = self
            .records
            .iter()
            .flatten()
            .filter_map(|record| match record {
                Record::Leased { deadline_ms, .. } => Some(*deadline_ms),
                _ => None,
            })
            .min();
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
