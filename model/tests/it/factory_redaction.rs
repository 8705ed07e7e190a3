//! A server's address as the reproducing flags and messages show it: its password hidden.

use leasehold_model::factory::redacted_url;

#[test]
fn a_password_is_hidden_and_nothing_else_changes() {
    for (url, shown) in [
        ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
        ("redis://127.0.0.1:6379/2", "redis://127.0.0.1:6379/2"),
        ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
        ("rediss://app:s3cret@host", "rediss://app:***@host"),
        ("redis://app@host:6379", "redis://app@host:6379"),
        // The password may hold '@' and ':' (the host is after the last '@').
        ("redis://app:p@ss:w0rd@host:1/", "redis://app:***@host:1/"),
        (
            "redis+unix:///run/redis.sock?db=1&pass=s3cret",
            "redis+unix:///run/redis.sock?db=1&pass=***",
        ),
        (
            "unix:///run/redis.sock?password=s3cret&user=app",
            "unix:///run/redis.sock?password=***&user=app",
        ),
        // Unescaped separators in a password hide it whole, never a part of it.
        ("redis://app:ab?cd@host:1", "redis://app:***@host:1"),
        ("redis://app:a#b/c@host/2", "redis://app:***@host/2"),
        (
            "redis+unix:///run/redis.sock?pass=a@b",
            "redis+unix:///run/redis.sock?pass=***",
        ),
        ("not a url", "not a url"),
        (
            "postgres://127.0.0.1:5432/db",
            "postgres://127.0.0.1:5432/db",
        ),
        (
            "postgres://app:s3cret@host/db",
            "postgres://app:***@host/db",
        ),
        ("postgresql://app@host:1/db", "postgresql://app@host:1/db"),
        (
            "postgres://app:p@ss/w?rd@host/db",
            "postgres://app:***@host/db",
        ),
        (
            "postgres://app@host/db?sslmode=disable&password=s3cret",
            "postgres://app@host/db?sslmode=disable&password=***",
        ),
        (
            "host=127.0.0.1 user=app password=s3cret dbname=db",
            "host=127.0.0.1 user=app password=*** dbname=db",
        ),
    ] {
        assert_eq!(redacted_url(url), shown, "{url}");
    }
}
