//! The engine's event stream: what happened, in the order it happened.
//!
//! The engine emits one [`Event`] for everything it does — a lease issued, a request sent, a
//! request landing at the broker, a reply reaching its worker, an expiry, a crash, a violation
//! found — at the virtual time it happens. Two sinks read the stream:
//!
//! * the **trace hash** ([`crate::hash::TraceHasher`]), always: a rolling hash of each event's
//!   compact binary encoding ([`Event::hash_into`]), so that a campaign seed keeps no text and no
//!   history, only eight bytes;
//! * a **recorder** ([`crate::recorder::Recorder`]), when one is attached (a scenario replay, a
//!   failing seed re-run, `--trace`): it keeps the stream and builds the line-by-line
//!   [`crate::trace::Trace`] the timelines are rendered from.
//!
//! The stream is in landing order: a request's send and its arrival are two events, at their
//! own times, so a reader can tell the story as it reached the broker. Events name leases by
//! [`Issuance`] and requests by [`RequestId`] (both sequential), never by the broker's lease id,
//! so the stream — and its hash — is the same for every backend that behaves the same.

use crate::hash::TraceHasher;
use crate::trace::{Fault, RequestId, WorkerIx};
use leasehold_model::{
    ErrorAction, GroupIx, Issuance, Lease, LeaseId, Ms, Outcome, Reason, Seq, SettleError,
    SettleOp, Status, Violation,
};
use serde::Serialize;
use smallvec::SmallVec;

/// Sequential number of a handler run (the order in which runs started).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RunId(pub u32);

/// Why a request was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Origin {
    /// A worker's own settle or renew (a line of its own).
    Own,
    /// The consumer runtime, for the handler run `RunId` (before, during or after it).
    Handler(RunId),
    /// The runtime's nack after the request `RequestId` failed.
    FollowUp(RequestId),
}

/// What an accepted request did to the broker, as the engine read it back from the broker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Readback {
    /// The group's frontier before the request.
    pub frontier_before: Seq,
    /// The group's frontier after it.
    pub frontier_after: Seq,
    /// The record's status after it.
    pub status: Option<Status>,
    /// The dead-letter reason, when the record is dead-lettered after it (read only when a
    /// recorder is attached: reading it may allocate).
    pub reason: Option<Reason>,
    /// The new deadline, for an accepted renew.
    pub renewed_until_ms: Option<Ms>,
}

/// How a fetch went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum FetchOutcome {
    /// The leases of the [`Event::Issued`] events just before (possibly none), and whether the
    /// reply reached the worker.
    Leased {
        /// How many leases were issued.
        count: u32,
        /// False when the reply was lost: the leases exist, nobody holds them.
        reply_lost: bool,
    },
    /// The fetch failed; nothing was issued.
    Failed(SettleError),
}

/// What ended a liveness phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum DrainEnd {
    /// Every event of every group settled.
    Settled,
    /// Nothing was left to happen (no message, no timer, no fetchable record) with events still
    /// unsettled: a definite liveness failure.
    Quiescent {
        /// When the phase gave up.
        at_ms: Ms,
    },
    /// A named bound stopped the phase first: the seed is inconclusive.
    Bound(crate::bound::Bound),
}

impl DrainEnd {
    /// The phase's end in words (`every event settled`, `quiescent at 90000 ms`,
    /// `liveness_ms_max reached`).
    pub fn describe(self) -> String {
        match self {
            DrainEnd::Settled => "every event settled".to_string(),
            DrainEnd::Quiescent { at_ms } => format!("quiescent at {at_ms} ms"),
            DrainEnd::Bound(bound) => format!("{} reached", bound.name()),
        }
    }
}

