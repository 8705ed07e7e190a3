//! `cfg(leasehold_no_nats)` when this machine has no nats-server for the tests (see
//! `redis/probe.rs`, shared with the other server-backed crates).

include!("../redis/probe.rs");

fn main() {
    probe("nats-server", "LEASEHOLD_NATS_URL", "leasehold_no_nats");
}
