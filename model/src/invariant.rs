//! The invariants I1–I7: stable ids and names used by every engine, output and report.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One of the protocol's invariants (docs/invariants.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Invariant {
    /// I1 stale-never-counts: every settle the broker accepts carries the lease id of the
    /// record's current, unexpired lease. Protects against a worker that lost its lease (crash,
    /// pause, partition) settling work somebody else now owns.
    I1,
    /// I2 single-holder: at every instant at most one unexpired lease exists per (group, event).
    /// Protects the mutual exclusion that a lease promises (a renew wrongly accepted shows here).
    I2,
    /// I3 no-lost-event: every published event is, for every group, exactly one of available /
    /// leased / acked / dead-lettered; acked and dead-lettered are final; dead-lettering happens
    /// only by reject or exhausted attempts and keeps its reason. Protects against lost work.
    I3,
    /// I4 frontier-sound: the committed frontier never decreases and every event at or below it
    /// is settled. Protects downstream consumers that trust the frontier as durable progress.
    I4,
    /// I5 attempts-bounded: deliveries per (group, event) never exceed `max_attempts`. Protects
    /// against poison events that are retried forever.
    I5,
    /// I6 eventually-settled: once faults stop, every event of every group becomes acked or
    /// dead-lettered and the frontier reaches the last event. Protects progress.
    I6,
    /// I7 at-least-once: under `nack_on_error` and a correct `manual` handler, every acked event's
    /// handler completed successfully at least once under a lease that was current when it
    /// started. Protects the delivery guarantee the runtime advertises.
    I7,
}

impl Invariant {
    /// All invariants, in order.
    pub const ALL: [Invariant; 7] = [
        Invariant::I1,
        Invariant::I2,
        Invariant::I3,
        Invariant::I4,
        Invariant::I5,
        Invariant::I6,
        Invariant::I7,
    ];

    /// `I1` … `I7`.
    pub fn id(self) -> &'static str {
        match self {
            Invariant::I1 => "I1",
            Invariant::I2 => "I2",
            Invariant::I3 => "I3",
            Invariant::I4 => "I4",
            Invariant::I5 => "I5",
            Invariant::I6 => "I6",
            Invariant::I7 => "I7",
        }
    }

    /// The stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::I1 => "stale-never-counts",
            Invariant::I2 => "single-holder",
            Invariant::I3 => "no-lost-event",
            Invariant::I4 => "frontier-sound",
            Invariant::I5 => "attempts-bounded",
            Invariant::I6 => "eventually-settled",
            Invariant::I7 => "at-least-once",
        }
    }

    /// Parses `I4`, `i4` or `frontier-sound`.
    pub fn parse(text: &str) -> Option<Invariant> {
        Invariant::ALL
            .into_iter()
            .find(|inv| inv.id().eq_ignore_ascii_case(text) || inv.name() == text)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.id(), self.name())
    }
}
