//! The JetStream crate's integration tests, one binary: each file is a module.

mod conformance;
mod factory_flags;
mod scenarios;
mod server;
mod server_facts;
mod stop_wait;
mod testing;
