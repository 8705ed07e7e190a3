//! The PostgreSQL backend: leasehold's `pg-visibility` and `pg-fenced` variants — the two job
//! tables users write — on a real PostgreSQL server, driven by the same engines, scenarios and
//! oracle as the pure broker, on the engine's virtual time (`now` is always a parameter).
//!
//! * [`sql`] — every statement sent, as constants (docs/postgres.md shows them).
//! * [`backend`] — [`PgBackend`]: a schema per run; publish, fetch (`FOR UPDATE SKIP LOCKED`
//!   in a transaction), one statement per settle, expiry, restart.
//! * [`snapshot`] — [`Snapshot`]: the state read back from the server, in the model's types.
//! * [`factory`] — [`Postgres`]: the backend as a registered value (`BackendFactory`), at a
//!   URL or on private servers it starts.
//! * [`traits`] — the `Backend` and `BrokerView` implementations.
//! * [`conn`] — [`Target`], connecting, and URLs shown with their password hidden.
//! * [`server`] — [`PgServer`]: a private server (`initdb`, loopback, `fsync` on) that a
//!   broker restart shuts down at once and starts again; [`ServerPool`], which lends one to
//!   each run.
//!
//! ```no_run
//! use leasehold_model::{BrokerConfig, Variant};
//! use leasehold_postgres::{PgBackend, Target};
//!
//! let config = BrokerConfig { group_count: 1, lease_ms: 200, max_attempts: 2, variant: Variant::PgFenced };
//! let url = "postgres://postgres@127.0.0.1:5432/postgres".to_string();
//! let mut pg = PgBackend::new(&config, Target::Url(url))?;
//! pg.publish();
//! let lease = pg.fetch(0, 1, 0, None).unwrap().remove(0);
//! assert_eq!(lease.attempt, 1);
//! # Ok::<(), String>(())
//! ```
#![deny(missing_docs)]

pub mod backend;
pub mod conn;
pub mod factory;
pub mod server;
pub mod snapshot;
pub mod sql;
pub mod traits;

pub use backend::{check_config, PgBackend, VARIANTS};
pub use conn::{ping, redacted, restart_refusal, Target};
pub use factory::{Postgres, DEFAULT_URL};
pub use server::{PgServer, PooledServer, ServerPool};
pub use snapshot::Snapshot;
