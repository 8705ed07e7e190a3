//! Which coverage probes a seeded run can reach at all, from its setup alone.
//!
//! A probe a campaign never reached is flagged: the mix never tested that path. But some paths
//! are closed by the setup itself — a lost reply needs the `lost_reply` fault, a dead letter by
//! reject needs a handler that rejects under a policy that lets it — and flagging those would
//! ask the user to fix what is not broken. Like `check`'s *not applicable* `sometimes`
//! properties, such a probe is reported with the reason instead. The rules are conservative:
//! a probe is closed only when no seeded run of the setup can reach it (a swarm draw only turns
//! faults off, never on), and a test runs every rule to check that it is so.

use super::setup::Setup;
use crate::coverage::Probe;
use leasehold_model::AckPolicy;
use std::collections::BTreeMap;

/// The probes no seeded run of `setup` (or of a swarm campaign with `setup` as its template)
/// can reach, each with the reason, in report order.
pub fn unreachable_probes(setup: &Setup) -> BTreeMap<Probe, String> {
    Probe::ALL
        .into_iter()
        .filter_map(|probe| closed_by(setup, probe).map(|why| (probe, why.to_string())))
        .collect()
}

/// Why no seeded run of `setup` reaches `probe`, when the setup alone says so.
fn closed_by(setup: &Setup, probe: Probe) -> Option<&'static str> {
    let f = &setup.faults;
    let off = |ratios: &[super::Ratio]| ratios.iter().all(|r| r.is_zero());
    let closed = |ratios: &[super::Ratio], why| off(ratios).then_some(why);
    match probe {
        // Only the lost_reply fault loses the reply of an applied settle.
        Probe::AmbiguousReply => closed(&[f.lost_reply], "lost_reply is off"),
        // A fetch's reply is lost by drop or lost_reply (a partitioned worker does not fetch).
        Probe::FetchReplyLost => closed(&[f.drop, f.lost_reply], "drop and lost_reply are off"),
        // A settle is lost on the way by drop, or by a partition.
        Probe::RequestDropped => closed(&[f.drop, f.partition], "drop and partition are off"),
        // Only the unavailable fault refuses a fetch or a settle that way.
        Probe::BackendUnavailable => closed(&[f.unavailable], "unavailable is off"),
        Probe::DuplicateDelivery => closed(&[f.duplicate], "duplicate is off"),
        Probe::BrokerRestartWithLiveLeases => closed(&[f.broker_restart], "broker_restart is off"),
        // A new incarnation comes only from a crash (the liveness phase restarts, never
        // crashes).
        Probe::HandlerKilledByCrash
        | Probe::LateAckFromRestartedWorker
        | Probe::ReplyToRestartedWorker => closed(&[f.crash], "crash is off"),
        Probe::PausePastLease => closed(&[f.pause], "pause is off"),
        Probe::PartitionHealedWithLeases => closed(&[f.partition], "partition is off"),
        // A reject comes only from a handler that raises RejectMessage; ack_first acks before
        // the handler runs, and the runtime sends nothing after an ack.
        Probe::DeadLetterByReject if setup.policy == AckPolicy::AckFirst => {
            Some("ack_first acks before the handler runs, so nothing is rejected")
        }
        Probe::DeadLetterByReject => closed(
            &[setup.workload.outcome_reject],
            "the workload's handlers never reject (outcome_reject = 0)",
        ),
        _ => None,
    }
}
