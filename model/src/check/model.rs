//! `LeaseModel`: the transitions of a bounded configuration over a broker under test (the
//! reference one by default, any [`CheckedBroker`]) and the real oracle, the properties, and
//! the stateright [`Model`] (for the Explorer and for cross-checking the search against
//! stateright's).
//!
//! The model reads the broker only through [`CheckedBroker`]: its replies, its
//! [`crate::BrokerView`], its timers. The oracle judges the replies and the view, as in the
//! simulator.

use crate::broker::{Broker, BrokerConfig, SettleRequest, Timer};
use crate::check::checked::CheckedBroker;
use crate::check::config::{BudgetCodes, CheckConfig, Outcomes, Renews, Time};
use crate::check::coverage::Cell;
use crate::check::state::{witness, Action, LeaseRef, Msg, State, Witness, Worker};
use crate::inline::InlineVec;
use crate::invariant::Invariant;
use crate::oracle::{Oracle, OracleConfig};
use crate::runtime::{classify, decide, ErrorAction, Outcome};
use crate::types::{GroupIx, Ms, Reason, Seq, SettleError, SettleOp, Status};
use crate::variant::Fence;
use smallvec::SmallVec;
use stateright::{Model, Property};
use std::marker::PhantomData;

/// Up to this many records (events × groups), the model's oracle compares every record with
/// the broker after every step ([`OracleConfig::compare_every_record`]); beyond, the records
/// a step named.
pub const COMPARE_EVERY_RECORD_MAX: usize = 16;

/// The lease duration the model gives the broker: the untimed model never lets it run out
/// (expiry is the `Expire` action), and the workers' clocks read 0, so from a worker's view
/// its lease is always valid. (Every order of an expiry against the other steps is explored; the
/// broker's deadline arithmetic and a skewed clock's comparison with it are not: see
/// [`crate::check::coverage`].)
pub const MODEL_LEASE_MS: Ms = 1 << 40;

/// The broker's clock in the model: a constant, after the workers' clocks (which read 0). A
/// lease the model lets lapse gets its deadline set to this time; every other lease ends long
/// after it.
pub const MODEL_NOW_MS: Ms = 1 << 20;

/// The timed model's clock (`--time ticks`), derived from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Milliseconds per tick.
    pub tick_ms: Ms,
    /// A lease's duration (and a renew's extension), in ms.
    pub lease_ms: Ms,
    /// How far worker A's clock runs behind and worker B's ahead, in ms.
    pub skew_ms: Ms,
    /// The oldest time the state keeps: a time further in the past is kept as this one (see
    /// [`CheckedBroker::shift_clock`]). Below every worker's clock and every deadline a
    /// present step can compare it with.
    pub floor_ms: Ms,
}

impl Clock {
    /// The clock of `time`, `None` untimed.
    pub fn of(time: Time) -> Option<Clock> {
        match time {
            Time::Untimed => None,
            Time::Ticks {
                tick_ms,
                lease_ticks,
                skew_ticks,
            } => {
                let past = (u64::from(lease_ticks) + u64::from(skew_ticks) + 2) * tick_ms;
                Some(Clock {
                    tick_ms,
                    lease_ms: u64::from(lease_ticks) * tick_ms,
                    skew_ms: u64::from(skew_ticks) * tick_ms,
                    floor_ms: MODEL_NOW_MS.saturating_sub(past),
                })
            }
        }
    }

    /// The clock a request of a sender with `clock` (−1, 0, +1: see [`Msg::clock`]) reports.
    pub fn worker_clock_ms(&self, clock: i8) -> Ms {
        match clock {
            -1 => MODEL_NOW_MS - self.skew_ms,
            1 => MODEL_NOW_MS + self.skew_ms,
            _ => MODEL_NOW_MS,
        }
    }
}

/// The actions of one state, kept inline.
pub type Actions = SmallVec<[Action; 48]>;

/// The invariants the model checks as safety properties (I6 is liveness, see
/// [`LeaseModel::settled`]).
pub const SAFETY: [Invariant; 5] = [
    Invariant::I1,
    Invariant::I2,
    Invariant::I3,
    Invariant::I4,
    Invariant::I5,
];

/// The bits of every invariant in [`SAFETY`].
pub const ALL_SAFETY_BITS: u8 = 0b1_1111;

/// The `sometimes` properties, by witness bit: they show the model is not vacuous.
pub const SOMETIMES: [(Witness, &str); 4] = [
    (
        witness::STALE_REFUSED,
        "a stale settle is attempted and rejected",
    ),
    (witness::REDELIVERED, "an event is redelivered"),
    (witness::DEAD_LETTERED, "an event is dead-lettered"),
    (
        witness::AMBIGUOUS,
        "a worker sees an ambiguous settle result",
    ),
];

/// The handler outcomes a `Handle` action chooses among ([`Outcomes`]): by default success and
/// a failure, which reach every settle `nack_on_error` and `ack_always` send without handle
/// calls (ack, nack, nothing); with [`Outcomes::All`] the handler's own verdicts too, less
/// those the policy turns into a settle (and a handler success) an earlier outcome gives.
fn outcomes(config: &CheckConfig) -> Vec<Outcome> {
    let plain = [
        Outcome::Ok,
        Outcome::Error {
            kind: Reason::from_static("HandlerError"),
            text: Reason::EMPTY,
        },
    ];
    if config.outcomes == Outcomes::Plain {
        return plain.to_vec();
    }
    let verdicts = [
        Outcome::Ack,
        Outcome::Nack(Reason::EMPTY),
        Outcome::Reject(Reason::from_static("unprocessable")),
    ];
    let mut kept: Vec<Outcome> = Vec::new();
    for outcome in plain.into_iter().chain(verdicts) {
        let effect = |o: &Outcome| (decide(config.policy, &[], o), o.is_success());
        if !kept.iter().any(|k| effect(k) == effect(&outcome)) {
            kept.push(outcome);
        }
    }
    kept
}

