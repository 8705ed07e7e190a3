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
    ErrorAction, GroupIx, Invariant, Issuance, Lease, Ms, Outcome, Reason, Seq, SettleError,
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
        /// When it expired (its deadline, or now when that is earlier).
        at_ms: Ms,
        /// Whether the expiry dead-lettered the event.
        dead_lettered: bool,
        /// The group's frontier before and after, when it moved.
        frontier: Option<(Seq, Seq)>,
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

// Tags of the binary encoding: stable numbers, never reused.
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

/// Two small numbers in one word.
fn pair(high: u64, low: u64) -> u64 {
    (high << 32) ^ low
}

fn invariant_code(invariant: Invariant) -> u64 {
    invariant as u64 + 1
}

fn status_code(status: Option<Status>) -> u64 {
    status.map_or(0, |s| s as u64 + 1)
}

fn fault_code(fault: Fault) -> u64 {
    fault as u64
}

fn hash_lease(h: &mut TraceHasher, lease: &Lease) {
    // The broker's lease id and receipt are its private tokens: two backends that behave alike
    // may number them differently.
    h.word(pair(lease.group as u64, u64::from(lease.seq)));
    h.word(u64::from(lease.attempt));
    h.word(lease.deadline_ms);
}

fn hash_op(h: &mut TraceHasher, op: &SettleOp) {
    match *op {
        SettleOp::Ack => h.word(1),
        SettleOp::Nack { delay_ms, reason } => {
            h.word(2);
            h.word(delay_ms);
            h.text(reason.map_or("", Reason::as_str));
        }
        SettleOp::Reject { reason } => {
            h.word(3);
            h.text(&reason);
        }
        SettleOp::Renew { extend_ms } => {
            h.word(4);
            h.word(extend_ms);
        }
    }
}

fn hash_error(h: &mut TraceHasher, error: &SettleError) {
    let code = match error {
        SettleError::StaleLease => 1,
        SettleError::ReceiptMismatch => 2,
        SettleError::BackendUnavailable => 3,
        SettleError::Ambiguous(_) => 4,
        SettleError::Failed(_) => 5,
        SettleError::Invalid(_) => 6,
    };
    h.word(code);
    if let SettleError::Ambiguous(why) | SettleError::Failed(why) | SettleError::Invalid(why) =
        error
    {
        h.text(why);
    }
}

fn hash_result(h: &mut TraceHasher, result: &Result<(), SettleError>) {
    match result {
        Ok(()) => h.word(0),
        Err(error) => hash_error(h, error),
    }
}

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

fn origin_code(origin: Origin) -> u64 {
    match origin {
        Origin::Own => 0,
        Origin::Handler(run) => pair(1, u64::from(run.0)),
        Origin::FollowUp(request) => pair(2, u64::from(request.0)),
    }
}

