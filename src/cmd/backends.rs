//! Backends a suite registers with its own build of the command line
//! ([`crate::cli::main_with`]): `--backend NAME` of `sim` and `replay` finds them by name.

use leasehold_sim::seeded::BackendKind;
use std::sync::OnceLock;

static REGISTERED: OnceLock<Vec<BackendKind>> = OnceLock::new();

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
