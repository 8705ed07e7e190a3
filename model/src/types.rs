//! The protocol's vocabulary: identifiers, leases, delivery records and errors.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;

/// Virtual milliseconds. The core never reads a clock: every operation takes `now_ms`.
pub type Ms = u64;

/// A sequence number in the stream, starting at 1.
pub type Seq = u32;

/// Index of a consumer group in the broker's configuration (0-based).
pub type GroupIx = usize;

/// `group` with groups `a` and `b` exchanged (the model checker's symmetry over groups).
#[inline]
pub fn exchanged(group: u32, a: u32, b: u32) -> u32 {
    if group == a {
        b
    } else if group == b {
        a
    } else {
        group
    }
}

/// An opaque fencing token, unique for the broker's whole life (never reused, also across
/// restarts — except in the `lease-id-reuse` mutant).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct LeaseId(pub u64);

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A backend's own claim identity (e.g. a Redis entry id) travelling with the lease.
/// Handlers never interpret it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Receipt(pub u64);

/// What `fetch` hands a consumer: the right to settle one delivery of one event for one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lease {
    /// The fencing token.
    pub lease_id: LeaseId,
    /// The group the delivery belongs to.
    pub group: GroupIx,
    /// The event's sequence number.
    pub seq: Seq,
    /// Which delivery of this event to this group this is (1 = first).
    pub attempt: u32,
    /// The lease is valid while `now_ms < deadline_ms` on the broker's clock.
    pub deadline_ms: Ms,
    /// The backend's claim identity, if it has one.
    pub receipt: Option<Receipt>,
}

/// The broker's per (group, event) delivery record.
///
/// `Copy` and free of heap data: the model checker clones whole brokers per transition. A
/// backend's receipt is not kept here (the pure broker's receipts are a function of the
/// variant and the seq, see [`crate::Broker::receipt`]), and whether the lease will expire is
/// the broker's timer table, not a flag on the record. Its `Hash` packs the variant and the
/// attempts in one word (the model checker fingerprints records by the million).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Record {
    /// Eligible for delivery once `now_ms >= not_before_ms`.
    Available {
        /// Deliveries so far.
        attempts: u32,
        /// Earliest time of the next delivery.
        not_before_ms: Ms,
    },
    /// Held by a lease.
    Leased {
        /// The current lease's token.
        lease_id: LeaseId,
        /// Deliveries so far, this one included.
        attempts: u32,
        /// Expiry time on the broker's clock.
        deadline_ms: Ms,
    },
    /// Settled by an accepted ack. Final.
    Acked,
    /// Settled by a reject or exhausted attempts. Final; the reason is kept.
    DeadLettered {
        /// The dead-letter reason (`x-error`).
        reason: Reason,
    },
    /// The record is gone (only the `dlq-drop` mutant produces this).
    Dropped,
}

/// A record as published: available, never delivered, no delay.
impl Default for Record {
    fn default() -> Record {
        Record::Available {
            attempts: 0,
            not_before_ms: 0,
        }
    }
}

impl Record {
    /// The record's status without its payload.
    #[inline]
    pub fn status(&self) -> Status {
        match self {
            Record::Available { .. } => Status::Available,
            Record::Leased { .. } => Status::Leased,
            Record::Acked => Status::Acked,
            Record::DeadLettered { .. } => Status::DeadLettered,
            Record::Dropped => Status::Dropped,
        }
    }

    /// Acked or dead-lettered.
    #[inline]
    pub fn is_settled(&self) -> bool {
        matches!(self, Record::Acked | Record::DeadLettered { .. })
    }

    /// Deliveries so far, for records that still count them.
    pub fn attempts(&self) -> Option<u32> {
        match self {
            Record::Available { attempts, .. } | Record::Leased { attempts, .. } => Some(*attempts),
            _ => None,
        }
    }
}

impl std::hash::Hash for Record {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match *self {
            Record::Available {
                attempts,
                not_before_ms,
            } => {
                state.write_u64(1 | u64::from(attempts) << 8);
                state.write_u64(not_before_ms);
            }
            Record::Leased {
                lease_id,
                attempts,
                deadline_ms,
            } => {
                state.write_u64(2 | u64::from(attempts) << 8);
                state.write_u64(lease_id.0);
                state.write_u64(deadline_ms);
            }
            Record::Acked => state.write_u64(3),
            Record::DeadLettered { reason } => {
                state.write_u64(4);
                reason.hash(state);
            }
            Record::Dropped => state.write_u64(5),
        }
    }
}

/// A record's status, as an outside observer (the oracle, a report) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Status {
    /// See [`Record::Available`].
    Available,
    /// See [`Record::Leased`].
    Leased,
    /// See [`Record::Acked`].
    Acked,
    /// See [`Record::DeadLettered`].
    DeadLettered,
    /// See [`Record::Dropped`].
    Dropped,
}

