//! The structured trace of a run: what the engine did, line by line, as a recorder
//! ([`crate::recorder`]) builds it from the event stream; the text timeline
//! ([`crate::timeline`]) and the SVG ([`crate::svg`]) are rendered from it.
//!
//! A [`Line`] is one thing an actor did (a fetch, a settle, a handler run, a crash, an expiry…);
//! its consequences that happen later (the broker's answer, the reply the worker saw, the
//! runtime's follow-up) are recorded on the [`Request`] the line points to, so one line tells the
//! whole story of one action even when the network delays its parts.

use leasehold_model::{
    ErrorAction, GroupIx, Invariant, Issuance, Lease, LeaseId, Ms, Seq, SettleError, SettleOp,
    Status, Violation,
};
use serde::Serialize;

/// Index of a worker in the configuration.
pub type WorkerIx = usize;

/// Index of a settle (or renew) request in [`Trace::requests`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RequestId(pub u32);

/// A fault injected on one request (docs/sim.md, docs/scenarios.md). Chosen by the driver: a
/// scenario step's `fault`, or a seeded fault plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Fault {
    /// Delivered, applied, answered.
    #[default]
    None,
    /// Delivered and applied, but the reply is lost: the worker sees `Ambiguous`.
    LostReply,
    /// Never arrives: not applied; the worker times out and sees `Ambiguous`.
    Dropped,
    /// The broker fails fast: not applied; the worker sees `BackendUnavailable`.
    Unavailable,
    /// The backend reports a failure: not applied; the worker sees `Failed`.
    Failed,
}

impl Fault {
    /// The name used in scenario files (`lost_reply`, `dropped`, `unavailable`, `failed`).
    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::LostReply => "lost_reply",
            Fault::Dropped => "dropped",
            Fault::Unavailable => "unavailable",
            Fault::Failed => "failed",
        }
    }

    /// Every fault a scenario file may name.
    pub const NAMED: [Fault; 4] = [
        Fault::LostReply,
        Fault::Dropped,
        Fault::Unavailable,
        Fault::Failed,
    ];

    /// Parses a scenario file's fault name.
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::NAMED.into_iter().find(|f| f.name() == name)
    }
}

/// How one lease's life ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum LeaseEnd {
    /// The broker expired it.
    Expired {
        /// Whether the expiry dead-lettered the event (attempts exhausted).
        dead_lettered: bool,
    },
    /// The broker accepted a settle of it.
    Settled {
        /// `ack`, `nack` or `reject`.
        op: &'static str,
    },
}

/// Everything the engine knows of one issued lease, indexed by its [`Issuance`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeaseInfo {
    /// Its name in the timeline (a scenario's `bind`, or `L<n>`).
    pub name: String,
    /// The oracle's name for it.
    pub issuance: Issuance,
    /// The holder's copy (updated by an accepted renew's reply).
    pub lease: Lease,
    /// The worker that fetched it.
    pub holder: WorkerIx,
    /// The holder's incarnation when it fetched (a crash starts a new incarnation).
    pub holder_incarnation: u32,
    /// Whether the holder learned of it (false when the fetch reply was lost).
    pub delivered: bool,
    /// When it was issued.
    pub fetched_ms: Ms,
    /// When and how it ended, if it did.
    pub ended: Option<(Ms, LeaseEnd)>,
    /// An earlier lease of the same record that the broker gave the same id (a broker that
    /// issues an id twice): the timeline shows the id, which renaming would hide.
    #[serde(skip)]
    pub id_of: Option<Issuance>,
    /// The lines that tell its life: what a violation names as its cause points there.
    #[serde(skip)]
    pub lines: LeaseLines,
}

/// The lines (indices in [`Trace::lines`]) that tell a lease's life, as far as it went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseLines {
    /// The fetch that issued it.
    pub issued: Option<usize>,
    /// Its latest accepted renew.
    pub renewed: Option<usize>,
    /// Its expiry (or its lapse, told before a lazy broker expires it).
    pub expired: Option<usize>,
    /// Its first accepted settle.
    pub settled: Option<usize>,
    /// The broker restart before it, when it took an id the broker had issued before.
    pub restart: Option<usize>,
}

