//! The oracle: ghost bookkeeping, independent of the broker's own, that checks I1–I7.
//!
//! An engine (the model checker, the simulator, the scenario executor) reports what happened —
//! leases issued, settles accepted or refused, expiries, handler runs — and, at the end of each
//! step, lets the oracle read the broker through [`BrokerView`]. The oracle identifies a lease by
//! its *issuance* (which fetch handed it out), never by the broker's lease id, so a broker that
//! reuses or confuses ids is caught; it counts deliveries itself.
//!
//! # Live state only
//! The oracle keeps what a future check can read: per record its delivery count and settled
//! state, the leases that are still live (unexpired and unsettled), the last frontier seen.
//! A lease that ends is forgotten: a request that names it later is stale by construction.
//! So its memory follows the live set, not the run's length, and two runs that no future step
//! can tell apart leave equal oracles (what the model checker needs to merge states).
//!
//! # A step costs what it touched
//! Each report names the record it concerns; [`Oracle::end_step`] compares only those records
//! with the broker, and reads each group's frontier (O(1) per group). A step that can change
//! records it does not name — a broker restart ([`Oracle::restarted`]) — makes the next
//! `end_step` a full audit ([`Oracle::audit`]), which reads every record. Engines run a full
//! audit at the end of each phase; tests run one after every step
//! ([`OracleConfig::audit_every_step`]) to check the incremental checks against it.
//!
//! # Lean and full bookkeeping
//! With [`OracleConfig::lean`] the oracle keeps only *which* invariants broke (a bit each):
//! the model checker's states then carry no text and no counters, and it rebuilds a violation's
//! detail by replaying its counterexample with a full oracle. Without it the oracle also keeps
//! each first violation's step and detail, and counts handler runs and duplicates.
//!
//! # What a violation names as its cause
//! Full bookkeeping also keeps a note per lease that is live or that something may still
//! name: when it was issued, renewed and ended, and how (its deadline passed, a settle was
//! accepted, a later lease superseded it), with the broker's id for it. A violation then says
//! what it knows — `ack of L1 accepted on event 1 of group 0, but L1 expired at 30000 ms` —
//! as data ([`Part::At`]) that a timeline words as the line that tells it (`at t3`). A note
//! goes when its lease has ended and the engine said nothing names it any more
//! ([`Oracle::forget`]); an engine that never says so keeps a note per lease issued (a short
//! run's).

use crate::broker::BrokerView;
use crate::detail;
/// The oracle's name for one lease (defined beside the violation details that name it).
pub use crate::detail::Issuance;
use crate::detail::{Detail, Happened, Moment, Part};
use crate::inline::InlineVec;
use crate::invariant::Invariant;
use crate::types::{GroupIx, Lease, LeaseId, Ms, Reason, Seq, SettleOp, Status};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};

/// What the oracle needs to know of the configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OracleConfig {
    /// Number of consumer groups.
    pub group_count: usize,
    /// The configured bound on deliveries.
    pub max_attempts: u32,
    /// Whether I7 is checked: true when every ack comes from the consumer runtime after a
    /// handler run under an at-least-once policy (`nack_on_error`, `manual`).
    pub check_at_least_once: bool,
    /// Keep only which invariants broke: no step, no detail text, no handler-run counts.
    pub lean: bool,
    /// Audit every record after every step instead of the records the step touched (tests).
    pub audit_every_step: bool,
    /// Compare every record with the broker after every step, as the records a step touched
    /// are compared (the model checker's small queues): a record a step changed without naming
    /// it is caught at that step.
    pub compare_every_record: bool,
}

impl OracleConfig {
    /// A full-bookkeeping configuration that audits incrementally.
    pub fn new(group_count: usize, max_attempts: u32, check_at_least_once: bool) -> OracleConfig {
        OracleConfig {
            group_count,
            max_attempts,
            check_at_least_once,
            lean: false,
            audit_every_step: false,
            compare_every_record: false,
        }
    }
}

/// One broken invariant: which, at which step, and what the oracle saw.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// The invariant.
    pub invariant: Invariant,
    /// The engine's step index (counted by [`Oracle::end_step`]) at which it broke.
    pub step: u64,
    /// What happened, in one line: [`Detail`]'s display is the oracle's wording, and
    /// [`Detail::named`] names events, leases and frontiers as a timeline does.
    pub detail: Detail,
}

impl Violation {
    /// As its display, with its detail worded as a timeline words it ([`Detail::named`]).
    pub fn named<'a>(
        &self,
        groups: &[String],
        lease: impl Fn(Issuance) -> Option<&'a str>,
    ) -> String {
        format!(
            "{} violated at step {}: {}",
            self.invariant,
            self.step,
            self.detail.named(groups, lease)
        )
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} violated at step {}: {}",
            self.invariant, self.step, self.detail
        )
    }
}

/// A lease the oracle considers live: issued, not expired by its contract, not settled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GhostLease {
    issuance: Issuance,
    group: u32,
    seq: Seq,
    /// Contract deadline: issuance time + lease duration, moved by accepted renews.
    deadline_ms: Ms,
    /// No later issuance exists for its record (false only once I2 is broken).
    current: bool,
}

/// How the oracle knows a record ended (reachable for the crate's tests in `tests/it`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Final {
    /// Acked.
    Acked,
    /// Dead-lettered, with its reason.
    DeadLettered(Reason),
}

impl fmt::Display for Final {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Final::Acked => f.write_str("acked"),
            Final::DeadLettered(reason) => write!(f, "dead-lettered ({reason})"),
        }
    }
}

/// [`GhostRecord::settled`] of a record not known as settled.
#[doc(hidden)]
pub const OPEN: u32 = 0;
/// [`GhostRecord::settled`] of a record known as acked.
const ACKED: u32 = 1;
/// [`GhostRecord::settled`] of a record known as dead-lettered because its attempts ran out
/// ([`Reason::MAX_ATTEMPTS`]); a code above it is dead-lettered with the reason
/// `kept[settled - DEAD - 1]` of its group.
const DEAD: u32 = 2;

/// Bit of [`GhostRecord::bits`]: a handler completed successfully under a lease that was
/// current when it started (kept when I7 is checked, and with full bookkeeping).
#[doc(hidden)]
pub const PROCESSED: u32 = 1 << 30;
/// Bit of [`GhostRecord::bits`]: a handler run started for it (kept only with full
/// bookkeeping, to count duplicates).
#[doc(hidden)]
pub const RAN: u32 = 1 << 31;
/// The bits of [`GhostRecord::bits`] that hold the settled code.
const SETTLED: u32 = PROCESSED - 1;

/// Eight bytes: a simulated broker has millions of records, each with its ghost (reachable
/// for the crate's tests in `tests/it`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GhostRecord {
    /// Deliveries counted by the oracle.
    pub deliveries: u32,
    /// The settled code (the low 30 bits, see [`GhostRecord::settled`]), [`PROCESSED`] and
    /// [`RAN`].
    pub bits: u32,
}

impl GhostRecord {
    /// Settled state, once known: [`OPEN`], [`ACKED`], [`DEAD`], or above it the index (plus
    /// `DEAD + 1`) of the kept reason in the group's list (see [`GhostGroup::settled`]).
    #[inline(always)]
    pub fn settled(&self) -> u32 {
        self.bits & SETTLED
    }

    /// Whether [`PROCESSED`] is set.
    #[inline]
    pub fn processed(&self) -> bool {
        self.bits & PROCESSED != 0
    }

