//! [`Snapshot`]: a run's state as read from the server, in the model's types, and what the
//! oracle reads of it ([`leasehold_model::BrokerView`]).
//!
//! A row of `jobs` is a record that is not settled: `lease_id IS NULL` is
//! `Available { attempts, not_before_ms: visible_at }`, otherwise
//! `Leased { lease_id, attempts, deadline_ms: visible_at }`. A row of `dead_letters` is
//! `DeadLettered { reason: error }`. A published event with neither is acked (its row was
//! deleted).

use leasehold_model::{GroupIx, LeaseId, Ms, Reason, Record, Seq, Status};
use postgres::Row;

/// Every record of every group, read from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    groups: Vec<Vec<Record>>,
    events: Seq,
}

impl Snapshot {
    /// The records the rows of [`crate::sql::STATE`] describe, for `published` events.
    pub fn from_rows(group_count: usize, published: Seq, rows: &[Row]) -> Result<Snapshot, String> {
        let mut groups = vec![vec![Record::Acked; published as usize]; group_count];
        for row in rows {
            let group: i32 = row.get(0);
            let seq: i64 = row.get(1);
            let attempts = row.get::<_, i32>(2) as u32;
            let lease_id: Option<i64> = row.get(3);
            let visible_at: Option<i64> = row.get(4);
            let error: Option<String> = row.get(5);
            let record = match (lease_id, visible_at, error) {
                (_, _, Some(error)) => Record::DeadLettered {
                    reason: Reason::new(&error),
                },
                (None, Some(at), None) => Record::Available {
                    attempts,
                    not_before_ms: at as Ms,
                },
                (Some(id), Some(at), None) => Record::Leased {
                    lease_id: LeaseId(id as u64),
                    attempts,
                    deadline_ms: at as Ms,
                },
                other => return Err(format!("{group}/{seq}: unexpected row {other:?}")),
            };
            let slot = groups
                .get_mut(group as usize)
                .and_then(|g| g.get_mut((seq as usize).wrapping_sub(1)));
            match slot {
                Some(slot) => *slot = record,
                None => {
                    return Err(format!(
                        "a row for {group}/{seq}, beyond the published events"
                    ))
                }
            }
        }
        Ok(Snapshot {
            groups,
            events: published,
        })
    }

    /// The records of `group`, in sequence order.
    pub fn records(&self, group: GroupIx) -> &[Record] {
        &self.groups[group]
    }

    /// The record of (group, seq), if both exist.
    pub fn record(&self, group: GroupIx, seq: Seq) -> Option<&Record> {
        let index = (seq as usize).checked_sub(1)?;
        self.groups.get(group)?.get(index)
    }

    /// Events published.
    pub fn event_count(&self) -> Seq {
        self.events
    }

    /// Number of groups.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The earliest deadline of a lease.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.groups
            .iter()
            .flatten()
            .filter_map(|record| match record {
                Record::Leased { deadline_ms, .. } => Some(*deadline_ms),
                _ => None,
            })
            .min()
    }

    /// The status of (group, seq) and, for a dead letter, its reason.
    pub fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.record(group, seq) {
            Some(Record::DeadLettered { reason }) => {
                (Status::DeadLettered, Some(reason.as_str().to_string()))
            }
            Some(record) => (record.status(), None),
            None => (Status::Dropped, None),
        }
    }

    /// The committed frontier: the largest `k` with `1..=k` all settled.
    pub fn frontier(&self, group: GroupIx) -> Seq {
        let records = &self.groups[group];
        records.iter().take_while(|r| r.is_settled()).count() as Seq
    }

    /// Records of every group that are neither acked nor dead-lettered (the rows of `jobs`).
    pub fn unsettled_count(&self) -> u64 {
        self.groups
            .iter()
            .flatten()
            .filter(|r| !r.is_settled())
            .count() as u64
    }
}
