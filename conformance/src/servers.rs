//! How the tests of a server-backed backend (Redis, PostgreSQL) find a real server: one rule
//! for every such backend, described by a [`TestServer`].
//!
//! * The URL variable set (`.ci/run` starts a server and sets it): that server, for tests that
//!   never restart it ([`TestServer::shared`]), once it answers.
//! * Otherwise, or for a test that restarts the server ([`TestServer::owned`]): a private
//!   server started by the test, when the program can be run.
//! * Neither: with `CI=true` the test fails; locally it prints why (past the test harness's
//!   capture) and the test returns early. A machine with neither the variable nor the server's
//!   program on its `PATH` is seen when the tests are built (`redis/probe.rs`): those tests are
//!   then `ignored`, with the reason.

use leasehold_model::factory::redacted_url;
use std::sync::Arc;

/// Whether this is a CI run (`CI=true`), where a missing server is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A kind of server a backend's tests need, and how to reach or start one.
#[derive(Debug, Clone, Copy)]
pub struct TestServer<S> {
    /// The server's name in messages (`Redis`, `PostgreSQL`).
    pub name: &'static str,
    /// The environment variable naming a running server (`LEASEHOLD_REDIS_URL`).
    pub url_var: &'static str,
    /// What to do when there is none (`install redis-server; see docs/redis.md`).
    pub install: &'static str,
    /// Whether a server answers at a URL; the error is one line.
    pub ping: fn(&str) -> Result<(), String>,
    /// Starts a private server; the error is one line.
    pub start: fn() -> Result<S, String>,
}

/// The server a test found: the one the URL variable names, or one it started.
#[derive(Debug)]
pub enum Found<S> {
    /// A server someone else runs, by URL (never restarted by a test).
    Url(String),
    /// A private server this test started (and may restart).
    Started(Arc<S>),
}

impl<S> TestServer<S> {
    /// A server for a test that does not restart it, or `None` (after printing why).
    ///
    /// # Panics
    /// Under `CI=true` when no server can be had.
    pub fn shared(&self, test: &str) -> Option<Found<S>> {
        if let Ok(url) = std::env::var(self.url_var) {
            return match (self.ping)(&url) {
                Ok(()) => Some(Found::Url(url)),
                Err(e) => {
                    let why = format!("{}={}: {e}", self.url_var, redacted_url(&url));
                    self.unavailable(test, &why)
                }
            };
        }
        self.owned(test).map(Found::Started)
    }

    /// A private server this test may restart, or `None` (after printing why).
    ///
    /// # Panics
    /// Under `CI=true` when the server cannot be started.
    pub fn owned(&self, test: &str) -> Option<Arc<S>> {
        match (self.start)() {
            Ok(server) => Some(Arc::new(server)),
            Err(e) => self.unavailable(test, &e),
        }
    }

    fn unavailable<T>(&self, test: &str, why: &str) -> Option<T> {
        let message = format!(
            "{test}: no {} server: {why} (set {}, or {})",
            self.name, self.url_var, self.install
        );
        if in_ci() {
            panic!("{message} — CI=true: a {} test never skips", self.name);
        }
        // Past the harness's capture of `eprintln!`: a skip is seen even when the test passes.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED {message}");
        None
    }
}
