//! `leasehold`: model-check, simulate, replay and draw lease/ACK queue protocols.

fn main() -> std::process::ExitCode {
    leasehold::cli::main_with(&[])
}
