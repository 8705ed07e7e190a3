//! The model checker's state as it was before the history-free reduction, kept as a test
//! oracle for the differential test (`check_reduction.rs`): the oracle's full log (with its
//! step counter) in the state, `seen` bits, full `Lease` copies in workers and requests, a
//! `Crashed` worker state and crashes of idle workers. Copied from `model/src/check/state.rs`,
//! `model.rs` and `shortest.rs` at 79bb3d8, with one change: a state that breaks any safety
//! invariant is a leaf (not only I5), as in the reduced model, so that both explore the same
//! behaviours and their verdicts are comparable invariant by invariant.
#![allow(dead_code)]
use leasehold_model::broker::{Broker, BrokerConfig, SettleRequest};
use leasehold_model::check::config::{Budgets, CheckConfig};
use leasehold_model::invariant::Invariant;
use leasehold_model::oracle::{Issuance, Oracle, OracleConfig};
use leasehold_model::runtime::{classify, decide, ErrorAction, Outcome};
use leasehold_model::types::{Lease, Ms, Reason, Record, Seq, SettleError, SettleOp};
use stateright::{Model, Property};
use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU16, Ordering};

/// One worker, as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Worker {
    /// Ready to fetch.
    Idle,
    /// Holds a lease; its handler has not run yet.
    Holding {
        /// The oracle's name for the lease.
        issuance: Issuance,
        /// The worker's copy of the lease.
        lease: Lease,
    },
    /// Sent a settle (or renew) for its lease and waits for the reply.
    Waiting {
        /// The oracle's name for the lease.
        issuance: Issuance,
        /// The worker's copy of the lease.
        lease: Lease,
        /// The request it waits on (index into the model's table of operations).
        op: u8,
    },
    /// Crashed; it lost everything but its in-flight requests, which live on in the network.
    Crashed,
}

/// A settle or renew request in flight. It names no worker: the reply goes to whichever worker
/// waits on this (issuance, op), and each issuance was handed to exactly one worker. So the
/// state stays a function of the workers' multiset (see [`State`]'s symmetry).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Msg {
    /// The oracle's name for the lease the request carries.
    pub issuance: Issuance,
    /// The lease as the worker sent it.
    pub lease: Lease,
    /// Index into the model's table of operations.
    pub op: u8,
}

/// Bits of [`State::seen`]: things that happened on the way to a state (for the `sometimes`
/// properties).
pub mod seen {
    /// A stale settle reached the broker and was rejected.
    pub const STALE_REJECTED: u8 = 1;
    /// A worker saw an ambiguous settle result (lost reply or dropped request).
    pub const AMBIGUOUS: u8 = 2;
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The broker (the model crate's state machine, not a copy).
    pub broker: Broker,
    /// The oracle's ghost bookkeeping and the violations found.
    pub oracle: Oracle,
    /// Worker `i`'s state (sorted in the symmetry representative).
    pub workers: Vec<Worker>,
    /// Requests in flight: a multiset kept as a sorted vector.
    pub in_flight: Vec<Msg>,
    /// Budgets used so far.
    pub used: Budgets,
    /// [`seen`] bits.
    pub seen: u8,
}

impl State {
    /// Adds a request to the in-flight multiset, keeping it sorted.
    pub fn send(&mut self, msg: Msg) {
        let position = self.in_flight.partition_point(|m| *m <= msg);
        self.in_flight.insert(position, msg);
    }

    /// The index of the worker waiting on (issuance, op), if any.
    pub fn waiting_on(&self, issuance: Issuance, op: u8) -> Option<usize> {
        self.workers.iter().position(|w| {
            matches!(w, Worker::Waiting { issuance: i, op: o, .. } if *i == issuance && *o == op)
        })
    }

