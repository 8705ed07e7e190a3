//! The consumer runtime's pure decisions: ack policies, handler outcomes, handle calls, the
//! dead-letter reason rule and the settle-error classification.
//!
//! Everything here is a function of finite inputs, so it is tested over its whole domain.

use crate::types::{Reason, SettleError, SettleOp};
use crate::variant::Variant;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;

/// What the runtime does with a message when the handler finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AckPolicy {
    /// Ack on success; nack on error (retried, then dead-lettered). At least once.
    NackOnError,
    /// Ack on success and on error (the error is logged). At most once for failures.
    AckAlways,
    /// Ack before the handler runs. At most once.
    AckFirst,
    /// The handler acks; an error nacks; a handler that returns without settling leaves the
    /// lease to expire.
    Manual,
}

impl AckPolicy {
    /// Every policy.
    pub const ALL: [AckPolicy; 4] = [
        AckPolicy::NackOnError,
        AckPolicy::AckAlways,
        AckPolicy::AckFirst,
        AckPolicy::Manual,
    ];

    /// The snake-case name used on the command line and in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            AckPolicy::NackOnError => "nack_on_error",
            AckPolicy::AckAlways => "ack_always",
            AckPolicy::AckFirst => "ack_first",
            AckPolicy::Manual => "manual",
        }
    }

    /// Parses a policy name.
    pub fn from_name(name: &str) -> Option<AckPolicy> {
        AckPolicy::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the policy promises at-least-once processing (I7 applies).
    pub fn at_least_once(self) -> bool {
        matches!(self, AckPolicy::NackOnError | AckPolicy::Manual)
    }
}

impl fmt::Display for AckPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a handler left.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// Returned normally.
    Ok,
    /// Raised an error of type `kind` with message `text`.
    Error {
        /// The error's type name (the dead-letter reason when `text` is empty).
        kind: Reason,
        /// The error's message.
        text: Reason,
    },
    /// Raised `AckMessage`.
    Ack,
    /// Raised `NackMessage(text)`.
    Nack(Reason),
    /// Raised `RejectMessage(text)`.
    Reject(Reason),
}

impl Outcome {
    /// Whether the handler counts as having completed its work (for I7).
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Ok | Outcome::Ack)
    }

    /// The outcome's text, or its kind name when the text is empty (the `x-error` rule).
    pub fn reason(&self) -> Reason {
        let (text, kind) = match self {
            Outcome::Ok => (Reason::EMPTY, Reason::from_static("Ok")),
            Outcome::Ack => (Reason::EMPTY, Reason::from_static("AckMessage")),
            Outcome::Error { kind, text } => (*text, *kind),
            Outcome::Nack(text) => (*text, Reason::from_static("NackMessage")),
            Outcome::Reject(text) => (*text, Reason::from_static("RejectMessage")),
        };
        if text.is_empty() {
            kind
        } else {
            text
        }
    }
}

/// A call the handler made on its message handle, in order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HandleCall {
    /// `msg.ack()`: acks at once; idempotent.
    Ack,
    /// `msg.nack()`: marks the message failed; no effect after `ack()`.
    Nack,
    /// `msg.reject(reason)`: dead-letter when the handler finishes, whatever the policy.
    Reject(Reason),
}

/// When a settle action is sent, relative to the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum When {
    /// Before the handler runs (`ack_first`).
    Before,
    /// During the handler, at the handle call with this index.
    During(usize),
    /// After the handler finished.
    After,
}

/// One settle the runtime sends, and when.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Action {
    /// When it is sent.
    pub when: When,
    /// What is sent.
    pub op: SettleOp,
}

/// The settles of one delivery, in sending order (at most one today: an `ack_first` or
/// handle-call ack ends the decision).
pub type Actions = SmallVec<[Action; 2]>;

/// The nack the runtime sends for an outcome or a handle call, with the reason that becomes the
/// dead-letter reason if attempts are exhausted.
fn nack(reason: Reason) -> SettleOp {
    SettleOp::Nack {
        delay_ms: 0,
        reason: Some(reason),
    }
}

