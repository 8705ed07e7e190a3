//! `cfg(leasehold_no_redis)` when this machine has no Redis server for the tests (see
//! `probe.rs`).

include!("probe.rs");

fn main() {
    probe("redis-server", "LEASEHOLD_REDIS_URL", "leasehold_no_redis");
}
