//! `cfg(leasehold_no_redis)`, `cfg(leasehold_no_postgres)`, `cfg(leasehold_no_nats)` and
//! `cfg(leasehold_no_rabbitmq)` when this machine has no Redis (PostgreSQL, nats-server,
//! RabbitMQ) server for the command-line tests of that backend (see `redis/probe.rs`).

include!("redis/probe.rs");

fn main() {
    probe("redis-server", "LEASEHOLD_REDIS_URL", "leasehold_no_redis");
    probe("pg_ctl", "LEASEHOLD_POSTGRES_URL", "leasehold_no_postgres");
    probe("nats-server", "LEASEHOLD_NATS_URL", "leasehold_no_nats");
    probe(
        "rabbitmq-server",
        "LEASEHOLD_RABBITMQ_URL",
        "leasehold_no_rabbitmq",
    );
}
