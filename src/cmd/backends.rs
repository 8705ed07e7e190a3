//! Backends a suite registers with its own build of the command line
//! ([`crate::cli::main_with`], [`crate::cli::main_with_checked`]): `--backend NAME` of `sim`
//! and `replay` finds them by name, and `--backend NAME` of `check` the brokers registered
//! for the model checker.

use leasehold_front::CheckedBackend;
use leasehold_sim::seeded::BackendKind;
use std::sync::OnceLock;

static REGISTERED: OnceLock<Vec<BackendKind>> = OnceLock::new();
static CHECKED: OnceLock<Vec<CheckedBackend>> = OnceLock::new();

/// Registers `brokers` for `check --backend` (the first registration stands).
pub fn register_checked(brokers: &[CheckedBackend]) {
    let _ = CHECKED.set(brokers.to_vec());
}

/// The broker registered for `check` as `name`.
pub fn find_checked(name: &str) -> Option<CheckedBackend> {
    CHECKED
        .get()?
        .iter()
        .copied()
        .find(|broker| broker.name() == name)
}

/// The names registered for `check`, for error messages.
pub fn checked_names() -> Vec<&'static str> {
    CHECKED
        .get()
        .map(|brokers| brokers.iter().map(|broker| broker.name()).collect())
        .unwrap_or_default()
}

/// Registers `kinds` for this process (the first registration stands).
pub fn register(kinds: &[BackendKind]) {
    let _ = REGISTERED.set(kinds.to_vec());
}

/// The registered backend named `name`.
pub fn find(name: &str) -> Option<BackendKind> {
    REGISTERED
        .get()?
        .iter()
        .copied()
        .find(|kind| kind.name() == name)
}

/// The registered names, for error messages.
pub fn names() -> Vec<&'static str> {
    REGISTERED
        .get()
        .map(|kinds| kinds.iter().map(|kind| kind.name()).collect())
        .unwrap_or_default()
}