/// One thing that happened. Times are the engine's virtual time when emitted (an expiry carries
/// its own, its deadline).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Event {
    /// An event was published (after time 0).
    Published {
        /// Its sequence number.
        seq: Seq,
    },
    /// A fetch issued a lease (one event per lease, before the [`Event::Fetched`] that ends
    /// the fetch).
    Issued {
        /// The fetching worker.
        worker: WorkerIx,
        /// Its incarnation.
        incarnation: u32,
        /// The oracle's name for the lease.
        issuance: Issuance,
        /// The lease as the broker issued it.
        lease: Lease,
        /// Whether the worker learned of it (false: the fetch reply was lost).
        delivered: bool,
    },
    /// A fetch ended.
    Fetched {
        /// The fetching worker.
        worker: WorkerIx,
        /// The group.
        group: GroupIx,
        /// What it got.
        outcome: FetchOutcome,
    },
    /// A settle or renew was put on the wire.
    Sent {
        /// Its id.
        request: RequestId,
        /// The sender.
        worker: WorkerIx,
        /// The sender's incarnation it belongs to.
        incarnation: u32,
        /// The lease it names.
        issuance: Issuance,
        /// What it asks.
        op: SettleOp,
        /// The lease as sent.
        lease: Lease,
        /// The sender's clock.
        worker_clock_ms: Ms,
        /// When it leaves (a paused worker sends when its pause ends).
        sent_ms: Ms,
        /// The injected fault.
        fault: Fault,
        /// Sent before its sender crashed (an in-flight message that outlived the crash).
        delayed: bool,
        /// Whether the runtime may nack after it fails.
        nack_on_failure: bool,
        /// Why it was sent.
        origin: Origin,
        /// Aimed to land before the broker's expiries due at the same millisecond
        /// ([`crate::engine::Delivery::before_timer`]); not hashed: its effect is in the order
        /// of the events that follow.
        before_timer: bool,
    },
    /// A request reached the broker, which applied it or refused it.
    Landed {
        /// The request.
        request: RequestId,
        /// A duplicate delivery of a request that already landed.
        duplicate: bool,
        /// The broker's true answer.
        answer: Result<(), SettleError>,
        /// What it did (accepted requests only).
        effect: Readback,
        /// The renewed lease (an accepted renew).
        renewed: Option<Lease>,
    },
    /// A request was not applied: lost on the way (`Dropped`), refused fast (`Unavailable`) or
    /// failed (`Failed`).
    NotApplied {
        /// The request.
        request: RequestId,
        /// Whether it reached the broker (refused or failed) or was lost.
        reached: bool,
        /// What the worker will see.
        seen: SettleError,
    },
    /// A reply reached its worker.
    Replied {
        /// The request.
        request: RequestId,
        /// The worker had crashed since sending: nobody acted on the reply.
        discarded: bool,
        /// The runtime's reaction to a failure.
        follow_up: Option<ErrorAction>,
    },
    /// A worker's handler started on a lease.
    HandlerStarted {
        /// The run.
        run: RunId,
        /// The worker.
        worker: WorkerIx,
        /// The lease.
        issuance: Issuance,
    },
    /// A handler run finished.
    HandlerFinished {
        /// The run.
        run: RunId,
        /// How the handler left.
        outcome: Outcome,
    },
    /// A handler run was lost: its worker crashed first.
    HandlerKilled {
        /// The run.
        run: RunId,
    },
    /// The broker expired a lease.
    Expired {
        /// The lease.
        issuance: Issuance,
        /// Where the lease ended: its deadline (or now, when that is earlier). The event is
        /// stamped when the broker expired it: for a lazy broker, at its next fetch.
        at_ms: Ms,
        /// Whether the expiry dead-lettered the event.
        dead_lettered: bool,
        /// The group's frontier before and after, when it moved.
        frontier: Option<(Seq, Seq)>,
        /// The broker's id of the lease whose timer fired, when it is not this lease's: a
        /// timer that outlived its lease (`stale-timer`). Not hashed: a lease id is the
        /// broker's private token (the expiry's time and lease are hashed).
        stale_timer: Option<LeaseId>,
    },
    /// A worker crashed.
    Crashed {
        /// The worker.
        worker: WorkerIx,
        /// The leases it held, unsettled.
        held: SmallVec<[Issuance; 2]>,
    },
    /// A worker restarted.
    Restarted {
        /// The worker.
        worker: WorkerIx,
    },
    /// A worker stalled.
    Paused {
        /// The worker.
        worker: WorkerIx,
        /// Until when.
        until_ms: Ms,
    },
    /// The broker restarted.
    BrokerRestarted {
        /// Per group whose frontier moved: (group, before, after).
        frontier: SmallVec<[(GroupIx, Seq, Seq); 1]>,
    },
    /// A lease's deadline passed while the broker, which expires lazily (at its next fetch),
    /// still holds its record under it: the lease has ended by its contract. A scripted
    /// `wait` step tells it (hashed, as the step's own event); a seeded run tells it to its
    /// recorder at the deadline, as time passes it (not hashed: it follows from the deadlines
    /// and expiries the hash covers).
    Lapsed {
        /// The lease.
        issuance: Issuance,
    },
    /// Faults heal and the workers drain the queue (liveness phase).
    DrainStarted,
    /// The liveness phase ended.
    DrainEnded {
        /// What ended it.
        end: DrainEnd,
        /// Every event of every group settled.
        settled: bool,
        /// Each group's frontier.
        frontier: Vec<Seq>,
    },
    /// The oracle found an invariant broken.
    Violated {
        /// The oracle's report.
        violation: Violation,
    },
}

