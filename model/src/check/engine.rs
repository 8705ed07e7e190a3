//! The second engine: the same model searched by stateright's own checker.
//!
//! [`Engine::Leasehold`] is leasehold's own explicit-state search ([`crate::check::search`]:
//! depth-first, work-sharing threads, a fingerprint table of its own). [`Engine::Stateright`]
//! hands the same [`LeaseModel`] — the same states, actions, canonical form and lean oracle —
//! to stateright's checker: its breadth-first search without symmetry, its depth-first search
//! with its own symmetry reduction (stateright applies symmetry in depth-first search only).
//! The safety invariants and I6 on terminal states are stateright `always` properties, so the
//! verdicts are stateright's. Two things stateright cannot see are read beside it, on the
//! transitions its checker takes (every successor is made by [`Model::next_state`]): the
//! `sometimes` witnesses, which happen on a transition rather than in a state, and the ranking
//! function behind I6, asserted on every transition as the default engine asserts it.
//!
//! What it does not do: the search for fair cycles (`--renews unbounded`; stateright's
//! `eventually` has no cycle detection, see the module documentation of
//! [`crate::check::liveness`]), and stopping before its end (stateright's checker has no
//! interrupt: a time or memory budget does not apply, a state bound does). Counterexamples are
//! not taken from stateright's paths (stateright 0.31 does not keep the shortest one): the
//! report's counterexamples come from leasehold's breadth-first shortest-path search, run for
//! the invariants stateright found violated.

use crate::check::checked::CheckedBroker;
use crate::check::model::{LeaseModel, SAFETY};
use crate::check::rank::rank;
use crate::check::search::{Counts, Exploration, Limits, Progress, RankFailure};
use crate::check::state::{Action, State};
use crate::invariant::Invariant;
use serde::Serialize;
use stateright::{Checker, HasDiscoveries, Model, Property};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Which search explores the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// leasehold's own search (the default): depth-first with symmetry, shortest
    /// counterexamples by breadth-first search, fair cycles for unbounded renews.
    #[default]
    Leasehold,
    /// stateright's checker on the same model (breadth-first; depth-first with symmetry).
    Stateright,
}

impl Engine {
    /// Every engine, in the order `--help` lists them.
    pub const ALL: [Engine; 2] = [Engine::Leasehold, Engine::Stateright];

    /// `leasehold` or `stateright`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Leasehold => "leasehold",
            Engine::Stateright => "stateright",
        }
    }

    /// The engine named `name`.
    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The search it runs, in a few words (`depth-first` …), for a report's header.
    pub fn search(self, symmetry: bool) -> &'static str {
        match (self, symmetry) {
            (Engine::Leasehold, _) => "depth-first",
            (Engine::Stateright, true) => "stateright's depth-first",
            (Engine::Stateright, false) => "stateright's breadth-first",
        }
    }
}

/// The name of I6's stateright property: a terminal state is settled.
const I6_TERMINAL: &str = "I6 eventually-settled (terminal states)";

/// A name no property has: stateright's checker stops early once every property named in its
/// `finish_when` set is discovered, so naming one that never is keeps it to the end.
const NEVER: &str = "(search every reachable state)";

/// The model as stateright's checker sees it: [`LeaseModel`]'s states and transitions, with
/// the transitions' witnesses and the ranking function read on the side.
struct Observed<B> {
    model: LeaseModel<B>,
    check_rank: bool,
    witnessed: Arc<AtomicU64>,
    rank_failure: Arc<Mutex<Option<Box<RankFailure<B>>>>>,
}

impl<B: CheckedBroker> Model for Observed<B> {
    type State = State<B>;
    type Action = Action;

    fn init_states(&self) -> Vec<State<B>> {
        vec![self.model.init_state(true)]
    }

    fn actions(&self, state: &State<B>, actions: &mut Vec<Action>) {
        Model::actions(&self.model, state, actions);
    }

