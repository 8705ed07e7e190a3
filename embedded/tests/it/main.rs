//! The embedded broker's integration tests, one binary: each file is a module. The loom models
//! (`loom.rs`) are a binary of their own: they build only under `--cfg loom`.

mod blocking;
mod conformance;
mod linearizability;
mod scenarios;
mod store_segments;
mod stress;
