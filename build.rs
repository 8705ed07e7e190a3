//! `cfg(leasehold_no_redis)` and `cfg(leasehold_no_postgres)` when this machine has no Redis
//! (PostgreSQL) server for the command-line tests of that backend (see `redis/probe.rs`).

include!("redis/probe.rs");

fn main() {
    probe("redis-server", "LEASEHOLD_REDIS_URL", "leasehold_no_redis");
    probe("pg_ctl", "LEASEHOLD_POSTGRES_URL", "leasehold_no_postgres");
}
