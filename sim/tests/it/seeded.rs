//! The seeded simulator checks itself: determinism (same seed, same trace; any thread count,
//! same summary), failures that replay from their saved file, shrinking that keeps the failure,
//! a clean reference protocol, and every planted bug caught.

use leasehold_model::{AckPolicy, Variant};
use leasehold_sim::seeded::campaign::Campaign;
use leasehold_sim::seeded::seeded_file::{
    check_expect, parse_toml, run_setup, scenario_of, setup_from_scenario, to_toml,
};
use leasehold_sim::seeded::shrink::{breaks, shrink, size, smaller};
use leasehold_sim::seeded::{BackendKind, FaultPlan, Ratio, Setup, Workload};

const LEASE_MS: u64 = 30_000;

fn template(variant: Variant) -> Setup {
    Setup {
        seed: 0,
        variant,
        group_names: vec!["g0".into(), "g1".into()],
        worker_names: vec!["A".into(), "B".into(), "C".into()],
        events: 20,
        lease_ms: LEASE_MS,
        max_attempts: 3,
        policy: AckPolicy::NackOnError,
        clock_offset_ms: vec![None; 3],
        expiry: Default::default(),
        workload: Workload::for_lease(LEASE_MS),
        faults: FaultPlan::for_lease(LEASE_MS),
        draws: Default::default(),
    }
}

fn campaign(
    variant: Variant,
    seeds: std::ops::Range<u64>,
    swarm: bool,
    threads: usize,
) -> Campaign {
    Campaign {
        template: template(variant),
        swarm,
        expiry_mixed: true,
        seeds,
        shard: (1, 1),
        threads,
        backend: BackendKind::Pure,
        stop_on_failure: false,
        pinned: Default::default(),
    }
}

#[test]
fn the_same_seed_gives_the_same_trace_text_and_hash() {
    let c = campaign(Variant::Fenced, 0..1, false, 1);
    for seed in [3, 17] {
        let setup = c.setup(seed);
        let first = run_setup(&setup, &BackendKind::Pure, true);
        let second = run_setup(&setup, &BackendKind::Pure, true);
        let text = first.trace.clone().expect("kept");
        assert!(text.lines().count() > 20, "a real run, not an empty one");
        assert_eq!(first.trace, second.trace);
        assert_eq!(first.trace_hash, second.trace_hash);
        assert_eq!(first, second);
        // Recording the run changes nothing of it.
        let unkept = run_setup(&setup, &BackendKind::Pure, false);
        assert_eq!(unkept.trace_hash, first.trace_hash);
    }
    let a = run_setup(&c.setup(3), &BackendKind::Pure, false);
    let b = run_setup(&c.setup(4), &BackendKind::Pure, false);
    assert_ne!(
        a.trace_hash, b.trace_hash,
        "different seeds, different runs"
    );
    let swarm = campaign(Variant::Fenced, 0..1, true, 1).setup(17);
    let (x, y) = (
        run_setup(&swarm, &BackendKind::Pure, true),
        run_setup(&swarm, &BackendKind::Pure, true),
    );
    assert_eq!(x, y);
}

#[test]
fn one_and_two_threads_give_identical_summaries() {
    for (variant, swarm) in [(Variant::Fenced, true), (Variant::VolatileAck, false)] {
        let one = campaign(variant, 0..40, swarm, 1).run(&|_| {});
        let two = campaign(variant, 0..40, swarm, 2).run(&|_| {});
        assert_eq!(one.seeds_run, 40);
        assert_eq!(one, two, "{variant}");
    }
    // Shards partition the range: their runs add up to the whole.
    let whole = campaign(Variant::VolatileAck, 0..30, false, 1).run(&|_| {});
    let mut seeds = 0;
    let mut failed = 0;
    for k in 1..=3 {
        let mut c = campaign(Variant::VolatileAck, 0..30, false, 1);
        c.shard = (k, 3);
        let part = c.run(&|_| {});
        seeds += part.seeds_run;
        failed += part.seeds_failed;
    }
    assert_eq!((seeds, failed), (whole.seeds_run, whole.seeds_failed));
}