/// Decides the settles for one delivery: `policy` × the handler's `calls` on its handle ×
/// its `outcome`. Pure and total; the order of the result is the order of sending.
///
/// Rules (docs/protocol.md, "Handle calls"): `ack()` is idempotent; `nack()` has no effect
/// after `ack()`; `reject(reason)` dead-letters when the handler finishes whatever the policy
/// (unless the message is already acked); a handler that called `nack()` and returned normally
/// is not acked on its behalf; a `manual` handler that returns without settling leaves the
/// lease to expire.
pub fn decide(policy: AckPolicy, calls: &[HandleCall], outcome: &Outcome) -> Actions {
    let mut actions = Actions::new();
    let mut acked = false;
    let mut nacked = false;
    let mut rejected: Option<Reason> = None;
    if policy == AckPolicy::AckFirst {
        actions.push(Action {
            when: When::Before,
            op: SettleOp::Ack,
        });
        acked = true;
    }
    for (index, call) in calls.iter().enumerate() {
        match call {
            HandleCall::Ack if !acked => {
                actions.push(Action {
                    when: When::During(index),
                    op: SettleOp::Ack,
                });
                acked = true;
            }
            HandleCall::Ack => {}
            HandleCall::Nack => nacked = true,
            HandleCall::Reject(reason) => rejected = Some(*reason),
        }
    }
    if acked {
        return actions;
    }
    let after = if let Some(reason) = rejected {
        let reason = if reason.is_empty() {
            Outcome::Reject(Reason::EMPTY).reason()
        } else {
            reason
        };
        Some(SettleOp::Reject { reason })
    } else {
        match outcome {
            Outcome::Reject(_) => Some(SettleOp::Reject {
                reason: outcome.reason(),
            }),
            Outcome::Ack => Some(SettleOp::Ack),
            Outcome::Nack(_) => Some(nack(outcome.reason())),
            // The outcome names the failure when it has a text or a kind: an error raised after
            // `nack()` is dead-lettered with the error's reason, not `NackMessage`.
            Outcome::Error { .. } if nacked => Some(nack(outcome.reason())),
            _ if nacked => Some(nack(Outcome::Nack(Reason::EMPTY).reason())),
            Outcome::Ok => match policy {
                AckPolicy::NackOnError | AckPolicy::AckAlways => Some(SettleOp::Ack),
                AckPolicy::AckFirst | AckPolicy::Manual => None,
            },
            Outcome::Error { .. } => match policy {
                AckPolicy::NackOnError | AckPolicy::Manual => Some(nack(outcome.reason())),
                AckPolicy::AckAlways => Some(SettleOp::Ack),
                AckPolicy::AckFirst => None,
            },
        }
    };
    actions.extend(after.map(|op| Action {
        when: When::After,
        op,
    }));
    actions
}

/// What the runtime does after a settle fails (Rheo's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ErrorAction {
    /// The lease is lost: drop the work; do not nack.
    Drop,
    /// The settle may already be durable: leave the lease to expire; never invent a nack.
    LeaveToExpire,
    /// Nack for immediate redelivery.
    Nack,
}

/// Classifies a settle error into the runtime's next move. `variant` matters only for the
/// `nack-on-ambiguous` mutant, which nacks after an ambiguous error.
pub fn classify(error: &SettleError, variant: Variant) -> ErrorAction {
    match error {
        SettleError::StaleLease | SettleError::ReceiptMismatch => ErrorAction::Drop,
        SettleError::Ambiguous(_) if variant.nacks_on_ambiguous() => ErrorAction::Nack,
        SettleError::BackendUnavailable | SettleError::Ambiguous(_) => ErrorAction::LeaveToExpire,
        SettleError::Failed(_) | SettleError::Invalid(_) => ErrorAction::Nack,
    }
}

/// `max_retries = r` means `max_attempts = r + 1`.
pub fn max_attempts_for_retries(max_retries: u32) -> u32 {
    max_retries.saturating_add(1)
}
