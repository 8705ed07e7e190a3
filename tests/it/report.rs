//! `leasehold report` as a user runs it: the quick verdict matrix has no unexpected cell; the
//! full matrix reproduces the committed `reports/VERDICTS.md` (`--check-diff`); a broken
//! expectation exits 1 naming the cell; bad input exits 2 with one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run leasehold")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

fn temp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("leasehold-report-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn committed(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// docs/variants.md, written out here (not read from `Variant`): each variant and what it must
/// break, so that a drift in the code's expectations fails this test.
const EXPECTED: [(&str, &str); 19] = [
    ("fenced", "holds"),
    ("redis-streams", "violates I1"),
    ("redis-streams-fenced", "holds"),
    ("pg-visibility", "violates I1"),
    ("pg-fenced", "holds"),
    ("jetstream", "violates I1"),
    ("rabbitmq", "holds"),
    ("unfenced-settle", "violates I1"),
    ("renew-revives", "violates I2"),
    ("lease-id-reuse", "violates I1"),
    ("max-seen-frontier", "violates I4"),
    ("no-dead-letter", "violates I5"),
    ("volatile-ack", "violates I4"),
    ("nack-on-ambiguous", "violates I4"),
    ("worker-clock-expiry", "violates I1"),
    ("dlq-drop", "violates I3"),
    ("only-ack-fenced", "violates I1"),
    ("attempts-reset", "violates I5"),
    ("stuck-lease", "violates I6"),
];

#[test]
#[ignore = "slow: the quick verdict matrix, every variant through both engines; .ci/run runs it (--include-ignored)"]
fn the_quick_matrix_has_every_expected_cell() {
    let dir = temp("quick");
    let out = leasehold(&[
        "report",
        "--quick",
        "--threads",
        "2",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(!stdout.contains("unexpected:"), "{stdout}");
    assert!(
        stdout.contains("result: every cell as expected"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("VERDICTS.md")).expect("VERDICTS.md written");
    // Every documented variant has its row with its documented expectation, and every expected
    // violation is found by both engines: the bold cells of its row link a check and a sim
    // scenario.
    for (variant, expected) in EXPECTED {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| `{variant}` |")))
            .unwrap_or_else(|| panic!("no row for {variant} in\n{md}"));
        assert!(row.contains(&format!("| {expected} |")), "{row}");
        if let Some(inv) = expected.strip_prefix("violates ") {
            // Bold (the expected violation) and linked to its evidence, for each engine.
            for engine in ["check", "sim"] {
                let evidence = format!("](scenarios/{variant}-{engine}-{inv}.toml)**");
                assert!(
                    row.contains(&evidence),
                    "{engine} misses {variant} × {inv}: {row}"
                );
            }
        } else {
            assert!(!row.contains("violated"), "{row}");
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdicts.json")).expect("json"))
            .expect("valid JSON");
    assert_eq!(json["result"], "as_expected");
    assert!(json["variants"].as_array().map_or(0, Vec::len) >= EXPECTED.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The regenerate-and-diff check on the committed full report. The full matrix takes about a
/// minute of the test profile's CPU, so CI regenerates it rather than a smaller stand-in; on
/// two threads, where the committed one was generated on one: the results do not depend on
/// the threads.
#[test]
#[ignore = "slow: the full verdict matrix regenerated; .ci/run runs it (--include-ignored)"]
fn the_committed_report_is_what_the_command_produces() {
    let before = committed("reports/VERDICTS.md");
    let out = leasehold(&["report", "--check-diff", "--threads", "2"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "regenerate with `cargo run --release -- report`:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("the committed report is up to date"),
        "{stdout}"
    );
    assert!(before.starts_with("# Verdict matrix\n\nGenerated by `leasehold report` (full"));
    // --check-diff writes nothing under reports/.
    assert_eq!(committed("reports/VERDICTS.md"), before);
}

#[test]
fn a_broken_expectation_exits_1_and_names_each_cell() {
    let dir = temp("broken");
    let out = leasehold(&[
        "report",
        "--quick",
        "--variants",
        "dlq-drop,no-dead-letter",
        "--expect",
        "dlq-drop=I2",
        "--expect",
        "no-dead-letter=holds",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for cell in [
        "unexpected: dlq-drop × I2 × check: holds, expected violated",
        "unexpected: dlq-drop × I2 × sim: holds, expected violated",
        "unexpected: no-dead-letter × I5 × check: violated, expected holds",
        "unexpected: no-dead-letter × I5 × sim: violated, expected holds",
    ] {
        assert!(stdout.contains(cell), "missing '{cell}' in:\n{stdout}");
    }
    let md = std::fs::read_to_string(dir.join("VERDICTS.md")).expect("written");
    assert!(
        md.contains("* ⚠ unexpected: dlq-drop × I2 × check: holds, expected violated"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for (args, needle) in [
        (
            vec!["report", "--variants", "nope"],
            "unknown variant 'nope'",
        ),
        (vec!["report", "--expect", "fenced"], "VARIANT=INVARIANT"),
        (
            vec!["report", "--expect", "fenced=I9"],
            "unknown invariant 'I9'",
        ),
        (vec!["report", "--threads", "0"], "--threads 0"),
    ] {
        let out = leasehold(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// The README's headline is the committed report's, word for word (numbers are generated,
/// never typed).
#[test]
fn the_readme_headline_is_the_committed_reports() {
    let report = committed("reports/VERDICTS.md");
    let headline = report
        .lines()
        .find_map(|l| l.strip_prefix("**Headline**: "))
        .expect("VERDICTS.md has a headline");
    let readme = committed("README.md");
    let section = readme
        .split("## What leasehold proves")
        .nth(1)
        .expect("README has the section");
    assert!(
        section.contains(&format!("\n> {headline}\n")),
        "README's headline differs from reports/VERDICTS.md's: {headline}"
    );
}

/// `reports/shrink.md` and the renew-revives story beside it are what `benches/shrink.sh`
/// produces with this build (the story written to a scratch folder, its path shown as
/// `reports`): a change to the shrinker or the timelines that moves them fails here.
#[test]
#[ignore = "slow: benches/shrink.sh run with the test build; .ci/run runs it (--include-ignored)"]
fn the_committed_shrink_report_is_what_its_script_produces() {
    let story = temp("shrink-story");
    std::fs::create_dir_all(&story).expect("scratch folder");
    let out = Command::new("bash")
        .arg("benches/shrink.sh")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("BIN", env!("CARGO_BIN_EXE_leasehold"))
        .env("STORY_DIR", &story)
        .output()
        .expect("run bash");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = story.to_str().expect("utf-8 path");
    let regenerate =
        "regenerate with `cargo build --release && bash benches/shrink.sh > reports/shrink.md`";
    assert_eq!(
        text(&out.stdout).replace(shown, "reports"),
        committed("reports/shrink.md"),
        "{regenerate}"
    );
    for file in ["renew-revives-story.toml", "renew-revives-story.txt"] {
        let made = std::fs::read_to_string(story.join(file)).expect("written");
        assert_eq!(
            made.replace(shown, "reports"),
            committed(&format!("reports/{file}")),
            "{file}: {regenerate}"
        );
    }
    let _ = std::fs::remove_dir_all(&story);
}