// Tags of the binary encoding: stable numbers, never reused. A tag sits in the top byte of
// an event's first word after its time; small fields share that word.
const PUBLISHED: u64 = 1;
const ISSUED: u64 = 2;
const FETCHED: u64 = 3;
const SENT: u64 = 4;
const LANDED: u64 = 5;
const NOT_APPLIED: u64 = 6;
const REPLIED: u64 = 7;
const HANDLER_STARTED: u64 = 8;
const HANDLER_FINISHED: u64 = 9;
const HANDLER_KILLED: u64 = 10;
const EXPIRED: u64 = 11;
const CRASHED: u64 = 12;
const RESTARTED: u64 = 13;
const PAUSED: u64 = 14;
const BROKER_RESTARTED: u64 = 15;
const DRAIN_STARTED: u64 = 16;
const DRAIN_ENDED: u64 = 17;
const VIOLATED: u64 = 18;
const LAPSED: u64 = 19;

/// A tag and up to 56 bits of small fields: `tag << 56 ^ low`.
#[inline]
fn head(tag: u64, low: u64) -> u64 {
    (tag << 56) ^ low
}

/// Two 32-bit fields in one word.
#[inline]
fn pair(high: u64, low: u64) -> u64 {
    (high << 32) ^ low
}

#[inline]
fn status_code(status: Option<Status>) -> u64 {
    status.map_or(0, |s| s as u64 + 1)
}

/// A lease in two words: (attempt, seq) and the deadline with the group folded in. The
/// broker's lease id and receipt are its private tokens: two backends that behave alike may
/// number them differently.
#[inline]
fn hash_lease(h: &mut TraceHasher, lease: &Lease) {
    h.word(pair(u64::from(lease.attempt), u64::from(lease.seq)));
    h.word(lease.deadline_ms.rotate_left(16) ^ lease.group as u64);
}

/// An operation in one word (a code in the top bits, its duration below), and its reason's
/// text when it has one.
#[inline]
fn hash_op(h: &mut TraceHasher, op: &SettleOp) {
    match *op {
        SettleOp::Ack => h.word(1 << 62),
        SettleOp::Nack { delay_ms, reason } => {
            h.word((2 << 62) ^ delay_ms);
            if let Some(reason) = reason {
                h.text(&reason);
            }
        }
        SettleOp::Reject { reason } => {
            h.word(3 << 62);
            h.text(&reason);
        }
        SettleOp::Renew { extend_ms } => h.word(extend_ms),
    }
}

#[inline]
fn error_code(error: &SettleError) -> u64 {
    match error {
        SettleError::StaleLease => 1,
        SettleError::ReceiptMismatch => 2,
        SettleError::BackendUnavailable => 3,
        SettleError::Ambiguous(_) => 4,
        SettleError::Failed(_) => 5,
        SettleError::Invalid(_) => 6,
    }
}

/// An error's text, when it has one (its code is packed by the caller).
#[inline]
fn hash_error_text(h: &mut TraceHasher, error: &SettleError) {
    if let SettleError::Ambiguous(why) | SettleError::Failed(why) | SettleError::Invalid(why) =
        error
    {
        h.text(why);
    }
}

#[inline]
fn result_code(result: &Result<(), SettleError>) -> u64 {
    result.as_ref().err().map_or(0, error_code)
}

#[inline]
fn hash_outcome(h: &mut TraceHasher, outcome: &Outcome) {
    match outcome {
        Outcome::Ok => h.word(1),
        Outcome::Ack => h.word(2),
        Outcome::Error { kind, text } => {
            h.word(3);
            h.text(kind);
            h.text(text);
        }
        Outcome::Nack(text) => {
            h.word(4);
            h.text(text);
        }
        Outcome::Reject(text) => {
            h.word(5);
            h.text(text);
        }
    }
}

#[inline]
fn origin_code(origin: Origin) -> u64 {
    match origin {
        Origin::Own => 0,
        Origin::Handler(run) => pair(1, u64::from(run.0)),
        Origin::FollowUp(request) => pair(2, u64::from(request.0)),
    }
}

