//! How these tests find a nats-server: the rule every server-backed backend's tests share
//! ([`leasehold_conformance::servers`]), for `leasehold_jetstream`.
#![allow(dead_code)]

use leasehold_conformance::servers::{Found, TestServer};
use leasehold_jetstream::{ping, NatsServer, Target};
use std::sync::Arc;

/// The server these tests need.
pub const SERVER: TestServer<NatsServer> = TestServer {
    name: "nats-server",
    url_var: "LEASEHOLD_NATS_URL",
    install: "install nats-server; see docs/jetstream.md",
    ping,
    start: NatsServer::start,
};

/// A server for a test that does not restart it, or `None` (after printing why).
pub fn shared_target(test: &str) -> Option<Target> {
    Some(match SERVER.shared(test)? {
        Found::Url(url) => Target::Url(url),
        Found::Started(server) => Target::Owned(server),
    })
}

/// A private server this test may restart, or `None` (after printing why).
pub fn owned_server(test: &str) -> Option<Arc<NatsServer>> {
    SERVER.owned(test)
}
