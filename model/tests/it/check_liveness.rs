//! I6: the ranking function is an assertion that fails on a model with a cycle; with unbounded
//! renews the cycle search reports a lasso without fairness, proves I6 under weak fairness,
//! and still finds a fair cycle where one exists.

use leasehold_model::check::{
    run, Budgets, CheckConfig, Counterexample, Fairness, LeaseModel, Method, Options, Outcome,
    Renews, Verdict,
};
use leasehold_model::{AckPolicy, Invariant, Variant};

fn config(variant: Variant, events: u32, workers: usize, renews: Renews) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: workers,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets: Budgets {
            crashes: 1,
            renews: 1,
            ..Budgets::default()
        },
        renews,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    }
}

fn with(method: Method) -> Options {
    // The cycle search explores every state and every interleaving: the ranking proof
    // compared with it does too.
    Options {
        method,
        symmetry: false,
        partial_order: false,
        subsumption: false,
        late_duplicates: false,
        ..Options::default()
    }
}

#[test]
fn the_ranking_function_decreases_on_every_transition_with_finite_budgets() {
    let report = run(
        &config(Variant::Fenced, 2, 2, Renews::Budget),
        &with(Method::Ranking),
        None,
    );
    assert_eq!(report.liveness.rank_failure, None);
    assert_eq!(report.verdict(Invariant::I6), Some(Verdict::Holds));
    assert_eq!(report.outcome, Outcome::Holds);
}

/// The assertion is real: on a model whose renew loop is a cycle, the search finds a
/// transition that does not decrease the rank, and I6 is then unproven (never "holds").
#[test]
fn the_ranking_assertion_fails_on_a_model_with_a_cycle() {
    let report = run(
        &config(Variant::Fenced, 1, 1, Renews::Unbounded),
        &with(Method::Ranking),
        None,
    );
    let failure = report.liveness.rank_failure.as_deref().expect("it fails");
    assert!(failure.contains("Renew"), "{failure}");
    assert_eq!(report.verdict(Invariant::I6), Some(Verdict::Unproven));
    assert_eq!(report.outcome, Outcome::Bounded);
}

/// The canonical states along `cx`, as the search saw them.
fn canonical_path(model: &LeaseModel, cx: &Counterexample) -> Vec<leasehold_model::check::State> {
    let mut states = vec![model.init_state(true)];
    for &action in &cx.actions {
        let next = model.successor(states.last().expect("non-empty"), action).0;
        states.push(next);
    }
    states
}

/// Without fairness, at each (events, workers) size: I6 breaks on the renew loop, a lasso
/// whose loop closes on its start.
fn renew_loop_is_a_lasso_without_fairness(sizes: &[(u32, usize)]) {
    for &(events, workers) in sizes {
        let mut config = config(Variant::Fenced, events, workers, Renews::Unbounded);
        config.fairness = Fairness::None;
        let report = run(&config, &Options::default(), None);
        assert_eq!(
            report.verdict(Invariant::I6),
            Some(Verdict::Violated),
            "{config}"
        );
        assert!(report.liveness.fair_cycles > 0);
        let cx = report.counterexample(Invariant::I6).expect("a lasso");
        let start = cx.loop_start.expect("a loop");
        assert!(start < cx.len());
        // The shortest prefix: one fetch, then the loop: renew, deliver.
        assert_eq!((start, cx.len()), (1, 3), "{config}: {cx:?}");
        let model = LeaseModel::new(config.clone());
        let states = canonical_path(&model, cx);
        assert_eq!(states[start], states[cx.len()], "{config}: the loop closes");
        assert!(!LeaseModel::settled(&states[start]));
    }
}

