//! `leasehold sim` and `leasehold shrink` as a user runs them: the replay recipe on the first
//! line, exit statuses, identical summaries whatever `--threads`, a failing seed written to a
//! file that reproduces it, shrinking that writes a smaller file, bad flags (exit 2).

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

fn leasehold(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-sim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON object")
}

#[test]
fn a_clean_campaign_exits_0_and_starts_with_its_replay_recipe() {
    let out = leasehold(&["sim", "--seeds", "0..20", "--swarm", "--no-save"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("leasehold sim --seeds 0..20"), "{first}");
    assert!(
        first.contains("--variant fenced") && first.contains("--swarm"),
        "{first}"
    );
    assert!(text.contains("seeds run: 20 (0 failed"), "{text}");
    assert!(text.contains("failures: none"), "{text}");
    assert!(
        text.contains("steps/s") && text.contains("simulated/wall"),
        "{text}"
    );
}

#[test]
fn one_and_two_threads_print_the_same_summary() {
    let run = |threads: &str| {
        let out = leasehold(&[
            "sim",
            "--variant",
            "volatile-ack",
            "--seeds",
            "0..24",
            "--threads",
            threads,
            "--json",
            "--no-save",
        ]);
        assert_eq!(out.status.code(), Some(1));
        let mut value = json(&out);
        let object = value.as_object_mut().unwrap();
        object.remove("wall_ms");
        object.remove("threads");
        value
    };
    let one = run("1");
    assert_eq!(one["seeds_run"], 24);
    assert!(
        one["failures"]["I4"]["count"].as_u64().unwrap() > 0,
        "{one}"
    );
    assert_eq!(one, run("2"));
}

#[test]
fn a_failing_seed_is_saved_and_reproduced_byte_for_byte_then_shrunk() {
    let dir = scratch_dir("found");
    let out_dir = dir.to_str().unwrap();
    let out = leasehold(&[
        "sim",
        "--variant",
        "volatile-ack",
        "--seeds",
        "0..10",
        "--out",
        out_dir,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let replay_line = text
        .lines()
        .find(|l| l.contains("replay with: leasehold replay"))
        .unwrap_or_else(|| panic!("{text}"));
    let path = replay_line
        .split("leasehold replay ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let seed: String = replay_line
        .split(" seed ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    // Same seed by flags and by file: the same trace, byte for byte.
    let by_flags = leasehold(&[
        "sim",
        "--variant",
        "volatile-ack",
        "--seed",
        &seed,
        "--trace",
        "--no-save",
    ]);
    let by_file = leasehold(&["sim", "--file", &path, "--trace"]);
    assert_eq!(
        by_file.status.code(),
        Some(0),
        "the file's [expect] matched"
    );
    // Everything but the recipe line and the wall-clock speed.
    let body = |o: &Output| {
        stdout(o)
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("speed:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&by_flags), body(&by_file));
    assert!(body(&by_file).contains("trace hash"));
    // Never overwritten: a second campaign writes a new file.
    let again = leasehold(&[
        "sim",
        "--variant",
        "volatile-ack",
        "--seeds",
        "0..10",
        "--out",
        out_dir,
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(std::fs::read_dir(&dir).unwrap().count() >= 2);
    // Shrink: a smaller file that still fails the same way.
    let shrunk = leasehold(&["shrink", &path]);
    assert_eq!(shrunk.status.code(), Some(0), "{}", stdout(&shrunk));
    let report = stdout(&shrunk);
    let written = report
        .lines()
        .find_map(|l| l.strip_prefix("wrote "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(report.contains("events "), "{report}");
    let replay = leasehold(&["sim", "--file", written]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_are_one_line_errors_with_status_2() {
    for args in [
        vec!["sim", "--seeds", "5..2"],
        vec!["sim", "--crash", "3/2"],
        vec!["sim", "--variant", "nope"],
        vec!["sim", "--shard", "0/3"],
        vec!["sim", "--events", "0"],
        vec!["shrink", "/nonexistent/file.toml"],
    ] {
        let out = leasehold(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn the_replay_hook_runs_seeded_files_and_leaves_scripted_ones() {
    use leasehold::cli::Status;
    use leasehold::cmd::sim::replay_if_seeded;
    let dir = scratch_dir("hook");
    let out = leasehold(&[
        "sim",
        "--variant",
        "stuck-lease",
        "--seeds",
        "0..5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let saved = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let status = replay_if_seeded(&saved, true, "pure").unwrap();
    assert_eq!(
        status,
        Some(Status::Ok),
        "the saved failure matches its [expect]"
    );
    let scripted =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/t0-t5-stale-ack.toml");
    assert_eq!(replay_if_seeded(&scripted, true, "pure").unwrap(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_embedded_broker_runs_the_same_campaign_as_the_pure_one() {
    let run = |backend: &str| {
        let out = leasehold(&[
            "sim",
            "--seeds",
            "0..30",
            "--swarm",
            "--backend",
            backend,
            "--json",
            "--no-save",
        ]);
        assert_eq!(out.status.code(), Some(0), "{backend}");
        json(&out)
    };
    let (pure, embedded) = (run("pure"), run("embedded"));
    assert_eq!(pure["seeds_run"], 30);
    assert_eq!(
        pure["trace_hash"], embedded["trace_hash"],
        "same traces, seed by seed"
    );
    let refused = leasehold(&[
        "sim",
        "--variant",
        "unfenced-settle",
        "--backend",
        "embedded",
    ]);
    assert_eq!(refused.status.code(), Some(2));
}
