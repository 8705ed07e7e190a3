//! Coverage of rare paths: how often a run reached each interesting situation.
//!
//! A simulator that never reaches a path cannot find its bugs, and a clean campaign says
//! nothing about a path it never took. Like FoundationDB's code probes and Antithesis's
//! `sometimes` assertions, each [`Probe`] names a situation worth reaching — a stale settle
//! refused, a late ack from a restarted worker, a renew that kept a lease alive — and a run
//! counts how often it happened. A campaign sums the counts over its seeds and keeps, per
//! probe, the number of seeds that reached it and the first (smallest) such seed, so a user can
//! replay one; a probe that no seed reached is flagged in the summary.
//!
//! Counting costs an array increment: probes are always on.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A rare situation worth reaching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// The broker refused a settle or renew because its lease was stale.
    StaleSettleRefused,
    /// An event was delivered again after its previous lease expired.
    RedeliveryAfterExpiry,
    /// An event was delivered again after a nack.
    RedeliveryAfterNack,
    /// An event was dead-lettered because its attempts ran out.
    DeadLetterByAttempts,
    /// An event was dead-lettered by a reject.
    DeadLetterByReject,
    /// A settle was applied but its reply was lost: the worker saw `ambiguous`.
    AmbiguousReply,
    /// A fetch issued leases but its reply was lost: nobody holds them.
    FetchReplyLost,
    /// A request was lost on the way and never applied.
    RequestDropped,
    /// The broker refused a request or a fetch at once (unavailable).
    BackendUnavailable,
    /// The network delivered a request twice.
    DuplicateDelivery,
    /// An event's handler ran more than once (at least once: counted, not failed).
    DuplicateHandlerRun,
    /// A handler wrote to the world under a lease that was no longer current.
    GhostWrite,
    /// The runtime nacked after a settle failed.
    FollowUpNack,
    /// The broker restarted while leases were outstanding.
    BrokerRestartWithLiveLeases,
    /// A worker crashed while its handler was running.
    HandlerKilledByCrash,
    /// An ack reached the broker after its sender had crashed (and possibly restarted).
    LateAckFromRestartedWorker,
    /// A reply reached a worker that had crashed since sending: nobody acted on it.
    ReplyToRestartedWorker,
    /// A settle landed while the sender's clock and the broker's disagreed on whether its lease
    /// had expired.
    SkewedClockSettle,
    /// A lease was settled by its holder after its first deadline: renewals kept it alive.
    RenewKeptLeaseAlive,
    /// A worker stalled past the deadline of a lease it held.
    PausePastLease,
    /// A partition healed while the worker still held leases.
    PartitionHealedWithLeases,
}

/// How many probes there are.
pub const PROBES: usize = Probe::ALL.len();

impl Probe {
    /// Every probe, in report order.
    pub const ALL: [Probe; 21] = [
        Probe::StaleSettleRefused,
        Probe::RedeliveryAfterExpiry,
        Probe::RedeliveryAfterNack,
        Probe::DeadLetterByAttempts,
        Probe::DeadLetterByReject,
        Probe::AmbiguousReply,
        Probe::FetchReplyLost,
        Probe::RequestDropped,
        Probe::BackendUnavailable,
        Probe::DuplicateDelivery,
        Probe::DuplicateHandlerRun,
        Probe::GhostWrite,
        Probe::FollowUpNack,
        Probe::BrokerRestartWithLiveLeases,
        Probe::HandlerKilledByCrash,
        Probe::LateAckFromRestartedWorker,
        Probe::ReplyToRestartedWorker,
        Probe::SkewedClockSettle,
        Probe::RenewKeptLeaseAlive,
        Probe::PausePastLease,
        Probe::PartitionHealedWithLeases,
    ];

    /// The snake-case name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Probe::StaleSettleRefused => "stale_settle_refused",
            Probe::RedeliveryAfterExpiry => "redelivery_after_expiry",
            Probe::RedeliveryAfterNack => "redelivery_after_nack",
            Probe::DeadLetterByAttempts => "dead_letter_by_attempts",
            Probe::DeadLetterByReject => "dead_letter_by_reject",
            Probe::AmbiguousReply => "ambiguous_reply",
            Probe::FetchReplyLost => "fetch_reply_lost",
            Probe::RequestDropped => "request_dropped",
            Probe::BackendUnavailable => "backend_unavailable",
            Probe::DuplicateDelivery => "duplicate_delivery",
            Probe::DuplicateHandlerRun => "duplicate_handler_run",
            Probe::GhostWrite => "ghost_write",
            Probe::FollowUpNack => "follow_up_nack",
            Probe::BrokerRestartWithLiveLeases => "broker_restart_with_live_leases",
            Probe::HandlerKilledByCrash => "handler_killed_by_crash",
            Probe::LateAckFromRestartedWorker => "late_ack_from_restarted_worker",
            Probe::ReplyToRestartedWorker => "reply_to_restarted_worker",
            Probe::SkewedClockSettle => "skewed_clock_settle",
            Probe::RenewKeptLeaseAlive => "renew_kept_lease_alive",
            Probe::PausePastLease => "pause_past_lease",
            Probe::PartitionHealedWithLeases => "partition_healed_with_leases",
        }
    }

    /// One line: what the situation is.
    pub fn describe(self) -> &'static str {
        match self {
            Probe::StaleSettleRefused => "a settle or renew refused as stale",
            Probe::RedeliveryAfterExpiry => "an event delivered again after its lease expired",
            Probe::RedeliveryAfterNack => "an event delivered again after a nack",
            Probe::DeadLetterByAttempts => "a dead letter because attempts ran out",
            Probe::DeadLetterByReject => "a dead letter by reject",
            Probe::AmbiguousReply => "a settle applied, its reply lost (ambiguous)",
            Probe::FetchReplyLost => "a fetch whose leases were issued, its reply lost",
            Probe::RequestDropped => "a request lost on the way",
            Probe::BackendUnavailable => "a request or fetch refused by an unavailable broker",
            Probe::DuplicateDelivery => "a request delivered twice",
            Probe::DuplicateHandlerRun => "an event handled more than once",
            Probe::GhostWrite => "a handler's write under a lease no longer current",
            Probe::FollowUpNack => "the runtime's nack after a failed settle",
            Probe::BrokerRestartWithLiveLeases => "a broker restart with leases outstanding",
            Probe::HandlerKilledByCrash => "a handler run lost to a worker crash",
            Probe::LateAckFromRestartedWorker => "an ack landing after its sender crashed",
            Probe::ReplyToRestartedWorker => "a reply reaching a worker restarted since",
            Probe::SkewedClockSettle => {
                "a settle whose worker clock and broker clock disagree on expiry"
            }
            Probe::RenewKeptLeaseAlive => "a lease settled past its first deadline, renewed",
            Probe::PausePastLease => "a worker stalled past a lease it held",
            Probe::PartitionHealedWithLeases => "a partition healed with leases outstanding",
        }
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One run's probe counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hits([u64; PROBES]);