/// A run asked to stop at a violation of one invariant stops at the step that breaks it —
/// past violations of others — and is the full run up to there; one that never breaks it runs
/// to its end. (What the shrinker's `breaks` runs.)
#[test]
fn a_run_stops_at_the_violation_it_was_asked_for() {
    use leasehold_model::Invariant;
    use leasehold_sim::seeded::run::STOPPED_AT_FIRST_VIOLATION;
    use leasehold_sim::seeded::seeded_file::run_setup_with;
    use leasehold_sim::seeded::RunOptions;
    let c = campaign(Variant::RenewRevives, 0..60, false, 1);
    let mut past_another = 0;
    for seed in 0..60 {
        let setup = c.setup(seed);
        let full = run_setup(&setup, &BackendKind::Pure, false);
        for target in Invariant::ALL {
            let options = RunOptions {
                stop_at_violation_of: Some(target),
                ..RunOptions::default()
            };
            let stopped = run_setup_with(&setup, &BackendKind::Pure, &options);
            let broke = |o: &leasehold_sim::seeded::RunOutcome| {
                o.violations.iter().any(|v| v.invariant == target)
            };
            assert_eq!(broke(&stopped), broke(&full), "seed {seed} {target}");
            assert!(
                full.violations.starts_with(&stopped.violations),
                "seed {seed} {target}"
            );
            if broke(&full) && !matches!(target, Invariant::I6) {
                assert_eq!(
                    stopped.end, STOPPED_AT_FIRST_VIOLATION,
                    "seed {seed} {target}"
                );
                assert!(stopped.steps < full.steps, "seed {seed} {target}");
                if full.violations[0].invariant != target {
                    past_another += 1;
                }
            } else if !broke(&full) {
                assert_eq!(stopped.steps, full.steps, "seed {seed} {target}");
                assert_eq!(stopped.trace_hash, full.trace_hash, "seed {seed} {target}");
            }
        }
    }
    assert!(past_another > 0, "some seed breaks another invariant first");
}

/// The progress a campaign tells after each seed ends at its summary's counts: every seed done,
/// as many failed and inconclusive as the summary says, and never a count that goes back.
#[test]
fn the_progress_a_campaign_tells_ends_at_its_summary() {
    use leasehold_sim::seeded::Tally;
    use std::sync::Mutex;
    let mut mixed = campaign(Variant::RenewRevives, 0..60, false, 1);
    // A step bound some seeds reach before any verdict: inconclusive ones too.
    mixed.template.workload.steps_max = 400;
    mixed.pinned.steps_max = true;
    let told = Mutex::new(Vec::new());
    let summary = mixed.run(&|tally: Tally| told.lock().unwrap().push(tally));
    let told = told.into_inner().unwrap();
    assert_eq!(told.len() as u64, summary.seeds_run);
    let last = *told.last().unwrap();
    assert_eq!(last.done, summary.seeds_run);
    assert_eq!(last.failed, summary.seeds_failed);
    assert_eq!(last.inconclusive, summary.seeds_inconclusive);
    assert!(last.failed > 0 && last.inconclusive > 0, "{last:?}");
    for pair in told.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(a.done < b.done && a.failed <= b.failed && a.inconclusive <= b.inconclusive);
    }
}

#[test]
fn a_saved_failing_seed_replays_to_the_same_violation() {
    let c = campaign(Variant::VolatileAck, 0..30, false, 1);
    let summary = c.run(&|_| {});
    let first = summary.first_failure.clone().expect("volatile-ack fails");
    let (seed, violations) = (first.seed, first.violations);
    let setup = c.setup(seed);
    let invariant = violations[0].invariant;
    let text = to_toml(&scenario_of(&setup, Some(invariant.id()), None));
    assert!(text.contains(&format!("seed = {seed}")), "{text}");
    assert!(
        text.contains("[faults]") && text.contains("[workload]"),
        "{text}"
    );
    let scenario = parse_toml(&text).expect("the file we write parses");
    assert_eq!(setup_from_scenario(&scenario).unwrap(), setup);
    let original = run_setup(&setup, &BackendKind::Pure, true);
    let replayed = leasehold_sim::run_seeded(&scenario, &BackendKind::Pure).unwrap();
    assert_eq!(replayed.violations, violations);
    assert_eq!(replayed.trace, original.trace);
    assert_eq!(replayed.trace_hash, original.trace_hash);
    // The file's [expect] matches; a different expectation does not.
    assert_eq!(check_expect(&scenario, &replayed), Vec::<String>::new());
    let mut other = scenario.clone();
    other.expect.as_mut().unwrap().violated = Some("I5".to_string());
    let not_i5 = !replayed.violations.iter().any(|v| v.invariant.id() == "I5");
    assert_eq!(check_expect(&other, &replayed).len(), usize::from(not_i5));
}