    /// Puts the state in the canonical form of its symmetry class. Workers are
    /// interchangeable and nothing else in the state names one (requests name their issuance;
    /// the broker and the oracle name leases), so two states are equal up to a renaming of
    /// workers exactly when their sorted worker vectors (and everything else) are equal.
    pub fn canonicalize(&mut self) {
        // (`rabbitmq-channel`'s broker keeps a channel per worker: its workers stay put.)
        if !self.broker.variant().channel_scoped() {
            self.workers.sort_unstable();
        }
    }
}

impl stateright::Representative for State {
    /// See [`State::canonicalize`].
    fn representative(&self) -> Self {
        let mut state = self.clone();
        state.canonicalize();
        state
    }
}

/// One transition of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// The broker expires the lease on (group, seq).
    Expire {
        /// The group.
        group: u8,
        /// The event.
        seq: Seq,
    },
    /// A worker crashes.
    Crash {
        /// The worker.
        worker: u8,
    },
    /// A crashed worker restarts, idle.
    Restart {
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
    /// The broker restarts: durable state survives.
    BrokerRestart,
}
/// The lease duration the model gives the broker: the untimed model never lets it run out
/// (expiry is the `Expire` action), and the workers' clocks read 0, so from a worker's view
/// its lease is always valid — which covers every clock skew.
pub const MODEL_LEASE_MS: Ms = 1 << 40;

/// The broker's clock in the model: a constant, after the workers' clocks (which read 0). A
/// lease the model expires gets its deadline set to this time; every other lease ends long
/// after it.
pub const MODEL_NOW_MS: Ms = 1 << 20;

/// The handler outcomes a `Handle` action chooses among: success and a failure are enough to
/// reach every settle the runtime can send without handle calls (ack, nack, nothing).
fn outcomes() -> Vec<Outcome> {
    vec![
        Outcome::Ok,
        Outcome::Error {
            kind: Reason::from_static("HandlerError"),
            text: Reason::EMPTY,
        },
    ]
}

/// The model: a bounded configuration of one broker, its oracle and interchangeable workers.
pub struct ReferenceModel {
    config: CheckConfig,
    /// Every operation a request can carry; requests hold an index into this table.
    ops: Vec<SettleOp>,
    outcomes: Vec<Outcome>,
    /// The settle `runtime::decide` sends for each outcome (no handle calls: at most one).
    outcome_op: Vec<Option<u8>>,
    /// The nack the runtime sends when `classify` says so after a failed settle.
    nack_op: u8,
    renew_op: u8,
    /// Whether every successor is put in canonical form (symmetry reduction over workers).
    symmetry: bool,
    properties: Vec<Property<ReferenceModel>>,
    /// Bit `i`: property `i` of [`Model::properties`] has had its discovery (a violating state
    /// for an `always` property, a satisfying one for a `sometimes` property). See
    /// [`ReferenceModel::discovery`].
    discovered: AtomicU16,
}

impl ReferenceModel {
    /// A model of `config` (validate it first with [`CheckConfig::validate`]).
    pub fn new(config: CheckConfig) -> ReferenceModel {
        let outcomes = outcomes();
        let mut ops: Vec<SettleOp> = Vec::new();
        let intern = |op: SettleOp, ops: &mut Vec<SettleOp>| -> u8 {
            if let Some(index) = ops.iter().position(|o| *o == op) {
                return index as u8;
            }
            ops.push(op);
            (ops.len() - 1) as u8
        };
        let outcome_op = outcomes
            .iter()
            .map(|outcome| {
                let actions = decide(config.policy, &[], outcome);
                assert!(
                    actions.len() <= 1,
                    "without handle calls at most one settle"
                );
                actions.into_iter().next().map(|a| intern(a.op, &mut ops))
            })
            .collect();
        let nack_op = intern(
            SettleOp::Nack {
                delay_ms: 0,
                reason: None,
            },
            &mut ops,
        );
        let renew_op = intern(
            SettleOp::Renew {
                extend_ms: MODEL_LEASE_MS,
            },
            &mut ops,
        );
        ReferenceModel {
            config,
            ops,
            outcomes,
            outcome_op,
            nack_op,
            renew_op,
            symmetry: false,
            properties: properties(),
            discovered: AtomicU16::new(0),
        }
    }