    fn next_state(&self, state: &State<B>, action: Action) -> Option<State<B>> {
        let (next, witness) = self.model.successor(state, action);
        // Nearly every transition witnesses a coverage cell: write the shared word only when
        // it gains a bit, so the checker's threads do not contend on it.
        if witness & !self.witnessed.load(Ordering::Relaxed) != 0 {
            self.witnessed.fetch_or(witness, Ordering::Relaxed);
        }
        if self.check_rank {
            let (from_rank, to_rank) = (rank(&self.model, state), rank(&self.model, &next));
            if to_rank >= from_rank {
                let mut failure = self.rank_failure.lock().expect("no thread panicked");
                failure.get_or_insert_with(|| {
                    Box::new(RankFailure {
                        from: state.clone(),
                        action,
                        from_rank,
                        to_rank,
                    })
                });
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always(SAFETY_NAMES[0], |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I1)
            }),
            Property::always(SAFETY_NAMES[1], |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I2)
            }),
            Property::always(SAFETY_NAMES[2], |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I3)
            }),
            Property::always(SAFETY_NAMES[3], |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I4)
            }),
            Property::always(SAFETY_NAMES[4], |_, s: &State<B>| {
                !s.oracle.violated(Invariant::I5)
            }),
        ];
        properties.push(Property::always(
            I6_TERMINAL,
            |m: &Observed<B>, s: &State<B>| {
                LeaseModel::violating(s) || m.model.has_action(s) || LeaseModel::settled(s)
            },
        ));
        properties
    }
}

/// The stateright property names of I1–I5, in [`SAFETY`]'s order.
const SAFETY_NAMES: [&str; 5] = [
    "I1 stale-never-counts",
    "I2 single-holder",
    "I3 no-lost-event",
    "I4 frontier-sound",
    "I5 attempts-bounded",
];

const _: () = assert!(SAFETY.len() == SAFETY_NAMES.len());

/// Explores `model` with stateright's checker under `limits` (its state bound and threads;
/// not its interrupt, see the module documentation); `symmetry` picks stateright's
/// depth-first search with its symmetry reduction, else its breadth-first search. `progress`
/// is called with the counts while it runs.
pub fn explore<B: CheckedBroker>(
    model: &LeaseModel<B>,
    limits: &Limits,
    symmetry: bool,
    check_rank: bool,
    progress: Option<Progress<'_>>,
) -> Exploration<B> {
    let witnessed = Arc::new(AtomicU64::new(0));
    let rank_failure = Arc::new(Mutex::new(None));
    let observed = Observed {
        model: model.clone().with_symmetry(false),
        check_rank,
        witnessed: Arc::clone(&witnessed),
        rank_failure: Arc::clone(&rank_failure),
    };
    let states_max = usize::try_from(limits.states_max).unwrap_or(usize::MAX);
    let builder = observed
        .checker()
        .threads(limits.threads.max(1))
        .target_state_count(states_max)
        .finish_when(HasDiscoveries::AllOf(BTreeSet::from([NEVER])));
    let (counts, max_depth, found) = if symmetry {
        run(builder.symmetry().spawn_dfs(), progress)
    } else {
        run(builder.spawn_bfs(), progress)
    };
    let mut violated = 0u8;
    for (invariant, name) in SAFETY.into_iter().zip(SAFETY_NAMES) {
        if found.contains(name) {
            violated |= 1 << invariant as u8;
        }
    }
    let bounded = (counts.generated >= limits.states_max).then_some(limits.states_max);
    let rank_failure = rank_failure.lock().expect("no thread panicked").take();
    Exploration {
        counts,
        max_depth,
        terminal: 0,
        subsumed: 0,
        lookups: 0,
        violated,
        unsettled_terminal: found.contains(I6_TERMINAL),
        witnessed: witnessed.load(Ordering::Relaxed),
        rank_failure,
        bounded,
        interrupted: false,
        stopped_at_violation: false,
        table_bytes: 0,
        per_thread: Vec::new(),
    }
}

/// Waits for `checker` (calling `progress` meanwhile); returns its counts, its depth and the
/// names of the properties it discovered.
fn run<B: CheckedBroker, C: Checker<Observed<B>>>(
    checker: C,
    progress: Option<Progress<'_>>,
) -> (Counts, u32, BTreeSet<&'static str>) {
    let counts = |c: &C| Counts {
        generated: c.state_count() as u64,
        unique: c.unique_state_count() as u64,
    };
    let checker = match progress {
        Some(progress) => {
            while !checker.is_done() {
                progress(counts(&checker));
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            checker.join()
        }
        None => checker.join(),
    };
    let found = checker.discoveries().into_keys().collect();
    let depth = u32::try_from(checker.max_depth()).unwrap_or(u32::MAX);
    (counts(&checker), depth, found)
}
