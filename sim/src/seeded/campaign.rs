//! Campaigns: a range of seeds, optionally one shard of it, over threads. Each seed's run is
//! independent; the [`Summary`] is a commutative fold of per-seed results, so it is the same
//! whatever the thread count, and shards merge into the whole campaign's. Seeds are streamed
//! (the n-th seed of a shard is computed, never listed), and per seed only counters and, per
//! invariant, the smallest failing seeds are kept: memory does not grow with the range.

use super::faults::FaultPlan;
use super::prng::{Draws, Prng};
use super::ratio::Ratio;
use super::run::RunOptions;
use super::seeded_file::{run_setup_with, BackendKind};
use super::setup::Setup;
pub use super::summary::{
    CampaignReport, Failures, FirstFailure, Saved, SeedRange, Summary, FAILING_SEEDS_KEPT,
};
use crate::engine::Expiry;
use leasehold_model::AckPolicy;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The most worker threads a campaign may use.
pub const THREADS_MAX: usize = 256;

/// The most events a swarm draw gives a seed.
pub const SWARM_EVENTS_MAX: u32 = 10_000;

/// A campaign's progress, told after each seed: the seeds done, and of those the failed ones
/// (an invariant broken) and the inconclusive ones (a bound reached first). With several
/// threads the counts are each thread's latest view, so they may lag by a seed or two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Seeds finished.
    pub done: u64,
    /// Of those, seeds that broke an invariant.
    pub failed: u64,
    /// Of those, seeds a bound stopped without a verdict.
    pub inconclusive: u64,
}

/// What [`Campaign::run_until`] ran: the summary of the shard's first `done` seeds.
#[derive(Clone, Debug)]
pub struct Ran {
    /// What the seeds found.
    pub summary: Summary,
    /// How many of the shard's seeds ran (all of them unless the run was stopped). With
    /// [`Campaign::stop_on_failure`], seeds above the smallest failure found may have been
    /// skipped among them.
    pub done: u64,
}

/// A campaign's plan.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The run template: every field but `seed` (and, under `swarm`, the faults and sizes).
    pub template: Setup,
    /// Draw each seed's fault plan from `template.faults` and its workload size (swarm
    /// testing).
    pub swarm: bool,
    /// Each seed draws when the broker expires leases: at the deadline or lazily on the next
    /// fetch (as Redis claims idle entries); otherwise `template.expiry` holds for every seed.
    pub expiry_mixed: bool,
    /// The seeds.
    pub seeds: Range<u64>,
    /// `(k, n)`: run only the seeds whose index in the range is `k - 1` modulo `n`.
    pub shard: (u64, u64),
    /// Worker threads.
    pub threads: usize,
    /// The broker the runs drive.
    pub backend: BackendKind,
    /// Stop claiming seeds above the smallest seed found so far that breaks the variant's
    /// expected invariant (any invariant for a protocol expected to hold). That seed is still
    /// found exactly; the other counts then depend on timing.
    pub stop_on_failure: bool,
    /// Bounds the user pinned: a swarm draw keeps them instead of deriving them from the
    /// seed's workload size.
    pub pinned: Pinned,
}

/// Bounds pinned by the user (not derived from each seed's workload).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pinned {
    /// `safety_ms_max` was given.
    pub safety_ms_max: bool,
    /// `steps_max` was given.
    pub steps_max: bool,
}

impl Campaign {
    /// A campaign of `seeds` from `template`: one shard, one thread, the pure broker, the
    /// template's faults and expiry for every seed.
    pub fn new(template: Setup, seeds: Range<u64>) -> Campaign {
        Campaign {
            template,
            swarm: false,
            expiry_mixed: false,
            seeds,
            shard: (1, 1),
            threads: 1,
            backend: BackendKind::Pure,
            stop_on_failure: false,
            pinned: Pinned::default(),
        }
    }

    /// The setup of one seed: the template with that seed and, under swarm, its own fault
    /// plan and workload size.
    pub fn setup(&self, seed: u64) -> Setup {
        let mut setup = self.swarm_setup(seed);
        if self.expiry_mixed {
            // A channel's close returns its deliveries at once, whatever the broker's expiry
            // (`rabbitmq-channel`): only an eager broker tells them when they happen.
            let on_fetch = Prng::named(seed, "expiry", self.template.draws).coin()
                && !self.template.variant.channel_scoped();
            setup.expiry = if on_fetch {
                Expiry::OnFetch
            } else {
                Expiry::AtDeadline
            };
        }
        setup
    }

