//! `--backend postgres` as a user runs it: the Postgres scenarios replay and draw with the
//! pure broker's output, campaigns print the pure broker's campaign hash (also on private
//! servers, one per simulator thread, that broker restarts restart), reproduce lines name the
//! server with its password hidden, and every refusal is one line with exit 2.

use crate::postgres_testing as testing;
use crate::run::{campaign_hash, leasehold, one_line_error, stderr, stdout};
use leasehold_postgres::Target;

/// A server URL for the test, and what keeps a private server alive.
fn server(test: &str) -> Option<(String, Option<Target>)> {
    match testing::shared_target(test)? {
        Target::Url(url) => Some((url, None)),
        owned => Some((owned.url().to_string(), Some(owned))),
    }
}

/// A server flag (here by its Postgres names, aliases of `--url` and `--spawn`) beside a
/// backend that takes no server is refused, before any run (no server is needed to see it);
/// no server answering is one line, its password hidden.
#[test]
fn postgres_flags_beside_another_backend_and_no_server_are_one_line() {
    let file = "scenarios/pg-visibility-late-delete.toml";
    for (args, refusal) in [
        (
            vec![
                "replay",
                file,
                "--postgres-url",
                "postgres://x@127.0.0.1:1/y",
            ],
            "--url: backend 'pure' takes no server",
        ),
        (
            vec!["timeline", file, "--postgres-spawn"],
            "--spawn: backend 'pure' starts no server",
        ),
        (
            vec!["shrink", file, "--postgres-spawn"],
            "--spawn: backend 'pure' starts no server",
        ),
        (
            vec!["report", "--backend", "embedded", "--postgres-spawn"],
            "--spawn: backend 'embedded' starts no server",
        ),
        (
            vec!["sim", "--backend", "embedded", "--postgres-spawn"],
            "--spawn: backend 'embedded' starts no server",
        ),
    ] {
        let err = one_line_error(&leasehold(&args));
        assert!(err.contains(refusal), "{args:?}: {err}");
    }
    // Both a server and private servers: one line.
    let err = one_line_error(&leasehold(&[
        "replay",
        file,
        "--backend",
        "postgres",
        "--postgres-url",
        "postgres://x@127.0.0.1:1/y",
        "--postgres-spawn",
    ]));
    assert!(err.contains("cannot be used with"), "{err}");
    let err = one_line_error(&leasehold(&[
        "sim",
        "--backend",
        "postgres",
        "--variant",
        "pg-fenced",
        "--postgres-url",
        "postgres://app:hunter2@127.0.0.1:1/db",
    ]));
    assert!(
        err.contains("no PostgreSQL server answers at postgres://app:***@127.0.0.1:1/db")
            && !err.contains("hunter2"),
        "{err}"
    );
}

#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn postgres_scenarios_replay_and_campaigns_hash_as_on_the_pure_broker() {
    let Some((url, _server)) = server("replay --backend postgres") else {
        return;
    };
    for file in [
        "scenarios/pg-visibility-late-delete.toml",
        "scenarios/pg-fenced-late-delete.toml",
    ] {
        for command in ["replay", "timeline"] {
            let pure = leasehold(&[command, file]);
            let pg = leasehold(&[command, file, "--backend", "postgres", "--url", &url]);
            assert_eq!(pg.status.code(), Some(0), "{file}: {}", stderr(&pg));
            assert_eq!(stdout(&pg), stdout(&pure), "{command} {file}");
        }
    }
    // A variant the backend does not run, and restarts on a server leasehold did not start.
    let err = one_line_error(&leasehold(&[
        "replay",
        "scenarios/t0-t5-stale-ack.toml",
        "--backend",
        "postgres",
        "--postgres-url",
        &url,
    ]));
    assert!(err.contains("backend postgres"), "{err}");
    let err = one_line_error(&leasehold(&[
        "sim",
        "--backend",
        "postgres",
        "--postgres-url",
        &url,
        "--variant",
        "pg-fenced",
    ]));
    assert!(err.contains("was not started by leasehold"), "{err}");
    // Without restarts: the pure broker's hash, and a reproduce line whose URL hides its
    // password (the servers the tests use trust local connections: any password is taken).
    let with_password = url.replacen("postgres://leasehold@", "postgres://leasehold:hunter2@", 1);
    let args = [
        "sim",
        "--variant",
        "pg-visibility",
        "--seeds",
        "0..10",
        "--broker-restart",
        "0",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_pg = args.to_vec();
    on_pg.extend(["--backend", "postgres", "--postgres-url", &with_password]);
    let pg = leasehold(&on_pg);
    assert_eq!(pg.status.code(), Some(1), "{}", stderr(&pg));
    let text = stdout(&pg);
    assert_eq!(campaign_hash(&text), campaign_hash(&stdout(&pure)));
    assert!(
        !text.contains("hunter2") && !stderr(&pg).contains("hunter2"),
        "{text}"
    );
    if with_password != url {
        let shown = format!(
            " --postgres-url {}",
            with_password.replace("hunter2", "***")
        );
        assert!(
            text.lines().next().unwrap_or_default().ends_with(&shown),
            "{text}"
        );
    }
}

/// `--postgres-spawn` with two simulator threads: a private server per thread, restarted by
/// the fault plan's broker restarts, and the pure broker's campaign hash.
#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn postgres_spawn_runs_a_campaign_with_restarts_on_two_threads() {
    if testing::owned_server("sim --postgres-spawn --threads 2").is_none() {
        return;
    }
    let args = [
        "sim",
        "--variant",
        "pg-fenced",
        "--seeds",
        "0..2",
        "--threads",
        "2",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_pg = args.to_vec();
    on_pg.extend(["--backend", "postgres", "--postgres-spawn"]);
    let pg = leasehold(&on_pg);
    assert_eq!(pg.status.code(), Some(0), "{}", stderr(&pg));
    let text = stdout(&pg);
    assert!(text.contains("failures: none"), "{text}");
    assert_eq!(campaign_hash(&text), campaign_hash(&stdout(&pure)));
    assert!(
        text.lines()
            .next()
            .unwrap_or_default()
            .ends_with(" --backend postgres --postgres-spawn"),
        "{text}"
    );
    assert!(text.contains("private server(s)"), "{text}");
}
