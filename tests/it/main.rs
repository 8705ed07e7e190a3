//! The command line's integration tests, one binary: each file is a module.

mod check_cli;
mod check_replay;
mod cli;
mod postgres_cli;
#[path = "../../postgres/tests/it/testing.rs"]
mod postgres_testing;
mod redis_cli;
#[path = "../../redis/tests/it/testing.rs"]
mod redis_testing;
mod replay_cli;
mod report;
mod run;
mod sim_cli;