/// Whether an error's text was allocated (the engine's own errors name static texts).
#[inline(always)]
fn error_owns_heap(error: &SettleError) -> bool {
    match error {
        SettleError::Ambiguous(text) | SettleError::Failed(text) | SettleError::Invalid(text) => {
            matches!(text, std::borrow::Cow::Owned(_))
        }
        SettleError::StaleLease
        | SettleError::ReceiptMismatch
        | SettleError::BackendUnavailable => false,
    }
}

// The fields of the variants `Event::may_own_heap` calls plain own nothing to drop.
const _: () = assert!(
    !std::mem::needs_drop::<Lease>()
        && !std::mem::needs_drop::<SettleOp>()
        && !std::mem::needs_drop::<Outcome>()
        && !std::mem::needs_drop::<Option<ErrorAction>>()
        && !std::mem::needs_drop::<Origin>()
        && !std::mem::needs_drop::<Fault>()
        && !std::mem::needs_drop::<Option<(Seq, Seq)>>()
);

impl Event {
    /// Whether the event may hold data that needs dropping (a heap list, a text). The others
    /// are plain values: an emitter may forget them instead of running the enum's drop glue.
    #[inline(always)]
    pub fn may_own_heap(&self) -> bool {
        match self {
            Event::Fetched { outcome, .. } => {
                matches!(outcome, FetchOutcome::Failed(error) if error_owns_heap(error))
            }
            Event::Landed { answer, .. } => {
                matches!(answer, Err(error) if error_owns_heap(error))
            }
            Event::NotApplied { seen, .. } => error_owns_heap(seen),
            Event::Crashed { .. }
            | Event::BrokerRestarted { .. }
            | Event::DrainEnded { .. }
            | Event::Violated { .. } => true,
            Event::Published { .. }
            | Event::Issued { .. }
            | Event::Sent { .. }
            | Event::Replied { .. }
            | Event::HandlerStarted { .. }
            | Event::HandlerFinished { .. }
            | Event::HandlerKilled { .. }
            | Event::Expired { .. }
            | Event::Restarted { .. }
            | Event::Paused { .. }
            | Event::Lapsed { .. }
            | Event::DrainStarted => false,
        }
    }

