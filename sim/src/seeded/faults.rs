//! The fault plan: which faults a run injects and how often (docs/sim.md).
//!
//! Every fault is a [`Ratio`] (0 = off) plus the named bounds of its durations. A plan is either
//! given (flags, a scenario file's `[faults]` table) or drawn per seed (`--swarm`: each fault on
//! or off by a coin, its intensity from a short menu). The effective plan is always printed and
//! stored in the seeded scenario file, so a run can be replayed without the swarm draw.

use super::prng::Prng;
use super::ratio::Ratio;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The faults of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultPlan {
    /// Per worker action: the worker crashes (loses its leases and handler), restarts after a
    /// downtime in `1..=crash_downtime_ms_max`.
    pub crash: Ratio,
    /// Longest crash downtime.
    pub crash_downtime_ms_max: u64,
    /// Per handler run: the worker stalls (a GC pause) for `lease_ms..=pause_ms_max`.
    pub pause: Ratio,
    /// Longest pause.
    pub pause_ms_max: u64,
    /// Per message: the network delays it by `0..=delay_ms_max` (otherwise 1 ms).
    pub delay: Ratio,
    /// Longest network delay.
    pub delay_ms_max: u64,
    /// Per message: an extra delay of `0..=reorder_ms_max` that lets later messages overtake it.
    pub reorder: Ratio,
    /// Longest reorder delay.
    pub reorder_ms_max: u64,
    /// Per message: the network drops it (a lost request or a lost reply).
    pub drop: Ratio,
    /// Per request: the network delivers it twice.
    pub duplicate: Ratio,
    /// Per worker action: the worker is cut off from the broker for `1..=partition_ms_max`.
    pub partition: Ratio,
    /// Longest partition.
    pub partition_ms_max: u64,
    /// Per request: the broker fails fast (`backend_unavailable`, nothing applied).
    pub unavailable: Ratio,
    /// Per settle: the broker reports a failure (`failed`, nothing applied); the runtime nacks
    /// for immediate redelivery. (Absent from files written before it existed: off.)
    #[serde(default = "Ratio::zero")]
    pub failed: Ratio,
    /// Per settle: the broker applies it and the reply is lost (`ambiguous`).
    pub lost_reply: Ratio,
    /// Per request: the broker restarts before handling it.
    pub broker_restart: Ratio,
    /// Per worker: its clock is off by up to `clock_offset_ms_max` either way and drifts by up
    /// to `clock_drift_ppm_max` parts per million.
    pub clock_skew: Ratio,
    /// Largest clock offset.
    pub clock_offset_ms_max: u64,
    /// Largest clock drift, in parts per million.
    pub clock_drift_ppm_max: u64,
    /// Per handler run: the handler takes `lease_ms..=slow_handler_ms_max` (past its lease).
    pub slow_handler: Ratio,
    /// Longest slow handler.
    pub slow_handler_ms_max: u64,
    /// Per handler run: the handler raises an error.
    pub handler_error: Ratio,
    /// Per settle or renew: the request is aimed at its lease's deadline — it reaches the
    /// broker at the deadline − 1 ms, exactly at it, or + 1 ms — and, by a coin, lands before
    /// the broker's timers of that millisecond. (Absent from files written before it existed:
    /// off.)
    #[serde(default = "Ratio::zero")]
    pub boundary: Ratio,
}

/// A fault switch as the command line and the printed plan name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Worker crash and restart.
    Crash,
    /// Worker pause past the lease.
    Pause,
    /// Network delay.
    Delay,
    /// Network reorder.
    Reorder,
    /// Network drop.
    Drop,
    /// Network duplicate.
    Duplicate,
    /// Partition of a worker from the broker.
    Partition,
    /// Broker unavailable (fast failure).
    Unavailable,
    /// Broker failure reported on a settle (nothing applied).
    Failed,
    /// Ambiguous response: applied, reply lost.
    LostReply,
    /// Broker restart.
    BrokerRestart,
    /// Per-worker clock offset and drift.
    ClockSkew,
    /// Slow handler (longer than the lease).
    SlowHandler,
    /// Handler error.
    HandlerError,
    /// A request aimed at its lease's deadline (± 1 ms).
    Boundary,
}

