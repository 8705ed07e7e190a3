//! Protocol variants and planted mutants: one broker, one small deviation per decision point.
//!
//! Each decision the broker or the runtime makes that a variant can change is a method here;
//! the broker and the runtime ask the variant instead of carrying copies of themselves.

use crate::invariant::Invariant;
use crate::types::SettleOp;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Reference protocol, faithful backend variant, or planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum VariantKind {
    /// A protocol a user may run; expected to hold (or to fail as documented).
    Protocol,
    /// A planted bug that some engine must catch.
    Mutant,
}

/// How the broker decides whether a settle request may act on a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    /// The record is `Leased` with this lease id, `now < deadline`, and the receipt matches.
    LeaseId,
    /// Redis `XACK`: the entry is pending (delivered and not settled), whoever holds it.
    Pending,
    /// By (group, seq) alone: no check at all.
    None,
    /// By row id, as a job table's `DELETE … WHERE id = $1`: the record is still in the queue
    /// (available or leased, not acked or dead-lettered), whoever read it last.
    Row,
    /// As [`Fence::LeaseId`], but the deadline is checked against the clock the worker reports
    /// instead of the broker's own: a worker whose clock runs behind settles an expired lease.
    WorkerClock,
}

/// What an accepted renew counts the new deadline from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenewBase {
    /// The broker's clock: `now + extend` (the contract).
    Now,
    /// The lease's current deadline (a bug).
    Deadline,
    /// The clock the worker reports with its request (a bug).
    WorkerClock,
}

/// How the committed frontier is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontierRule {
    /// The largest `k` with `1..=k` all settled.
    Contiguous,
    /// The highest acked sequence number (a bug).
    MaxAcked,
}

macro_rules! variants {
    ($( $v:ident => $name:literal, $kind:ident, $expect:expr, $summary:literal; )*) => {
        /// A protocol variant or mutant, selected by name (its name is also its serialized
        /// form, as on the command line and in scenario files).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Variant { $( #[doc = $summary] $v, )* }

        impl Variant {
            /// Every variant, reference first, mutants last.
            pub const ALL: &'static [Variant] = &[ $( Variant::$v, )* ];

            /// The name used on the command line and in scenario files.
            pub fn name(self) -> &'static str { match self { $( Variant::$v => $name, )* } }

            /// One line describing the variant.
            pub fn summary(self) -> &'static str { match self { $( Variant::$v => $summary, )* } }

            /// Protocol or mutant.
            pub fn kind(self) -> VariantKind { match self { $( Variant::$v => VariantKind::$kind, )* } }

            /// The invariant this variant is expected to break (`None`: every invariant holds).
            pub fn expected_violation(self) -> Option<Invariant> { match self { $( Variant::$v => $expect, )* } }
        }
    };
}

