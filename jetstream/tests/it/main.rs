//! The JetStream crate's integration tests, one binary: each file is a module.

mod server;
mod server_facts;