impl Default for Hits {
    fn default() -> Hits {
        Hits([0; PROBES])
    }
}

impl Hits {
    /// Counts one occurrence of `probe`.
    #[inline]
    pub fn hit(&mut self, probe: Probe) {
        // A run cannot reach a probe 2^64 times: no overflow check on the hot path.
        self.0[probe as usize] = self.0[probe as usize].wrapping_add(1);
    }

    /// How often `probe` happened.
    pub fn count(&self, probe: Probe) -> u64 {
        self.0[probe as usize]
    }

    /// Every probe with its count, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Probe, u64)> + '_ {
        Probe::ALL.into_iter().map(|p| (p, self.count(p)))
    }
}

/// One probe over a campaign.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeTally {
    /// Occurrences over every seed.
    pub hits: u64,
    /// Seeds that reached it at least once.
    pub seeds: u64,
    /// The smallest seed that reached it.
    pub first_seed: Option<u64>,
}

/// Every probe over a campaign: a commutative fold of the seeds' [`Hits`], so the same
/// whatever the thread count or sharding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage(pub std::collections::BTreeMap<Probe, ProbeTally>);

impl Coverage {
    /// Adds one seed's counts.
    pub fn add(&mut self, seed: u64, hits: &Hits) {
        if self.0.len() == PROBES {
            // Every probe has its tally already (after the first seed): update them in place
            // instead of looking each one up.
            for (&probe, tally) in self.0.iter_mut() {
                let count = hits.count(probe);
                if count > 0 {
                    tally.hits += count;
                    tally.seeds += 1;
                    tally.first_seed = Some(tally.first_seed.map_or(seed, |s| s.min(seed)));
                }
            }
            return;
        }
        for (probe, count) in hits.iter() {
            let tally = self.0.entry(probe).or_default();
            if count > 0 {
                tally.hits += count;
                tally.seeds += 1;
                tally.first_seed = Some(tally.first_seed.map_or(seed, |s| s.min(seed)));
            }
        }
    }

    /// Adds another campaign's (or shard's) coverage.
    ///
    /// # Panics
    /// When a count passes `u64::MAX` (see [`Coverage::try_merge`]).
    pub fn merge(&mut self, other: &Coverage) {
        if let Err(what) = self.try_merge(other) {
            panic!("{what} passes u64::MAX");
        }
    }

    /// [`Coverage::merge`], or which count would pass `u64::MAX` (then `self` is as it was).
    pub fn try_merge(&mut self, other: &Coverage) -> Result<(), &'static str> {
        let mut sum = self.clone();
        sum.add_checked(other)?;
        *self = sum;
        Ok(())
    }

    /// Adds `other` in place; on a count past `u64::MAX`, what was added before it stays added
    /// (callers add into a copy).
    pub(crate) fn add_checked(&mut self, other: &Coverage) -> Result<(), &'static str> {
        for (&probe, theirs) in &other.0 {
            let tally = self.0.entry(probe).or_default();
            tally.hits = tally.hits.checked_add(theirs.hits).ok_or("coverage hits")?;
            tally.seeds = tally
                .seeds
                .checked_add(theirs.seeds)
                .ok_or("coverage seeds")?;
            tally.first_seed = match (tally.first_seed, theirs.first_seed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(())
    }

    /// The tally of `probe` (zero when no seed ran).
    pub fn tally(&self, probe: Probe) -> ProbeTally {
        self.0.get(&probe).copied().unwrap_or_default()
    }

    /// The probes no seed reached, in report order.
    pub fn never_reached(&self) -> Vec<Probe> {
        Probe::ALL
            .into_iter()
            .filter(|&p| self.tally(p).seeds == 0)
            .collect()
    }

    /// The probes no seed reached but for those `closed` (the ones a setup rules out,
    /// [`crate::seeded::reachable::unreachable_probes`]): the open paths a mix never tested.
    pub fn never_reached_open<V>(
        &self,
        closed: &std::collections::BTreeMap<Probe, V>,
    ) -> Vec<Probe> {
        let never = self.never_reached();
        never
            .into_iter()
            .filter(|p| !closed.contains_key(p))
            .collect()
    }
}