#[test]
fn a_swarm_plan_is_stored_and_replays_without_the_swarm_draw() {
    let c = campaign(Variant::Fenced, 0..1, true, 1);
    let setup = c.setup(11);
    assert_ne!(
        setup.faults,
        FaultPlan::for_lease(LEASE_MS),
        "swarm drew a plan"
    );
    let scenario = parse_toml(&to_toml(&scenario_of(&setup, None, None))).unwrap();
    assert_eq!(scenario.faults.as_ref(), Some(&setup.faults));
    let direct = run_setup(&setup, &BackendKind::Pure, false);
    let replayed = leasehold_sim::run_seeded(&scenario, &BackendKind::Pure).unwrap();
    assert_eq!(direct.trace_hash, replayed.trace_hash);
}

/// Every u64 seed round-trips through a scenario file: up to 2^63 - 1 as a TOML integer, above
/// it as a string of digits; a negative seed or a string that is not digits is a located error.
#[test]
fn every_u64_seed_is_written_and_read_back() {
    let c = campaign(Variant::Fenced, 0..1, false, 1);
    for seed in [0, 7, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
        let setup = c.setup(seed);
        let text = to_toml(&scenario_of(&setup, None, None));
        let quoted = seed > i64::MAX as u64;
        let line = if quoted {
            format!("seed = \"{seed}\"")
        } else {
            format!("seed = {seed}")
        };
        assert!(text.lines().any(|l| l == line), "{seed}: {text}");
        let scenario = parse_toml(&text).unwrap();
        assert_eq!(scenario.seed, Some(seed));
        assert_eq!(setup_from_scenario(&scenario).unwrap().seed, seed);
    }
    let text = to_toml(&scenario_of(&c.setup(5), None, None));
    for (bad, said) in [
        ("-1", "not negative"),
        ("\"12a\"", "decimal digits"),
        ("\"18446744073709551616\"", "at most"),
    ] {
        let broken = text.replace("seed = 5", &format!("seed = {bad}"));
        let err = parse_toml(&broken).unwrap_err();
        assert!(err.contains(said) && err.contains("seed"), "{bad}: {err}");
    }
}

/// `name from → to`, split: one cut a shrink made.
fn cut(change: &str) -> Option<(&str, &str, &str)> {
    let (head, to) = change.split_once(" → ")?;
    let (name, from) = head.rsplit_once(' ')?;
    Some((name, from, to))
}

/// A shrink keeps the violation and the seed, ends at a setup none of whose smaller variations
/// still breaks the target (within its runs), and tells successive cuts of one quantity as one
/// change — on a 20-event finding and on a 2,000-event one cut many times.
#[test]
fn shrinking_keeps_the_violation_and_makes_the_scenario_smaller() {
    let c = campaign(Variant::VolatileAck, 0..30, false, 1);
    let first = c.run(&|_| {}).first_failure.expect("fails");
    // `sim --variant renew-revives --events 2000 --seed 3`.
    let mut large = campaign(Variant::RenewRevives, 3..4, false, 1);
    large.template = Setup::default_for(Variant::RenewRevives);
    large.template.resize(2_000, 2, 3);
    large.template.derive_bounds(true, true);
    let large = large.setup(3);
    for (setup, target) in [
        (c.setup(first.seed), first.violations[0].invariant),
        (large, leasehold_model::Invariant::I2),
    ] {
        let what = format!("{} seed {}", setup.variant, setup.seed);
        assert!(breaks(&setup, &BackendKind::Pure, target), "{what}");
        let shrunk = shrink(&setup, &BackendKind::Pure, target, 1_000);
        assert!(shrunk.runs < 1_000, "{what}: {} runs", shrunk.runs);
        assert!(!shrunk.changes.is_empty(), "{what}");
        assert!(size(&shrunk.setup) < size(&setup), "{what}");
        assert!(shrunk.setup.events < setup.events, "{what}");
        assert!(breaks(&shrunk.setup, &BackendKind::Pure, target), "{what}");
        assert_eq!(shrunk.setup.seed, setup.seed, "{what}");
        for (variation, change) in smaller(&shrunk.setup) {
            assert!(
                !breaks(&variation, &BackendKind::Pure, target),
                "{what}: the shrink stopped, yet {change} still breaks {target}"
            );
        }
        for pair in shrunk.changes.windows(2) {
            if let (Some((name, _, to)), Some((next, from, _))) = (cut(&pair[0]), cut(&pair[1])) {
                assert!(
                    !(name == next && to == from),
                    "{what}: {pair:?} told as two changes"
                );
            }
        }
    }
}

