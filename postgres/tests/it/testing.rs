//! How these tests find a PostgreSQL server: the rule every server-backed backend's tests share
//! ([`leasehold_conformance::servers`]), for `leasehold_postgres`. Also included by the command line's
//! tests (`tests/it/main.rs`); not every binary uses every function.
#![allow(dead_code)]

use leasehold_conformance::servers::{Found, TestServer};
use leasehold_postgres::{ping, PgServer, Target};
use std::sync::Arc;

/// The server these tests need.
pub const SERVER: TestServer<PgServer> = TestServer {
    name: "PostgreSQL",
    url_var: "LEASEHOLD_POSTGRES_URL",
    install: "install postgresql; see docs/postgres.md",
    ping,
    start: PgServer::start,
};

/// A server for a test that does not restart it, or `None` (after printing why).
pub fn shared_target(test: &str) -> Option<Target> {
    Some(match SERVER.shared(test)? {
        Found::Url(url) => Target::Url(url),
        Found::Started(server) => Target::Owned(server),
    })
}

/// A private server this test may restart, or `None` (after printing why).
pub fn owned_server(test: &str) -> Option<Arc<PgServer>> {
    SERVER.owned(test)
}