    /// Whether [`RAN`] is set.
    #[inline]
    pub fn ran(&self) -> bool {
        self.bits & RAN != 0
    }

    /// Deliveries, processed, ran and the settled code (reasons merged) in one word: what
    /// the group's hash and its ordering key read of the record.
    #[inline]
    fn packed(&self) -> u64 {
        u64::from(self.deliveries)
            | u64::from(self.processed()) << 32
            | u64::from(self.ran()) << 33
            | u64::from(self.settled().min(DEAD)) << 34
    }
}

/// How many of a group's most recently kept reasons [`GhostGroup::code`] looks through for the
/// reason it is given: a constant bound per dead letter, however many reasons a run makes up.
const KEPT_REUSE_WINDOW: usize = 8;

/// A dead-letter reason a group keeps (`Default` for [`InlineVec`]: the empty text).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept(Reason);

impl Default for Kept {
    fn default() -> Kept {
        Kept(Reason::EMPTY)
    }
}

/// A group's ghosts: its records, the reasons they were dead-lettered with, its frontier
/// (reachable for the crate's tests in `tests/it`).
#[doc(hidden)]
#[derive(Debug)]
pub struct GhostGroup {
    /// `records[seq - 1]`.
    pub records: InlineVec<GhostRecord, 4>,
    /// The reasons of the group's dead-lettered records but "max attempts", in the order
    /// kept; a record names its reason by index. A reason among the last few kept is named
    /// again rather than kept twice, so a handful of reasons stay a handful of entries (a
    /// text per record, say one that names its event, is kept per record: never searched).
    pub kept: InlineVec<Kept, 2>,
    /// Last observed frontier.
    pub frontier: Seq,
    /// Length of the ghost-settled prefix.
    pub settled_prefix: Seq,
}

/// Copies the record list as a block (see [`InlineVec`]): the model checker clones an oracle
/// per transition.
impl Clone for GhostGroup {
    #[inline]
    fn clone(&self) -> GhostGroup {
        GhostGroup {
            records: self.records.clone(),
            kept: self.kept.clone(),
            frontier: self.frontier,
            settled_prefix: self.settled_prefix,
        }
    }

    #[inline]
    fn clone_from(&mut self, source: &GhostGroup) {
        self.records.clone_from(&source.records);
        if self.kept.len() + source.kept.len() > 0 {
            self.kept.clone_from(&source.kept);
        }
        self.frontier = source.frontier;
        self.settled_prefix = source.settled_prefix;
    }
}

impl GhostGroup {
    /// How the oracle knows `record` (one of this group's) ended, if it does.
    #[inline]
    pub fn settled(&self, record: &GhostRecord) -> Option<Final> {
        match record.settled() {
            OPEN => None,
            ACKED => Some(Final::Acked),
            code => Some(Final::DeadLettered(self.reason(code))),
        }
    }

    /// The reason of a dead-lettered record's settled `code` (at least [`DEAD`]).
    #[inline]
    fn reason(&self, code: u32) -> Reason {
        if code == DEAD {
            Reason::MAX_ATTEMPTS
        } else {
            self.kept[(code - DEAD - 1) as usize].0
        }
    }

    /// The [`GhostRecord::settled`] code of `settled`, keeping its reason.
    #[inline]
    pub fn code(&mut self, settled: Final) -> u32 {
        let Final::DeadLettered(reason) = settled else {
            return ACKED;
        };
        if reason == Reason::MAX_ATTEMPTS {
            return DEAD;
        }
        let recent = self.kept.len().saturating_sub(KEPT_REUSE_WINDOW);
        let index = match self.kept[recent..]
            .iter()
            .rposition(|kept| kept.0 == reason)
        {
            Some(offset) => recent + offset,
            None => {
                self.kept.push(Kept(reason));
                self.kept.len() - 1
            }
        };
        // At most one entry per record of the group: a group of 2^30 records would hold 8 GB
        // of ghosts alone.
        u32::try_from(index)
            .ok()
            .and_then(|index| index.checked_add(DEAD + 1))
            .filter(|&code| code <= SETTLED)
            .expect("fewer than 2^30 dead-lettered records in a group")
    }
}

/// Equal when every record reads the same, reasons by text: two groups that kept their
/// reasons in different orders are equal (the model checker's states are what a
/// continuation can observe).
impl PartialEq for GhostGroup {
    fn eq(&self, other: &GhostGroup) -> bool {
        if self.frontier != other.frontier
            || self.settled_prefix != other.settled_prefix
            || self.records.len() != other.records.len()
        {
            return false;
        }
        if self.kept == other.kept {
            return self.records == other.records;
        }
        self.records.iter().zip(other.records.iter()).all(|(a, b)| {
            (a.deliveries, a.bits & !SETTLED) == (b.deliveries, b.bits & !SETTLED)
                && self.settled(a) == other.settled(b)
        })
    }
}

impl Eq for GhostGroup {}

/// What full bookkeeping keeps besides the checks' state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Log {
    step: u64,
    /// The first violation of each invariant, in the order found.
    violations: Vec<Violation>,
    /// Handler runs beyond the first per record.
    duplicate_runs: u64,
    /// A note per lease that is live or that something may still name, in issuance order,
    /// and the notes of leases that ended and that nothing names any more, which go when they
    /// reach the front or when they are half of the notes (one pass then: no removal from the
    /// middle per lease).
    notes: VecDeque<Note>,
    /// How many notes are such dead ones.
    dead: usize,
    /// When the broker last restarted.
    restarted_ms: Option<Ms>,
}

impl Log {
    /// Where the note of `issuance` is. The notes are one per issuance from the first, but
    /// where dead ones were dropped from the middle: found at its place when none was, by a
    /// search otherwise.
    #[inline]
    fn position(&self, issuance: Issuance) -> Option<usize> {
        let first = self.notes.front()?.issuance.0;
        let at = issuance.0.checked_sub(first)? as usize;
        if self.notes.get(at).is_some_and(|n| n.issuance == issuance) {
            return Some(at);
        }
        self.notes
            .binary_search_by_key(&issuance, |n| n.issuance)
            .ok()
    }

    fn note(&self, issuance: Issuance) -> Option<&Note> {
        self.notes.get(self.position(issuance)?)
    }

    fn note_mut(&mut self, issuance: Issuance) -> Option<&mut Note> {
        let at = self.position(issuance)?;
        self.notes.get_mut(at)
    }

    /// `issuance` ended as `how` (its first end counts).
    fn ended(&mut self, issuance: Issuance, how: Ended) {
        let Some(at) = self.position(issuance) else {
            return;
        };
        let note = &mut self.notes[at];
        if note.ended.is_none() {
            note.ended = Some(how);
            if note.forgotten {
                self.died();
            }
        }
    }

    /// Nothing outside the oracle names `issuance` any more.
    fn forgotten(&mut self, issuance: Issuance) {
        let Some(at) = self.position(issuance) else {
            return;
        };
        let note = &mut self.notes[at];
        if !note.forgotten {
            note.forgotten = true;
            if note.ended.is_some() {
                self.died();
            }
        }
    }

    /// A note became dead (its lease ended, nothing names it): the dead notes at the front
    /// go, and all of them once they are half of the notes (amortized O(1) per note).
    fn died(&mut self) {
        self.dead += 1;
        while self.notes.front().is_some_and(Note::is_dead) {
            self.notes.pop_front();
            self.dead -= 1;
        }
        if self.dead > 16 && self.dead * 2 > self.notes.len() {
            self.notes.retain(|note| !note.is_dead());
            self.dead = 0;
        }
    }
}

