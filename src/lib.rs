//! The `leasehold` command line as a library, so integration tests can drive it.
//!
//! * [`cli`] — the argument grammar, exit statuses and one-line usage errors.
//! * [`cmd`] — one module per command: `check`, `sim`, `replay`, `shrink`, `timeline`,
//!   `protocols`, `report`.
//! * [`files`] — atomic writes and never-overwriting output files.
#![deny(missing_docs)]

pub mod cli;
pub mod cmd;
pub mod files;

pub use leasehold_model as model;
pub use leasehold_sim as sim;
