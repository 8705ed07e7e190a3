//! The queue's test suite: every front-door call catches the planted bug of [`acks_by_id`]
//! (each `#[should_panic]` test checks the panic names the verdict and the reproducing
//! command) and passes on [`fixed`] — the model checker too, exploring the queue itself
//! ([`FixedQueue`], [`AcksByIdQueue`]). The tests that run a failure's printed command run
//! it as is.

mod conformance;

use leasehold::model::check::Verdict;
use leasehold::{CheckConfig, Invariant, Setup, Variant};
use leasehold_example_queue::{acks_by_id, fixed, AcksByIdQueue, FixedQueue, ACKS_BY_ID, FIXED};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "front_door/hosted_cli.rs"]
mod hosted_cli;

#[path = "front_door/shrink_cli.rs"]
mod shrink_cli;

/// How the commands a failure prints start: this crate's own build of the command line.
const PROGRAM: &str = "cargo run -q -p leasehold-example-queue --";

/// The committed scenario of a stale ack (the t0–t5 story of docs/timelines.md), from the
/// workspace.
fn stale_ack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/t0-t5-stale-ack.toml")
}

fn out(test: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../target/leasehold/{test}"))
}

/// A campaign of the reference protocol with every fault on: crashes, pauses, expiries,
/// redeliveries, late and duplicated acks.
fn campaign(test: &str) -> leasehold::CampaignRun {
    let template = leasehold::defaults::sim_template(Variant::Fenced).expect("the defaults");
    leasehold::campaign(template)
        .seeds(0..40)
        .out(out(test))
        .reproduce_with(PROGRAM)
}

#[test]
fn campaign_passes_on_the_fixed_queue() {
    let found = campaign("campaign-fixed")
        .backend(fixed())
        .run()
        .expect("runs");
    found.assert_clean();
    assert_eq!(found.summary.seeds_run, 40);
}

#[test]
#[should_panic(expected = "reproduce: cargo run -q -p leasehold-example-queue -- replay")]
fn campaign_catches_the_queue_that_acks_by_event_id() {
    campaign("campaign-buggy")
        .backend(acks_by_id())
        .run()
        .expect("runs")
        .assert_clean();
}

/// The failure says what the oracle saw as its timeline says it: `E3 of g1`, the timeline's
/// lease names.
#[test]
fn a_failing_seed_names_events_as_its_timeline_does() {
    let found = campaign("campaign-buggy-named")
        .backend(acks_by_id())
        .run()
        .expect("runs");
    let failure = found.failure.expect("the buggy queue fails a seed");
    let first = &failure.violations[0];
    assert!(first.starts_with(failure.invariant.id()), "{first}");
    assert!(!first.contains("of group"), "{first}");
    // Every event and lease it names appears in the timeline.
    let named = first.split(|c: char| !c.is_ascii_alphanumeric());
    let names: Vec<&str> = named
        .filter(|w| w.len() > 1 && (w.starts_with('E') || w.starts_with('L')))
        .filter(|w| w[1..].bytes().all(|b| b.is_ascii_digit()))
        .collect();
    assert!(!names.is_empty(), "{first}");
    for name in names {
        assert!(
            failure.timeline.contains(&format!(" {name} ")),
            "{name} of {first} is not in the timeline"
        );
    }
}

#[test]
fn replay_passes_on_the_fixed_queue() {
    leasehold::replay(stale_ack(), &fixed())
        .expect("replays")
        .assert_clean()
        .assert_matches();
}

#[test]
#[should_panic(expected = "VIOLATED")]
fn replay_catches_the_queue_that_acks_by_event_id() {
    leasehold::replay(stale_ack(), &acks_by_id())
        .expect("replays")
        .assert_clean();
}

#[test]
fn the_timelines_of_both_queues_are_snapshots() {
    let fixed = leasehold::replay(stale_ack(), &fixed()).expect("replays");
    insta::assert_snapshot!("stale_ack_fixed", fixed.timeline());
    let buggy = leasehold::replay(stale_ack(), &acks_by_id()).expect("replays");
    insta::assert_snapshot!("stale_ack_acks_by_id", buggy.timeline());
}

/// A small bound of the reference protocol (what the fixed queue implements) proves.
#[test]
fn check_proves_the_fixed_design() {
    let config = CheckConfig {
        event_count: 1,
        worker_count: 2,
        ..CheckConfig::tailored_for(Variant::Fenced)
    };
    leasehold::check(config)
        .out(out("check-fixed"))
        .run()
        .expect("checks")
        .assert_holds();
}

