//! The workload of a seeded run beyond `[config]`: handler timing, control-flow outcome rates,
//! poison events, renewals, and the named bounds of the two phases.

use super::ratio::Ratio;
use serde::{Deserialize, Serialize};

/// The `[workload]` table of a seeded scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    /// A normal handler takes `1..=handler_ms_max`.
    pub handler_ms_max: u64,
    /// Per handler run: the handler runs long (`lease_ms / 2..=3 * lease_ms`) and the runtime
    /// renews its lease while it runs (when `renew` is on).
    pub long_handler: Ratio,
    /// Per handler run: the handler raises `AckMessage`.
    pub outcome_ack: Ratio,
    /// Per handler run: the handler raises `NackMessage`.
    pub outcome_nack: Ratio,
    /// Per handler run: the handler raises `RejectMessage`.
    pub outcome_reject: Ratio,
    /// Per event: the event is poison — its handler hangs past the lease on every delivery,
    /// so only expiry and dead-lettering end it.
    pub poison: Ratio,
    /// Whether a handler that runs long renews its lease (at half the lease, on its own
    /// clock).
    pub renew: bool,
    /// An idle worker polls again after this long.
    pub poll_ms: u64,
    /// Leases per fetch.
    pub fetch_limit: u32,
    /// How long a worker waits for a reply before it gives the request up (`ambiguous`).
    /// The bounds of a run allow for it; the simulator itself tells a worker of a lost reply
    /// after the reply's network latency, as if the timeout were that short.
    pub request_timeout_ms: u64,
    /// Safety phase bound: faults are injected until every event is settled or this much
    /// simulated time has passed (the phase ends; the liveness phase follows).
    pub safety_ms_max: u64,
    /// Bound on simulator steps in the whole run; hitting it ends the run as inconclusive.
    pub steps_max: u64,
    /// Per worker wake in the safety phase: one more event is published (after the worker's
    /// fetch or renew, so publishes interleave with fetches, expiries and broker restarts), up
    /// to as many events again as `[config] events`. (Absent from files written before it
    /// existed: off.)
    #[serde(default = "Ratio::zero")]
    pub publish: Ratio,
}

impl Default for Workload {
    /// The default workload for the default lease: see [`Workload::for_lease`].
    fn default() -> Workload {
        Workload::for_lease(super::faults::DEFAULT_LEASE_MS)
    }
}

impl Workload {
    /// The default `safety_ms_max` of a run: sixty leases, or two leases per record a worker
    /// has to handle when that is more (so that a large workload runs under faults, not only in
    /// the healed liveness phase).
    pub fn safety_ms_for(lease_ms: u64, records: u64, workers: u64) -> u64 {
        let leases = records.div_ceil(workers.max(1)).saturating_mul(2).max(60);
        lease_ms.max(1).saturating_mul(leases)
    }

    /// The default `steps_max` of a run: a million, or twenty steps per delivery a correct run
    /// may need (records × max_attempts) when that is more.
    pub fn steps_for(records: u64, max_attempts: u32) -> u64 {
        records
            .saturating_mul(u64::from(max_attempts))
            .saturating_mul(20)
            .max(1_000_000)
    }

    /// The default workload with its durations scaled to `lease_ms`: handlers take up to a
    /// fifth of a lease, idle workers poll ten times a lease, a request times out after one
    /// lease, the safety phase lasts at most sixty leases.
    pub fn for_lease(lease_ms: u64) -> Workload {
        let lease_ms = lease_ms.max(1);
        Workload {
            handler_ms_max: (lease_ms / 5).max(1),
            long_handler: Ratio::new(1, 5),
            outcome_ack: Ratio::new(1, 50),
            outcome_nack: Ratio::new(1, 50),
            outcome_reject: Ratio::new(1, 100),
            poison: Ratio::new(1, 20),
            renew: true,
            poll_ms: (lease_ms / 10).max(1),
            fetch_limit: 1,
            request_timeout_ms: lease_ms,
            safety_ms_max: lease_ms.saturating_mul(60),
            steps_max: 1_000_000,
            publish: Ratio::new(1, 10),
        }
    }
}
