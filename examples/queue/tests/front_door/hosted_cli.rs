//! A registered backend that takes a server: `--url URL` of the command line reaches the
//! factory's `at_url` (the `hosted` queue of `src/bin/leasehold-hosted-queue.rs` names its
//! address after a campaign), and a registered backend without a server refuses `--url` and
//! `--spawn` with one line, exit 2.

use std::process::{Command, Output};

fn hosted_cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold-hosted-queue"))
        .args(args)
        .output()
        .expect("runs")
}

fn one_line_error(output: &Output) -> String {
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn url_reaches_the_registered_factory() {
    let campaign = ["sim", "--seeds", "0..4", "--threads", "1", "--no-save"];
    let run = |extra: &[&str]| hosted_cli(&[&campaign[..], extra].concat());
    let at_url = run(&["--backend", "hosted", "--url", "queue://primary"]);
    let stdout = String::from_utf8_lossy(&at_url.stdout);
    assert_eq!(
        at_url.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&at_url.stderr)
    );
    assert!(
        stdout.contains("hosted: the queue at queue://primary"),
        "{stdout}"
    );
    // Without --url, the factory as registered.
    let default = run(&["--backend", "hosted"]);
    let stdout = String::from_utf8_lossy(&default.stdout);
    assert!(
        stdout.contains("hosted: the queue at its default address"),
        "{stdout}"
    );
    // The old Redis name of the flag is the same flag.
    let alias = run(&["--backend", "hosted", "--redis-url", "queue://other"]);
    assert!(String::from_utf8_lossy(&alias.stdout).contains("at queue://other"));
    // The factory's own refusal, one line.
    let err = one_line_error(&run(&["--backend", "hosted", "--url", "http://x"]));
    assert!(
        err.contains("'http://x' is not a queue:// address"),
        "{err}"
    );
}

#[test]
fn a_registered_backend_without_a_server_refuses_the_server_flags() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/t0-t5-stale-ack.toml"
    );
    let err = one_line_error(&hosted_cli(&[
        "replay",
        file,
        "--backend",
        "in-memory",
        "--url",
        "queue://primary",
    ]));
    assert!(
        err.contains("--url: backend 'in-memory' takes no server"),
        "{err}"
    );
    let err = one_line_error(&hosted_cli(&[
        "replay",
        file,
        "--backend",
        "hosted",
        "--spawn",
    ]));
    assert!(
        err.contains("--spawn: backend 'hosted' starts no server"),
        "{err}"
    );
}
