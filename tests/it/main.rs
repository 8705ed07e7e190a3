//! The command line's integration tests, one binary: each file is a module.

mod check_cli;
mod check_replay;
mod cli;
mod postgres_cli;
mod redis_cli;
mod replay_cli;
mod report;
mod run;
mod sim_cli;
