//! `cfg(leasehold_no_redis)` when this machine has no Redis server for the command-line tests
//! of the Redis backend (see `redis/probe.rs`).

include!("redis/probe.rs");

fn main() {
    probe("redis-server", "LEASEHOLD_REDIS_URL", "leasehold_no_redis");
}