    /// Whether [`Campaign::setup`] draws anything per seed (a swarm, a mixed expiry); when it
    /// does not, a seed's setup is the template with its seed set. Kept beside `setup`: a new
    /// per-seed draw there must be named here too.
    fn setup_draws_per_seed(&self) -> bool {
        self.swarm || self.expiry_mixed
    }

    fn swarm_setup(&self, seed: u64) -> Setup {
        if !self.swarm {
            return Setup {
                seed,
                ..self.template.clone()
            };
        }
        let t = &self.template;
        let mut prng = Prng::named(seed, "swarm", t.draws);
        let faults = FaultPlan::swarm(&t.faults, &mut prng);
        let (events, groups, workers) = swarm_size(t, &mut prng);
        let mut setup = Setup {
            seed,
            faults,
            ..t.clone()
        };
        setup.resize(events, groups, workers);
        swarm_workload(
            &mut setup,
            &mut Prng::named(seed, "swarm-workload", t.draws),
        );
        setup.derive_bounds(!self.pinned.safety_ms_max, !self.pinned.steps_max);
        setup
    }

    /// The largest setup a seed of this campaign can have (what validation must accept).
    pub fn largest_setup(&self) -> Setup {
        let mut setup = self.template.clone();
        if self.swarm {
            let t = &self.template;
            let groups = t.group_names.len().max(SWARM_GROUPS_MAX);
            let workers = t.worker_names.len().max(SWARM_WORKERS_MAX);
            setup.resize(t.events.max(SWARM_EVENTS_MAX), groups, workers);
            setup.lease_ms = setup.lease_ms.saturating_mul(SWARM_LEASE_FACTOR_MAX);
            setup.workload.fetch_limit = setup.workload.fetch_limit.max(SWARM_FETCH_LIMIT_MAX);
            setup.derive_bounds(!self.pinned.safety_ms_max, !self.pinned.steps_max);
        }
        setup
    }

    /// The i-th seed this shard runs.
    pub fn shard_seed(&self, index: u64) -> Option<u64> {
        let (k, n) = self.shard;
        let offset = index.checked_mul(n)?.checked_add(k - 1)?;
        self.seeds
            .start
            .checked_add(offset)
            .filter(|&seed| seed < self.seeds.end)
    }

