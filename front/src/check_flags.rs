//! [`CheckRequest`]: a model check as the command line's flags describe it — names and numbers
//! as typed, every bound left out taking the variant's default — turned into the
//! [`CheckConfig`] and search [`Options`] the checker runs, each refusal one line naming its
//! flag.

use crate::defaults::{CHECK_THREADS, COUNTEREXAMPLE_STATES_MAX, STATES_MAX};
use crate::Error;
use leasehold_model::check::{
    Budgets, CheckConfig, Engine, Fairness, Limits, Options, Outcomes, Renews, Time,
};
use leasehold_model::{AckPolicy, Variant};
use std::net::SocketAddr;

/// A check as named by flags. [`CheckRequest::default`] is `leasehold check` with no flag.
#[derive(Clone, Debug)]
pub struct CheckRequest {
    /// The variant's name (`--variant`).
    pub variant: String,
    /// Consumer groups (`--groups`).
    pub groups: Option<u32>,
    /// Events (`--events`).
    pub events: Option<u32>,
    /// Workers (`--workers`).
    pub workers: Option<u32>,
    /// Deliveries before dead-lettering (`--max-attempts`).
    pub max_attempts: Option<u32>,
    /// The ack policy's name (`--policy`).
    pub policy: Option<String>,
    /// Worker crashes (`--crashes`).
    pub crashes: Option<u8>,
    /// Requests dropped (`--drops`).
    pub drops: Option<u8>,
    /// Requests duplicated (`--dups`).
    pub dups: Option<u8>,
    /// Replies lost (`--lost-replies`).
    pub lost_replies: Option<u8>,
    /// Broker restarts (`--broker-restarts`).
    pub broker_restarts: Option<u8>,
    /// Renews: a number, or `unbounded` (`--renews`).
    pub renews: Option<String>,
    /// `weak` or `none` (`--fairness`, with unbounded renews only).
    pub fairness: Option<String>,
    /// `plain` or `all` (`--outcomes`).
    pub outcomes: Option<String>,
    /// `untimed` or `ticks` (`--time`).
    pub time: Option<String>,
    /// Milliseconds per tick (`--tick-ms`, timed only).
    pub tick_ms: Option<u64>,
    /// A lease's duration in ticks (`--lease-ticks`, timed only).
    pub lease_ticks: Option<u32>,
    /// How far worker A's clock runs behind and B's ahead, in ticks (`--skew-ticks`, timed
    /// only).
    pub skew_ticks: Option<u32>,
    /// `leasehold` or `stateright` (`--engine`).
    pub engine: String,
    /// Search threads, 1 to 64 (`--threads`).
    pub threads: u32,
    /// Symmetry reduction over workers off (`--no-symmetry`).
    pub no_symmetry: bool,
    /// Partial-order reduction off (`--no-partial-order`).
    pub no_partial_order: bool,
    /// Subsumption off (`--no-subsumption`).
    pub no_subsumption: bool,
    /// Duplicates taken at their first delivery off (`--no-late-duplicates`).
    pub no_late_duplicates: bool,
    /// Start from the variant's covering configuration (`--covering`,
    /// [`CheckConfig::covering_for`]: what is used when neither this nor `tailored` is given);
    /// the other flags override it.
    pub covering: bool,
    /// Start from the variant's own configuration instead (`--tailored`,
    /// [`CheckConfig::tailored_for`]); the other flags override it.
    pub tailored: bool,
    /// Search past the first violation (`--all-violations`).
    pub all_violations: bool,
    /// Stop at the first violation (`--first-violation`, [`Limits::first_violation`]).
    pub first_violation: bool,
    /// The bound on generated states (`--max-states`).
    pub max_states: u64,
    /// A time budget was given (`--for`): stateright's checker cannot honour one.
    pub timed: bool,
}

impl Default for CheckRequest {
    fn default() -> CheckRequest {
        CheckRequest {
            variant: Variant::Fenced.name().to_string(),
            groups: None,
            events: None,
            workers: None,
            max_attempts: None,
            policy: None,
            crashes: None,
            drops: None,
            dups: None,
            lost_replies: None,
            broker_restarts: None,
            renews: None,
            fairness: None,
            outcomes: None,
            time: None,
            tick_ms: None,
            lease_ticks: None,
            skew_ticks: None,
            engine: Engine::Leasehold.name().to_string(),
            threads: CHECK_THREADS as u32,
            no_symmetry: false,
            no_partial_order: false,
            no_subsumption: false,
            no_late_duplicates: false,
            covering: false,
            tailored: false,
            all_violations: false,
            first_violation: false,
            max_states: STATES_MAX,
            timed: false,
        }
    }
}

