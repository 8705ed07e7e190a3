//! The model as stateright's Explorer serves it (`leasehold check --explore`): the states of
//! [`LeaseModel`], each with the `sometimes` witnesses of the transition that reached it, so that
//! all four `sometimes` properties `check` reports show in the Explorer too. Two of them (a
//! stale settle refused, an ambiguous result seen) happen on a transition only, which a
//! stateright property, a predicate on states, cannot see otherwise.
//!
//! The witnesses make states that differ only in how they were reached distinct: the Explorer's
//! state space is larger than the history-free one `check` searches. It is for browsing, not
//! for proofs (the stateright `Model` of [`LeaseModel`] itself keeps the cross-check with
//! `check`'s state counts).

use super::checked::CheckedBroker;
use super::model::{LeaseModel, SOMETIMES};
use super::state::{witness, Action, State, Witness};
use crate::broker::Broker;
use crate::invariant::Invariant;
use stateright::{Model, Property};

/// A state of the Explorer's model: the model's state, and what the transition into it witnessed
/// (`0` for an initial state).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reached<B = Broker> {
    /// The model's state.
    pub state: State<B>,
    /// The [`witness`] bits of the transition that reached it.
    pub witnessed: Witness,
}

/// [`LeaseModel`] for stateright's Explorer: see the module's documentation.
#[derive(Clone, Debug)]
pub struct ExplorerModel<B = Broker>(pub LeaseModel<B>);

/// The name `check` gives the `sometimes` property of a witness bit.
const fn sometimes(bit: Witness) -> &'static str {
    let mut k = 0;
    while k < SOMETIMES.len() {
        if SOMETIMES[k].0 == bit {
            return SOMETIMES[k].1;
        }
        k += 1;
    }
    panic!("a witness bit of SOMETIMES")
}

impl<B: CheckedBroker> Model for ExplorerModel<B> {
    type State = Reached<B>;
    type Action = Action;

    fn init_states(&self) -> Vec<Reached<B>> {
        let initial = Model::init_states(&self.0);
        let reached = initial.into_iter().map(|state| Reached {
            state,
            witnessed: 0,
        });
        reached.collect()
    }

    fn actions(&self, reached: &Reached<B>, actions: &mut Vec<Action>) {
        Model::actions(&self.0, &reached.state, actions);
    }

    fn next_state(&self, reached: &Reached<B>, action: Action) -> Option<Reached<B>> {
        let (state, witnessed) = self.0.successor(&reached.state, action);
        Some(Reached { state, witnessed })
    }

    fn properties(&self) -> Vec<Property<Self>> {
        const STALE: &str = sometimes(witness::STALE_REFUSED);
        const REDELIVERED: &str = sometimes(witness::REDELIVERED);
        const DEAD: &str = sometimes(witness::DEAD_LETTERED);
        const AMBIGUOUS: &str = sometimes(witness::AMBIGUOUS);
        vec![
            Property::always("I1 stale-never-counts", |_, r: &Reached<B>| {
                !r.state.oracle.violated(Invariant::I1)
            }),
            Property::always("I2 single-holder", |_, r: &Reached<B>| {
                !r.state.oracle.violated(Invariant::I2)
            }),
            Property::always("I3 no-lost-event", |_, r: &Reached<B>| {
                !r.state.oracle.violated(Invariant::I3)
            }),
            Property::always("I4 frontier-sound", |_, r: &Reached<B>| {
                !r.state.oracle.violated(Invariant::I4)
            }),
            Property::always("I5 attempts-bounded", |_, r: &Reached<B>| {
                !r.state.oracle.violated(Invariant::I5)
            }),
            Property::always(
                "I6 eventually-settled (terminal states)",
                |m: &ExplorerModel<B>, r: &Reached<B>| {
                    let s = &r.state;
                    LeaseModel::violating(s) || m.0.has_action(s) || LeaseModel::settled(s)
                },
            ),
            Property::sometimes(STALE, |_, r: &Reached<B>| {
                r.witnessed & witness::STALE_REFUSED != 0
            }),
            Property::sometimes(REDELIVERED, |_, r: &Reached<B>| {
                r.witnessed & witness::REDELIVERED != 0
            }),
            Property::sometimes(DEAD, |_, r: &Reached<B>| {
                r.witnessed & witness::DEAD_LETTERED != 0
            }),
            Property::sometimes(AMBIGUOUS, |_, r: &Reached<B>| {
                r.witnessed & witness::AMBIGUOUS != 0
            }),
        ]
    }
}
