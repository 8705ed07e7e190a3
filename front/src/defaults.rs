//! The defaults the command line and the library share: the model checker's state bounds and
//! threads, the simulator's run template, its expiry mode and its threads, so a run built here
//! is the run the printed command makes. Each is defined here once.

use leasehold_model::{AckPolicy, Variant};
use leasehold_sim::engine::Expiry;
use leasehold_sim::seeded::campaign::THREADS_MAX;
use leasehold_sim::seeded::{FaultPlan, Setup, Workload};

/// The default bound on the states the model checker generates (`leasehold check
/// --max-states`).
pub const STATES_MAX: u64 = 2_000_000_000;

/// The bound on the shortest-counterexample search (breadth-first, without symmetry).
pub const COUNTEREXAMPLE_STATES_MAX: u64 = 50_000_000;

/// Events published at time 0 in a simulator run (`leasehold sim --events`).
pub const SIM_EVENTS: u32 = 20;
/// Consumer groups of a simulator run (`--groups`).
pub const SIM_GROUPS: u32 = 2;
/// Workers of a simulator run (`--workers`).
pub const SIM_WORKERS: u32 = 3;
/// Deliveries per (group, event) before dead-lettering (`--max-attempts`).
pub const SIM_MAX_ATTEMPTS: u32 = 3;
/// The lease duration of a simulator run (`--lease-ms`).
pub const SIM_LEASE_MS: u64 = 30_000;

/// When a simulator campaign's broker expires leases (`leasehold sim --expiry`): `mixed`, each
/// seed draws `at_deadline` or `on_fetch`.
pub const SIM_EXPIRY: &str = "mixed";

/// Whether [`SIM_EXPIRY`] has each seed draw its expiry mode.
pub fn sim_expiry_mixed() -> bool {
    SIM_EXPIRY == "mixed"
}

/// Campaign threads (`leasehold sim --threads`): one per core the process may use, at most
/// [`THREADS_MAX`]. The results do not depend on it.
pub fn sim_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(THREADS_MAX))
}

/// Model-checking search threads (`leasehold check --threads`). The verdicts do not depend on
/// it.
pub const CHECK_THREADS: usize = 1;

/// The simulator's run template for `variant` with every flag of `leasehold sim` at its
/// default: `nack_on_error`, [`SIM_EVENTS`] events, [`SIM_GROUPS`] groups, [`SIM_WORKERS`]
/// workers, the default fault plan and workload for the lease, bounds derived from the size.
/// An error names the field that is wrong.
pub fn sim_template(variant: Variant) -> Result<Setup, String> {
    let mut setup = Setup::default_for(variant);
    setup.policy = AckPolicy::NackOnError;
    setup.max_attempts = SIM_MAX_ATTEMPTS;
    setup.lease_ms = SIM_LEASE_MS;
    setup.workload = Workload::for_lease(SIM_LEASE_MS);
    setup.faults = FaultPlan::for_lease(SIM_LEASE_MS);
    setup.resize(SIM_EVENTS, SIM_GROUPS as usize, SIM_WORKERS as usize);
    setup.expiry = Expiry::default();
    setup.derive_bounds(true, true);
    setup.validate().map_err(|e| e.for_flags())?;
    Ok(setup)
}
