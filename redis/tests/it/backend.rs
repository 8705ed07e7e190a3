//! The backend's contract beyond conformance: what it refuses, and that a run leaves nothing
//! on the server.

use crate::testing;
use leasehold_model::{BrokerConfig, Variant};
use leasehold_redis::{check_config, RedisBackend, Target};

fn config(variant: Variant) -> BrokerConfig {
    BrokerConfig {
        group_count: 2,
        lease_ms: 100,
        max_attempts: 2,
        variant,
    }
}

#[test]
fn only_the_redis_variants_are_accepted() {
    for &variant in Variant::ALL {
        let result = check_config(&config(variant));
        assert_eq!(result.is_ok(), variant.is_redis(), "{variant}");
        if let Err(message) = result {
            assert!(message.contains(variant.name()), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }
    for bad in [
        BrokerConfig {
            group_count: 0,
            ..config(Variant::RedisStreams)
        },
        BrokerConfig {
            max_attempts: 0,
            ..config(Variant::RedisStreams)
        },
        BrokerConfig {
            lease_ms: 1 << 60,
            ..config(Variant::RedisStreams)
        },
    ] {
        assert!(check_config(&bad).is_err(), "{bad:?}");
    }
}

#[test]
fn no_server_is_a_one_line_error() {
    // Port 1 on loopback: nothing listens there.
    let error = RedisBackend::new(
        &config(Variant::RedisStreams),
        Target::Url("redis://127.0.0.1:1".to_string()),
    )
    .expect_err("nothing listens on port 1");
    assert!(
        error.starts_with("no Redis server answers at redis://127.0.0.1:1"),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn a_run_removes_its_keys_and_nothing_else() {
    let Some(target) = testing::shared_target("key clean-up") else {
        return;
    };
    let url = target.url().to_string();
    // A private server stops with its last owner: keep it for the checks after the run.
    let _server = match &target {
        Target::Owned(server) => Some(server.clone()),
        _ => None,
    };
    let client = redis::Client::open(url.as_str()).expect("url");
    let mut con = client.get_connection().expect("connection");
    // A key of someone else's, which the run must not touch.
    let other = format!("leasehold-test-other:{}", std::process::id());
    redis::cmd("SET")
        .arg(&other)
        .arg("kept")
        .query::<()>(&mut con)
        .expect("SET");
    let mut backend = RedisBackend::new(&config(Variant::RedisStreams), target).expect("backend");
    let prefix = backend.keys().prefix.clone();
    for _ in 0..3 {
        backend.publish();
    }
    let lease = backend
        .fetch_as("c1", 0, 2, 0, None)
        .expect("fetch")
        .remove(0);
    let reject = leasehold_model::SettleRequest::new(
        &lease,
        leasehold_model::SettleOp::Reject {
            reason: leasehold_model::Reason::new("poison"),
        },
        0,
    );
    backend.settle_as("c1", &reject, 0).expect("reject");
    backend.expire_due(500);
    let during: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query(&mut con)
        .expect("KEYS");
    // stream, dlq, lease-id counter, the lease hash of g0 (g1 never leased: no hash).
    assert_eq!(during.len(), 4, "{during:?}");
    drop(backend);
    let after: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query(&mut con)
        .expect("KEYS");
    assert!(after.is_empty(), "{after:?}");
    let kept: String = redis::cmd("GET").arg(&other).query(&mut con).expect("GET");
    assert_eq!(kept, "kept");
    redis::cmd("DEL")
        .arg(&other)
        .query::<()>(&mut con)
        .expect("DEL");
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn a_broker_restart_on_a_server_we_did_not_start_is_refused() {
    let Some(Target::Url(url)) = testing::shared_target("restart refusal") else {
        eprintln!("restart refusal: needs LEASEHOLD_REDIS_URL (a server this test did not start)");
        return;
    };
    let mut backend =
        RedisBackend::new(&config(Variant::RedisStreams), Target::Url(url)).expect("backend");
    assert!(!backend.can_restart());
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.restart()))
        .expect_err("refused");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("was not started by leasehold"),
        "{message}"
    );
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn a_broker_restart_keeps_every_settle_and_lease() {
    let Some(server) = testing::owned_server("restart") else {
        return;
    };
    for variant in [Variant::RedisStreams, Variant::RedisStreamsFenced] {
        let mut backend =
            RedisBackend::new(&config(variant), Target::Owned(server.clone())).expect("backend");
        for _ in 0..4 {
            backend.publish();
        }
        let leases = backend.fetch_as("c1", 0, 3, 0, None).expect("fetch");
        let ack =
            leasehold_model::SettleRequest::new(&leases[0], leasehold_model::SettleOp::Ack, 1);
        backend.settle_as("c1", &ack, 1).expect("ack");
        let pid = server.pid();
        let before = backend.mirror().clone();
        backend.restart();
        assert_ne!(server.pid(), pid, "a new process");
        assert_eq!(
            backend.mirror(),
            &before,
            "{variant}: state after the restart"
        );
        // Lease ids are never reused across restarts: the counter is in the AOF.
        let next = backend.fetch_as("c2", 1, 1, 2, None).expect("fetch");
        assert_eq!(next[0].lease_id.0, 4, "{variant}");
        // The lease held across the restart still settles.
        let ack =
            leasehold_model::SettleRequest::new(&leases[1], leasehold_model::SettleOp::Ack, 3);
        backend.settle_as("c1", &ack, 3).expect("ack after restart");
    }
}

/// A restart reloads the whole AOF, a log of every write since the server started: once it has
/// grown, the restarted server rewrites it to its data, so that restarts cost what the server
/// holds, not what the run wrote. The data is the same after.
#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn a_restart_rewrites_a_grown_aof_to_the_data_it_holds() {
    let Some(server) = testing::owned_server("compact") else {
        return;
    };
    let client = redis::Client::open(server.url()).expect("url");
    let mut con = client.get_connection().expect("connection");
    let value = "x".repeat(1_000);
    for round in 0..2_000 {
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(format!("{round}:{value}"))
            .query(&mut con)
            .expect("SET");
    }
    for _ in 0..10 {
        let _: String = redis::cmd("XADD")
            .arg("s")
            .arg("*")
            .arg("f")
            .arg("v")
            .query(&mut con)
            .expect("XADD");
    }
    drop(con);
    let before = server.disk_bytes();
    assert!(before > 1 << 20, "2,000 writes of 1 KB: {before} bytes");
    server.restart().expect("restart");
    let after = server.disk_bytes();
    assert!(
        after < before / 20,
        "the rewritten AOF holds one value and one stream: {after} bytes, from {before}"
    );
    let mut con = client.get_connection().expect("connection");
    let kept: String = redis::cmd("GET").arg("k").query(&mut con).expect("GET");
    assert_eq!(kept, format!("1999:{value}"));
    let entries: u64 = redis::cmd("XLEN").arg("s").query(&mut con).expect("XLEN");
    assert_eq!(entries, 10);
    // And a restart of the rewritten files reads the same data back.
    drop(con);
    server.restart().expect("restart");
    let mut con = client.get_connection().expect("connection");
    let kept: String = redis::cmd("GET").arg("k").query(&mut con).expect("GET");
    assert_eq!(kept, format!("1999:{value}"));
}
