//! The NATS JetStream backend of leasehold, in progress.
//!
//! For now the crate holds the program that observes, on a real `nats-server`, the behaviours
//! the model's `jetstream` variant is built on: `examples/facts.rs` (its findings are
//! `docs/jetstream.md`). The `Backend` implementation over a server is still to come.
#![deny(missing_docs)]
