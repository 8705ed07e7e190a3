//! `cfg(leasehold_no_rabbitmq)` when this machine has no RabbitMQ server for the tests (the
//! probe is shared with the Redis backend: `redis/probe.rs`).

include!("../redis/probe.rs");

fn main() {
    probe(
        "rabbitmq-server",
        "LEASEHOLD_RABBITMQ_URL",
        "leasehold_no_rabbitmq",
    );
}