/// The design of acking by event id is leasehold's `unfenced-settle` mutant: the model checker
/// finds its shortest counterexample, and that schedule, run on the queue as the reference
/// protocol, catches the queue's bug (and passes on the fixed queue).
#[test]
fn check_finds_the_schedule_that_catches_the_queue() {
    let checked = leasehold::check(CheckConfig::tailored_for(Variant::UnfencedSettle))
        .reproduce_with(PROGRAM)
        .out(out("check-buggy"))
        .run()
        .expect("checks");
    let found = checked.assert_violates(Invariant::I1);
    let failure = checked.failure(found).to_string();
    assert!(
        failure.contains("check --variant unfenced-settle"),
        "{failure}"
    );
    let text = std::fs::read_to_string(&found.scenario).expect("written");
    let as_fenced = found.scenario.with_extension("fenced.toml");
    std::fs::write(
        &as_fenced,
        text.replace("variant = \"unfenced-settle\"", "variant = \"fenced\""),
    )
    .expect("write");
    let buggy = leasehold::replay(&as_fenced, &acks_by_id()).expect("replays");
    assert!(
        buggy
            .violations
            .iter()
            .any(|v| v.contains("I1 stale-never-counts")),
        "{buggy:?}"
    );
    leasehold::replay(&as_fenced, &fixed())
        .expect("replays")
        .assert_clean();
}

#[test]
#[should_panic(expected = "-- check --variant unfenced-settle")]
fn check_assert_holds_panics_on_the_design_that_acks_by_event_id() {
    leasehold::check(CheckConfig::tailored_for(Variant::UnfencedSettle))
        .reproduce_with(PROGRAM)
        .out(out("check-panics"))
        .run()
        .expect("checks")
        .assert_holds();
}

/// The command a failing campaign prints, run as is (its `cargo run -q -p … --` prefix is this
/// crate's binary): it replays the saved seed on the buggy queue and shows the violation.
#[test]
fn the_printed_command_reproduces_the_failure() {
    let found = campaign("campaign-command")
        .backend(acks_by_id())
        .run()
        .expect("runs");
    let failure = found.failure.as_ref().expect("the bug is caught");
    let message = found.failure(failure).to_string();
    let command = message
        .lines()
        .find_map(|line| line.strip_prefix("reproduce: "))
        .expect("a reproduce line");
    let args = command
        .strip_prefix(PROGRAM)
        .expect("our program")
        .split_whitespace();
    let output = Command::new(env!("CARGO_BIN_EXE_leasehold-example-queue"))
        .args(args)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("{} violated", failure.invariant)),
        "{command}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "the file's [expect] is met");
}

/// A seeded template of one's own works as well as the defaults.
#[test]
fn a_template_of_ones_own() {
    let template = Setup::default_for(Variant::Fenced);
    leasehold::campaign(template)
        .seeds(0..5)
        .backend(fixed())
        .out(out("own-template"))
        .run()
        .expect("runs")
        .assert_clean();
}

/// Events 2, workers 2, max attempts 2, with the reference protocol's default faults.
fn small() -> CheckConfig {
    CheckConfig {
        event_count: 2,
        worker_count: 2,
        max_attempts: 2,
        ..CheckConfig::tailored_for(Variant::Fenced)
    }
}

/// The model checker explores the queue itself (not the reference broker): every safety
/// invariant and I6 hold, and every `sometimes` property is reached, so the proof is not
/// vacuous.
fn assert_proves(config: CheckConfig, test: &str) {
    let checked = leasehold::check(config)
        .broker::<FixedQueue>(FIXED)
        .reproduce_with(PROGRAM)
        .out(out(test))
        .run()
        .expect("checks");
    checked.assert_holds();
    for invariant in &Invariant::ALL[..6] {
        assert_eq!(
            checked.report.verdict(*invariant),
            Some(Verdict::Holds),
            "{invariant}"
        );
    }
    assert_eq!(checked.backend.as_deref(), Some("in-memory"));
}

/// The queue implements the reference protocol with data structures of its own: the checker
/// finds exactly as many distinct states in it as in the reference broker.
#[test]
fn check_proves_the_fixed_queue_in_a_small_configuration() {
    assert_proves(small(), "check-queue-small");
    let queue = leasehold::check(small())
        .broker::<FixedQueue>(FIXED)
        .reproduce_with(PROGRAM)
        .out(out("check-queue-small"))
        .run()
        .expect("checks");
    let reference = leasehold::check(small())
        .out(out("check-reference-small"))
        .run()
        .expect("checks");
    assert_eq!(queue.report.counts, reference.report.counts);
}

/// The deep one-group configuration (`leasehold check --tailored`).
#[test]
#[ignore = "slow (about 3.5 s in a debug build): the deep one-group proof of the queue; \
            .ci/run runs it (--include-ignored)"]
fn check_proves_the_fixed_queue_in_the_default_configuration() {
    assert_proves(
        CheckConfig::tailored_for(Variant::Fenced),
        "check-queue-default",
    );
}

