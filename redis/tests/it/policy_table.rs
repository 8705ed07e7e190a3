//! The second seed's ack-policy table on a real Redis server: one event, `max_retries = 1`
//! (`max_attempts = 2`), a handler that always raises `RuntimeError("boom")`. The seed prints
//!
//! ```text
//! nack_on_error  handler calls=2 pending=0 dlq=1
//! ack_always     handler calls=1 pending=0 dlq=0
//! ack_first      handler calls=1 pending=0 dlq=0
//! manual         handler calls=2 pending=0 dlq=1
//! ```
//!
//! Here the handler calls are counted from the run's trace, and `pending`, `dlq` and the
//! dead letters' `x-error` are read from the server itself (`XPENDING`, `XLEN <stream>-dlq`,
//! `XRANGE <stream>-dlq`) after the scenario files `scenarios/policy-*.toml` ran on it, for
//! `redis-streams` and for `redis-streams-fenced`. The `x-error` rule (the outcome's text, or
//! its kind name when the text is empty) is checked on the server too.

use crate::testing;
use leasehold_model::Variant;
use leasehold_redis::{delete_keys, RedisBackend, Target};
use leasehold_sim::trace::LineKind;
use leasehold_sim::{parse, script};
use redis::Value;

/// What the server holds after a run, and how many times the handler ran.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    handler_calls: usize,
    pending: i64,
    dlq: i64,
    x_errors: Vec<String>,
}

fn run_on_redis(target: &Target, name: &str, src: &str) -> Seen {
    let script = parse::parse(src, name).unwrap_or_else(|e| panic!("{e}"));
    let config = script.setup.broker_config();
    let url = target.url().to_string();
    let shared = match target {
        Target::Url(url) => Target::Url(url.clone()),
        Target::Owned(server) => Target::Owned(server.clone()),
        Target::Pooled(_) => unreachable!("tests use a shared server"),
    };
    let mut backend = RedisBackend::new(&config, shared).expect("a redis variant");
    backend.keep_keys(true);
    let keys = backend.keys().clone();
    let replay = script::run(&script, backend);
    assert!(replay.matched, "{name}: {:?}", replay.mismatches);
    let client = redis::Client::open(url.as_str()).expect("url");
    let mut con = client.get_connection().expect("connection");
    let summary: Vec<Value> = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(&keys.groups[0])
        .query(&mut con)
        .expect("XPENDING");
    let Some(Value::Int(pending)) = summary.first() else {
        panic!("XPENDING summary: {summary:?}");
    };
    let dlq: i64 = redis::cmd("XLEN")
        .arg(&keys.dlq)
        .query(&mut con)
        .expect("XLEN");
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(&keys.dlq)
        .arg("-")
        .arg("+")
        .query(&mut con)
        .expect("XRANGE");
    let x_errors = entries
        .into_iter()
        .map(|(_, fields)| {
            fields
                .into_iter()
                .find(|(k, _)| k == "x-error")
                .map(|(_, v)| v)
                .expect("every dead letter has x-error")
        })
        .collect();
    let handler_calls = replay
        .trace
        .lines
        .iter()
        .filter(|line| matches!(line.kind, LineKind::Handle { .. }))
        .count();
    assert!(delete_keys(&url, &keys).is_ok_and(|n| n >= 2), "{name}");
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", keys.prefix))
        .query(&mut con)
        .expect("KEYS");
    assert!(left.is_empty(), "{name}: keys left behind: {left:?}");
    Seen {
        handler_calls,
        pending: *pending,
        dlq,
        x_errors,
    }
}

fn policy_file(policy: &str) -> String {
    let path = format!(
        "{}/../scenarios/policy-{}.toml",
        env!("CARGO_MANIFEST_DIR"),
        policy.replace('_', "-")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn as_variant(src: &str, variant: Variant) -> String {
    src.replacen(
        "variant = \"redis-streams\"",
        &format!("variant = \"{variant}\""),
        1,
    )
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn the_seeds_policy_table_on_the_server() {
    let Some(target) = testing::shared_target("policy table") else {
        return;
    };
    for variant in [Variant::RedisStreams, Variant::RedisStreamsFenced] {
        let mut table = String::new();
        for policy in ["nack_on_error", "ack_always", "ack_first", "manual"] {
            let src = as_variant(&policy_file(policy), variant);
            let seen = run_on_redis(&target, &format!("policy-{policy} ({variant})"), &src);
            table += &format!(
                "{policy:14} handler calls={} pending={} dlq={} x-error={:?}\n",
                seen.handler_calls, seen.pending, seen.dlq, seen.x_errors
            );
        }
        eprint!("{variant} on {}:\n{table}", target.url());
        assert_eq!(
            table,
            "nack_on_error  handler calls=2 pending=0 dlq=1 x-error=[\"boom\"]\n\
             ack_always     handler calls=1 pending=0 dlq=0 x-error=[]\n\
             ack_first      handler calls=1 pending=0 dlq=0 x-error=[]\n\
             manual         handler calls=2 pending=0 dlq=1 x-error=[\"boom\"]\n",
            "{variant}"
        );
    }
}

/// One event, one consumer, `max_retries = 1`, a drain with `outcome`.
fn one_event(variant: Variant, policy: &str, outcome: &str) -> String {
    format!(
        "name = \"x-error\"\nvariant = \"{variant}\"\n\n[config]\ngroups = [\"g\"]\nevents = 1\n\
         workers = [\"c1\"]\nclaim_idle_ms = 200\nmax_attempts = 2\nack_policy = \"{policy}\"\n\n\
         [[step]]\nat_ms = 0\nop = \"drain\"\n{outcome}\nexpect = \"ok\"\n\n\
         [expect]\ninvariants = \"hold\"\n"
    )
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn x_error_is_the_text_or_the_kind_name_on_the_server() {
    let Some(target) = testing::shared_target("x-error") else {
        return;
    };
    let cases = [
        (
            "outcome = \"error\"\nerror_kind = \"RuntimeError\"\nreason = \"boom\"",
            2,
            "boom",
        ),
        (
            "outcome = \"error\"\nerror_kind = \"RuntimeError\"\nreason = \"\"",
            2,
            "RuntimeError",
        ),
        (
            "outcome = \"nack\"\nreason = \"rate limited\"",
            2,
            "rate limited",
        ),
        ("outcome = \"nack\"", 2, "NackMessage"),
        (
            "outcome = \"reject\"\nreason = \"unknown customer\"",
            1,
            "unknown customer",
        ),
        ("outcome = \"reject\"", 1, "RejectMessage"),
    ];
    for variant in [Variant::RedisStreams, Variant::RedisStreamsFenced] {
        for (outcome, calls, x_error) in cases {
            let src = one_event(variant, "nack_on_error", outcome);
            let seen = run_on_redis(&target, &format!("{outcome:?} ({variant})"), &src);
            let expected = Seen {
                handler_calls: calls,
                pending: 0,
                dlq: 1,
                x_errors: vec![x_error.to_string()],
            };
            assert_eq!(seen, expected, "{variant}: {outcome}");
        }
    }
}