variants! {
    Fenced => "fenced", Protocol, None,
        "the reference: settles fenced on the lease id and the broker's own deadline";
    RedisStreams => "redis-streams", Protocol, Some(Invariant::I1),
        "plain Redis Streams: XACK by entry id counts whoever holds the entry; nack leaves it pending until idle";
    RedisStreamsFenced => "redis-streams-fenced", Protocol, None,
        "Redis Streams with settles fenced on a lease id kept beside the entry (server-side script)";
    PgVisibility => "pg-visibility", Protocol, Some(Invariant::I1),
        "a Postgres job table with a visibility timeout (pgmq): delete, nack and extend by row id, whoever read the row last";
    PgFenced => "pg-fenced", Protocol, None,
        "a Postgres job table whose reads store a fresh lease token: every settle is UPDATE/DELETE … WHERE id AND token";
    JetStream => "jetstream", Protocol, Some(Invariant::I1),
        "NATS JetStream, explicit acks: Ack/Nak/Term on a reply subject count while the message is ack-pending, whichever delivery sent them";
    RabbitMq => "rabbitmq", Protocol, None,
        "a RabbitMQ quorum queue, manual acks, a channel per delivery: expiry closes the channel, returned messages come first, no nack delay, no renew";
    RabbitMqChannel => "rabbitmq-channel", Protocol, Some(Invariant::I1),
        "RabbitMQ with one channel per worker and group holding several deliveries (prefetch > 1): a settle names a tag on the worker's current channel; an unknown tag's 406 or a timeout closes the channel and returns all its deliveries";
    UnfencedSettle => "unfenced-settle", Mutant, Some(Invariant::I1),
        "ack/nack/reject accepted by (group, seq) alone, ignoring the lease id";
    RenewRevives => "renew-revives", Mutant, Some(Invariant::I2),
        "renew accepted on an expired lease, even after the event was leased again";
    LeaseIdReuse => "lease-id-reuse", Mutant, Some(Invariant::I1),
        "the lease-id counter is volatile and restarts after a broker restart";
    MaxSeenFrontier => "max-seen-frontier", Mutant, Some(Invariant::I4),
        "the frontier is the highest acked seq, not the contiguous settled prefix";
    NoDeadLetter => "no-dead-letter", Mutant, Some(Invariant::I5),
        "expiry never dead-letters; attempts grow without bound";
    VolatileAck => "volatile-ack", Mutant, Some(Invariant::I4),
        "acks are acknowledged before they are durable; a broker restart loses them";
    NackOnAmbiguous => "nack-on-ambiguous", Mutant, Some(Invariant::I4),
        "the runtime nacks after an ambiguous ack error, on an unfenced broker";
    WorkerClockExpiry => "worker-clock-expiry", Mutant, Some(Invariant::I1),
        "the broker checks the lease's deadline against the clock the worker reports instead of its own";
    DlqDrop => "dlq-drop", Mutant, Some(Invariant::I3),
        "dead-lettering drops the record instead of keeping it with its reason";
    OnlyAckFenced => "only-ack-fenced", Mutant, Some(Invariant::I1),
        "ack is fenced but nack and reject are not";
    AttemptsReset => "attempts-reset", Mutant, Some(Invariant::I5),
        "the attempt counter restarts when an expired event is redelivered, so a poison event never dead-letters";
    StuckLease => "stuck-lease", Mutant, Some(Invariant::I6),
        "leases that exist when the broker restarts never expire afterwards";
    InclusiveDeadline => "inclusive-deadline", Mutant, Some(Invariant::I1),
        "a settle that lands exactly at its lease's deadline is accepted (the fence compares now <= deadline)";
    StaleTimer => "stale-timer", Mutant, Some(Invariant::I2),
        "a lease's expiry timer is not cancelled when the lease is settled; when it fires it expires whatever lease then holds the record";
    VolatilePublish => "volatile-publish", Mutant, Some(Invariant::I3),
        "a publish is acknowledged before it is durable; a broker restart loses the events published since the last flush";
    RenewFromDeadline => "renew-from-deadline", Mutant, Some(Invariant::I1),
        "a renew extends the lease from its current deadline instead of from now, so the lease outlives the deadline its holder was granted";
    RenewKeepsTimer => "renew-keeps-timer", Mutant, Some(Invariant::I2),
        "a renew moves the lease's deadline but leaves its expiry timer at the old one, which expires the renewed lease early";
    RenewWorkerClock => "renew-worker-clock", Mutant, Some(Invariant::I1),
        "a renew extends the lease from the clock the worker reports instead of the broker's own";
    AckAllGroups => "ack-all-groups", Mutant, Some(Invariant::I3),
        "an accepted ack settles the event in every consumer group, not only the lease's";
}

impl Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Variant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Variant, D::Error> {
        let name = String::deserialize(deserializer)?;
        Variant::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown variant '{name}' (one of: {})",
                Variant::names()
            ))
        })
    }
}

