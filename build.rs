//! `cfg(leasehold_no_redis)`, `cfg(leasehold_no_postgres)` and `cfg(leasehold_no_rabbitmq)` when
//! this machine has no Redis (PostgreSQL, RabbitMQ) server for the command-line tests of that backend (see `redis/probe.rs`).

include!("redis/probe.rs");

fn main() {
    probe("redis-server", "LEASEHOLD_REDIS_URL", "leasehold_no_redis");
    probe("pg_ctl", "LEASEHOLD_POSTGRES_URL", "leasehold_no_postgres");
    probe(
        "rabbitmq-server",
        "LEASEHOLD_RABBITMQ_URL",
        "leasehold_no_rabbitmq",
    );
}