    /// The seeds this shard runs, in order (computed one by one).
    pub fn shard_seeds(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.shard_len()).filter_map(|i| self.shard_seed(i))
    }

    /// Number of seeds this shard runs.
    pub fn shard_len(&self) -> u64 {
        let (k, n) = self.shard;
        let len = self.seeds.end.saturating_sub(self.seeds.start);
        len.saturating_sub(k - 1).div_ceil(n)
    }

    /// The flags that reproduce the campaign's configuration (not its seeds, shard or
    /// backend): equal for every shard of it.
    pub fn recipe(&self) -> String {
        let expiry = (!self.expiry_mixed).then_some(self.template.expiry);
        recipe(&self.template, self.swarm, expiry, self.pinned)
    }

    /// The command that reproduces the campaign: `leasehold sim --seeds a..b --shard k/n …`.
    pub fn command(&self) -> String {
        format!(
            "leasehold sim --seeds {} --shard {}/{} {}{}",
            self.seeds_text(),
            self.shard.0,
            self.shard.1,
            self.recipe(),
            self.backend.flags_named()
        )
    }

    /// The seed range as `--seeds` takes it: `A..B`, or `A..` when it runs up to 2^64 − 1
    /// (until stopped).
    pub fn seeds_text(&self) -> String {
        SeedRange::from(&self.seeds).to_string()
    }

    /// The command that reruns one seed of the campaign, on its backend (with the flags
    /// that configure it: a Redis server's).
    pub fn seed_command(&self, seed: u64) -> String {
        format!(
            "leasehold sim --seed {seed} {}{}",
            self.recipe(),
            self.backend.flags_named()
        )
    }

    /// The campaign of this shard's first `count` seeds (all of them when it has no more): what
    /// a campaign stopped after `count` seeds ran, whose summary and hash it reproduces.
    pub fn first(&self, count: u64) -> Campaign {
        let mut first = self.clone();
        if count < self.shard_len() {
            // The shard's seed number `count` is start + count·n + k − 1 < end: no overflow.
            first.seeds.end = self.seeds.start + count * self.shard.1;
        }
        first
    }

    /// Runs the campaign. `progress` is called after each seed with the seeds done so far and
    /// how many of them failed or were inconclusive.
    pub fn run(&self, progress: &(dyn Fn(Tally) + Sync)) -> Summary {
        self.run_until(progress, &AtomicBool::new(false)).summary
    }

    /// Runs the campaign until every seed ran or `stop` is set, whichever comes first. Once
    /// `stop` is set no seed starts, and the seeds under way finish: the seeds run are then the
    /// shard's first [`Ran::done`], and [`Campaign::first`] of that count is the campaign that
    /// reproduces the summary and its hash. (Whatever sets `stop` — a signal, a time budget —
    /// decides only how many seeds run, never what a seed does.)
    pub fn run_until(&self, progress: &(dyn Fn(Tally) + Sync), stop: &AtomicBool) -> Ran {
        let total = self.shard_len();
        let next = AtomicU64::new(0);
        let done = AtomicU64::new(0);
        let failed = AtomicU64::new(0);
        let inconclusive = AtomicU64::new(0);
        let smallest_failure = AtomicU64::new(u64::MAX);
        let summary = Mutex::new(Summary::default());
        let threads = self.threads.clamp(1, THREADS_MAX);
        let options = RunOptions::default();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut part = Summary::default();
                    // Without per-seed draws a seed's setup is the template's with its seed:
                    // one copy per thread serves every seed.
                    let per_seed = self.setup_draws_per_seed();
                    let mut setup = self.template.clone();
                    loop {
                        // Checked before a seed is claimed: every claimed seed runs, so the
                        // seeds run are a prefix of the shard's.
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= total {
                            break;
                        }
                        let Some(seed) = self.shard_seed(index) else {
                            break;
                        };
                        if self.stop_on_failure && seed > smallest_failure.load(Ordering::Relaxed) {
                            break;
                        }
                        if per_seed {
                            setup = self.setup(seed);
                        } else {
                            setup.seed = seed;
                        }
                        let outcome = run_setup_with(&setup, &self.backend, &options);
                        let target = self.template.variant.expected_violation();
                        let stops = outcome
                            .violations
                            .iter()
                            .any(|v| target.is_none_or(|t| t == v.invariant));
                        if stops {
                            smallest_failure.fetch_min(seed, Ordering::Relaxed);
                        }
                        // Counted as the summary counts them (`Summary::add` decides).
                        let before = (part.seeds_failed, part.seeds_inconclusive);
                        part.add(&outcome, &setup.group_names);
                        failed.fetch_add(part.seeds_failed - before.0, Ordering::Relaxed);
                        let bounded = part.seeds_inconclusive - before.1;
                        inconclusive.fetch_add(bounded, Ordering::Relaxed);
                        progress(Tally {
                            failed: failed.load(Ordering::Relaxed),
                            inconclusive: inconclusive.load(Ordering::Relaxed),
                            done: done.fetch_add(1, Ordering::Relaxed) + 1,
                        });
                    }
                    summary
                        .lock()
                        .expect("no thread panics holding it")
                        .merge(&part);
                });
            }
        });
        Ran {
            summary: summary.into_inner().expect("no thread panicked"),
            done: next.into_inner().min(total),
        }
    }

    /// The report of this campaign's `summary`, run in `wall_ms` (the caller's clock).
    pub fn report(&self, summary: Summary, wall_ms: u64, saved: Vec<Saved>) -> CampaignReport {
        CampaignReport {
            command: self.command(),
            recipe: self.recipe(),
            variant: self.template.variant.name().to_string(),
            policy: self.template.policy.name().to_string(),
            expected: self.template.variant.expected_violation(),
            seeds: SeedRange::from(&self.seeds),
            shard: format!("{}/{}", self.shard.0, self.shard.1),
            swarm: self.swarm,
            stop_on_failure: self.stop_on_failure,
            backend: self.backend.name().to_string(),
            faults: self.template.faults.summary(),
            trace_hash: summary.campaign_hash,
            summary,
            wall_ms,
            threads: self.threads,
            saved,
            stopped: None,
            not_applicable: super::reachable::unreachable_probes(&self.template),
        }
    }
}

/// The most groups a swarm draw gives a seed (beyond the template's).
pub const SWARM_GROUPS_MAX: usize = 4;
/// The most workers a swarm draw gives a seed (beyond the template's).
pub const SWARM_WORKERS_MAX: usize = 8;

/// The longest lease a swarm draw gives a seed, as a multiple of the template's.
pub const SWARM_LEASE_FACTOR_MAX: u64 = 2;
/// The largest fetch a swarm draw gives a seed (leases per fetch).
pub const SWARM_FETCH_LIMIT_MAX: u32 = 4;

