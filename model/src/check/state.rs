//! The checker's state and actions: the broker and a lean oracle (the real ones), the workers,
//! the settle requests in flight and the budgets used — and nothing a future step, a property or
//! a reply cannot observe.
//!
//! # History-free
//! * The oracle is lean ([`crate::OracleConfig::lean`]): which invariants broke (a violating
//!   state is a leaf anyway), not when or why; the detail is rebuilt by replaying the
//!   counterexample with a full oracle.
//! * A worker holds a [`LeaseRef`], not a whole [`crate::Lease`]: the broker reads a request's
//!   lease id, group and seq, its receipt (a function of the record:
//!   [`CheckedBroker::receipt_of`]) and, only for a broker that may read it
//!   ([`CheckedBroker::reads_request_attempt`]), its attempt.
//! * A crash of a holding or waiting worker makes it idle at once: a crashed worker that has
//!   not restarted can do nothing an idle worker that does not act cannot. Idle workers do not
//!   crash (nothing to lose).
//! * `sometimes` witnesses are seen on transitions ([`Witness`]), outside the state.
//!
//! # Canonical form
//! After every transition ([`State::canonicalize`]): delayed records become eligible (the
//! untimed model lets time pass before any fetch, so `not_before_ms` values no step can tell
//! apart are all 0); lease ids and issuances are renumbered, order-preserving, to the smallest
//! values that keep every equality and order relation among the ids in the state and the ids
//! still to come; with symmetry on, workers are sorted. Renumbering keeps the sorted order of
//! every list, so action indices mean the same in a state and its canonical form.

use crate::broker::Broker;
use crate::broker::BrokerView;
use crate::check::checked::CheckedBroker;
use crate::check::config::Budgets;
use crate::inline::InlineVec;
use crate::oracle::{Issuance, Oracle};
use crate::types::{GroupIx, Lease, LeaseId, Seq};
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

/// How a worker or a request names a lease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LeaseRef {
    /// The oracle's name for the lease (which fetch issued it).
    pub issuance: Issuance,
    /// The broker's fencing token.
    pub lease_id: u32,
    /// The record's group.
    pub group: u8,
    /// The record's event.
    pub seq: u8,
    /// The delivery it was (0 where no step can read it, see [`LeaseRef::of`]).
    pub attempt: u8,
}

impl LeaseRef {
    /// The reference packed in two words (for fingerprints).
    #[inline]
    fn words(&self) -> (u64, u64) {
        (
            u64::from(self.issuance.0) | u64::from(self.lease_id) << 32,
            u64::from(self.group) | u64::from(self.seq) << 8 | u64::from(self.attempt) << 16,
        )
    }

    /// The reference to `lease`, issued as `issuance`; keeps the attempt only when
    /// `keep_attempt` (the broker may read it).
    pub fn of(issuance: Issuance, lease: &Lease, keep_attempt: bool) -> LeaseRef {
        LeaseRef {
            issuance,
            lease_id: u32::try_from(lease.lease_id.0).expect("lease ids fit the checker's bounds"),
            group: lease.group as u8,
            seq: u8::try_from(lease.seq).expect("seqs fit the checker's bounds"),
            attempt: if keep_attempt { lease.attempt as u8 } else { 0 },
        }
    }

    /// The lease as the worker sends it to `broker`.
    pub fn lease<B: CheckedBroker>(&self, broker: &B) -> Lease {
        let (group, seq) = (self.group as GroupIx, Seq::from(self.seq));
        Lease {
            lease_id: LeaseId(u64::from(self.lease_id)),
            group,
            seq,
            attempt: u32::from(self.attempt),
            deadline_ms: 0,
            receipt: broker.receipt_of(group, seq),
        }
    }
}

/// One worker, as the model sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Worker {
    /// Ready to fetch.
    #[default]
    Idle,
    /// Holds a lease; its handler has not run yet.
    Holding(LeaseRef),
    /// Sent a settle (or renew) and waits for the reply; the `u8` is the request's operation
    /// (an index into the model's table).
    Waiting(LeaseRef, u8),
}

