//! `Campaigned::assert_covers`: a campaign in a test asserts that its mix took every path its
//! template leaves open (a `sometimes` assertion over the seeds), and does not ask for a path
//! the template closes.

use leasehold_front::sim::coverage::Probe;
use leasehold_front::sim::seeded::Ratio;
use leasehold_front::{self as leasehold, Variant};

use crate::scratch;
use scratch::out;

/// The default mix reaches every probe within 400 seeds (as `sim/tests/it/scale.rs` checks of the
/// simulator's own defaults); with pauses off, the pause probe is not applicable and not asked
/// for; with failed settles off, the runtime's follow-up nack is a path the template leaves open
/// that no seed takes, and the assertion names it.
#[test]
fn a_campaign_asserts_it_reached_every_open_path_and_names_those_it_missed() {
    let template = leasehold::defaults::sim_template(Variant::Fenced).unwrap();
    let run = |template, test| {
        let run = leasehold::campaign(template).seeds(0..400).expiry_mixed();
        let (_scratch, dir) = out(test);
        run.threads(2).out(&dir).run().unwrap()
    };
    let full = run(template.clone(), "covers");
    full.assert_clean().assert_covers();
    assert!(full.not_applicable.is_empty(), "{:?}", full.not_applicable);

    let mut no_pauses = template.clone();
    no_pauses.faults.pause = Ratio::ZERO;
    let found = run(no_pauses, "no-pauses");
    assert_eq!(
        found
            .not_applicable
            .get(&Probe::PausePastLease)
            .map(String::as_str),
        Some("pause is off")
    );
    found.assert_clean().assert_covers();

    let mut no_failures = template;
    no_failures.faults.failed = Ratio::ZERO;
    let found = run(no_failures, "no-failures");
    assert_eq!(found.never_reached(), [Probe::FollowUpNack]);
    let missed = std::panic::catch_unwind(|| {
        found.assert_covers();
    });
    let message = missed.expect_err("a missed path fails the assertion");
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(
        message.contains("1 coverage probe(s) never reached: follow_up_nack")
            && message.contains("leasehold sim --seeds 0..400"),
        "{message}"
    );
}
