//! How these tests find a RabbitMQ server: the rule every server-backed backend's tests share
//! ([`leasehold_conformance::servers`]), for `leasehold_rabbitmq`: `LEASEHOLD_RABBITMQ_URL`
//! (`.ci/run` starts a private node and sets it). This backend starts no server of its own.
#![allow(dead_code)]

use leasehold_conformance::servers::{Found, TestServer};
use leasehold_rabbitmq::ping;

/// No private server: the backend starts none.
#[derive(Debug)]
pub struct NoServer;

fn start() -> Result<NoServer, String> {
    Err("this backend starts no server of its own".to_string())
}

/// The server these tests need.
pub const SERVER: TestServer<NoServer> = TestServer {
    name: "RabbitMQ",
    url_var: "LEASEHOLD_RABBITMQ_URL",
    install: "install rabbitmq-server and start a node as .ci/run does; see docs/rabbitmq.md",
    ping,
    start,
};

/// The server's URL, or `None` (after printing why).
pub fn url(test: &str) -> Option<String> {
    match SERVER.shared(test)? {
        Found::Url(url) => Some(url),
        Found::Started(_) => None,
    }
}