impl CheckRequest {
    /// The configuration asked for: the variant's defaults, overridden by what is given.
    pub fn config(&self) -> Result<CheckConfig, Error> {
        let variant = Variant::from_name(&self.variant).ok_or_else(|| {
            Error(format!(
                "--variant: unknown variant '{}'; valid: {}",
                self.variant,
                Variant::names()
            ))
        })?;
        if self.covering && self.tailored {
            return Err(Error(
                "--tailored: cannot be combined with --covering (choose one starting configuration)"
                    .into(),
            ));
        }
        let mut config = if self.tailored {
            CheckConfig::tailored_for(variant)
        } else if self.covering {
            CheckConfig::covering_for(variant)
        } else {
            CheckConfig::default_for(variant)
        };
        if let Some(policy) = &self.policy {
            config.policy = AckPolicy::from_name(policy).ok_or_else(|| {
                let names: Vec<_> = AckPolicy::ALL.iter().map(|p| p.name()).collect();
                Error(format!(
                    "--policy: unknown policy '{policy}'; valid: {}",
                    names.join(", ")
                ))
            })?;
        }
        config.group_count = self.groups.map_or(config.group_count, |g| g as usize);
        config.event_count = self.events.unwrap_or(config.event_count);
        config.worker_count = self.workers.map_or(config.worker_count, |w| w as usize);
        config.max_attempts = self.max_attempts.unwrap_or(config.max_attempts);
        let b = config.budgets;
        let mut renews = b.renews;
        match self.renews.as_deref() {
            None => {}
            Some("unbounded") => config.renews = Renews::Unbounded,
            Some(text) => {
                renews = text.parse().map_err(|_| {
                    Error(format!(
                        "--renews {text}: expected a number from 0 to 255, or unbounded"
                    ))
                })?;
                config.renews = Renews::Budget;
            }
        }
        config.budgets = Budgets {
            crashes: self.crashes.unwrap_or(b.crashes),
            drops: self.drops.unwrap_or(b.drops),
            dups: self.dups.unwrap_or(b.dups),
            lost_replies: self.lost_replies.unwrap_or(b.lost_replies),
            broker_restarts: self.broker_restarts.unwrap_or(b.broker_restarts),
            renews,
        };
        if let Some(text) = &self.fairness {
            config.fairness = Fairness::from_name(text)
                .ok_or_else(|| Error(format!("--fairness {text}: expected none or weak")))?;
            if config.renews != Renews::Unbounded {
                return Err(Error(format!(
                    "--fairness {text}: only with --renews unbounded (with finite budgets every behaviour is finite and no fairness is assumed)"
                )));
            }
        }
        if let Some(text) = &self.outcomes {
            config.outcomes = Outcomes::from_name(text)
                .ok_or_else(|| Error(format!("--outcomes {text}: expected plain or all")))?;
        }
        self.time_into(&mut config)?;
        config.validate().map_err(Error)?;
        Ok(config)
    }

    /// `--time`, `--tick-ms`, `--lease-ticks` and `--skew-ticks` over the variant's default.
    fn time_into(&self, config: &mut CheckConfig) -> Result<(), Error> {
        match self.time.as_deref() {
            // Unbounded renews are checked untimed (a clock would let a holder renew forever):
            // the covering configuration's clock gives way unless `--time ticks` is asked for.
            None if config.renews == Renews::Unbounded => config.time = Time::Untimed,
            None => {}
            Some("untimed") => config.time = Time::Untimed,
            Some("ticks") if !config.time.timed() => config.time = Time::TICKS,
            Some("ticks") => {}
            Some(other) => return Err(Error(format!("--time {other}: expected untimed or ticks"))),
        }
        let given = [
            ("--tick-ms", self.tick_ms.is_some()),
            ("--lease-ticks", self.lease_ticks.is_some()),
            ("--skew-ticks", self.skew_ticks.is_some()),
        ];
        match &mut config.time {
            Time::Untimed => {
                if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
                    return Err(Error(format!(
                        "{flag}: only with --time ticks (this check is untimed)"
                    )));
                }
            }
            Time::Ticks {
                tick_ms,
                lease_ticks,
                skew_ticks,
            } => {
                *tick_ms = self.tick_ms.unwrap_or(*tick_ms);
                *lease_ticks = self.lease_ticks.unwrap_or(*lease_ticks);
                *skew_ticks = self.skew_ticks.unwrap_or(*skew_ticks);
            }
        }
        Ok(())
    }

    /// The search options asked for.
    pub fn options(&self) -> Result<Options, Error> {
        if self.threads == 0 || self.threads > 64 {
            return Err(Error(format!(
                "--threads {}: must be between 1 and 64",
                self.threads
            )));
        }
        if self.max_states == 0 {
            return Err(Error("--max-states 0: must be at least 1".to_string()));
        }
        let engine = Engine::from_name(&self.engine).ok_or_else(|| {
            let names: Vec<&str> = Engine::ALL.iter().map(|e| e.name()).collect();
            Error(format!(
                "--engine {}: unknown engine (expected one of: {})",
                self.engine,
                names.join(", ")
            ))
        })?;
        if engine == Engine::Stateright && self.timed {
            return Err(Error(
                "--for: stateright's checker cannot be stopped before its end (use --max-states, or --engine leasehold)"
                    .to_string(),
            ));
        }
        Ok(Options {
            engine,
            limits: Limits {
                states_max: self.max_states,
                threads: self.threads as usize,
                first_violation: self.first_violation,
                ..Limits::default()
            },
            symmetry: !self.no_symmetry,
            partial_order: !self.no_partial_order,
            subsumption: !self.no_subsumption,
            late_duplicates: !self.no_late_duplicates,
            counterexample_states_max: self.max_states.min(COUNTEREXAMPLE_STATES_MAX),
            beyond_first_violation: self.all_violations,
            ..Options::default()
        })
    }
}

/// The loopback address `addr` names, where stateright's Explorer may be served (`--explore`),
/// or a one-line error.
pub fn loopback(addr: &str) -> Result<SocketAddr, Error> {
    let parsed: SocketAddr = addr.parse().map_err(|_| {
        Error(format!(
            "--explore {addr}: not an address (expected e.g. 127.0.0.1:3000)"
        ))
    })?;
    if !parsed.ip().is_loopback() {
        return Err(Error(format!(
            "--explore {addr}: the Explorer is served on loopback only (127.0.0.1 or [::1])"
        )));
    }
    Ok(parsed)
}
