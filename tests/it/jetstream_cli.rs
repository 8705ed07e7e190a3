//! `--backend jetstream` as a user runs it: the late-ack scenario replays and draws on a real
//! nats-server with the pure broker's output, `check`'s counterexamples replay there to the
//! same verdict, campaigns print the pure broker's campaign hash (also with broker restarts, on
//! private servers through the library's front door), and a run that would restart a server
//! leasehold did not start is one line with exit 2.
//!
//! The stock command line registers the backend at its default URL, `nats://127.0.0.1:4222`:
//! these tests use a server answering there, or start one on that port for their duration.

use crate::run::{campaign_hash, leasehold, one_line_error, stderr, stdout};
use leasehold_jetstream::{ping, JetStream, NatsServer, DEFAULT_URL};
use std::sync::{Mutex, MutexGuard};

static DEFAULT_PORT: Mutex<()> = Mutex::new(());

/// A server at the default URL for as long as the result lives (the tests of this file take
/// turns), or `None` after printing why (a failure under `CI=true`).
fn default_server(test: &str) -> Option<(MutexGuard<'static, ()>, Option<NatsServer>)> {
    let turn = DEFAULT_PORT.lock().unwrap_or_else(|e| e.into_inner());
    if ping(DEFAULT_URL).is_ok() {
        return Some((turn, None));
    }
    match NatsServer::start_on(4222) {
        Ok(server) => Some((turn, Some(server))),
        Err(e) => {
            let why = format!("{test}: no nats-server at {DEFAULT_URL} and none started: {e}");
            assert!(!leasehold_conformance::servers::in_ci(), "{why}");
            eprintln!("SKIPPED {why}");
            None
        }
    }
}

#[cfg_attr(
    leasehold_no_nats,
    ignore = "no nats-server: set LEASEHOLD_NATS_URL or install nats-server"
)]
#[test]
fn the_late_ack_replays_and_draws_on_the_server_as_on_the_pure_broker() {
    let Some(_server) = default_server("timeline --backend jetstream") else {
        return;
    };
    let file = "scenarios/jetstream-late-ack.toml";
    for command in ["replay", "timeline"] {
        let pure = leasehold(&[command, file]);
        let js = leasehold(&[command, file, "--backend", "jetstream"]);
        assert_eq!(js.status.code(), Some(0), "{file}: {}", stderr(&js));
        assert_eq!(stdout(&js), stdout(&pure), "{command} {file}");
    }
    let text = stdout(&leasehold(&["replay", file, "--backend", "jetstream"]));
    assert!(
        text.contains("worker w1 (restarted, delayed) ACK L1 → durable progress (frontier 0 → 1)   ⚠ I1 violated"),
        "{text}"
    );
    // The drawing: the same picture as the pure broker's.
    let dir = tempfile::tempdir().expect("temporary folder");
    let (pure_svg, js_svg) = (dir.path().join("pure.svg"), dir.path().join("js.svg"));
    let drawn = leasehold(&["timeline", file, "--svg", pure_svg.to_str().unwrap()]);
    assert_eq!(drawn.status.code(), Some(0), "{}", stderr(&drawn));
    let drawn = leasehold(&[
        "timeline",
        file,
        "--backend",
        "jetstream",
        "--svg",
        js_svg.to_str().unwrap(),
    ]);
    assert_eq!(drawn.status.code(), Some(0), "{}", stderr(&drawn));
    let svg = std::fs::read_to_string(&js_svg).expect("the drawing");
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    assert!(svg.contains("I1"), "the drawing marks the violation");
    // The same picture; only the command in its description names the backend.
    let without_desc = |svg: &str| {
        svg.lines()
            .filter(|line| !line.starts_with("<desc>"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let pure = std::fs::read_to_string(&pure_svg).expect("the drawing");
    assert_eq!(without_desc(&svg), without_desc(&pure));
    assert!(
        svg.contains("--backend jetstream</desc>"),
        "the drawing names the command that made it"
    );
}

#[cfg_attr(
    leasehold_no_nats,
    ignore = "no nats-server: set LEASEHOLD_NATS_URL or install nats-server"
)]
#[test]
fn check_counterexamples_replay_on_the_server_to_the_same_verdict() {
    let Some(_server) = default_server("check --variant jetstream, replayed") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary folder");
    let out = dir.path().to_str().unwrap();
    let checked = leasehold(&["check", "--variant", "jetstream", "--out", out]);
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stdout(&checked).contains("result: VIOLATED I1 stale-never-counts"),
        "{}",
        stdout(&checked)
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
        let js = leasehold(&["replay", file, "--backend", "jetstream"]);
        assert_eq!(
            js.status.code(),
            pure.status.code(),
            "{file}: {}",
            stderr(&js)
        );
        assert_eq!(stdout(&js), stdout(&pure), "{file}");
        assert!(stdout(&js).contains("violated: I1"), "{}", stdout(&js));
    }
}

