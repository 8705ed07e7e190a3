//! leasehold's front door: the model checker, simulator campaigns, scenario replays,
//! timelines and the verdict matrix as calls a test suite makes, in the style of proptest and
//! loom. Add the `leasehold` crate (which re-exports this one) as a dev-dependency.
//!
//! A failed assertion panics with the verdict, the timeline of the failing run, the scenario
//! file it wrote and the exact `leasehold …` command that reproduces it.
//!
//! ```
//! use leasehold_front::{self as leasehold, CheckConfig, Invariant, Variant};
//!
//! // The reference protocol holds in a small configuration …
//! let small = CheckConfig { event_count: 1, worker_count: 2, ..CheckConfig::tailored_for(Variant::Fenced) };
//! leasehold::check(small).out("target/doc-leasehold").run()?.assert_holds();
//!
//! // … and a planted mutant that acks by event id does not: the counterexample is a scenario.
//! let mutant = leasehold::check(CheckConfig::tailored_for(Variant::UnfencedSettle))
//!     .out("target/doc-leasehold")
//!     .run()?;
//! let found = mutant.assert_violates(Invariant::I1);
//! assert!(found.replays);
//! # Ok::<(), leasehold_front::Error>(())
//! ```
//!
//! * [`check()`] — exhaustive model checking of one bounded configuration, on the reference
//!   broker or on a broker of one's own ([`Check::broker`], [`CheckedBroker`]);
//!   [`checked_backend()`] registers that broker for the command line's `check`, and
//!   [`backend()`] for campaigns, replays and shrinks. A backend is a value
//!   ([`BackendKind`]: the reference broker, or a [`BackendFactory`] carrying its own
//!   configuration).
//! * [`campaign()`] — a seeded simulator campaign, on the pure broker or a backend of yours.
//! * [`shrink()`] — a failing scenario minimised on the backend it failed on, written as a
//!   scripted scenario that replays to the same invariant there.
//! * [`Backends`] — the registered backends by name: what `--backend NAME` selects.
//! * [`replay()`] — a scenario file on a backend: its timeline (for `insta::assert_snapshot!`)
//!   and its verdict; [`replay_styled`] renders the timeline with times and deadlines.
//! * [`matrix`] — every variant through every engine, each cell judged against the
//!   expectation docs/variants.md states.
//! * [`conformance`] — the conformance suite of the `Backend` contract: your backend against
//!   the reference broker, operation sequence by operation sequence.
//! * [`check_report`] — a model check's printed report: its text and its JSON.
//! * [`campaign_report`] — a campaign's printed summary, its failing seeds written, the merge
//!   of a sharded campaign.
//! * [`seeded`] — one seed as the command line reports it, a seeded scenario file loaded.
//! * [`stream`] — a seeded run's timeline streamed to standard output; a seeded file's replay
//!   in text or JSON.
//! * [`draw`] — a scenario's run drawn as SVG, with the command that draws it again.
//! * [`progress`] — the progress of a seed, a drawing or a campaign, told to a display.
//! * [`protocols`] — the variants and mutants, listed with their check configurations.
//! * [`defaults`] — the defaults the command line and these calls share.
//! * [`files`] — atomic writes, never-overwriting writes.
//! * [`failure`] — what a failed assertion prints, and how reproducing commands start by
//!   default.
#![deny(missing_docs)]

pub mod budget;
pub mod campaign;
pub mod campaign_report;
pub mod check;
pub mod check_flags;
pub mod check_report;
pub mod defaults;
pub mod draw;
mod error;
pub mod failure;
pub mod files;
pub mod matrix;
pub mod progress;
pub mod protocols;
pub mod registry;
pub mod replay;
pub mod seeded;
pub mod shrink;
pub mod sim_flags;
pub mod stream;

pub use campaign::{campaign, CampaignRun, Campaigned, SeedFailure};
pub use check::{backend, check, checked_backend, Check, Checked, CheckedBackend, Found};
pub use error::Error;
pub use failure::Failure;
pub use registry::{Backends, Server};
pub use replay::{replay, replay_styled, Replayed, Style};
pub use shrink::{shrink, Shrink, Shrinking};

pub use leasehold_conformance as conformance;
pub use leasehold_model as model;
pub use leasehold_model::check::{CheckConfig, CheckedBroker};
pub use leasehold_model::{Backend, BackendFactory, BrokerConfig, BrokerView, Invariant, Variant};
pub use leasehold_sim as sim;
pub use leasehold_sim::seeded::{BackendKind, Setup};
