//! Campaigns: a range of seeds, optionally one shard of it, over threads. Each seed's run is
//! independent; the summary is a commutative fold of per-seed results, so it is the same
//! whatever the thread count. Memory is bounded: per seed only counters and, per invariant, the
//! smallest failing seeds are kept.

use super::faults::FaultPlan;
use super::prng::Prng;
use super::run::RunOutcome;
use super::seeded_file::{run_setup, BackendKind};
use super::setup::Setup;
use crate::engine::Expiry;
use crate::trace::fnv1a64;
use leasehold_model::{Invariant, Violation};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How many failing seeds per invariant a summary keeps (the smallest).
pub const FAILING_SEEDS_KEPT: usize = 8;

/// A campaign's plan.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The run template: every field but `seed` (and, under `swarm`, `faults`).
    pub template: Setup,
    /// Draw each seed's fault plan from `template.faults` (swarm testing).
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
}

/// The failures of one invariant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    /// Seeds that broke it.
    pub count: u64,
    /// The smallest of them (at most [`FAILING_SEEDS_KEPT`]).
    pub seeds: Vec<u64>,
}

/// What a campaign found. Equal for equal campaigns whatever the thread count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds with at least one violation.
    pub seeds_failed: u64,
    /// Per invariant, the seeds that broke it.
    pub failures: BTreeMap<Invariant, Failures>,
    /// Seeds that hit a named bound (`steps_max`) without a verdict.
    pub bound_hits: u64,
    /// Steps over all runs.
    pub steps: u64,
    /// Simulated milliseconds over all runs.
    pub sim_ms: u64,
    /// Extra handler runs (at-least-once duplicates), counted by the oracle.
    pub duplicate_runs: u64,
    /// Extra world writes.
    pub duplicate_writes: u64,
    /// World writes under a lease that was no longer current.
    pub ghost_writes: u64,
    /// Events acked without a successful handler run under `ack_first` / `ack_always`.
    pub at_most_once_losses: u64,
    /// A hash of every seed's trace hash (order-independent).
    pub campaign_hash: u64,
    /// The smallest failing seed, with its violations.
    pub first_failure: Option<(u64, Vec<Violation>)>,
}

impl Summary {
    fn add(&mut self, outcome: &RunOutcome) {
        self.seeds_run += 1;
        self.steps += outcome.steps;
        self.sim_ms += outcome.sim_ms;
        self.duplicate_runs += outcome.duplicate_runs;
        self.duplicate_writes += outcome.duplicate_writes;
        self.ghost_writes += outcome.ghost_writes;
        self.at_most_once_losses += outcome.at_most_once_losses;
        let mut mixed = outcome.seed.to_le_bytes().to_vec();
        mixed.extend_from_slice(&outcome.trace_hash.to_le_bytes());
        self.campaign_hash = self.campaign_hash.wrapping_add(fnv1a64(&mixed));
        if outcome.inconclusive.is_some() {
            self.bound_hits += 1;
        }
        if outcome.violations.is_empty() {
            return;
        }
        self.seeds_failed += 1;
        for violation in &outcome.violations {
            let entry = self.failures.entry(violation.invariant).or_default();
            entry.count += 1;
            entry.seeds.push(outcome.seed);
            entry.seeds.sort_unstable();
            entry.seeds.truncate(FAILING_SEEDS_KEPT);
        }
        if self
            .first_failure
            .as_ref()
            .is_none_or(|(seed, _)| outcome.seed < *seed)
        {
            self.first_failure = Some((outcome.seed, outcome.violations.clone()));
        }
    }

    fn merge(&mut self, other: Summary) {
        self.seeds_run += other.seeds_run;
        self.seeds_failed += other.seeds_failed;
        self.bound_hits += other.bound_hits;
        self.steps += other.steps;
        self.sim_ms += other.sim_ms;
        self.duplicate_runs += other.duplicate_runs;
        self.duplicate_writes += other.duplicate_writes;
        self.ghost_writes += other.ghost_writes;
        self.at_most_once_losses += other.at_most_once_losses;
        self.campaign_hash = self.campaign_hash.wrapping_add(other.campaign_hash);
        for (invariant, failures) in other.failures {
            let entry = self.failures.entry(invariant).or_default();
            entry.count += failures.count;
            entry.seeds.extend(failures.seeds);
            entry.seeds.sort_unstable();
            entry.seeds.truncate(FAILING_SEEDS_KEPT);
        }
        if let Some((seed, violations)) = other.first_failure {
            if self.first_failure.as_ref().is_none_or(|(s, _)| seed < *s) {
                self.first_failure = Some((seed, violations));
            }
        }
    }
}

impl Campaign {
    /// The setup of one seed: the template with that seed and, under swarm, its own fault
    /// plan and workload size (at most the template's events, groups and workers).
    pub fn setup(&self, seed: u64) -> Setup {
        let mut setup = self.swarm_setup(seed);
        if self.expiry_mixed {
            let on_fetch = Prng::named(seed, "expiry").coin();
            setup.expiry = if on_fetch {
                Expiry::OnFetch
            } else {
                Expiry::AtDeadline
            };
        }
        setup
    }

    fn swarm_setup(&self, seed: u64) -> Setup {
        if !self.swarm {
            return Setup {
                seed,
                ..self.template.clone()
            };
        }
        let t = &self.template;
        let mut prng = Prng::named(seed, "swarm");
        let faults = FaultPlan::swarm(&t.faults, &mut prng);
        let events = *prng.pick(&[1, 2, 3, t.events.div_ceil(2), t.events]);
        let groups = prng.between(1, t.group_names.len() as u64) as usize;
        let workers_min = t.worker_names.len().min(2) as u64;
        let workers = prng.between(workers_min, t.worker_names.len() as u64) as usize;
        let mut setup = Setup {
            seed,
            faults,
            events: events.min(t.events).max(1),
            ..t.clone()
        };
        setup.group_names.truncate(groups);
        setup.worker_names.truncate(workers);
        setup.clock_offset_ms.truncate(workers);
        setup
    }

    /// The seeds this shard runs, in order.
    pub fn shard_seeds(&self) -> impl Iterator<Item = u64> + '_ {
        let (k, n) = self.shard;
        self.seeds
            .clone()
            .filter(move |seed| (seed - self.seeds.start) % n == k - 1)
    }

    /// Number of seeds this shard runs.
    pub fn shard_len(&self) -> u64 {
        self.shard_seeds().count() as u64
    }

    /// Runs the campaign. `progress` is called after each seed with the number done.
    pub fn run(&self, progress: &(dyn Fn(u64) + Sync)) -> Summary {
        let seeds: Vec<u64> = self.shard_seeds().collect();
        let next = AtomicU64::new(0);
        let done = AtomicU64::new(0);
        let smallest_failure = AtomicU64::new(u64::MAX);
        let total = Mutex::new(Summary::default());
        let threads = self.threads.max(1);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut part = Summary::default();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(&seed) = seeds.get(index) else { break };
                        if self.stop_on_failure && seed > smallest_failure.load(Ordering::Relaxed) {
                            break;
                        }
                        let outcome = run_setup(&self.setup(seed), self.backend, false);
                        let target = self.template.variant.expected_violation();
                        let stops = outcome
                            .violations
                            .iter()
                            .any(|v| target.is_none_or(|t| t == v.invariant));
                        if stops {
                            smallest_failure.fetch_min(seed, Ordering::Relaxed);
                        }
                        part.add(&outcome);
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                    }
                    total
                        .lock()
                        .expect("no thread panics holding it")
                        .merge(part);
                });
            }
        });
        total.into_inner().expect("no thread panicked")
    }
}
