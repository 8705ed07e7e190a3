//! The RabbitMQ backend's integration tests, one binary: each file is a module.

mod conformance;
mod scenarios;
mod testing;
