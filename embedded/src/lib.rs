//! An in-process, thread-safe broker implementing the `fenced` lease protocol, and its adapter
//! to the engines' [`leasehold_model::Backend`] trait.
//!
//! * `sync` — (private) the `cfg(loom)` switch: std or loom atomics, locks, condvar.
//! * [`clock`] — the injected clock: [`ManualClock`] for tests, [`MonotonicClock`] for real use.
//! * `slot` — (private) one record as a packed atomic word claimed by compare-and-swap.
//! * `store` — (private) append-only segmented storage of slots that never move.
//! * [`broker`] — [`EmbeddedBroker`]: publish, fetch, blocking fetch, ack, nack, renew, reject,
//!   expiry, the committed frontier; `&self` everywhere, `Send + Sync`.
//! * [`backend`] — [`EmbeddedBackend`]: the broker as a `Backend` for the scenario executor and
//!   the simulator.
//!
//! ```
//! use leasehold_embedded::{EmbeddedBroker, ManualClock};
//! use leasehold_model::{BrokerConfig, BrokerView, SettleError, Variant};
//! use std::sync::Arc;
//!
//! let config = BrokerConfig { group_count: 1, lease_ms: 100, max_attempts: 3, variant: Variant::Fenced };
//! let clock = Arc::new(ManualClock::new(0));
//! let broker = EmbeddedBroker::new(&config, clock.clone()).unwrap();
//! broker.publish();
//! let first = broker.fetch(0, 1, None).unwrap().remove(0);
//! clock.advance(100); // the lease expires at its deadline
//! let second = broker.fetch(0, 1, None).unwrap().remove(0);
//! assert_eq!(second.attempt, 2);
//! assert_eq!(broker.ack(&first), Err(SettleError::StaleLease)); // a stale token is a no
//! broker.ack(&second).unwrap();
//! assert_eq!(broker.frontier(0), 1);
//! ```
#![deny(missing_docs)]

pub mod backend;
pub mod broker;
pub mod clock;
mod slot;
// Reachable for the crate's tests in `tests/it`.
#[doc(hidden)]
pub mod store;
mod sync;

pub use backend::EmbeddedBackend;
pub use broker::EmbeddedBroker;
#[cfg(loom)]
pub use broker::PlantedBug;
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use slot::ATTEMPTS_MAX;

#[cfg(not(loom))]
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<EmbeddedBroker>();
};
