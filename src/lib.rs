//! `leasehold`: the one crate to add. It re-exports the front door ([`leasehold_front`]) —
//! [`check()`], [`campaign()`], [`replay()`], the verdict [`matrix`] — and holds the
//! `leasehold` command line as a library (used by the binary and by a suite that builds its
//! own command line with its backend registered: [`cli::main_with`]).
//!
//! * [`cli`] — the argument grammar, exit statuses, one-line usage errors, `main_with`.
//! * [`cmd`] — one module per command: `check`, `sim`, `replay`, `shrink`, `timeline`,
//!   `protocols`, `report`.
#![deny(missing_docs)]

pub mod cli;
pub mod cmd;

pub use leasehold_front::*;