impl Note {
    /// Its lease ended and nothing names it any more: nothing will read it again.
    fn is_dead(&self) -> bool {
        self.forgotten && self.ended.is_some()
    }
}

/// What full bookkeeping knows of one lease besides the checks: when it was issued, renewed
/// and ended, and by what. What a violation names as its cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Note {
    issuance: Issuance,
    /// The broker's id for it.
    lease_id: LeaseId,
    issued_ms: Ms,
    /// When the latest accepted renew gave it its deadline.
    renewed_ms: Option<Ms>,
    /// How it ended, by the oracle's account (a revived lease lives again).
    ended: Option<Ended>,
    /// A later lease of its record issued while it was unexpired (I2), and when.
    superseded: Option<(Issuance, Ms)>,
    /// When the broker last restarted before it was issued.
    restarted_before_ms: Option<Ms>,
    /// The engine said nothing names it any more: dropped once it ends.
    forgotten: bool,
}

/// How a lease ended, by the oracle's account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ended {
    /// Its deadline passed at `at_ms`.
    Expired { at_ms: Ms },
    /// A settle of it was accepted at `at_ms`: `acked`, `nacked` or `rejected`.
    Settled { done: &'static str, at_ms: Ms },
}

/// What an accepted settle did to its lease, in words: `acked`, `nacked`, `rejected`.
fn settled_as(op: &SettleOp) -> &'static str {
    match op {
        SettleOp::Ack => "acked",
        SettleOp::Nack { .. } => "nacked",
        SettleOp::Reject { .. } => "rejected",
        SettleOp::Renew { .. } => "renewed",
    }
}

/// Records read per [`BrokerView::status_kinds`] call in an audit (full, or a rolling slice),
/// and compared as one chunk with a bit per record.
const STATUS_CHUNK: usize = 64;
const _: () = assert!(STATUS_CHUNK <= 64, "an audit chunk fits a 64-bit mask");

/// The ghost state and the invariants broken so far.
#[derive(Debug)]
pub struct Oracle {
    config: OracleConfig,
    /// A `Vec` (not inline): cloned into a recycled state, it keeps its allocation.
    groups: Vec<GhostGroup>,
    /// Live leases, in issuance order.
    live: InlineVec<GhostLease, 4>,
    /// No live lease's deadline is below it (`Ms::MAX` when none is live): time passing
    /// before it expires nothing, so [`Oracle::advance`] reads the live leases only then. A
    /// bound, not the minimum (a renew or a settle may have raised the minimum since): not
    /// part of the state, left out of equality and hashing.
    earliest_deadline_ms: Ms,
    next_issuance: u32,
    /// Bit `i`: `Invariant::ALL[i]` is broken.
    violated: u8,
    /// Records the current step touched (empty between steps).
    touched: InlineVec<(u32, Seq), 4>,
    /// The current step may have changed records it did not name: audit at its end.
    audit_due: bool,
    /// Full bookkeeping (`None` when lean).
    log: Option<Box<Log>>,
}

// The hashes below hash what equality compares, small fields packed together: the model
// checker fingerprints oracles by the million.

impl Hash for GhostLease {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from(self.issuance.0) | u64::from(self.group) << 32);
        state.write_u64(u64::from(self.seq) | u64::from(self.current) << 32);
        state.write_u64(self.deadline_ms);
    }
}

/// As the record list would hash (its length, then each record) with each record's reason
/// by text, where it has one: the order the group kept its reasons in is not hashed.
impl Hash for GhostGroup {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.records.len());
        for record in self.records.iter() {
            state.write_u64(record.packed());
            if record.settled() >= DEAD {
                self.reason(record.settled()).hash(state);
            }
        }
        state.write_u64(u64::from(self.frontier) | u64::from(self.settled_prefix) << 32);
    }
}

/// Leaves the configuration out (the same in every state of a search: equal oracles' hashes
/// stay equal); packs the touched list's length (0 between steps) with the counters.
/// Compares what a continuation can observe: everything but the expiry bound.
impl PartialEq for Oracle {
    fn eq(&self, other: &Oracle) -> bool {
        self.config == other.config
            && self.groups == other.groups
            && self.live == other.live
            && self.next_issuance == other.next_issuance
            && self.violated == other.violated
            && self.touched == other.touched
            && self.audit_due == other.audit_due
            && self.log == other.log
    }
}

impl Eq for Oracle {}

impl Hash for Oracle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.groups.hash(state);
        self.live.hash(state);
        state.write_u64(
            u64::from(self.next_issuance)
                | u64::from(self.violated) << 32
                | u64::from(self.audit_due) << 40
                | (self.touched.len() as u64) << 48,
        );
        for &(group, seq) in &self.touched {
            state.write_u64(u64::from(group) | u64::from(seq) << 32);
        }
        if let Some(log) = &self.log {
            log.hash(state);
        }
    }
}

/// See `GhostGroup`'s `Clone`.
impl Clone for Oracle {
    fn clone(&self) -> Oracle {
        Oracle {
            config: self.config.clone(),
            groups: self.groups.clone(),
            live: self.live.clone(),
            earliest_deadline_ms: self.earliest_deadline_ms,
            next_issuance: self.next_issuance,
            violated: self.violated,
            touched: self.touched.clone(),
            audit_due: self.audit_due,
            log: self.log.clone(),
        }
    }

    fn clone_from(&mut self, source: &Oracle) {
        self.config.clone_from(&source.config);
        // Group by group in place (`Vec::clone_from` reuses each element's storage).
        self.groups.clone_from(&source.groups);
        self.live.clone_from(&source.live);
        self.earliest_deadline_ms = source.earliest_deadline_ms;
        self.next_issuance = source.next_issuance;
        self.violated = source.violated;
        self.touched.clone_from(&source.touched);
        self.audit_due = source.audit_due;
        self.log.clone_from(&source.log);
    }
}

fn bit(invariant: Invariant) -> u8 {
    1 << (invariant as u8)
}

