//! Exhaustive model checking of a bounded configuration with stateright.
//!
//! * [`config`] — the bounded configuration (sizes, budgets) and each variant's defaults.
//! * [`state`] — the model state (broker, oracle, workers, requests in flight) and actions.
//! * [`model`] — the stateright `Model`: transitions and properties (I1–I6, reachability).
//! * [`shortest`] — our own breadth-first search for the shortest counterexample.
//! * [`trace`] — a counterexample as steps and as a timeline in the seed's wording.
//!
//! The model is untimed: the broker's clock reads 0 and its leases are practically endless;
//! expiry is the action `Expire`, enabled whenever a record holds an armed lease, so it covers
//! every timing and every clock skew.

pub mod config;
pub mod model;
pub mod shortest;
pub mod state;
pub mod trace;

pub use config::{Budgets, CheckConfig};
pub use model::{LeaseModel, REACHABILITY, SAFETY};
pub use shortest::{shortest_counterexamples, Counterexample, Search};
pub use state::{Action, Msg, State, Worker};
