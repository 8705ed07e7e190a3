//! What a campaign found, as a value: a commutative fold of its seeds' outcomes, the same
//! whatever the thread count and however the seeds were sharded, printable ([`Display`]) and
//! machine-readable ([`Serialize`], [`Deserialize`]), so that shards run anywhere merge into the
//! summary — and the campaign hash — of the whole campaign.
//!
//! [`Display`]: std::fmt::Display

use super::run::RunOutcome;
use crate::bound::Bound;
use crate::coverage::{Coverage, Probe};
use crate::trace::fnv1a64;
use leasehold_model::{Invariant, Violation};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// A campaign's speed is printed only over at least this much wall time (its clock counts
/// whole milliseconds).
pub const SPEED_WALL_MS_MIN: u64 = 10;

/// How many seeds per invariant (and per bound) a summary keeps: the smallest.
pub const FAILING_SEEDS_KEPT: usize = 8;

/// The seeds of one kind of outcome (an invariant broken, a bound hit).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    /// How many seeds.
    pub count: u64,
    /// The smallest of them (at most [`FAILING_SEEDS_KEPT`]), in order.
    pub seeds: Vec<u64>,
}

impl Failures {
    fn add(&mut self, seed: u64) {
        self.count += 1;
        self.keep(std::iter::once(seed));
    }

    fn merge(&mut self, other: &Failures) -> Result<(), &'static str> {
        self.count = self
            .count
            .checked_add(other.count)
            .ok_or("a failure count")?;
        self.keep(other.seeds.iter().copied());
        Ok(())
    }

    fn keep(&mut self, seeds: impl Iterator<Item = u64>) {
        self.seeds.extend(seeds);
        self.seeds.sort_unstable();
        self.seeds.dedup();
        self.seeds.truncate(FAILING_SEEDS_KEPT);
    }
}

/// The smallest failing seed and what broke.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstFailure {
    /// The seed.
    pub seed: u64,
    /// Its violations, in the order found.
    pub violations: Vec<Violation>,
    /// Each violation in one line, its detail worded as the seed's timeline words it (`E7 of
    /// g1`, where the oracle says `event 7 of group 1`). (Absent from outputs written before it
    /// existed: the oracle's wording is printed then.)
    #[serde(default)]
    pub told: Vec<String>,
}

/// What a campaign (or one shard of it) found. Equal for equal campaigns whatever the thread
/// count; the sum of its shards' summaries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds with at least one violation.
    pub seeds_failed: u64,
    /// Per invariant, the seeds that broke it.
    pub failures: BTreeMap<Invariant, Failures>,
    /// Seeds a named bound stopped without a verdict (inconclusive: never a violation).
    pub seeds_inconclusive: u64,
    /// Per bound, the seeds it stopped without a verdict.
    pub inconclusive: BTreeMap<Bound, Failures>,
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
    /// Per coverage probe: occurrences, seeds that reached it, the first such seed.
    pub coverage: Coverage,
    /// A hash of every seed's trace hash: the wrapping sum over seeds of
    /// `fnv1a64(seed ‖ trace_hash)`, so independent of order, threads and shards.
    #[serde(serialize_with = "hex", deserialize_with = "unhex")]
    pub campaign_hash: u64,
    /// The smallest failing seed, with its violations.
    pub first_failure: Option<FirstFailure>,
}

fn hex<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{value:016x}"))
}

fn unhex<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
}

/// The contribution of one seed's trace hash to the campaign hash.
pub fn seed_hash(seed: u64, trace_hash: u64) -> u64 {
    let mut mixed = [0u8; 16];
    mixed[..8].copy_from_slice(&seed.to_le_bytes());
    mixed[8..].copy_from_slice(&trace_hash.to_le_bytes());
    fnv1a64(&mixed)
}

