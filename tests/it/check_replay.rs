//! Every counterexample `check` finds — for every mutant and `redis-streams` on its default
//! bounds, and the lassos of `--renews unbounded --fairness none` — becomes a scenario that
//! replays through the scenario executor (pure broker) to the same violation, every step
//! giving the result the model saw. A lasso's loop runs several passes and returns to where it
//! started. Malformed loops are one-line errors.

use leasehold_model::check::path::{self, Step as Told};
use leasehold_model::check::{run, Budgets, CheckConfig, Fairness, LeaseModel, Options, Renews};
use leasehold_model::{Invariant, Variant};
use leasehold_sim::counterexample::replay;
use leasehold_sim::parse;

#[test]
fn every_counterexample_replays_to_the_same_violation() {
    let mut replayed = 0;
    for &variant in Variant::ALL {
        let Some(expected) = variant.expected_violation() else {
            continue;
        };
        let config = CheckConfig::tailored_for(variant);
        let report = run(&config, &Options::default(), None);
        assert!(report.violated().contains(&expected), "{variant}");
        let model = LeaseModel::new(config);
        assert_eq!(report.counterexamples.len(), report.violated().len());
        for cx in &report.counterexamples {
            let (text, replay) = replay(&model, cx).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                replay.matched,
                "{variant} {}: {:?}\n{text}\n{}",
                cx.invariant,
                replay.mismatches,
                replay.timeline.join("\n")
            );
            assert!(
                replay.violated(cx.invariant),
                "{variant}: {:?}",
                replay.violations
            );
            if cx.loop_start.is_none() && cx.invariant != Invariant::I6 {
                // The broker is sent what the model delivered, each request once: the
                // runtime's own nack after a failed settle is not written out a second time.
                let states = path::replay(&model, &cx.actions);
                let told = path::steps(&model, &cx.actions, &states);
                let delivered = told
                    .iter()
                    .filter(|step| matches!(step, Told::Deliver { .. }))
                    .count();
                let landed = replay
                    .trace
                    .requests
                    .iter()
                    .filter(|r| r.landed_line.is_some())
                    .count();
                assert_eq!(
                    landed,
                    delivered,
                    "{variant} {}:\n{text}\n{}",
                    cx.invariant,
                    replay.timeline.join("\n")
                );
            }
            replayed += 1;
        }
    }
    assert!(replayed >= 13, "{replayed}");
}

fn unbounded(events: u32, workers: usize, fairness: Fairness) -> CheckConfig {
    let mut config = CheckConfig::tailored_for(Variant::Fenced);
    config.event_count = events;
    config.worker_count = workers;
    config.budgets = Budgets {
        crashes: 1,
        ..Budgets::default()
    };
    config.renews = Renews::Unbounded;
    config.fairness = fairness;
    config
}

#[test]
#[ignore = "slow: liveness searches at two and three workers and events; .ci/run runs it (--include-ignored)"]
fn lassos_replay_as_loops_that_repeat_without_settling() {
    for (events, workers) in [(2, 2), (2, 3), (3, 2)] {
        let config = unbounded(events, workers, Fairness::None);
        let report = run(&config, &Options::default(), None);
        let cx = report.counterexample(Invariant::I6).expect("a lasso");
        assert!(cx.loop_start.is_some());
        let model = LeaseModel::new(config.clone());
        let (text, replay) = replay(&model, cx).unwrap_or_else(|e| panic!("{e}"));
        assert!(replay.matched, "{config}: {:?}\n{text}", replay.mismatches);
        let lasso = replay
            .violations
            .iter()
            .find(|v| v.id == "I6")
            .expect("I6 reported");
        assert!(
            lasso.detail.contains("can repeat forever"),
            "{}",
            lasso.detail
        );
        assert!(text.contains("repeat = true"), "{text}");
        assert!(text.contains("loop_passes = 3"), "{text}");
        // Each pass renews: three renew lines in the timeline.
        let renews = replay
            .timeline
            .iter()
            .filter(|l| l.contains("RENEW"))
            .count();
        assert_eq!(renews, 3, "{}", replay.timeline.join("\n"));
    }
}

