//! The seeded simulator: one seed, a fault plan and a workload drive a whole run on virtual
//! time; campaigns run ranges of seeds; failures are saved as seeded scenarios and shrunk.
//!
//! * [`ratio`] — probabilities as integer fractions (`3/100`).
//! * [`prng`] — the root seed and one named ChaCha8 generator per component.
//! * [`faults`] — the fault plan, its switches and intensities, swarm draws.
//! * [`workload`] — the `[workload]` table: handler timing, outcome rates, named bounds.
//! * [`setup`] — the effective configuration of one run and the bounds derived from it.
//! * [`backend_kind`] — the broker a run drives: the reference one or a registered value.
//! * [`run`] — one seeded run: a driver of workers, network and faults on the engine.
//! * [`seeded_file`] — seeded scenario files: build a run from one, write one for a failure.
//! * [`campaign`] — ranges of seeds over threads and shards, the recipe line, swarm draws.
//! * [`reachable`] — the coverage probes a setup closes (a fault it needs is off).
//! * [`summary`] — what a campaign found: printable, serialisable, mergeable across shards.
//! * [`shrink`] — minimising a failing seeded scenario.
//! * [`to_script`] — a recorded seeded run as a scripted scenario.
//! * [`ddmin`] — shrinking a scripted scenario by delta debugging.

pub mod backend_kind;
pub mod campaign;
pub mod ddmin;
pub mod faults;
// Reachable for the crate's tests in tests/it.
#[doc(hidden)]
pub mod keystream;
pub mod prng;
pub mod ratio;
pub mod reachable;
pub mod run;
pub mod seeded_file;
pub mod setup;
pub mod shrink;
pub mod summary;
pub mod to_script;
pub mod workload;

pub use backend_kind::BackendKind;
pub use campaign::{Campaign, Ran, Tally};
pub use faults::{Fault, FaultPlan};
pub use prng::Prng;
pub use ratio::Ratio;
pub use run::{RunOptions, RunOutcome};
pub use seeded_file::run_seeded;
pub use setup::{Setup, SetupError};
pub use summary::{CampaignReport, Summary};
pub use workload::Workload;
