//! The checker on the model: verdicts on the reference and on every mutant, minimal
//! counterexamples, symmetry reduction, vacuity, and pinned state counts.

use leasehold_model::check::{
    run, shortest_counterexamples, Budgets, CheckConfig, Fairness, Interrupt, LeaseModel, Limits,
    Options, Outcome, Renews, Verdict,
};
use leasehold_model::{AckPolicy, Invariant, Variant};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn config(variant: Variant, events: u32, workers: usize, max_attempts: u32) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: workers,
        max_attempts,
        policy: AckPolicy::NackOnError,
        budgets: Budgets::default(),
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    }
}

/// The plain fault set of the issue: one crash, nothing else.
fn plain(events: u32, workers: usize, max_attempts: u32) -> CheckConfig {
    CheckConfig {
        budgets: Budgets {
            crashes: 1,
            ..Budgets::default()
        },
        ..config(Variant::Fenced, events, workers, max_attempts)
    }
}

fn options(symmetry: bool) -> Options {
    // The pinned counts are the model's (its canonical form, with or without symmetry), not
    // the partial-order reduction's (tests/it/check_partial_order.rs) nor subsumption's
    // (tests/it/check_subsumption.rs).
    Options {
        symmetry,
        partial_order: false,
        subsumption: false,
        late_duplicates: false,
        ..Options::default()
    }
}

#[test]
#[ignore = "slow: each tailored default proof of fenced and redis-streams-fenced, full size; .ci/run runs it (--include-ignored)"]
fn fenced_holds_and_every_applicable_sometimes_property_is_reached() {
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        let config = CheckConfig::tailored_for(variant);
        assert!(
            config.budgets.lost_replies > 0,
            "the default has lost replies on"
        );
        let report = run(&config, &options(true), None);
        assert_eq!(report.outcome, Outcome::Holds, "{variant}: {report:?}");
        assert!(report.violated().is_empty());
        // Pinned: the default configuration's unique states (with symmetry).
        assert_eq!(report.counts.unique, 2_648_078, "{variant}");
        for p in &report.properties {
            let ok = [Verdict::Holds, Verdict::Reached].contains(&p.verdict);
            assert!(ok, "{variant}: {} {:?}", p.name, p.verdict);
        }
    }
}

#[test]
fn every_mutant_and_redis_streams_is_caught_with_its_expected_invariant() {
    for &variant in Variant::ALL {
        let Some(expected) = variant.expected_violation() else {
            continue;
        };
        let report = run(&CheckConfig::tailored_for(variant), &options(true), None);
        assert_eq!(report.outcome, Outcome::Violated, "{variant}");
        assert_eq!(
            report.verdict(expected),
            Some(Verdict::Violated),
            "{variant}"
        );
        let cx = report.counterexample(expected).expect("a counterexample");
        assert_eq!(cx.invariant, expected);
    }
}

/// The counterexample lengths `leasehold report` committed before the history-free state
/// (reports/VERDICTS.md): none may grow.
#[test]
fn counterexamples_are_no_longer_than_before_the_reduction() {
    let before = [
        (Variant::RedisStreams, Invariant::I1, 4),
        (Variant::UnfencedSettle, Invariant::I1, 4),
        (Variant::RenewRevives, Invariant::I2, 5),
        (Variant::LeaseIdReuse, Invariant::I1, 6),
        (Variant::MaxSeenFrontier, Invariant::I4, 4),
        (Variant::NoDeadLetter, Invariant::I5, 5),
        (Variant::VolatileAck, Invariant::I4, 4),
        (Variant::NackOnAmbiguous, Invariant::I4, 4),
        (Variant::WorkerClockExpiry, Invariant::I1, 4),
        // An expiry is two model steps since the boundary semantics: time reaches the
        // deadline, then the broker's timer fires (at its next fetch).
        (Variant::DlqDrop, Invariant::I3, 3),
        (Variant::OnlyAckFenced, Invariant::I1, 4),
        (Variant::AttemptsReset, Invariant::I5, 8),
        (Variant::StuckLease, Invariant::I6, 4),
    ];
    let mut longer = Vec::new();
    for (variant, invariant, steps) in before {
        let report = run(&CheckConfig::tailored_for(variant), &options(true), None);
        let cx = report.counterexample(invariant).expect("found");
        if cx.len() > steps {
            longer.push(format!("{variant} {invariant}: {} > {steps}", cx.len()));
        }
    }
    assert!(longer.is_empty(), "{longer:?}");
}