impl Fault {
    /// Every fault, in the order plans print them.
    pub const ALL: [Fault; 15] = [
        Fault::Crash,
        Fault::Pause,
        Fault::Delay,
        Fault::Reorder,
        Fault::Drop,
        Fault::Duplicate,
        Fault::Partition,
        Fault::Unavailable,
        Fault::Failed,
        Fault::LostReply,
        Fault::BrokerRestart,
        Fault::ClockSkew,
        Fault::SlowHandler,
        Fault::HandlerError,
        Fault::Boundary,
    ];

    /// The name in plans, flags (`--crash 1/50`) and scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Crash => "crash",
            Fault::Pause => "pause",
            Fault::Delay => "delay",
            Fault::Reorder => "reorder",
            Fault::Drop => "drop",
            Fault::Duplicate => "duplicate",
            Fault::Partition => "partition",
            Fault::Unavailable => "unavailable",
            Fault::Failed => "failed",
            Fault::LostReply => "lost_reply",
            Fault::BrokerRestart => "broker_restart",
            Fault::ClockSkew => "clock_skew",
            Fault::SlowHandler => "slow_handler",
            Fault::HandlerError => "handler_error",
            Fault::Boundary => "boundary",
        }
    }

    /// The intensities swarm mode picks from when it switches this fault on.
    fn swarm_menu(self) -> [Ratio; 3] {
        match self {
            Fault::Crash | Fault::Partition | Fault::Pause => {
                [Ratio::new(1, 100), Ratio::new(1, 25), Ratio::new(1, 8)]
            }
            Fault::BrokerRestart => [Ratio::new(1, 50), Ratio::new(1, 20), Ratio::new(1, 8)],
            Fault::Boundary => [Ratio::new(1, 20), Ratio::new(1, 8), Ratio::new(1, 3)],
            Fault::ClockSkew => [Ratio::new(1, 4), Ratio::new(1, 2), Ratio::ONE],
            Fault::Delay | Fault::Reorder => {
                [Ratio::new(1, 20), Ratio::new(1, 5), Ratio::new(1, 2)]
            }
            _ => [Ratio::new(1, 100), Ratio::new(1, 25), Ratio::new(1, 8)],
        }
    }
}

/// The lease the default durations are scaled for (the scenario file's default).
pub const DEFAULT_LEASE_MS: u64 = 30_000;

impl Default for FaultPlan {
    /// The default mix for the default lease: see [`FaultPlan::for_lease`].
    fn default() -> FaultPlan {
        FaultPlan::for_lease(DEFAULT_LEASE_MS)
    }
}

impl FaultPlan {
    /// The default mix: every fault on at a moderate intensity, durations scaled to `lease_ms`
    /// (pauses, slow handlers, crashes and partitions last up to three leases; network delays
    /// up to a fifth of one; clocks are off by up to one and a half).
    pub fn for_lease(lease_ms: u64) -> FaultPlan {
        let lease_ms = lease_ms.max(1);
        FaultPlan {
            crash: Ratio::new(1, 100),
            crash_downtime_ms_max: lease_ms.saturating_mul(3),
            pause: Ratio::new(1, 25),
            pause_ms_max: lease_ms.saturating_mul(3),
            delay: Ratio::new(1, 5),
            delay_ms_max: lease_ms / 5,
            reorder: Ratio::new(1, 20),
            reorder_ms_max: lease_ms / 2,
            drop: Ratio::new(1, 50),
            duplicate: Ratio::new(1, 50),
            partition: Ratio::new(1, 200),
            partition_ms_max: lease_ms.saturating_mul(3),
            unavailable: Ratio::new(1, 50),
            failed: Ratio::new(1, 100),
            lost_reply: Ratio::new(1, 25),
            broker_restart: Ratio::new(1, 20),
            clock_skew: Ratio::new(1, 2),
            clock_offset_ms_max: lease_ms.saturating_mul(3) / 2,
            clock_drift_ppm_max: 50_000,
            slow_handler: Ratio::new(1, 25),
            slow_handler_ms_max: lease_ms.saturating_mul(3),
            handler_error: Ratio::new(1, 20),
            boundary: Ratio::new(1, 10),
        }
    }
}

impl FaultPlan {
    /// A plan with every fault off (the durations keep their defaults).
    pub fn none() -> FaultPlan {
        let mut plan = FaultPlan::default();
        for fault in Fault::ALL {
            *plan.ratio_mut(fault) = Ratio::ZERO;
        }
        plan
    }

