//! `CheckedBroker`: a broker the model checker can explore — leasehold's reference
//! [`Broker`] or a user's own queue.
//!
//! The checker drives a broker through [`Backend`] (publish, fetch, settle, expiry, restart)
//! and reads it through [`BrokerView`], exactly as the simulator does; the oracle judges its
//! replies and its view, never its internals. The untimed model needs a few more things of
//! it, which this trait names: a way to let time reach one lease's deadline (the model's
//! `Expire` action), the leases that time could end, what a request must carry for the broker
//! to recognise it, and — optionally — a renaming of its lease ids for the canonical form.
//!
//! Every engine is generic over the broker and monomorphised: the reference broker's check
//! costs what it cost before the trait existed.

use crate::backend::Backend;
use crate::broker::{Broker, BrokerConfig, BrokerView, Expired, Timer};
use crate::types::{GroupIx, Lease, LeaseId, Ms, Receipt, Seq, SettleError, SettleOp, Status};
use crate::variant::Fence;
use std::fmt::Debug;
use std::hash::Hash;

/// A broker the model checker can explore: a [`Backend`] (and its [`BrokerView`]) that can be
/// cloned, compared and hashed as a state, plus the hooks of the untimed model.
///
/// # How the checker drives it
/// The model is untimed. The broker's clock reads one constant,
/// [`MODEL_NOW_MS`](crate::check::model::MODEL_NOW_MS), at every call, and fetches ask for
/// leases of [`MODEL_LEASE_MS`](crate::check::model::MODEL_LEASE_MS): no lease runs out by
/// itself. Time passes only through [`CheckedBroker::lapse`], the model's `Expire` action,
/// which may happen at any moment a lease exists — every order of an expiry against the other
/// steps (not the broker's deadline arithmetic, which the simulator runs). A fetch first calls [`CheckedBroker::expire_due_each`] (so that the oracle sees the
/// records the expiries changed), then [`CheckedBroker::fetch_one`]. Settles and renews go
/// through [`Backend::settle`] with the lease as the worker received it (see
/// [`CheckedBroker::receipt_of`] and [`CheckedBroker::reads_request_attempt`]); a broker
/// restart is [`Backend::restart`].
///
/// # Contract
/// 1. **A state machine.** Every reply and every next state is a function of the broker's
///    state and the call: no clock, no randomness, no I/O, no interior mutability. `Clone`
///    copies the whole state.
/// 2. **Equality is behaviour.** `Eq` (and `Hash`, consistent with it) compares what a
///    future reply or [`BrokerView`] answer can depend on; it may ignore derived data (an
///    index). Two brokers that compare equal must behave alike, or the checker misses
///    behaviours. Comparing more (history, a step counter) is correct but costs states.
/// 3. **Bounded names.** Lease ids fit in 32 bits and sequence numbers in 8 (a counter from
///    1 does, within [`crate::check::config`]'s bounds).
/// 4. **Timers.** [`CheckedBroker::for_each_timer`] names every lease the broker will expire
///    when its clock reaches the lease's deadline; [`CheckedBroker::lapse`] lets the clock
///    reach one of them. A broker that expires every lease at its deadline has one timer per
///    leased record.
/// 5. **Receipts** are a function of the record: every lease on (group, seq) carries
///    [`CheckedBroker::receipt_of`]`(group, seq)` (checked on every fetch).
///
/// The checker panics when a broker breaks 3 or 5 (a bug in the implementation of this
/// trait, not a finding about the protocol).
///
/// # What is optional
/// Lease-id renaming ([`CheckedBroker::lease_id_counter`],
/// [`CheckedBroker::for_each_lease_id`], [`CheckedBroker::rename_lease_ids`]): the canonical
/// form renumbers lease ids, order-preserving, so that states that differ only by the ids
/// already spent are one state. A broker that does not offer it is checked just as soundly,
/// with more states. [`CheckedBroker::release_delays`] likewise, for a broker whose nacks are
/// redelivered at once (the model's nacks ask for no delay). The provided `fetch_one`,
/// `expire_due_each` and `has_available` are written with [`Backend`] and [`BrokerView`];
/// override them when the broker can answer without allocating.
pub trait CheckedBroker: Backend + Clone + Eq + Hash + Debug + Send + Sync + 'static {
    /// A broker with no events for `config`: its group count, lease duration and attempts
    /// per record (and the variant the check runs, which a user's broker may ignore).
    fn with_config(config: &BrokerConfig) -> Self;

    /// Calls `f` with every pending expiry timer: for each lease the broker will expire when
    /// its clock reaches `deadline_ms`, the deadline, the record and the lease id. In an order
    /// that is a function of the state (the reference broker's is the firing order: deadline,
    /// group, seq); it orders the `Expire` actions, so it decides only which of equally short
    /// counterexamples is found. A record may have more than one timer (a broker that keeps
    /// the timer of a lease that ended); the `Expire` action takes the first one whose
    /// deadline is still ahead.
    fn for_each_timer(&self, f: impl FnMut(&Timer));

    /// Time reaches the deadline of the first timer on (group, seq) whose deadline is after
    /// `now_ms` — the untimed model's `Expire` action. That timer's deadline becomes
    /// `now_ms`, and so does the deadline of the lease it was armed for, if that lease still
    /// holds the record: the lease is no longer valid (valid while `now < deadline`, so a
    /// request that lands now is stale), and the broker expires it as its deadline passing
    /// would, at its next [`Backend::expire_due`] at `now_ms` (the next fetch). Nothing else
    /// changes.
    ///
    /// Returns `None` when (group, seq) has no such timer, else whether the lease the timer
    /// was armed for held the record (`false`: a timer that outlived its lease).
    fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> Option<bool>;

    /// Time may pass before any fetch: every available record that waits for a redelivery
    /// time makes it no later than `now_ms`. The checker calls it with `now_ms = 0` on every
    /// state (its canonical form), so that delays no step can tell apart are one state. The
    /// default does nothing: right for a broker that redelivers a nacked record at once.
    fn release_delays(&mut self, now_ms: Ms) {
        let _ = now_ms;
    }

    /// The timed model (`--time ticks`) advanced the clock by `by_ms`: move every time the
    /// broker keeps (deadlines, timers, redelivery times) `by_ms` into the past, keeping a
    /// time that would fall below `floor_ms` at `floor_ms` (the model keeps the clock at one
    /// value and times relative to it, so its space stays finite; the floor is further in
    /// the past than any comparison a present step makes). Returns whether the broker can;
    /// the default cannot, and the timed model refuses such a broker with one line.
    fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) -> bool {
        let _ = (by_ms, floor_ms);
        false
    }

    /// The receipt every lease on (group, seq) carries (see the contract). Default: none.
    fn receipt_of(&self, group: GroupIx, seq: Seq) -> Option<Receipt> {
        let _ = (group, seq);
        None
    }

    /// Whether a settle's effect may depend on the attempt the request's lease carries. When
    /// `false` the checker's workers forget it (fewer states) and send attempt 0. Default:
    /// `true`, always sound.
    fn reads_request_attempt(&self) -> bool {
        true
    }

    /// The lease id the next fetch hands out, for a broker that lets the checker rename its
    /// lease ids (see the trait's documentation); `None` (the default): ids are kept as they
    /// are and [`CheckedBroker::for_each_lease_id`] and [`CheckedBroker::rename_lease_ids`]
    /// are never called. A broker that returns `Some` hands out increasing ids from it.
    fn lease_id_counter(&self) -> Option<LeaseId> {
        None
    }

    /// Calls `f` with every lease id the state holds — in records, in timers, in anything a
    /// restart may bring back — and with [`CheckedBroker::lease_id_counter`].
    fn for_each_lease_id(&self, f: impl FnMut(LeaseId)) {
        let _ = f;
    }

    /// Renames every lease id [`CheckedBroker::for_each_lease_id`] visits, the counter
    /// included. `rename` keeps the ids' equality and order (an order-preserving
    /// renumbering); the broker keeps handing out increasing ids from the renamed counter.
    fn rename_lease_ids(&mut self, rename: impl FnMut(LeaseId) -> LeaseId) {
        let _ = rename;
    }

    /// Whether the lease-id counter survives a broker restart. When it may not, the checker
    /// keeps lease ids as they are while a restart is left in the budget (a counter that
    /// restarts makes the ids' distance from 1 observable). Default: `true`.
    fn lease_ids_survive_restart(&self) -> bool {
        true
    }

    /// Applies due expiries at `now_ms`, handing each expired lease to `f` in firing order.
    fn expire_due_each(&mut self, now_ms: Ms, mut f: impl FnMut(Expired)) {
        let mut expired = Vec::new();
        self.expire_due_into(now_ms, &mut expired);
        expired.into_iter().for_each(&mut f);
    }

    /// A fetch of one lease of `group` at `now_ms` for the configured lease duration.
    fn fetch_one(&mut self, group: GroupIx, now_ms: Ms) -> Result<Option<Lease>, SettleError> {
        let mut leases = self.fetch(group, 1, now_ms, None)?;
        Ok(leases.pop())
    }

    /// [`CheckedBroker::fetch_one`] on behalf of the model's worker `worker` (an index). A
    /// broker that keeps state per consumer (`rabbitmq-channel`: a channel per worker) tells
    /// its workers apart, and then also answers `false` to
    /// [`CheckedBroker::workers_interchangeable`]. Default: the worker is ignored.
    fn fetch_one_as(
        &mut self,
        worker: usize,
        group: GroupIx,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let _ = worker;
        self.fetch_one(group, now_ms)
    }

    /// Whether the broker's state names no worker, so that the checker may sort its workers
    /// (symmetry reduction). Default: `true`.
    fn workers_interchangeable(&self) -> bool {
        true
    }

    /// Exchanges groups `a` and `b` (symmetry reduction over groups, an opt-in): afterwards the
    /// broker must be the one that would have resulted had every request to `a` gone to `b`
    /// and every request to `b` gone to `a` — records, frontiers, pending timers, anything a
    /// restart brings back, exchanged; nothing else changed. The checker then orders the
    /// groups of a state, so that a state and its twin with two groups' histories exchanged
    /// are explored once. A broker whose groups share state that depends on which group is
    /// which (numbering across groups) must not opt in. Returns whether it exchanged them;
    /// default: `false` (the groups are kept as they are). `swap_groups(a, a)` changes nothing
    /// and answers the same: the checker asks it once to know whether to order groups at all.
    fn swap_groups(&mut self, a: GroupIx, b: GroupIx) -> bool {
        let _ = (a, b);
        false
    }

    /// Whether some record of `group` is available (a fetch at the model's time leases it,
    /// its delays released by [`CheckedBroker::release_delays`]).
    fn has_available(&self, group: GroupIx) -> bool {
        let mut statuses = [Status::Acked; 16];
        let mut first = 1;
        loop {
            let read = BrokerView::status_kinds(self, group, first, &mut statuses);
            if statuses[..read].contains(&Status::Available) {
                return true;
            }
            if read < statuses.len() {
                return false;
            }
            first += read as Seq;
        }
    }
}