/// A settle or renew request in flight. It names no worker: the reply goes to whichever worker
/// waits on this (issuance, op), and each issuance went to exactly one worker. So the state
/// stays a function of the workers' multiset (symmetry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Msg {
    /// The lease the request carries.
    pub lease: LeaseRef,
    /// The operation (index into the model's table).
    pub op: u8,
    /// The timed model's sender's clock, in units of the skew: −1 behind the broker's, 0 the
    /// broker's, +1 ahead (always 0 untimed).
    pub clock: i8,
}

/// Workers kept inline: [`crate::check::config::WORKER_COUNT_MAX`].
pub const WORKERS_INLINE: usize = 6;
/// Requests kept inline.
pub const IN_FLIGHT_INLINE: usize = 6;

/// The whole model state, over the broker under test (the reference [`Broker`] by default).
#[derive(Debug, PartialEq, Eq)]
pub struct State<B = Broker> {
    /// The broker under test (the state machine itself, not a copy).
    pub broker: B,
    /// The oracle's ghost bookkeeping (lean in the checker's states).
    pub oracle: Oracle,
    /// Worker `i`'s state (sorted when symmetry reduction is on).
    pub workers: InlineVec<Worker, WORKERS_INLINE>,
    /// Requests in flight: a multiset kept as a sorted vector.
    pub in_flight: InlineVec<Msg, IN_FLIGHT_INLINE>,
    /// Budgets used so far.
    pub used: Budgets,
}

/// Hashes the broker and the oracle as they hash themselves, and the workers, the requests
/// and the budgets packed two words per lease reference (fewer words, faster fingerprints).
impl Hash for LeaseRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (a, b) = self.words();
        state.write_u64(a);
        state.write_u64(b);
    }
}

impl Hash for Worker {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (a, b) = match self {
            Worker::Idle => (0, 0),
            Worker::Holding(lease) => lease.words(),
            Worker::Waiting(lease, op) => {
                let (a, b) = lease.words();
                (a, b | (u64::from(*op) + 1) << 32)
            }
        };
        let tag = match self {
            Worker::Idle => 0,
            Worker::Holding(_) => 1,
            Worker::Waiting(..) => 2,
        };
        state.write_u64(a);
        state.write_u64(b | tag << 48);
    }
}

impl Hash for Msg {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (a, b) = self.lease.words();
        state.write_u64(a);
        state.write_u64(b | u64::from(self.op) << 32 | u64::from(self.clock as u8) << 40);
    }
}

impl<B: Hash> State<B> {
    /// Hashes everything but the budgets used: under subsumption a state's fingerprint is
    /// this with its budgets' code in the top bits ([`crate::check::fingerprint::coded`]),
    /// or followed by [`Budgets::word`] where the budgets are too wide for a code
    /// ([`crate::check::fingerprint::Fingerprinter::core_of`]); without, the state's `Hash`.
    #[inline]
    pub fn hash_core<H: Hasher>(&self, state: &mut H) {
        self.broker.hash(state);
        self.oracle.hash(state);
        state.write_usize(self.workers.len());
        for worker in &self.workers {
            worker.hash(state);
        }
        state.write_usize(self.in_flight.len());
        for msg in &self.in_flight {
            msg.hash(state);
        }
    }
}

impl<B: Hash> Hash for State<B> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_core(state);
        state.write_u64(self.used.word());
    }
}

/// Copies the lists at once (their items are `Copy`): the search clones a state per
/// transition.
impl<B: Clone> Clone for State<B> {
    fn clone(&self) -> State<B> {
        State {
            broker: self.broker.clone(),
            oracle: self.oracle.clone(),
            workers: self.workers.clone(),
            in_flight: self.in_flight.clone(),
            used: self.used,
        }
    }

    fn clone_from(&mut self, source: &State<B>) {
        self.broker.clone_from(&source.broker);
        self.oracle.clone_from(&source.oracle);
        self.workers.clone_from(&source.workers);
        self.in_flight.clone_from(&source.in_flight);
        self.used = source.used;
    }
}

/// Ids gathered for a renumbering when they do not fit a 64-bit mask.
type Ids = SmallVec<[u32; 32]>;

/// The ids below 64 as a bit mask, and whether some id was 64 or more.
#[derive(Default)]
struct Mask {
    bits: u64,
    wide: bool,
}

impl Mask {
    #[inline]
    fn add(&mut self, id: u32) {
        if id < 64 {
            self.bits |= 1 << id;
        } else {
            self.wide = true;
        }
    }