impl Summary {
    /// Adds one seed's outcome; `groups` are the seed's group names.
    pub fn add(&mut self, outcome: &RunOutcome, groups: &[String]) {
        self.seeds_run += 1;
        self.steps += outcome.steps;
        self.sim_ms += outcome.sim_ms;
        self.duplicate_runs += outcome.duplicate_runs;
        self.duplicate_writes += outcome.duplicate_writes;
        self.ghost_writes += outcome.ghost_writes;
        self.at_most_once_losses += outcome.at_most_once_losses;
        self.coverage.add(outcome.seed, &outcome.hits);
        self.campaign_hash = self
            .campaign_hash
            .wrapping_add(seed_hash(outcome.seed, outcome.trace_hash));
        if outcome.violations.is_empty() {
            // A seed is inconclusive when a bound stopped it without a verdict: one that broke
            // an invariant first has its verdict (failed), whatever bound it reached later.
            if let Some(bound) = outcome.inconclusive {
                self.seeds_inconclusive += 1;
                self.inconclusive
                    .entry(bound)
                    .or_default()
                    .add(outcome.seed);
            }
            return;
        }
        self.seeds_failed += 1;
        for violation in &outcome.violations {
            self.failures
                .entry(violation.invariant)
                .or_default()
                .add(outcome.seed);
        }
        if self
            .first_failure
            .as_ref()
            .is_none_or(|first| outcome.seed < first.seed)
        {
            let told = outcome.violations.iter();
            let told = told.map(|v| v.named(groups, |_| None)).collect();
            self.first_failure = Some(FirstFailure {
                seed: outcome.seed,
                violations: outcome.violations.clone(),
                told,
            });
        }
    }

    /// Adds another part of the campaign (another thread's seeds, another shard).
    ///
    /// # Panics
    /// When a count passes `u64::MAX`, which no campaign's seeds reach; parts read from files
    /// go through [`Summary::try_merge`].
    pub fn merge(&mut self, other: &Summary) {
        if let Err(what) = self.try_merge(other) {
            panic!("{what} passes u64::MAX");
        }
    }

    /// [`Summary::merge`], or which count would pass `u64::MAX` (a part that no campaign
    /// produced: then `self` is as it was).
    pub fn try_merge(&mut self, other: &Summary) -> Result<(), &'static str> {
        let mut sum = self.clone();
        sum.add_part(other)?;
        *self = sum;
        Ok(())
    }

    fn add_part(&mut self, other: &Summary) -> Result<(), &'static str> {
        let counts = [
            (&mut self.seeds_run, other.seeds_run, "seeds run"),
            (&mut self.seeds_failed, other.seeds_failed, "seeds failed"),
            (
                &mut self.seeds_inconclusive,
                other.seeds_inconclusive,
                "seeds inconclusive",
            ),
            (&mut self.steps, other.steps, "steps"),
            (&mut self.sim_ms, other.sim_ms, "simulated time"),
            (
                &mut self.duplicate_runs,
                other.duplicate_runs,
                "duplicate runs",
            ),
            (
                &mut self.duplicate_writes,
                other.duplicate_writes,
                "duplicate writes",
            ),
            (&mut self.ghost_writes, other.ghost_writes, "ghost writes"),
            (
                &mut self.at_most_once_losses,
                other.at_most_once_losses,
                "at-most-once losses",
            ),
        ];
        for (ours, theirs, what) in counts {
            *ours = ours.checked_add(theirs).ok_or(what)?;
        }
        // (Into `try_merge`'s copy: a failure leaves the caller's summary as it was.)
        self.coverage.add_checked(&other.coverage)?;
        self.campaign_hash = self.campaign_hash.wrapping_add(other.campaign_hash);
        for (invariant, failures) in &other.failures {
            self.failures
                .entry(*invariant)
                .or_default()
                .merge(failures)?;
        }
        for (bound, seeds) in &other.inconclusive {
            self.inconclusive.entry(*bound).or_default().merge(seeds)?;
        }
        if let Some(theirs) = &other.first_failure {
            if self
                .first_failure
                .as_ref()
                .is_none_or(|ours| theirs.seed < ours.seed)
            {
                self.first_failure = Some(theirs.clone());
            }
        }
        Ok(())
    }
}

