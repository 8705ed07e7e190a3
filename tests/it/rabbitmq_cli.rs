//! `--backend rabbitmq` on the command line (the server: `LEASEHOLD_RABBITMQ_URL`): the
//! scenarios replay as on the pure broker, a campaign prints the pure broker's campaign hash
//! and the same verdict, the model checker proves the variant, restarts are refused in one
//! line, and the password never shows.

use crate::run::{campaign_hash, leasehold, one_line_error, stderr, stdout};

fn url() -> Option<String> {
    match std::env::var("LEASEHOLD_RABBITMQ_URL") {
        Ok(url) => Some(url),
        Err(_) if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
            panic!("CI=true: LEASEHOLD_RABBITMQ_URL must name a RabbitMQ server")
        }
        Err(_) => {
            eprintln!("SKIPPED --backend rabbitmq: LEASEHOLD_RABBITMQ_URL is not set");
            None
        }
    }
}

#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn rabbitmq_replays_and_campaigns_as_the_pure_broker() {
    let Some(url) = url() else {
        return;
    };
    for file in [
        "scenarios/rabbitmq-channel-406-returns-siblings.toml",
        "scenarios/rabbitmq-crash-redelivered.toml",
        "scenarios/rabbitmq-stale-tag.toml",
        "scenarios/rabbitmq-delivery-limit.toml",
    ] {
        let pure = leasehold(&["replay", file]);
        let mq = leasehold(&["replay", file, "--backend", "rabbitmq"]);
        assert_eq!(mq.status.code(), Some(0), "{file}: {}", stderr(&mq));
        assert_eq!(stdout(&mq), stdout(&pure), "{file}");
    }
    let args = [
        "sim",
        "--variant",
        "rabbitmq",
        "--seeds",
        "0..20",
        "--broker-restart",
        "0",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_mq = args.to_vec();
    on_mq.extend(["--backend", "rabbitmq"]);
    let mq = leasehold(&on_mq);
    assert_eq!(mq.status.code(), Some(0), "{}", stderr(&mq));
    let text = stdout(&mq);
    assert!(text.contains("failures: none"), "{text}");
    assert!(stdout(&pure).contains("failures: none"));
    assert_eq!(campaign_hash(&text), campaign_hash(&stdout(&pure)));
    // The reproduce line names the server with its password hidden.
    if let Some((_, password)) = url
        .strip_prefix("amqp://")
        .and_then(|rest| rest.split_once('@'))
        .and_then(|(info, _)| info.split_once(':'))
    {
        if url != leasehold::rabbitmq::DEFAULT_URL {
            let first = text.lines().next().unwrap_or_default();
            assert!(first.contains(":***@"), "{first}");
            assert!(!first.contains(&format!(":{password}@")), "{first}");
        }
    }
    // The fault plan's default broker restarts are refused, in one line.
    let err = one_line_error(&leasehold(&[
        "sim",
        "--variant",
        "rabbitmq",
        "--backend",
        "rabbitmq",
        "--seeds",
        "0..2",
    ]));
    assert!(err.contains("closes every RabbitMQ channel"), "{err}");
}

/// The model checker proves the variant (a smaller bound than its own, for time).
#[test]
fn check_proves_the_rabbitmq_variant() {
    let out = leasehold(&[
        "check",
        "--variant",
        "rabbitmq",
        "--tailored",
        "--events",
        "2",
        "--workers",
        "2",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("result: every invariant holds"), "{text}");
}

/// `rabbitmq-channel`: the model checker refutes I1 with a worker's stale ack on its next
/// channel (its tag names the redelivery), and every counterexample it saves replays on the
/// server to the same verdict and timeline.
#[cfg_attr(
    leasehold_no_rabbitmq,
    ignore = "no RabbitMQ server: set LEASEHOLD_RABBITMQ_URL"
)]
#[test]
fn check_refutes_rabbitmq_channel_and_its_counterexamples_replay_on_the_server() {
    let Some(_url) = url() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary folder");
    let out = dir.path().to_str().unwrap();
    let checked = leasehold(&[
        "check",
        "--variant",
        "rabbitmq-channel",
        "--all-violations",
        "--out",
        out,
    ]);
    let text = stdout(&checked);
    assert_eq!(checked.status.code(), Some(1), "{text}{}", stderr(&checked));
    assert!(
        text.contains("result: VIOLATED I1 stale-never-counts"),
        "{text}"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .expect("the counterexamples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "check wrote no scenario");
    for file in &files {
        let file = file.to_str().unwrap();
        let pure = leasehold(&["replay", file]);
        let mq = leasehold(&["replay", file, "--backend", "rabbitmq"]);
        assert_eq!(
            mq.status.code(),
            pure.status.code(),
            "{file}: {}",
            stderr(&mq)
        );
        assert_eq!(stdout(&mq), stdout(&pure), "{file}");
        assert!(stdout(&mq).contains("violated: I1"), "{}", stdout(&mq));
    }
}
