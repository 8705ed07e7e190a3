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
    /// acyclic, since an accepted renew changes nothing in the untimed model). Ignored when
    /// [`CheckConfig::renews`] is [`Renews::Unbounded`].
    pub renews: u8,
}

impl Budgets {
    /// The budgets packed in one word, a byte each (the last word of a state's hash).
    #[inline]
    pub fn word(&self) -> u64 {
        u64::from_le_bytes([
            self.crashes,
            self.drops,
            self.dups,
            self.lost_replies,
            self.broker_restarts,
            self.renews,
            0,
            0,
        ])
    }

    /// The sum of every budget, renews included.
    pub fn total(&self) -> u32 {
        self.word()
            .to_le_bytes()
            .iter()
            .map(|&b| u32::from(b))
            .sum()
    }

    /// Every set of budgets a state that subsumes one with these used may have used
    /// ([`crate::check::LeaseModel::with_subsumption`]): no more crashes, drops, duplicates,
    /// lost replies and renews, at least one fewer, and as many broker restarts.
    pub fn below(&self) -> impl Iterator<Item = Budgets> {
        let top = *self;
        let sizes = [
            top.crashes,
            top.drops,
            top.dups,
            top.lost_replies,
            top.renews,
        ]
        .map(|n| u32::from(n) + 1);
        let count: u32 = sizes.iter().product();
        // Each index names one vector, in mixed radix; the last, `count - 1`, is `top` itself.
        (0..count - 1).map(move |mut index| {
            let mut digits = [0u8; 5];
            for (digit, size) in digits.iter_mut().zip(sizes) {
                *digit = (index % size) as u8;
                index /= size;
            }
            let [crashes, drops, dups, lost_replies, renews] = digits;
            Budgets {
                crashes,
                drops,
                dups,
                lost_replies,
                renews,
                ..top
            }
        })
    }
}

/// Numbers the sets of budgets used within the configured budgets, each set one code below
/// 2²⁴, so that a state's fingerprint can carry its budgets in its top bits
/// ([`crate::check::fingerprint::coded`]) and a subsumption lookup can walk the smaller sets
/// by adding and subtracting strides.
#[derive(Clone, Copy, Debug)]
pub struct BudgetCodes {
    /// Each budget's stride, in [`Budgets::word`]'s order: the product of the sizes
    /// (`limit + 1`) of the budgets before it.
    strides: [u64; 6],
}

impl BudgetCodes {
    /// The codes for `limits`; `None` when they number more than 2²⁴ sets.
    pub fn new(limits: &Budgets) -> Option<BudgetCodes> {
        let mut strides = [0; 6];
        let mut size = 1u64;
        for (stride, limit) in strides.iter_mut().zip(limits.word().to_le_bytes()) {
            *stride = size;
            size *= u64::from(limit) + 1;
        }
        (size <= 1 << crate::check::fingerprint::CODE_BITS).then_some(BudgetCodes { strides })
    }

    /// The code of `used` (within the limits: a state never uses more).
    #[inline]
    pub fn code(&self, used: &Budgets) -> u64 {
        used.word()
            .to_le_bytes()
            .iter()
            .zip(self.strides)
            .map(|(&n, stride)| u64::from(n) * stride)
            .sum()
    }

    /// Calls `f` on the code of each set [`Budgets::below`] yields, in its order, until `f`
    /// returns true; returns whether it did.
    #[inline]
    pub fn any_below(&self, used: &Budgets, mut f: impl FnMut(u64) -> bool) -> bool {
        // The budgets `below` varies (every one but broker restarts), and their strides.
        let [crashes, drops, dups, lost_replies, _, renews] = self.strides;
        let stride = [crashes, drops, dups, lost_replies, renews];
        let top = [
            used.crashes,
            used.drops,
            used.dups,
            used.lost_replies,
            used.renews,
        ];
        let mut digits = [0u8; 5];
        let mut code = self.code(&Budgets {
            broker_restarts: used.broker_restarts,
            ..Budgets::default()
        });
        // An odometer, the first digit fastest: `top` itself comes last and is not a set below.
        loop {
            if digits == top {
                return false;
            }
            if f(code) {
                return true;
            }
            for i in 0..5 {
                if digits[i] < top[i] {
                    digits[i] += 1;
                    code += stride[i];
                    break;
                }
                code -= u64::from(digits[i]) * stride[i];
                digits[i] = 0;
            }
        }
    }
}