/// With weak fairness, at each (events, workers) size: I6 holds with unbounded renews.
fn weak_fairness_proves_i6(sizes: &[(u32, usize)]) {
    for &(events, workers) in sizes {
        let config = config(Variant::Fenced, events, workers, Renews::Unbounded);
        let report = run(&config, &Options::default(), None);
        assert_eq!(report.outcome, Outcome::Holds, "{config}");
        assert_eq!(report.verdict(Invariant::I6), Some(Verdict::Holds));
        // There are cycles, and every one of them starves a lease's expiry.
        assert!(report.liveness.cycles > 0);
        assert_eq!(report.liveness.fair_cycles, 0);
        assert_eq!(report.liveness.method, "cycles");
    }
}

#[test]
fn without_fairness_the_renew_loop_is_a_lasso_that_returns_to_its_start() {
    renew_loop_is_a_lasso_without_fairness(&[(1, 1), (2, 2)]);
}

#[test]
#[ignore = "slow (seconds in a debug build): the renew-loop lasso at three workers and at \
            three events; .ci/run runs it (--include-ignored)"]
fn without_fairness_the_renew_loop_is_a_lasso_at_three_workers_and_at_three_events() {
    renew_loop_is_a_lasso_without_fairness(&[(2, 3), (3, 2)]);
}

#[test]
fn weak_fairness_proves_i6_with_unbounded_renews() {
    weak_fairness_proves_i6(&[(1, 1), (2, 2)]);
}

#[test]
#[ignore = "slow (seconds in a debug build): I6 under weak fairness at three workers and at \
            three events; .ci/run runs it (--include-ignored)"]
fn weak_fairness_proves_i6_at_three_workers_and_at_three_events() {
    weak_fairness_proves_i6(&[(2, 3), (3, 2)]);
}

/// renew-revives with unbounded renews: a holder whose lease expires renews it back to
/// life, forever. Every group enabled throughout that cycle is taken in it (the expiry too),
/// so it is fair: weak fairness does not hide it.
#[test]
fn weak_fairness_still_reports_a_fair_cycle() {
    let config = config(Variant::RenewRevives, 1, 1, Renews::Unbounded);
    let report = run(&config, &Options::default(), None);
    assert_eq!(report.verdict(Invariant::I6), Some(Verdict::Violated));
    let cx = report.counterexample(Invariant::I6).expect("a lasso");
    let start = cx.loop_start.expect("a loop");
    let model = LeaseModel::new(config.clone());
    let states = canonical_path(&model, cx);
    assert_eq!(states[start], states[cx.len()]);
    let expires = cx.actions[start..]
        .iter()
        .any(|a| matches!(a, leasehold_model::check::Action::Expire { .. }));
    assert!(expires, "the fair loop takes the expiry: {cx:?}");
}

#[test]
fn a_deadlock_is_still_found_by_the_cycle_search() {
    let mut config = CheckConfig::tailored_for(Variant::StuckLease);
    config.renews = Renews::Unbounded;
    let report = run(&config, &Options::default(), None);
    let cx = report.counterexample(Invariant::I6).expect("found");
    assert_eq!(cx.loop_start, None);
    assert_eq!(cx.len(), 3);
}

#[test]
fn fairness_and_method_choose_the_argument_named_in_the_report() {
    let finite = run(
        &config(Variant::Fenced, 1, 2, Renews::Budget),
        &Options::default(),
        None,
    );
    assert_eq!(finite.liveness.method, "ranking");
    assert!(finite.liveness.assumption().contains("finite budgets"));
    let cyclic = run(
        &config(Variant::Fenced, 1, 2, Renews::Unbounded),
        &Options::default(),
        None,
    );
    assert!(cyclic.liveness.assumption().contains("weak fairness"));
    // The cycle search on a finite model finds no cycle and agrees with the ranking proof.
    let graph = run(
        &config(Variant::Fenced, 2, 2, Renews::Budget),
        &with(Method::Cycles),
        None,
    );
    let ranked = run(
        &config(Variant::Fenced, 2, 2, Renews::Budget),
        &with(Method::Ranking),
        None,
    );
    assert_eq!(graph.liveness.cycles, 0);
    assert_eq!(graph.counts.unique, ranked.counts.unique);
    assert_eq!(graph.properties, ranked.properties);
}