impl Oracle {
    /// An oracle for a broker with no events.
    pub fn new(config: OracleConfig) -> Oracle {
        Oracle {
            groups: (0..config.group_count)
                .map(|_| GhostGroup {
                    records: InlineVec::new(),
                    kept: InlineVec::new(),
                    frontier: 0,
                    settled_prefix: 0,
                })
                .collect(),
            live: InlineVec::new(),
            earliest_deadline_ms: Ms::MAX,
            next_issuance: 0,
            violated: 0,
            touched: InlineVec::new(),
            audit_due: false,
            log: (!config.lean).then(Box::default),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OracleConfig {
        &self.config
    }

    /// The violations found so far: the first of each invariant, in the order found (empty
    /// for a lean oracle: see [`Oracle::violated`]).
    pub fn violations(&self) -> &[Violation] {
        self.log.as_ref().map_or(&[], |log| &log.violations)
    }

    /// Whether `invariant` has been violated.
    #[inline]
    pub fn violated(&self, invariant: Invariant) -> bool {
        self.violated & bit(invariant) != 0
    }

    /// Whether any invariant has been violated.
    #[inline]
    pub fn any_violated(&self) -> bool {
        self.violated != 0
    }

    /// The invariants violated so far, in order.
    pub fn violated_invariants(&self) -> impl Iterator<Item = Invariant> + '_ {
        Invariant::ALL.into_iter().filter(|&i| self.violated(i))
    }

    /// The number of steps ended so far (0 for a lean oracle).
    #[inline]
    pub fn step(&self) -> u64 {
        self.log.as_ref().map_or(0, |log| log.step)
    }

    /// Handler runs beyond the first, summed over every record (at-least-once duplicates; 0
    /// for a lean oracle).
    pub fn duplicate_runs(&self) -> u64 {
        self.log.as_ref().map_or(0, |log| log.duplicate_runs)
    }

    /// Deliveries the oracle counted for (group, seq).
    pub fn deliveries(&self, group: GroupIx, seq: Seq) -> u32 {
        self.ghost(group, seq).map_or(0, |r| r.deliveries)
    }

    /// Deliveries the oracle counted over the records `1..=events` of every group: the sum
    /// of [`Oracle::deliveries`] over them, in one pass without lookups (the checker's
    /// ranking function reads it per transition).
    pub fn deliveries_total(&self, events: Seq) -> u64 {
        let mut total = 0;
        for group in &self.groups {
            let records = &group.records[..group.records.len().min(events as usize)];
            for record in records {
                total += u64::from(record.deliveries);
            }
        }
        total
    }

    /// Whether the oracle knows (group, seq) as settled.
    pub fn is_settled(&self, group: GroupIx, seq: Seq) -> bool {
        self.ghost(group, seq).is_some_and(|r| r.settled() != OPEN)
    }

    /// Records acked without a successful handler run under a current lease (what `ack_first`
    /// and `ack_always` give up by design). Reads every record: call it at a run's end.
    pub fn acked_unprocessed(&self) -> u64 {
        self.groups
            .iter()
            .flat_map(|g| &g.records)
            .filter(|r| r.settled() == ACKED && !r.processed())
            .count() as u64
    }

    /// The live issuances, in order, and the next issuance: what a canonical renumbering must
    /// cover.
    pub fn for_each_issuance(&self, mut f: impl FnMut(Issuance)) {
        for lease in &self.live {
            f(lease.issuance);
        }
        f(Issuance(self.next_issuance));
    }

    /// Renames every issuance [`Oracle::for_each_issuance`] visits. `rename` must keep the
    /// issuances' equality and order.
    pub fn rename_issuances(&mut self, mut rename: impl FnMut(Issuance) -> Issuance) {
        for lease in &mut self.live {
            lease.issuance = rename(lease.issuance);
        }
        self.next_issuance = rename(Issuance(self.next_issuance)).0;
    }

    /// The leases live by their contract, with their deadlines (in issuance order).
    pub fn live_deadlines(&self) -> impl Iterator<Item = (Issuance, Ms)> + '_ {
        self.live.iter().map(|l| (l.issuance, l.deadline_ms))
    }

    /// Whether `issuance` is live and current (no later lease of its record was issued): what
    /// [`Oracle::handler_started`] answers, asked at another moment (an engine asks it when a
    /// handler writes its result). Costs the number of live leases.
    pub fn is_current(&self, issuance: Issuance) -> bool {
        self.live
            .iter()
            .any(|l| l.issuance == issuance && l.current)
    }

    /// Records a broken invariant; builds the detail only when it is newly broken and the
    /// oracle keeps details. (Out of line: a correct step never calls it, and the detail's
    /// formatting stays out of the checks' code.)
    #[cold]
    #[inline(never)]
    fn fail(&mut self, invariant: Invariant, detail: impl FnOnce() -> Detail) {
        if self.violated(invariant) {
            return;
        }
        self.violated |= bit(invariant);
        if let Some(log) = &mut self.log {
            let step = log.step;
            log.violations.push(Violation {
                invariant,
                step,
                detail: detail(),
            });
        }
    }

    /// [`Oracle::fail`] with a detail that reads the oracle (its notes): built only when the
    /// invariant is newly broken and the oracle keeps details.
    #[cold]
    #[inline(never)]
    fn fail_with(&mut self, invariant: Invariant, detail: impl FnOnce(&Oracle) -> Detail) {
        if self.violated(invariant) {
            return;
        }
        let detail = self.log.is_some().then(|| detail(self));
        self.fail(invariant, || detail.unwrap_or_default());
    }

    /// Where an unexpired lease's current deadline comes from, and the deadline: ` (issued at
    /// 3000 ms, until 33000 ms)`, or `renewed at` when a renew gave it.
    fn unexpired_since(&self, issuance: Issuance) -> Vec<Part> {
        let deadline_ms = self
            .live
            .iter()
            .find(|l| l.issuance == issuance)
            .map(|l| l.deadline_ms);
        let note = self.log.as_deref().and_then(|log| log.note(issuance));
        let mut parts = Vec::new();
        match note {
            Some(Note {
                renewed_ms: Some(at_ms),
                ..
            }) => parts.extend([
                Part::from(" (renewed at "),
                Part::At(Moment::new(Happened::Renewed(issuance), *at_ms)),
            ]),
            Some(note) => parts.extend([
                Part::from(" (issued at "),
                Part::At(Moment::new(Happened::Issued(issuance), note.issued_ms)),
            ]),
            None => parts.push(Part::from(" (")),
        }
        match (note, deadline_ms) {
            (Some(_), Some(deadline_ms)) => parts.push(format!(", until {deadline_ms} ms)").into()),
            (None, Some(deadline_ms)) => parts.push(format!("until {deadline_ms} ms)").into()),
            (Some(_), None) => parts.push(Part::from(")")),
            (None, None) => {
                parts.pop();
            }
        }
        parts
    }

    /// The detail of a settle (`op` of `issuance`, sent as `lease`) the broker accepted though
    /// `issuance` was not its record's current lease — superseded while still `live`, or
    /// ended: how and when, as the notes tell, and whether the record's current lease carries
    /// the same lease id (a broker that issued an id twice).
    fn stale_detail(&self, issuance: Issuance, lease: &Lease, op: &SettleOp, live: bool) -> Detail {
        let (group, seq) = (lease.group, lease.seq);
        let mut parts = vec![
            Part::from(op.name()),
            Part::from(" of "),
            Part::from(issuance),
            Part::from(" accepted on "),
            Part::event(group, seq),
        ];
        let log = self.log.as_deref();
        let note = log.and_then(|log| log.note(issuance));
        let but = [Part::from(", but "), Part::from(issuance)];
        match (live, note.copied()) {
            (
                true,
                Some(Note {
                    superseded: Some((by, at_ms)),
                    ..
                }),
            ) => parts.extend(but.into_iter().chain([
                Part::from(" was superseded by "),
                Part::from(by),
                Part::from(" at "),
                Part::At(Moment::new(Happened::Issued(by), at_ms)),
            ])),
            (true, _) => parts.push(", but that lease is superseded".into()),
            (
                false,
                Some(Note {
                    ended: Some(Ended::Expired { at_ms }),
                    ..
                }),
            ) => parts.extend(but.into_iter().chain([
                Part::from(" expired at "),
                Part::At(Moment::new(Happened::Expired(issuance), at_ms)),
            ])),
            (
                false,
                Some(Note {
                    ended: Some(Ended::Settled { done, at_ms }),
                    ..
                }),
            ) => parts.extend(but.into_iter().chain([
                Part::from(format!(" was {done} at ")),
                Part::At(Moment::new(Happened::Settled(issuance), at_ms)),
            ])),
            (false, _) => parts.push(", but that lease has ended".into()),
        }
        // The record's current lease, when the broker gave it the id the settle carried.
        let key = (group as u32, seq);
        let again = self
            .live
            .iter()
            .filter(|l| (l.group, l.seq) == key && l.current && l.issuance != issuance)
            .find_map(|l| log?.note(l.issuance))
            .filter(|again| again.lease_id == lease.lease_id);
        if let Some(again) = again {
            parts.extend([
                Part::from(" and its lease id was issued again to "),
                Part::from(again.issuance),
                Part::from(" at "),
                Part::At(Moment::new(
                    Happened::Issued(again.issuance),
                    again.issued_ms,
                )),
            ]);
            let restart = again
                .restarted_before_ms
                .filter(|&at_ms| note.is_none_or(|note| at_ms >= note.issued_ms));
            if let Some(at_ms) = restart {
                parts.extend([
                    Part::from(", after the broker restart at "),
                    Part::At(Moment::new(
                        Happened::RestartedBefore(again.issuance),
                        at_ms,
                    )),
                ]);
            }
        }
        Detail::of(parts)
    }