/// A campaign's report: what was run (its recipe), what it found ([`Summary`]), how fast. Its
/// `Display` is the text `leasehold sim` prints after the recipe line; its JSON is `--json`'s,
/// and what `--merge` reads back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignReport {
    /// The command that reproduces the campaign (this shard of it).
    pub command: String,
    /// The flags of the campaign without its seeds, shard and backend: equal for every shard.
    pub recipe: String,
    /// The variant.
    pub variant: String,
    /// The ack policy.
    pub policy: String,
    /// The invariant the variant is expected to break, if any.
    pub expected: Option<Invariant>,
    /// The seed range, `start..end`.
    pub seeds: SeedRange,
    /// `k/n`.
    pub shard: String,
    /// Swarm testing.
    pub swarm: bool,
    /// Whether the campaign stopped at its first failing seed (such shards cannot be merged).
    pub stop_on_failure: bool,
    /// The backend.
    pub backend: String,
    /// The fault plan (under swarm, the faults each seed draws from).
    pub faults: String,
    /// What the seeds found.
    #[serde(flatten)]
    pub summary: Summary,
    /// The campaign hash again, under its historical name.
    #[serde(serialize_with = "hex", deserialize_with = "unhex")]
    pub trace_hash: u64,
    /// Wall-clock milliseconds (the sum over shards, once merged).
    pub wall_ms: u64,
    /// Worker threads (the most of any shard, once merged).
    pub threads: usize,
    /// Failing seeds written as scenario files.
    #[serde(default)]
    pub saved: Vec<Saved>,
    /// Set when the campaign stopped before its last seed (interrupted, or its time budget
    /// spent). `seeds` and `command` are then those of the seeds it ran: rerun, they give the
    /// same summary and campaign hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The coverage probes the campaign's setup closes, with the reason (a fault they need is
    /// off): reported as not applicable, not flagged as never reached
    /// ([`super::reachable::unreachable_probes`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_applicable: BTreeMap<Probe, String>,
}

/// Why a campaign stopped early, and what it was asked to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    /// What stopped it: `interrupted`, or `time budget 10m spent`.
    pub reason: String,
    /// The seed range asked for (`end` is 2^64 − 1 for an open range, `A..`).
    pub asked: SeedRange,
}

/// A seed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRange {
    /// First seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
}

impl From<&std::ops::Range<u64>> for SeedRange {
    fn from(seeds: &std::ops::Range<u64>) -> SeedRange {
        SeedRange {
            start: seeds.start,
            end: seeds.end,
        }
    }
}

impl fmt::Display for SeedRange {
    /// As `--seeds` takes it: `A..B`, or `A..` when it runs up to 2^64 − 1 (until stopped).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.end == u64::MAX {
            write!(f, "{}..", self.start)
        } else {
            write!(f, "{}..{}", self.start, self.end)
        }
    }
}

/// A failing seed saved as a scenario file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The seed.
    pub seed: u64,
    /// The invariant it breaks (what the file expects).
    pub invariant: Invariant,
    /// Where it was written.
    pub path: String,
}

impl CampaignReport {
    /// The probes no seed reached that the campaign's setup leaves open: the paths its mix
    /// never tested (what the summary flags), in report order.
    pub fn never_reached(&self) -> Vec<Probe> {
        self.summary
            .coverage
            .never_reached_open(&self.not_applicable)
    }

