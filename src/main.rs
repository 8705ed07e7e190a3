//! `leasehold`: model-check, simulate, replay and draw lease/ACK queue protocols.

use clap::Parser;
use leasehold::cli::{Cli, Command};
use leasehold::cmd;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return leasehold::cli::usage_error(error),
    };
    // Private redis-server processes (`--redis-spawn`) stop with the command, also on a panic.
    struct StopRedis;
    impl Drop for StopRedis {
        fn drop(&mut self) {
            cmd::redis::shutdown();
        }
    }
    let _stop_redis = StopRedis;
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(args),
        Command::Sim(args) => cmd::sim::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Shrink(args) => cmd::shrink::run(args),
        Command::Timeline(args) => cmd::timeline::run(args),
        Command::Protocols(args) => cmd::protocols::run(args),
        Command::Report(args) => cmd::report::run(args),
    };
    match result {
        Ok(status) => status.into(),
        Err(error) => {
            eprintln!("leasehold: error: {error}");
            leasehold::cli::Status::BadInput.into()
        }
    }
}
