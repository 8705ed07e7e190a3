//! The `leasehold` command line with this crate's queues registered as `--backend acks-by-id`
//! and `--backend in-memory` — for `check` (the model checker explores the queue itself) as
//! for `sim` and `replay`: the commands a failing test prints run here as they are.

fn main() -> std::process::ExitCode {
    leasehold::cli::main_with_checked(&[
        leasehold_example_queue::checked_acks_by_id(),
        leasehold_example_queue::checked_fixed(),
    ])
}