impl Variant {
    /// Looks a variant up by its name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.iter().copied().find(|v| v.name() == name)
    }

    /// The names of every variant, comma-separated (for error messages).
    pub fn names() -> String {
        Variant::ALL
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether this variant is one of the Redis Streams backends (leases carry the entry id as
    /// a receipt; `lease_ms` is the claim idle time; nack leaves the entry pending until idle).
    pub fn is_redis(self) -> bool {
        matches!(self, Variant::RedisStreams | Variant::RedisStreamsFenced)
    }

    /// Whether a lease's receipt names the delivered message (the Redis entry id; JetStream's
    /// stream sequence, from the ack reply subject), so that a settle naming another message is
    /// `receipt_mismatch`.
    pub fn receipts_name_entries(self) -> bool {
        self.is_redis() || self == Variant::JetStream
    }

    /// Whether this variant is one of the Postgres job tables (no receipt; `lease_ms` is the
    /// visibility timeout).
    pub fn is_postgres(self) -> bool {
        matches!(self, Variant::PgVisibility | Variant::PgFenced)
    }

    /// Whether this variant is the RabbitMQ quorum queue (docs/rabbitmq.md): a record that
    /// comes back (an expiry, a nack) is delivered before every never-delivered one, in the
    /// order it came back; a nack has no delay; a delivery's timeout cannot be extended.
    pub fn is_rabbitmq(self) -> bool {
        matches!(self, Variant::RabbitMq | Variant::RabbitMqChannel)
    }

    /// Whether leases are deliveries on a worker's long-lived channel (`rabbitmq-channel`,
    /// docs/rabbitmq.md): a lease id names (channel, delivery tag); a settle travels on the
    /// worker's current channel for the group and names a tag there; an unknown tag (`406`)
    /// or a delivery's timeout closes the channel and returns every delivery it held.
    pub fn channel_scoped(self) -> bool {
        self == Variant::RabbitMqChannel
    }

    /// Whether returned records are delivered first, in the order they came back (RabbitMQ's
    /// quorum queue), instead of lowest sequence first.
    pub fn returns_first(self) -> bool {
        self.is_rabbitmq()
    }

    /// Whether a nack's `delay_ms` holds the record back (RabbitMQ's `basic.nack` requeues at
    /// once).
    pub fn nack_delays(self) -> bool {
        !self.is_rabbitmq()
    }

    /// Whether a renew may extend a lease (RabbitMQ has no per-delivery extension: a renew is
    /// refused as `invalid`, changing nothing).
    pub fn renews(self) -> bool {
        !self.is_rabbitmq()
    }

    /// The fence the broker applies to `op`. Renew is fenced on the lease id in every variant
    /// but `pg-visibility`, where every statement names the row by id alone (the
    /// `renew-revives` mutant deviates after the check, see [`Variant::renew_revives`]).
    pub fn fence(self, op: &SettleOp) -> Fence {
        match (self, op) {
            (Variant::PgVisibility, _) => Fence::Row,
            (_, SettleOp::Renew { .. }) => Fence::LeaseId,
            (Variant::RedisStreams | Variant::JetStream, _) => Fence::Pending,
            (Variant::UnfencedSettle | Variant::NackOnAmbiguous, _) => Fence::None,
            (Variant::OnlyAckFenced, SettleOp::Nack { .. } | SettleOp::Reject { .. }) => {
                Fence::None
            }
            (Variant::WorkerClockExpiry, _) => Fence::WorkerClock,
            _ => Fence::LeaseId,
        }
    }

    /// Whether renew may revive an expired or superseded lease (`renew-revives`).
    pub fn renew_revives(self) -> bool {
        self == Variant::RenewRevives
    }

    /// Whether the lease-id counter survives a broker restart.
    pub fn lease_ids_durable(self) -> bool {
        self != Variant::LeaseIdReuse
    }

    /// How the frontier is computed.
    pub fn frontier_rule(self) -> FrontierRule {
        if self == Variant::MaxSeenFrontier {
            FrontierRule::MaxAcked
        } else {
            FrontierRule::Contiguous
        }
    }

    /// Whether expiry of a lease whose attempts are exhausted dead-letters the record.
    pub fn expiry_dead_letters(self) -> bool {
        self != Variant::NoDeadLetter
    }

    /// Whether an accepted ack is durable before it is acknowledged.
    pub fn acks_durable(self) -> bool {
        self != Variant::VolatileAck
    }

    /// Whether the runtime nacks after an `Ambiguous` settle error (instead of leaving the
    /// lease to expire).
    pub fn nacks_on_ambiguous(self) -> bool {
        self == Variant::NackOnAmbiguous
    }

    /// Whether dead-lettering keeps the record (with its reason).
    pub fn keeps_dead_letters(self) -> bool {
        self != Variant::DlqDrop
    }

    /// Whether expiry resets the record's attempt counter.
    pub fn expiry_resets_attempts(self) -> bool {
        self == Variant::AttemptsReset
    }

    /// Whether leases that exist at a broker restart are re-armed to expire.
    pub fn rearms_expiry_on_restart(self) -> bool {
        self != Variant::StuckLease
    }

    /// Whether a lease is still valid at exactly its deadline (`now <= deadline` instead of
    /// `now < deadline`): the `inclusive-deadline` mutant.
    pub fn deadline_inclusive(self) -> bool {
        self == Variant::InclusiveDeadline
    }

    /// Whether the broker cancels a lease's expiry timer when the lease is settled. The timer
    /// handler trusts its timers (it expires the lease that holds the record), so a timer that
    /// outlives its lease expires the next one (`stale-timer`).
    pub fn cancels_timers(self) -> bool {
        self != Variant::StaleTimer
    }

    /// Where an accepted renew counts the new deadline from: the broker's clock (`now +
    /// extend`, the contract), the lease's current deadline (`renew-from-deadline`) or the
    /// clock the worker reports (`renew-worker-clock`).
    pub fn renew_base(self) -> RenewBase {
        match self {
            Variant::RenewFromDeadline => RenewBase::Deadline,
            Variant::RenewWorkerClock => RenewBase::WorkerClock,
            _ => RenewBase::Now,
        }
    }

    /// Whether an accepted renew re-arms the lease's expiry timer at the new deadline (not in
    /// `renew-keeps-timer`).
    pub fn renew_rearms_timer(self) -> bool {
        self != Variant::RenewKeepsTimer
    }

    /// Whether an accepted ack settles the event in the lease's group only (not in
    /// `ack-all-groups`, which acks it in every group).
    pub fn acks_per_group(self) -> bool {
        self != Variant::AckAllGroups
    }

    /// Whether a publish is durable before it is acknowledged (else it is flushed with the next
    /// fetch, and a broker restart before that loses it: `volatile-publish`).
    pub fn publishes_durable(self) -> bool {
        self != Variant::VolatilePublish
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