/// How many renews a lease holder may send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Renews {
    /// At most [`Budgets::renews`] in a behaviour: every behaviour is finite.
    #[default]
    Budget,
    /// Without bound: a holder may renew forever, so the state graph has cycles and I6 is
    /// checked by a search for fair cycles (lassos) instead of a ranking function.
    Unbounded,
}

/// The fairness assumption under which I6 is checked when the graph has cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fairness {
    /// No assumption: any reachable cycle through unsettled states breaks I6.
    None,
    /// Weak fairness on each worker, each lease's expiry and each request in flight: a cycle
    /// breaks I6 only if none of them is enabled throughout it without being taken.
    #[default]
    Weak,
}

/// The handler outcomes a `Handle` action chooses among.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcomes {
    /// Success and an error: every settle the runtime sends without handle calls under
    /// `nack_on_error` and `ack_always` (ack, nack, nothing).
    #[default]
    Plain,
    /// Also the handler's own verdicts, `AckMessage`, `NackMessage` and `RejectMessage`: the
    /// reject path (dead-letter by reject, a reject of a lease that ended), and under `manual`
    /// an explicit ack. Outcomes the policy turns into the same settle are explored once.
    All,
}

impl Outcomes {
    /// `plain` or `all`.
    pub fn name(self) -> &'static str {
        match self {
            Outcomes::Plain => "plain",
            Outcomes::All => "all",
        }
    }

    /// Parses `plain` or `all`.
    pub fn from_name(name: &str) -> Option<Outcomes> {
        match name {
            "plain" => Some(Outcomes::Plain),
            "all" => Some(Outcomes::All),
            _ => None,
        }
    }
}

impl Fairness {
    /// `none` or `weak`.
    pub fn name(self) -> &'static str {
        match self {
            Fairness::None => "none",
            Fairness::Weak => "weak",
        }
    }

    /// Parses `none` or `weak`.
    pub fn from_name(name: &str) -> Option<Fairness> {
        match name {
            "none" => Some(Fairness::None),
            "weak" => Some(Fairness::Weak),
            _ => None,
        }
    }
}

/// How the model treats time.
///
/// * [`Time::Untimed`]: time is one `Expire` action that may end any lease at any moment: every
///   order of an expiry against the other steps, but never the broker's deadline arithmetic
///   nor a worker's clock against it.
/// * [`Time::Ticks`]: the clock advances by a `Tick` action of `tick_ms`; a fetch leases for
///   `lease_ticks` ticks and a renew extends by as much, each deadline computed by the
///   broker's own arithmetic; a lease ends when the clock reaches its deadline, by the
///   broker's timers and fence and, independently, by the oracle's contract (issued at `now`,
///   valid while `now < now + lease`). Worker A's clock reads `skew_ticks` ticks behind the
///   broker's and worker B's as many ahead (the other workers' read the broker's). Times are
///   kept relative to now, so the space stays finite. The broker's unit is the millisecond: a
///   tick of 1 ms is exact, a coarser tick an abstraction (the clock is never seen between
///   two ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Time {
    /// No clock: the `Expire` action.
    #[default]
    Untimed,
    /// A discrete clock (see the type's documentation).
    Ticks {
        /// Milliseconds per tick.
        tick_ms: u64,
        /// A lease's (and a renew's) duration, in ticks.
        lease_ticks: u32,
        /// How far worker A's clock runs behind and worker B's ahead, in ticks.
        skew_ticks: u32,
    },
}

/// Upper limit on `lease_ticks` (the space grows with it).
pub const LEASE_TICKS_MAX: u32 = 16;
/// Upper limit on `skew_ticks`.
pub const SKEW_TICKS_MAX: u32 = 8;

impl Time {
    /// The default timed mode: ticks of the broker's own unit (exact), leases of 3 ticks, a
    /// skew of 1 tick.
    pub const TICKS: Time = Time::Ticks {
        tick_ms: 1,
        lease_ticks: 3,
        skew_ticks: 1,
    };

    /// Whether the model has a clock.
    pub fn timed(self) -> bool {
        matches!(self, Time::Ticks { .. })
    }

    /// `untimed`, or `ticks` with its sizes (as the command line spells them).
    pub fn flags(self) -> String {
        match self {
            Time::Untimed => "--time untimed".to_string(),
            Time::Ticks {
                tick_ms,
                lease_ticks,
                skew_ticks,
            } => format!(
                "--time ticks --tick-ms {tick_ms} --lease-ticks {lease_ticks} --skew-ticks {skew_ticks}"
            ),
        }
    }