    /// The intensity of `fault`.
    pub fn ratio(&self, fault: Fault) -> Ratio {
        match fault {
            Fault::Crash => self.crash,
            Fault::Pause => self.pause,
            Fault::Delay => self.delay,
            Fault::Reorder => self.reorder,
            Fault::Drop => self.drop,
            Fault::Duplicate => self.duplicate,
            Fault::Partition => self.partition,
            Fault::Unavailable => self.unavailable,
            Fault::Failed => self.failed,
            Fault::LostReply => self.lost_reply,
            Fault::BrokerRestart => self.broker_restart,
            Fault::ClockSkew => self.clock_skew,
            Fault::SlowHandler => self.slow_handler,
            Fault::HandlerError => self.handler_error,
            Fault::Boundary => self.boundary,
        }
    }

    /// The intensity of `fault`, to change it.
    pub fn ratio_mut(&mut self, fault: Fault) -> &mut Ratio {
        match fault {
            Fault::Crash => &mut self.crash,
            Fault::Pause => &mut self.pause,
            Fault::Delay => &mut self.delay,
            Fault::Reorder => &mut self.reorder,
            Fault::Drop => &mut self.drop,
            Fault::Duplicate => &mut self.duplicate,
            Fault::Partition => &mut self.partition,
            Fault::Unavailable => &mut self.unavailable,
            Fault::Failed => &mut self.failed,
            Fault::LostReply => &mut self.lost_reply,
            Fault::BrokerRestart => &mut self.broker_restart,
            Fault::ClockSkew => &mut self.clock_skew,
            Fault::SlowHandler => &mut self.slow_handler,
            Fault::HandlerError => &mut self.handler_error,
            Fault::Boundary => &mut self.boundary,
        }
    }

    /// The names of the faults' magnitudes (the fields of a file's `[faults]`; with `-` for
    /// `_`, `sim`'s flags), in the order of [`FaultPlan::magnitudes_mut`].
    pub const MAGNITUDES: [&'static str; 8] = [
        "crash_downtime_ms_max",
        "pause_ms_max",
        "delay_ms_max",
        "reorder_ms_max",
        "partition_ms_max",
        "clock_offset_ms_max",
        "clock_drift_ppm_max",
        "slow_handler_ms_max",
    ];

    /// The faults' magnitudes, named as in [`FaultPlan::MAGNITUDES`], to read or change.
    pub fn magnitudes_mut(&mut self) -> [(&'static str, &mut u64); 8] {
        let names = FaultPlan::MAGNITUDES;
        [
            (names[0], &mut self.crash_downtime_ms_max),
            (names[1], &mut self.pause_ms_max),
            (names[2], &mut self.delay_ms_max),
            (names[3], &mut self.reorder_ms_max),
            (names[4], &mut self.partition_ms_max),
            (names[5], &mut self.clock_offset_ms_max),
            (names[6], &mut self.clock_drift_ppm_max),
            (names[7], &mut self.slow_handler_ms_max),
        ]
    }

    /// The faults' magnitudes, named as in [`FaultPlan::MAGNITUDES`].
    pub fn magnitudes(&self) -> [(&'static str, u64); 8] {
        self.clone()
            .magnitudes_mut()
            .map(|(name, value)| (name, *value))
    }

    /// The faults that are on.
    pub fn enabled(&self) -> Vec<Fault> {
        Fault::ALL
            .into_iter()
            .filter(|&f| !self.ratio(f).is_zero())
            .collect()
    }

    /// Swarm testing: starting from `base` (its durations and the faults it allows), each
    /// allowed fault is switched on by a coin and given an intensity from its menu.
    pub fn swarm(base: &FaultPlan, prng: &mut Prng) -> FaultPlan {
        let mut plan = base.clone();
        for fault in Fault::ALL {
            let allowed = !base.ratio(fault).is_zero();
            let on = prng.coin();
            let intensity = *prng.pick(&fault.swarm_menu());
            *plan.ratio_mut(fault) = if allowed && on {
                intensity
            } else {
                Ratio::ZERO
            };
        }
        plan
    }

    /// One line: the faults that are on, with their intensities (`none` when all are off).
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for fault in self.enabled() {
            if !out.is_empty() {
                out.push(' ');
            }
            let _ = write!(out, "{}={}", fault.name(), self.ratio(fault));
        }
        if out.is_empty() {
            out.push_str("none");
        }
        out
    }
}