/// The reference broker: its own timers, lapse and renumbering.
impl CheckedBroker for Broker {
    #[inline]
    fn with_config(config: &BrokerConfig) -> Broker {
        Broker::new(*config)
    }

    #[inline]
    fn for_each_timer(&self, f: impl FnMut(&Timer)) {
        self.timers().iter().for_each(f);
    }

    #[inline]
    fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> Option<bool> {
        Broker::lapse(self, group, seq, now_ms)
    }

    #[inline]
    fn release_delays(&mut self, now_ms: Ms) {
        Broker::release_delays(self, now_ms)
    }

    fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) -> bool {
        Broker::shift_clock(self, by_ms, floor_ms);
        true
    }

    #[inline]
    fn receipt_of(&self, _group: GroupIx, seq: Seq) -> Option<Receipt> {
        self.receipt(seq)
    }

    /// Only a broker that accepts an unfenced nack on a settled record reads it.
    fn reads_request_attempt(&self) -> bool {
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        self.variant().fence(&nack) == Fence::None
    }

    #[inline]
    fn lease_id_counter(&self) -> Option<LeaseId> {
        // `rabbitmq-channel`'s lease ids name (channel, tag): they are kept as they are.
        (!self.variant().channel_scoped()).then(|| self.next_lease_id())
    }

    #[inline]
    fn for_each_lease_id(&self, f: impl FnMut(LeaseId)) {
        Broker::for_each_lease_id(self, f)
    }

    #[inline]
    fn rename_lease_ids(&mut self, rename: impl FnMut(LeaseId) -> LeaseId) {
        Broker::rename_lease_ids(self, rename)
    }

    fn lease_ids_survive_restart(&self) -> bool {
        self.variant().lease_ids_durable()
    }

    #[inline]
    fn expire_due_each(&mut self, now_ms: Ms, f: impl FnMut(Expired)) {
        Broker::expire_due_each(self, now_ms, f)
    }

    #[inline]
    fn fetch_one(&mut self, group: GroupIx, now_ms: Ms) -> Result<Option<Lease>, SettleError> {
        Broker::fetch_one(self, group, now_ms, None)
    }

    #[inline]
    fn fetch_one_as(
        &mut self,
        worker: usize,
        group: GroupIx,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        Broker::fetch_one_for(self, worker, group, now_ms)
    }

    /// `rabbitmq-channel` keeps a channel per worker.
    fn workers_interchangeable(&self) -> bool {
        !self.variant().channel_scoped()
    }

    /// Every variant but `rabbitmq-channel` (see [`Broker::swap_groups`]).
    fn swap_groups(&mut self, a: GroupIx, b: GroupIx) -> bool {
        Broker::swap_groups(self, a, b)
    }

    #[inline]
    fn has_available(&self, group: GroupIx) -> bool {
        self.records(group)
            .iter()
            .any(|r| matches!(r, crate::types::Record::Available { .. }))
    }
}

/// Whether `status` is final (acked or dead-lettered).
#[inline]
pub(crate) fn is_settled(status: Status) -> bool {
    matches!(status, Status::Acked | Status::DeadLettered)
}