#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn campaigns_hash_as_on_the_pure_broker_and_restarts_are_refused_on_a_url() {
    let Some(_server) = default_server("sim --backend jetstream") else {
        return;
    };
    let err = one_line_error(&leasehold(&[
        "sim",
        "--variant",
        "jetstream",
        "--backend",
        "jetstream",
    ]));
    assert!(err.contains("was not started by leasehold"), "{err}");
    let err = one_line_error(&leasehold(&[
        "replay",
        "scenarios/t0-t5-stale-ack.toml",
        "--backend",
        "jetstream",
    ]));
    assert!(err.contains("jetstream"), "{err}");
    let args = [
        "sim",
        "--variant",
        "jetstream",
        "--seeds",
        "0..20",
        "--broker-restart",
        "0",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_js = args.to_vec();
    on_js.extend(["--backend", "jetstream"]);
    let js = leasehold(&on_js);
    assert_eq!(js.status.code(), Some(1), "{}", stderr(&js));
    let text = stdout(&js);
    assert!(
        text.contains("expected: jetstream breaks I1 stale-never-counts: caught"),
        "{text}"
    );
    assert_eq!(campaign_hash(&text), campaign_hash(&stdout(&pure)));
}

/// With broker restarts: the library's campaign on private servers (each restart stops one
/// and starts it again) against the pure broker's verdicts and campaign hash.
/// `LEASEHOLD_JETSTREAM_SEEDS=0..200` widens the range (reports/jetstream-bench.md).
///
/// What it rests on (docs/jetstream.md, "Broker restarts"): `+WPI` after each redelivery (F17,
/// F18), the stale delayed `-NAK` repeated (F19), and a stop only once the server's
/// consumer-state writers are idle (F20); a backend without any of them gives another hash, or
/// stops at its post-restart check.
#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn a_campaign_with_broker_restarts_on_private_servers_hashes_as_on_the_pure_broker() {
    // Private servers need the nats-server program (a server at a URL is not enough).
    if let Err(e) = NatsServer::start() {
        let why = format!("campaign with broker restarts: no private nats-server: {e}");
        assert!(!leasehold_conformance::servers::in_ci(), "{why}");
        eprintln!("SKIPPED {why}");
        return;
    }
    let seeds = std::env::var("LEASEHOLD_JETSTREAM_SEEDS").unwrap_or_else(|_| "0..20".into());
    let (a, b) = seeds
        .split_once("..")
        .expect("LEASEHOLD_JETSTREAM_SEEDS is A..B");
    let seeds = a.parse().expect("A")..b.parse().expect("B");
    let template =
        leasehold::defaults::sim_template(leasehold::Variant::JetStream).expect("template");
    assert!(
        template.faults.broker_restart.num > 0,
        "restarts in the plan"
    );
    let dir = tempfile::tempdir().expect("temporary folder");
    let run = |backend: leasehold::BackendKind| {
        let started = std::time::Instant::now();
        let done = leasehold::campaign(template.clone())
            .seeds(seeds.clone())
            .backend(backend)
            .out(dir.path())
            .run()
            .unwrap_or_else(|e| panic!("{e}"));
        (done, started.elapsed())
    };
    let (pure, pure_wall) = run(leasehold::BackendKind::Pure);
    let factory = std::sync::Arc::new(JetStream::spawn());
    let (js, js_wall) = run(leasehold::BackendKind::Other(factory.clone()));
    eprintln!(
        "seeds {seeds:?}: pure {:?}, jetstream {:?}; {}",
        pure_wall,
        js_wall,
        leasehold_model::BackendFactory::describe(&*factory).unwrap_or_default()
    );
    assert_eq!(js.summary.campaign_hash, pure.summary.campaign_hash);
    assert_eq!(js.summary.seeds_failed, pure.summary.seeds_failed);
    assert_eq!(
        js.failure.as_ref().map(|f| (f.seed, f.invariant)),
        pure.failure.as_ref().map(|f| (f.seed, f.invariant))
    );
    eprintln!(
        "campaign hash {:016x}, {} seeds failed, {} steps",
        js.summary.campaign_hash, js.summary.seeds_failed, js.summary.steps
    );
}