    /// Merges the reports of the shards `1/n` … `n/n` of one campaign into the report of the
    /// whole campaign: the same summary and campaign hash as running it unsharded.
    pub fn merge(parts: &[CampaignReport]) -> Result<CampaignReport, String> {
        let first = parts.first().ok_or("nothing to merge")?;
        let (_, n) = parse_shard(&first.shard)?;
        let mut seen = vec![false; n as usize];
        let mut merged = CampaignReport {
            shard: "1/1".to_string(),
            command: first
                .command
                .replacen(&format!("--shard {}", first.shard), "--shard 1/1", 1),
            summary: Summary::default(),
            wall_ms: 0,
            threads: 0,
            saved: Vec::new(),
            ..first.clone()
        };
        for part in parts {
            if part.stop_on_failure {
                return Err("a shard run with --stop-on-failure cannot be merged".to_string());
            }
            let stopped = part.stopped.as_ref().or(first.stopped.as_ref());
            if let Some(stopped) = stopped.filter(|_| part.seeds != first.seeds) {
                return Err(format!(
                    "shard {} ran seeds {} and shard {} ran {}: a shard stopped early ({}), and shards merge only over one range (rerun them with one --seeds A..B)",
                    first.shard, first.seeds, part.shard, part.seeds, stopped.reason
                ));
            }
            let same = (&part.recipe, part.seeds, &part.backend)
                == (&first.recipe, first.seeds, &first.backend);
            if !same {
                return Err(format!(
                    "shard {} is not of the same campaign ({} {}..{} --backend {}, not {} {}..{} --backend {})",
                    part.shard, part.recipe, part.seeds.start, part.seeds.end, part.backend,
                    first.recipe, first.seeds.start, first.seeds.end, first.backend
                ));
            }
            let (k, m) = parse_shard(&part.shard)?;
            if m != n {
                return Err(format!("shard {} is not one of {n}", part.shard));
            }
            if std::mem::replace(&mut seen[k as usize - 1], true) {
                return Err(format!("shard {} is given twice", part.shard));
            }
            let overflow = |what| {
                format!(
                    "the shards' {what} add up past 2^64 (at shard {})",
                    part.shard
                )
            };
            merged.summary.try_merge(&part.summary).map_err(overflow)?;
            merged.wall_ms = merged
                .wall_ms
                .checked_add(part.wall_ms)
                .ok_or_else(|| overflow("wall times"))?;
            merged.threads = merged.threads.max(part.threads);
            merged.saved.extend(part.saved.iter().cloned());
        }
        if let Some(missing) = seen.iter().position(|&s| !s) {
            return Err(format!("shard {}/{n} is missing", missing + 1));
        }
        merged.trace_hash = merged.summary.campaign_hash;
        Ok(merged)
    }

    fn write_failures(&self, out: &mut String) -> fmt::Result {
        let s = &self.summary;
        if s.failures.is_empty() {
            writeln!(out, "failures: none")?;
        }
        for (invariant, failures) in &s.failures {
            writeln!(
                out,
                "failures: {invariant}: {} seeds (smallest: {})",
                failures.count,
                join(&failures.seeds)
            )?;
        }
        for (bound, seeds) in &s.inconclusive {
            writeln!(
                out,
                "inconclusive: {bound} reached on {} seeds (smallest: {}): no verdict, not a failure",
                seeds.count,
                join(&seeds.seeds)
            )?;
        }
        if s.seeds_run > 0 && s.seeds_inconclusive == s.seeds_run {
            // Exit status 0 says no seed failed; it must not read as "the protocol held".
            writeln!(
                out,
                "warning: a bound stopped every seed, so this campaign judged nothing (leave the bounds derived, or raise them)"
            )?;
        }
        if let Some(expected) = self.expected {
            let caught = s.failures.contains_key(&expected);
            let verdict = if caught { "caught" } else { "not caught" };
            writeln!(
                out,
                "expected: {} breaks {expected}: {verdict}",
                self.variant
            )?;
        }
        if let Some(first) = &s.first_failure {
            writeln!(out, "first failing seed: {}", first.seed)?;
            for (i, v) in first.violations.iter().enumerate() {
                match first.told.get(i) {
                    Some(told) => writeln!(out, "  {told}")?,
                    None => writeln!(out, "  {v}")?,
                }
            }
        }
        Ok(())
    }

