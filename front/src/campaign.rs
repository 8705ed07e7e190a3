//! `leasehold::campaign`: a seeded simulator campaign as a test call, on the pure broker or a
//! backend of one's own. The smallest failing seed is saved as a seeded scenario and re-run
//! with a recorder, so a failed assertion prints its timeline, the file and the command that
//! replays it.

use crate::check::OUT_DEFAULT;
use crate::defaults;
use crate::failure::{Failure, PROGRAM};
use crate::files;
use crate::Error;
use leasehold_model::Invariant;
use leasehold_sim::coverage::Probe;
use leasehold_sim::seeded::campaign::{Campaign, Ran, Tally, THREADS_MAX};
use leasehold_sim::seeded::reachable::unreachable_probes;
use leasehold_sim::seeded::seeded_file::{first_violation_story, scenario_of, to_toml};
use leasehold_sim::seeded::{BackendKind, Setup, Summary};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The most lines of a failing seed's timeline a [`SeedFailure`] keeps: those up to its first
/// violation.
pub const TIMELINE_LINES_MAX: usize = 1_000;

/// A campaign to run: the template, the seeds, the backend. Built by [`campaign`].
#[derive(Clone, Debug)]
pub struct CampaignRun {
    campaign: Campaign,
    out: PathBuf,
    budget: Option<Duration>,
    program: String,
}

/// A campaign of `template` (e.g. `Setup::default_for(Variant::Fenced)`, or
/// [`crate::defaults::sim_template`]): seeds `0..100`, the template's faults for every seed,
/// the pure broker, one thread, findings under [`OUT_DEFAULT`].
pub fn campaign(template: Setup) -> CampaignRun {
    let mut campaign = Campaign::new(template, 0..100);
    campaign.threads = defaults::sim_threads();
    campaign.expiry_mixed = defaults::sim_expiry_mixed();
    CampaignRun {
        campaign,
        out: PathBuf::from(OUT_DEFAULT),
        budget: None,
        program: PROGRAM.to_string(),
    }
}

/// The smallest failing seed of a campaign, saved and re-run.
#[derive(Clone, Debug)]
pub struct SeedFailure {
    /// The seed.
    pub seed: u64,
    /// The first invariant it broke.
    pub invariant: Invariant,
    /// What the oracle saw by the step of the first violation (a step may break several
    /// invariants), one line each, named as the timeline names events and leases.
    pub violations: Vec<String>,
    /// The re-run's timeline up to the line of its first violation: the whole of it, or its
    /// last [`TIMELINE_LINES_MAX`] lines when longer (the `file` replays it whole). The re-run
    /// stops at that violation, so its memory follows the run's live set, however large the
    /// seed and however late the violation.
    pub timeline: String,
    /// The `tN` of the timeline's first line: 0, or where a long timeline was cut.
    pub timeline_from: usize,
    /// The seeded scenario file written.
    pub file: PathBuf,
}

/// What a campaign found.
#[derive(Clone, Debug)]
pub struct Campaigned {
    /// The campaign's counts, failures per invariant and campaign hash.
    pub summary: Summary,
    /// The backend it ran on.
    pub backend: String,
    /// How a replay command starts: `leasehold replay`, or the suite's own program's.
    pub replay_with: String,
    /// The flags that select the backend again (` --backend NAME`; empty for `pure`).
    pub backend_flags: String,
    /// The command that runs the same campaign (on the pure broker, or the same backend): with
    /// a time budget, the seeds it ran.
    pub command: String,
    /// With a time budget ([`CampaignRun::for_at_most`]): whether it was spent before the last
    /// seed. The `command` then names the seeds that ran.
    pub budget_spent: bool,
    /// The smallest failing seed, if any seed failed.
    pub failure: Option<SeedFailure>,
    /// The coverage probes the template closes (a fault they need is off), with the reason:
    /// not applicable, not a gap ([`leasehold_sim::seeded::reachable`]).
    pub not_applicable: BTreeMap<Probe, String>,
}

impl CampaignRun {
    /// The seeds to run.
    pub fn seeds(mut self, seeds: Range<u64>) -> CampaignRun {
        self.campaign.seeds = seeds;
        self
    }

    /// Swarm testing: each seed draws its own subset of the template's faults and its own
    /// workload size.
    pub fn swarm(mut self) -> CampaignRun {
        self.campaign.swarm = true;
        self
    }