    /// How a report names it: "untimed", or "ticks of 1 ms (exact), leases of 3 ticks, skew 1
    /// tick".
    pub fn describe(self) -> String {
        match self {
            Time::Untimed => "untimed (an expiry may happen at any moment; no deadline arithmetic, no clock skew)".to_string(),
            Time::Ticks {
                tick_ms,
                lease_ticks,
                skew_ticks,
            } => format!(
                "ticks of {tick_ms} ms ({}), leases of {lease_ticks} ticks, worker clocks skewed by {skew_ticks} tick{}",
                if tick_ms == 1 { "exact: the broker's unit" } else { "coarser than the broker's unit: an abstraction" },
                if skew_ticks == 1 { "" } else { "s" }
            ),
        }
    }
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
    /// Whether renews are bounded by `budgets.renews` or unbounded.
    #[serde(default)]
    pub renews: Renews,
    /// The fairness assumption of I6 when renews are unbounded (ignored otherwise: with
    /// finite budgets every behaviour is finite and no assumption is needed).
    #[serde(default)]
    pub fairness: Fairness,
    /// The handler outcomes explored.
    #[serde(default)]
    pub outcomes: Outcomes,
    /// Untimed, or a discrete clock.
    #[serde(default)]
    pub time: Time,
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
    /// The smallest configuration that reaches every cell of the protocol's surface the
    /// variant supports (`check --covering`): two groups of one event, two workers, two
    /// attempts, every handler outcome, a renew, each fault once (a broker restart only where
    /// the variant's model has one) and the clock (ticks of 1 ms, leases of 2 ticks, workers
    /// skewed by 1; untimed where the variant's leases end with a channel). For `fenced`:
    /// 26 of 26 cells, about 12.8 M unique states with symmetry over workers and groups
    /// (docs/check.md). It is broad, not deep: one event never moves a frontier past its
    /// first record.
    pub fn covering_for(variant: Variant) -> CheckConfig {
        let mut config = CheckConfig::sized(
            variant,
            1,
            2,
            2,
            Budgets {
                crashes: 1,
                drops: 1,
                dups: 1,
                lost_replies: 1,
                // A broker restart is outside the RabbitMQ models (every channel would close).
                broker_restarts: u8::from(!matches!(
                    variant,
                    Variant::RabbitMq | Variant::RabbitMqChannel
                )),
                renews: 1,
            },
        );
        config.group_count = 2;
        config.outcomes = Outcomes::All;
        if !variant.channel_scoped() {
            config.time = Time::Ticks {
                tick_ms: 1,
                lease_ticks: 2,
                skew_ticks: 1,
            };
        }
        config
    }

    /// What `leasehold check` runs with no flags. For a variant expected to hold — the
    /// reference, and a user's broker checked as `fenced` — the covering configuration
    /// ([`CheckConfig::covering_for`]), so that "holds" covers every cell of the protocol's
    /// surface the variant supports. For a variant expected to break an invariant (a planted
    /// bug), its own configuration ([`CheckConfig::tailored_for`]), the smallest that shows
    /// the bug; `check --covering` checks it exactly as the reference is checked.
    pub fn default_for(variant: Variant) -> CheckConfig {
        match variant.expected_violation() {
            None => CheckConfig::covering_for(variant),
            Some(_) => CheckConfig::tailored_for(variant),
        }
    }