impl LeaseLines {
    /// The earliest line it names.
    pub fn first(&self) -> Option<usize> {
        [
            self.issued,
            self.renewed,
            self.expired,
            self.settled,
            self.restart,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// A timer that outlived its lease and expired a later lease of the record (`stale-timer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StaleTimer {
    /// The broker's id of the lease it was armed for.
    pub lease_id: LeaseId,
    /// That lease, when the recorder knows it: a recent lease of the record with that id.
    pub issuance: Option<Issuance>,
}

/// What an accepted settle did to the broker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// The group's frontier before and after, when it moved.
    pub frontier: Option<(Seq, Seq)>,
    /// The group's frontier afterwards.
    pub frontier_after: Seq,
    /// The record's status afterwards.
    pub status: Option<Status>,
    /// The dead-letter reason, when the record is dead-lettered afterwards.
    pub reason: Option<String>,
    /// The new deadline, for an accepted renew.
    pub renewed_until_ms: Option<Ms>,
}

/// One settle or renew request, from sending to the worker's reaction to its reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Request {
    /// Its id.
    pub id: RequestId,
    /// The sending worker.
    pub worker: WorkerIx,
    /// The sender's incarnation (a reply to an older incarnation is discarded).
    pub incarnation: u32,
    /// The lease it names.
    pub issuance: Issuance,
    /// What it asks.
    pub op: SettleOp,
    /// The lease as sent (the holder's copy, possibly with a forged receipt).
    pub lease: Lease,
    /// The worker's clock when sending (offset applied).
    pub worker_clock_ms: Ms,
    /// When it was sent.
    pub sent_ms: Ms,
    /// The injected fault.
    pub fault: Fault,
    /// Sent before its sender crashed and delivered after (an in-flight message that survived
    /// the crash).
    pub delayed: bool,
    /// Whether the runtime may nack after this request fails (false for the runtime's own nack:
    /// it nacks once).
    pub nack_on_failure: bool,
    /// When it reached the broker (None: not yet, or dropped).
    pub delivered_ms: Option<Ms>,
    /// The broker's true answer (None when it was not applied: dropped, unavailable, failed).
    pub answer: Option<Result<(), SettleError>>,
    /// What the accepted request did.
    pub effect: Effect,
    /// Answers to duplicated deliveries of the same request.
    pub duplicate_answers: Vec<Result<(), SettleError>>,
    /// What each accepted duplicate did (the default effect for a refused one).
    pub duplicate_effects: Vec<Effect>,
    /// What the worker saw (None: no reply yet).
    pub seen: Option<Result<(), SettleError>>,
    /// The reply reached a worker that had crashed since sending: nobody acted on it.
    pub reply_discarded: bool,
    /// The runtime's reaction to a failed request.
    pub follow_up: Option<ErrorAction>,
    /// The runtime's nack after a failure, when it sent one.
    pub follow_up_request: Option<RequestId>,
    /// Index in [`Trace::lines`] of the line it was sent on.
    pub line: usize,
    /// Index in [`Trace::lines`] of the line its (first) landing is told on: the send line
    /// when nothing happened in between, else a [`LineKind::Landing`] line of its own.
    pub landed_line: Option<usize>,
}

impl Request {
    /// The result this request stands for in a scenario's `expect`: what the worker saw, or
    /// the broker's answer when the worker never saw a reply (its sender crashed).
    pub fn result(&self) -> Option<Result<(), SettleError>> {
        match (&self.seen, self.reply_discarded, &self.answer) {
            (_, true, Some(answer)) => Some(answer.clone()),
            (Some(seen), _, _) => Some(seen.clone()),
            (None, _, answer) => answer.clone(),
        }
    }
}

/// How a fetch went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum FetchResult {
    /// Leases issued (possibly none), and whether the reply reached the worker.
    Leased {
        /// The issued leases.
        leases: Vec<Issuance>,
        /// False when the reply was lost: the leases exist but nobody holds them.
        reply_lost: bool,
    },
    /// The fetch failed; nothing was issued.
    Failed(SettleError),
}

/// A piece of a line, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Part {
    /// A settle or renew request sent as part of this line.
    Request(RequestId),
    /// The handler finished with this outcome.
    HandlerFinished {
        /// `returns`, `raises RuntimeError (boom)`, `raises NackMessage` …
        outcome: String,
        /// Whether the outcome counts as success.
        success: bool,
    },
    /// The handler never finished: its worker crashed first.
    HandlerKilled,
    /// A request reached the broker (or was lost on the way, or refused while the broker was
    /// unavailable) at this line's moment; its answer and effect are told here.
    Landed {
        /// The request.
        request: RequestId,
        /// `None` for its first delivery; `Some(k)` for its `k`-th duplicate
        /// ([`Request::duplicate_answers`]).
        duplicate: Option<u32>,
    },
}

