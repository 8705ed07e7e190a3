//! How tests find a PostgreSQL server.
//!
//! * `LEASEHOLD_POSTGRES_URL` set (`.ci/run` starts a server and sets it): that server, for
//!   tests that never restart it.
//! * Otherwise, or for a test that restarts the server: a private server started by the test
//!   ([`crate::PgServer`]), when `initdb` can be found.
//! * Neither: with `CI=true` the test fails; locally it prints why and skips. A machine with
//!   neither the variable nor `pg_ctl` on its `PATH` is seen when the tests are built
//!   (`cfg(leasehold_no_postgres)`, set by `build.rs`): those tests are then `ignored`, with
//!   the reason.

use crate::conn::{ping, redacted, Target};
use crate::server::PgServer;
use std::sync::Arc;

/// The environment variable naming a running server.
pub const URL_VAR: &str = "LEASEHOLD_POSTGRES_URL";

/// Whether this is a CI run (`CI=true`), where a missing server is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A server for a test that does not restart it, or `None` (after printing why).
///
/// # Panics
/// Under `CI=true` when no server can be had.
pub fn shared_target(test: &str) -> Option<Target> {
    if let Ok(url) = std::env::var(URL_VAR) {
        return match ping(&url) {
            Ok(()) => Some(Target::Url(url)),
            Err(e) => unavailable(test, &format!("{URL_VAR}={}: {e}", redacted(&url))),
        };
    }
    owned_server(test).map(Target::Owned)
}

/// A private server this test may restart, or `None` (after printing why).
///
/// # Panics
/// Under `CI=true` when the server cannot be started.
pub fn owned_server(test: &str) -> Option<Arc<PgServer>> {
    match PgServer::start() {
        Ok(server) => Some(Arc::new(server)),
        Err(e) => unavailable(test, &e),
    }
}

fn unavailable<T>(test: &str, why: &str) -> Option<T> {
    let message = format!(
        "{test}: no PostgreSQL server: {why} (set {URL_VAR}, or install postgresql; see \
         docs/postgres.md)"
    );
    if in_ci() {
        panic!("{message} — CI=true: a Postgres test never skips");
    }
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {message}");
    None
}
