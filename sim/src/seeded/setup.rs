//! The effective configuration of one seeded run, the bounds derived from it, and its
//! validation.
//!
//! A run's every bound follows from its setup: the safety phase and the step budget scale with
//! the workload (records per worker, attempts), the liveness phase with the deliveries it may
//! need. [`Setup::validate`] checks every user-given size and duration with checked arithmetic
//! before a run starts, so that no input can overflow virtual time: an error names the field
//! (`config.lease_ms`, which the command line shows as `--lease-ms`).

use super::faults::FaultPlan;
use super::prng::Draws;
use super::workload::Workload;
use crate::engine::Expiry;
use leasehold_model::{AckPolicy, BrokerConfig, Ms, Variant};
use std::fmt;

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
    pub expiry: Expiry,
    /// Handler timing, outcome rates, bounds.
    pub workload: Workload,
    /// The effective fault plan.
    pub faults: FaultPlan,
    /// How the run's random words become numbers in a range (a seeded file's `draws`).
    pub draws: Draws,
}

/// The last simulated millisecond a run may reach: every bound and every duration must keep a
/// run's clock below it (so that no addition on virtual time can overflow).
pub const TIME_MS_MAX: Ms = 1 << 62;
/// The largest `steps_max`: as [`TIME_MS_MAX`], below TOML's largest integer, so that a run's
/// bounds can always be written in the scenario file of what it found.
pub const STEPS_MAX: u64 = 1 << 62;
/// The most consumer groups a run may have.
pub const GROUPS_MAX: usize = 1_024;
/// The most workers a run may have.
pub const WORKERS_MAX: usize = 1_024;
/// The largest `max_attempts`.
pub const ATTEMPTS_MAX: u32 = 1 << 20;
/// The most records ([`Setup::records`]: the events a run may publish × groups) a run may hold:
/// about 32 bytes each between the broker (24) and the oracle (8), so 2^28 records take some
/// 9 GB.
pub const RECORDS_MAX: u64 = 1 << 28;

/// A setup that cannot run, naming the field at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupError {
    /// The field's table in a scenario file (`config`, `workload`, `faults`).
    pub table: &'static str,
    /// The field's key (`lease_ms`).
    pub key: String,
    /// What is wrong, in one line.
    pub message: String,
}

impl SetupError {
    /// An error about `table.key` (`table` empty: a top-level key).
    pub fn new(table: &'static str, key: &str, message: String) -> SetupError {
        SetupError {
            table,
            key: key.to_string(),
            message,
        }
    }

    /// The field as a scenario file names it: `config.lease_ms`.
    pub fn field(&self) -> String {
        if self.table.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.table, self.key)
        }
    }

    /// The field's path of keys in a scenario file: `["config", "lease_ms"]`.
    pub fn path(&self) -> Vec<&str> {
        let mut path: Vec<&str> = Vec::new();
        if !self.table.is_empty() {
            path.push(self.table);
        }
        path.extend(self.key.split('.'));
        path
    }

    /// The message for a command line: the flag that sets the field, or the field.
    pub fn for_flags(&self) -> String {
        match self.flag() {
            Some(flag) => format!("{flag}: {}", self.message),
            None => self.to_string(),
        }
    }

    /// The command-line flag that sets the field, when there is one: `--lease-ms`.
    pub fn flag(&self) -> Option<String> {
        let flagged = matches!(
            (self.table, self.key.as_str()),
            (
                "config",
                "events" | "groups" | "workers" | "lease_ms" | "max_attempts"
            ) | ("workload", "safety_ms_max" | "steps_max")
        ) || (self.table == "faults"
            && FaultPlan::MAGNITUDES.contains(&self.key.as_str()));
        flagged.then(|| format!("--{}", self.key.replace('_', "-")))
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.message)
    }
}

impl std::error::Error for SetupError {}

/// The default names: groups `g0`, `g1`, …
pub fn group_name(index: usize) -> String {
    format!("g{index}")
}

/// The default names: workers `A` … `Z`, then `W26`, `W27`, …
pub fn worker_name(index: usize) -> String {
    if index < 26 {
        char::from(b'A' + index as u8).to_string()
    } else {
        format!("W{index}")
    }
}

