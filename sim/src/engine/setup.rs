//! What an engine runs: its configuration, how requests travel, handler runs, workers.

use crate::trace::Fault;
use leasehold_model::{AckPolicy, BrokerConfig, HandleCall, Issuance, Ms, Outcome, Variant};

/// The configuration an engine runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The protocol variant or mutant (the broker's and the runtime's decisions).
    pub variant: Variant,
    /// Consumer group names.
    pub groups: Vec<String>,
    /// Worker names.
    pub workers: Vec<String>,
    /// Default lease duration (Redis variants: the claim idle time).
    pub lease_ms: Ms,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// The consumer runtime's ack policy.
    pub ack_policy: AckPolicy,
    /// Per-worker clock offset, by worker index (missing entries are 0).
    pub clock_offset_ms: Vec<i64>,
    /// Whether the oracle checks I7 (every ack comes from a handler run under an at-least-once
    /// policy).
    pub check_at_least_once: bool,
    /// When the broker applies due expiries.
    pub expiry: Expiry,
    /// The oracle audits every record after every step (tests: checks the incremental checks
    /// against the full ones).
    pub audit_every_step: bool,
    /// With [`Expiry::OnFetch`]: tell each lease that lapses while the broker still holds its
    /// record leased, at its deadline, as time passes it (a seeded run: a settle refused after
    /// the deadline then reads after the lapse that explains it). A scripted run tells lapses
    /// at its `wait` steps instead.
    pub tell_lapses: bool,
}

/// When the engine lets the broker expire due leases. The oracle's ghost leases expire at their
/// contract deadline either way, so a settle the broker accepts after the deadline is caught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expiry {
    /// At the deadline: before anything happens at time `t`, every lease whose deadline is
    /// `<= t` expires (docs/scenarios.md).
    #[default]
    AtDeadline,
    /// Lazily, when the broker next fetches (as Redis claims idle entries): until then an
    /// expired lease's record stays leased, and only the broker's own deadline check fences
    /// settles.
    OnFetch,
}

impl Expiry {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Expiry::AtDeadline => "at_deadline",
            Expiry::OnFetch => "on_fetch",
        }
    }

    /// Parses a scenario file's name.
    pub fn from_name(name: &str) -> Option<Expiry> {
        [Expiry::AtDeadline, Expiry::OnFetch]
            .into_iter()
            .find(|e| e.name() == name)
    }
}

impl Setup {
    /// A setup with no clock offsets; I7 is checked when the policy is at-least-once.
    pub fn new(
        variant: Variant,
        groups: &[&str],
        workers: &[&str],
        lease_ms: Ms,
        max_attempts: u32,
        ack_policy: AckPolicy,
    ) -> Setup {
        Setup {
            variant,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            workers: workers.iter().map(|w| w.to_string()).collect(),
            lease_ms,
            max_attempts,
            ack_policy,
            clock_offset_ms: Vec::new(),
            check_at_least_once: ack_policy.at_least_once(),
            expiry: Expiry::AtDeadline,
            audit_every_step: false,
            tell_lapses: false,
        }
    }

    /// The pure broker's configuration for this setup.
    pub fn broker_config(&self) -> BrokerConfig {
        BrokerConfig {
            group_count: self.groups.len(),
            lease_ms: self.lease_ms,
            max_attempts: self.max_attempts,
            variant: self.variant,
        }
    }
}

/// How a request travels: delays, a fault, a duplicate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Time from sending to reaching the broker.
    pub delay_ms: Ms,
    /// Time from the broker to the worker's reply (or its timeout, for a lost reply).
    pub reply_delay_ms: Ms,
    /// The injected fault.
    pub fault: Fault,
    /// Deliver a copy again this long after the first delivery (its answer is recorded; its
    /// reply is not sent).
    pub duplicate_after_ms: Option<Ms>,
    /// The request lands before the broker's expiries due at its arrival millisecond (and
    /// before the other arrivals of that millisecond): a settle aimed at exactly its lease's
    /// deadline meets a lease the broker has not expired yet. Otherwise the broker's timers of
    /// a millisecond run first.
    pub before_timer: bool,
}

impl Delivery {
    /// No delay, no fault.
    pub const INSTANT: Delivery = Delivery {
        delay_ms: 0,
        reply_delay_ms: 0,
        fault: Fault::None,
        duplicate_after_ms: None,
        before_timer: false,
    };

    /// No delay, with `fault`.
    pub fn with_fault(fault: Fault) -> Delivery {
        Delivery {
            fault,
            ..Delivery::INSTANT
        }
    }
}

/// One handler run: how it ends, what it calls on its message handle, how long it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerRun {
    /// How the handler leaves.
    pub outcome: Outcome,
    /// Calls on the message handle, in order.
    pub calls: Vec<HandleCall>,
    /// How long the handler runs.
    pub handler_ms: Ms,
}

impl HandlerRun {
    /// A handler that returns at once without handle calls.
    pub fn ok() -> HandlerRun {
        HandlerRun::of(Outcome::Ok)
    }

    /// A handler that leaves with `outcome` at once without handle calls.
    pub fn of(outcome: Outcome) -> HandlerRun {
        HandlerRun {
            outcome,
            calls: Vec::new(),
            handler_ms: 0,
        }
    }
}

/// A worker's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    /// Its name.
    pub name: String,
    /// Up or crashed.
    pub up: bool,
    /// Incremented by each crash.
    pub incarnation: u32,
    /// Stalled until this time (0: not paused).
    pub paused_until_ms: Ms,
    /// Its clock reads `now + clock_offset_ms` (never below 0).
    pub clock_offset_ms: i64,
    /// Leases it holds and has not settled, in fetch order.
    pub held: Vec<Issuance>,
    /// Handler runs of this incarnation in progress.
    pub running: u32,
}