    /// The variant's own configuration (`check --tailored`): for a planted bug (and the
    /// protocols expected to break an invariant), the smallest bounds that expose it; for a
    /// protocol expected to hold, one group explored deep (three events, three workers,
    /// plain handler outcomes, a crash, a lost reply and a broker restart), which proves in a
    /// few seconds but leaves cells uncovered. The verdict matrix (`leasehold report`) runs it.
    pub fn tailored_for(variant: Variant) -> CheckConfig {
        let none = Budgets::default();
        let base = |events, workers, max_attempts, budgets| {
            CheckConfig::sized(variant, events, workers, max_attempts, budgets)
        };
        let renews = Budgets { renews: 1, ..none };
        let timed = |config: CheckConfig, skew_ticks| CheckConfig {
            time: Time::Ticks {
                tick_ms: 1,
                lease_ticks: 2,
                skew_ticks,
            },
            ..config
        };
        match variant {
            // The largest configuration that proves in about ten seconds on one thread,
            // lost replies on (reports/check-bench.md).
            Variant::Fenced | Variant::RedisStreamsFenced | Variant::PgFenced => base(
                3,
                3,
                2,
                Budgets {
                    crashes: 1,
                    lost_replies: 1,
                    broker_restarts: 1,
                    ..none
                },
            ),
            // A broker restart is outside the RabbitMQ model (every channel would close:
            // docs/rabbitmq.md), so its largest bounds have none.
            Variant::RabbitMq => base(
                3,
                3,
                2,
                Budgets {
                    crashes: 1,
                    lost_replies: 1,
                    ..none
                },
            ),
            // The smallest configuration where a tag from a closed channel reaches another
            // delivery: a worker's request outlives its channel (a timeout), and the worker,
            // restarted after a crash, holds a delivery with that tag on its next channel.
            Variant::RabbitMqChannel => base(1, 1, 2, Budgets { crashes: 1, ..none }),
            Variant::RedisStreams
            | Variant::JetStream
            | Variant::PgVisibility
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
            // A third attempt: the stale timer's expiry returns the event instead of
            // dead-lettering it, so it is leased again while its holder's lease is unexpired.
            Variant::StaleTimer => base(1, 2, 3, none),
            Variant::VolatilePublish => base(
                1,
                1,
                1,
                Budgets {
                    broker_restarts: 1,
                    ..none
                },
            ),
            // The renew mutants get their deadlines wrong, which only a clock shows: the
            // timed model with leases of 2 ticks of 1 ms and one renew.
            Variant::RenewFromDeadline => timed(base(1, 1, 1, renews), 0),
            // A second worker fetches when the old timer expires the renewed lease.
            Variant::RenewKeepsTimer => timed(base(1, 2, 2, renews), 0),
            // Worker B's clock runs a tick ahead: its renew is counted from there.
            Variant::RenewWorkerClock => timed(base(1, 2, 1, renews), 1),
            Variant::AckAllGroups => CheckConfig {
                group_count: 2,
                ..base(1, 1, 1, none)
            },
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

    /// One group, `nack_on_error`, budgeted renews.
    fn sized(
        variant: Variant,
        event_count: u32,
        worker_count: usize,
        max_attempts: u32,
        budgets: Budgets,
    ) -> CheckConfig {
        CheckConfig {
            variant,
            group_count: 1,
            event_count,
            worker_count,
            max_attempts,
            policy: AckPolicy::NackOnError,
            budgets,
            renews: Renews::Budget,
            fairness: Fairness::Weak,
            outcomes: Outcomes::Plain,
            time: Time::Untimed,
        }
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
        )?;
        if let Time::Ticks {
            tick_ms,
            lease_ticks,
            skew_ticks,
        } = self.time
        {
            range("tick-ms", tick_ms, 1, 10_000)?;
            range(
                "lease-ticks",
                u64::from(lease_ticks),
                1,
                u64::from(LEASE_TICKS_MAX),
            )?;
            range(
                "skew-ticks",
                u64::from(skew_ticks),
                0,
                u64::from(SKEW_TICKS_MAX),
            )?;
            if self.renews == Renews::Unbounded {
                return Err(
                    "--time ticks: not with --renews unbounded (a holder that renews before every deadline holds its lease forever, and no fairness on expiry can end that on a clock: use a renew budget)"
                        .to_string(),
                );
            }
            if self.variant.channel_scoped() {
                return Err(format!(
                    "--time ticks: not with --variant {} (its leases end when a channel closes, which the timed model does not drive)",
                    self.variant
                ));
            }
        }
        Ok(())
    }

    /// Whether the state graph may have cycles (renews unbounded).
    pub fn cyclic(&self) -> bool {
        self.renews == Renews::Unbounded
    }

    /// The bounds as command-line flags (without the variant), e.g. for `leasehold protocols`.
    pub fn flags(&self) -> String {
        let b = &self.budgets;
        let renews = match self.renews {
            Renews::Budget => b.renews.to_string(),
            Renews::Unbounded => format!("unbounded --fairness {}", self.fairness.name()),
        };
        // Every dimension is named, the default ones too: a command reproduces what ran
        // whichever configuration `check` starts from.
        let outcomes = format!(" --outcomes {}", self.outcomes.name());
        let time = format!(" {}", self.time.flags());
        format!(
            "--groups {} --events {} --workers {} --max-attempts {} --policy {} --crashes {} --drops {} --dups {} --lost-replies {} --broker-restarts {} --renews {}{outcomes}{time}",
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
            renews
        )
    }
}

impl fmt::Display for CheckConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--variant {} {}", self.variant, self.flags())
    }
}