impl Setup {
    /// The default run of `variant` (seed 0): 20 events, groups `g0` and `g1`, workers `A`, `B`
    /// and `C`, a 30 s lease, 3 attempts, `nack_on_error`, every fault on at its default
    /// intensity, expiry at the deadline, rand's `Uniform` draws.
    pub fn default_for(variant: Variant) -> Setup {
        let lease_ms = super::faults::DEFAULT_LEASE_MS;
        let mut setup = Setup {
            seed: 0,
            variant,
            group_names: (0..2).map(group_name).collect(),
            worker_names: (0..3).map(worker_name).collect(),
            events: 20,
            lease_ms,
            max_attempts: 3,
            policy: AckPolicy::NackOnError,
            clock_offset_ms: vec![None; 3],
            expiry: Expiry::AtDeadline,
            workload: Workload::for_lease(lease_ms),
            faults: FaultPlan::for_lease(lease_ms),
            draws: Draws::default(),
        };
        setup.derive_bounds(true, true);
        setup
    }

    /// Sets the number of events, groups and workers, naming new groups and workers by
    /// default ([`group_name`], [`worker_name`]).
    pub fn resize(&mut self, events: u32, groups: usize, workers: usize) {
        self.events = events;
        self.group_names.truncate(groups);
        while self.group_names.len() < groups {
            self.group_names.push(group_name(self.group_names.len()));
        }
        self.worker_names.truncate(workers);
        while self.worker_names.len() < workers {
            self.worker_names.push(worker_name(self.worker_names.len()));
        }
        self.clock_offset_ms.resize(workers, None);
    }

    /// Recomputes the bounds that follow from the workload's size: `safety_ms_max` (when
    /// `safety`) and `steps_max` (when `steps`); see [`Workload::safety_ms_for`] and
    /// [`Workload::steps_for`].
    pub fn derive_bounds(&mut self, safety: bool, steps: bool) {
        let (records, workers) = (self.records(), self.worker_names.len() as u64);
        if safety {
            self.workload.safety_ms_max = Workload::safety_ms_for(self.lease_ms, records, workers);
        }
        if steps {
            self.workload.steps_max = Workload::steps_for(records, self.max_attempts);
        }
    }

    /// Events a run may publish: `events` at the start and, when the workload publishes during
    /// the run ([`Workload::publish`]), up to as many again.
    pub fn events_max(&self) -> u64 {
        let during = if self.workload.publish.is_zero() {
            0
        } else {
            u64::from(self.events)
        };
        u64::from(self.events) + during
    }

    /// The most records a run may hold: [`Setup::events_max`] × groups. Every bound that
    /// scales with the workload is derived from it.
    pub fn records(&self) -> u64 {
        self.events_max() * self.group_names.len() as u64
    }

    /// The broker's configuration.
    pub fn broker_config(&self) -> BrokerConfig {
        BrokerConfig {
            group_count: self.group_names.len(),
            lease_ms: self.lease_ms,
            max_attempts: self.max_attempts,
            variant: self.variant,
        }
    }

    /// The longest one delivery can take once faults are healed: a hung or long handler
    /// (three leases), the handler itself, a round trip with the worst network delay, a poll
    /// and a request timeout.
    pub fn delivery_ms_max(&self) -> Ms {
        self.delivery_ms_max_wide().min(u128::from(Ms::MAX)) as Ms
    }

    fn delivery_ms_max_wide(&self) -> u128 {
        // Two messages, each at least a millisecond, besides the terms.
        2 + self
            .delivery_terms()
            .iter()
            .map(|&(.., value, times)| u128::from(value) * times)
            .sum::<u128>()
    }

    /// The durations one delivery's bound adds up, each with its field and how many times it
    /// counts: a long handler's three leases, the handler, a request and its reply (each
    /// delayed and reordered), a poll and a reply's timeout. The lease comes last.
    fn delivery_terms(&self) -> [(&'static str, &'static str, u64, u128); 6] {
        let (w, f) = (&self.workload, &self.faults);
        [
            ("workload", "handler_ms_max", w.handler_ms_max, 1),
            ("faults", "delay_ms_max", f.delay_ms_max, 2),
            ("faults", "reorder_ms_max", f.reorder_ms_max, 2),
            ("workload", "poll_ms", w.poll_ms, 1),
            ("workload", "request_timeout_ms", w.request_timeout_ms, 1),
            ("config", "lease_ms", self.lease_ms, 3),
        ]
    }

