//! The seeded discrete-event simulator, scenario files and timelines.
//!
//! * [`scenario`] — the scenario file format (scripted and seeded forms).
#![deny(missing_docs)]

pub mod scenario;
