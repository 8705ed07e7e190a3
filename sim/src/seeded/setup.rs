//! The effective configuration of one seeded run, and the bounds derived from it.

use super::faults::FaultPlan;
use super::workload::Workload;
use leasehold_model::{AckPolicy, BrokerConfig, Ms, OracleConfig, Variant};

/// Everything a seeded run depends on (with the seed, it determines the run byte for byte).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The root seed.
    pub seed: u64,
    /// The protocol variant or mutant.
    pub variant: Variant,
    /// Consumer group names.
    pub group_names: Vec<String>,
    /// Worker names.
    pub worker_names: Vec<String>,
    /// Events published at time 0.
    pub events: u32,
    /// Lease duration (claim idle time for Redis variants).
    pub lease_ms: Ms,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// The consumer runtime's ack policy.
    pub policy: AckPolicy,
    /// Fixed clock offsets per worker (from `[config] clock_offset_ms`), over any drawn skew.
    pub clock_offset_ms: Vec<Option<i64>>,
    /// When the broker applies due expiries (`[config] expiry`).
    pub expiry: crate::engine::Expiry,
    /// Handler timing, outcome rates, bounds.
    pub workload: Workload,
    /// The effective fault plan.
    pub faults: FaultPlan,
}

impl Setup {
    /// The broker's configuration.
    pub fn broker_config(&self) -> BrokerConfig {
        BrokerConfig {
            group_count: self.group_names.len(),
            lease_ms: self.lease_ms,
            max_attempts: self.max_attempts,
            variant: self.variant,
        }
    }

    /// The oracle's configuration: I7 is checked under the at-least-once policies.
    pub fn oracle_config(&self) -> OracleConfig {
        OracleConfig::new(
            self.group_names.len(),
            self.max_attempts,
            self.policy.at_least_once(),
        )
    }

    /// The longest one delivery can take once faults are healed: a hung or long handler
    /// (three leases), the handler itself, a round trip with the worst network delay, a poll
    /// and a request timeout.
    pub fn delivery_ms_max(&self) -> Ms {
        let w = &self.workload;
        let f = &self.faults;
        let network_ms = 2 * (1 + f.delay_ms_max + f.reorder_ms_max);
        3 * self.lease_ms + w.handler_ms_max + network_ms + w.poll_ms + w.request_timeout_ms
    }

    /// `liveness_ms_max`: the bound on the healed phase. Every (group, event) needs at most
    /// `max_attempts` deliveries; the workers share them; a pause or slow handler that began
    /// before the heal may still run out.
    pub fn liveness_ms_max(&self) -> Ms {
        let deliveries =
            u64::from(self.events) * self.group_names.len() as u64 * u64::from(self.max_attempts);
        let workers = self.worker_names.len().max(1) as u64;
        let rounds = deliveries.div_ceil(workers) + 2;
        let f = &self.faults;
        rounds * self.delivery_ms_max() + f.pause_ms_max + f.slow_handler_ms_max
    }
}
