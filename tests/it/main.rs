//! The command line's integration tests, one binary: each file is a module.

mod check_cli;
mod check_replay;
mod cli;
#[cfg(feature = "jetstream")]
mod jetstream_cli;
#[cfg(feature = "postgres")]
mod postgres_cli;
#[cfg(feature = "postgres")]
#[path = "../../postgres/tests/it/testing.rs"]
mod postgres_testing;
#[cfg(feature = "rabbitmq")]
mod rabbitmq_cli;
#[cfg(feature = "redis")]
mod redis_cli;
#[cfg(feature = "redis")]
#[path = "../../redis/tests/it/testing.rs"]
mod redis_testing;
mod replay_cli;
mod report;
mod run;
mod sim_cli;