    /// Feeds the event's compact binary encoding, at virtual time `at_ms`, to `h`: the time,
    /// a word with the event's tag and its small fields, then its other fields as 64-bit words
    /// (texts as their bytes). Backend-private data (lease ids, receipts) and presentation
    /// (names, dead-letter reasons read back for a recorder) are left out.
    #[inline(always)]
    pub fn hash_into(&self, at_ms: Ms, h: &mut TraceHasher) {
        h.word(at_ms);
        match self {
            Event::Published { seq } => h.word(head(PUBLISHED, u64::from(*seq))),
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            } => {
                let low = pair(
                    *worker as u64 * 2 + u64::from(*delivered),
                    u64::from(issuance.0),
                );
                h.word(head(ISSUED, low));
                h.word(u64::from(*incarnation));
                hash_lease(h, lease);
            }
            Event::Fetched {
                worker,
                group,
                outcome,
            } => {
                let low = pair(*worker as u64, *group as u64);
                match outcome {
                    FetchOutcome::Leased { count, reply_lost } => {
                        h.word(head(FETCHED, low));
                        h.word(u64::from(*count) * 2 + u64::from(*reply_lost));
                    }
                    FetchOutcome::Failed(error) => {
                        h.word(head(FETCHED, low) ^ (1 << 55));
                        h.word(error_code(error));
                        hash_error_text(h, error);
                    }
                }
            }
            Event::Sent { .. } => self.hash_sent(h),
            Event::Landed { .. } | Event::NotApplied { .. } | Event::Replied { .. } => {
                self.hash_landing(h)
            }
            _ => self.hash_other(h),
        }
    }

    /// A request's landing, and its reply.
    #[inline(always)]
    fn hash_landing(&self, h: &mut TraceHasher) {
        match self {
            Event::Landed {
                request,
                duplicate,
                answer,
                effect,
                renewed: _,
            } => {
                let codes = result_code(answer) << 4
                    ^ status_code(effect.status) << 1
                    ^ u64::from(*duplicate);
                h.word(head(LANDED, pair(codes, u64::from(request.0))));
                hash_error_text(h, answer.as_ref().err().unwrap_or(&SettleError::StaleLease));
                h.word(pair(
                    u64::from(effect.frontier_before),
                    u64::from(effect.frontier_after),
                ));
                if let Some(until) = effect.renewed_until_ms {
                    h.word(until);
                }
            }
            Event::NotApplied {
                request,
                reached,
                seen,
            } => {
                let codes = error_code(seen) * 2 + u64::from(*reached);
                h.word(head(NOT_APPLIED, pair(codes, u64::from(request.0))));
                hash_error_text(h, seen);
            }
            Event::Replied {
                request,
                discarded,
                follow_up,
            } => {
                let action = follow_up.map_or(0, |a| a as u64 + 1);
                let codes = action * 2 + u64::from(*discarded);
                h.word(head(REPLIED, pair(codes, u64::from(request.0))));
            }
            _ => unreachable!("hashed by hash_into"),
        }
    }

    /// The events that are rare, or small: one or two words each.
    #[inline(always)]
    fn hash_other(&self, h: &mut TraceHasher) {
        match self {
            Event::HandlerStarted {
                run,
                worker,
                issuance,
            } => {
                h.word(head(
                    HANDLER_STARTED,
                    pair(*worker as u64, u64::from(run.0)),
                ));
                h.word(u64::from(issuance.0));
            }
            Event::HandlerFinished { run, outcome } => {
                h.word(head(HANDLER_FINISHED, u64::from(run.0)));
                hash_outcome(h, outcome);
            }
            Event::HandlerKilled { run } => h.word(head(HANDLER_KILLED, u64::from(run.0))),
            Event::Expired {
                issuance,
                at_ms,
                dead_lettered,
                frontier,
                stale_timer: _,
            } => {
                let low = pair(u64::from(*dead_lettered), u64::from(issuance.0));
                h.word(head(EXPIRED, low));
                h.word(*at_ms);
                let (before, after) = frontier.unwrap_or((u32::MAX, u32::MAX));
                h.word(pair(u64::from(before), u64::from(after)));
            }
            Event::Crashed { worker, held } => {
                h.word(head(CRASHED, pair(*worker as u64, held.len() as u64)));
                for issuance in held {
                    h.word(u64::from(issuance.0));
                }
            }
            Event::Restarted { worker } => h.word(head(RESTARTED, *worker as u64)),
            Event::Paused { worker, until_ms } => {
                h.word(head(PAUSED, *worker as u64));
                h.word(*until_ms);
            }
            Event::BrokerRestarted { frontier } => {
                h.word(head(BROKER_RESTARTED, frontier.len() as u64));
                for &(group, before, after) in frontier {
                    h.word(group as u64);
                    h.word(pair(u64::from(before), u64::from(after)));
                }
            }
            Event::Lapsed { issuance } => h.word(head(LAPSED, u64::from(issuance.0))),
            Event::DrainStarted => h.word(head(DRAIN_STARTED, 0)),
            Event::DrainEnded {
                end,
                settled,
                frontier,
            } => {
                h.word(head(DRAIN_ENDED, u64::from(*settled)));
                h.word(match end {
                    DrainEnd::Settled => 0,
                    DrainEnd::Quiescent { at_ms } => (1 << 62) ^ at_ms,
                    DrainEnd::Bound(bound) => (2 << 62) ^ *bound as u64,
                });
                for &f in frontier {
                    h.word(u64::from(f));
                }
            }
            Event::Violated { violation } => {
                h.word(head(VIOLATED, violation.invariant as u64));
                h.word(violation.step);
            }
            _ => unreachable!("hashed by hash_into"),
        }
    }

    #[inline(always)]
    fn hash_sent(&self, h: &mut TraceHasher) {
        let Event::Sent {
            request,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            sent_ms,
            fault,
            delayed,
            nack_on_failure,
            origin,
            before_timer: _,
        } = self
        else {
            return;
        };
        let flags = (*fault as u64) << 2 | u64::from(*delayed) << 1 | u64::from(*nack_on_failure);
        let low = pair((*worker as u64) << 8 | flags, u64::from(request.0));
        h.word(head(SENT, low));
        h.word(pair(u64::from(*incarnation), u64::from(issuance.0)));
        hash_op(h, op);
        hash_lease(h, lease);
        h.word(*worker_clock_ms);
        if sent_ms != worker_clock_ms {
            h.word(*sent_ms);
        }
        if *origin != Origin::Own {
            h.word(origin_code(*origin));
        }
    }
}