#[test]
fn fenced_under_a_swarm_of_200_seeds_breaks_nothing() {
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        let summary = campaign(variant, 0..200, true, 2).run(&|_| {});
        assert_eq!(summary.seeds_run, 200);
        assert_eq!(
            summary.failures,
            Default::default(),
            "{variant}: {summary:?}"
        );
        assert_eq!(summary.seeds_inconclusive, 0);
        assert!(summary.duplicate_runs > 0, "the faults did fire");
    }
}

#[test]
fn every_ack_policy_holds_on_fenced_under_a_swarm() {
    for policy in AckPolicy::ALL {
        let mut c = campaign(Variant::Fenced, 0..60, true, 2);
        c.template.policy = policy;
        let summary = c.run(&|_| {});
        assert_eq!(
            summary.failures,
            Default::default(),
            "{policy}: {summary:?}"
        );
    }
}

#[test]
fn ack_first_losses_are_the_policy_guarantee_not_a_failure() {
    let mut c = campaign(Variant::Fenced, 0..40, false, 1);
    c.template.policy = AckPolicy::AckFirst;
    c.template.faults.crash = Ratio::new(1, 10);
    let summary = c.run(&|_| {});
    assert_eq!(summary.failures, Default::default());
    assert!(summary.at_most_once_losses > 0, "{summary:?}");
}

#[test]
fn at_most_once_losses_are_the_acks_whose_handler_did_not_complete() {
    // No fault but handler errors. When every handler returns normally, every ack stands
    // behind a completed run: nothing is lost. When every handler fails, `ack_always` acks
    // anyway and `ack_first` acked before the run: losses, though the liveness phase's healed
    // handlers complete some runs.
    for policy in [AckPolicy::AckFirst, AckPolicy::AckAlways] {
        for (error, lost) in [(Ratio::new(0, 1), false), (Ratio::new(1, 1), true)] {
            let mut setup = template(Variant::Fenced);
            setup.policy = policy;
            setup.faults = FaultPlan::none();
            setup.faults.handler_error = error;
            setup.workload.outcome_ack = Ratio::new(0, 1);
            setup.workload.outcome_nack = Ratio::new(0, 1);
            setup.workload.outcome_reject = Ratio::new(0, 1);
            for seed in 0..5 {
                setup.seed = seed;
                let outcome = run_setup(&setup, &BackendKind::Pure, false);
                assert!(outcome.violations.is_empty(), "{policy} seed {seed}");
                assert!(outcome.records >= 40, "{policy} seed {seed}: {outcome:?}");
                let losses = outcome.at_most_once_losses;
                if lost {
                    assert!(
                        losses > outcome.records / 2 && losses <= outcome.records,
                        "{policy} seed {seed}: {losses} of {} records",
                        outcome.records
                    );
                } else {
                    assert_eq!(losses, 0, "{policy} seed {seed}: every handler returned");
                }
            }
        }
    }
}

#[test]
fn every_mutant_and_redis_streams_is_caught_by_its_expected_invariant() {
    for &variant in Variant::ALL {
        let Some(expected) = variant.expected_violation() else {
            continue;
        };
        let c = campaign(variant, 0..1, false, 1);
        let caught = (0..300).find(|&seed| breaks(&c.setup(seed), &BackendKind::Pure, expected));
        assert!(
            caught.is_some(),
            "{variant} not caught breaking {expected} in 300 seeds"
        );
    }
}

