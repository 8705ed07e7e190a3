//! `leasehold`: the one crate to add. It re-exports the front door ([`leasehold_front`]) —
//! [`check()`], [`campaign()`], [`replay()`], [`shrink()`], the verdict [`matrix`] — and,
//! with the `cli` feature (on by default), holds the `leasehold` command line as a library
//! (used by the binary and by a suite that builds its own command line with its backend
//! registered: `cli::main_with`). With `default-features = false` it is the library alone:
//! no argument parser, progress bars or server clients.
//!
//! * `cli` — (feature `cli`) the argument grammar, exit statuses, one-line usage errors,
//!   `main_with`.
//! * `status` — (feature `cli`) what a command returns: its exit status or a user error.
//! * `cmd` — (feature `cli`) one module per command: `check`, `sim`, `replay`, `shrink`,
//!   `timeline`, `protocols`, `report`.
//! * `redis` — (feature `redis`) the Redis backend, `leasehold_redis`.
//! * `postgres` — (feature `postgres`) the PostgreSQL backend, `leasehold_postgres`.
//! * `rabbitmq` — (feature `rabbitmq`) the RabbitMQ backend, `leasehold_rabbitmq`.
//! * `jetstream` — (feature `jetstream`) the NATS JetStream backend, `leasehold_jetstream`.
#![deny(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod cmd;
#[cfg(feature = "cli")]
pub mod status;

pub use leasehold_front::*;

#[cfg(feature = "redis")]
pub use leasehold_redis as redis;

#[cfg(feature = "jetstream")]
pub use leasehold_jetstream as jetstream;
#[cfg(feature = "postgres")]
pub use leasehold_postgres as postgres;
#[cfg(feature = "rabbitmq")]
pub use leasehold_rabbitmq as rabbitmq;
