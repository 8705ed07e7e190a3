//! How a server URL is read and shown, without a server: its parts and defaults, and its
//! password never in a message or a reproducing command.

use leasehold_model::BackendFactory;
use leasehold_rabbitmq::conn::parse;
use leasehold_rabbitmq::{RabbitMq, DEFAULT_URL};

#[test]
fn urls_parse_into_their_parts_with_defaults() {
    let e = parse("amqp://guest:guest@127.0.0.1:5672/%2f").unwrap();
    assert_eq!(
        (e.host.as_str(), e.port, e.vhost.as_str()),
        ("127.0.0.1", 5672, "/")
    );
    let e = parse("amqp://app:s%40cret@mq.example/jobs").unwrap();
    assert_eq!((e.user.as_str(), e.password.as_str()), ("app", "s@cret"));
    assert_eq!((e.port, e.vhost.as_str()), (5672, "jobs"));
    let e = parse("amqp://h:1").unwrap();
    assert_eq!((e.user.as_str(), e.vhost.as_str()), ("guest", "/"));
    let err = parse("amqp://app:s3cret@h:port/").unwrap_err();
    assert!(
        err.contains("port 'port'") && !err.contains("s3cret"),
        "{err}"
    );
    assert!(parse("http://h").unwrap_err().contains("amqp://"));
}

#[test]
fn the_reproducing_flags_name_the_server_with_its_password_hidden() {
    assert_eq!(RabbitMq::url(DEFAULT_URL).flags(), " --backend rabbitmq");
    let other = RabbitMq::url("amqp://app:s3cret@mq:5673/jobs");
    assert_eq!(
        other.flags(),
        " --backend rabbitmq --url amqp://app:***@mq:5673/jobs"
    );
    assert!(!other.describe().unwrap().contains("s3cret"));
    assert!(other.restarts_refused().is_some());
    let spawn = RabbitMq::default().spawned().err().expect("refused");
    assert!(spawn.starts_with("--spawn:"), "{spawn}");
    let bad = RabbitMq::default()
        .at_url("amqp://u:s3cret@h:x/")
        .err()
        .expect("refused");
    assert!(!bad.contains("s3cret"), "{bad}");
}
