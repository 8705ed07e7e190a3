//! The Redis Streams backend: leasehold's `redis-streams` and `redis-streams-fenced` variants
//! run on a real Redis server, driven by the same engines, scenarios and oracle as the pure
//! broker, on the engine's virtual time.
//!
//! * [`backend`] — [`RedisBackend`]: publish, fetch (XCLAIM / XREADGROUP), the plain (XACK)
//!   and fenced (server-side script) settles, dead letters, expiry on virtual time, restart.
//! * [`factory`] — [`Redis`]: the backend as a registered value, with where its runs go (a URL,
//!   or private servers it spawns).
//! * [`traits`] — the `Backend` and `BrokerView` implementations, in one place.
//! * [`mirror`] — [`Mirror`]: the records as read from the server's replies, in the model's
//!   types, for the oracle's per-step reads.
//! * [`state`] — reading a run's whole state from the server alone.
//! * [`keys`] — a run's key prefix and keys; sequence numbers ↔ entry ids.
//! * [`conn`] — the connection, and [`Target`]: a server at a URL, or one this process runs.
//! * [`server`] — [`RedisServer`]: a private `redis-server` (AOF, `appendfsync always`) that
//!   can be killed and restarted; [`ServerPool`].
//!
//! The Lua scripts are `src/lua/settle.lua` (the fenced settle, written to be copied into a
//! consumer of your own) and `src/lua/lease.lua` (lease ids and delivery counts after a claim).
//!
//! ```no_run
//! use leasehold_model::{BrokerConfig, Variant};
//! use leasehold_redis::{RedisBackend, Target};
//!
//! let config = BrokerConfig { group_count: 1, lease_ms: 200, max_attempts: 2, variant: Variant::RedisStreams };
//! let mut redis = RedisBackend::new(&config, Target::Url("redis://127.0.0.1:6379".into()))?;
//! redis.publish();
//! let lease = redis.fetch_as("c1", 0, 1, 0, None).unwrap().remove(0);
//! assert_eq!(lease.attempt, 1); // the delivery count, from XPENDING
//! # Ok::<(), String>(())
//! ```
#![deny(missing_docs)]

pub mod backend;
pub mod conn;
pub mod factory;
pub mod keys;
pub mod mirror;
pub mod server;
pub mod state;
pub mod traits;

pub use backend::{check_config, delete_keys, RedisBackend, DEFAULT_CONSUMER, VARIANTS};
pub use conn::{ping, redacted, restart_refusal, Target};
pub use factory::{Redis, DEFAULT_URL};
pub use keys::Keys;
pub use mirror::Mirror;
pub use server::{PooledServer, RedisServer, ServerPool};
pub use state::ServerState;
