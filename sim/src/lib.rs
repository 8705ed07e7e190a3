//! The seeded discrete-event simulator, scenario files and timelines.
//!
//! * [`engine`] — the deterministic executor: a backend and workers on virtual time, an event
//!   queue, the consumer runtime, the oracle after every step.
//! * [`trace`] — the structured trace a run records, and its stable hash.
//! * [`scenario`] — the scenario file format (scripted and seeded forms).
#![deny(missing_docs)]

pub mod engine;
pub mod scenario;
pub mod trace;