/// The covering configuration (what `leasehold check` runs with no flag) with one worker and
/// neither crash nor duplicate, for time: two groups, the clock, every handler outcome, a
/// renew. The queue exchanges groups (`swap_groups`), so the checker explores fewer states in
/// it than without symmetry, with the same verdicts.
#[test]
fn check_orders_the_queues_groups() {
    use leasehold::model::check::{run_on, Options};
    let covering = CheckConfig::covering_for(Variant::Fenced);
    let config = CheckConfig {
        worker_count: 1,
        budgets: leasehold::model::check::Budgets {
            crashes: 0,
            dups: 0,
            ..covering.budgets
        },
        ..covering
    };
    assert_proves(config.clone(), "check-queue-groups");
    let unordered = Options {
        symmetry: false,
        ..Options::default()
    };
    let queue = run_on::<FixedQueue>(&config, &Options::default(), None);
    let plain = run_on::<FixedQueue>(&config, &unordered, None);
    assert!(
        queue.counts.unique < plain.counts.unique,
        "{} against {}",
        queue.counts.unique,
        plain.counts.unique
    );
    assert_eq!(queue.properties, plain.properties);
}

/// The model checker finds the planted bug in the queue itself, in a handful of steps, and
/// the scenario it writes replays on that queue to the same violation.
#[test]
fn check_finds_the_bug_in_the_queue_that_acks_by_event_id() {
    let checked = leasehold::check(small())
        .broker::<AcksByIdQueue>(ACKS_BY_ID)
        .reproduce_with(PROGRAM)
        .out(out("check-queue-buggy"))
        .run()
        .expect("checks");
    let found = checked.assert_violates(Invariant::I1);
    assert!(
        found.steps <= 6,
        "{} steps:\n{}",
        found.steps,
        found.timeline
    );
    assert!(found.replays, "{found:?}");
    let text = std::fs::read_to_string(&found.scenario).expect("written");
    assert!(text.contains("variant = \"fenced\""), "{text}");
    let replayed = leasehold::replay(&found.scenario, &acks_by_id()).expect("replays");
    assert!(
        replayed
            .violations
            .iter()
            .any(|v| v.contains("I1 stale-never-counts")),
        "{replayed:?}"
    );
    replayed.assert_matches();
    // The same schedule on the fixed queue: the stale settle is refused.
    let fixed = leasehold::replay(&found.scenario, &fixed()).expect("replays");
    assert!(fixed.violations.is_empty(), "{fixed:?}");
}

/// The command a failing check of the queue prints checks the queue again, through this
/// crate's command line, as is.
#[test]
fn the_printed_command_of_a_check_checks_the_queue() {
    let checked = leasehold::check(small())
        .broker::<AcksByIdQueue>(ACKS_BY_ID)
        .reproduce_with(PROGRAM)
        .out(out("check-queue-command"))
        .run()
        .expect("checks");
    let found = checked.assert_violates(Invariant::I1);
    let message = checked.failure(found).to_string();
    assert!(
        message.contains("check of fenced on acks-by-id: VIOLATED I1"),
        "{message}"
    );
    let command = message
        .lines()
        .find_map(|line| line.strip_prefix("reproduce: "))
        .expect("a reproduce line");
    assert!(command.contains(" check --variant fenced "), "{command}");
    assert!(command.ends_with(" --backend acks-by-id"), "{command}");
    let args = command
        .strip_prefix(PROGRAM)
        .expect("our program")
        .split_whitespace();
    // It writes its scenario under ./scenarios/found: run it in the test's own folder.
    let folder = out("check-queue-command");
    std::fs::create_dir_all(&folder).expect("a folder");
    let output = Command::new(env!("CARGO_BIN_EXE_leasehold-example-queue"))
        .args(args)
        .current_dir(&folder)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let seen = format!(
        "{command}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let i1 = stdout
        .lines()
        .find(|line| line.contains("I1 stale-never-counts"))
        .unwrap_or_else(|| panic!("{seen}"));
    assert!(i1.trim_end().ends_with("violated"), "{seen}");
    assert!(
        stdout.contains(&format!(
            "I1 stale-never-counts ({} model steps)",
            found.steps
        )),
        "the same shortest counterexample: {seen}"
    );
    assert_eq!(output.status.code(), Some(1), "an invariant is violated");
}

/// The model checker on the registered values the example's command line holds: the same
/// exploration, counts and verdicts as on the queue types, the bug found on the buggy one and
/// replayed there.
#[test]
fn check_on_the_registered_queues() {
    use leasehold_example_queue::{checked_acks_by_id, checked_fixed};
    let on_value = leasehold::check(small())
        .on(&checked_acks_by_id())
        .reproduce_with(PROGRAM)
        .out(out("check-on-value-buggy"))
        .run()
        .expect("checks");
    let found = on_value.assert_violates(Invariant::I1);
    assert!(found.steps <= 6 && found.replays, "{found:?}");
    assert_eq!(on_value.backend.as_deref(), Some(ACKS_BY_ID));
    let on_type = leasehold::check(small())
        .broker::<AcksByIdQueue>(ACKS_BY_ID)
        .out(out("check-on-type-buggy"))
        .run()
        .expect("checks");
    assert_eq!(on_value.report.counts, on_type.report.counts);
    let fixed = leasehold::check(small())
        .on(&checked_fixed())
        .out(out("check-on-value-fixed"))
        .run()
        .expect("checks");
    fixed.assert_holds();
    assert!(
        fixed.command.ends_with(&format!(" --backend {FIXED}")),
        "{}",
        fixed.command
    );
}