    #[inline]
    fn ghost(&self, group: GroupIx, seq: Seq) -> Option<&GhostRecord> {
        self.groups
            .get(group)?
            .records
            .get((seq as usize).checked_sub(1)?)
    }

    fn ghost_mut(&mut self, group: GroupIx, seq: Seq) -> &mut GhostRecord {
        &mut self.groups[group].records[seq as usize - 1]
    }

    #[inline]
    fn touch(&mut self, group: GroupIx, seq: Seq) {
        let key = (group as u32, seq);
        if !self.touched.contains(&key) {
            self.touched.push(key);
        }
    }

    #[inline]
    fn published_count(&self) -> Seq {
        self.groups.first().map_or(0, |g| g.records.len()) as Seq
    }

    /// Makes room for `events` more events in every group's ghost.
    pub fn reserve(&mut self, events: usize) {
        for group in &mut self.groups {
            group.records.reserve(events);
        }
    }

    /// An event was published.
    pub fn published(&mut self) {
        for group in &mut self.groups {
            group.records.push(GhostRecord::default());
        }
    }

    /// The broker handed out `lease` at `now_ms` for `lease_ms`. Checks I2, I3 (a settled event
    /// is never delivered again) and I5. Returns the oracle's name for the lease.
    pub fn fetched(&mut self, lease: &Lease, now_ms: Ms, lease_ms: Ms) -> Issuance {
        let issuance = Issuance(self.next_issuance);
        self.next_issuance += 1;
        let (group, seq) = (lease.group, lease.seq);
        let Some(&record) = self.ghost(group, seq) else {
            self.fail(Invariant::I3, || {
                detail![
                    "a lease was issued for unpublished ",
                    Part::event(group, seq)
                ]
            });
            return issuance;
        };
        self.touch(group, seq);
        if let Some(settled) = self.groups[group].settled(&record) {
            self.fail(Invariant::I3, || {
                detail![
                    Part::event(group, seq),
                    format!(" was {settled} and was delivered again as "),
                    issuance,
                ]
            });
        }
        let key = (group as u32, seq);
        // One pass: the record's live leases are superseded; the first one breaks I2.
        let mut unexpired = None;
        for other in self.live.iter_mut().filter(|l| (l.group, l.seq) == key) {
            unexpired.get_or_insert(other.issuance);
            if other.current {
                if let Some(note) = self.log.as_mut().and_then(|l| l.note_mut(other.issuance)) {
                    note.superseded = Some((issuance, now_ms));
                }
            }
            other.current = false;
        }
        if let Some(log) = &mut self.log {
            let restarted_before_ms = log.restarted_ms;
            log.notes.push_back(Note {
                issuance,
                lease_id: lease.lease_id,
                issued_ms: now_ms,
                renewed_ms: None,
                ended: None,
                superseded: None,
                restarted_before_ms,
                forgotten: false,
            });
        }
        if let Some(other) = unexpired {
            self.fail_with(Invariant::I2, |oracle| {
                let mut parts = vec![
                    Part::from(issuance),
                    Part::from(" issued for "),
                    Part::event(group, seq),
                    Part::from(" while "),
                    Part::from(other),
                    Part::from(" is unexpired"),
                ];
                parts.extend(oracle.unexpired_since(other));
                Detail::of(parts)
            });
        }
        let deliveries = record.deliveries + 1;
        let max_attempts = self.config.max_attempts;
        if deliveries > max_attempts || lease.attempt > max_attempts {
            self.fail(Invariant::I5, || {
                detail![
                    Part::event(group, seq),
                    format!(
                        " delivered {deliveries} times (attempt {}), max_attempts {max_attempts}",
                        lease.attempt
                    ),
                ]
            });
        }
        self.ghost_mut(group, seq).deliveries = deliveries;
        let deadline_ms = now_ms.saturating_add(lease_ms);
        self.earliest_deadline_ms = self.earliest_deadline_ms.min(deadline_ms);
        self.live.push(GhostLease {
            issuance,
            group: group as u32,
            seq,
            deadline_ms,
            current: true,
        });
        issuance
    }

    /// Time passed to `now_ms`: every live lease whose contract deadline is `<= now_ms` expires
    /// (a lease is valid while `now < deadline`). Engines on virtual time call it before
    /// reporting anything that happens at `now_ms` (also when time did not move: a renew or a
    /// fetch with a zero duration ends at once). Costs the number of live leases when a
    /// deadline may have come, nothing otherwise.
    #[inline]
    pub fn advance(&mut self, now_ms: Ms) {
        if now_ms >= self.earliest_deadline_ms {
            self.expire_until(now_ms);
        }
    }

    /// [`Oracle::advance`] once a deadline may have come: the leases due expire, and the bound
    /// becomes the earliest deadline left.
    fn expire_until(&mut self, now_ms: Ms) {
        if self.live.iter().any(|l| l.deadline_ms <= now_ms) {
            if let Some(log) = &mut self.log {
                for lease in self.live.iter().filter(|l| l.deadline_ms <= now_ms) {
                    let at_ms = lease.deadline_ms;
                    log.ended(lease.issuance, Ended::Expired { at_ms });
                }
            }
            self.live.retain(|l| l.deadline_ms > now_ms);
        }
        self.earliest_deadline_ms = self
            .live
            .iter()
            .map(|l| l.deadline_ms)
            .min()
            .unwrap_or(Ms::MAX);
    }

