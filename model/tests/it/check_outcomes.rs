//! `--outcomes all`: the checker also explores the handler's own verdicts. A reject
//! dead-letters an event before its attempts run out, and a `manual` handler's explicit ack
//! settles one — neither is reachable with the plain outcomes (success or an error), and
//! `fenced` still holds with them.

use leasehold_model::check::model::Actions;
use leasehold_model::check::{
    run, Budgets, CheckConfig, LeaseModel, Options, Outcomes, State, Verdict,
};
use leasehold_model::{AckPolicy, Record, Variant};

/// Every state reachable in `config` (small: no faults), breadth-first.
fn reachable(config: &CheckConfig) -> Vec<State> {
    let model = LeaseModel::new(config.clone()).beyond_first_violation();
    let mut states = vec![model.init_state(true)];
    let mut seen = std::collections::BTreeSet::new();
    seen.insert(format!("{:?}", states[0]));
    let mut actions = Actions::new();
    let mut index = 0;
    while index < states.len() {
        let state = states[index].clone();
        index += 1;
        model.actions(&state, &mut actions);
        for &action in actions.iter() {
            let next = model.successor(&state, action).0;
            if seen.insert(format!("{next:?}")) {
                states.push(next);
            }
        }
        assert!(states.len() < 200_000, "a small configuration");
    }
    states
}

fn config(policy: AckPolicy, outcomes: Outcomes) -> CheckConfig {
    let mut config = CheckConfig::tailored_for(Variant::Fenced);
    config.event_count = 1;
    config.worker_count = 1;
    config.max_attempts = 3;
    config.policy = policy;
    config.budgets = Budgets::default();
    config.outcomes = outcomes;
    config
}

fn any_record(states: &[State], wanted: impl Fn(&Record) -> bool) -> bool {
    states
        .iter()
        .any(|s| s.broker.record(0, 1).is_some_and(&wanted))
}

#[test]
fn a_reject_dead_letters_only_with_every_outcome() {
    let rejected = |r: &Record| matches!(r, Record::DeadLettered { reason } if reason.as_str() == "unprocessable");
    let plain = reachable(&config(AckPolicy::NackOnError, Outcomes::Plain));
    assert!(!any_record(&plain, rejected));
    assert!(any_record(&plain, |r| matches!(
        r,
        Record::DeadLettered { .. }
    )));
    let all = reachable(&config(AckPolicy::NackOnError, Outcomes::All));
    assert!(any_record(&all, rejected));
    assert!(all.len() > plain.len(), "{} > {}", all.len(), plain.len());
}

#[test]
fn a_manual_handler_acks_only_with_every_outcome() {
    let acked = |r: &Record| matches!(r, Record::Acked);
    let plain = reachable(&config(AckPolicy::Manual, Outcomes::Plain));
    assert!(!any_record(&plain, acked));
    let all = reachable(&config(AckPolicy::Manual, Outcomes::All));
    assert!(any_record(&all, acked));
}

#[test]
fn fenced_holds_with_every_outcome_and_the_mutants_still_break() {
    for &variant in Variant::ALL {
        let mut config = CheckConfig::tailored_for(variant);
        if variant.expected_violation().is_none() {
            // Smaller than the default proof (which takes minutes with every outcome).
            config.event_count = 2;
            config.worker_count = 2;
        }
        config.outcomes = Outcomes::All;
        let report = run(&config, &Options::default(), None);
        match variant.expected_violation() {
            None => assert!(report.violated().is_empty(), "{config}"),
            Some(expected) => assert!(report.violated().contains(&expected), "{config}"),
        }
        assert!(
            report
                .properties
                .iter()
                .all(|p| p.verdict != Verdict::Bounded),
            "{config}"
        );
        assert!(config.to_string().contains(" --outcomes all"), "{config}");
    }
}

/// `dlq-drop` loses a record when it dead-letters it: with three attempts, the plain outcomes
/// need three deliveries to get there, a reject one.
#[test]
fn a_reject_makes_the_dead_letter_counterexample_shorter() {
    let shortest = |outcomes| {
        let mut config = CheckConfig::tailored_for(Variant::DlqDrop);
        config.max_attempts = 3;
        config.outcomes = outcomes;
        let report = run(&config, &Options::default(), None);
        let cx = report
            .counterexample(leasehold_model::Invariant::I3)
            .expect("I3 violated");
        cx.len()
    };
    let (plain, all) = (shortest(Outcomes::Plain), shortest(Outcomes::All));
    assert_eq!(all, 3, "fetch, handle (reject), deliver");
    assert!(plain > all, "{plain} > {all}");
}