/// For each of `outcomes`, the handler-outcome cells it stands for: every configured outcome
/// whose effect (the settle the policy sends, and whether it counts as success) is the same.
fn outcome_cells(config: &CheckConfig, outcomes: &[Outcome]) -> Vec<Witness> {
    let mut configured = vec![
        (Outcome::Ok, Cell::HandlerOk),
        (
            Outcome::Error {
                kind: Reason::from_static("HandlerError"),
                text: Reason::EMPTY,
            },
            Cell::HandlerError,
        ),
    ];
    if config.outcomes == Outcomes::All {
        configured.extend([
            (Outcome::Ack, Cell::HandlerAck),
            (Outcome::Nack(Reason::EMPTY), Cell::HandlerNack),
            (
                Outcome::Reject(Reason::from_static("unprocessable")),
                Cell::HandlerReject,
            ),
        ]);
    }
    let effect = |o: &Outcome| (decide(config.policy, &[], o), o.is_success());
    outcomes
        .iter()
        .map(|kept| {
            configured
                .iter()
                .filter(|(outcome, _)| effect(outcome) == effect(kept))
                .fold(0, |bits, (_, cell)| bits | cell.bit())
        })
        .collect()
}

/// The lease duration a model of `config` asks for: untimed, one that never runs out by itself;
/// timed, `lease_ticks` ticks.
pub fn lease_ms(config: &CheckConfig) -> Ms {
    Clock::of(config.time).map_or(MODEL_LEASE_MS, |clock| clock.lease_ms)
}

/// The broker configuration of a model of `config` (untimed, its leases never run out by
/// themselves).
pub fn broker_config(config: &CheckConfig) -> BrokerConfig {
    BrokerConfig {
        group_count: config.group_count,
        lease_ms: lease_ms(config),
        max_attempts: config.max_attempts,
        variant: config.variant,
    }
}

/// The model: a bounded configuration of one broker, its oracle and interchangeable workers.
/// `B` is the broker under test: leasehold's reference [`Broker`] unless a
/// [`CheckedBroker`] of one's own is named ([`LeaseModel::for_broker`]).
#[derive(Debug)]
pub struct LeaseModel<B = Broker> {
    config: CheckConfig,
    /// Every operation a request can carry; requests hold an index into this table.
    ops: Vec<SettleOp>,
    outcomes: Vec<Outcome>,
    /// The settle `runtime::decide` sends for each outcome (no handle calls: at most one).
    outcome_op: Vec<Option<u8>>,
    /// The handler-outcome coverage cells each outcome stands for (an outcome stands for the
    /// configured outcomes with the same effect).
    outcome_cells: Vec<Witness>,
    /// The nack the runtime sends when `classify` says so after a failed settle.
    nack_op: u8,
    renew_op: u8,
    /// Whether the broker can read a request's attempt
    /// ([`CheckedBroker::reads_request_attempt`]).
    keep_attempt: bool,
    /// Whether the broker's lease-id counter survives a restart
    /// ([`CheckedBroker::lease_ids_survive_restart`]).
    lease_ids_durable: bool,
    /// Whether every successor's workers are sorted (symmetry reduction).
    symmetry: bool,
    /// Whether [`LeaseModel::actions`] offers a persistent subset of the enabled actions
    /// where one exists (partial-order reduction, see [`LeaseModel::with_partial_order`]).
    partial_order: bool,
    /// Whether the search skips a state that a visited one with no more budget used
    /// subsumes ([`LeaseModel::with_subsumption`]).
    subsumption: bool,
    /// See [`LeaseModel::budget_codes`].
    budget_codes: Option<BudgetCodes>,
    /// Whether a duplicate is taken at its first delivery
    /// ([`LeaseModel::with_late_duplicates`]).
    late_duplicates: bool,
    /// Whether the broker names no worker (else symmetry stays off:
    /// [`CheckedBroker::workers_interchangeable`]).
    interchangeable: bool,
    /// Whether symmetry also orders the groups: several groups, and a broker that exchanges
    /// them ([`CheckedBroker::swap_groups`], asked once of a fresh broker).
    groups_interchangeable: bool,
    /// Bits (`1 << invariant as u8`) of the invariants whose violation makes a state a leaf.
    leaves: u8,
    /// The timed model's clock (`None`: untimed).
    clock: Option<Clock>,
    /// The workers whose clocks are skewed (A and B, timed with a skew): symmetry never moves
    /// them.
    fixed_workers: usize,
    broker: PhantomData<fn() -> B>,
}

impl<B> Clone for LeaseModel<B> {
    fn clone(&self) -> LeaseModel<B> {
        LeaseModel {
            config: self.config.clone(),
            ops: self.ops.clone(),
            outcomes: self.outcomes.clone(),
            outcome_op: self.outcome_op.clone(),
            outcome_cells: self.outcome_cells.clone(),
            nack_op: self.nack_op,
            renew_op: self.renew_op,
            keep_attempt: self.keep_attempt,
            lease_ids_durable: self.lease_ids_durable,
            symmetry: self.symmetry,
            partial_order: self.partial_order,
            subsumption: self.subsumption,
            budget_codes: self.budget_codes,
            late_duplicates: self.late_duplicates,
            interchangeable: self.interchangeable,
            groups_interchangeable: self.groups_interchangeable,
            leaves: self.leaves,
            clock: self.clock,
            fixed_workers: self.fixed_workers,
            broker: PhantomData,
        }
    }
}