/// Every seeded finding kept under `scenarios/found/` (one shrunk failing seed per planted bug)
/// replays to the violation its `[expect]` names, and to the same trace twice.
#[test]
fn every_saved_finding_replays_to_its_expected_violation() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/found");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/found exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 13,
        "one finding per mutant and redis-streams"
    );
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = parse_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let variant = Variant::from_name(&scenario.variant).expect("a known variant");
        let wanted = scenario.expect.as_ref().and_then(|e| e.violated.clone());
        assert_eq!(
            wanted.as_deref(),
            variant.expected_violation().map(|i| i.id()),
            "{}",
            path.display()
        );
        let first = leasehold_sim::run_seeded(&scenario, &BackendKind::Pure).unwrap();
        assert_eq!(
            check_expect(&scenario, &first),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
        let again = leasehold_sim::run_seeded(&scenario, &BackendKind::Pure).unwrap();
        assert_eq!(first.trace_hash, again.trace_hash);
    }
}

/// Landings at (deadline − 1, deadline, deadline + 1) of the request's own lease, and events
/// published after time 0, in a recorded run of `setup`.
fn boundary_landings_and_publishes(setup: &Setup) -> ([u64; 3], u64) {
    use leasehold_sim::event::Event;
    let outcome = run_setup(setup, &BackendKind::Pure, true);
    let recorded = outcome.recorded.expect("recorded");
    let mut deadline_of = Vec::new();
    let (mut landings, mut published) = ([0u64; 3], 0);
    for stamped in &recorded.events {
        match &stamped.event {
            Event::Sent { request, lease, .. } => {
                let index = request.0 as usize;
                deadline_of.resize(deadline_of.len().max(index + 1), 0);
                deadline_of[index] = lease.deadline_ms;
            }
            Event::Landed {
                request,
                duplicate: false,
                ..
            } => {
                let deadline = deadline_of[request.0 as usize];
                let offset = stamped.at_ms as i64 - deadline as i64;
                if (-1..=1).contains(&offset) {
                    landings[(offset + 1) as usize] += 1;
                }
            }
            Event::Published { .. } => published += 1,
            _ => {}
        }
    }
    (landings, published)
}

/// The boundary fault aims settles and renews at their lease's deadline − 1, exactly, and + 1
/// ms, under both expiry modes; the workload publishes during the run. With both off (as in a
/// file written before they existed), nothing lands at a deadline by aim and nothing is
/// published after time 0.
#[test]
fn the_boundary_fault_lands_requests_at_the_deadline_and_the_workload_publishes() {
    use leasehold_sim::engine::Expiry;
    for expiry in [Expiry::AtDeadline, Expiry::OnFetch] {
        let mut setup = template(Variant::Fenced);
        setup.expiry = expiry;
        setup.faults = FaultPlan::none();
        setup.workload.publish = Ratio::zero();
        let (off, published_off) = boundary_landings_and_publishes(&setup);
        assert_eq!(published_off, 0, "{expiry:?}");
        setup.faults.boundary = Ratio::new(1, 2);
        setup.workload.publish = Ratio::new(1, 4);
        let (on, published_on) = boundary_landings_and_publishes(&setup);
        assert!(on.iter().all(|&n| n > 0), "{expiry:?}: {on:?}");
        assert!(on[1] > off[1], "{expiry:?}: {on:?} vs {off:?}");
        assert!(
            (1..=u64::from(setup.events)).contains(&published_on),
            "{expiry:?}: {published_on}"
        );
    }
}

/// A plan or workload written before the boundary fault and the publishes existed has them
/// off: the files under `scenarios/found/` replay as recorded.
#[test]
fn a_plan_without_the_new_fields_has_them_off() {
    let mut plan = toml::Value::try_from(FaultPlan::default()).unwrap();
    plan.as_table_mut().unwrap().remove("boundary");
    let plan: FaultPlan = plan.try_into().unwrap();
    assert!(plan.boundary.is_zero());
    assert!(!FaultPlan::default().boundary.is_zero());
    let mut workload = toml::Value::try_from(Workload::default()).unwrap();
    workload.as_table_mut().unwrap().remove("publish");
    let workload: Workload = workload.try_into().unwrap();
    assert!(workload.publish.is_zero());
    assert!(!Workload::default().publish.is_zero());
}
