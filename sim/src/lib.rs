//! The seeded discrete-event simulator, scenario files and timelines.
//!
//! * [`engine`] — the deterministic executor: a backend and workers on virtual time, an event
//!   queue, the consumer runtime, the oracle after every step.
//! * [`trace`] — the structured trace a run records, and its stable hash.
//! * [`timeline`] — the text timeline rendered from a trace.
//! * [`svg`] — the SVG timeline: a lane per worker, lease bars, settles marked.
//! * [`scenario`] — the scenario file format (scripted and seeded forms).
//! * [`parse`] — scenario text to a runnable script, with file:line:column errors.
//! * [`script`] — runs a scripted scenario on any backend and checks its expectations.
//! * [`counterexample`] — a model-checker counterexample as a scripted scenario, and its replay.
//! * [`seeded`] — the seeded simulator: fault plans, workloads, campaigns, shrinking.
#![deny(missing_docs)]

pub mod counterexample;
pub mod engine;
pub mod parse;
pub mod scenario;
pub mod script;
pub mod seeded;
pub mod svg;
pub mod timeline;
pub mod trace;

pub use seeded::run_seeded;
