//! How these tests find a Redis server: the rule every server-backed backend's tests share
//! ([`leasehold_conformance::servers`]), for `leasehold_redis`. Also included by the command line's
//! tests (`tests/it/main.rs`) and the Redis benchmark (`examples/redis_bench.rs`); not every binary uses every function.
#![allow(dead_code)]

use leasehold_conformance::servers::{Found, TestServer};
use leasehold_redis::{ping, RedisServer, Target};
use std::sync::Arc;

/// The server these tests need.
pub const SERVER: TestServer<RedisServer> = TestServer {
    name: "Redis",
    url_var: "LEASEHOLD_REDIS_URL",
    install: "install redis-server; see docs/redis.md",
    ping,
    start: RedisServer::start,
};

/// A server for a test that does not restart it, or `None` (after printing why).
pub fn shared_target(test: &str) -> Option<Target> {
    Some(match SERVER.shared(test)? {
        Found::Url(url) => Target::Url(url),
        Found::Started(server) => Target::Owned(server),
    })
}

/// A private server this test may restart, or `None` (after printing why).
pub fn owned_server(test: &str) -> Option<Arc<RedisServer>> {
    SERVER.owned(test)
}