impl Status {
    /// In words: `available`, `leased`, `acked`, `dead-lettered`, `dropped`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Available => "available",
            Status::Leased => "leased",
            Status::Acked => "acked",
            Status::DeadLettered => "dead-lettered",
            Status::Dropped => "dropped",
        }
    }
}

/// Why a settle (ack / nack / renew / reject) or a fetch failed. The texts are
/// `Cow<'static, str>` so that the errors engines inject (a lost reply, a dropped request) cost
/// no allocation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SettleError {
    /// The lease is not the record's current, unexpired lease.
    StaleLease,
    /// The lease id matches but the receipt differs.
    ReceiptMismatch,
    /// The backend failed fast; nothing was applied.
    BackendUnavailable,
    /// The outcome is unknown: the request may or may not have been applied.
    Ambiguous(Cow<'static, str>),
    /// The backend reported a failure; nothing was applied.
    Failed(Cow<'static, str>),
    /// The request was malformed (unknown group, limit 0, …).
    Invalid(Cow<'static, str>),
}

impl SettleError {
    /// The snake-case name used in scenario files and timelines.
    pub fn name(&self) -> &'static str {
        match self {
            SettleError::StaleLease => "stale_lease",
            SettleError::ReceiptMismatch => "receipt_mismatch",
            SettleError::BackendUnavailable => "backend_unavailable",
            SettleError::Ambiguous(_) => "ambiguous",
            SettleError::Failed(_) => "failed",
            SettleError::Invalid(_) => "invalid",
        }
    }
}

impl fmt::Display for SettleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettleError::Ambiguous(why) | SettleError::Failed(why) | SettleError::Invalid(why)
                if !why.is_empty() =>
            {
                write!(f, "{} ({why})", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}

/// The three settles a lease holder can send, plus renew (fenced the same way, not a settle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SettleOp {
    /// Record → Acked.
    Ack,
    /// Record → Available after `delay_ms`, or dead-lettered when attempts are exhausted.
    /// `reason` becomes the dead-letter reason in that case (default "max attempts").
    Nack {
        /// Redelivery delay.
        delay_ms: Ms,
        /// The dead-letter reason if this nack exhausts the attempts.
        reason: Option<Reason>,
    },
    /// Record → DeadLettered at once.
    Reject {
        /// The dead-letter reason.
        reason: Reason,
    },
    /// Extend the deadline to `now + extend_ms`; same lease id.
    Renew {
        /// New lease duration from now.
        extend_ms: Ms,
    },
}

impl SettleOp {
    /// `ack`, `nack`, `reject` or `renew`.
    pub fn name(&self) -> &'static str {
        match self {
            SettleOp::Ack => "ack",
            SettleOp::Nack { .. } => "nack",
            SettleOp::Reject { .. } => "reject",
            SettleOp::Renew { .. } => "renew",
        }
    }

    /// Ack, nack and reject settle a record; renew does not.
    pub fn is_settle(&self) -> bool {
        !matches!(self, SettleOp::Renew { .. })
    }
}

/// The dead-letter reason used when attempts run out and no other reason was given.
pub const REASON_MAX_ATTEMPTS: &str = "max attempts";

/// A dead-letter reason (`x-error`) or an outcome's text.
///
/// Interned for the life of the process, so that a reason is `Copy`, records and settle
/// requests carry no heap data, and copying or comparing one costs a pointer. Equality, order
/// and hashing are by text. The table only grows with the number of *distinct* texts a process
/// uses (the workloads and scenarios use a handful); a program that made up a new reason per
/// event would grow it without bound.
#[derive(Clone, Copy)]
pub struct Reason(&'static str);

static REASONS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

impl Reason {
    /// "max attempts": the reason of a record dead-lettered because its attempts ran out.
    pub const MAX_ATTEMPTS: Reason = Reason(REASON_MAX_ATTEMPTS);
    /// The empty text.
    pub const EMPTY: Reason = Reason("");

    /// The interned reason with this text.
    pub fn new(text: &str) -> Reason {
        if text.is_empty() {
            return Reason::EMPTY;
        }
        if text == REASON_MAX_ATTEMPTS {
            return Reason::MAX_ATTEMPTS;
        }
        let mut table = REASONS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&kept) = table.get(text) {
            return Reason(kept);
        }
        let kept: &'static str = Box::leak(text.to_owned().into_boxed_str());
        table.insert(kept);
        Reason(kept)
    }

    /// A reason for a text that lives for the whole program (no table lookup).
    pub const fn from_static(text: &'static str) -> Reason {
        Reason(text)
    }

    /// The text.
    #[inline]
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether the text is empty.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for Reason {
    #[inline]
    fn eq(&self, other: &Reason) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }
}

impl Eq for Reason {}

impl PartialOrd for Reason {
    fn partial_cmp(&self, other: &Reason) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Reason {
    fn cmp(&self, other: &Reason) -> std::cmp::Ordering {
        self.0.cmp(other.0)
    }
}

impl std::hash::Hash for Reason {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::ops::Deref for Reason {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Reason {
        Reason::new(text)
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Reason, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Reason::new(&text))
    }
}
