//! Named bounds: what stops a run that could otherwise go on forever.
//!
//! Every bound is derived from the run's workload (the events a run may publish × groups ×
//! attempts, the lease, the fault plan) or pinned by the user, and hitting one is an **outcome**, never a violation: the
//! seed is *inconclusive*, reported with the bound's name, and not saved as a finding (VOPR's
//! "pending" reason). Only a definite failure — the oracle's checks, or a liveness phase in
//! which nothing is left to happen while events are still unsettled — is a violation.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A bound that can stop a run without a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Steps of the whole run (`[workload] steps_max`).
    StepsMax,
    /// Simulated time of the liveness phase ([`crate::seeded::Setup::liveness_ms_max`]).
    LivenessMsMax,
    /// Handler runs of the liveness phase: more than every record's `max_attempts`
    /// deliveries ([`drain_handler_runs_max`]).
    DrainHandlerRunsMax,
}

impl Bound {
    /// Every bound, in report order.
    pub const ALL: [Bound; 3] = [
        Bound::StepsMax,
        Bound::LivenessMsMax,
        Bound::DrainHandlerRunsMax,
    ];

    /// The name reports use (`steps_max`, …).
    pub fn name(self) -> &'static str {
        match self {
            Bound::StepsMax => "steps_max",
            Bound::LivenessMsMax => "liveness_ms_max",
            Bound::DrainHandlerRunsMax => "drain_handler_runs_max",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The bound on handler runs in one liveness phase: every record may need `max_attempts`
/// deliveries (each a handler run), plus one idle round of every worker over every group. A
/// correct protocol never reaches it (a record delivered more often breaks I5); a protocol that
/// redelivers forever does, and the seed is inconclusive for I6 instead of running forever.
pub fn drain_handler_runs_max(records: u64, max_attempts: u32, workers: usize) -> u64 {
    records
        .saturating_mul(u64::from(max_attempts))
        .saturating_add(workers as u64 * 64)
}