    /// The timed model's clock advanced by `by_ms`: every live lease's deadline moves `by_ms`
    /// into the past, none below `floor_ms` (times relative to now, see
    /// `CheckedBroker::shift_clock`). Lean oracles only (the model's states).
    pub fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) {
        for lease in self.live.iter_mut() {
            lease.deadline_ms = lease.deadline_ms.saturating_sub(by_ms).max(floor_ms);
        }
        if self.earliest_deadline_ms != Ms::MAX {
            self.earliest_deadline_ms = self
                .earliest_deadline_ms
                .saturating_sub(by_ms)
                .max(floor_ms);
        }
    }

    /// Exchanges groups `a` and `b` in the ghost (the model checker's symmetry over groups,
    /// see `Broker::swap_groups`). Lean oracles only.
    pub fn swap_groups(&mut self, a: GroupIx, b: GroupIx) {
        if a == b {
            return;
        }
        self.groups.swap(a, b);
        let (a, b) = (a as u32, b as u32);
        for lease in self.live.iter_mut() {
            lease.group = crate::types::exchanged(lease.group, a, b);
        }
        for (group, _) in self.touched.iter_mut() {
            *group = crate::types::exchanged(*group, a, b);
        }
    }

    /// A summary of group `group`'s ghost that names no group index (the model checker orders
    /// interchangeable groups by it): its records' delivery counts and settled codes.
    pub fn group_key(&self, group: GroupIx) -> u64 {
        self.groups[group]
            .records
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |key, record| {
                (key ^ record.packed()).wrapping_mul(0x0100_0000_01b3)
            })
    }

    /// The untimed model's expiry of (group, seq): its live leases expire.
    pub fn expired(&mut self, group: GroupIx, seq: Seq) {
        let key = (group as u32, seq);
        if let Some(log) = &mut self.log {
            for lease in self.live.iter().filter(|l| (l.group, l.seq) == key) {
                let at_ms = lease.deadline_ms;
                log.ended(lease.issuance, Ended::Expired { at_ms });
            }
        }
        self.live.retain(|l| (l.group, l.seq) != key);
        self.touch(group, seq);
    }

    /// The engine saw the broker change (group, seq) on its own (its expiry timer fired): the
    /// record is compared with the ghost at the end of the step.
    pub fn observe(&mut self, group: GroupIx, seq: Seq) {
        if self.ghost(group, seq).is_some() {
            self.touch(group, seq);
        }
    }

    /// The broker restarted: it may have changed any record, so the step ends with a full
    /// audit.
    pub fn restarted(&mut self) {
        self.audit_due = true;
    }

    /// The broker restarted at `now_ms`: full bookkeeping remembers when, to name it when a
    /// lease id is issued again after it. (What the restart may have changed is audited as
    /// the engine arranges: [`Oracle::restarted`], or [`Oracle::audit_records`] in slices.)
    pub fn broker_restarted(&mut self, now_ms: Ms) {
        if let Some(log) = &mut self.log {
            log.restarted_ms = Some(now_ms);
        }
    }

    /// Nothing outside the oracle will name `issuance` again (the engine let go of it): its
    /// note goes once the lease has ended. An engine that never calls it keeps a note per
    /// lease issued.
    pub fn forget(&mut self, issuance: Issuance) {
        let Some(log) = &mut self.log else {
            return;
        };
        log.forgotten(issuance);
    }

    /// How many notes full bookkeeping keeps: of leases live, or ended and still named (and a
    /// bounded share of notes nothing will read again, dropped in batches).
    pub fn notes_kept(&self) -> usize {
        self.log.as_ref().map_or(0, |log| log.notes.len())
    }

    /// A settle or renew of `issuance` (sent with the worker's copy `lease`) reached the broker,
    /// which accepted it or not (`accepted` is the broker's true answer, even when the worker
    /// saw a lost reply). Checks I1 and I2, and I7 on accepted acks.
    pub fn settled(
        &mut self,
        issuance: Issuance,
        lease: &Lease,
        op: &SettleOp,
        accepted: bool,
        now_ms: Ms,
    ) {
        let (group, seq) = (lease.group, lease.seq);
        if self.ghost(group, seq).is_none() {
            return; // The broker refuses a record it does not have (Invalid).
        }
        self.touch(group, seq);
        if !accepted {
            return;
        }
        // A broker that keeps one state per event, not per group (`ack-all-groups`), changes
        // the event's record in the other groups too: compared at this step, not at the next
        // audit.
        for other in 0..self.config.group_count {
            if other != group {
                self.touch(other, seq);
            }
        }
        let key = (group as u32, seq);
        let position = self.live.iter().position(|l| l.issuance == issuance);
        if let SettleOp::Renew { extend_ms } = *op {
            if let Some(other) = self
                .live
                .iter()
                .find(|l| (l.group, l.seq) == key && l.issuance != issuance)
            {
                let other = other.issuance;
                self.fail_with(Invariant::I2, |oracle| {
                    let mut parts = vec![
                        Part::from("renew of "),
                        Part::from(issuance),
                        Part::from(" accepted on "),
                        Part::event(group, seq),
                        Part::from(" while "),
                        Part::from(other),
                        Part::from(" is unexpired"),
                    ];
                    parts.extend(oracle.unexpired_since(other));
                    Detail::of(parts)
                });
            }
            if let Some(log) = &mut self.log {
                if let Some(note) = log.note_mut(issuance) {
                    let was_dead = note.is_dead();
                    note.renewed_ms = Some(now_ms);
                    // A lease the oracle had ended lives again (renew-revives).
                    note.ended = None;
                    log.dead -= usize::from(was_dead);
                }
            }
            let deadline_ms = now_ms.saturating_add(extend_ms);
            self.earliest_deadline_ms = self.earliest_deadline_ms.min(deadline_ms);
            match position {
                Some(position) => self.live[position].deadline_ms = deadline_ms,
                None => {
                    // A lease the oracle had forgotten lives again (renew-revives): current
                    // unless another live lease holds the record (I2 above).
                    let holder = self.live.iter().find(|l| (l.group, l.seq) == key);
                    let current = holder.is_none();
                    if let (Some(holder), Some(log)) = (holder, &mut self.log) {
                        // Revived behind a later lease: that lease superseded it.
                        let by = holder.issuance;
                        let at_ms = log.note(by).map_or(now_ms, |note| note.issued_ms);
                        if let Some(note) = log.note_mut(issuance) {
                            note.superseded = Some((by, at_ms));
                        }
                    }
                    let at = self.live.partition_point(|l| l.issuance < issuance);
                    self.live.insert(
                        at,
                        GhostLease {
                            issuance,
                            group: key.0,
                            seq,
                            deadline_ms,
                            current,
                        },
                    );
                }
            }
            return;
        }
        match position {
            Some(position) => {
                if !self.live[position].current {
                    self.fail_with(Invariant::I1, |oracle| {
                        oracle.stale_detail(issuance, lease, op, true)
                    });
                }
                self.live.remove(position);
                if let Some(log) = &mut self.log {
                    let done = settled_as(op);
                    log.ended(
                        issuance,
                        Ended::Settled {
                            done,
                            at_ms: now_ms,
                        },
                    );
                }
            }
            None => self.fail_with(Invariant::I1, |oracle| {
                oracle.stale_detail(issuance, lease, op, false)
            }),
        }
        match *op {
            SettleOp::Ack => {
                let processed = self.ghost_mut(group, seq).processed();
                if self.config.check_at_least_once && !processed {
                    self.fail(Invariant::I7, || {
                        detail![
                            Part::event(group, seq),
                            " acked by ",
                            issuance,
                            " without a successful handler run under a current lease",
                        ]
                    });
                }
                self.settle_record(group, seq, Final::Acked);
            }
            SettleOp::Reject { reason } => {
                self.settle_record(group, seq, Final::DeadLettered(reason));
            }
            SettleOp::Nack { .. } | SettleOp::Renew { .. } => {}
        }
    }

    fn settle_record(&mut self, group: GroupIx, seq: Seq, settled: Final) {
        let g = &mut self.groups[group];
        let index = seq as usize - 1;
        if g.records[index].settled() == OPEN {
            g.records[index].bits |= g.code(settled);
        }
        let mut prefix = g.settled_prefix;
        while (prefix as usize) < g.records.len() && g.records[prefix as usize].settled() != OPEN {
            prefix += 1;
        }
        g.settled_prefix = prefix;
    }

    /// A handler started under `issuance` on (group, seq). Returns whether that lease was live
    /// and current when it started: the engine hands it back to
    /// [`Oracle::handler_finished`] (the run's own state, not the oracle's).
    pub fn handler_started(&mut self, issuance: Issuance, group: GroupIx, seq: Seq) -> bool {
        let current = self
            .live
            .iter()
            .any(|l| l.issuance == issuance && l.current);
        if let Some(log) = &mut self.log {
            let record = &mut self.groups[group].records[seq as usize - 1];
            if record.ran() {
                log.duplicate_runs += 1;
            }
            record.bits |= RAN;
        }
        current
    }

    /// A handler that ran on (group, seq) finished; `started_current` is what
    /// [`Oracle::handler_started`] returned, `success` is
    /// [`crate::runtime::Outcome::is_success`].
    pub fn handler_finished(
        &mut self,
        group: GroupIx,
        seq: Seq,
        started_current: bool,
        success: bool,
    ) {
        // Kept when I7 is checked, and with full bookkeeping for the count of what an
        // at-most-once policy gives up ([`Oracle::acked_unprocessed`]).
        let keep = self.config.check_at_least_once || self.log.is_some();
        if keep && success && started_current {
            self.ghost_mut(group, seq).bits |= PROCESSED;
        }
    }

    /// Ends a step in which the engine made no call that changes the broker (a reply reached
    /// a worker, a handler started or finished, a request was sent or lost): every record,
    /// frontier and count reads as the last step's checks read them, so there is nothing to
    /// check again. Such a step touched no record (nothing reached the broker).
    #[inline]
    pub fn end_quiet_step(&mut self) {
        if let Some(log) = &mut self.log {
            // A step count cannot reach 2^64: no overflow check on the hot path.
            log.step = log.step.wrapping_add(1);
        }
    }

    /// Whether the current step has named no record and asked for no audit so far: what a
    /// step ended with [`Oracle::end_quiet_step`] must satisfy.
    pub fn touched_nothing(&self) -> bool {
        self.touched.is_empty() && !self.audit_due
    }

    /// Ends a step: compares the records the step touched with the broker (I3), checks every
    /// group's frontier (I4), and the event count (I3). A full audit instead when the step may
    /// have changed records it did not name, or when configured to audit every step.
    pub fn end_step(&mut self, view: &impl BrokerView) {
        if self.audit_due || self.config.audit_every_step {
            self.audit(view);
        } else {
            self.check_event_count(view);
            // The compared records the broker shows unsettled, as read here once (the view does
            // not change during the checks). Room for the checker's queues when it compares
            // every record (up to 16), so the step allocates nothing.
            let mut open: SmallVec<[(u32, Seq); 16]> = SmallVec::new();
            // Every published record, or the touched ones. (By index: comparing a record
            // never touches another.)
            let every = if self.config.compare_every_record {
                self.published_count().min(view.event_count()) as usize
            } else {
                0
            };
            let records = if every > 0 {
                self.config.group_count * every
            } else {
                self.touched.len()
            };
            for index in 0..records {
                let (group, seq) = match (index.checked_div(every), index.checked_rem(every)) {
                    (Some(group), Some(offset)) => (group as u32, offset as Seq + 1),
                    _ => self.touched[index],
                };
                let status = view.status_kind(group as GroupIx, seq);
                if !is_settled_status(status) {
                    open.push((group, seq));
                }
                // The usual record plainly agrees with its ghost: nothing more to compare.
                let agrees = self
                    .ghost(group as GroupIx, seq)
                    .is_some_and(|record| plainly_agrees(record.settled(), status));
                if !agrees {
                    self.observe_record(view, group as GroupIx, seq, status);
                }
            }
            let open_below = |group: GroupIx, frontier: Seq| {
                open.iter()
                    .filter(|&&(g, s)| g as GroupIx == group && s <= frontier)
                    .map(|&(_, s)| s)
                    .min()
            };
            for group in 0..self.config.group_count {
                // What `check_frontier` finds when nothing is wrong, read once: a frontier
                // that did not go back, within the settled prefix, past no open record the
                // step touched. Anything else takes the full check (which reads it again).
                let frontier = view.frontier(group);
                let g = &self.groups[group];
                let fine = g.frontier <= frontier
                    && frontier <= g.settled_prefix
                    && (open.is_empty() || open_below(group, frontier).is_none());
                if fine {
                    self.groups[group].frontier = frontier;
                } else {
                    self.check_frontier(view, group, |_, frontier| open_below(group, frontier));
                }
            }
            self.touched.clear();
        }
        self.audit_due = false;
        if let Some(log) = &mut self.log {
            // A step count cannot reach 2^64: no overflow check on the hot path.
            log.step = log.step.wrapping_add(1);
        }
    }

    #[inline(always)]
    fn check_event_count(&mut self, view: &impl BrokerView) {
        let published = self.published_count();
        let count = view.event_count();
        if count != published {
            self.fail(Invariant::I3, || {
                detail![format!(
                    "{published} events published, the broker has {count}"
                )]
            });
        }
    }

    /// Reads every record of every group and every frontier, and checks them against the
    /// ghost (I3, I4). What [`Oracle::end_step`] does incrementally, in full: engines run it at
    /// the end of each phase.
    pub fn audit(&mut self, view: &impl BrokerView) {
        self.touched.clear();
        self.check_event_count(view);
        let count = self.published_count().min(view.event_count());
        let mut statuses = [Status::Dropped; STATUS_CHUNK];
        for group in 0..self.config.group_count {
            let mut first_open = None;
            let mut first: Seq = 1;
            while first <= count {
                let len = ((count - first) as usize + 1).min(STATUS_CHUNK);
                // Every chunk reads a record at least: a loop that cannot advance fails here
                // instead of spinning.
                assert!(len > 0, "an audit chunk reads at least one record");
                let chunk = &mut statuses[..len];
                self.read_statuses(view, group, first, chunk);
                if first_open.is_none() {
                    first_open = chunk
                        .iter()
                        .position(|&status| !is_settled_status(status))
                        .map(|offset| first + offset as Seq);
                }
                self.compare_chunk(view, group, first, chunk);
                first += len as Seq;
            }
            self.check_frontier(view, group, |_, frontier| {
                first_open.filter(|&open| open <= frontier).or_else(|| {
                    // Every read record is settled; the frontier may name unread ones.
                    (count + 1..=frontier)
                        .find(|&seq| !is_settled_status(view.status_kind(group, seq)))
                })
            });
        }
    }

    /// Compares the records `first..first + count` of `group` with the ghost (I3), as
    /// [`Oracle::audit`] compares every record: a slice of a full audit, for an engine that
    /// spreads one over many steps (a large broker after a restart). Records past the last
    /// published event are skipped; frontiers are not checked (every `end_step` reads them).
    pub fn audit_records(
        &mut self,
        view: &impl BrokerView,
        group: GroupIx,
        first: Seq,
        count: Seq,
    ) {
        let published = self.published_count().min(view.event_count());
        if group >= self.config.group_count || first == 0 || first > published {
            return;
        }
        let last = first.saturating_add(count.saturating_sub(1)).min(published);
        let mut statuses = [Status::Dropped; STATUS_CHUNK];
        let mut first = first;
        while first <= last {
            let len = ((last - first) as usize + 1).min(STATUS_CHUNK);
            let chunk = &mut statuses[..len];
            self.read_statuses(view, group, first, chunk);
            self.compare_chunk(view, group, first, chunk);
            first += len as Seq;
        }
    }

    /// Reads the statuses of the records `first..first + out.len()` of `group` (every one is
    /// published): in one call where the view can, record by record for the rest.
    #[inline]
    fn read_statuses(
        &self,
        view: &impl BrokerView,
        group: GroupIx,
        first: Seq,
        out: &mut [Status],
    ) {
        let written = view.status_kinds(group, first, out).min(out.len());
        for (offset, slot) in out.iter_mut().enumerate().skip(written) {
            *slot = view.status_kind(group, first + offset as Seq);
        }
    }

    /// Compares the records `first..first + statuses.len()` of `group` (at most
    /// [`STATUS_CHUNK`]) with the ghost (I3), given their statuses as the broker shows them. A
    /// pass over the two lists marks, branch-free, each record that does not plainly agree
    /// (acked on both sides, or open on both); only those take [`Oracle::observe_record`]
    /// (which also passes a dead letter that kept the ghost's reason). The same verdicts as
    /// `observe_record` on every record.
    fn compare_chunk(
        &mut self,
        view: &impl BrokerView,
        group: GroupIx,
        first: Seq,
        statuses: &[Status],
    ) {
        assert!(statuses.len() <= STATUS_CHUNK, "a chunk fits a 64-bit mask");
        let start = first as usize - 1;
        let ghosts = &self.groups[group].records.as_slice()[start..start + statuses.len()];
        // Bit `i` for record `first + i`, built from the last record down (a shift by one
        // never overflows, so the loop has no check in it).
        let mut mask: u64 = 0;
        for (&status, ghost) in statuses.iter().zip(ghosts).rev() {
            mask = (mask << 1) | u64::from(!plainly_agrees(ghost.settled(), status));
        }
        while mask != 0 {
            let at = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            self.observe_record(view, group, first + at as Seq, statuses[at]);
        }
    }

    /// Compares one broker record with the ghost. Allocation-free unless a violation is found.
    fn observe_record(&mut self, view: &impl BrokerView, group: GroupIx, seq: Seq, status: Status) {
        let Some(&record) = self.ghost(group, seq) else {
            return;
        };
        let deliveries = record.deliveries;
        match (record.settled(), status) {
            (_, Status::Dropped) => self.fail(Invariant::I3, || {
                detail![Part::event(group, seq), " is gone from the broker"]
            }),
            (ACKED, Status::Acked) | (OPEN, Status::Available | Status::Leased) => {}
            (ACKED.., _) => {
                let settled = self.groups[group].settled(&record);
                if let (Some(Final::DeadLettered(kept)), Status::DeadLettered) = (settled, status) {
                    if view.dead_letter_reason_is(group, seq, kept.as_str()) {
                        return;
                    }
                }
                self.fail(Invariant::I3, || {
                    let (status, reason) = view.status(group, seq);
                    let settled = settled.expect("a settled code");
                    let now = match reason {
                        Some(reason) => format!("{} ({reason})", status.name()),
                        None => status.name().to_string(),
                    };
                    detail![
                        Part::event(group, seq),
                        format!(" was {settled} and is now {now}")
                    ]
                });
            }
            (OPEN, Status::DeadLettered) => {
                let reason = view.dead_letter_reason(group, seq).unwrap_or(Reason::EMPTY);
                let max_attempts = self.config.max_attempts;
                if deliveries < max_attempts {
                    self.fail(Invariant::I3, || {
                        detail![
                            Part::event(group, seq),
                            format!(
                                " dead-lettered ({reason}) after {deliveries} of {max_attempts} attempts, without a reject"
                            ),
                        ]
                    });
                } else if let Some(holder) = self
                    .live
                    .iter()
                    .find(|l| (l.group, l.seq) == (group as u32, seq))
                {
                    // The last delivery's attempt is not over while its lease is unexpired and
                    // unsettled: the broker dead-lettered work still in progress (a timer that
                    // outlived an earlier lease fired early, `stale-timer`).
                    let holder = holder.issuance;
                    self.fail_with(Invariant::I3, |oracle| {
                        let mut parts = vec![
                            Part::event(group, seq),
                            Part::from(format!(" dead-lettered ({reason}) while ")),
                            Part::from(holder),
                            Part::from(" is unexpired"),
                        ];
                        parts.extend(oracle.unexpired_since(holder));
                        Detail::of(parts)
                    });
                }
                self.settle_record(group, seq, Final::DeadLettered(reason));
            }
            (OPEN, Status::Acked) => {
                self.fail(Invariant::I3, || {
                    detail![Part::event(group, seq), " is acked but no ack was accepted"]
                });
                self.settle_record(group, seq, Final::Acked);
            }
        }
    }

    /// Checks `group`'s frontier: it never goes back (I4), never passes the ghost's settled
    /// prefix, and never passes a record the broker shows unsettled — `open_below` finds one
    /// among the records the caller read.
    fn check_frontier(
        &mut self,
        view: &impl BrokerView,
        group: GroupIx,
        open_below: impl FnOnce(&Oracle, Seq) -> Option<Seq>,
    ) {
        let frontier = view.frontier(group);
        let g = &self.groups[group];
        let (before, prefix) = (g.frontier, g.settled_prefix);
        if frontier < before {
            self.fail(Invariant::I4, || {
                detail![
                    Part::frontier(group),
                    format!(" went back from {before} to {frontier}"),
                ]
            });
        }
        let unsettled = if frontier > prefix {
            Some(prefix + 1)
        } else {
            open_below(self, frontier)
        };
        if let Some(seq) = unsettled {
            self.fail(Invariant::I4, || {
                detail![
                    Part::frontier(group),
                    format!(" is {frontier} but "),
                    Part::Seq(seq),
                    " is not settled",
                ]
            });
        }
        self.groups[group].frontier = frontier;
    }

    /// The liveness check at the end of a run with faults healed (I6): every event of every
    /// group acked or dead-lettered, and every frontier at the last event. `why` says what
    /// ended the run. Reads every record: a phase-end check.
    pub fn check_eventually_settled(&mut self, view: &impl BrokerView, why: &str) {
        let count = view.event_count();
        for group in 0..view.group_count() {
            let stuck = (1..=count).find(|&seq| !is_settled_status(view.status_kind(group, seq)));
            if let Some(seq) = stuck {
                let status = view.status_kind(group, seq);
                self.fail(Invariant::I6, || {
                    detail![
                        Part::event(group, seq),
                        format!(" is still {} {why}", status.name()),
                    ]
                });
                return;
            }
            let frontier = view.frontier(group);
            if frontier != count {
                self.fail(Invariant::I6, || {
                    detail![
                        Part::frontier(group),
                        format!(" is {frontier} of {count} {why}")
                    ]
                });
                return;
            }
        }
    }
}

/// Bit `status` of byte `min(settled, DEAD)`: the statuses that plainly agree with a ghost
/// record's settled code (open: available or leased; acked: acked; dead-lettered: none).
const AGREES: u32 = (1 << Status::Available as u32 | 1 << Status::Leased as u32)
    | (1 << Status::Acked as u32) << (8 * ACKED);

/// The ghost's and the broker's record plainly agree: both acked, or both open. (One shift,
/// no branch: the audit asks it of every record.)
#[doc(hidden)]
#[inline(always)]
pub fn plainly_agrees(settled: u32, status: Status) -> bool {
    AGREES >> (8 * settled.min(DEAD) + status as u32) & 1 != 0
}

fn is_settled_status(status: Status) -> bool {
    matches!(status, Status::Acked | Status::DeadLettered)
}
