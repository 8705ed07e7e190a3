//! The JetStream crate's integration tests, one binary: each file is a module.

mod conformance;
mod scenarios;
mod server;
mod server_facts;
mod testing;
