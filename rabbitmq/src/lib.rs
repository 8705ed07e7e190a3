//! The RabbitMQ backend: leasehold's `rabbitmq` variant — a quorum queue per consumer group,
//! consumed with `basic.get` and manual acks, one channel per delivery — on a real RabbitMQ
//! server, driven by the same engines, scenarios and oracle as the pure broker, on the
//! engine's virtual time (docs/rabbitmq.md).
//!
//! * [`backend`] — [`RabbitBackend`]: an exchange and queues per run; publish with confirms,
//!   fetch, settle, expiry by closing a delivery's channel, dead letters read back.
//! * `channel` — the `rabbitmq-channel` variant: a connection per worker, a channel per
//!   worker and group holding several deliveries.
//! * [`factory`] — [`RabbitMq`]: the backend as a registered value (`BackendFactory`).
//! * [`traits`] — the `Backend` and `BrokerView` implementations.
//! * [`conn`] — URLs (`amqp://user:password@host:port/vhost`), connecting, and URLs shown
//!   with their password hidden.
//!
//! ```no_run
//! use leasehold_model::{Backend, BrokerConfig, Variant};
//! use leasehold_rabbitmq::RabbitMq;
//!
//! let config = BrokerConfig { group_count: 1, lease_ms: 200, max_attempts: 2, variant: Variant::RabbitMq };
//! let mut mq = RabbitMq::default().backend(&config)?;
//! mq.publish();
//! let lease = mq.fetch(0, 1, 0, None).unwrap().remove(0);
//! assert_eq!(lease.attempt, 1);
//! # Ok::<(), String>(())
//! ```
#![deny(missing_docs)]

pub mod backend;
mod channel;
pub mod conn;
pub mod factory;
pub mod traits;

pub use backend::{check_config, RabbitBackend, VARIANTS};
pub use conn::{ping, redacted};
pub use factory::{RabbitMq, DEFAULT_URL};