fn shortest_len(config: CheckConfig, invariant: Invariant) -> usize {
    let model = LeaseModel::new(config);
    let search = shortest_counterexamples(&model, &[invariant], 1_000_000);
    assert!(search.bounded.is_none());
    let cx = search.found.first().expect("a counterexample exists");
    assert_eq!(cx.invariant, invariant);
    cx.len()
}

/// unfenced-settle, one worker, no faults. A settle needs a lease (Fetch), a request (the
/// only way to send one is Handle) and its delivery (Deliver); for I1 the lease must be
/// expired or superseded when the settle lands, and superseding needs the record available
/// again, so at least one Expire. Fetch, Handle, Expire, Deliver: 4 steps, and no fewer.
#[test]
fn shortest_unfenced_counterexample_has_the_length_worked_out_by_hand() {
    let unfenced = |workers| config(Variant::UnfencedSettle, 1, workers, 2);
    assert_eq!(shortest_len(unfenced(1), Invariant::I1), 4);
    // More workers cannot shorten it (the bound above does not depend on them).
    assert_eq!(shortest_len(unfenced(2), Invariant::I1), 4);
}

/// no-dead-letter, max_attempts 1: I5 needs a second delivery, i.e. two fetches with an
/// Expire between them (a nack at attempt 1 dead-letters, the mutant only changes expiry).
/// With two workers: Fetch A, Expire, Fetch B = 3. With one worker the holder must first
/// become idle again, which without a crash budget takes Handle and the Deliver of its
/// settle: Fetch, Handle, Deliver, Expire, Fetch (in some order) = 5; with a crash budget
/// the crash makes it idle at once: Fetch, Crash, Expire, Fetch = 4.
#[test]
fn shortest_no_dead_letter_counterexample_depends_on_the_worker_count_as_reasoned() {
    let no_dead_letter = |workers| config(Variant::NoDeadLetter, 1, workers, 1);
    assert_eq!(shortest_len(no_dead_letter(2), Invariant::I5), 3);
    assert_eq!(shortest_len(no_dead_letter(1), Invariant::I5), 5);
    let crash = CheckConfig {
        budgets: Budgets {
            crashes: 1,
            ..Budgets::default()
        },
        ..no_dead_letter(1)
    };
    assert_eq!(shortest_len(crash, Invariant::I5), 4);
}

/// stuck-lease: Fetch, BrokerRestart (the lease is no longer armed), Crash (the holder is
/// idle at once, its lease stuck): no action is enabled and the event is still leased.
#[test]
fn stuck_lease_is_an_i6_deadlock_of_three_steps() {
    let report = run(
        &CheckConfig::tailored_for(Variant::StuckLease),
        &options(true),
        None,
    );
    assert_eq!(report.verdict(Invariant::I6), Some(Verdict::Violated));
    let cx = report.counterexample(Invariant::I6).expect("found");
    assert_eq!(cx.len(), 3);
    assert_eq!(cx.loop_start, None);
    for invariant in [
        Invariant::I1,
        Invariant::I2,
        Invariant::I3,
        Invariant::I4,
        Invariant::I5,
    ] {
        assert_eq!(report.verdict(invariant), Some(Verdict::Holds));
    }
}

#[test]
#[ignore = "slow: every variant with and without symmetry, at several thread counts; .ci/run runs it (--include-ignored)"]
fn symmetry_gives_the_same_verdicts_with_fewer_states_whatever_the_threads() {
    let mut lossy = plain(2, 2, 2);
    lossy.budgets.lost_replies = 1;
    for config in [
        lossy,
        CheckConfig::tailored_for(Variant::LeaseIdReuse),
        CheckConfig {
            budgets: Budgets {
                crashes: 1,
                dups: 1,
                ..Budgets::default()
            },
            ..config(Variant::UnfencedSettle, 2, 3, 2)
        },
    ] {
        let plain = run(&config, &options(false), None);
        let reduced = run(&config, &options(true), None);
        assert!(reduced.counts.unique < plain.counts.unique);
        assert_eq!(plain.properties, reduced.properties);
        let two = Options {
            limits: Limits {
                threads: 2,
                ..Limits::default()
            },
            ..options(true)
        };
        let parallel = run(&config, &two, None);
        assert_eq!(parallel.counts, reduced.counts);
        assert_eq!(parallel.properties, reduced.properties);
    }
}