/// What a line is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum LineKind {
    /// An event was published.
    Published {
        /// Its sequence number.
        seq: Seq,
    },
    /// A worker fetched.
    Fetched {
        /// The group.
        group: GroupIx,
        /// What it got.
        result: FetchResult,
    },
    /// A worker sent a settle or renew on its own (not from a handler run).
    Settle,
    /// A worker ran its handler on a lease under the consumer runtime.
    Handle {
        /// The lease.
        issuance: Issuance,
    },
    /// A request sent on an earlier line lands at the broker (its [`Part::Landed`] parts):
    /// the line of a delayed, reordered, duplicated, dropped or refused request, told at the
    /// moment it lands. The line's worker is the sender.
    Landing,
    /// A handler run started on an earlier line goes on here (it finishes, or sends a
    /// settle) after other lines happened in between.
    HandlerResumed {
        /// The lease.
        issuance: Issuance,
    },
    /// A worker crashed.
    Crashed {
        /// The leases it held unsettled.
        held: Vec<Issuance>,
    },
    /// A worker restarted. Not a line of its own in the text timeline: it folds into that
    /// worker's next line as "(restarted)".
    Restarted,
    /// A worker stalled.
    Paused {
        /// Until when.
        until_ms: Ms,
    },
    /// The broker restarted.
    BrokerRestarted {
        /// Per group whose frontier moved: (group, before, after).
        frontier: Vec<(GroupIx, Seq, Seq)>,
    },
    /// The broker expired a lease.
    Expired {
        /// The lease.
        issuance: Issuance,
        /// Whether the expiry dead-lettered the event.
        dead_lettered: bool,
        /// The group's frontier before and after, when it moved.
        frontier: Option<(Seq, Seq)>,
        /// The timer that fired, when it was armed for another lease.
        timer: Option<StaleTimer>,
    },
    /// A lease's deadline passed; the broker expires it at its next fetch.
    Lapsed {
        /// The lease.
        issuance: Issuance,
    },
    /// Faults heal and the workers drain the queue (liveness phase).
    DrainStarted,
    /// The liveness phase ended.
    DrainEnded {
        /// Every event of every group settled.
        settled: bool,
        /// What ended it.
        why: String,
        /// The frontier of each group.
        frontier: Vec<Seq>,
    },
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Line {
    /// Virtual time at which it started.
    pub at_ms: Ms,
    /// The acting worker, if any.
    pub worker: Option<WorkerIx>,
    /// The driver's step index (a scenario step) when the line was recorded.
    pub step: Option<usize>,
    /// What it is about.
    pub kind: LineKind,
    /// What happened as part of it, in order.
    pub parts: Vec<Part>,
}

/// An invariant violation, where it was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The oracle's report.
    pub violation: Violation,
    /// Index in [`Trace::lines`] of the last line recorded before the check that found it.
    pub line: Option<usize>,
    /// The driver's step index at that moment.
    pub step: Option<usize>,
    /// The oracle's detail as the timeline words it: events as `E7` (`E7 of orders` when there
    /// are several groups), leases by their timeline names ([`leasehold_model::Detail::named`]),
    /// and the lines of what it names as causes.
    pub told: Told,
}

/// A violation's detail as a timeline words it: its text, and the lines of the causes it
/// names (`L1 expired at t3`), which get their `tN` once the timeline is rendered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Told {
    /// The words, and after each piece the cause it names, if any.
    pieces: Vec<(String, Option<Cause>)>,
}

/// Where a cause a violation names was told: the trace line, when the recorder knows it, and
/// its virtual time (what the text says when no line tells it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The index in [`Trace::lines`] of the line that tells it.
    pub line: Option<usize>,
    /// When it happened.
    pub at_ms: Ms,
}

impl Told {
    /// Appends words.
    pub fn push_text(&mut self, text: &str) {
        match self.pieces.last_mut() {
            Some((last, None)) => last.push_str(text),
            _ => self.pieces.push((text.to_string(), None)),
        }
    }

    /// Appends a cause: `t3` once its line has a `tN`, else its time (`30000 ms`).
    pub fn push_cause(&mut self, cause: Cause) {
        match self.pieces.last_mut() {
            Some((_, slot @ None)) => *slot = Some(cause),
            _ => self.pieces.push((String::new(), Some(cause))),
        }
    }

    /// The causes it names, in order.
    pub fn causes(&self) -> impl Iterator<Item = Cause> + '_ {
        self.pieces.iter().filter_map(|(_, cause)| *cause)
    }

    /// The text, each cause named by `t_of(line)`'s `tN` (by its time where there is none).
    pub fn text(&self, t_of: impl Fn(usize) -> Option<usize>) -> String {
        let mut out = String::new();
        for (text, cause) in &self.pieces {
            out.push_str(text);
            if let Some(cause) = cause {
                match cause.line.and_then(&t_of) {
                    Some(t) => out.push_str(&format!("t{t}")),
                    None => out.push_str(&format!("{} ms", cause.at_ms)),
                }
            }
        }
        out
    }
}

/// The text with every cause named by its time.
impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text(|_| None))
    }
}