    /// The number of ids in the mask below `id` (`id` < 64).
    #[inline]
    fn rank(&self, id: u32) -> u32 {
        (self.bits & ((1u64 << id) - 1)).count_ones()
    }
}

impl<B: CheckedBroker> State<B> {
    /// Adds a request to the in-flight multiset, keeping it sorted.
    pub fn send(&mut self, msg: Msg) {
        let position = self.in_flight.partition_point(|m| *m <= msg);
        self.in_flight.insert(position, msg);
    }

    /// The index of the worker waiting on `msg`'s (issuance, op), if any.
    pub fn waiting_on(&self, msg: &Msg) -> Option<usize> {
        self.workers.iter().position(|w| {
            matches!(w, Worker::Waiting(lease, op) if lease.issuance == msg.lease.issuance && *op == msg.op)
        })
    }

    /// Calls `f` with every lease reference the workers and the requests hold (plain
    /// loops: an iterator chain costs a branch per item here, in the search's inner loop).
    #[inline]
    fn for_each_ref_mut(&mut self, mut f: impl FnMut(&mut LeaseRef)) {
        for worker in self.workers.iter_mut() {
            if let Worker::Holding(lease) | Worker::Waiting(lease, _) = worker {
                f(lease);
            }
        }
        for msg in self.in_flight.iter_mut() {
            f(&mut msg.lease);
        }
    }

    /// [`State::for_each_ref_mut`], reading.
    #[inline]
    fn for_each_ref(&self, mut f: impl FnMut(&LeaseRef)) {
        for worker in self.workers.iter() {
            if let Worker::Holding(lease) | Worker::Waiting(lease, _) = worker {
                f(lease);
            }
        }
        for msg in self.in_flight.iter() {
            f(&msg.lease);
        }
    }

    /// Puts the state in its canonical form (see the module documentation).
    /// `absolute_lease_ids`: the broker may still reset its lease-id counter (a volatile
    /// counter and a broker restart left in the budget), so the ids' distances from 1 matter
    /// and they are kept as they are (as they are too for a broker that does not rename its
    /// ids, see [`CheckedBroker::lease_id_counter`]). `symmetry`: sort the workers.
    ///
    /// One pass gathers the ids below 64 as bit masks (the search's configurations stay
    /// there; wider ids take sorted lists); a second pass renames, only when
    /// some id set is not already dense.
    ///
    /// `fixed_workers`: the first workers keep their places (the timed model's skewed
    /// clocks name them); symmetry sorts the others. `order_groups`: also order the groups
    /// (`State::order_groups`; the model asks it only of a broker that exchanges them).
    pub fn canonicalize(
        &mut self,
        absolute_lease_ids: bool,
        symmetry: bool,
        order_groups: bool,
        fixed_workers: usize,
    ) {
        self.broker.release_delays(0);
        let (absolute_lease_ids, counter) = match self.broker.lease_id_counter() {
            Some(counter) => (
                absolute_lease_ids,
                u32::try_from(counter.0).expect("lease ids fit the checker's bounds"),
            ),
            None => (true, 0),
        };
        let mut lease_ids = Mask::default();
        let mut issuances = Mask::default();
        if !absolute_lease_ids {
            self.broker.for_each_lease_id(|id| {
                if id.0 < u64::from(counter) {
                    lease_ids.add(id.0 as u32);
                }
            });
        }
        self.oracle.for_each_issuance(|i| issuances.add(i.0));
        self.for_each_ref(|lease| {
            if !absolute_lease_ids && lease.lease_id < counter {
                lease_ids.add(lease.lease_id);
            }
            issuances.add(lease.issuance.0);
        });
        if lease_ids.wide || issuances.wide {
            self.renumber_sorted(absolute_lease_ids, counter);
        } else {
            // Dense, so nothing to rename (the common case): lease ids 1..counter all
            // present (they start at 1: bits 1..counter set); issuances 0..=next all present
            // (they start at 0, the next one is the largest: every bit below the highest
            // set). Compared without counting bits.
            let rename_leases =
                !absolute_lease_ids && (counter >= 64 || lease_ids.bits != (1u64 << counter) - 2);
            let rename_issuances = issuances.bits & issuances.bits.wrapping_add(1) != 0;
            if rename_leases {
                let below = lease_ids.bits.count_ones();
                let rename = |id: u32| -> u32 {
                    if id < counter {
                        lease_ids.rank(id) + 1
                    } else {
                        below + 1 + (id - counter)
                    }
                };
                self.broker
                    .rename_lease_ids(|id| LeaseId(u64::from(rename(id.0 as u32))));
                self.for_each_ref_mut(|lease| lease.lease_id = rename(lease.lease_id));
            }
            if rename_issuances {
                self.oracle
                    .rename_issuances(|i| Issuance(issuances.rank(i.0)));
                self.for_each_ref_mut(|lease| {
                    lease.issuance = Issuance(issuances.rank(lease.issuance.0));
                });
            }
        }
        if order_groups {
            self.order_groups();
        }
        if symmetry {
            let fixed = fixed_workers.min(self.workers.len());
            self.workers[fixed..].sort_unstable();
        }
    }