impl LeaseModel<Broker> {
    /// A model of `config` over the reference broker (validate it first with
    /// [`CheckConfig::validate`]).
    pub fn new(config: CheckConfig) -> LeaseModel<Broker> {
        LeaseModel::for_broker(config)
    }
}

impl<B: CheckedBroker> LeaseModel<B> {
    /// A model of `config` over the broker `B` (validate it first with
    /// [`CheckConfig::validate`]). The configuration's variant names the consumer runtime's
    /// decisions and is handed to `B`'s constructor; a user's broker implements the
    /// protocol its own way.
    pub fn for_broker(config: CheckConfig) -> LeaseModel<B> {
        let outcomes = outcomes(&config);
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
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        let nack_op = intern(nack, &mut ops);
        let renew_op = intern(
            SettleOp::Renew {
                extend_ms: lease_ms(&config),
            },
            &mut ops,
        );
        let clock = Clock::of(config.time);
        let fixed_workers = match clock {
            Some(clock) if clock.skew_ms > 0 => config.worker_count.min(2),
            _ => 0,
        };
        let outcome_cells = outcome_cells(&config, &outcomes);
        let prototype = B::with_config(&broker_config(&config));
        // Exchanging a group with itself changes nothing and says whether the broker can.
        let groups_interchangeable = config.group_count > 1 && prototype.clone().swap_groups(0, 0);
        LeaseModel {
            keep_attempt: prototype.reads_request_attempt(),
            lease_ids_durable: prototype.lease_ids_survive_restart(),
            config,
            ops,
            outcomes,
            outcome_op,
            outcome_cells,
            nack_op,
            renew_op,
            symmetry: false,
            partial_order: false,
            subsumption: false,
            budget_codes: None,
            late_duplicates: false,
            interchangeable: prototype.workers_interchangeable(),
            groups_interchangeable,
            leaves: ALL_SAFETY_BITS,
            clock,
            fixed_workers,
            broker: PhantomData,
        }
    }

    /// The timed model's clock (`None`: untimed).
    pub fn clock(&self) -> Option<Clock> {
        self.clock
    }

    /// The workers symmetry never moves (the timed model's skewed workers: A, then B).
    pub fn fixed_workers(&self) -> usize {
        self.fixed_workers
    }

    /// The clock (−1, 0, +1, see [`Msg::clock`]) of worker `worker`'s requests.
    pub fn clock_of(&self, worker: usize) -> i8 {
        if worker < self.fixed_workers {
            [-1, 1][worker]
        } else {
            0
        }
    }

    /// The request the broker is handed for `msg`: its lease as the worker received it, its
    /// operation, and its sender's clock.
    pub fn request(&self, state: &State<B>, msg: &Msg) -> SettleRequest {
        let lease = msg.lease.lease(&state.broker);
        let worker_clock_ms = self
            .clock
            .map_or(0, |clock| clock.worker_clock_ms(msg.clock));
        SettleRequest::new(&lease, *self.op(msg.op), worker_clock_ms)
    }

    /// The same model exploring past violations of every invariant but I5 (whose violations
    /// would let the space grow without bound): to find every invariant the configuration can
    /// break, including those only reachable after another broke. By default a state that
    /// breaks any invariant is a leaf.
    pub fn beyond_first_violation(mut self) -> LeaseModel<B> {
        self.leaves = 1 << Invariant::I5 as u8;
        self
    }

    /// Whether `state` is a leaf: it breaks an invariant whose violation ends exploration.
    #[inline]
    pub fn is_leaf(&self, state: &State<B>) -> bool {
        Self::violation_bits(state) & self.leaves != 0
    }

    /// The same model with symmetry reduction over workers on or off. When on, every
    /// successor's workers are sorted (see [`State::canonicalize`]): the model becomes its own
    /// quotient by worker permutations, whatever the search.
    pub fn with_symmetry(mut self, symmetry: bool) -> LeaseModel<B> {
        self.symmetry = symmetry && self.interchangeable;
        self
    }

    /// Whether symmetry reduction is on.
    pub fn symmetry(&self) -> bool {
        self.symmetry
    }

    /// The same model with partial-order reduction on or off. When on, in a state where some
    /// worker holds a lease and no request in flight carries that lease's issuance, the
    /// actions offered are that worker's alone (its handler outcomes, its renew, its crash);
    /// elsewhere every enabled action is.
    ///
    /// # Why this loses no violation and no terminal state
    /// Call that set `S` (worker `w`'s actions). Nothing outside `S` reads or writes `w`: a
    /// fetch is another (idle) worker's, a reply (or a lost reply, or a dropped request)
    /// answers only the worker *waiting* on its request (`w` holds, and no request in flight
    /// names its issuance, so none will answer it once it sends), an expiry, a tick, a
    /// restart or a duplicate touch the broker, the oracle, the requests in flight and the
    /// budgets, never a worker. And an action in
    /// `S` touches only `w`, the requests in flight (it adds one) and the crash or renew
    /// budget. So for every sequence of actions outside `S` after which an action `a` of `S`
    /// is still enabled, `a` first and the sequence after reach the same state (a persistent
    /// set: the sequence may use up a budget `a` needs, but then `a` is not enabled after
    /// it); and `Handle(w, 0)` stays enabled along every such sequence (a key action), so no
    /// sequence outside `S` ends in a terminal state. The actions of `S` change nothing the
    /// oracle keeps (the invariants are the oracle's), and the graph with finite budgets is
    /// acyclic (the ranking function), so every state that breaks an invariant and every
    /// terminal state of the full graph has a counterpart, equal up to `w`'s move, in the
    /// reduced one (Valmari's stubborn sets, Godefroid's persistent sets; acyclic, so no
    /// cycle proviso). On a cyclic graph (unbounded renews) it stays off.
    pub fn with_partial_order(mut self, partial_order: bool) -> LeaseModel<B> {
        self.partial_order = partial_order;
        self
    }