impl Event {
    /// Feeds the event's compact binary encoding, at virtual time `at_ms`, to `h`: a tag, then
    /// its fields as 64-bit words (texts as their bytes). Backend-private data (lease ids,
    /// receipts) and presentation (names, dead-letter reasons read back for a recorder) are
    /// left out.
    pub fn hash_into(&self, at_ms: Ms, h: &mut TraceHasher) {
        h.word(at_ms);
        match self {
            Event::Published { seq } => {
                h.word(PUBLISHED);
                h.word(u64::from(*seq));
            }
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            } => {
                h.word(ISSUED);
                h.word(pair(*worker as u64, u64::from(*incarnation)));
                h.word(pair(u64::from(issuance.0), u64::from(*delivered)));
                hash_lease(h, lease);
            }
            Event::Fetched {
                worker,
                group,
                outcome,
            } => {
                h.word(FETCHED);
                h.word(pair(*worker as u64, *group as u64));
                match outcome {
                    FetchOutcome::Leased { count, reply_lost } => {
                        h.word(pair(u64::from(*count), u64::from(*reply_lost)));
                    }
                    FetchOutcome::Failed(error) => {
                        h.word(u64::MAX);
                        hash_error(h, error);
                    }
                }
            }
            Event::Sent { .. } => self.hash_sent(h),
            Event::Landed {
                request,
                duplicate,
                answer,
                effect,
                renewed: _,
            } => {
                h.word(LANDED);
                h.word(pair(u64::from(request.0), u64::from(*duplicate)));
                hash_result(h, answer);
                h.word(pair(
                    u64::from(effect.frontier_before),
                    u64::from(effect.frontier_after),
                ));
                h.word(status_code(effect.status));
                h.word(effect.renewed_until_ms.map_or(u64::MAX, |ms| ms));
            }
            Event::NotApplied {
                request,
                reached,
                seen,
            } => {
                h.word(NOT_APPLIED);
                h.word(pair(u64::from(request.0), u64::from(*reached)));
                hash_error(h, seen);
            }
            Event::Replied {
                request,
                discarded,
                follow_up,
            } => {
                h.word(REPLIED);
                let action = follow_up.map_or(0, |a| a as u64 + 1);
                h.word(pair(u64::from(request.0), u64::from(*discarded)));
                h.word(action);
            }
            Event::HandlerStarted {
                run,
                worker,
                issuance,
            } => {
                h.word(HANDLER_STARTED);
                h.word(pair(u64::from(run.0), *worker as u64));
                h.word(u64::from(issuance.0));
            }
            Event::HandlerFinished { run, outcome } => {
                h.word(HANDLER_FINISHED);
                h.word(u64::from(run.0));
                hash_outcome(h, outcome);
            }
            Event::HandlerKilled { run } => {
                h.word(HANDLER_KILLED);
                h.word(u64::from(run.0));
            }
            Event::Expired {
                issuance,
                at_ms,
                dead_lettered,
                frontier,
            } => {
                h.word(EXPIRED);
                h.word(pair(u64::from(issuance.0), u64::from(*dead_lettered)));
                h.word(*at_ms);
                let (before, after) = frontier.unwrap_or((u32::MAX, u32::MAX));
                h.word(pair(u64::from(before), u64::from(after)));
            }
            Event::Crashed { worker, held } => {
                h.word(CRASHED);
                h.word(pair(*worker as u64, held.len() as u64));
                for issuance in held {
                    h.word(u64::from(issuance.0));
                }
            }
            Event::Restarted { worker } => {
                h.word(RESTARTED);
                h.word(*worker as u64);
            }
            Event::Paused { worker, until_ms } => {
                h.word(PAUSED);
                h.word(*worker as u64);
                h.word(*until_ms);
            }
            Event::BrokerRestarted { frontier } => {
                h.word(BROKER_RESTARTED);
                h.word(frontier.len() as u64);
                for &(group, before, after) in frontier {
                    h.word(group as u64);
                    h.word(pair(u64::from(before), u64::from(after)));
                }
            }
            Event::DrainStarted => h.word(DRAIN_STARTED),
            Event::DrainEnded {
                end,
                settled,
                frontier,
            } => {
                h.word(DRAIN_ENDED);
                let code = match end {
                    DrainEnd::Settled => 0,
                    DrainEnd::Quiescent { at_ms } => pair(1, *at_ms),
                    DrainEnd::Bound(bound) => pair(2, *bound as u64),
                };
                h.word(code);
                h.word(u64::from(*settled));
                for &f in frontier {
                    h.word(u64::from(f));
                }
            }
            Event::Violated { violation } => {
                h.word(VIOLATED);
                h.word(invariant_code(violation.invariant));
                h.word(violation.step);
            }
        }
    }

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
        } = self
        else {
            return;
        };
        h.word(SENT);
        h.word(pair(u64::from(request.0), u64::from(issuance.0)));
        h.word(pair(*worker as u64, u64::from(*incarnation)));
        hash_op(h, op);
        hash_lease(h, lease);
        h.word(*worker_clock_ms);
        h.word(*sent_ms);
        let flags =
            fault_code(*fault) | u64::from(*delayed) << 8 | u64::from(*nack_on_failure) << 9;
        h.word(flags);
        h.word(origin_code(*origin));
    }
}