    /// Symmetry over groups: every group is configured alike and reached by the same
    /// actions, so a state and the state with two groups' histories exchanged behave alike.
    /// The groups are put in the order of a key computed from each group's own part of the
    /// state (its ghost records, what the broker shows of its records and frontier, and the
    /// leases of it that workers hold or requests carry), naming no group index, so that both
    /// states become the same one. Groups with equal keys keep their order (a state may then
    /// keep a twin: fewer states merged, never a wrong one). Only where the broker exchanges
    /// groups ([`CheckedBroker::swap_groups`]).
    fn order_groups(&mut self) {
        let count = self.oracle.config().group_count;
        if count < 2 {
            return;
        }
        let mut keys: SmallVec<[u64; 4]> = (0..count).map(|g| self.group_key(g)).collect();
        let mut exchanged = false;
        'sort: for i in 1..count {
            let mut j = i;
            while j > 0 && keys[j] < keys[j - 1] {
                if !self.broker.swap_groups(j - 1, j) {
                    break 'sort;
                }
                self.oracle.swap_groups(j - 1, j);
                let (a, b) = ((j - 1) as u32, j as u32);
                self.for_each_ref_mut(|lease| {
                    lease.group = crate::types::exchanged(u32::from(lease.group), a, b) as u8;
                });
                keys.swap(j - 1, j);
                exchanged = true;
                j -= 1;
            }
        }
        if exchanged {
            self.in_flight.sort_unstable();
        }
    }

    /// [`State::order_groups`]'s key of `group`: a function of the group's own part of the
    /// state that names no group index (the workers' and requests' leases summed, so that
    /// their order does not count).
    fn group_key(&self, group: GroupIx) -> u64 {
        fn mix(mut x: u64) -> u64 {
            // splitmix64's finaliser.
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        }
        let mut key = mix(self.oracle.group_key(group));
        key = mix(key ^ u64::from(BrokerView::frontier(&self.broker, group)));
        for seq in 1..=BrokerView::event_count(&self.broker) {
            key = mix(key ^ BrokerView::status_kind(&self.broker, group, seq) as u64);
        }
        let of = |lease: &LeaseRef, tag: u64| {
            mix(u64::from(lease.issuance.0)
                | u64::from(lease.lease_id) << 16
                | u64::from(lease.seq) << 40
                | u64::from(lease.attempt) << 48
                | tag << 56)
        };
        let mut refs = 0u64;
        for worker in self.workers.iter() {
            match worker {
                Worker::Holding(lease) if lease.group as GroupIx == group => {
                    refs = refs.wrapping_add(of(lease, 1));
                }
                Worker::Waiting(lease, op) if lease.group as GroupIx == group => {
                    refs = refs.wrapping_add(of(lease, 2 + u64::from(*op)));
                }
                _ => {}
            }
        }
        for msg in self.in_flight.iter() {
            if msg.lease.group as GroupIx == group {
                let clock = u64::from(msg.clock as u8);
                refs = refs.wrapping_add(mix(of(&msg.lease, 64 + u64::from(msg.op)) ^ clock));
            }
        }
        mix(key ^ refs)
    }

    /// [`State::canonicalize`]'s renumbering for ids that do not fit a mask: sorted lists.
    fn renumber_sorted(&mut self, absolute_lease_ids: bool, counter: u32) {
        if !absolute_lease_ids {
            let mut ids = Ids::new();
            self.broker.for_each_lease_id(|id| {
                if id.0 < u64::from(counter) {
                    ids.push(id.0 as u32);
                }
            });
            self.for_each_ref(|r| {
                if r.lease_id < counter {
                    ids.push(r.lease_id);
                }
            });
            ids.sort_unstable();
            ids.dedup();
            let below = ids.len() as u32;
            let rename = |id: u32| {
                if id < counter {
                    ids.binary_search(&id).expect("gathered") as u32 + 1
                } else {
                    below + 1 + (id - counter)
                }
            };
            self.broker
                .rename_lease_ids(|id| LeaseId(u64::from(rename(id.0 as u32))));
            self.for_each_ref_mut(|lease| lease.lease_id = rename(lease.lease_id));
        }
        let mut ids = Ids::new();
        self.oracle.for_each_issuance(|i| ids.push(i.0));
        self.for_each_ref(|r| ids.push(r.issuance.0));
        ids.sort_unstable();
        ids.dedup();
        let rename = |id: u32| ids.binary_search(&id).expect("gathered") as u32;
        self.oracle.rename_issuances(|i| Issuance(rename(i.0)));
        self.for_each_ref_mut(|lease| lease.issuance = Issuance(rename(lease.issuance.0)));
    }
}

