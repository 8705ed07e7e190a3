//! The lease/ACK protocol as a pure state machine, and the oracle that checks it.
//!
//! * [`types`] — identifiers, leases, delivery records, settle operations and errors.
//! * [`variant`] — the reference protocol, backend variants and planted mutants, by name.
//! * [`broker`] — the broker state machine: publish, fetch, ack, nack, renew, reject, expiry,
//!   restart, the committed frontier.
//! * [`channels`] — `rabbitmq-channel`'s channels: a worker's channel per group, delivery
//!   tags, the deliveries a channel holds and returns when it closes.
//! * [`backend`] — the `Backend` trait: a broker under test, as the engines drive it.
//! * [`factory`] — the `BackendFactory` trait: a backend registered as a value carrying its
//!   configuration, building one broker per run.
//! * [`runtime`] — the consumer runtime's pure decisions: ack policies and settle-error
//!   classification.
//! * [`invariant`] — the invariants I1–I7 and their stable names.
//! * [`oracle`] — ghost bookkeeping that checks the invariants after every step.
//! * [`mod@detail`] — what a violation saw: its words and the events and leases it names.
//! * [`check`] — exhaustive model checking of a bounded configuration, on the reference
//!   broker or any [`CheckedBroker`]: the history-free state, the proof search, liveness
//!   (ranking function or fair cycles), shortest counterexamples, `check` as a library call.
#![deny(missing_docs)]

pub mod backend;
pub mod broker;
pub mod channels;
pub mod check;
pub mod detail;
pub mod factory;
pub mod inline;
pub mod invariant;
pub mod oracle;
pub mod runtime;
pub mod server_pool;
pub mod types;
pub mod variant;

pub use backend::Backend;
pub use broker::{Broker, BrokerConfig, BrokerView, Expired, SettleRequest, Timer};
pub use check::CheckedBroker;
pub use detail::Detail;
pub use factory::BackendFactory;
pub use invariant::Invariant;
pub use oracle::{Issuance, Oracle, OracleConfig, Violation};
pub use runtime::{AckPolicy, ErrorAction, HandleCall, Outcome};
pub use types::{
    GroupIx, Lease, LeaseId, Ms, Reason, Receipt, Record, Seq, SettleError, SettleOp, Status,
};
pub use variant::{Variant, VariantKind};