    /// The duration other than the lease that makes most of a delivery's bound, when it
    /// outweighs the lease's share (a run too long for simulated time then names it).
    fn dominant_duration(&self) -> Option<(&'static str, &'static str, u64)> {
        // The last of equal shares wins: the lease, on a tie.
        self.delivery_terms()
            .into_iter()
            .max_by_key(|&(.., value, times)| u128::from(value) * times)
            .filter(|&(_, key, ..)| key != "lease_ms")
            .map(|(table, key, value, _)| (table, key, value))
    }

    /// `liveness_ms_max`: the bound on the healed phase. Every (group, event) needs at most
    /// `max_attempts` deliveries; the workers share them; a pause or slow handler that began
    /// before the heal may still run out. (Saturates: [`Setup::validate`] rejects a setup
    /// where it would overflow.)
    pub fn liveness_ms_max(&self) -> Ms {
        self.liveness_ms_max_wide().min(u128::from(Ms::MAX)) as Ms
    }

    fn liveness_ms_max_wide(&self) -> u128 {
        let deliveries = u128::from(self.records()) * u128::from(self.max_attempts);
        let workers = self.worker_names.len().max(1) as u128;
        let rounds = deliveries.div_ceil(workers) + 2;
        let f = &self.faults;
        rounds.saturating_mul(self.delivery_ms_max_wide())
            + u128::from(f.pause_ms_max)
            + u128::from(f.slow_handler_ms_max)
    }

    /// Checks every size and duration, and that the run's bounds keep its clock below
    /// [`TIME_MS_MAX`]. The first problem found is returned.
    pub fn validate(&self) -> Result<(), SetupError> {
        self.validate_sizes()?;
        self.validate_durations()?;
        let safety = u128::from(self.workload.safety_ms_max);
        let delivery = self.delivery_ms_max_wide();
        if delivery > u128::from(TIME_MS_MAX) / 4 {
            return Err(SetupError::new(
                "config",
                "lease_ms",
                format!(
                    "{} ms is too long: one delivery could take {delivery} ms, past the end of simulated time ({TIME_MS_MAX} ms)",
                    self.lease_ms
                ),
            ));
        }
        let liveness = self.liveness_ms_max_wide();
        if safety + liveness > u128::from(TIME_MS_MAX) {
            if let Some((table, key, value)) = self.dominant_duration() {
                return Err(SetupError::new(
                    table,
                    key,
                    format!(
                        "{value} is too long for {} events × {} groups × {} attempts: the liveness phase could last {liveness} ms, past the end of simulated time ({TIME_MS_MAX} ms); use a shorter one",
                        self.events,
                        self.group_names.len(),
                        self.max_attempts
                    ),
                ));
            }
            return Err(SetupError::new(
                "config",
                "events",
                format!(
                    "{} events × {} groups × {} attempts: the liveness phase could last {liveness} ms, past the end of simulated time ({TIME_MS_MAX} ms) after a {safety} ms safety phase; use fewer events or attempts, or a shorter lease",
                    self.events,
                    self.group_names.len(),
                    self.max_attempts
                ),
            ));
        }
        Ok(())
    }

