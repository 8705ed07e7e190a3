//! The RabbitMQ backend's integration tests, one binary: each file is a module.

mod conformance;
mod refusals;
mod scenarios;
mod testing;
mod urls;