    /// Whether partial-order reduction is on.
    pub fn partial_order(&self) -> bool {
        self.partial_order
    }

    /// The same model, whose proof search skips a state **subsumed** by one it has visited:
    /// the same state but for the budgets used, with no more crashes, drops, duplicates, lost
    /// replies and renews used, and as many broker restarts. Off with unbounded renews.
    ///
    /// Why it loses nothing: the budgets are the model's own counters; no broker reads them,
    /// nor the oracle, the invariants, the `sometimes` properties or the coverage cells. An
    /// action is enabled by the rest of the state and, for a fault or a renew, by its budget
    /// having some left; so every action enabled in the subsumed state is enabled in the one
    /// that subsumes it, and leads to a state it subsumes in turn (the persistent set too
    /// picks its worker from the rest of the state). Every violation reachable from the
    /// skipped state is reachable from the visited one. A terminal state stays terminal: a
    /// crash, a renew, a drop, a duplicate or a lost reply is enabled only beside an action
    /// that uses no budget (a holder's handler, a delivery; a waiting worker's request is in
    /// flight), which is why broker restarts, the one fault enabled on its own, must be equal.
    /// The ranking function's first component counts the budgets left, the others ignore them,
    /// so a transition skipped decreases it as its visited twin does. Counts then depend on
    /// the order states are met (on several threads, from run to run); verdicts do not.
    pub fn with_subsumption(mut self, subsumption: bool) -> LeaseModel<B> {
        self.subsumption = subsumption && self.config.renews != Renews::Unbounded;
        self.budget_codes = self
            .subsumption
            .then(|| BudgetCodes::new(&self.config.budgets))
            .flatten();
        self
    }

    /// The same model, in which a request is duplicated only as a copy of it is delivered:
    /// `DuplicateDelivered` duplicates a request in flight and the broker applies one copy at
    /// once (its reply lost within `--lost-replies`), the other staying in flight; there is no
    /// bare `Duplicate`. Off with unbounded renews.
    ///
    /// Why it loses nothing, for any broker: a duplicate touches only the requests in flight
    /// (one more copy) and the duplicate budget, and no step reads how many copies of a
    /// request are in flight but one that takes a copy away (its delivery or its drop). So a
    /// duplicate commutes with every step up to the first one that takes a copy of its
    /// request, and can be put just before it. If that step is a drop, the two leave the
    /// state as it was but for budgets used (a state that offers a subset of the other's
    /// steps, and is terminal exactly when it is, by the fact subsumption rests on); if no
    /// step ever takes a copy, the behaviour ends before any terminal state (a request in
    /// flight can always be delivered), and each of its states but for the extra copy and a
    /// budget is one without the duplicate, which breaks the same invariants (the copy is
    /// nobody's but the requests'). The ranking function still decreases (a duplicate is
    /// spent). What the search never builds is the states in which both copies wait.
    pub fn with_late_duplicates(mut self, late: bool) -> LeaseModel<B> {
        self.late_duplicates = late && self.config.renews != Renews::Unbounded;
        self
    }

    /// Whether duplicates are taken at their first delivery.
    pub fn late_duplicates(&self) -> bool {
        self.late_duplicates
    }

    /// How the search's fingerprints carry the budgets used, when subsumption is on and
    /// the budgets number few enough sets ([`BudgetCodes`]); `None`: hashed last
    /// ([`crate::check::fingerprint::Fingerprinter::with_last`]).
    pub fn budget_codes(&self) -> Option<BudgetCodes> {
        self.budget_codes
    }

    /// Whether subsumption is on.
    pub fn subsumption(&self) -> bool {
        self.subsumption
    }