    fn validate_sizes(&self) -> Result<(), SetupError> {
        let count = |key: &str, value: usize, max: usize| {
            if value == 0 {
                Err(SetupError::new("config", key, "at least 1".to_string()))
            } else if value > max {
                Err(SetupError::new(
                    "config",
                    key,
                    format!("{value} is more than the most a run may have, {max}"),
                ))
            } else {
                Ok(())
            }
        };
        count("groups", self.group_names.len(), GROUPS_MAX)?;
        count("workers", self.worker_names.len(), WORKERS_MAX)?;
        count(
            "max_attempts",
            self.max_attempts as usize,
            ATTEMPTS_MAX as usize,
        )?;
        if self.records() > RECORDS_MAX {
            return Err(SetupError::new(
                "config",
                "events",
                format!(
                    "{} events{} × {} groups = {} records, more than a run may hold ({RECORDS_MAX}, about 32 bytes each)",
                    self.events,
                    if self.events_max() > u64::from(self.events) {
                        " (and as many again published during the run)"
                    } else {
                        ""
                    },
                    self.group_names.len(),
                    self.records()
                ),
            ));
        }
        if self.lease_ms == 0 {
            return Err(SetupError::new(
                "config",
                "lease_ms",
                "at least 1".to_string(),
            ));
        }
        // Zero would not mean "none" here: a fetch asks for a lease, a poll waits, a handler
        // runs and a reply is waited for at least a millisecond.
        let w = &self.workload;
        for (key, value) in [
            ("fetch_limit", u64::from(w.fetch_limit)),
            ("poll_ms", w.poll_ms),
            ("handler_ms_max", w.handler_ms_max),
            ("request_timeout_ms", w.request_timeout_ms),
        ] {
            if value == 0 {
                return Err(SetupError::new("workload", key, "at least 1".to_string()));
            }
        }
        if w.steps_max > STEPS_MAX {
            return Err(SetupError::new(
                "workload",
                "steps_max",
                format!(
                    "{} is more than the most a run may take, {STEPS_MAX}",
                    w.steps_max
                ),
            ));
        }
        if self.clock_offset_ms.len() != self.worker_names.len() {
            return Err(SetupError::new(
                "config",
                "clock_offset_ms",
                "one entry per worker".to_string(),
            ));
        }
        Ok(())
    }

    fn validate_durations(&self) -> Result<(), SetupError> {
        let w = &self.workload;
        let f = &self.faults;
        let fields: [(&'static str, &str, u64); 15] = [
            ("config", "lease_ms", self.lease_ms),
            // A long handler runs up to three leases.
            ("config", "lease_ms", self.lease_ms.saturating_mul(3)),
            // A poison handler runs a lease and a half.
            (
                "config",
                "lease_ms",
                self.lease_ms.saturating_add(self.lease_ms / 2),
            ),
            ("workload", "handler_ms_max", w.handler_ms_max),
            ("workload", "poll_ms", w.poll_ms),
            ("workload", "request_timeout_ms", w.request_timeout_ms),
            ("workload", "safety_ms_max", w.safety_ms_max),
            ("faults", "crash_downtime_ms_max", f.crash_downtime_ms_max),
            ("faults", "pause_ms_max", f.pause_ms_max),
            ("faults", "delay_ms_max", f.delay_ms_max),
            ("faults", "reorder_ms_max", f.reorder_ms_max),
            ("faults", "partition_ms_max", f.partition_ms_max),
            ("faults", "clock_offset_ms_max", f.clock_offset_ms_max),
            ("faults", "slow_handler_ms_max", f.slow_handler_ms_max),
            // Drift is in parts per million: a worker's clock must still move forward.
            (
                "faults",
                "clock_drift_ppm_max",
                f.clock_drift_ppm_max.saturating_mul(1 << 40),
            ),
        ];
        for (table, key, value) in fields {
            if value > TIME_MS_MAX / 4 {
                let shown = match (table, key) {
                    ("faults", "clock_drift_ppm_max") => f.clock_drift_ppm_max,
                    ("config", "lease_ms") => self.lease_ms,
                    _ => value,
                };
                return Err(SetupError::new(
                    table,
                    key,
                    format!(
                        "{shown} is too large (a run's durations must stay below {} ms)",
                        TIME_MS_MAX / 4
                    ),
                ));
            }
        }
        if f.clock_drift_ppm_max >= 1_000_000 {
            return Err(SetupError::new(
                "faults",
                "clock_drift_ppm_max",
                format!(
                    "{} ppm would stop or reverse a worker's clock (at most 999999)",
                    f.clock_drift_ppm_max
                ),
            ));
        }
        for (index, offset) in self.clock_offset_ms.iter().enumerate() {
            if offset.is_some_and(|o| o.unsigned_abs() > TIME_MS_MAX / 4) {
                let key = format!("clock_offset_ms.{}", self.worker_names[index]);
                return Err(SetupError::new("config", &key, "is too large".to_string()));
            }
        }
        Ok(())
    }
}