#[test]
fn an_unreachable_sometimes_property_is_not_applicable_and_the_proof_holds() {
    // No lost-reply or drop budget: no worker can see an ambiguous result.
    let report = run(&plain(2, 2, 2), &options(false), None);
    assert_eq!(report.outcome, Outcome::Holds);
    let ambiguous = report
        .properties
        .iter()
        .find(|p| p.name.contains("ambiguous"))
        .expect("listed");
    assert_eq!(ambiguous.verdict, Verdict::NotApplicable);
    // With a lost-reply budget it applies, and is reached.
    let mut lossy = plain(2, 2, 2);
    lossy.budgets.lost_replies = 1;
    let report = run(&lossy, &options(false), None);
    let ambiguous = report
        .properties
        .iter()
        .find(|p| p.name.contains("ambiguous"))
        .expect("listed");
    assert_eq!(ambiguous.verdict, Verdict::Reached);
    // max_attempts 1: no correct broker redelivers.
    let report = run(&plain(1, 2, 1), &options(false), None);
    let redelivered = report
        .properties
        .iter()
        .find(|p| p.name.contains("redelivered"))
        .expect("listed");
    assert_eq!(redelivered.verdict, Verdict::NotApplicable);
    assert_eq!(report.outcome, Outcome::Holds);
}

#[test]
fn a_search_cut_by_its_bound_is_bounded_never_holds() {
    let cut = Options {
        limits: Limits {
            states_max: 500,
            threads: 1,
            ..Limits::default()
        },
        ..options(false)
    };
    let report = run(&plain(2, 2, 2), &cut, None);
    assert_eq!(report.outcome, Outcome::Bounded);
    assert!(report.bounded.is_some());
    for invariant in [Invariant::I1, Invariant::I6] {
        assert_eq!(report.verdict(invariant), Some(Verdict::Bounded));
    }
}

/// A raised interrupt stops the search as its bound does — bounded, never holds — in the
/// depth-first proof (one thread and two) and in the search for fair cycles, and the report
/// says it was interrupted; a violation found before it stands.
#[test]
fn an_interrupted_search_is_bounded_and_says_so() {
    let raised = Arc::new(AtomicBool::new(true));
    let lowered = Arc::new(AtomicBool::new(false));
    let mut unbounded = plain(2, 2, 2);
    unbounded.budgets.renews = 1;
    unbounded.renews = Renews::Unbounded;
    let with = |flag: &Arc<AtomicBool>, threads: usize| Options {
        limits: Limits {
            threads,
            interrupt: Interrupt::on(Arc::clone(flag)),
            ..Limits::default()
        },
        ..options(false)
    };
    for config in [plain(2, 2, 2), unbounded] {
        for threads in [1, 2] {
            let whole = run(&config, &with(&lowered, threads), None);
            assert_eq!(whole.outcome, Outcome::Holds);
            assert!(!whole.interrupted && whole.bounded.is_none());
            let cut = run(&config, &with(&raised, threads), None);
            assert_eq!(cut.outcome, Outcome::Bounded, "{threads} threads");
            assert!(cut.interrupted);
            assert_eq!(cut.bounded, Some(cut.counts.generated));
            assert!(cut.counts.generated < whole.counts.generated);
            for invariant in [Invariant::I1, Invariant::I6] {
                assert_eq!(cut.verdict(invariant), Some(Verdict::Bounded));
            }
        }
    }
    // A violation the search met before the interrupt is still a violation.
    let broken = run(
        &config(Variant::UnfencedSettle, 2, 2, 2),
        &with(&raised, 1),
        None,
    );
    assert!(broken.interrupted);
    assert_eq!(broken.verdict(Invariant::I1), Some(Verdict::Violated));
    assert_eq!(broken.outcome, Outcome::Violated);
}

