//! Scenario parsing: every kind of bad input is an error naming file, line, column and field;
//! arbitrary input never panics.

use leasehold_sim::parse::{parse, ParseError};
use proptest::prelude::*;

/// A valid scenario; each test breaks one line of it. Line numbers are 1-based.
const BASE: &str = r#"name = "base"
variant = "fenced"

[config]
groups = ["g"]
events = 1
workers = ["A", "B"]
lease_ms = 30000
max_attempts = 3
ack_policy = "nack_on_error"

[[step]]
at_ms = 0
worker = "A"
op = "fetch"
bind = "L1"

[[step]]
at_ms = 1000
worker = "A"
op = "ack"
lease = "L1"
expect = "ok"

[expect]
invariants = "hold"
"#;

/// BASE with `from` replaced by `to` (which must occur exactly once).
fn with(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from}");
    BASE.replace(from, to)
}

fn error(src: &str) -> ParseError {
    match parse(src, "bad.toml") {
        Ok(_) => panic!("parsed:\n{src}"),
        Err(e) => e,
    }
}

/// Asserts the error's line, field and a fragment of its message, and its one-line form.
fn check(src: &str, line: usize, field: Option<&str>, fragment: &str) {
    let e = error(src);
    let text = e.to_string();
    assert_eq!(e.line, line, "{text}");
    assert_eq!(e.field.as_deref(), field, "{text}");
    assert!(text.contains(fragment), "{text}");
    assert!(text.starts_with(&format!("bad.toml:{line}:")), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn the_base_scenario_parses() {
    let script = parse(BASE, "base.toml").unwrap();
    assert_eq!(script.steps.len(), 2);
    assert_eq!(script.setup.workers, ["A", "B"]);
}

#[test]
fn unknown_key() {
    check(
        &with("bind = \"L1\"\n", "bind = \"L1\"\nbnd = 2\n"),
        17,
        Some("step[0].bnd"),
        "unknown field `bnd`",
    );
    check(
        &with("max_attempts = 3\n", "max_attempts = 3\nretries = 1\n"),
        10,
        Some("config.retries"),
        "unknown field `retries`",
    );
}

#[test]
fn unknown_op() {
    let e = error(&with("op = \"ack\"", "op = \"ackk\""));
    assert_eq!((e.line, e.column), (21, 6));
    assert_eq!(
        e.to_string(),
        "bad.toml:21:6: field `step[1].op`: unknown op 'ackk' (expected one of fetch, ack, nack, renew, reject, handle, crash, restart, pause, publish, broker_restart, wait, drain)"
    );
}

#[test]
fn unknown_worker_group_variant_policy_fault_outcome() {
    check(
        &with(
            "worker = \"A\"\nop = \"ack\"",
            "worker = \"C\"\nop = \"ack\"",
        ),
        20,
        Some("step[1].worker"),
        "unknown worker 'C'",
    );
    check(
        &with("bind = \"L1\"", "bind = \"L1\"\ngroup = \"h\""),
        17,
        Some("step[0].group"),
        "unknown group 'h'",
    );
    check(
        &with("\"fenced\"", "\"fencd\""),
        2,
        Some("variant"),
        "unknown variant 'fencd'",
    );
    check(
        &with("\"nack_on_error\"", "\"nack\""),
        10,
        Some("config.ack_policy"),
        "unknown ack_policy 'nack'",
    );
    check(
        &with("max_attempts = 3", "max_attempts = 3\nexpiry = \"later\""),
        10,
        Some("config.expiry"),
        "unknown expiry 'later'",
    );
    check(
        &with("expect = \"ok\"", "fault = \"late\""),
        23,
        Some("step[1].fault"),
        "unknown fault 'late'",
    );
    check(
        &with(
            "op = \"ack\"\nlease = \"L1\"",
            "op = \"handle\"\nlease = \"L1\"\noutcome = \"maybe\"",
        ),
        23,
        Some("step[1].outcome"),
        "unknown outcome 'maybe'",
    );
}

#[test]
fn a_lease_used_before_it_is_bound() {
    check(
        &with("lease = \"L1\"", "lease = \"L2\""),
        22,
        Some("step[1].lease"),
        "lease 'L2' is used before it is bound",
    );
}

#[test]
fn time_going_backwards() {
    check(
        &with(
            "expect = \"ok\"\n",
            "expect = \"ok\"\n\n[[step]]\nat_ms = 500\nop = \"publish\"\n",
        ),
        26,
        Some("step[2].at_ms"),
        "time goes backwards",
    );
}

#[test]
fn impossible_configs() {
    check(
        &with("groups = [\"g\"]", "groups = []"),
        5,
        Some("config.groups"),
        "no groups",
    );
    check(
        &with("workers = [\"A\", \"B\"]", "workers = []"),
        7,
        Some("config.workers"),
        "no workers",
    );
    check(
        &with("workers = [\"A\", \"B\"]", "workers = [\"A\", \"A\"]"),
        7,
        Some("config.workers[1]"),
        "duplicate worker name 'A'",
    );
    check(
        &with("events = 1", "events = 0"),
        6,
        Some("config.events"),
        "events = 0",
    );
    check(
        &with("max_attempts = 3", "max_attempts = 0"),
        9,
        Some("config.max_attempts"),
        "max_attempts = 0",
    );
    check(
        &with("lease_ms = 30000", "lease_ms = 0"),
        8,
        Some("config.lease_ms"),
        "lease_ms = 0",
    );
}

#[test]
fn bounds_keep_a_typo_from_exhausting_memory() {
    check(
        &with("events = 1", "events = 4000000000"),
        6,
        Some("config.events"),
        "exceeds events_max",
    );
    check(
        &with("max_attempts = 3", "max_attempts = 4294967295"),
        9,
        Some("config.max_attempts"),
        "exceeds attempts_max = 1048576",
    );
    check(
        &with("bind = \"L1\"", "bind = \"L1\"\nlimit = 4000000000"),
        17,
        Some("step[0].limit"),
        "exceeds limit_max",
    );
}

#[test]
fn a_missing_required_field_for_an_op() {
    check(
        &with("lease = \"L1\"\n", ""),
        18, // the step's [[step]] header
        Some("step[1].lease"),
        "op 'ack' needs `lease`",
    );
    check(
        &with(
            "expect = \"ok\"",
            "expect = \"ok\"\n[[step]]\nat_ms = 2000\nworker = \"B\"\nop = \"pause\"",
        ),
        24,
        Some("step[2].for_ms"),
        "op 'pause' needs `for_ms`",
    );
}

#[test]
fn a_field_the_op_does_not_take() {
    check(
        &with("lease = \"L1\"", "lease = \"L1\"\nbind = \"L9\""),
        23,
        Some("step[1].bind"),
        "op 'ack' does not take `bind`",
    );
}

#[test]
fn malformed_expect() {
    check(
        &with("expect = \"ok\"", "expect = \"stale\""),
        23,
        Some("step[1].expect"),
        "malformed expect 'stale'",
    );
    check(
        &with("invariants = \"hold\"", "invariants = \"yes\""),
        26,
        Some("expect.invariants"),
        "malformed expect",
    );
    check(
        &with("invariants = \"hold\"", "violated = \"I9\""),
        26,
        Some("expect.violated"),
        "unknown invariant 'I9'",
    );
    check(
        &with(
            "invariants = \"hold\"",
            "invariants = \"hold\"\nviolated = \"I1\"",
        ),
        27,
        Some("expect.violated"),
        "both",
    );
}

#[test]
fn worker_state_errors() {
    check(
        &with(
            "at_ms = 1000\nworker = \"A\"\nop = \"ack\"\nlease = \"L1\"\nexpect = \"ok\"",
            "at_ms = 1000\nworker = \"A\"\nop = \"restart\"",
        ),
        21,
        Some("step[1].op"),
        "is not crashed",
    );
}

#[test]
fn syntax_errors_and_wrong_types_are_located() {
    let e = error(&with("at_ms = 1000", "at_ms = "));
    assert_eq!(e.line, 19, "{e}");
    let e = error(&with("at_ms = 1000", "at_ms = \"soon\""));
    assert_eq!(e.line, 19, "{e}");
    assert_eq!(e.field.as_deref(), Some("step[1].at_ms"), "{e}");
    let e = error(&with("events = 1", "events = 99999999999999999999"));
    assert_eq!(e.line, 6, "{e}");
    assert_eq!(e.field.as_deref(), Some("config.events"), "{e}");
}

#[test]
fn no_steps_is_an_error() {
    let src = BASE.split("[[step]]").next().unwrap().to_string();
    let e = error(&src);
    assert!(e.to_string().contains("no steps"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,300}") {
        let _ = parse(&src, "fuzz.toml");
    }

    #[test]
    fn mangled_scenarios_never_panic(cut in 0usize..BASE.len(), insert in "[\\[\\]=\"a-z0-9 \n._#-]{0,12}") {
        let mut src = BASE.to_string();
        let mut cut = cut;
        while !src.is_char_boundary(cut) {
            cut -= 1;
        }
        src.insert_str(cut, &insert);
        if let Err(e) = parse(&src, "fuzz.toml") {
            let text = e.to_string();
            prop_assert!(text.starts_with("fuzz.toml:"));
            prop_assert!(!text.contains('\n'));
            prop_assert!(e.line >= 1 && e.column >= 1);
        }
    }

    #[test]
    fn deleted_lines_never_panic(line in 0usize..28) {
        let src: String = BASE
            .lines()
            .enumerate()
            .filter(|&(i, _)| i != line)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let _ = parse(&src, "fuzz.toml");
    }
}

/// The engines write findings with the `Scenario` types: a serialized scenario parses back to
/// the same script and replays to the same timeline.
#[test]
fn every_scenario_file_round_trips_through_the_types() {
    use leasehold_model::Broker;
    use leasehold_sim::scenario::Scenario;
    use leasehold_sim::script;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let scenario: Scenario = toml::from_str(&src).unwrap();
        let written = toml::to_string(&scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = parse(&written, &name).unwrap_or_else(|e| panic!("{e}\n{written}"));
        let original = parse(&src, &name).unwrap();
        assert_eq!(again.scenario, original.scenario, "{name}");
        let run = |s: &leasehold_sim::script::Script| {
            script::run(s, Broker::new(s.setup.broker_config())).timeline
        };
        assert_eq!(run(&again), run(&original), "{name}");
        count += 1;
    }
    assert!(count >= 20);
}

#[test]
fn a_scripted_scenario_has_no_seeded_sections() {
    check(
        &with("[expect]", "[faults]\ncrash = \"1/2\"\n\n[expect]"),
        25,
        Some("faults"),
        "[faults] belongs to a seeded scenario",
    );
    check(
        &with("[expect]", "[workload]\npoll_ms = 10\n\n[expect]"),
        25,
        Some("workload"),
        "[workload] belongs to a seeded scenario",
    );
}

#[test]
fn a_missing_or_doubled_field_is_named_in_its_table() {
    check(
        &with("name = \"base\"\n", ""),
        1,
        Some("name"),
        "missing field `name`",
    );
    check(
        &with("lease_ms = 30000\n", ""),
        4,
        Some("config.lease_ms"),
        "missing field `lease_ms`",
    );
    check(
        &with(
            "lease_ms = 30000\n",
            "lease_ms = 30000\nclaim_idle_ms = 5\n",
        ),
        4,
        Some("config.lease_ms"),
        "`claim_idle_ms` is another name for it",
    );
}

/// Each step's `line` (what a timeline and an error cite) is the line of its `[[step]]` header,
/// in every committed scenario and in the base one.
#[test]
fn each_step_is_on_the_line_of_its_header() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<(String, String)> = vec![("base.toml".into(), BASE.to_string())];
    for entry in std::fs::read_dir(&dir).expect("scenarios/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).expect("readable");
            files.push((path.display().to_string(), text));
        }
    }
    assert!(files.len() > 10, "{} scenario files", files.len());
    for (file, text) in files {
        let headers: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == "[[step]]")
            .map(|(i, _)| i + 1)
            .collect();
        let script = parse(&text, &file).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<usize> = script.steps.iter().map(|s| s.line).collect();
        assert_eq!(lines, headers, "{file}");
    }
}
