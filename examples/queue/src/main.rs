//! The `leasehold` command line with this crate's queues registered as `--backend acks-by-id`
//! and `--backend in-memory`: the commands a failing test prints run here as they are.

fn main() -> std::process::ExitCode {
    leasehold::cli::main_with(&[
        leasehold_example_queue::ACKS_BY_ID,
        leasehold_example_queue::FIXED,
    ])
}
