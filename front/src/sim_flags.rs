//! [`TemplateRequest`]: a campaign's run template as the command line's flags describe it —
//! names and numbers as typed, the faults and their magnitudes that were given — turned into
//! the validated [`Setup`] and the bounds the request pinned, each refusal one line naming its
//! flag. [`TemplateRequest::default`] is `leasehold sim` with no flag
//! ([`crate::defaults::sim_template`]).

use crate::defaults::{
    SIM_EVENTS, SIM_EXPIRY, SIM_GROUPS, SIM_LEASE_MS, SIM_MAX_ATTEMPTS, SIM_WORKERS,
};
use crate::Error;
use leasehold_model::{AckPolicy, Variant};
use leasehold_sim::engine::Expiry;
use leasehold_sim::seeded::campaign::Pinned;
use leasehold_sim::seeded::prng::Draws;
use leasehold_sim::seeded::{Fault, FaultPlan, Ratio, Setup, Workload};

/// A run template as named by flags.
#[derive(Clone, Debug)]
pub struct TemplateRequest {
    /// The variant's name (`--variant`).
    pub variant: String,
    /// The ack policy's name (`--policy`).
    pub policy: String,
    /// Events published at time 0 (`--events`).
    pub events: u32,
    /// Consumer groups (`--groups`).
    pub groups: u32,
    /// Workers (`--workers`).
    pub workers: u32,
    /// Deliveries before dead-lettering (`--max-attempts`).
    pub max_attempts: u32,
    /// The lease, ms (`--lease-ms`).
    pub lease_ms: u64,
    /// Start from a plan with every fault off (`--no-faults`).
    pub no_faults: bool,
    /// The faults whose ratio was given (`--crash 1/10`, …), applied after `no_faults`.
    pub faults: Vec<(Fault, Ratio)>,
    /// The magnitudes given, in the order of [`FaultPlan::MAGNITUDES`] (`--pause-ms-max`, …).
    pub magnitudes: [Option<u64>; 8],
    /// `at_deadline`, `on_fetch` or `mixed` (`--expiry`; `mixed` is each seed's draw, and the
    /// template's own mode is then the default one).
    pub expiry: String,
    /// How seeds draw (`--draws`).
    pub draws: String,
    /// The safety phase's bound, ms, pinned (`--safety-ms-max`).
    pub safety_ms_max: Option<u64>,
    /// The bound on steps, pinned (`--steps-max`).
    pub steps_max: Option<u64>,
}

impl Default for TemplateRequest {
    fn default() -> TemplateRequest {
        TemplateRequest {
            variant: Variant::Fenced.name().to_string(),
            policy: AckPolicy::NackOnError.name().to_string(),
            events: SIM_EVENTS,
            groups: SIM_GROUPS,
            workers: SIM_WORKERS,
            max_attempts: SIM_MAX_ATTEMPTS,
            lease_ms: SIM_LEASE_MS,
            no_faults: false,
            faults: Vec::new(),
            magnitudes: [None; 8],
            expiry: SIM_EXPIRY.to_string(),
            draws: Draws::default().name().to_string(),
            safety_ms_max: None,
            steps_max: None,
        }
    }
}

impl TemplateRequest {
    /// The run template asked for, validated, and which bounds the request pinned.
    pub fn template(&self) -> Result<(Setup, Pinned), Error> {
        let variant = Variant::from_name(&self.variant).ok_or_else(|| {
            Error(format!(
                "--variant: unknown '{}' (one of {})",
                self.variant,
                Variant::names()
            ))
        })?;
        let policy = AckPolicy::from_name(&self.policy).ok_or_else(|| {
            Error(format!(
                "--policy: unknown '{}' (nack_on_error, ack_always, ack_first, manual)",
                self.policy
            ))
        })?;
        for (flag, value) in [
            ("--events", u64::from(self.events)),
            ("--groups", u64::from(self.groups)),
            ("--workers", u64::from(self.workers)),
            ("--max-attempts", u64::from(self.max_attempts)),
            ("--lease-ms", self.lease_ms),
        ] {
            if value == 0 {
                return Err(Error(format!("{flag}: must be at least 1")));
            }
        }
        let mut setup = Setup::default_for(variant);
        setup.policy = policy;
        setup.max_attempts = self.max_attempts;
        setup.lease_ms = self.lease_ms;
        setup.workload = Workload::for_lease(self.lease_ms);
        setup.faults = FaultPlan::for_lease(self.lease_ms);
        if self.no_faults {
            for fault in Fault::ALL {
                *setup.faults.ratio_mut(fault) = Ratio::ZERO;
            }
        }
        for &(fault, ratio) in &self.faults {
            *setup.faults.ratio_mut(fault) = ratio;
        }
        let magnitudes = setup.faults.magnitudes_mut().into_iter();
        for ((_, field), value) in magnitudes.zip(self.magnitudes) {
            if let Some(value) = value {
                *field = value;
            }
        }
        setup.resize(self.events, self.groups as usize, self.workers as usize);
        setup.expiry = Expiry::from_name(&self.expiry).unwrap_or_default();
        setup.draws = Draws::from_name(&self.draws).unwrap_or_default();
        setup.derive_bounds(true, true);
        let pinned = Pinned {
            safety_ms_max: self.safety_ms_max.is_some(),
            steps_max: self.steps_max.is_some(),
        };
        if let Some(ms) = self.safety_ms_max {
            setup.workload.safety_ms_max = ms;
        }
        if let Some(steps) = self.steps_max {
            setup.workload.steps_max = steps;
        }
        setup.validate().map_err(|e| Error(e.for_flags()))?;
        Ok((setup, pinned))
    }
}
