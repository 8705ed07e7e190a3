//! The shortest counterexample: a breadth-first search of our own, with parent pointers and a
//! global seen-set, that stops at the first violation of each invariant asked for.
//!
//! stateright 0.31 does not report the shortest path (its discoveries are overwritten while
//! other properties are pending). Breadth-first order visits every state of depth `d` before any
//! of depth `d + 1`; the safety invariants are checked on every state as it is generated, and
//! I6 (with finite budgets: a terminal state that is not settled) on every state as it is
//! expanded, so the first violating state found has the least depth. States are canonical but
//! workers are not sorted (symmetry does not change path lengths, and unsorted workers keep
//! their indices along the path, so the path replays on uncanonicalised states, see
//! [`crate::check::path`]). The canonical state carries no depth, so a state reached again at a
//! deeper level is a duplicate: the seen-set spans every level.

use crate::check::checked::CheckedBroker;
use crate::check::fingerprint::fingerprint;
use crate::check::model::{Actions, LeaseModel};
use crate::check::state::{Action, State};
use crate::check::table::FingerprintSet;
use crate::invariant::Invariant;

/// A counterexample as the search found it: the actions from the initial state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The violated invariant.
    pub invariant: Invariant,
    /// The actions, in order (prefix and loop).
    pub actions: Vec<Action>,
    /// For a lasso (I6 with cycles): the index in `actions` where the loop starts; the loop
    /// runs from there to the end and returns to the state it started in.
    pub loop_start: Option<usize>,
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
    pub generated: u64,
    /// `Some(bound)` when the search stopped at `states_max` before finding every target.
    pub bounded: Option<u64>,
}

/// Finds a shortest path to a violation of each of `targets` that is violated at all, by
/// breadth-first search without symmetry, generating at most about `states_max` states. I6
/// is "a terminal state that is not settled" (the finite-budget reading; lassos come from
/// [`crate::check::liveness`]).
pub fn shortest_counterexamples<B: CheckedBroker>(
    model: &LeaseModel<B>,
    targets: &[Invariant],
    states_max: u64,
) -> Search {
    let model = &model
        .clone()
        .with_symmetry(false)
        .with_partial_order(false)
        .with_late_duplicates(false);
    // The search expands what the model expands: a leaf is a state that breaks an
    // invariant whose violation ends exploration (see `LeaseModel::is_leaf`).
    // (parent node, action) per node; node 0 is the initial state.
    let mut nodes: Vec<(u32, Option<Action>)> = vec![(0, None)];
    let mut found: Vec<(Invariant, u32)> = Vec::new();
    let mut pending: Vec<Invariant> = targets.to_vec();
    let seen = FingerprintSet::new();
    let mut seen = seen.inserter();
    let init = model.init_state(true);
    seen.insert(fingerprint(&init));
    let mut level: Vec<(State<B>, u32)> = vec![(init, 0)];
    let mut generated = 0u64;
    let mut bounded = None;
    let mut actions = Actions::new();
    'levels: while !pending.is_empty() && !level.is_empty() {
        let mut next_level = Vec::new();
        for (state, node) in &level {
            model.actions(state, &mut actions);
            if actions.is_empty() && !LeaseModel::violating(state) && !LeaseModel::settled(state) {
                take(&mut pending, &mut found, *node, |i| i == Invariant::I6);
            }
            for &action in actions.iter() {
                let (next, _) = model.successor(state, action);
                generated += 1;
                if !seen.insert(fingerprint(&next)) {
                    continue;
                }
                nodes.push((*node, Some(action)));
                let id = (nodes.len() - 1) as u32;
                if LeaseModel::violating(&next) {
                    take(&mut pending, &mut found, id, |i| next.oracle.violated(i));
                }
                if !model.is_leaf(&next) {
                    next_level.push((next, id));
                }
                if generated >= states_max {
                    bounded = Some(states_max);
                    break 'levels;
                }
            }
            if pending.is_empty() {
                break 'levels;
            }
        }
        level = next_level;
    }
    let found = targets
        .iter()
        .filter_map(|t| found.iter().find(|(i, _)| i == t))
        .map(|&(invariant, id)| Counterexample {
            invariant,
            actions: path_to(&nodes, id),
            loop_start: None,
        })
        .collect();
    Search {
        found,
        generated,
        bounded: if pending.is_empty() { None } else { bounded },
    }
}

/// Moves every pending invariant for which `violated` holds to `found`, at node `id`.
fn take(
    pending: &mut Vec<Invariant>,
    found: &mut Vec<(Invariant, u32)>,
    id: u32,
    violated: impl Fn(Invariant) -> bool,
) {
    pending.retain(|&invariant| {
        if violated(invariant) {
            found.push((invariant, id));
            false
        } else {
            true
        }
    });
}

/// The actions from node 0 to node `id`.
pub(crate) fn path_to(nodes: &[(u32, Option<Action>)], mut id: u32) -> Vec<Action> {
    let mut actions = Vec::new();
    while let (parent, Some(action)) = nodes[id as usize] {
        actions.push(action);
        id = parent;
    }
    actions.reverse();
    actions
}