/// Unique state counts of fixed configurations (1 thread and 2 give the same). A change to
/// the model or its canonical form that changes them must be deliberate; the reduction test
/// (`check_reduction.rs`) checks they never exceed the history-carrying model's.
#[test]
fn pinned_unique_state_counts() {
    let pinned = [
        (plain(1, 1, 1), false, 22),
        (plain(1, 2, 2), false, 231),
        (plain(2, 2, 2), false, 11_935),
        (plain(2, 2, 2), true, 6_181),
        (plain(2, 3, 2), true, 17_524),
        (
            CheckConfig {
                budgets: Budgets {
                    crashes: 1,
                    lost_replies: 1,
                    ..Budgets::default()
                },
                ..plain(2, 2, 2)
            },
            true,
            11_219,
        ),
        (CheckConfig::tailored_for(Variant::LeaseIdReuse), false, 330),
    ];
    let mut differ = Vec::new();
    for (config, symmetry, unique) in pinned {
        let report = run(&config, &options(symmetry), None);
        if report.counts.unique != unique {
            differ.push(format!(
                "{config} symmetry {symmetry}: {}",
                report.counts.unique
            ));
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// Symmetry over groups: two groups configured alike, their histories exchanged, are one
/// state. With one worker (nothing for worker symmetry to merge), on every variant: the same
/// verdict on every property and the same shortest counterexamples as without symmetry, and
/// fewer states wherever the broker exchanges groups (every variant but `rabbitmq-channel`).
#[test]
#[ignore = "slow: every variant with and without group symmetry; .ci/run runs it (--include-ignored)"]
fn group_symmetry_gives_the_same_verdicts_with_fewer_states_on_every_variant() {
    for &variant in Variant::ALL {
        let config = CheckConfig {
            group_count: 2,
            event_count: 1,
            worker_count: 1,
            max_attempts: 2,
            budgets: Budgets {
                crashes: 1,
                lost_replies: 1,
                broker_restarts: u8::from(!variant.is_rabbitmq()),
                renews: 1,
                ..Budgets::default()
            },
            ..CheckConfig::tailored_for(variant)
        };
        let plain = run(&config, &options(false), None);
        let reduced = run(&config, &options(true), None);
        assert_eq!(plain.properties, reduced.properties, "{config}");
        let lengths = |report: &leasehold_model::check::Report| -> Vec<(Invariant, usize)> {
            report
                .counterexamples
                .iter()
                .map(|cx| (cx.invariant, cx.len()))
                .collect()
        };
        assert_eq!(lengths(&plain), lengths(&reduced), "{config}");
        if variant.channel_scoped() {
            assert_eq!(reduced.counts.unique, plain.counts.unique, "{config}");
        } else {
            assert!(
                reduced.counts.unique < plain.counts.unique,
                "{config}: {} against {}",
                reduced.counts.unique,
                plain.counts.unique
            );
        }
    }
}

/// `Limits::first_violation`: a planted bug's counterexample from part of the search (here the
/// covering configuration, which a search past nothing explores whole in tens of seconds),
/// the invariants not found broken not proven; a protocol that holds is searched whole, to
/// the same verdicts and (without subsumption) the same states as without the stop.
#[test]
fn a_stop_at_the_first_violation_finds_the_bug_from_part_of_the_space() {
    let first = |config: &CheckConfig| {
        let options = Options {
            limits: Limits {
                first_violation: true,
                ..Limits::default()
            },
            ..Options::default()
        };
        run(config, &options, None)
    };
    let stopped = first(&CheckConfig::covering_for(Variant::UnfencedSettle));
    assert_eq!(stopped.outcome, Outcome::Violated, "{stopped:?}");
    assert!(stopped.stopped_at_violation && stopped.bounded.is_some());
    let broken = stopped.violated();
    assert!(!broken.is_empty());
    for invariant in &broken {
        let cx = stopped
            .counterexample(*invariant)
            .expect("a counterexample");
        assert_eq!(cx.invariant, *invariant);
    }
    // Every other invariant is not proven: the search did not run to its end.
    for p in stopped.properties.iter().filter(|p| p.kind == "always") {
        assert!(
            [Verdict::Violated, Verdict::Bounded].contains(&p.verdict),
            "{}: {:?}",
            p.name,
            p.verdict
        );
    }
    assert!(
        stopped.counts.generated < 1_000_000,
        "{} states generated before the first violation",
        stopped.counts.generated
    );
    let holding = plain(2, 2, 2);
    let whole = run(&holding, &Options::default(), None);
    let searched = first(&holding);
    assert_eq!(searched.outcome, Outcome::Holds);
    assert!(!searched.stopped_at_violation && searched.bounded.is_none());
    assert_eq!(searched.properties, whole.properties);
    assert_eq!(searched.coverage, whole.coverage);
    // Without subsumption, the same states too (with it the counts differ by the order alone:
    // a stop at the first violation explores faults in the search's own order).
    let unsubsumed = |first_violation| Options {
        limits: Limits {
            first_violation,
            ..Limits::default()
        },
        subsumption: false,
        late_duplicates: false,
        ..Options::default()
    };
    assert_eq!(
        run(&holding, &unsubsumed(true), None).counts,
        run(&holding, &unsubsumed(false), None).counts
    );
}
