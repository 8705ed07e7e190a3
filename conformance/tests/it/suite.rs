//! The conformance suite against the reference broker: it catches a broker that breaks the
//! contract and a hook that fails, passes every variant's reference against itself, and runs
//! in parts.

use leasehold_conformance::Suite;
use leasehold_model::{Broker, BrokerConfig, Variant};

/// The suite can fail: a broker that settles by (group, seq) alone, run against the fenced
/// reference, differs within a few sequences, and the error names the step.
#[test]
fn a_backend_that_breaks_the_contract_is_caught() {
    let unfenced = |config: &BrokerConfig| {
        Ok(Broker::new(BrokerConfig {
            variant: Variant::UnfencedSettle,
            ..*config
        }))
    };
    let error = Suite::new(Variant::Fenced)
        .cases(64)
        .run(unfenced, |_, _, _| Ok(()))
        .expect_err("an unfenced broker is not the fenced reference");
    assert!(error.contains("output of step"), "{error}");
}

/// What a backend's own hook finds fails the run too.
#[test]
fn the_hook_fails_the_run() {
    let error = Suite::new(Variant::Fenced)
        .cases(4)
        .run(
            |config| Ok(Broker::new(*config)),
            |_, _, step| {
                if step.index == 0 {
                    Err("hook".into())
                } else {
                    Ok(())
                }
            },
        )
        .expect_err("the hook refuses step 0");
    assert!(
        error.contains("after step 0") && error.contains("hook"),
        "{error}"
    );
}

/// Every variant's reference broker conforms to itself, restarts included.
#[test]
fn every_reference_broker_conforms_to_itself() {
    for &variant in Variant::ALL {
        let ran = Suite::new(variant)
            .cases(32)
            .run(|config| Ok(Broker::new(*config)), |_, _, _| Ok(()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ran.cases, 32);
        assert!(
            ran.restarts > 0,
            "{variant}: no sequence restarted the broker"
        );
    }
}

/// A suite in parts runs every case once, each part on its own value; a part whose
/// backend breaks the contract fails the whole run, named with its seed.
#[test]
fn a_suite_in_parts_runs_every_case_and_names_the_part_that_fails() {
    let seen = std::sync::Mutex::new(Vec::new());
    let ran = Suite::new(Variant::Fenced)
        .cases(33)
        .run_parts(
            vec![0, 1, 2],
            |part: &usize, config| {
                seen.lock().unwrap().push(*part);
                Ok(Broker::new(*config))
            },
            |_, _, _| Ok(()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ran.cases, 33);
    let mut seen = seen.into_inner().unwrap();
    seen.sort_unstable();
    // One backend per case (proptest shrinks nothing when every case passes).
    assert_eq!(seen.len(), 33);
    assert_eq!(seen.iter().filter(|&&p| p == 0).count(), 11);
    let error = Suite::new(Variant::Fenced)
        .cases(64)
        .seed(7)
        .run_parts(
            vec![Variant::Fenced, Variant::UnfencedSettle],
            |variant, config| {
                Ok(Broker::new(BrokerConfig {
                    variant: *variant,
                    ..*config
                }))
            },
            |_, _, _| Ok(()),
        )
        .expect_err("the second part's broker is unfenced");
    assert!(error.starts_with("part 2 of 2 (seed 0x8)"), "{error}");
    assert!(error.contains("output of step"), "{error}");
}
