//! A user's crate that depends on `leasehold` with `default-features = false`: the library
//! alone — checks, campaigns, replays, shrinks and timelines — without the command line's
//! argument parser, progress bars or interrupt handling, and without any server client. Its
//! test (`tests/library.rs`) makes each call; `.ci/run` checks its dependency tree.
#![deny(missing_docs)]

/// The workspace folder the test reads scenarios from and writes findings under.
pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
