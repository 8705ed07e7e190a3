//! The reproducing flags of a JetStream backend: they name its server, its password hidden.
//! No server needed.

use leasehold_jetstream::{JetStream, DEFAULT_URL};
use leasehold_model::BackendFactory;

#[test]
fn the_reproducing_flags_name_the_server_with_its_password_hidden() {
    assert_eq!(JetStream::url(DEFAULT_URL).flags(), " --backend jetstream");
    assert_eq!(
        JetStream::url("nats://app:s3cret@mq:4333").flags(),
        " --backend jetstream --url nats://app:***@mq:4333"
    );
    assert!(JetStream::url("nats://app:s3cret@mq:4333")
        .restarts_refused()
        .is_some_and(|why| !why.contains("s3cret")));
    assert!(JetStream::spawn().restarts_refused().is_none());
    assert_eq!(JetStream::url(DEFAULT_URL).name(), "jetstream");
}
