//! The seeded discrete-event simulator, scenario files and timelines.
//!
//! * [`scenario`] — the scenario file format (scripted and seeded forms).
//! * [`seeded`] — the seeded simulator: fault plans, workloads, campaigns, shrinking.
#![deny(missing_docs)]

pub mod scenario;
pub mod seeded;

pub use seeded::run_seeded;
