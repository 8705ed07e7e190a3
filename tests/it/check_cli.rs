//! `leasehold check` as a user runs it: exit statuses, the replay recipe on the first line,
//! every mutant caught with its expected invariant and a scenario file that replays to it,
//! "bounded" instead of "holds" when the state bound cuts the search, and the Explorer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A folder `name` not yet made, in a scratch folder that is removed (with whatever the test
/// wrote) when the returned guard drops.
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("leasehold-check-cli-")
        .tempdir()
        .expect("a scratch folder");
    let dir = tmp.path().join(name);
    (tmp, dir)
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

/// The verdict line of invariant `id` (`  always     I1 stale-never-counts   holds`).
fn verdict_line<'a>(text: &'a str, id: &str) -> &'a str {
    text.lines()
        .find(|l| {
            (l.starts_with("  always") || l.starts_with("  eventually"))
                && l.contains(&format!(" {id} "))
        })
        .unwrap_or_else(|| panic!("no line for {id}: {text}"))
}

/// With no flag, `check` runs `fenced`'s covering configuration (the release build proves it
/// in about a minute: reports/check-bench.md); cut here by a state bound, the command it
/// prints names that configuration.
#[test]
fn check_with_no_flag_runs_the_covering_configuration() {
    let output = leasehold(&["check", "--max-states", "1000", "--out", "/nonexistent"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("leasehold check --variant fenced --groups 2 --events 1 --workers 2 --max-attempts 2 --policy nack_on_error --crashes 1 --drops 1 --dups 1 --lost-replies 1 --broker-restarts 1 --renews 1 --outcomes all --time ticks --tick-ms 1 --lease-ticks 2 --skew-ticks 1"),
        "{first}"
    );
    // A planted bug starts from its own configuration, the smallest that shows it.
    let output = leasehold(&["check", "--variant", "dlq-drop", "--max-states", "1"]);
    let first = stdout(&output).lines().next().unwrap().to_string();
    assert!(
        first.starts_with("leasehold check --variant dlq-drop --groups 1 --events 1 --workers 1 --max-attempts 1 "),
        "{first}"
    );
    let refused = leasehold(&["check", "--covering", "--tailored"]);
    assert_eq!(refused.status.code(), Some(2));
}

/// `--tailored` on `fenced`: one group explored deep. Every invariant holds, every sometimes
/// property is reached, and the cells that configuration never reaches are named.
#[test]
#[ignore = "slow: a tailored proof through the command line; .ci/run runs it (--include-ignored)"]
fn tailored_fenced_check_proves_every_invariant_and_names_what_it_did_not_cover() {
    let (_scratch, out_dir) = scratch("fenced");
    let output = leasehold(&["check", "--tailored", "--out", out_dir.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("leasehold check --variant fenced --groups 1 --events 3 --workers 3 --max-attempts 2 --policy nack_on_error --crashes 1 --drops 0 --dups 0 --lost-replies 1 --broker-restarts 1"),
        "{first}"
    );
    assert!(
        text.contains("(not covered: ") && text.contains("one event leased in two groups at once"),
        "{text}"
    );
    for id in ["I1", "I2", "I3", "I4", "I5", "I6"] {
        let line = verdict_line(&text, id);
        assert!(line.contains(" holds"), "{line}");
    }
    assert!(
        verdict_line(&text, "I6").contains("(assuming finite budgets"),
        "{text}"
    );
    let reached = text
        .lines()
        .filter(|l| {
            l.starts_with("  sometimes") && l.ends_with(" reached") && !l.ends_with("not reached")
        })
        .count();
    assert_eq!(reached, 4, "{text}");
    assert!(!text.contains("not reached"), "{text}");
    assert!(text.contains("unique states"), "{text}");
    assert!(text.contains("fingerprint collision estimate"), "{text}");
    assert!(!out_dir.exists(), "no counterexample, no file");
}

#[test]
fn every_mutant_and_redis_streams_exits_1_naming_its_invariant_and_its_scenario_replays() {
    let (_scratch, out_dir) = scratch("mutants");
    let rows: serde_json::Value =
        serde_json::from_slice(&leasehold(&["protocols", "--json"]).stdout).expect("json");
    for row in rows.as_array().unwrap() {
        let name = row["name"].as_str().unwrap();
        let Some(id) = row["expected"].as_str() else {
            continue;
        };
        let output = leasehold(&[
            "check",
            "--variant",
            name,
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(1), "{name}: {text}");
        let result = text
            .lines()
            .find(|l| l.starts_with("result: VIOLATED"))
            .unwrap();
        assert!(result.contains(id), "{name}: expected {id}: {result}");
        let file = out_dir.join(format!("{name}-{id}.toml"));
        assert!(file.exists(), "{name}: {} not written", file.display());
        let replay = leasehold(&["replay", file.to_str().unwrap()]);
        assert_eq!(replay.status.code(), Some(0), "{name}: {}", stdout(&replay));
        assert!(
            stdout(&replay).contains(&format!("violated: {id}")),
            "{}",
            stdout(&replay)
        );
        // The drawing command the output names, run as is, draws the counterexample.
        let path = file.display().to_string();
        let draw = text
            .lines()
            .filter(|l| l.starts_with(&format!("scenario written to {path} ")))
            .find_map(|l| l.split("draw: leasehold ").nth(1))
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{name}: no drawing command: {text}"));
        let args: Vec<&str> = draw.split(' ').collect();
        let drawn = leasehold(&args);
        assert_eq!(drawn.status.code(), Some(0), "{name}: {}", stdout(&drawn));
        let svg = std::fs::read_to_string(file.with_extension("svg")).unwrap();
        // Its violation marker names the invariant (`⚠ I4 violated`, `⚠ I3, I4 violated`).
        let marked = svg
            .split('⚠')
            .skip(1)
            .filter_map(|rest| rest.split(" violated").next())
            .any(|ids| ids.split([' ', ',']).any(|word| word == id));
        assert!(marked, "{name}: {svg}");
    }
}

#[test]
fn a_found_scenario_is_never_overwritten() {
    let (_scratch, out_dir) = scratch("twice");
    for _ in 0..2 {
        let output = leasehold(&[
            "check",
            "--variant",
            "dlq-drop",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1));
    }
    assert!(out_dir.join("dlq-drop-I3.toml").exists());
    assert!(out_dir.join("dlq-drop-I3-2.toml").exists());
}

#[test]
fn a_search_cut_by_the_state_bound_reports_bounded_never_holds() {
    let output = leasehold(&["check", "--max-states", "200", "--out", "/nonexistent"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bounded: the search stopped at --max-states 200"),
        "{text}"
    );
    for id in ["I1", "I2", "I3", "I4", "I5", "I6"] {
        let line = verdict_line(&text, id);
        assert!(line.contains(" bounded"), "{line}");
    }
    assert!(text.contains("result: bounded (not proven)"), "{text}");
}

#[test]
fn json_output_names_the_verdicts() {
    let (_scratch, dir) = scratch("json");
    let report = dir.join("report.json");
    let output = leasehold(&[
        "check",
        "--variant",
        "unfenced-settle",
        "--json",
        "--out",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let written = std::fs::read_to_string(&report).expect("--report written");
    let written: serde_json::Value = serde_json::from_str(&written).expect("json");
    assert_eq!(json, written);
    assert_eq!(json["outcome"], "violated");
    // The variant by the name the command line and scenario files use.
    assert_eq!(json["config"]["variant"], "unfenced-settle");
    assert_eq!(json["properties"][0]["name"], "I1 stale-never-counts");
    assert_eq!(json["properties"][0]["verdict"], "violated");
    assert_eq!(json["counterexamples"][0]["steps"], 4);
}

/// `--report PATH` with any name but `*.json` holds the text printed.
#[test]
fn a_report_not_named_json_is_the_printed_text() {
    let (_scratch, dir) = scratch("text-report");
    let report = dir.join("report.txt");
    let output = leasehold(&[
        "check",
        "--variant",
        "unfenced-settle",
        "--out",
        dir.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let written = std::fs::read_to_string(&report).expect("--report written");
    assert_eq!(written, stdout(&output));
    assert!(written.contains("result: VIOLATED I1"), "{written}");
    // A folder cannot take it: refused before the check, in one line.
    let refused = leasehold(&["check", "--report", dir.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.trim().lines().count() == 1 && err.contains("is a folder"),
        "{err}"
    );
}

#[test]
fn first_violation_stops_at_a_bug_and_says_what_is_not_proven() {
    let (_tmp, out) = scratch("found");
    let out = out.to_str().expect("utf-8 path");
    let output = leasehold(&[
        "check",
        "--variant",
        "unfenced-settle",
        "--tailored",
        "--first-violation",
        "--out",
        out,
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap_or_default()
            .contains(" --first-violation"),
        "{text}"
    );
    assert!(
        text.contains("stopped at the first violation (--first-violation) after"),
        "{text}"
    );
    assert!(verdict_line(&text, "I1").contains("violated"), "{text}");
    assert!(text.contains("result: VIOLATED"), "{text}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let output = leasehold(&["check", "--variant", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "fenced, redis-streams, redis-streams-fenced, pg-visibility, pg-fenced, jetstream, rabbitmq, rabbitmq-channel, unfenced-settle"
        ),
        "{err}"
    );
    for args in [
        &["check", "--workers", "0"][..],
        &["check", "--events", "99"],
        &["check", "--policy", "sometimes"],
        &["check", "--explore", "0.0.0.0:3000"],
        &["check", "--explore", "example.org:80"],
        &["check", "--renews", "many"],
        &["check", "--fairness", "weak"],
        &["check", "--renews", "unbounded", "--fairness", "strong"],
        &["check", "--threads", "0"],
        &["check", "--max-states", "0"],
        &["check", "--outcomes", "some"],
        &["check", "--compare-symmetry", "--no-symmetry"],
        &["check", "--compare-symmetry", "--renews", "unbounded"],
        &["check", "--first-violation", "--all-violations"],
        &["check", "--first-violation", "--engine", "stateright"],
        &["check", "--first-violation", "--renews", "unbounded"],
        &["check", "--backend", "in-memory"],
    ] {
        let output = leasehold(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1);
    }
    // The Explorer searches in the browser: the flags of leasehold's own search and report
    // would go unused beside it, so each is refused by name (before anything listens).
    for flag in [
        &["--threads", "2"][..],
        &["--json"],
        &["--report", "r.json"],
        &["--all-violations"],
        &["--first-violation"],
        &["--compare-symmetry"],
        &["--max-states", "10"],
        &["--out", "elsewhere"],
        &["--backend", "in-memory"],
        &["--no-subsumption"],
    ] {
        let args = [&["check", "--explore", "127.0.0.1:1"][..], flag].concat();
        let output = leasehold(&args);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(flag[0]), "{err}");
    }
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

#[test]
fn explore_serves_stateright_explorer_on_loopback() {
    // A free port: bind to 0, read it, release it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(BIN)
        .args(["check", "--explore", &format!("127.0.0.1:{port}")])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut status = None;
    while Instant::now() < deadline {
        if let Some(response) = http_get(port, "/.status") {
            status = Some(response);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("the explorer stops");
    let _ = child.wait();
    let status = status.expect("the explorer answered on loopback");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(status.contains("I1 stale-never-counts"), "{status}");
    assert!(status.contains("ExplorerModel"), "{status}");
    // All four `sometimes` properties `check` reports, the transition-only ones included.
    for name in [
        "a stale settle is attempted and rejected",
        "an event is redelivered",
        "an event is dead-lettered",
        "a worker sees an ambiguous settle result",
    ] {
        assert!(
            status.contains(&format!("\"Sometimes\",\"{name}\"")),
            "{status}"
        );
    }
}

#[test]
fn compare_symmetry_reports_both_counts_and_threads_do_not_change_them() {
    let small = [
        "check",
        "--tailored",
        "--events",
        "1",
        "--workers",
        "2",
        "--crashes",
        "1",
        "--lost-replies",
        "1",
        // Counts that depend on neither the order threads meet states in.
        "--no-subsumption",
    ];
    let one = stdout(&leasehold(&[&small[..], &["--compare-symmetry"]].concat()));
    let two = stdout(&leasehold(&[&small[..], &["--threads", "2"]].concat()));
    let unique = |text: &str, prefix: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix) && l.contains(" states generated, "))
            .unwrap();
        let field = line.split(" states generated, ").nth(1).unwrap();
        field.split(' ').next().unwrap().parse().unwrap()
    };
    let reduced = unique(&one, "");
    let plain = unique(&one, "without symmetry: ");
    assert!(reduced < plain, "{one}");
    assert_eq!(unique(&two, ""), reduced, "{two}");
    // With two threads, the report says how the generated states split between them.
    let generated: u64 = two
        .split(" states generated, ")
        .next()
        .and_then(|head| head.rsplit('\n').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{two}"));
    let shares: Vec<u64> = two
        .lines()
        .find_map(|l| l.strip_prefix("states generated by each thread: "))
        .unwrap_or_else(|| panic!("{two}"))
        .split(", ")
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(shares.len(), 2, "{two}");
    assert_eq!(shares.iter().sum::<u64>(), generated, "{two}");
    let verdicts = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("  "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(verdicts(&one), verdicts(&two));
}

#[test]
fn the_plain_fault_set_proves_with_a_not_applicable_sometimes_property_and_exits_0() {
    let output = leasehold(&[
        "check",
        "--tailored",
        "--events",
        "2",
        "--workers",
        "2",
        "--max-attempts",
        "2",
        "--crashes",
        "1",
        "--lost-replies",
        "0",
        "--drops",
        "0",
        "--dups",
        "0",
        "--renews",
        "0",
        "--broker-restarts",
        "0",
        "--no-symmetry",
        "--no-partial-order",
        "--no-subsumption",
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("symmetry off, partial order off, subsumption off"),
        "{text}"
    );
    let ambiguous = text.lines().find(|l| l.contains("ambiguous")).unwrap();
    assert!(ambiguous.ends_with("not applicable"), "{ambiguous}");
    // 7763 before the broker's clock could reach a deadline (requests at now == deadline,
    // timers that outlive their lease): the boundary semantics cost the rest.
    assert!(text.contains(" 11935 unique states"), "{text}");
}

#[test]
fn unbounded_renews_give_a_lasso_without_fairness_and_a_proof_with_it() {
    let (_scratch, out_dir) = scratch("lasso");
    let base = [
        "check",
        "--tailored",
        "--events",
        "2",
        "--workers",
        "2",
        "--crashes",
        "1",
        "--lost-replies",
        "0",
        "--renews",
        "unbounded",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let none = leasehold(&[&base[..], &["--fairness", "none"]].concat());
    let text = stdout(&none);
    assert_eq!(none.status.code(), Some(1), "{text}");
    assert!(
        verdict_line(&text, "I6").contains("violated  (assuming no fairness"),
        "{text}"
    );
    assert!(text.contains("lasso counterexample for I6"), "{text}");
    let file = out_dir.join("fenced-I6.toml");
    let replay = leasehold(&["replay", file.to_str().unwrap()]);
    assert_eq!(replay.status.code(), Some(0), "{}", stdout(&replay));
    assert!(
        stdout(&replay).contains("can repeat forever"),
        "{}",
        stdout(&replay)
    );

    let weak = leasehold(&base);
    let text = stdout(&weak);
    assert_eq!(weak.status.code(), Some(0), "{text}");
    assert!(
        verdict_line(&text, "I6").contains("holds  (assuming weak fairness"),
        "{text}"
    );
}

/// `--for` stops a search that would run for a minute as `--max-states` does: bounded, never
/// holds, exit 1, the report naming the budget; Ctrl-C (SIGINT) or SIGTERM stops the search
/// for fair cycles the same way, named "interrupted". A budget the search does not need
/// changes nothing.
#[test]
#[ignore = "slow: searches that run until a budget or an interrupt stops them; .ci/run runs it (--include-ignored)"]
fn a_time_budget_or_an_interrupt_stops_the_search_as_a_bound() {
    let (_scratch, out) = scratch("budget");
    let out = out.to_str().unwrap();
    let big = [
        "check",
        "--tailored",
        "--events",
        "3",
        "--workers",
        "3",
        "--max-attempts",
        "3",
    ];
    let cut = leasehold(&[&big[..], &["--for", "1s", "--out", out]].concat());
    let text = stdout(&cut);
    assert_eq!(cut.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bounded: the search stopped (time budget 1s spent) after "),
        "{text}"
    );
    assert!(verdict_line(&text, "I1").ends_with("bounded"), "{text}");
    assert!(text.contains("result: bounded (not proven)"), "{text}");
    let cyclic = [
        "check",
        "--tailored",
        "--events",
        "3",
        "--workers",
        "3",
        "--renews",
        "unbounded",
        "--json",
        "--out",
        out,
    ];
    for signal in ["-INT", "-TERM"] {
        let child = Command::new(BIN)
            .args(cyclic)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let kill = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let done = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{signal}: {err}");
        assert!(
            err.contains("stopping: the search ends as at a bound"),
            "{err}"
        );
        let report: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
        assert_eq!(report["stopped"], "interrupted", "{report}");
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["outcome"], "bounded");
        assert_eq!(report["bounded"], report["counts"]["generated"]);
    }
    let whole = leasehold(&["check", "--tailored", "--for", "1h", "--json", "--out", out]);
    assert_eq!(whole.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(report["outcome"], "holds");
    assert!(report.get("stopped").is_none() && report.get("interrupted").is_none());
}

/// A search whose process passes `--max-memory` stops as at any bound: the report names the
/// budget, nothing is proven, exit 1 (a search that would run out of memory reports what it
/// found instead of being killed). A size that is not one is a one-line error.
#[test]
#[ignore = "slow: a search that runs until its memory budget stops it; .ci/run runs it (--include-ignored)"]
fn a_memory_budget_stops_the_search_as_a_bound() {
    if leasehold_front::budget::resident_bytes().is_none() {
        return; // No /proc: the memory budget is never spent on this system.
    }
    let (_scratch, out) = scratch("memory");
    let out = out.to_str().unwrap();
    let cut = leasehold(&["check", "--max-memory", "1MiB", "--out", out]);
    let text = stdout(&cut);
    assert_eq!(cut.status.code(), Some(1), "{text}");
    assert!(
        text.contains("bounded: the search stopped (memory budget 1.0 MiB reached) after "),
        "{text}"
    );
    assert!(text.contains("result: bounded (not proven)"), "{text}");
    for bad in ["lots", "0", "12XB", "99999999999TiB"] {
        let refused = leasehold(&["check", "--max-memory", bad]);
        assert_eq!(refused.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.trim().lines().count() == 1 && err.contains("--max-memory"),
            "{bad}: {err}"
        );
    }
    let fine = leasehold(&["check", "--tailored", "--max-memory", "none", "--out", out]);
    assert_eq!(fine.status.code(), Some(0), "{}", stdout(&fine));
}

/// `--covering` starts from the configuration that reaches every cell (two groups of one event,
/// every outcome, a renew, each fault, the clock); a flag given overrides it (one group here, to
/// keep the test small), and the command printed reproduces what ran.
#[test]
fn covering_starts_from_the_configuration_that_reaches_every_cell() {
    let output = leasehold(&["check", "--covering", "--groups", "1"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let first = text.lines().next().unwrap();
    for part in [
        "--groups 1 --events 1 --workers 2 --max-attempts 2",
        "--crashes 1 --drops 1 --dups 1 --lost-replies 1 --broker-restarts 1 --renews 1",
        "--outcomes all",
        "--time ticks --tick-ms 1 --lease-ticks 2 --skew-ticks 1",
    ] {
        assert!(first.contains(part), "{part}: {first}");
    }
    // One group: every cell but the one that needs two.
    assert!(
        text.contains("(not covered: one event leased in two groups at once)"),
        "{text}"
    );
}
