//! The coverage probes a setup closes are never reached: `reachable::unreachable_probes` says a
//! probe is *not applicable* instead of flagging it as never reached, so each of its rules must
//! hold — a rule that closed a reachable probe would hide a path the mix never tested.

use leasehold_model::{AckPolicy, Variant};
use leasehold_sim::coverage::Probe;
use leasehold_sim::seeded::campaign::Campaign;
use leasehold_sim::seeded::reachable::unreachable_probes;
use leasehold_sim::seeded::{Fault, FaultPlan, Ratio, Setup};
use std::collections::BTreeSet;

/// Each fault off in turn, then every fault off, `ack_first`, and handlers that never reject:
/// a campaign of each never reaches a probe its setup closes; and between them every rule
/// closes something (a rule no setup triggers would be tested by nothing here).
#[test]
fn a_probe_the_setup_closes_is_never_reached() {
    let base = Setup::default_for(Variant::Fenced);
    let mut setups: Vec<(String, Setup)> = Vec::new();
    for fault in Fault::ALL {
        let mut setup = base.clone();
        *setup.faults.ratio_mut(fault) = Ratio::ZERO;
        setups.push((format!("{} off", fault.name()), setup));
    }
    setups.push((
        "every fault off".to_string(),
        Setup {
            faults: FaultPlan::none(),
            ..base.clone()
        },
    ));
    setups.push((
        "ack_first".to_string(),
        Setup {
            policy: AckPolicy::AckFirst,
            ..base.clone()
        },
    ));
    let mut never_rejects = base.clone();
    never_rejects.workload.outcome_reject = Ratio::ZERO;
    setups.push(("outcome_reject 0".to_string(), never_rejects));
    let mut closed_somewhere = BTreeSet::new();
    for (name, setup) in setups {
        let closed = unreachable_probes(&setup);
        let mut campaign = Campaign::new(setup, 0..400);
        campaign.expiry_mixed = true;
        campaign.threads = 2;
        let summary = campaign.run(&|_| {});
        for (probe, why) in &closed {
            let tally = summary.coverage.tally(*probe);
            assert_eq!(
                tally.seeds, 0,
                "{name}: {probe} is said closed ({why}) but seed {:?} reached it",
                tally.first_seed
            );
        }
        closed_somewhere.extend(closed.into_keys());
    }
    let expected: BTreeSet<Probe> = [
        Probe::AmbiguousReply,
        Probe::FetchReplyLost,
        Probe::RequestDropped,
        Probe::BackendUnavailable,
        Probe::DuplicateDelivery,
        Probe::BrokerRestartWithLiveLeases,
        Probe::HandlerKilledByCrash,
        Probe::LateAckFromRestartedWorker,
        Probe::ReplyToRestartedWorker,
        Probe::PausePastLease,
        Probe::PartitionHealedWithLeases,
        Probe::DeadLetterByReject,
    ]
    .into();
    assert_eq!(closed_somewhere, expected);
}

/// The default setup closes nothing (its mix reaches every probe: `scale.rs` checks that), and
/// a campaign's report carries what its template closes, which the summary then reports as
/// not applicable rather than never reached.
#[test]
fn the_report_names_the_closed_probes_and_flags_only_the_open_ones() {
    let base = Setup::default_for(Variant::Fenced);
    assert!(unreachable_probes(&base).is_empty());
    let mut setup = base.clone();
    setup.faults.crash = Ratio::ZERO;
    let campaign = Campaign::new(setup, 0..20);
    let summary = campaign.run(&|_| {});
    let report = campaign.report(summary, 0, Vec::new());
    let closed: Vec<Probe> = report.not_applicable.keys().copied().collect();
    assert_eq!(
        closed,
        [
            Probe::HandlerKilledByCrash,
            Probe::LateAckFromRestartedWorker,
            Probe::ReplyToRestartedWorker
        ]
    );
    assert!(report
        .never_reached()
        .iter()
        .all(|probe| !report.not_applicable.contains_key(probe)));
    let text = report.to_string();
    assert!(
        text.contains("late_ack_from_restarted_worker")
            && text.contains("not applicable: crash is off"),
        "{text}"
    );
    // A report read back from JSON keeps them.
    let json = serde_json::to_string(&report).unwrap();
    let back: leasehold_sim::seeded::CampaignReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.not_applicable, report.not_applicable);
}
