//! Exhaustive model checking of a bounded configuration.
//!
//! * [`checked`] — the broker under test as the checker sees it: [`CheckedBroker`], the
//!   reference broker's implementation of it.
//! * [`config`] — the bounded configuration (sizes, budgets, renews, fairness) and each
//!   variant's defaults.
//! * [`state`] — the history-free state (broker, lean oracle, workers, requests in flight,
//!   budgets used), its canonical form, the actions and the `sometimes` witnesses.
//! * [`model`] — the transitions and properties; the stateright [`stateright::Model`] for the
//!   cross-checks.
//! * [`explorer`] — the model stateright's Explorer serves: every state with the `sometimes`
//!   witnesses of the transition into it.
//! * [`fingerprint`] — 64-bit state fingerprints.
//! * [`table`] — the shared fingerprint set and the liveness search's node map.
//! * [`rank`] — the ranking function behind I6 with finite budgets.
//! * [`search`] — the proof search: depth-first, multi-threaded with work sharing.
//! * [`engine`] — the second engine: the same model searched by stateright's checker.
//! * [`shortest`] — the breadth-first search for the shortest counterexample.
//! * [`liveness`] — I6 with cycles: the explored graph, Tarjan's SCCs, weak fairness, lassos.
//! * [`path`] — a counterexample replayed with a full oracle, step by step.
//! * [`coverage`] — which cells of the protocol's surface a check reached, and which it did
//!   not cover.
//! * [`mod@run`] — `check` as a library call: the verdict rule and the report.
//!
//! The model is untimed: the broker's clock reads a constant and its leases are practically
//! endless; the passage of time is the action `Expire`, enabled for every pending timer of the
//! broker (a lease's, or one that outlived its lease), so it covers every order of an expiry
//! against the other steps. It does not run the broker's deadline arithmetic (how a fetch or a
//! renew computes a deadline) nor compare a skewed worker clock with it: the report lists those
//! cells as not covered ([`coverage`]). `Expire` brings the clock to the timer's deadline exactly: requests may land at
//! `now == deadline` before the broker's timer fires, which it does at its next fetch (as a
//! Redis claim does).

pub mod checked;
pub mod config;
pub mod coverage;
pub mod engine;
pub mod explorer;
pub mod fingerprint;
pub mod liveness;
pub mod model;
pub mod path;
pub mod rank;
pub mod run;
pub mod search;
pub mod shortest;
pub mod state;
pub mod table;

pub use checked::CheckedBroker;
pub use config::{Budgets, CheckConfig, Fairness, Outcomes, Renews, Time};
pub use coverage::{Cell, Coverage};
pub use engine::Engine;
pub use explorer::ExplorerModel;
pub use model::{LeaseModel, SAFETY, SOMETIMES};
pub use run::{
    run, run_on, time_unsupported, Method, Options, Outcome, PropertyVerdict, Report, Verdict,
};
pub use search::{Counts, Interrupt, Limits};
pub use shortest::{shortest_counterexamples, Counterexample, Search};
pub use state::{Action, LeaseRef, Msg, State, Worker};
