//! The PostgreSQL backend's integration tests, one binary: each file is a module.

mod conformance;
mod factory_flags;
mod scenarios;
mod testing;