/// Serialized as its text, each cause named by its time.
impl Serialize for Told {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Found {
    /// The invariant.
    pub fn invariant(&self) -> Invariant {
        self.violation.invariant
    }
}

/// The entries of a sequence numbered from 0 that are still kept: those from
/// [`Window::start`] on. Indexed by their number, whatever was dropped before.
///
/// A whole trace keeps every entry (its start stays 0). A streamed one
/// ([`crate::recorder::Recorder::streaming`]) drops the entries nothing will read again, so its
/// memory follows what is still open, not the length of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window<T> {
    start: usize,
    items: std::collections::VecDeque<T>,
}

impl<T> Default for Window<T> {
    fn default() -> Window<T> {
        Window {
            start: 0,
            items: std::collections::VecDeque::new(),
        }
    }
}

impl<T> Window<T> {
    /// The number of the first entry kept.
    pub fn start(&self) -> usize {
        self.start
    }

    /// How many entries there ever were: the number the next one gets.
    pub fn len(&self) -> usize {
        self.start + self.items.len()
    }

    /// Whether there never was an entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many entries are kept.
    pub fn kept(&self) -> usize {
        self.items.len()
    }

    /// Appends an entry; returns its number.
    pub fn push(&mut self, item: T) -> usize {
        self.items.push_back(item);
        self.len() - 1
    }

    /// Entry `i`, unless it was dropped or does not exist yet.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i.checked_sub(self.start)?)
    }

    /// Entry `i`, to change it, unless it was dropped or does not exist yet.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.items.get_mut(i.checked_sub(self.start)?)
    }

    /// The last entry, if it is kept.
    pub fn last(&self) -> Option<&T> {
        self.items.back()
    }

    /// The kept entries, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.items.iter()
    }

    /// The kept entries numbered in `range`, in order (the part of it that is kept).
    pub fn range(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        let from = range.start.clamp(self.start, self.len()) - self.start;
        let to = range.end.clamp(self.start, self.len()) - self.start;
        self.items.range(from..to.max(from))
    }

    /// Drops the entries numbered below `end` (those kept).
    pub fn drop_below(&mut self, end: usize) {
        let n = end.saturating_sub(self.start).min(self.items.len());
        self.items.drain(..n);
        self.start += n;
    }
}

impl<T> std::ops::Index<usize> for Window<T> {
    type Output = T;

    /// # Panics
    /// When entry `i` was dropped or does not exist.
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(item) => item,
            None => panic!(
                "entry {i} is not kept (kept: {}..{})",
                self.start,
                self.len()
            ),
        }
    }
}

impl<T> std::ops::IndexMut<usize> for Window<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        let (start, len) = (self.start, self.len());
        match self.get_mut(i) {
            Some(item) => item,
            None => panic!("entry {i} is not kept (kept: {start}..{len})"),
        }
    }
}

impl<'a, T> IntoIterator for &'a Window<T> {
    type Item = &'a T;
    type IntoIter = std::collections::vec_deque::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T> FromIterator<T> for Window<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Window<T> {
        Window {
            start: 0,
            items: iter.into_iter().collect(),
        }
    }
}

impl<T: Serialize> Serialize for Window<T> {
    /// The kept entries, as a sequence.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.items.iter())
    }
}

/// The whole trace of a run (or, streamed, what of it is still open).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// Worker names.
    pub workers: Vec<String>,
    /// Group names.
    pub groups: Vec<String>,
    /// Every issued lease, by issuance.
    pub leases: Window<LeaseInfo>,
    /// Every settle or renew request, by id.
    pub requests: Window<Request>,
    /// The lines, in the order they started.
    pub lines: Window<Line>,
    /// Violations found, in the order found.
    pub violations: Vec<Found>,
    /// Virtual time at the end of the run.
    pub end_ms: Ms,
}

impl Trace {
    /// The lease recorded for `issuance`.
    pub fn lease(&self, issuance: Issuance) -> &LeaseInfo {
        &self.leases[issuance.0 as usize]
    }

    /// The request `id`.
    pub fn request(&self, id: RequestId) -> &Request {
        &self.requests[id.0 as usize]
    }
}

/// FNV-1a, 64 bits: a stable hash of bytes (no std hasher, whose output may change between Rust
/// releases). Names the seeds' generator streams and mixes each seed into a campaign hash.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_extend(FNV1A64_OFFSET, bytes)
}

/// FNV-1a 64's initial state: `fnv1a64_extend(FNV1A64_OFFSET, b)` is `fnv1a64(b)`.
pub const FNV1A64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a 64 hash over `bytes`: hashing a text piece by piece gives the hash of
/// the whole text.
pub fn fnv1a64_extend(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
