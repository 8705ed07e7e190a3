//! The conformance crate's integration tests, one binary: each file is a module.

mod suite;