    /// Each seed draws whether the broker expires leases at their deadline or on the next
    /// fetch (the default, as `leasehold sim --expiry mixed`).
    pub fn expiry_mixed(mut self) -> CampaignRun {
        self.campaign.expiry_mixed = true;
        self
    }

    /// Every seed expires leases as the template says (`setup.expiry`), as `leasehold sim
    /// --expiry at_deadline` or `on_fetch`.
    pub fn expiry_of_template(mut self) -> CampaignRun {
        self.campaign.expiry_mixed = false;
        self
    }

    /// Worker threads (the results do not depend on it).
    pub fn threads(mut self, threads: usize) -> CampaignRun {
        self.campaign.threads = threads;
        self
    }

    /// The broker under test: a registered backend value ([`crate::backend()`] for a broker of
    /// one's own, or any [`leasehold_model::BackendFactory`] as
    /// `BackendKind::new(factory)`), which builds one broker per seed.
    pub fn backend(mut self, backend: BackendKind) -> CampaignRun {
        self.campaign.backend = backend;
        self
    }

    /// How the printed commands start (default `leasehold`): a suite's own build of the
    /// command line, which knows its backend (`cargo run -q -p my-queue --`).
    pub fn reproduce_with(mut self, program: impl Into<String>) -> CampaignRun {
        self.program = program.into();
        self
    }

    /// Runs seeds, in order, for at most `budget` of wall-clock time: the seeds under way when
    /// it is spent finish and no other starts. How many seeds ran depends on the machine; what
    /// each did does not, and [`Campaigned::command`] names the seeds that ran, which reproduce
    /// the summary and its hash. With an open range (`seeds(0..u64::MAX)`), a campaign that runs
    /// as many seeds as fit in the budget.
    pub fn for_at_most(mut self, budget: Duration) -> CampaignRun {
        self.budget = Some(budget);
        self
    }

    /// Where the smallest failing seed is written (default [`OUT_DEFAULT`]).
    pub fn out(mut self, dir: impl AsRef<Path>) -> CampaignRun {
        self.out = dir.as_ref().to_path_buf();
        self
    }

    fn command(&self) -> String {
        format!(
            "{} sim --seeds {} {}{}",
            self.program,
            self.campaign.seeds_text(),
            self.campaign.recipe(),
            self.campaign.backend.flags()
        )
    }

    /// Runs the campaign; saves and re-runs its smallest failing seed. A template the
    /// simulator refuses, a backend that cannot run it, or a file that cannot be written, is
    /// an [`Error`].
    pub fn run(self) -> Result<Campaigned, Error> {
        let c = &self.campaign;
        if c.threads == 0 || c.threads > THREADS_MAX {
            return Err(Error(format!(
                "threads {}: must be between 1 and {THREADS_MAX}",
                c.threads
            )));
        }
        if c.seeds.is_empty() {
            return Err(Error(format!("seeds {:?}: empty", c.seeds)));
        }
        c.largest_setup()
            .validate()
            .map_err(|e| Error(e.to_string()))?;
        c.backend.check(&c.template).map_err(Error)?;
        let (ran, budget_spent) = run_within(c, &|_| {}, self.budget, &AtomicBool::new(false));
        let ran_all = CampaignRun {
            campaign: c.first(ran.done),
            ..self
        };
        let failure = ran_all.smallest_failure(&ran.summary)?;
        Ok(Campaigned {
            backend: ran_all.campaign.backend.name().to_string(),
            replay_with: format!("{} replay", ran_all.program),
            backend_flags: ran_all.campaign.backend.flags(),
            command: ran_all.command(),
            summary: ran.summary,
            budget_spent,
            failure,
            not_applicable: unreachable_probes(&ran_all.campaign.template),
        })
    }

    fn smallest_failure(&self, summary: &Summary) -> Result<Option<SeedFailure>, Error> {
        let Some(first) = &summary.first_failure else {
            return Ok(None);
        };
        let seed = first.seed;
        let setup = self.campaign.setup(seed);
        let story = first_violation_story(&setup, &self.campaign.backend, TIMELINE_LINES_MAX);
        let Some(story) = story else {
            return Err(Error(format!(
                "seed {seed} did not fail again when re-run: the backend is not deterministic"
            )));
        };
        let violation = &story.found.violation;
        let note = format!("found by: {}", self.command());
        let scenario = scenario_of(&setup, Some(violation.invariant.id()), Some(note));
        let name = format!(
            "{}-{}-seed{seed}.toml",
            setup.variant, self.campaign.backend
        );
        let file = self.out.join(name);
        files::write_atomic(&file, to_toml(&scenario).as_bytes())?;
        Ok(Some(SeedFailure {
            seed,
            invariant: violation.invariant,
            violations: story
                .violations
                .iter()
                .map(|v| v.named(&setup.group_names, |_| None))
                .collect(),
            timeline: story.lines.iter().map(|l| format!("{l}\n")).collect(),
            timeline_from: story.first_t,
            file,
        }))
    }
}