    /// The same model with symmetry reduction over workers on or off. When on, every
    /// successor state is put in its canonical form (workers sorted, see
    /// [`State::canonicalize`]): the model becomes its own quotient by worker permutations,
    /// which works with every search (stateright's own symmetry option only works with its
    /// depth-first search) and costs no extra clone or fingerprint per state.
    pub fn with_symmetry(mut self, symmetry: bool) -> ReferenceModel {
        self.symmetry = symmetry;
        self
    }

    /// Whether symmetry reduction is on.
    pub fn symmetry(&self) -> bool {
        self.symmetry
    }

    /// Whether property `index` has a discovery at `state` that stateright should record:
    /// `found` (the state violates the `always` property or satisfies the `sometimes` one)
    /// and no discovery of that property was reported before by this model.
    ///
    /// stateright 0.31 evaluates every property at every state and, for each discovery,
    /// clones the whole path and inserts it into its map of discoveries, overwriting the
    /// previous one. A `sometimes` property that holds in most states (they are sticky: a
    /// redelivery stays a redelivery) cost a path clone and a map insert per state. Reporting
    /// only the first discovery leaves the set of discovered properties, which is all the
    /// verdicts read, unchanged: a property is discovered exactly when some explored state
    /// violates (satisfies) it. The path stateright keeps is the first one found instead of the
    /// last; counterexamples come from the breadth-first search below anyway.
    /// A model's checker runs once (stateright's `checker()` takes the model by value).
    /// `found` is only evaluated while the property has no discovery.
    fn discovery(&self, index: u16, found: impl FnOnce() -> bool) -> bool {
        let bit = 1 << index;
        self.discovered.load(Ordering::Relaxed) & bit == 0
            && found()
            && self.discovered.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// The configuration.
    pub fn config(&self) -> &CheckConfig {
        &self.config
    }

    /// The operation a request carries.
    pub fn op(&self, index: u8) -> &SettleOp {
        &self.ops[index as usize]
    }

    /// The handler outcome of a `Handle` action.
    pub fn outcome(&self, index: u8) -> &Outcome {
        &self.outcomes[index as usize]
    }

    /// The state every run starts from: the events published, nothing fetched.
    pub fn init_state(&self) -> State {
        let config = &self.config;
        let mut broker = Broker::new(BrokerConfig {
            group_count: config.group_count,
            lease_ms: MODEL_LEASE_MS,
            max_attempts: config.max_attempts,
            variant: config.variant,
        });
        let mut oracle = Oracle::new(OracleConfig::new(
            config.group_count,
            config.max_attempts,
            false,
        ));
        for _ in 0..config.event_count {
            broker.publish();
            oracle.published();
        }
        oracle.end_step(&broker);
        State {
            broker,
            oracle,
            workers: vec![Worker::Idle; config.worker_count],
            in_flight: Vec::new(),
            used: Default::default(),
            seen: 0,
        }
    }

    fn fetchable(state: &State, group: usize) -> bool {
        // Time may pass before a fetch: a delayed record (a nack's delay, a Redis entry that is
        // not idle yet) becomes eligible; a lapsed lease is expired by the fetch itself.
        let available = state
            .broker
            .records(group)
            .iter()
            .any(|r| matches!(r, Record::Available { .. }));
        available
            || state
                .broker
                .timers()
                .iter()
                .any(|t| t.group as usize == group && t.deadline_ms <= MODEL_NOW_MS)
    }

    /// Whether time can still reach a timer on (group, seq): one is pending and not due.
    fn expirable(state: &State, group: usize, seq: u32) -> bool {
        state
            .broker
            .timers()
            .iter()
            .any(|t| t.group as usize == group && t.seq == seq && t.deadline_ms > MODEL_NOW_MS)
    }

    /// Whether any action is enabled in `state` (a state with none is terminal). The same
    /// conditions as [`Model::actions`], without building the actions.
    pub fn has_action(&self, state: &State) -> bool {
        if state.oracle.any_violated() {
            return false;
        }
        let budgets = &self.config.budgets;
        let used = &state.used;
        if !state.in_flight.is_empty() || used.broker_restarts < budgets.broker_restarts {
            return true;
        }
        let mut idle = false;
        for worker in &state.workers {
            match worker {
                Worker::Holding { .. } | Worker::Crashed => return true,
                Worker::Idle => idle = true,
                Worker::Waiting { .. } => {}
            }
            if used.crashes < budgets.crashes {
                return true; // this worker is not crashed: it may crash
            }
        }
        (0..self.config.group_count).any(|group| {
            (idle && Self::fetchable(state, group))
                || (1..=state.broker.event_count()).any(|seq| Self::expirable(state, group, seq))
        })
    }

    /// I6 at a state: a terminal state (no action enabled) that broke no safety invariant has
    /// every event of every group settled and every frontier at the last event.
    pub fn settled_if_terminal(&self, state: &State) -> bool {
        if !state.oracle.violations().is_empty() || self.has_action(state) {
            return true;
        }
        let events = state.broker.event_count();
        state.broker.all_settled()
            && (0..self.config.group_count).all(|g| state.broker.frontier(g) == events)
    }

    /// The I6 violation detail for a terminal, unsettled state.
    pub fn unsettled_detail(&self, state: &State) -> String {
        for group in 0..self.config.group_count {
            for (index, record) in state.broker.records(group).iter().enumerate() {
                if !record.is_settled() {
                    return format!(
                        "no action is enabled and event {} of group {group} is still {:?}",
                        index + 1,
                        record.status()
                    );
                }
            }
            let frontier = state.broker.frontier(group);
            if frontier != state.broker.event_count() {
                return format!(
                    "no action is enabled and the frontier of group {group} is {frontier}"
                );
            }
        }
        "settled".to_string()
    }

    /// Whether `invariant` is violated at `state` (I6: terminal and unsettled).
    pub fn violates(&self, state: &State, invariant: Invariant) -> bool {
        match invariant {
            Invariant::I6 => !self.settled_if_terminal(state),
            other => state.oracle.violated(other),
        }
    }

    /// The worker waiting on (issuance, op), if any, gets `result` and acts on it.
    fn reply(&self, state: &mut State, msg: &Msg, result: Result<Option<Lease>, SettleError>) {
        let Some(worker) = state.waiting_on(msg.issuance, msg.op) else {
            return;
        };
        let next = match result {
            Ok(Some(renewed)) => Worker::Holding {
                issuance: msg.issuance,
                lease: renewed,
            },
            Ok(None) => Worker::Idle,
            Err(error) => {
                if matches!(error, SettleError::Ambiguous(_)) {
                    state.seen |= seen::AMBIGUOUS;
                }
                match classify(&error, self.config.variant) {
                    ErrorAction::Drop | ErrorAction::LeaveToExpire => Worker::Idle,
                    ErrorAction::Nack => {
                        state.send(Msg {
                            issuance: msg.issuance,
                            lease: msg.lease,
                            op: self.nack_op,
                        });
                        Worker::Waiting {
                            issuance: msg.issuance,
                            lease: msg.lease,
                            op: self.nack_op,
                        }
                    }
                }
            }
        };
        state.workers[worker] = next;
    }

    fn deliver(&self, state: &mut State, index: usize, reply_lost: bool) {
        let msg = state.in_flight.remove(index);
        let op = self.op(msg.op);
        let request = SettleRequest::new(&msg.lease, *op, 0);
        let result = state.broker.settle(&request, MODEL_NOW_MS);
        state
            .oracle
            .settled(msg.issuance, &msg.lease, op, result.is_ok(), MODEL_NOW_MS);
        if matches!(
            result,
            Err(SettleError::StaleLease | SettleError::ReceiptMismatch)
        ) {
            state.seen |= seen::STALE_REJECTED;
        }
        let result = if reply_lost {
            state.used.lost_replies += 1;
            Err(SettleError::Ambiguous("reply lost".into()))
        } else {
            result
        };
        self.reply(state, &msg, result);
    }

    fn apply(&self, state: &mut State, action: &Action) {
        match *action {
            Action::Fetch { worker, group } => {
                state.broker.release_delays(MODEL_NOW_MS);
                // The fetch applies due expiries first; doing it here shows the oracle which
                // records they changed.
                for expired in state.broker.expire_due(MODEL_NOW_MS) {
                    state.oracle.observe(expired.group, expired.seq);
                }
                // (On behalf of the worker: `rabbitmq-channel` keeps a channel per worker.)
                let leases = state
                    .broker
                    .fetch_one_for(worker as usize, group as usize, MODEL_NOW_MS)
                    .expect("a valid group and limit");
                // Under lazy expiry the fetch may only expire a lapsed lease (dead-lettering
                // it at max attempts) and find nothing to lease: the worker stays idle.
                if let Some(lease) = leases.into_iter().next() {
                    let issuance = state.oracle.fetched(&lease, MODEL_NOW_MS, MODEL_LEASE_MS);
                    state.workers[worker as usize] = Worker::Holding { issuance, lease };
                }
            }
            Action::Handle { worker, outcome } => {
                let Worker::Holding { issuance, lease } =
                    std::mem::replace(&mut state.workers[worker as usize], Worker::Idle)
                else {
                    unreachable!("enabled only for a holding worker")
                };
                let current = state
                    .oracle
                    .handler_started(issuance, lease.group, lease.seq);
                let success = self.outcome(outcome).is_success();
                state
                    .oracle
                    .handler_finished(lease.group, lease.seq, current, success);
                if let Some(op) = self.outcome_op[outcome as usize] {
                    let msg = Msg {
                        issuance,
                        lease,
                        op,
                    };
                    state.send(msg);
                    state.workers[worker as usize] = Worker::Waiting {
                        issuance,
                        lease,
                        op,
                    };
                }
            }
            Action::Renew { worker } => {
                let slot = &mut state.workers[worker as usize];
                let Worker::Holding { issuance, lease } = slot.clone() else {
                    unreachable!("enabled only for a holding worker")
                };
                *slot = Worker::Waiting {
                    issuance,
                    lease,
                    op: self.renew_op,
                };
                state.used.renews += 1;
                state.send(Msg {
                    issuance,
                    lease,
                    op: self.renew_op,
                });
            }
            Action::Deliver {
                message,
                reply_lost,
            } => self.deliver(state, message as usize, reply_lost),
            Action::Expire { group, seq } => {
                if state.broker.lapse(group as usize, seq, MODEL_NOW_MS) == Some(true) {
                    state.oracle.expired(group as usize, seq);
                }
            }
            Action::Crash { worker } => {
                state.workers[worker as usize] = Worker::Crashed;
                state.used.crashes += 1;
            }
            Action::Restart { worker } => state.workers[worker as usize] = Worker::Idle,
            Action::Drop { message } => {
                let msg = state.in_flight.remove(message as usize);
                state.used.drops += 1;
                self.reply(
                    state,
                    &msg,
                    Err(SettleError::Ambiguous("request dropped".into())),
                );
            }
            Action::Duplicate { message } => {
                let msg = state.in_flight[message as usize].clone();
                state.used.dups += 1;
                state.send(msg);
            }
            Action::BrokerRestart => {
                state.broker.restart();
                state.oracle.restarted();
                state.used.broker_restarts += 1;
            }
        }
    }

    fn message_actions(&self, state: &State, actions: &mut Vec<Action>) {
        let budgets = &self.config.budgets;
        let used = &state.used;
        for (index, msg) in state.in_flight.iter().enumerate() {
            if index > 0 && state.in_flight[index - 1] == *msg {
                continue; // identical requests: one representative action
            }
            let message = index as u8;
            actions.push(Action::Deliver {
                message,
                reply_lost: false,
            });
            if used.lost_replies < budgets.lost_replies
                && state.waiting_on(msg.issuance, msg.op).is_some()
            {
                actions.push(Action::Deliver {
                    message,
                    reply_lost: true,
                });
            }
            if used.drops < budgets.drops {
                actions.push(Action::Drop { message });
            }
            if used.dups < budgets.dups {
                actions.push(Action::Duplicate { message });
            }
        }
    }
}

impl Model for ReferenceModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.init_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.oracle.any_violated() {
            // A violating state is a leaf (the one change from the original, see the module
            // documentation).
            return;
        }
        let budgets = &self.config.budgets;
        let used = &state.used;
        for (index, worker) in state.workers.iter().enumerate() {
            let w = index as u8;
            match worker {
                Worker::Idle => {
                    for group in 0..self.config.group_count {
                        if Self::fetchable(state, group) {
                            actions.push(Action::Fetch {
                                worker: w,
                                group: group as u8,
                            });
                        }
                    }
                }
                Worker::Holding { .. } => {
                    for outcome in 0..self.outcomes.len() {
                        actions.push(Action::Handle {
                            worker: w,
                            outcome: outcome as u8,
                        });
                    }
                    if used.renews < budgets.renews {
                        actions.push(Action::Renew { worker: w });
                    }
                }
                Worker::Waiting { .. } => {}
                Worker::Crashed => actions.push(Action::Restart { worker: w }),
            }
            if used.crashes < budgets.crashes && *worker != Worker::Crashed {
                actions.push(Action::Crash { worker: w });
            }
        }
        self.message_actions(state, actions);
        for group in 0..self.config.group_count {
            for seq in 1..=state.broker.event_count() {
                if Self::expirable(state, group, seq) {
                    actions.push(Action::Expire {
                        group: group as u8,
                        seq,
                    });
                }
            }
        }
        if used.broker_restarts < budgets.broker_restarts {
            actions.push(Action::BrokerRestart);
        }
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        let mut next = state.clone();
        self.apply(&mut next, &action);
        next.oracle.end_step(&next.broker);
        if self.symmetry {
            next.canonicalize();
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.properties.clone()
    }
}

/// The names of the `always` properties, one per invariant the model checks.
pub const SAFETY: [(Invariant, &str); 6] = [
    (Invariant::I1, "I1 stale-never-counts"),
    (Invariant::I2, "I2 single-holder"),
    (Invariant::I3, "I3 no-lost-event"),
    (Invariant::I4, "I4 frontier-sound"),
    (Invariant::I5, "I5 attempts-bounded"),
    (Invariant::I6, "I6 eventually-settled"),
];

/// The `sometimes` properties: they prove the model is not vacuous.
pub const REACHABILITY: [&str; 4] = [
    "a stale settle is attempted and rejected",
    "an event is redelivered",
    "an event is dead-lettered",
    "a worker sees an ambiguous settle result",
];

fn properties() -> Vec<Property<ReferenceModel>> {
    vec![
        Property::always(SAFETY[0].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(0, || s.oracle.violated(Invariant::I1))
        }),
        Property::always(SAFETY[1].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(1, || s.oracle.violated(Invariant::I2))
        }),
        Property::always(SAFETY[2].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(2, || s.oracle.violated(Invariant::I3))
        }),
        Property::always(SAFETY[3].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(3, || s.oracle.violated(Invariant::I4))
        }),
        Property::always(SAFETY[4].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(4, || s.oracle.violated(Invariant::I5))
        }),
        Property::always(SAFETY[5].1, |m: &ReferenceModel, s: &State| {
            !m.discovery(5, || !m.settled_if_terminal(s))
        }),
        Property::sometimes(REACHABILITY[0], |m: &ReferenceModel, s: &State| {
            m.discovery(6, || s.seen & seen::STALE_REJECTED != 0)
        }),
        Property::sometimes(REACHABILITY[1], |m: &ReferenceModel, s: &State| {
            m.discovery(7, || {
                (0..m.config.group_count)
                    .any(|g| (1..=s.broker.event_count()).any(|q| s.oracle.deliveries(g, q) > 1))
            })
        }),
        Property::sometimes(REACHABILITY[2], |m: &ReferenceModel, s: &State| {
            m.discovery(8, || {
                (0..m.config.group_count).any(|g| {
                    s.broker
                        .records(g)
                        .iter()
                        .any(|r| matches!(r, Record::DeadLettered { .. }))
                })
            })
        }),
        Property::sometimes(REACHABILITY[3], |m: &ReferenceModel, s: &State| {
            m.discovery(9, || s.seen & seen::AMBIGUOUS != 0)
        }),
    ]
}
/// A path from the initial state to a state that violates `invariant`.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The violated invariant.
    pub invariant: Invariant,
    /// The actions, in order.
    pub actions: Vec<Action>,
    /// `states[0]` is the initial state, `states[i + 1]` the state after `actions[i]`.
    pub states: Vec<State>,
}

