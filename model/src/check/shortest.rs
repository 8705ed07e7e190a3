//! The shortest counterexample: a breadth-first search of our own, with parent pointers, that
//! stops at the first violation of each invariant asked for.
//!
//! stateright 0.31 does not report the shortest path (its discoveries are overwritten while
//! other properties are pending), so the counterexample does not come from it. Breadth-first
//! order visits every state of depth `d` before any of depth `d + 1`, and the invariants are
//! checked on every state as it is generated, so the first violating state found has the
//! least depth: the path to it is a shortest counterexample.
//!
//! Every transition ends an oracle step, and the oracle's step counter is part of the state, so
//! a state's depth is a function of the state: states of different levels never coincide and
//! deduplication only needs the current level's fingerprints.

use crate::check::model::LeaseModel;
use crate::check::state::{Action, State};
use crate::invariant::Invariant;
use stateright::Model;
use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};

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
    model: &LeaseModel,
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
    model: &LeaseModel,
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