impl<B: CheckedBroker> stateright::Representative for State<B> {
    /// Groups ordered and workers sorted: the canonical form of the state's symmetry class
    /// (the checker's states are already renumbered).
    fn representative(&self) -> Self {
        let mut state = self.clone();
        state.order_groups();
        if state.broker.workers_interchangeable() {
            state.workers.sort_unstable();
        }
        state
    }
}

/// One transition of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// An idle worker fetches from a group (one lease, lowest available seq).
    Fetch {
        /// The worker.
        worker: u8,
        /// The group.
        group: u8,
    },
    /// A holding worker runs its handler with an outcome (index into the model's outcomes);
    /// the runtime sends the settle `runtime::decide` gives, if any.
    Handle {
        /// The worker.
        worker: u8,
        /// The outcome's index.
        outcome: u8,
    },
    /// A holding worker sends a renew for its lease.
    Renew {
        /// The worker.
        worker: u8,
    },
    /// The broker applies an in-flight request; the reply reaches its sender or is lost.
    Deliver {
        /// Index into the in-flight multiset.
        message: u8,
        /// The reply is lost (the broker applied the request; the sender sees `ambiguous`).
        reply_lost: bool,
    },
    /// The lease on (group, seq) runs out.
    Expire {
        /// The group.
        group: u8,
        /// The event.
        seq: u8,
    },
    /// A holding or waiting worker crashes and restarts, idle; its requests stay in flight.
    Crash {
        /// The worker.
        worker: u8,
    },
    /// The network drops a request; the sender sees `ambiguous`.
    Drop {
        /// Index into the in-flight multiset.
        message: u8,
    },
    /// The network duplicates a request.
    Duplicate {
        /// Index into the in-flight multiset.
        message: u8,
    },
    /// The network duplicates a request and the broker applies one copy at once, as
    /// [`Action::Deliver`] (see [`crate::check::LeaseModel::with_late_duplicates`]); a
    /// counterexample shows it as the duplicate, then the delivery.
    DuplicateDelivered {
        /// Index into the in-flight multiset.
        message: u8,
        /// The reply is lost; the sender sees `ambiguous`.
        reply_lost: bool,
    },
    /// The broker restarts: durable state survives.
    BrokerRestart,
    /// The timed model's clock advances by one tick.
    Tick,
}

/// What a transition showed, for the `sometimes` properties (the low bits of a [`Witness`];
/// the coverage cells take the bits above, see [`crate::check::coverage`]).
pub mod witness {
    use super::Witness;

    /// A stale settle reached the broker and was refused.
    pub const STALE_REFUSED: Witness = 1;
    /// A fetch delivered an event again.
    pub const REDELIVERED: Witness = 2;
    /// A record was dead-lettered.
    pub const DEAD_LETTERED: Witness = 4;
    /// A worker saw an ambiguous settle result (lost reply or dropped request).
    pub const AMBIGUOUS: Witness = 8;
    /// Every bit.
    pub const ALL: Witness = 15;
}

/// Witness bits of one transition: the `sometimes` properties ([`witness`]) and the coverage
/// cells ([`crate::check::coverage::Cell`]).
pub type Witness = u64;
