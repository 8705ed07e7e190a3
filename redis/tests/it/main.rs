//! The Redis backend's integration tests, one binary: each file is a module.

mod backend;
mod conformance;
mod names;
mod policy_table;
mod scenarios;
mod testing;