    /// The worker whose actions form a persistent set in `state` (see
    /// [`LeaseModel::with_partial_order`]): the first holding worker whose lease's issuance no
    /// request in flight carries.
    fn persistent_worker(state: &State<B>) -> Option<usize> {
        state.workers.iter().position(|worker| match worker {
            Worker::Holding(lease) => !state
                .in_flight
                .iter()
                .any(|msg| msg.lease.issuance == lease.issuance),
            _ => false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CheckConfig {
        &self.config
    }

    /// The operation a request carries.
    pub fn op(&self, index: u8) -> &SettleOp {
        &self.ops[index as usize]
    }

    /// Whether `op` is the runtime's own nack after a failed settle.
    pub fn is_follow_up_nack(&self, op: u8) -> bool {
        op == self.nack_op
    }

    /// Whether `op` is a renew.
    pub fn is_renew(&self, op: u8) -> bool {
        op == self.renew_op
    }

    /// The handler outcome of a `Handle` action.
    pub fn outcome(&self, index: u8) -> &Outcome {
        &self.outcomes[index as usize]
    }

    /// The settle the runtime sends after a `Handle` with `outcome`, if any.
    pub fn outcome_op(&self, outcome: u8) -> Option<u8> {
        self.outcome_op[outcome as usize]
    }

    /// The state every run starts from: the events published, nothing fetched. The checker's
    /// states carry a lean oracle; `lean = false` gives the full one (counterexample replay).
    pub fn init_state(&self, lean: bool) -> State<B> {
        let config = &self.config;
        let mut broker = B::with_config(&broker_config(config));
        let mut oracle_config = OracleConfig::new(config.group_count, config.max_attempts, false);
        oracle_config.lean = lean;
        // The checker's queues are small: the oracle compares every record with the broker
        // after every step, so a record a step changed without naming it is caught at that
        // step, and the counterexample ends there.
        oracle_config.compare_every_record =
            config.event_count as usize * config.group_count <= COMPARE_EVERY_RECORD_MAX;
        let mut oracle = Oracle::new(oracle_config);
        for _ in 0..config.event_count {
            broker.publish();
            oracle.published();
        }
        oracle.end_step(&broker);
        let mut state = State {
            broker,
            oracle,
            workers: (0..config.worker_count).map(|_| Worker::Idle).collect(),
            in_flight: InlineVec::new(),
            used: Default::default(),
        };
        if lean {
            self.canonicalize(&mut state);
        }
        state
    }

    /// Puts `state` in canonical form (see [`State::canonicalize`]).
    pub fn canonicalize(&self, state: &mut State<B>) {
        let absolute = !self.lease_ids_durable
            && state.used.broker_restarts < self.config.budgets.broker_restarts;
        state.canonicalize(
            absolute,
            self.symmetry,
            self.symmetry && self.groups_interchangeable,
            self.fixed_workers,
        );
    }

    fn fetchable(&self, state: &State<B>, group: usize) -> bool {
        // Time may pass before a fetch: a delayed record is eligible (its delay was normalised
        // away); a lapsed lease is expired by the fetch itself.
        if state.broker.has_available(group) {
            return true;
        }
        let mut lapsed = false;
        state.broker.for_each_timer(|t| {
            lapsed |= t.group as usize == group && t.deadline_ms <= MODEL_NOW_MS;
        });
        lapsed
    }

    /// Whether `state` breaks a safety invariant: a violating state is a leaf.
    #[inline]
    pub fn violating(state: &State<B>) -> bool {
        state.oracle.any_violated()
    }

    /// The safety invariants `state` breaks, as bits (`1 << invariant as u8`).
    #[inline]
    pub fn violation_bits(state: &State<B>) -> u8 {
        if !state.oracle.any_violated() {
            return 0;
        }
        SAFETY
            .iter()
            .filter(|&&i| state.oracle.violated(i))
            .fold(0, |bits, &i| bits | 1 << i as u8)
    }

    /// Whether some record (group, seq) of the broker's view is `wanted`.
    fn any_record(state: &State<B>, wanted: impl Fn(GroupIx, Seq, Status) -> bool) -> bool {
        let broker = &state.broker;
        let events = broker.event_count();
        (0..broker.group_count())
            .any(|g| (1..=events).any(|seq| wanted(g, seq, broker.status_kind(g, seq))))
    }

    /// I6's goal: every event of every group acked or dead-lettered and every frontier at
    /// the last event.
    pub fn settled(state: &State<B>) -> bool {
        let broker = &state.broker;
        let events = broker.event_count();
        broker.unsettled_count() == 0
            && (0..broker.group_count()).all(|g| broker.frontier(g) == events)
    }

    /// A holding worker's moves but its crash: each handler outcome, and its renew when the
    /// budget allows.
    #[inline]
    fn holder_actions(&self, w: u8, renews: bool, actions: &mut Actions) {
        for outcome in 0..self.outcomes.len() {
            actions.push(Action::Handle {
                worker: w,
                outcome: outcome as u8,
            });
        }
        if renews {
            actions.push(Action::Renew { worker: w });
        }
    }

    /// The actions enabled in `state` (none in a leaf, see [`LeaseModel::is_leaf`]). With symmetry
    /// on, a worker equal to the one before it (workers are sorted) adds no action: its
    /// successors are the same canonical states.
    pub fn actions(&self, state: &State<B>, actions: &mut Actions) {
        actions.clear();
        if self.is_leaf(state) {
            return;
        }
        let budgets = &self.config.budgets;
        let used = &state.used;
        let renews = self.config.renews == Renews::Unbounded || used.renews < budgets.renews;
        let crashes = used.crashes < budgets.crashes;
        if self.partial_order {
            if let Some(index) = Self::persistent_worker(state) {
                let w = index as u8;
                self.holder_actions(w, renews, actions);
                if crashes {
                    actions.push(Action::Crash { worker: w });
                }
                return;
            }
        }
        for (index, worker) in state.workers.iter().enumerate() {
            if self.symmetry && index > self.fixed_workers && state.workers[index - 1] == *worker {
                continue;
            }
            let w = index as u8;
            match worker {
                Worker::Idle => {
                    for group in 0..self.config.group_count {
                        if self.fetchable(state, group) {
                            actions.push(Action::Fetch {
                                worker: w,
                                group: group as u8,
                            });
                        }
                    }
                }
                Worker::Holding(_) => self.holder_actions(w, renews, actions),
                Worker::Waiting(..) => {}
            }
            if crashes && *worker != Worker::Idle {
                actions.push(Action::Crash { worker: w });
            }
        }
        self.message_actions(state, actions);
        if self.clock.is_some() {
            // The clock advances while some deadline is still ahead: the broker's (a timer)
            // or the contract's (a lease the oracle holds live).
            let mut ahead = false;
            state
                .broker
                .for_each_timer(|timer| ahead |= timer.deadline_ms > MODEL_NOW_MS);
            ahead |= state
                .oracle
                .live_deadlines()
                .any(|(_, deadline_ms)| deadline_ms > MODEL_NOW_MS);
            if ahead {
                actions.push(Action::Tick);
            }
            if used.broker_restarts < budgets.broker_restarts {
                actions.push(Action::BrokerRestart);
            }
            return;
        }
        // Time may reach the deadline of any pending timer — a lease's, or one that outlived
        // its lease (`stale-timer`) — one per record, in firing order.
        let mut records: SmallVec<[(u32, Seq); 8]> = SmallVec::new();
        state.broker.for_each_timer(|timer: &Timer| {
            let record = (timer.group, timer.seq);
            if timer.deadline_ms > MODEL_NOW_MS && !records.contains(&record) {
                records.push(record);
                actions.push(Action::Expire {
                    group: timer.group as u8,
                    seq: timer.seq as u8,
                });
            }
        });
        if used.broker_restarts < budgets.broker_restarts {
            actions.push(Action::BrokerRestart);
        }
    }

    fn message_actions(&self, state: &State<B>, actions: &mut Actions) {
        let budgets = &self.config.budgets;
        let used = &state.used;
        for (index, msg) in state.in_flight.iter().enumerate() {
            if index > 0 && state.in_flight[index - 1] == *msg {
                continue; // identical requests: one representative action
            }
            let message = index as u8;
            // A reply can be lost when someone waits on it.
            let lose = used.lost_replies < budgets.lost_replies && state.waiting_on(msg).is_some();
            let replies = [false, true].into_iter().take(1 + usize::from(lose));
            actions.extend(replies.clone().map(|reply_lost| Action::Deliver {
                message,
                reply_lost,
            }));
            if used.drops < budgets.drops {
                actions.push(Action::Drop { message });
            }
            if used.dups < budgets.dups {
                if self.late_duplicates {
                    actions.extend(replies.map(|reply_lost| Action::DuplicateDelivered {
                        message,
                        reply_lost,
                    }));
                } else {
                    actions.push(Action::Duplicate { message });
                }
            }
        }
    }

    /// Whether any action is enabled in `state` (a state with none is terminal).
    pub fn has_action(&self, state: &State<B>) -> bool {
        let mut actions = Actions::new();
        self.actions(state, &mut actions);
        !actions.is_empty()
    }

    /// The successor of `state` by `action`, in canonical form, and what the transition
    /// witnessed.
    #[inline]
    pub fn successor(&self, state: &State<B>, action: Action) -> (State<B>, Witness) {
        let mut next = state.clone();
        let witness = self.step(&mut next, action, true);
        (next, witness)
    }

    /// [`LeaseModel::successor`] into `next` (overwritten), reusing its storage.
    #[inline]
    pub fn successor_into(&self, state: &State<B>, action: Action, next: &mut State<B>) -> Witness {
        next.clone_from(state);
        self.step(next, action, true)
    }

    /// Takes `action` in `state`: applies it, ends the oracle's step and, when `canonical`,
    /// puts the result in canonical form. Returns what the transition witnessed.
    pub fn step(&self, state: &mut State<B>, action: Action, canonical: bool) -> Witness {
        let witness = self.apply(state, action);
        state.oracle.end_step(&state.broker);
        if canonical {
            self.canonicalize(state);
        }
        witness
    }

    /// The worker waiting on `msg`, if any, gets `result` and acts on it.
    fn reply(&self, state: &mut State<B>, msg: &Msg, result: Result<bool, SettleError>) -> Witness {
        let Some(worker) = state.waiting_on(msg) else {
            return 0;
        };
        let lease = msg.lease;
        let (next, seen) = match result {
            Ok(true) => (Worker::Holding(lease), 0),
            Ok(false) => (Worker::Idle, 0),
            Err(error) => {
                let seen = if matches!(error, SettleError::Ambiguous(_)) {
                    witness::AMBIGUOUS
                } else {
                    0
                };
                match classify(&error, self.config.variant) {
                    ErrorAction::Drop | ErrorAction::LeaveToExpire => (Worker::Idle, seen),
                    ErrorAction::Nack => {
                        state.send(Msg {
                            lease,
                            op: self.nack_op,
                            clock: self.clock_of(worker),
                        });
                        (Worker::Waiting(lease, self.nack_op), seen)
                    }
                }
            }
        };
        state.workers[worker] = next;
        seen
    }

    fn dead_lettered(state: &State<B>, group: usize, seq: u32) -> Witness {
        match state.broker.status_kind(group, seq) {
            Status::DeadLettered => witness::DEAD_LETTERED,
            _ => 0,
        }
    }

    fn deliver(&self, state: &mut State<B>, index: usize, reply_lost: bool) -> Witness {
        let msg = state.in_flight.remove(index);
        let op = *self.op(msg.op);
        let request = self.request(state, &msg);
        let lease = request.lease;
        let was_dead = state.broker.status_kind(lease.group, lease.seq) == Status::DeadLettered;
        let result = state.broker.settle(&request, MODEL_NOW_MS);
        state.oracle.settled(
            msg.lease.issuance,
            &lease,
            &op,
            result.is_ok(),
            MODEL_NOW_MS,
        );
        let mut seen = match &result {
            Err(SettleError::StaleLease | SettleError::ReceiptMismatch) => witness::STALE_REFUSED,
            Ok(_) if !was_dead => Self::dead_lettered(state, lease.group, lease.seq),
            _ => 0,
        };
        seen |= Self::settle_cell(&op, &result, seen & witness::DEAD_LETTERED != 0);
        if msg.clock != 0 && self.clock.is_some_and(|clock| clock.skew_ms > 0) {
            seen |= Cell::SkewedWorkerClock.bit();
        }
        let result = if reply_lost {
            seen |= Cell::ReplyLost.bit();
            state.used.lost_replies += 1;
            Err(SettleError::Ambiguous("reply lost".into()))
        } else {
            result.map(|renewed| renewed.is_some())
        };
        seen |= self.reply(state, &msg, result);
        seen
    }

    /// The coverage cell of a settle's reply: its kind × accepted (dead-lettering or not) or
    /// refused as stale.
    fn settle_cell(
        op: &SettleOp,
        result: &Result<Option<crate::types::Lease>, SettleError>,
        dead_lettered: bool,
    ) -> Witness {
        let cell = match (op, result) {
            (SettleOp::Ack, Ok(_)) => Cell::AckAccepted,
            (SettleOp::Nack { .. }, Ok(_)) if dead_lettered => Cell::NackDeadLetters,
            (SettleOp::Nack { .. }, Ok(_)) => Cell::NackRedelivers,
            (SettleOp::Reject { .. }, Ok(_)) => Cell::RejectDeadLetters,
            (SettleOp::Renew { .. }, Ok(_)) => Cell::RenewAccepted,
            (op, Err(SettleError::StaleLease | SettleError::ReceiptMismatch)) => match op {
                SettleOp::Ack => Cell::AckStale,
                SettleOp::Nack { .. } => Cell::NackStale,
                SettleOp::Reject { .. } => Cell::RejectStale,
                SettleOp::Renew { .. } => Cell::RenewStale,
            },
            _ => return 0,
        };
        cell.bit()
    }

    fn fetch(&self, state: &mut State<B>, worker: usize, group: usize) -> Witness {
        // The fetch applies due expiries first (lapsed leases, under lazy expiry); doing it
        // here shows the oracle which records they changed.
        let mut seen = 0;
        let State {
            broker,
            oracle,
            workers,
            ..
        } = state;
        let mut expired: SmallVec<[(usize, u32); 4]> = SmallVec::new();
        broker.expire_due_each(MODEL_NOW_MS, |e| {
            oracle.observe(e.group, e.seq);
            expired.push((e.group, e.seq));
        });
        for (group, seq) in expired {
            if broker.status_kind(group, seq) == Status::DeadLettered {
                seen |= witness::DEAD_LETTERED | Cell::ExpiryDeadLetters.bit();
            } else {
                seen |= Cell::ExpiryRedelivers.bit();
            }
        }
        let lease = broker
            .fetch_one_as(worker, group, MODEL_NOW_MS)
            .expect("a valid group");
        // Under lazy expiry the fetch may only expire a lapsed lease and find nothing to
        // lease: the worker stays idle.
        if let Some(lease) = lease {
            assert_eq!(
                lease.receipt,
                broker.receipt_of(lease.group, lease.seq),
                "a checked broker's receipts are a function of the record (CheckedBroker::receipt_of)"
            );
            let issuance = oracle.fetched(&lease, MODEL_NOW_MS, lease_ms(&self.config));
            if oracle.deliveries(lease.group, lease.seq) > 1 {
                seen |= witness::REDELIVERED;
            }
            let elsewhere = (0..self.config.group_count).any(|other| {
                other != lease.group && broker.status_kind(other, lease.seq) == Status::Leased
            });
            if elsewhere {
                seen |= Cell::SeveralGroups.bit();
            }
            workers[worker] = Worker::Holding(LeaseRef::of(issuance, &lease, self.keep_attempt));
        }
        seen
    }

    /// A holding worker sends `op` for its lease and waits on the reply (or, with no op to
    /// send, becomes idle).
    fn send(&self, state: &mut State<B>, worker: usize, op: Option<u8>) {
        let Worker::Holding(lease) = state.workers[worker] else {
            unreachable!("enabled only for a holding worker")
        };
        state.workers[worker] = match op {
            Some(op) => {
                state.send(Msg {
                    lease,
                    op,
                    clock: self.clock_of(worker),
                });
                Worker::Waiting(lease, op)
            }
            None => Worker::Idle,
        };
    }

    fn apply(&self, state: &mut State<B>, action: Action) -> Witness {
        match action {
            Action::Fetch { worker, group } => self.fetch(state, worker as usize, group as usize),
            Action::Handle { worker, outcome } => {
                // I7 is not checked by the model (the oracle is configured without it), so
                // the handler run itself changes nothing the oracle keeps.
                self.send(state, worker as usize, self.outcome_op(outcome));
                self.outcome_cells[outcome as usize]
            }
            Action::Renew { worker } => {
                if self.config.renews == Renews::Budget {
                    state.used.renews += 1;
                }
                self.send(state, worker as usize, Some(self.renew_op));
                0
            }
            Action::Deliver {
                message,
                reply_lost,
            } => self.deliver(state, message as usize, reply_lost),
            Action::Expire { group, seq } => {
                // The clock reaches the timer's deadline; the lease it was armed for, if it
                // still holds the record, ends now (the broker expires it when the timer
                // fires, at its next fetch). A timer that outlived its lease ends nothing.
                let (group, seq) = (group as usize, u32::from(seq));
                if state.broker.lapse(group, seq, MODEL_NOW_MS) != Some(true) {
                    return 0;
                }
                state.oracle.expired(group, seq);
                let in_flight = state
                    .in_flight
                    .iter()
                    .any(|m| (usize::from(m.lease.group), u32::from(m.lease.seq)) == (group, seq));
                if in_flight {
                    Cell::ExpiryWithSettleInFlight.bit()
                } else {
                    0
                }
            }
            Action::Crash { worker } => {
                let seen = match state.workers[worker as usize] {
                    Worker::Holding(_) => Cell::CrashHolding.bit(),
                    Worker::Waiting(..) => Cell::CrashWithRequestInFlight.bit(),
                    Worker::Idle => 0,
                };
                state.workers[worker as usize] = Worker::Idle;
                state.used.crashes += 1;
                seen
            }
            Action::Drop { message } => {
                let msg = state.in_flight.remove(message as usize);
                state.used.drops += 1;
                Cell::RequestDropped.bit()
                    | self.reply(
                        state,
                        &msg,
                        Err(SettleError::Ambiguous("request dropped".into())),
                    )
            }
            Action::Duplicate { message } => {
                let msg = state.in_flight[message as usize];
                state.used.dups += 1;
                state.send(msg);
                Cell::RequestDuplicated.bit()
            }
            Action::DuplicateDelivered {
                message,
                reply_lost,
            } => {
                // The copy stays where the request was; the request is delivered.
                let msg = state.in_flight[message as usize];
                state.used.dups += 1;
                let witness = self.deliver(state, message as usize, reply_lost);
                state.send(msg);
                Cell::RequestDuplicated.bit() | witness
            }
            Action::Tick => self.tick(state),
            Action::BrokerRestart => {
                let config = &self.config;
                let leased = (0..config.group_count).any(|group| {
                    (1..=config.event_count)
                        .any(|seq| state.broker.status_kind(group, seq) == Status::Leased)
                });
                state.broker.restart();
                state.oracle.restarted();
                state.used.broker_restarts += 1;
                if leased {
                    Cell::BrokerRestartWithLeases.bit()
                } else {
                    0
                }
            }
        }
    }

    /// The timed model's clock advances by one tick: the broker's times and the oracle's move
    /// a tick into the past (times relative to now), and every lease whose contract deadline
    /// the clock reaches ends in the oracle. The broker expires its own by its own timers, at
    /// its next fetch.
    fn tick(&self, state: &mut State<B>) -> Witness {
        let clock = self.clock.expect("Tick is enabled in the timed model only");
        let mut seen = 0;
        let due = MODEL_NOW_MS + clock.tick_ms;
        for (issuance, deadline_ms) in state.oracle.live_deadlines() {
            if deadline_ms > MODEL_NOW_MS && deadline_ms <= due {
                seen |= Cell::DeadlineArithmetic.bit();
                if state.in_flight.iter().any(|m| m.lease.issuance == issuance) {
                    seen |= Cell::ExpiryWithSettleInFlight.bit();
                }
            }
        }
        state.broker.shift_clock(clock.tick_ms, clock.floor_ms);
        state.oracle.shift_clock(clock.tick_ms, clock.floor_ms);
        state.oracle.advance(MODEL_NOW_MS);
        seen
    }

    /// Whether a `sometimes` property can be reached at all in this configuration: an
    /// ambiguous result needs a lost-reply or drop budget; a redelivery needs a second attempt
    /// (or a broker that miscounts them); a stale settle is refused only by a broker that
    /// fences some settle. A property that cannot be reached by construction is "not
    /// applicable", not "not reached".
    pub fn applicable(&self, bit: Witness) -> bool {
        let config = &self.config;
        let variant = config.variant;
        match bit {
            witness::AMBIGUOUS => config.budgets.lost_replies > 0 || config.budgets.drops > 0,
            witness::REDELIVERED => {
                config.max_attempts > 1
                    || !variant.expiry_dead_letters()
                    || variant.expiry_resets_attempts()
            }
            witness::STALE_REFUSED => {
                let ops = [
                    SettleOp::Ack,
                    SettleOp::Nack {
                        delay_ms: 0,
                        reason: None,
                    },
                    SettleOp::Renew { extend_ms: 0 },
                ];
                let renews = config.renews == Renews::Unbounded || config.budgets.renews > 0;
                ops.iter()
                    .any(|op| variant.fence(op) != Fence::None && (op.is_settle() || renews))
            }
            _ => true,
        }
    }
}

impl<B: CheckedBroker> Model for LeaseModel<B> {
    type State = State<B>;
    type Action = Action;

    fn init_states(&self) -> Vec<State<B>> {
        vec![self.init_state(true)]
    }

    fn actions(&self, state: &State<B>, actions: &mut Vec<Action>) {
        let mut inline = Actions::new();
        LeaseModel::actions(self, state, &mut inline);
        actions.extend(inline);
    }

    fn next_state(&self, state: &State<B>, action: Action) -> Option<State<B>> {
        Some(self.successor(state, action).0)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("I1 stale-never-counts", |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I1)
            }),
            Property::always("I2 single-holder", |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I2)
            }),
            Property::always("I3 no-lost-event", |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I3)
            }),
            Property::always("I4 frontier-sound", |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I4)
            }),
            Property::always("I5 attempts-bounded", |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I5)
            }),
            Property::always(
                "I6 eventually-settled (terminal states)",
                |m: &LeaseModel<B>, s: &State<B>| {
                    Self::violating(s) || m.has_action(s) || Self::settled(s)
                },
            ),
            // Two of the `sometimes` properties show in a state too (the other two happen on a
            // transition only, which a stateright property cannot see: `check` reads them there).
            // The attempt is the oracle's own count of deliveries, not the broker's.
            Property::sometimes(
                "an event is redelivered (a lease of attempt 2 or more)",
                |_, s: &State<B>| {
                    Self::any_record(s, |group, seq, status| {
                        status == Status::Leased && s.oracle.deliveries(group, seq) >= 2
                    })
                },
            ),
            Property::sometimes("an event is dead-lettered", |_, s: &State<B>| {
                Self::any_record(s, |_, _, status| status == Status::DeadLettered)
            }),
        ]
    }
}