/// A swarm draw of a seed's runtime and workload (from its own stream, `swarm-workload`, so
/// the fault and size draws stay what they were): in half the seeds another ack policy; each
/// handler outcome's rate (`AckMessage`, `NackMessage`, `RejectMessage`) in half the seeds
/// from a menu, none to a quarter of the runs; leases per fetch from 1, 2 and 4; the lease
/// itself half, once or twice the template's.
fn swarm_workload(setup: &mut Setup, prng: &mut Prng) {
    if prng.coin() {
        setup.policy = *prng.pick(&AckPolicy::ALL);
    }
    let menu = [
        Ratio::ZERO,
        Ratio::new(1, 50),
        Ratio::new(1, 10),
        Ratio::new(1, 4),
    ];
    let w = &mut setup.workload;
    for rate in [
        &mut w.outcome_ack,
        &mut w.outcome_nack,
        &mut w.outcome_reject,
    ] {
        let redraw = prng.coin();
        let drawn = *prng.pick(&menu);
        if redraw {
            *rate = drawn;
        }
    }
    w.fetch_limit = w
        .fetch_limit
        .max(*prng.pick(&[1, 1, 2, SWARM_FETCH_LIMIT_MAX]));
    let lease_ms = setup.lease_ms;
    setup.lease_ms = match prng.below(4) {
        0 => (lease_ms / 2).max(1),
        3 => lease_ms.saturating_mul(SWARM_LEASE_FACTOR_MAX),
        _ => lease_ms,
    };
}

/// A swarm draw of a seed's size: most seeds small (1, 2, 3, half or all of the template's
/// events, up to its groups and workers: what makes lease ids collide), a quarter larger —
/// up to 200 events, up to 2,000, and one seed in a hundred up to [`SWARM_EVENTS_MAX`], with
/// up to [`SWARM_GROUPS_MAX`] groups and [`SWARM_WORKERS_MAX`] workers.
fn swarm_size(t: &Setup, prng: &mut Prng) -> (u32, usize, usize) {
    let class = prng.below(100);
    let (events, groups_max, workers_max) = if class < 75 {
        let events = *prng.pick(&[1, 2, 3, t.events.div_ceil(2), t.events]);
        let events = events.min(t.events).max(1);
        let groups = t.group_names.len().max(SWARM_GROUPS_MAX);
        (events, groups, t.worker_names.len())
    } else {
        let (lo, hi) = match class {
            75..=92 => (21, 200),
            93..=98 => (201, 2_000),
            _ => (2_001, u64::from(SWARM_EVENTS_MAX)),
        };
        let events = prng.between(lo, hi) as u32;
        let groups_max = if class < 93 { 3 } else { SWARM_GROUPS_MAX };
        let groups = t.group_names.len().max(groups_max);
        (events, groups, t.worker_names.len().max(SWARM_WORKERS_MAX))
    };
    let groups = prng.between(1, groups_max as u64) as usize;
    let workers_min = workers_max.min(2) as u64;
    let workers = prng.between(workers_min, workers_max as u64) as usize;
    (events, groups, workers)
}

/// The flags that reproduce `setup`'s configuration (not its seed): `--variant … --lease-ms
/// …`, then `--swarm`, `--expiry` when given, `--draws` when not the default, pinned bounds, and every fault whose intensity
/// differs from the default plan's.
pub fn recipe(setup: &Setup, swarm: bool, expiry: Option<Expiry>, pinned: Pinned) -> String {
    let mut out = format!(
        "--variant {} --events {} --groups {} --workers {} --policy {} --max-attempts {} --lease-ms {}",
        setup.variant,
        setup.events,
        setup.group_names.len(),
        setup.worker_names.len(),
        setup.policy,
        setup.max_attempts,
        setup.lease_ms,
    );
    let mut derived = setup.clone();
    derived.derive_bounds(true, true);
    let safety = setup.workload.safety_ms_max;
    if pinned.safety_ms_max || safety != derived.workload.safety_ms_max {
        let _ = write!(out, " --safety-ms-max {safety}");
    }
    let steps = setup.workload.steps_max;
    if pinned.steps_max || steps != derived.workload.steps_max {
        let _ = write!(out, " --steps-max {steps}");
    }
    if swarm {
        out.push_str(" --swarm");
    }
    if let Some(expiry) = expiry {
        let _ = write!(out, " --expiry {}", expiry.name());
    }
    if setup.draws != Draws::default() {
        let _ = write!(out, " --draws {}", setup.draws);
    }
    let plan = &setup.faults;
    let base = FaultPlan::for_lease(setup.lease_ms);
    for fault in super::faults::Fault::ALL {
        if plan.ratio(fault) != base.ratio(fault) {
            let flag = fault.name().replace('_', "-");
            let _ = write!(out, " --{flag} {}", plan.ratio(fault));
        }
    }
    for ((name, value), (_, default)) in plan.magnitudes().into_iter().zip(base.magnitudes()) {
        if value != default {
            let _ = write!(out, " --{} {value}", name.replace('_', "-"));
        }
    }
    out
}
