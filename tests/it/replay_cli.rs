//! `leasehold replay` and `leasehold timeline` as a user runs them: exit statuses
//! (docs/cli.md), the first line, `--json`, malformed files (exit 2, one stderr line naming file
//! and line), the SVG output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn leasehold(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// A file `name` with `contents`, in a scratch folder that is removed when the returned guard
/// drops.
fn scratch(name: &str, contents: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("leasehold-replay-cli-")
        .tempdir()
        .expect("a scratch folder");
    let path = tmp.path().join(name);
    std::fs::write(&path, contents).unwrap();
    (tmp, path)
}

fn t0_t5() -> String {
    std::fs::read_to_string(root().join("scenarios/t0-t5-stale-ack.toml")).unwrap()
}

/// t0-t5 with `from` replaced by `to` (which must occur once).
fn t0_t5_with(from: &str, to: &str) -> String {
    let src = t0_t5();
    assert_eq!(src.matches(from).count(), 1, "{from}");
    src.replace(from, to)
}

#[test]
fn replay_prints_the_recipe_and_the_six_line_timeline_and_exits_0() {
    let out = leasehold(&["replay", "scenarios/t0-t5-stale-ack.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("variant fenced"), "{}", lines[0]);
    assert!(lines[0].contains("lease_ms 30000"), "{}", lines[0]);
    let timeline: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('t') && l.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
        .collect();
    assert_eq!(timeline.len(), 6, "{text}");
    assert_eq!(
        timeline[4],
        "t4  worker A (restarted, delayed) tries ACK L1 → rejected (stale_lease)"
    );
}

#[test]
fn every_scenario_replays_with_exit_0() {
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let relative = format!("scenarios/{}", path.file_name().unwrap().to_string_lossy());
        let out = leasehold(&["replay", &relative]);
        if out.status.code() != Some(0) {
            failures.push(format!("{relative}: {}{}", stdout(&out), stderr(&out)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_reproduced_expected_violation_exits_0_and_names_the_invariant_and_step() {
    let out = leasehold(&["replay", "scenarios/redis-streams-late-xack.toml"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("violated: I1 stale-never-counts at t4 (step[4])"),
        "{text}"
    );
}

#[test]
fn a_violation_without_expect_exits_1() {
    let src = t0_t5_with("variant = \"fenced\"", "variant = \"unfenced-settle\"");
    let src = src.replace("expect = \"stale_lease\"\n", "");
    let src = src.split("[expect]").next().unwrap().to_string();
    let (_scratch, path) = scratch("no-expect.toml", &src);
    let out = leasehold(&["replay", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("violated: I1 stale-never-counts"));
    // `timeline` answers the same question with its status, text or drawing.
    let out = leasehold(&["timeline", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("I1 stale-never-counts"));
    let svg = path.with_extension("svg");
    let out = leasehold(&[
        "timeline",
        path.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(svg.exists());
    // With the violation expected, it is a regression test that holds: 0.
    let (_scratch, expected) = scratch(
        "expected.toml",
        &format!("{src}\n[expect]\nviolated = \"I1\"\n"),
    );
    for command in ["replay", "timeline"] {
        let out = leasehold(&[command, expected.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stdout(&out));
    }
}

#[test]
fn an_expected_violation_that_does_not_happen_exits_1() {
    let src = t0_t5_with("invariants = \"hold\"", "violated = \"I1\"");
    let (_scratch, path) = scratch("expects-i1.toml", &src);
    let out = leasehold(&["replay", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("expected I1 stale-never-counts to be violated"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_mismatched_step_expect_exits_1_naming_the_step() {
    let src = t0_t5_with("expect = \"stale_lease\"", "expect = \"ok\"");
    let (_scratch, path) = scratch("step-mismatch.toml", &src);
    let out = leasehold(&["replay", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("mismatch: step[4] (t4): expected ok, got stale_lease"),
        "{}",
        stdout(&out)
    );
    // `timeline` exits 1 on the same file and says why, after the lines (and after drawing).
    let svg = path.with_extension("svg");
    for extra in [&[][..], &["--svg", svg.to_str().unwrap()][..]] {
        let mut args = vec!["timeline", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = leasehold(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let text = stdout(&out);
        let last = text.lines().last().unwrap_or_default();
        assert_eq!(
            last, "mismatch: step[4] (t4): expected ok, got stale_lease",
            "{args:?}: {text}"
        );
    }
    assert!(svg.exists(), "the drawing is written all the same");
    // On another backend, the command that reproduces the run names it.
    let out = leasehold(&["replay", path.to_str().unwrap(), "--backend", "embedded"]);
    assert_eq!(out.status.code(), Some(1));
    let wanted = format!(
        "(reproduce: leasehold replay {} --backend embedded)",
        path.display()
    );
    assert!(
        stdout(&out).trim_end().ends_with(&wanted),
        "{}",
        stdout(&out)
    );
}

/// `--times` on `replay` and `timeline` (scripted and seeded files): each line with its
/// virtual time, each lease with its deadline; the same story without it.
#[test]
fn times_show_each_lines_time_and_each_leases_deadline() {
    let timed = |args: &[&str]| -> Vec<String> {
        let out = leasehold(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        stdout(&out)
            .lines()
            .filter(|l| l.starts_with('t') && l[1..].starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_string)
            .collect()
    };
    let file = "scenarios/t0-t5-stale-ack.toml";
    for command in ["replay", "timeline"] {
        let lines = timed(&[command, file, "--times"]);
        assert_eq!(
            lines[0],
            "t0  [0 ms] worker A fetches event E1 → lease L1 (deadline 30000 ms)"
        );
        assert_eq!(
            lines[4],
            "t4  [32000 ms] worker A (restarted, delayed) tries ACK L1 (deadline 30000 ms) → rejected (stale_lease)"
        );
        let plain = timed(&[command, file]);
        assert_eq!(
            plain[0], "t0  worker A fetches event E1 → lease L1",
            "{command}"
        );
        assert_eq!(plain.len(), lines.len(), "{command}");
    }
    let json = stdout(&leasehold(&["replay", file, "--json", "--times"]));
    assert!(json.contains("t2  [30000 ms] lease L1 expires"), "{json}");
    // A seeded file streams its timeline in the same style.
    let seeded = "scenarios/found/lease-id-reuse-seed3-shrunk.toml";
    let (plain, timed) = (
        timed(&["timeline", seeded]),
        timed(&["timeline", seeded, "--times"]),
    );
    assert_eq!(plain.len(), timed.len());
    for (plain, timed) in plain.iter().zip(&timed) {
        let (t, rest) = timed.split_once("  [").expect("a time");
        assert!(plain.starts_with(&format!("{t}  ")), "{plain} / {timed}");
        assert!(rest.split_once(" ms] ").is_some(), "{timed}");
    }
    let help = stdout(&leasehold(&["replay", "--help"]));
    assert!(help.contains("--times"), "{help}");
}

#[test]
fn json_is_one_object_with_the_timeline_hash_and_verdict() {
    let out = leasehold(&["replay", "scenarios/t0-t5-stale-ack.toml", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(value["matched"], true);
    assert_eq!(value["timeline"].as_array().unwrap().len(), 6);
    assert_eq!(value["violations"].as_array().unwrap().len(), 0);
    let hash = value["trace_hash"].as_str().unwrap();
    assert_eq!(hash.len(), 16);
    let again = leasehold(&["replay", "scenarios/t0-t5-stale-ack.toml", "--json"]);
    assert_eq!(stdout(&out), stdout(&again), "same file, same output");
    // `timeline --json` is the same object, for a scripted and a seeded file.
    for file in [
        "scenarios/t0-t5-stale-ack.toml",
        "scenarios/found/stale-timer-seed4.toml",
    ] {
        let replay = leasehold(&["replay", file, "--json"]);
        let timeline = leasehold(&["timeline", file, "--json"]);
        assert_eq!(timeline.status.code(), replay.status.code(), "{file}");
        assert!(!stdout(&timeline).is_empty(), "{file}");
        assert_eq!(stdout(&timeline), stdout(&replay), "{file}");
    }
}

/// Each malformed file exits 2 with one stderr line that names the file and line.
#[test]
fn malformed_files_exit_2_with_file_and_line() {
    let cases: &[(&str, &str, &str, usize, &str)] = &[
        (
            "unknown-key",
            "bind = \"L1\"\n",
            "bind = \"L1\"\nbnd = 1\n",
            21,
            "unknown field `bnd`",
        ),
        (
            "unknown-op",
            "op = \"crash\"",
            "op = \"crashh\"",
            26,
            "unknown op 'crashh'",
        ),
        (
            "unknown-worker",
            "worker = \"B\"\nop = \"ack\"",
            "worker = \"C\"\nop = \"ack\"",
            51,
            "unknown worker 'C'",
        ),
        (
            "unknown-variant",
            "variant = \"fenced\"",
            "variant = \"fencd\"",
            6,
            "unknown variant",
        ),
        (
            "unknown-group",
            "bind = \"L2\"",
            "bind = \"L2\"\ngroup = \"shipping\"",
            39,
            "unknown group 'shipping'",
        ),
        (
            "unknown-policy",
            "ack_policy = \"nack_on_error\"",
            "ack_policy = \"ack_twice\"",
            14,
            "unknown ack_policy",
        ),
        (
            "unbound-lease",
            "lease = \"L2\"",
            "lease = \"L3\"",
            53,
            "used before it is bound",
        ),
        (
            "time-backwards",
            "at_ms = 33000",
            "at_ms = 500",
            50,
            "time goes backwards",
        ),
        (
            "no-groups",
            "groups = [\"fulfillment\"]",
            "groups = []",
            9,
            "no groups",
        ),
        (
            "no-workers",
            "workers = [\"A\", \"B\"]",
            "workers = []",
            11,
            "no workers",
        ),
        (
            "duplicate-workers",
            "workers = [\"A\", \"B\"]",
            "workers = [\"A\", \"A\"]",
            11,
            "duplicate worker name",
        ),
        ("no-events", "events = 1", "events = 0", 10, "events = 0"),
        (
            "max-attempts-0",
            "max_attempts = 3",
            "max_attempts = 0",
            13,
            "max_attempts = 0",
        ),
        (
            "lease-ms-0",
            "lease_ms = 30000",
            "lease_ms = 0",
            12,
            "lease_ms = 0",
        ),
        ("missing-field", "lease = \"L2\"\n", "", 49, "needs `lease`"),
        (
            "malformed-step-expect",
            "expect = \"stale_lease\"",
            "expect = \"stale\"",
            47,
            "malformed expect",
        ),
        (
            "malformed-expect-block",
            "invariants = \"hold\"",
            "invariants = \"mostly\"",
            57,
            "malformed expect",
        ),
        (
            "bad-invariant",
            "invariants = \"hold\"",
            "violated = \"I8\"",
            57,
            "unknown invariant",
        ),
        ("syntax", "op = \"crash\"", "op = crash", 26, "invalid TOML"),
    ];
    for &(name, from, to, line, fragment) in cases {
        let (_scratch, path) = scratch(&format!("{name}.toml"), &t0_t5_with(from, to));
        let shown = path.display().to_string();
        let out = leasehold(&["replay", &shown]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(
            err.contains(&format!("{shown}:{line}:")),
            "{name}: expected {shown}:{line}: in {err}"
        );
        assert!(err.contains(fragment), "{name}: {err}");
        assert!(stdout(&out).is_empty(), "{name}: nothing on stdout");
    }
}

#[test]
fn a_file_with_a_seed_and_steps_exits_2_on_every_command() {
    let text = t0_t5_with("variant = \"fenced\"", "variant = \"fenced\"\nseed = 3");
    let (_scratch, path) = scratch("seed-and-steps.toml", &text);
    let shown = path.display().to_string();
    let step_line = text.lines().position(|l| l == "[[step]]").expect("a step") + 1;
    for args in [
        vec!["replay", &shown],
        vec!["replay", &shown, "--json"],
        vec!["timeline", &shown],
        vec!["sim", "--file", &shown],
    ] {
        let out = leasehold(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!("{shown}:{step_line}:")),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("either 'seed' or '[[step]]'"),
            "{args:?}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
}

/// `[expect] trace_hash` pins the very run a file was written for, scripted or seeded: the
/// hash `replay` prints matches (exit 0), another one is an expectation that failed (exit 1:
/// the run is not the pinned one), and one that is not 16 hex digits is bad input (exit 2,
/// with the file, line and field).
#[test]
fn a_pinned_trace_hash_tells_a_different_run() {
    for file in [
        "scenarios/t0-t5-stale-ack.toml",
        "scenarios/found/inclusive-deadline-seed0.toml",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let replayed = stdout(&leasehold(&["replay", file]));
        let hash = replayed
            .lines()
            .find_map(|l| l.strip_prefix("trace hash "))
            .unwrap_or_else(|| panic!("{replayed}"))
            .to_string();
        let pinned = |value: &str| {
            let name = format!("pinned-{}-{value}.toml", file.len());
            let with = text.replace(
                "[expect]\n",
                &format!("[expect]\ntrace_hash = \"{value}\"\n"),
            );
            assert_ne!(with, text, "{file} has an [expect]");
            scratch(&name, &with)
        };
        let (_scratch, same_file) = pinned(&hash);
        let same = leasehold(&["replay", same_file.to_str().unwrap()]);
        assert_eq!(same.status.code(), Some(0), "{file}: {}", stdout(&same));
        let other = format!("{:016x}", u64::from_str_radix(&hash, 16).unwrap() ^ 1);
        let (_scratch, differs_file) = pinned(&other);
        let differs = leasehold(&["replay", differs_file.to_str().unwrap()]);
        assert_eq!(differs.status.code(), Some(1), "{file}");
        let told = stdout(&differs);
        assert!(
            told.contains(&format!("expected trace_hash = {other}, got {hash}")),
            "{file}: {told}"
        );
        let (_scratch, malformed_file) = pinned("xyz");
        let malformed = leasehold(&["replay", malformed_file.to_str().unwrap()]);
        assert_eq!(malformed.status.code(), Some(2), "{file}");
        let err = stderr(&malformed);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("trace_hash") && err.contains(".toml:"),
            "{file}: {err}"
        );
    }
}

#[test]
fn a_missing_file_exits_2() {
    let out = leasehold(&["replay", "scenarios/does-not-exist.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does-not-exist.toml"));
}

#[test]
fn timeline_prints_the_lines_and_draws_the_svg() {
    let out = leasehold(&["timeline", "scenarios/t0-t5-stale-ack.toml"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).lines().count(), 6);
    let svg = std::env::temp_dir().join(format!("leasehold-t0t5-{}.svg", std::process::id()));
    let out = leasehold(&[
        "timeline",
        "scenarios/t0-t5-stale-ack.toml",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert!(drawing.starts_with("<svg"));
    for needle in [
        "lease L1 · E1 (expired)",
        "lease L2 · E1 (acked)",
        "ACK L1 (delayed) rejected (stale_lease)",
        "ACK L2 accepted",
        ">crash<",
        "virtual time (ms)",
        "legend",
    ] {
        assert!(drawing.contains(needle), "{needle}");
    }
    let _ = std::fs::remove_file(svg);
}

/// `--svg` into a pipe (what `--svg /dev/stdout | …` is) sends the drawing alone down the pipe
/// and leaves the pipe a pipe: a device or pipe is written through, never renamed over. (A
/// FIFO of the test's own stands in for `/dev/stdout`, which a broken build would replace.)
#[cfg(unix)]
#[test]
fn timeline_draws_into_a_pipe_without_replacing_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = std::env::temp_dir().join(format!("leasehold-svg-pipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("drawing.svg");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable: skipped");
        return;
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = leasehold(&[
        "timeline",
        "scenarios/t0-t5-stale-ack.toml",
        "--svg",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let drawing = reader.join().unwrap();
    assert!(drawing.starts_with("<svg") && drawing.trim_end().ends_with("</svg>"));
    assert_eq!(stdout(&out), "", "nothing but the drawing is written");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--svg -` writes the drawing, and nothing else, to standard output (no file named `-`): the
/// drawing `--svg FILE` writes, but for the command it names, for a scripted and a seeded file.
#[test]
fn timeline_draws_to_standard_output_with_a_dash() {
    let dir = std::env::temp_dir().join(format!("leasehold-svg-dash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let seeded = root().join("scenarios/found/renew-revives-seed39-shrunk.toml");
    for file in [root().join("scenarios/t0-t5-stale-ack.toml"), seeded] {
        let file = file.to_str().unwrap();
        let run = |out: &str| {
            Command::new(BIN)
                .args(["timeline", file, "--svg", out])
                .current_dir(&dir)
                .output()
                .expect("the binary runs")
        };
        let piped = run("-");
        assert_eq!(piped.status.code(), Some(0), "{file}: {}", stderr(&piped));
        assert!(
            !dir.join("-").exists(),
            "{file}: a file named '-' was written"
        );
        let written = run("drawing.svg");
        assert_eq!(
            written.status.code(),
            Some(0),
            "{file}: {}",
            stderr(&written)
        );
        let drawing = std::fs::read_to_string(dir.join("drawing.svg")).unwrap();
        assert!(drawing.starts_with("<svg"), "{file}");
        assert_eq!(
            stdout(&piped),
            drawing.replace("--svg drawing.svg", "--svg -"),
            "{file}"
        );
        assert_ne!(
            stdout(&piped),
            drawing,
            "{file}: the drawing names its command"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_committed_svg_is_the_one_timeline_draws() {
    let committed = std::fs::read_to_string(root().join("reports/t0-t5-stale-ack.svg")).unwrap();
    let svg =
        std::env::temp_dir().join(format!("leasehold-t0t5-report-{}.svg", std::process::id()));
    leasehold(&[
        "timeline",
        "scenarios/t0-t5-stale-ack.toml",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let fresh = std::fs::read_to_string(&svg).unwrap();
    let _ = std::fs::remove_file(&svg);
    // The provenance names the output path; everything else must be identical.
    let strip = |s: &str| -> String { s.lines().filter(|l| !l.starts_with("<desc>")).collect() };
    assert_eq!(
        strip(&committed),
        strip(&fresh),
        "regenerate reports/t0-t5-stale-ack.svg"
    );
}

/// The executor is generic over the broker: every `fenced` scenario replays on the embedded
/// broker, matches its expectations, and tells the same story (same timeline, same trace hash)
/// as on the pure broker.
#[test]
fn fenced_scenarios_replay_identically_on_the_embedded_broker() {
    let mut fenced = 0;
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        if !src.lines().any(|l| l.trim() == "variant = \"fenced\"") {
            continue;
        }
        let relative = format!("scenarios/{}", path.file_name().unwrap().to_string_lossy());
        let run = |backend: &str| {
            let out = leasehold(&["replay", &relative, "--json", "--backend", backend]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{relative} on {backend}: {}",
                stderr(&out)
            );
            let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            (value["timeline"].clone(), value["trace_hash"].clone())
        };
        assert_eq!(run("pure"), run("embedded"), "{relative}");
        fenced += 1;
    }
    assert!(fenced >= 7, "{fenced} fenced scenarios");
}

#[test]
fn a_variant_the_embedded_broker_does_not_implement_exits_2() {
    let out = leasehold(&[
        "replay",
        "scenarios/mutant-dlq-drop.toml",
        "--backend",
        "embedded",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("scenarios/mutant-dlq-drop.toml"), "{err}");
}

/// A violation is worded as the timeline words what it names: the event as `E1 of orders` (the
/// group by its name, not its index) and the leases by the names the file bound them to.
#[test]
fn a_violation_names_events_and_leases_as_the_timeline_does() {
    let (_scratch, file) = scratch(
        "named-violation.toml",
        r#"name = "renew revives, named"
variant = "renew-revives"

[config]
groups = ["billing", "orders"]
events = 1
workers = ["A", "B"]
lease_ms = 30000
max_attempts = 3

[[step]]
at_ms = 0
worker = "A"
op = "fetch"
group = "orders"
bind = "first"

[[step]]
at_ms = 31000
worker = "B"
op = "fetch"
group = "orders"
bind = "second"

[[step]]
at_ms = 32000
worker = "A"
op = "renew"
lease = "first"
"#,
    );
    let out = leasehold(&["replay", file.to_str().expect("utf-8 path")]);
    let text = stdout(&out);
    assert!(
        text.contains("fetches event E1 of orders → lease first"),
        "{text}"
    );
    let violation = text
        .lines()
        .find(|l| l.starts_with("violated: I2"))
        .unwrap_or_else(|| panic!("no I2 line in:\n{text}"));
    assert!(
        violation.ends_with(
            "renew of first accepted on E1 of orders while second is unexpired (issued at t2, until 61000 ms)"
        ),
        "{violation}"
    );
    let json = stdout(&leasehold(&[
        "replay",
        file.to_str().expect("utf-8 path"),
        "--json",
    ]));
    assert!(
        json.contains("renew of first accepted on E1 of orders while second is unexpired"),
        "{json}"
    );
}

/// `timeline --lines A..B` prints those lines of the timeline; with `--svg` it draws the time
/// they span (the leases fetched in them among what is drawn) and says which stretch it drew.
/// With no `--lines`, a run longer than the drawing's 40 lines is drawn up to its first
/// violation. A malformed or impossible stretch is a one-line error, exit 2.
#[test]
fn timeline_lines_print_and_draw_a_stretch_of_a_long_run() {
    let file = "scenarios/found/inclusive-deadline-seed0.toml";
    let whole = stdout(&leasehold(&["timeline", file]));
    let shown: Vec<&str> = whole.lines().filter(|l| l.starts_with('t')).collect();
    assert!(shown.len() > 300, "{} lines", shown.len());
    let violation_t: usize = whole
        .lines()
        .find_map(|l| l.split(" violated at t").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|t| t.parse().ok())
        .expect("a violation at tN");

    let printed = leasehold(&["timeline", file, "--lines", "100..105"]);
    assert_eq!(printed.status.code(), Some(0));
    let printed = stdout(&printed);
    let lines: Vec<&str> = printed.lines().filter(|l| l.starts_with('t')).collect();
    assert_eq!(lines, shown[100..105], "{printed}");

    let dir = std::env::temp_dir().join(format!("leasehold-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg_path = dir.join("stretch.svg");
    let svg_arg = svg_path.to_str().unwrap();
    let out = leasehold(&["timeline", file, "--svg", svg_arg, "--lines", "t100..t160"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let told = stdout(&out);
    assert!(
        told.contains(&format!(
            "drew t100..t160 of {} lines (asked for)",
            shown.len()
        )),
        "{told}"
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let fetched: Vec<&str> = shown[100..160]
        .iter()
        .filter_map(|l| l.split("→ lease ").nth(1))
        .filter_map(|rest| rest.split([' ', ',']).next())
        .collect();
    assert!(!fetched.is_empty());
    for lease in fetched {
        assert!(
            svg.contains(&format!("<title>lease {lease} on ")),
            "{lease} not drawn"
        );
    }

    let out = leasehold(&["timeline", file, "--svg", svg_arg]);
    let told = stdout(&out);
    let expected = format!(
        "drew t{}..t{} (the 40 up to the first violation)",
        violation_t + 1 - 40,
        violation_t + 1
    );
    assert!(told.contains(&expected), "{told}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.contains("⚠ I1 violated"), "the violation is marked");

    for (lines, says) in [
        ("5..5", "--lines"),
        ("forty..50", "--lines"),
        ("100000..100010", "the run shows"),
    ] {
        let out = leasehold(&["timeline", file, "--svg", svg_arg, "--lines", lines]);
        assert_eq!(out.status.code(), Some(2), "{lines}");
        let error = stderr(&out);
        assert_eq!(error.trim_end().lines().count(), 1, "{error}");
        assert!(error.contains(says), "{lines}: {error}");
    }
    // Printed too: lines the run does not show are said, not an empty output (a seeded file and
    // a scripted one).
    for file in [file, "scenarios/t0-t5-stale-ack.toml"] {
        let out = leasehold(&["timeline", file, "--lines", "100000..100010"]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let error = stderr(&out);
        assert_eq!(error.trim_end().lines().count(), 1, "{error}");
        assert!(error.contains("the run shows"), "{file}: {error}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
