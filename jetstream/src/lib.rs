//! The NATS JetStream backend: leasehold's `jetstream` variant on a real nats-server, driven by
//! the same engines, scenarios and oracle as the pure broker, on the engine's virtual time.
//!
//! * [`backend`] — [`JsBackend`]: a stream per run, a durable explicit-ack pull consumer per
//!   group; a lease is a delivery, every settle goes to its reply subject.
//! * [`factory`] — [`JetStream`]: the backend as a registered value (`BackendFactory`), at a
//!   URL or on private servers it starts.
//! * [`traits`] — the `Backend` and `BrokerView` implementations.
//! * [`conn`] — [`Target`], connecting, and URLs shown with their password hidden.
//! * [`server`] — [`NatsServer`]: a private `nats-server -js` that a broker restart stops
//!   cleanly and starts again; [`ServerPool`], which lends one to each run.
//! * [`stop`] — when a broker restart may stop the server, and the consumer state files a stop
//!   emptied put back (nats-server 2.9.10, docs/jetstream.md F20).
//!
//! `examples/facts.rs` is the program that observed the server facts the variant rests on
//! (docs/jetstream.md).
//!
//! ```no_run
//! use leasehold_jetstream::{JsBackend, Target};
//! use leasehold_model::{BrokerConfig, Variant};
//!
//! let config = BrokerConfig { group_count: 1, lease_ms: 200, max_attempts: 2, variant: Variant::JetStream };
//! let mut js = JsBackend::new(&config, Target::Url("nats://127.0.0.1:4222".to_string()))?;
//! js.publish();
//! let lease = js.fetch(0, 1, 0, None).unwrap().remove(0);
//! assert_eq!(lease.attempt, 1);
//! # Ok::<(), String>(())
//! ```
#![deny(missing_docs)]

pub mod backend;
pub mod conn;
pub mod factory;
pub mod server;
pub mod stop;
pub mod traits;

pub use backend::{check_config, parse_reply, ConsumerState, JsBackend, ACK_WAIT, VARIANTS};
pub use conn::{ping, redacted, restart_refusal, Target};
pub use factory::{JetStream, DEFAULT_URL};
pub use server::{NatsServer, PooledServer, ServerPool};
pub use stop::states_put_back;