/// Runs `campaign` until its last seed, `stop` is set, or `budget` (wall-clock time from now) is
/// spent, whichever comes first; returns what ran ([`Campaign::run_until`]) and whether the
/// budget stopped it ([`crate::budget::within`]).
pub fn run_within(
    campaign: &Campaign,
    progress: &(dyn Fn(Tally) + Sync),
    budget: Option<Duration>,
    stop: &AtomicBool,
) -> (Ran, bool) {
    let (ran, spent) = crate::budget::within(budget, stop, || campaign.run_until(progress, stop));
    let spent = spent && ran.done < campaign.shard_len();
    (ran, spent)
}

impl Campaigned {
    /// The command that replays the smallest failing seed's file on the same backend.
    pub fn replay_command(&self, failure: &SeedFailure) -> String {
        format!(
            "{} {}{}",
            self.replay_with,
            failure.file.display(),
            self.backend_flags
        )
    }

    /// The failure to print for the smallest failing seed.
    pub fn failure(&self, failure: &SeedFailure) -> Failure {
        Failure {
            verdict: format!(
                "campaign on {}: seed {} VIOLATED {} {} ({} of {} seeds failed; campaign: {})",
                self.backend,
                failure.seed,
                failure.invariant.id(),
                failure.invariant.name(),
                self.summary.seeds_failed,
                self.summary.seeds_run,
                self.command
            ),
            violations: failure.violations.clone(),
            timeline: if failure.timeline_from == 0 {
                failure.timeline.clone()
            } else {
                format!(
                    "… (t0..t{} not shown: the file replays them)\n{}",
                    failure.timeline_from, failure.timeline
                )
            },
            file: Some(failure.file.display().to_string()),
            command: self.replay_command(failure),
        }
    }

    /// The coverage probes no seed reached that the template leaves open: the paths this mix
    /// never tested, in report order.
    pub fn never_reached(&self) -> Vec<Probe> {
        self.summary
            .coverage
            .never_reached_open(&self.not_applicable)
    }

    /// Panics unless every coverage probe the template leaves open was reached by some seed
    /// (a `sometimes` assertion over the campaign: a clean campaign that never took a path
    /// says nothing about it), naming the probes missed and the campaign's command.
    pub fn assert_covers(&self) -> &Campaigned {
        let never = self.never_reached();
        if never.is_empty() {
            return self;
        }
        let names: Vec<String> = never
            .iter()
            .map(|p| format!("{} ({})", p.name(), p.describe()))
            .collect();
        Failure {
            verdict: format!(
                "campaign on {}: {} coverage probe(s) never reached: {}",
                self.backend,
                never.len(),
                names.join(", ")
            ),
            violations: Vec::new(),
            timeline: String::new(),
            file: None,
            command: self.command.clone(),
        }
        .panic()
    }

    /// Panics if any seed broke an invariant: with the smallest failing seed's verdict,
    /// timeline, file and the command that replays it.
    pub fn assert_clean(&self) -> &Campaigned {
        if let Some(failure) = &self.failure {
            self.failure(failure).panic();
        }
        self
    }

    /// The smallest failing seed, which must have broken `invariant`; panics (with the
    /// campaign's command) otherwise.
    pub fn assert_fails(&self, invariant: Invariant) -> &SeedFailure {
        match &self.failure {
            Some(failure) if failure.invariant == invariant => failure,
            other => Failure {
                verdict: format!(
                    "campaign on {}: {} {} was expected to be violated; smallest failure: {}",
                    self.backend,
                    invariant.id(),
                    invariant.name(),
                    other
                        .as_ref()
                        .map_or("none".to_string(), |f| f.invariant.id().to_string())
                ),
                violations: Vec::new(),
                timeline: String::new(),
                file: None,
                command: self.command.clone(),
            }
            .panic(),
        }
    }
}