    fn write_coverage(&self, out: &mut String) -> fmt::Result {
        let coverage = &self.summary.coverage;
        writeln!(
            out,
            "coverage (seeds that reached it / occurrences, first seed):"
        )?;
        for probe in Probe::ALL {
            let t = coverage.tally(probe);
            let first = t.first_seed.map_or("-".to_string(), |s| s.to_string());
            let flag = match self.not_applicable.get(&probe) {
                _ if t.seeds > 0 => String::new(),
                Some(why) => format!("  not applicable: {why}"),
                None => "  ⚠ never reached".to_string(),
            };
            writeln!(
                out,
                "  {:<32} {:>7} / {:<9} {first:>6}{flag}",
                probe.name(),
                t.seeds,
                t.hits
            )?;
        }
        let never = self.never_reached();
        if !never.is_empty() && self.summary.seeds_run > 0 {
            let names: Vec<&str> = never.iter().map(|p| p.name()).collect();
            writeln!(out, "never reached: {}", names.join(", "))?;
        }
        Ok(())
    }

    fn write_speed(&self, out: &mut String) -> fmt::Result {
        let s = &self.summary;
        let wall_s = (self.wall_ms as f64 / 1000.0).max(1e-3);
        let sim_s = s.sim_ms as f64 / 1000.0;
        writeln!(
            out,
            "simulated time: {sim_s:.1} s over {} steps in {:.2} s wall",
            s.steps,
            self.wall_ms as f64 / 1000.0
        )?;
        if self.wall_ms < SPEED_WALL_MS_MIN {
            // The wall clock counts whole milliseconds: a rate over a few of them is noise.
            return writeln!(
                out,
                "speed: not measured: under {SPEED_WALL_MS_MIN} ms of wall time (threads: {})",
                self.threads
            );
        }
        writeln!(
            out,
            "speed: {:.0} steps/s, {:.1} seeds/s, simulated/wall {:.0}x (threads: {})",
            s.steps as f64 / wall_s,
            s.seeds_run as f64 / wall_s,
            sim_s / wall_s,
            self.threads
        )
    }
}

fn join(seeds: &[u64]) -> String {
    let texts: Vec<String> = seeds.iter().map(u64::to_string).collect();
    texts.join(", ")
}

/// Parses `k/n` with `1 <= k <= n`.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("'{text}' is not k/n with 1 <= k <= n");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || n == 0 || k > n || n > u64::from(u32::MAX) {
        return Err(bad());
    }
    Ok((k, n))
}

impl fmt::Display for CampaignReport {
    /// The summary `leasehold sim` prints after its recipe line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        let mut out = String::new();
        if let Some(stopped) = &self.stopped {
            let shard = if self.shard == "1/1" {
                String::new()
            } else {
                format!(" --shard {}", self.shard)
            };
            let (ran, asked) = (self.seeds, stopped.asked);
            writeln!(
                out,
                "stopped early ({}): ran seeds {ran}{shard} of {asked}; this summary and its hash are those of --seeds {ran}{shard}",
                stopped.reason,
            )?;
        }
        writeln!(
            out,
            "seeds run: {} ({} failed, {} inconclusive)",
            s.seeds_run, s.seeds_failed, s.seeds_inconclusive
        )?;
        self.write_failures(&mut out)?;
        writeln!(
            out,
            "duplicates: {} handler runs, {} world writes, {} ghost writes (at least once: counted, not failed)",
            s.duplicate_runs, s.duplicate_writes, s.ghost_writes
        )?;
        writeln!(
            out,
            "at-most-once: {} events acked without a completed handler ({}'s documented guarantee, not a protocol failure)",
            s.at_most_once_losses, self.policy
        )?;
        self.write_coverage(&mut out)?;
        self.write_speed(&mut out)?;
        writeln!(out, "campaign hash {:016x}", s.campaign_hash)?;
        f.write_str(&out)
    }
}
