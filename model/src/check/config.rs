//! The bounded configuration a check explores, and each variant's default bounds.

use crate::runtime::AckPolicy;
use crate::variant::Variant;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Fault budgets (and the renew budget): how many of each the explored runs may contain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budgets {
    /// Worker crash/restart cycles.
    pub crashes: u8,
    /// Settle requests dropped in flight (the sender sees `ambiguous`).
    pub drops: u8,
    /// Settle requests duplicated in flight.
    pub dups: u8,
    /// Replies lost after the broker applied the request (the sender sees `ambiguous`).
    pub lost_replies: u8,
    /// Broker restarts.
    pub broker_restarts: u8,
    /// Renew requests sent by lease holders (renew is not a fault; the budget keeps the space
    /// finite, since an accepted renew changes nothing in the untimed model).
    pub renews: u8,
}

/// Everything a check explores: the variant, the sizes and the budgets.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CheckConfig {
    /// The protocol variant or mutant.
    pub variant: Variant,
    /// Number of consumer groups.
    pub group_count: usize,
    /// Events published at the start.
    pub event_count: u32,
    /// Number of (interchangeable) workers.
    pub worker_count: usize,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// The consumer runtime's ack policy.
    pub policy: AckPolicy,
    /// Fault and renew budgets.
    pub budgets: Budgets,
}

/// Upper limits on sizes, so that a typo cannot ask for an astronomically large check.
pub const WORKER_COUNT_MAX: usize = 6;
/// See [`WORKER_COUNT_MAX`].
pub const GROUP_COUNT_MAX: usize = 4;
/// See [`WORKER_COUNT_MAX`].
pub const EVENT_COUNT_MAX: u32 = 8;
/// See [`WORKER_COUNT_MAX`].
pub const MAX_ATTEMPTS_MAX: u32 = 8;

impl CheckConfig {
    /// The smallest bounds that expose `variant`'s expected violation (for mutants and
    /// `redis-streams`), or the general default (for protocols expected to hold).
    pub fn default_for(variant: Variant) -> CheckConfig {
        let none = Budgets::default();
        let base = |events: u32, workers: usize, max_attempts: u32, budgets: Budgets| CheckConfig {
            variant,
            group_count: 1,
            event_count: events,
            worker_count: workers,
            max_attempts,
            policy: AckPolicy::NackOnError,
            budgets,
        };
        match variant {
            Variant::Fenced | Variant::RedisStreamsFenced => base(
                2,
                2,
                2,
                Budgets {
                    crashes: 1,
                    lost_replies: 1,
                    ..none
                },
            ),
            Variant::RedisStreams
            | Variant::UnfencedSettle
            | Variant::WorkerClockExpiry
            | Variant::OnlyAckFenced => base(1, 1, 2, none),
            Variant::RenewRevives => base(1, 2, 2, Budgets { renews: 1, ..none }),
            Variant::LeaseIdReuse => base(
                1,
                2,
                2,
                Budgets {
                    broker_restarts: 1,
                    ..none
                },
            ),
            Variant::MaxSeenFrontier => base(2, 2, 1, none),
            Variant::NoDeadLetter => base(1, 1, 1, none),
            Variant::AttemptsReset => base(1, 1, 2, none),
            Variant::VolatileAck => base(
                1,
                1,
                1,
                Budgets {
                    broker_restarts: 1,
                    ..none
                },
            ),
            Variant::NackOnAmbiguous => base(
                1,
                1,
                2,
                Budgets {
                    lost_replies: 1,
                    broker_restarts: 1,
                    ..none
                },
            ),
            Variant::DlqDrop => base(1, 1, 1, none),
            Variant::InclusiveDeadline => base(1, 1, 2, none),
            Variant::StaleTimer => base(1, 2, 2, none),
            Variant::VolatilePublish => base(
                1,
                1,
                1,
                Budgets {
                    broker_restarts: 1,
                    ..none
                },
            ),
            Variant::StuckLease => base(
                1,
                1,
                1,
                Budgets {
                    crashes: 1,
                    broker_restarts: 1,
                    ..none
                },
            ),
        }
    }

    /// Whether the model expires leases lazily: the `Expire` action only makes the lease's
    /// deadline pass, and the broker expires it at its next fetch (as it does on Redis). This
    /// matters only for a broker whose fence is not its own clock (`worker-clock-expiry`): for
    /// every other variant a lapsed lease is refused exactly like an expired one, so the
    /// model keeps the smaller eager schedule.
    pub fn lazy_expiry(&self) -> bool {
        self.variant.fence(&crate::types::SettleOp::Ack) == crate::variant::Fence::WorkerClock
    }

    /// Checks the sizes; the error is one line naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let range = |name: &str, value: u64, min: u64, max: u64| {
            if value < min || value > max {
                Err(format!("--{name} {value}: must be between {min} and {max}"))
            } else {
                Ok(())
            }
        };
        range("groups", self.group_count as u64, 1, GROUP_COUNT_MAX as u64)?;
        range(
            "events",
            u64::from(self.event_count),
            1,
            u64::from(EVENT_COUNT_MAX),
        )?;
        range(
            "workers",
            self.worker_count as u64,
            1,
            WORKER_COUNT_MAX as u64,
        )?;
        range(
            "max-attempts",
            u64::from(self.max_attempts),
            1,
            u64::from(MAX_ATTEMPTS_MAX),
        )
    }

    /// The bounds as command-line flags (without the variant), e.g. for `leasehold protocols`.
    pub fn flags(&self) -> String {
        let b = &self.budgets;
        format!(
            "--groups {} --events {} --workers {} --max-attempts {} --policy {} --crashes {} --drops {} --dups {} --lost-replies {} --broker-restarts {} --renews {}",
            self.group_count,
            self.event_count,
            self.worker_count,
            self.max_attempts,
            self.policy,
            b.crashes,
            b.drops,
            b.dups,
            b.lost_replies,
            b.broker_restarts,
            b.renews
        )
    }
}

impl fmt::Display for CheckConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--variant {} {}", self.variant, self.flags())
    }
}