/// renew-revives' fair cycle under weak fairness replays with its timing: every step of the
/// loop runs once per pass (three passes), each with the result the model saw, and the replay
/// returns to the same state each pass. (With the broker's clock able to reach a deadline,
/// expiry in the counterexample is lazy: the loop keeps the lease alive by renewing it.)
#[test]
fn a_fair_lasso_replays_each_loop_step_once_per_pass() {
    let mut config = CheckConfig::tailored_for(Variant::RenewRevives);
    config.worker_count = 1;
    config.renews = Renews::Unbounded;
    config.fairness = Fairness::Weak;
    let report = run(&config, &Options::default(), None);
    let cx = report.counterexample(Invariant::I6).expect("a fair lasso");
    let model = LeaseModel::new(config.clone());
    let (text, replay) = replay(&model, cx).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        replay.matched,
        "{:?}\n{text}\n{}",
        replay.mismatches,
        replay.timeline.join("\n")
    );
    // From the file, independently of the replay: renews before the loop and in it.
    let scenario: leasehold_sim::scenario::Scenario = toml::from_str(&text).unwrap();
    let renews_in = |repeat: bool| {
        scenario
            .steps
            .iter()
            .filter(|s| s.op == "renew" && s.repeat == repeat)
            .count()
    };
    let (prefix, looped) = (renews_in(false), renews_in(true));
    assert!(looped > 0, "{text}");
    let renews = replay
        .timeline
        .iter()
        .filter(|l| l.contains("RENEW"))
        .count();
    assert_eq!(
        renews,
        prefix + 3 * looped,
        "{}",
        replay.timeline.join("\n")
    );
}

/// A file whose marked steps do not form a cycle does not pass as a lasso: planting an ack in
/// the loop settles the event.
#[test]
fn a_loop_that_makes_progress_is_not_a_lasso() {
    let text = r#"
name = "not a lasso"
variant = "fenced"
[config]
groups = ["g"]
events = 2
workers = ["A"]
lease_ms = 30000
max_attempts = 2
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
repeat = true
[expect]
violated = "I6"
"#;
    let script = parse::parse(text, "t.toml").expect("parses");
    let replay = leasehold_sim::script::run(
        &script,
        leasehold_model::Broker::new(script.setup.broker_config()),
    );
    assert!(!replay.matched);
    assert!(
        replay
            .mismatches
            .iter()
            .any(|m| m.contains("do not form a cycle") || m.contains("stale_lease")),
        "{:?}",
        replay.mismatches
    );
    assert!(!replay.violated(Invariant::I6));
}

#[test]
fn malformed_loops_are_one_line_errors_with_a_location() {
    let head = r#"
name = "x"
variant = "fenced"
[config]
groups = ["g"]
events = 1
workers = ["A"]
lease_ms = 30000
max_attempts = 2
"#;
    let cases = [
        (
            "[[step]]\nat_ms = 0\nworker = \"A\"\nop = \"fetch\"\nbind = \"L1\"\nrepeat = true\n[[step]]\nat_ms = 1\nworker = \"A\"\nop = \"renew\"\nlease = \"L1\"\n",
            "must be the last ones",
        ),
        (
            "[[step]]\nat_ms = 0\nworker = \"A\"\nop = \"fetch\"\n[expect]\nloop_passes = 3\n",
            "no step is marked",
        ),
        (
            "[[step]]\nat_ms = 0\nworker = \"A\"\nop = \"fetch\"\nrepeat = true\n[expect]\nloop_passes = 1\n",
            "loop_passes = 1",
        ),
        (
            "[[step]]\nat_ms = 0\nop = \"drain\"\nrepeat = true\n",
            "cannot include `drain`",
        ),
    ];
    for (steps, wanted) in cases {
        let text = format!("{head}{steps}");
        let error = parse::parse(&text, "loop.toml")
            .expect_err("rejected")
            .to_string();
        assert!(error.contains(wanted), "{error}");
        assert!(error.starts_with("loop.toml:"), "{error}");
        assert_eq!(error.lines().count(), 1, "{error}");
    }
}
