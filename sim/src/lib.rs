//! The seeded discrete-event simulator, scenario files and timelines.
//!
//! * [`engine`] — the deterministic executor: a backend and workers on virtual time, an event
//!   queue, the consumer runtime, the oracle after every step; live state only.
//! * [`event`] — the engine's event stream, in the order things happened.
//! * [`hash`] — the trace hash: a rolling hash of the event stream's binary encoding.
//! * [`recorder`] — the optional sink that keeps a run's events and builds its trace.
//! * [`trace`] — the structured, line-by-line trace a recorder builds.
//! * [`timeline`] — the text timeline rendered from a trace.
//! * [`svg`] — the SVG timeline: a lane per worker, lease bars, settles marked.
//! * [`coverage`] — probes of rare situations, counted per run and per campaign.
//! * [`bound`] — the named bounds that stop a run without a verdict (inconclusive).
//! * [`world`] — the external world the handlers write to (duplicates, ghost writes).
//! * [`scenario`] — the scenario file format (scripted and seeded forms).
//! * [`parse`] — scenario text to a runnable script, with file:line:column errors.
//! * [`script`] — runs a scripted scenario on any backend and checks its expectations.
//! * [`counterexample`] — a model-checker counterexample as a scripted scenario, and its replay.
//! * [`seeded`] — the seeded simulator: fault plans, workloads, campaigns, shrinking.
#![deny(missing_docs)]

pub mod bound;
pub mod counterexample;
pub mod coverage;
pub mod drawing;
pub mod engine;
pub mod event;
pub mod hash;
pub mod parse;
pub mod recorder;
pub mod scenario;
pub mod script;
pub mod seeded;
pub mod svg;
pub mod timeline;
pub mod trace;
pub mod world;

pub use seeded::run_seeded;
