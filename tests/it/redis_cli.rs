//! `--backend redis` as a user runs it: the Redis variants' scenarios replay with the pure
//! broker's output, campaigns print the pure broker's campaign hash (the late XACK found and
//! replayed on Redis, the fenced variant clean), and every refusal is one line with exit 2:
//! no server, a variant the backend does not run, a broker restart on a server leasehold did
//! not start.

use crate::redis_testing as testing;
use crate::run::{campaign_hash, leasehold, one_line_error, stderr, stdout, BIN};
use leasehold_redis::Target;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

/// A server URL for the test, and what keeps a private server alive.
fn server(test: &str) -> Option<(String, Option<Arc<leasehold_redis::RedisServer>>)> {
    match testing::shared_target(test)? {
        Target::Url(url) => Some((url, None)),
        Target::Owned(server) => Some((server.url().to_string(), Some(server))),
        Target::Pooled(_) => unreachable!("not lent by a pool"),
    }
}

/// Whether `--redis-spawn` can start redis-server here (a failure under CI=true).
fn can_spawn(test: &str) -> bool {
    testing::owned_server(test).is_some()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("leasehold-redis-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn no_server_answering_is_one_line_and_exit_2() {
    for command in ["replay", "timeline"] {
        let out = leasehold(&[
            command,
            "scenarios/redis-streams-late-xack.toml",
            "--backend",
            "redis",
            "--redis-url",
            "redis://127.0.0.1:1",
        ]);
        let err = one_line_error(&out);
        assert!(
            err.contains("no Redis server answers at redis://127.0.0.1:1"),
            "{err}"
        );
    }
    let out = leasehold(&[
        "sim",
        "--backend",
        "redis",
        "--variant",
        "redis-streams",
        "--redis-url",
        "redis://127.0.0.1:1",
    ]);
    one_line_error(&out);
}

/// A server flag (here by its Redis names, aliases of `--url` and `--spawn`) beside a backend
/// that takes no server is refused, before any run (no server is needed to see it).
#[test]
fn redis_flags_without_the_redis_backend_are_refused() {
    let file = "scenarios/redis-streams-late-xack.toml";
    for (args, refusal) in [
        (
            vec!["replay", file, "--redis-url", "redis://127.0.0.1:1"],
            "--url: backend 'pure' takes no server",
        ),
        (
            vec!["timeline", file, "--redis-spawn"],
            "--spawn: backend 'pure' starts no server",
        ),
        (
            vec!["shrink", file, "--url", "redis://127.0.0.1:1"],
            "--url: backend 'pure' takes no server",
        ),
        (
            vec![
                "sim",
                "--seed",
                "1",
                "--backend",
                "embedded",
                "--redis-spawn",
            ],
            "--spawn: backend 'embedded' starts no server",
        ),
    ] {
        let err = one_line_error(&leasehold(&args));
        assert!(err.contains(refusal), "{args:?}: {err}");
    }
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn redis_scenarios_replay_on_redis_with_the_pure_output() {
    let Some((url, _server)) = server("replay --backend redis") else {
        return;
    };
    for file in [
        "scenarios/redis-streams-late-xack.toml",
        "scenarios/redis-streams-fenced-late-xack.toml",
        "scenarios/policy-nack-on-error.toml",
        "scenarios/policy-ack-always.toml",
        "scenarios/policy-ack-first.toml",
        "scenarios/policy-manual.toml",
        "scenarios/ackmessage-nackmessage.toml",
    ] {
        for command in ["replay", "timeline"] {
            let pure = leasehold(&[command, file]);
            let redis = leasehold(&[command, file, "--backend", "redis", "--url", &url]);
            assert_eq!(redis.status.code(), Some(0), "{file}: {}", stderr(&redis));
            assert_eq!(stdout(&redis), stdout(&pure), "{command} {file}");
        }
    }
    let late = leasehold(&[
        "replay",
        "scenarios/redis-streams-late-xack.toml",
        "--backend",
        "redis",
        "--redis-url",
        &url,
    ]);
    assert!(
        stdout(&late).contains("violated: I1 stale-never-counts"),
        "{}",
        stdout(&late)
    );
}

#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn other_variants_and_restarts_on_a_server_we_did_not_start_are_refused() {
    let Some((url, _server)) = server("refusals") else {
        return;
    };
    let out = leasehold(&[
        "replay",
        "scenarios/t0-t5-stale-ack.toml",
        "--backend",
        "redis",
        "--redis-url",
        &url,
    ]);
    let err = one_line_error(&out);
    assert!(
        err.contains("runs redis-streams and redis-streams-fenced only, not 'fenced'"),
        "{err}"
    );
    let out = leasehold(&[
        "sim",
        "--backend",
        "redis",
        "--redis-url",
        &url,
        "--variant",
        "fenced",
    ]);
    one_line_error(&out);
    // The default fault plan restarts the broker.
    let out = leasehold(&[
        "sim",
        "--backend",
        "redis",
        "--redis-url",
        &url,
        "--variant",
        "redis-streams",
        "--seeds",
        "0..3",
    ]);
    let err = one_line_error(&out);
    assert!(err.contains("was not started by leasehold"), "{err}");
    // Without restarts the same server runs the campaign, with the pure broker's hash.
    let args = [
        "sim",
        "--variant",
        "redis-streams",
        "--seeds",
        "0..20",
        "--broker-restart",
        "0",
        "--json",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_redis = args.to_vec();
    on_redis.extend(["--backend", "redis", "--redis-url", &url]);
    let redis = leasehold(&on_redis);
    let hash = |out: &Output| {
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        value["trace_hash"].clone()
    };
    assert_eq!(hash(&redis), hash(&pure), "{}", stderr(&redis));
}

/// A server URL's password is never printed nor saved: errors, reproduce lines, the server
/// line and the files a campaign writes show it as `***`.
#[test]
fn a_urls_password_is_never_printed_or_saved() {
    const SECRET: &str = "hunter2-s3cret";
    let nobody = format!("redis://app:{SECRET}@127.0.0.1:1");
    let err = one_line_error(&leasehold(&[
        "replay",
        "scenarios/redis-streams-late-xack.toml",
        "--backend",
        "redis",
        "--redis-url",
        &nobody,
    ]));
    assert!(!err.contains(SECRET), "{err}");
    assert!(err.contains("redis://app:***@127.0.0.1:1"), "{err}");

    let Some((url, _server)) = server("a URL's password") else {
        return;
    };
    // The default user of a server without a password takes any password (Redis ACL
    // `nopass`), so the URL with one reaches the same server.
    let with_password = url.replacen("redis://", &format!("redis://default:{SECRET}@"), 1);
    assert_ne!(with_password, url, "{url}");
    let dir = scratch_dir("password");
    let out = leasehold(&[
        "sim",
        "--variant",
        "redis-streams",
        "--seeds",
        "0..50",
        "--broker-restart",
        "0",
        "--out",
        &dir.display().to_string(),
        "--backend",
        "redis",
        "--redis-url",
        &with_password,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(
        !text.contains(SECRET) && !err.contains(SECRET),
        "{text}{err}"
    );
    let shown = format!(" --redis-url {}", with_password.replace(SECRET, "***"));
    assert!(
        text.lines().next().unwrap_or_default().ends_with(&shown),
        "{text}"
    );
    assert!(text.contains("replay with: "), "{text}");
    let mut saved = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let content = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(!content.contains(SECRET), "{}: {content}", path.display());
        saved += 1;
    }
    assert!(saved > 0, "the finding is saved");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn redis_streams_campaign_finds_the_late_xack_on_redis_and_replays_it() {
    if !can_spawn("sim --backend redis --redis-spawn") {
        return;
    }
    let (pure_dir, redis_dir) = (scratch_dir("pure"), scratch_dir("redis"));
    let args = ["sim", "--variant", "redis-streams", "--seeds", "0..50"];
    let with_out = |dir: &PathBuf, extra: &[&'static str]| {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend(["--out".to_string(), dir.display().to_string()]);
        all.extend(extra.iter().map(|s| s.to_string()));
        all
    };
    let run = |all: Vec<String>| {
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        leasehold(&refs)
    };
    let pure = run(with_out(&pure_dir, &[]));
    let redis = run(with_out(
        &redis_dir,
        &["--backend", "redis", "--redis-spawn"],
    ));
    assert_eq!(redis.status.code(), Some(1), "{}", stderr(&redis));
    let (pure_text, redis_text) = (stdout(&pure), stdout(&redis));
    assert_eq!(campaign_hash(&redis_text), campaign_hash(&pure_text));
    assert!(
        redis_text.contains("expected: redis-streams breaks I1 stale-never-counts: caught"),
        "{redis_text}"
    );
    assert!(
        redis_text.contains("broker restarts (SIGKILL + restart)"),
        "{redis_text}"
    );
    // What reproduces the campaign and its finding names the server it ran on.
    assert!(
        redis_text
            .lines()
            .next()
            .unwrap_or_default()
            .ends_with(" --backend redis --redis-spawn"),
        "{redis_text}"
    );
    let replay_with = redis_text
        .lines()
        .find(|l| l.contains("replay with: "))
        .expect("the finding's line");
    assert_eq!(
        replay_with
            .matches(" --backend redis --redis-spawn")
            .count(),
        2,
        "{replay_with}"
    );
    let saved = std::fs::read_dir(&redis_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "toml"))
        .expect("the failing seed is saved");
    let saved = saved.display().to_string();
    let replay = leasehold(&["replay", &saved, "--backend", "redis", "--redis-spawn"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    assert!(
        stdout(&replay).contains("I1 stale-never-counts violated"),
        "{}",
        stdout(&replay)
    );
    let pure_replay = leasehold(&["replay", &saved]);
    let (on_redis, on_pure) = (stdout(&replay), stdout(&pure_replay));
    let (redis_head, redis_rest) = on_redis.split_once('\n').unwrap();
    let (pure_head, pure_rest) = on_pure.split_once('\n').unwrap();
    assert_eq!(redis_rest, pure_rest, "the same run, line for line");
    assert_eq!(
        redis_head.replace(" --backend redis --redis-spawn", ""),
        pure_head
    );
    let _ = std::fs::remove_dir_all(&pure_dir);
    let _ = std::fs::remove_dir_all(&redis_dir);
}

#[test]
#[ignore = "slow: campaigns on the server; .ci/run runs it (--include-ignored)"]
fn redis_streams_fenced_swarm_is_clean_on_redis() {
    if !can_spawn("sim --backend redis --redis-spawn (fenced)") {
        return;
    }
    let args = [
        "sim",
        "--variant",
        "redis-streams-fenced",
        "--swarm",
        "--seeds",
        "0..50",
        // Swarm draws workloads up to 10^4 events; two of these seeds draw runs of 10^5 steps
        // and more, minutes on a debug build talking to a server. A step bound keeps the test
        // to seconds: those seeds end inconclusive (never a failure), on both backends alike,
        // and the hashes still compare every step both took.
        "--steps-max",
        "20000",
        "--no-save",
    ];
    let pure = leasehold(&args);
    let mut on_redis = args.to_vec();
    on_redis.extend(["--backend", "redis", "--redis-spawn"]);
    let redis = leasehold(&on_redis);
    assert_eq!(redis.status.code(), Some(0), "{}", stdout(&redis));
    let text = stdout(&redis);
    assert!(text.contains("failures: none"), "{text}");
    assert_eq!(campaign_hash(&text), campaign_hash(&stdout(&pure)));
}

/// A server that dies in the middle of a campaign ends it with one line and exit 2, not a
/// panic's report.
#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn a_server_lost_mid_run_is_one_line_and_exit_2() {
    let Some(server) = testing::owned_server("a server lost mid-run") else {
        return;
    };
    let url = server.url().to_string();
    let child = Command::new(BIN)
        .args([
            "sim",
            "--backend",
            "redis",
            "--redis-url",
            &url,
            "--variant",
            "redis-streams-fenced",
            "--broker-restart",
            "0",
            "--seeds",
            "0..100000000",
            // Every thread meets the lost server: still one line.
            "--threads",
            "4",
            "--no-save",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The campaign is under way once the server has answered its commands.
    while commands_processed(&url) < 1_000 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(server); // The last handle: the server process is killed.
    let out = child.wait_with_output().expect("the binary ends");
    let err = one_line_error(&out);
    assert!(err.starts_with("leasehold: error: backend redis"), "{err}");
}

/// The server's `total_commands_processed` (`redis-cli INFO stats`).
fn commands_processed(url: &str) -> u64 {
    let out = Command::new("redis-cli")
        .args(["-u", url, "info", "stats"])
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Ctrl-C at a terminal reaches the whole foreground process group. The servers a
/// `--redis-spawn` campaign started are not in it: the campaign stops as it does on the pure
/// broker (the seeds under way finish on their servers, the summary names the seeds run) and
/// gives the pure broker's hash for them, instead of losing its servers mid-seed.
#[test]
#[ignore = "slow: a campaign on private servers, interrupted; .ci/run runs it (--include-ignored)"]
fn ctrl_c_stops_a_redis_spawn_campaign_and_leaves_its_servers_to_finish() {
    use std::os::unix::process::CommandExt;
    if !can_spawn("ctrl-c on --redis-spawn") {
        return;
    }
    let child = Command::new(BIN)
        .args([
            "sim",
            "--backend",
            "redis",
            "--redis-spawn",
            "--variant",
            "redis-streams-fenced",
            "--seeds",
            "0..",
            "--threads",
            "2",
            "--json",
            "--no-save",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // A process group of its own, as a shell gives a foreground job.
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    std::thread::sleep(std::time::Duration::from_millis(4000));
    // What a terminal's Ctrl-C does: SIGINT to every process of the group.
    let group = format!("-{}", child.id());
    let kill = Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().expect("the binary ends");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["stopped"]["reason"], "interrupted", "{found}");
    let end = found["seeds"]["end"].as_u64().unwrap();
    assert!(end > 0 && end < u64::MAX, "{found}");
    let range = format!("0..{end}");
    let pure = leasehold(&[
        "sim",
        "--variant",
        "redis-streams-fenced",
        "--seeds",
        &range,
        "--no-save",
    ]);
    assert!(
        stdout(&pure).contains(&format!(
            "campaign hash {}",
            found["campaign_hash"].as_str().unwrap()
        )),
        "{}",
        stdout(&pure)
    );
}

/// The process ids of `pid`'s children (every thread's).
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
    {
        let path = task.unwrap().path().join("children");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        found.extend(text.split_whitespace().map(|p| p.parse::<u32>().unwrap()));
    }
    found
}

/// A command that does not stop gracefully (`report`) and is sent SIGTERM still stops the
/// private servers it started: none is left running.
#[cfg_attr(
    leasehold_no_redis,
    ignore = "no Redis server: set LEASEHOLD_REDIS_URL or install redis-server"
)]
#[test]
fn sigterm_leaves_no_private_server_running() {
    if !can_spawn("sigterm on --redis-spawn") {
        return;
    }
    let out_dir = scratch_dir("sigterm-report");
    let child = Command::new(BIN)
        .args(["report", "--quick", "--variants", "redis-streams-fenced"])
        .args(["--backend", "redis", "--spawn", "--out"])
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary runs");
    let mut servers = Vec::new();
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        servers = children(child.id());
        if !servers.is_empty() {
            break;
        }
    }
    assert!(!servers.is_empty(), "no redis-server was started");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().expect("the binary ends");
    assert_eq!(out.status.code(), Some(130));
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
    };
    for _ in 0..100 {
        if !servers.iter().any(running) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<_> = servers.iter().filter(|p| running(p)).collect();
    assert!(left.is_empty(), "servers left running: {left:?}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "slow: the verdict matrix on the server; .ci/run runs it (--include-ignored)"]
fn the_verdict_matrix_on_redis_replays_the_checkers_counterexample_there() {
    let Some((url, _keep)) =
        server("the_verdict_matrix_on_redis_replays_the_checkers_counterexample_there")
    else {
        return;
    };
    let dir = scratch_dir("matrix");
    let out = leasehold(&[
        "report",
        "--quick",
        "--variants",
        "redis-streams",
        "--backend",
        "redis",
        "--url",
        &url,
        "--out",
        dir.to_str().unwrap(),
    ]);
    let printed = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", stderr(&out));
    let md = std::fs::read_to_string(dir.join("VERDICTS.md")).expect("VERDICTS.md written");
    // The header says where each engine ran, and that a server at a URL is not restarted.
    assert!(
        md.contains("each counterexample is replayed on `redis`"),
        "{md}"
    );
    assert!(md.contains("every seed runs on `redis`"), "{md}");
    assert!(md.contains("without broker restarts"), "{md}");
    // I1 is violated by both engines, and both scenario files replayed on the server.
    let row = md
        .lines()
        .find(|l| l.starts_with("| `redis-streams` |"))
        .expect("a redis-streams row");
    assert!(row.contains("**[violated (depth"), "{row}");
    assert!(!row.contains("does not replay"), "{row}");
    assert!(
        row.contains("--broker-restart 0") || md.contains("--broker-restart 0"),
        "{md}"
    );
    // The checker's counterexample replays on the same server to the same verdict.
    let replay = leasehold(&[
        "replay",
        dir.join("scenarios/redis-streams-check-I1.toml")
            .to_str()
            .unwrap(),
        "--backend",
        "redis",
        "--url",
        &url,
    ]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    let _ = std::fs::remove_dir_all(&dir);
}
