//! `cfg(leasehold_no_postgres)` when this machine has no PostgreSQL server for the tests (the
//! probe is shared with the Redis backend: `redis/probe.rs`).

include!("../redis/probe.rs");

fn main() {
    probe("pg_ctl", "LEASEHOLD_POSTGRES_URL", "leasehold_no_postgres");
}
