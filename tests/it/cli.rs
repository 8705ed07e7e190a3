//! The command line as a user runs it: `protocols`, `--help`, and bad usage.

use leasehold_model::{Variant, VariantKind};
use std::process::{Command, Output};

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .output()
        .expect("run leasehold")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// docs/variants.md, written out: a variant missing from `Variant::ALL` fails here.
const PROTOCOLS: [&str; 8] = [
    "fenced",
    "redis-streams",
    "redis-streams-fenced",
    "pg-visibility",
    "pg-fenced",
    "jetstream",
    "rabbitmq",
    "rabbitmq-channel",
];
const MUTANTS: [(&str, &str); 19] = [
    ("unfenced-settle", "I1"),
    ("renew-revives", "I2"),
    ("lease-id-reuse", "I1"),
    ("max-seen-frontier", "I4"),
    ("no-dead-letter", "I5"),
    ("volatile-ack", "I4"),
    ("nack-on-ambiguous", "I4"),
    ("worker-clock-expiry", "I1"),
    ("dlq-drop", "I3"),
    ("only-ack-fenced", "I1"),
    ("attempts-reset", "I5"),
    ("stuck-lease", "I6"),
    ("inclusive-deadline", "I1"),
    ("stale-timer", "I2"),
    ("volatile-publish", "I3"),
    ("renew-from-deadline", "I1"),
    ("renew-keeps-timer", "I2"),
    ("renew-worker-clock", "I1"),
    ("ack-all-groups", "I3"),
];

/// The line `protocols` prints for `name` (names are unique and no name ends another's
/// prefix followed by a space).
fn line_of<'a>(stdout: &'a str, name: &str) -> &'a str {
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with(&format!("{name} ")))
        .collect();
    assert_eq!(lines.len(), 1, "one line for {name} in:\n{stdout}");
    lines[0]
}

#[test]
fn protocols_lists_every_variant_and_mutant() {
    let out = leasehold(&["protocols"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    for variant in Variant::ALL {
        let line = line_of(&stdout, variant.name());
        assert!(line.contains(variant.summary()), "{line}");
    }
    for name in PROTOCOLS {
        let line = line_of(&stdout, name);
        let variant = Variant::from_name(name).expect("a listed protocol");
        assert_eq!(variant.kind(), VariantKind::Protocol);
        match variant.expected_violation() {
            None => assert!(line.contains("holds"), "{line}"),
            Some(inv) => assert!(line.contains(&format!("breaks {inv}")), "{line}"),
        }
    }
    // redis-streams is the documented I1 failure.
    assert!(line_of(&stdout, "redis-streams").contains("breaks I1 stale-never-counts"));
    for (name, id) in MUTANTS {
        let line = line_of(&stdout, name);
        let variant = Variant::from_name(name).expect("a listed mutant");
        assert_eq!(variant.kind(), VariantKind::Mutant, "{name}");
        assert_eq!(variant.expected_violation().map(|i| i.id()), Some(id));
        assert!(line.contains(&format!("breaks {id} ")), "{line}");
    }
    assert_eq!(Variant::ALL.len(), PROTOCOLS.len() + MUTANTS.len());
}

#[test]
fn protocols_json_names_every_variant() {
    let out = leasehold(&["protocols", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = rows
        .as_array()
        .expect("an array")
        .iter()
        .map(|row| row["name"].as_str().expect("a name"))
        .collect();
    let expected: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
    assert_eq!(names, expected);
}

#[test]
fn an_unknown_command_exits_2_with_one_line() {
    let out = leasehold(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(stderr.contains("frobnicate"), "{stderr:?}");
    assert!(stderr.starts_with("leasehold: error: "), "{stderr:?}");
}

#[test]
fn no_command_exits_2_with_one_line_naming_the_commands() {
    let out = leasehold(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(stderr.starts_with("leasehold: error: "), "{stderr:?}");
    for command in [
        "check",
        "sim",
        "replay",
        "shrink",
        "timeline",
        "protocols",
        "report",
    ] {
        assert!(stderr.contains(command), "{command}: {stderr:?}");
    }
}

#[test]
fn an_unknown_flag_exits_2_with_one_line() {
    let out = leasehold(&["protocols", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_missing_argument_is_named_in_its_one_line() {
    for command in ["replay", "timeline", "shrink"] {
        let out = leasehold(&[command]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{command}: {stderr:?}");
        assert!(stderr.contains("<FILE>"), "{command}: {stderr:?}");
    }
}

#[test]
fn help_exits_0_and_lists_the_commands() {
    let out = leasehold(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    for command in ["check", "sim", "replay", "shrink", "timeline", "protocols"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from:\n{stdout}"
        );
    }
}

/// A reader that goes away (`leasehold sim --trace | head`) ends the command quietly, with the
/// status a shell gives a program stopped by `SIGPIPE`, and no panic report.
#[test]
fn a_closed_output_ends_the_command_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args([
            "sim",
            "--seed",
            "1",
            "--events",
            "200",
            "--trace",
            "--no-save",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run leasehold");
    // The timeline is far longer than a pipe holds: the command writes to a closed pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait for leasehold");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.code(),
        Some(i32::from(leasehold::cli::EXIT_OUTPUT_CLOSED)),
        "{stderr}"
    );
}

/// Every command's `--backend` help names every backend the command line runs: the list the
/// refusal of an unknown name gives (the registry's own), so a backend added to the registry
/// and not to a command's help fails here.
#[test]
fn every_backend_help_names_every_backend() {
    let refused = leasehold(&["sim", "--backend", "nope", "--seeds", "0..1", "--no-save"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = text(&refused.stderr);
    let names: Vec<&str> = stderr
        .split("(expected one of ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no list in {stderr:?}"))
        .split(", ")
        .collect();
    assert!(names.len() >= 6, "{names:?}");
    for command in ["sim", "replay", "shrink", "timeline", "report"] {
        let out = leasehold(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command}");
        let help = text(&out.stdout);
        let start = help
            .find("--backend <")
            .unwrap_or_else(|| panic!("{command}: no --backend in\n{help}"));
        // Up to the next option's line.
        let mut lines = help[start..].lines();
        let mut paragraph = lines.next().unwrap_or_default().to_string();
        for line in lines.take_while(|l| !l.trim_start().starts_with('-')) {
            paragraph.push_str(line);
        }
        for name in &names {
            assert!(
                paragraph.contains(&format!("`{name}`")),
                "{command} --help does not name `{name}`:\n{paragraph}"
            );
        }
    }
}