impl Counterexample {
    /// The number of actions.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the initial state already violates the invariant.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// What the search found.
#[derive(Clone, Debug)]
pub struct Search {
    /// One shortest counterexample per violated target, in the order of the targets.
    pub found: Vec<Counterexample>,
    /// States generated.
    pub states: usize,
    /// `Some(bound)` when the search stopped at `states_max` before finding every target.
    pub bounded: Option<usize>,
}

fn fingerprint(state: &State) -> u64 {
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// Finds a shortest path to a violation of each of `targets` (that is violated at all), by
/// breadth-first search without symmetry reduction, generating at most about `states_max`
/// states.
pub fn shortest_counterexamples(
    model: &ReferenceModel,
    targets: &[Invariant],
    states_max: usize,
) -> Search {
    // (parent node, action) per node; node 0 is the initial state.
    let mut nodes: Vec<(u32, Option<Action>)> = vec![(0, None)];
    let mut found: Vec<(Invariant, u32)> = Vec::new();
    let init = model.init_state();
    let mut level: Vec<(State, u32)> = vec![(init.clone(), 0)];
    let mut states = 1usize;
    let mut bounded = None;
    let mut pending: Vec<Invariant> = targets.to_vec();
    pending.retain(|&invariant| {
        if model.violates(&init, invariant) {
            found.push((invariant, 0));
            false
        } else {
            true
        }
    });
    let mut actions = Vec::new();
    'levels: while !pending.is_empty() && !level.is_empty() {
        let mut next_level = Vec::new();
        let mut seen = BTreeSet::new();
        for (state, node) in &level {
            model.actions(state, &mut actions);
            for action in actions.drain(..) {
                let Some(next) = model.next_state(state, action.clone()) else {
                    continue;
                };
                states += 1;
                if !seen.insert(fingerprint(&next)) {
                    continue;
                }
                nodes.push((*node, Some(action)));
                let id = (nodes.len() - 1) as u32;
                pending.retain(|&invariant| {
                    if model.violates(&next, invariant) {
                        found.push((invariant, id));
                        false
                    } else {
                        true
                    }
                });
                if pending.is_empty() {
                    break 'levels;
                }
                next_level.push((next, id));
                if states >= states_max {
                    bounded = Some(states_max);
                    break 'levels;
                }
            }
        }
        level = next_level;
    }
    let found = targets
        .iter()
        .filter_map(|t| found.iter().find(|(i, _)| i == t))
        .map(|&(invariant, id)| rebuild(model, &nodes, invariant, id))
        .collect();
    Search {
        found,
        states,
        bounded: if pending.is_empty() { None } else { bounded },
    }
}

fn rebuild(
    model: &ReferenceModel,
    nodes: &[(u32, Option<Action>)],
    invariant: Invariant,
    mut id: u32,
) -> Counterexample {
    let mut actions = Vec::new();
    while let (parent, Some(action)) = &nodes[id as usize] {
        actions.push(action.clone());
        id = *parent;
    }
    actions.reverse();
    let mut states = vec![model.init_state()];
    for action in &actions {
        let next = model
            .next_state(states.last().expect("non-empty"), action.clone())
            .expect("every enabled action has a successor");
        states.push(next);
    }
    Counterexample {
        invariant,
        actions,
        states,
    }
}
