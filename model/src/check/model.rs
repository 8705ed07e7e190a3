//! `LeaseModel`: the stateright [`Model`] over the broker and the oracle.

use crate::broker::{Broker, BrokerConfig, SettleRequest};
use crate::check::config::CheckConfig;
use crate::check::state::{seen, Action, Msg, State, Worker};
use crate::invariant::Invariant;
use crate::oracle::{Oracle, OracleConfig};
use crate::runtime::{classify, decide, ErrorAction, Outcome};
use crate::types::{Lease, Ms, Reason, Record, SettleError, SettleOp};
use stateright::{Model, Property};
use std::sync::atomic::{AtomicU16, Ordering};

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
pub struct LeaseModel {
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
    properties: Vec<Property<LeaseModel>>,
    /// Bit `i`: property `i` of [`Model::properties`] has had its discovery (a violating state
    /// for an `always` property, a satisfying one for a `sometimes` property). See
    /// [`LeaseModel::discovery`].
    discovered: AtomicU16,
}

impl LeaseModel {
    /// A model of `config` (validate it first with [`CheckConfig::validate`]).
    pub fn new(config: CheckConfig) -> LeaseModel {
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
        LeaseModel {
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
    pub fn with_symmetry(mut self, symmetry: bool) -> LeaseModel {
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
    /// last; counterexamples come from [`crate::check::shortest_counterexamples`] anyway.
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

    /// Whether the lease on (group, seq) can still run out: it is armed and has not lapsed.
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
        if state.oracle.violated(Invariant::I5) {
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
                let leases = state
                    .broker
                    .fetch(group as usize, 1, MODEL_NOW_MS, None)
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
                if self.config.lazy_expiry() {
                    state.broker.lapse(group as usize, seq, MODEL_NOW_MS);
                } else {
                    state.broker.expire(group as usize, seq, 0);
                }
                state.oracle.expired(group as usize, seq);
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

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.init_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.oracle.violated(Invariant::I5) {
            // The one violation that lets the space grow without bound (deliveries past
            // max_attempts): such a state is a leaf, so mutants stay finite. Other violating
            // states are explored further, so one run reports every invariant the
            // configuration can break (nack-on-ambiguous's I4 only shows after a broker
            // restart recomputes the frontier over the un-acked event).
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

fn properties() -> Vec<Property<LeaseModel>> {
    vec![
        Property::always(SAFETY[0].1, |m: &LeaseModel, s: &State| {
            !m.discovery(0, || s.oracle.violated(Invariant::I1))
        }),
        Property::always(SAFETY[1].1, |m: &LeaseModel, s: &State| {
            !m.discovery(1, || s.oracle.violated(Invariant::I2))
        }),
        Property::always(SAFETY[2].1, |m: &LeaseModel, s: &State| {
            !m.discovery(2, || s.oracle.violated(Invariant::I3))
        }),
        Property::always(SAFETY[3].1, |m: &LeaseModel, s: &State| {
            !m.discovery(3, || s.oracle.violated(Invariant::I4))
        }),
        Property::always(SAFETY[4].1, |m: &LeaseModel, s: &State| {
            !m.discovery(4, || s.oracle.violated(Invariant::I5))
        }),
        Property::always(SAFETY[5].1, |m: &LeaseModel, s: &State| {
            !m.discovery(5, || !m.settled_if_terminal(s))
        }),
        Property::sometimes(REACHABILITY[0], |m: &LeaseModel, s: &State| {
            m.discovery(6, || s.seen & seen::STALE_REJECTED != 0)
        }),
        Property::sometimes(REACHABILITY[1], |m: &LeaseModel, s: &State| {
            m.discovery(7, || {
                (0..m.config.group_count)
                    .any(|g| (1..=s.broker.event_count()).any(|q| s.oracle.deliveries(g, q) > 1))
            })
        }),
        Property::sometimes(REACHABILITY[2], |m: &LeaseModel, s: &State| {
            m.discovery(8, || {
                (0..m.config.group_count).any(|g| {
                    s.broker
                        .records(g)
                        .iter()
                        .any(|r| matches!(r, Record::DeadLettered { .. }))
                })
            })
        }),
        Property::sometimes(REACHABILITY[3], |m: &LeaseModel, s: &State| {
            m.discovery(9, || s.seen & seen::AMBIGUOUS != 0)
        }),
    ]
}
