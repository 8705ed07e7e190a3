//! `leasehold::check`: the model checker as a test call. Each counterexample is written as a
//! scripted scenario and replayed through the scenario executor, so a failed assertion prints
//! the timeline `leasehold replay FILE` prints, the file and the `leasehold check …` command.
//!
//! The check explores leasehold's reference broker, or a broker of one's own
//! ([`Check::broker`]): anything that implements [`CheckedBroker`]. Its counterexamples are
//! replayed on that same broker.

use crate::defaults::{COUNTEREXAMPLE_STATES_MAX, STATES_MAX};
use crate::failure::{Failure, PROGRAM};
use crate::files;
use crate::Error;
use leasehold_model::check::search::Progress;
use leasehold_model::check::{
    run_on, CheckConfig, CheckedBroker, Counterexample, Engine, Interrupt, LeaseModel, Limits,
    Options, Outcome, Report,
};
use leasehold_model::{Backend, BackendFactory, Broker, BrokerConfig, Invariant};
use leasehold_sim::counterexample;
use leasehold_sim::script::Replay;
use leasehold_sim::seeded::BackendKind;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Where the front door writes the scenarios it finds, unless told otherwise (relative to the
/// working folder: a package's root under `cargo test`).
pub const OUT_DEFAULT: &str = "target/leasehold";

/// A model check to run: a configuration, the search's options and the broker under test
/// (`B`, the reference [`Broker`] unless [`Check::broker`] names another). Built by
/// [`check`].
#[derive(Debug)]
pub struct Check<B = Broker> {
    config: CheckConfig,
    options: Options,
    out: PathBuf,
    budget: Option<Duration>,
    memory_bytes: Option<u64>,
    /// The name a user's broker is registered by (`None`: the reference broker).
    backend: Option<String>,
    /// A registered broker to explore instead of `B` ([`Check::on`]).
    registered: Option<CheckedBackend>,
    /// How the printed command starts.
    program: String,
    broker: PhantomData<fn() -> B>,
}

impl<B> Clone for Check<B> {
    fn clone(&self) -> Check<B> {
        Check {
            config: self.config.clone(),
            options: self.options.clone(),
            out: self.out.clone(),
            budget: self.budget,
            memory_bytes: self.memory_bytes,
            backend: self.backend.clone(),
            registered: self.registered.clone(),
            program: self.program.clone(),
            broker: PhantomData,
        }
    }
}

/// A model check of `config` (e.g. `CheckConfig::default_for(Variant::Fenced)`): symmetry
/// reduction on, [`crate::defaults::CHECK_THREADS`] threads, at most [`STATES_MAX`] states, scenarios under
/// [`OUT_DEFAULT`].
pub fn check(config: CheckConfig) -> Check {
    Check {
        config,
        options: Options {
            limits: Limits {
                states_max: STATES_MAX,
                threads: crate::defaults::CHECK_THREADS,
                ..Limits::default()
            },
            symmetry: true,
            counterexample_states_max: COUNTEREXAMPLE_STATES_MAX,
            ..Options::default()
        },
        out: PathBuf::from(OUT_DEFAULT),
        budget: None,
        memory_bytes: None,
        backend: None,
        registered: None,
        program: PROGRAM.to_string(),
        broker: PhantomData,
    }
}

/// A [`BackendKind`] that builds `B` as [`CheckedBroker::with_config`] does, registered as
/// `name`: the same broker for campaigns, replays, shrinks and the command line
/// (`leasehold::cli::main_with`) as for [`Check::broker`].
///
/// ```
/// use leasehold_front::{backend, model::Broker};
///
/// let pure_again = backend::<Broker>("pure-again");
/// assert_eq!(pure_again.name(), "pure-again");
/// ```
pub fn backend<B: CheckedBroker + 'static>(name: &str) -> BackendKind {
    BackendKind::Other(Arc::new(Native::<B>::new(name)))
}

/// A user's broker type as a registered value: its name, and `B` itself for the engines.
struct Native<B> {
    name: String,
    broker: PhantomData<fn() -> B>,
}

impl<B> Native<B> {
    fn new(name: &str) -> Native<B> {
        Native {
            name: name.to_string(),
            broker: PhantomData,
        }
    }
}

impl<B: CheckedBroker> BackendFactory for Native<B> {
    fn name(&self) -> &str {
        &self.name
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(B::with_config(config)))
    }
}

/// What the model checker does with a registered broker type: explore it, and replay a
/// counterexample's scenario on it.
trait ModelChecked: Send + Sync {
    fn run(
        &self,
        config: &CheckConfig,
        options: &Options,
        progress: Option<Progress<'_>>,
    ) -> Report;
    fn replay(&self, config: &CheckConfig, cx: &Counterexample)
        -> Result<(String, Replay), String>;
    fn unsupported(&self, config: &CheckConfig) -> Option<String>;
}

impl<B: CheckedBroker> ModelChecked for Native<B> {
    fn run(
        &self,
        config: &CheckConfig,
        options: &Options,
        progress: Option<Progress<'_>>,
    ) -> Report {
        run_on::<B>(config, options, progress)
    }

    fn replay(
        &self,
        config: &CheckConfig,
        cx: &Counterexample,
    ) -> Result<(String, Replay), String> {
        counterexample::replay(&LeaseModel::<B>::for_broker(config.clone()), cx)
    }

    fn unsupported(&self, config: &CheckConfig) -> Option<String> {
        leasehold_model::check::time_unsupported::<B>(config)
    }
}

/// A user's broker registered for every engine: the model checker (`leasehold check
/// --backend NAME` of a command line built with `leasehold::cli::main_with_checked`) as well
/// as campaigns, replays and shrinks ([`CheckedBackend::kind`]). Built by
/// [`checked_backend`]; cloning shares it.
#[derive(Clone)]
pub struct CheckedBackend {
    kind: BackendKind,
    checker: Arc<dyn ModelChecked>,
}

impl std::fmt::Debug for CheckedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CheckedBackend({})", self.name())
    }
}

/// `B` registered as `name` for the model checker and the simulator (see
/// [`CheckedBackend`]).
pub fn checked_backend<B: CheckedBroker + 'static>(name: &str) -> CheckedBackend {
    let native = Arc::new(Native::<B>::new(name));
    CheckedBackend {
        kind: BackendKind::Other(native.clone()),
        checker: native,
    }
}

impl CheckedBackend {
    /// The name it is registered by.
    pub fn name(&self) -> &str {
        self.kind.name()
    }

    /// The same broker for campaigns, replays, shrinks and `--backend NAME` of every command.
    pub fn kind(&self) -> BackendKind {
        self.kind.clone()
    }

    /// Why `config` cannot be checked on this broker, if it cannot (the timed model needs
    /// [`CheckedBroker::shift_clock`]).
    pub fn unsupported(&self, config: &CheckConfig) -> Option<String> {
        self.checker.unsupported(config)
    }

    /// Checks `config` on this broker (as [`leasehold_model::check::run_on`]).
    pub fn run(
        &self,
        config: &CheckConfig,
        options: &Options,
        progress: Option<Progress<'_>>,
    ) -> Report {
        self.checker.run(config, options, progress)
    }

    /// The scenario of `cx` and its replay on this broker (as
    /// [`leasehold_sim::counterexample::replay`]).
    pub fn replay(
        &self,
        config: &CheckConfig,
        cx: &Counterexample,
    ) -> Result<(String, Replay), String> {
        self.checker.replay(config, cx)
    }
}

/// One counterexample: its invariant, its length, and its scenario's replay.
#[derive(Clone, Debug)]
pub struct Found {
    /// The invariant it breaks.
    pub invariant: Invariant,
    /// Its number of model steps (the shortest within the bounds).
    pub steps: usize,
    /// The replay's timeline, `tN` lines.
    pub timeline: String,
    /// What the replay's oracle saw, one line each.
    pub violations: Vec<String>,
    /// The scenario file written.
    pub scenario: PathBuf,
    /// Whether the scenario replays to the same violation.
    pub replays: bool,
}

/// What a model check found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The broker explored: `None` for the reference broker, else the name a user's broker
    /// was registered by ([`Check::broker`]).
    pub backend: Option<String>,
    /// The model checker's report (verdicts, counts, outcome).
    pub report: Report,
    /// The command that runs the same check: `leasehold check --variant … …`, with
    /// `--backend NAME` for a user's broker (which a command line built with
    /// `leasehold::cli::main_with_checked` checks).
    pub command: String,
    /// One per violated invariant, as replayed scenarios.
    pub counterexamples: Vec<Found>,
    /// With a time or memory budget ([`Check::for_at_most`], [`Check::memory_at_most`]):
    /// whether one stopped the search (the report is then bounded).
    pub budget_spent: bool,
}

impl<B: CheckedBroker> Check<B> {
    /// The same check on the broker `Q` (any [`CheckedBroker`]: a queue of one's own),
    /// registered as `name` — the name a command line built with
    /// `leasehold::cli::main_with_checked` knows it by ([`checked_backend`]), which the
    /// failure's command gives to `check --backend`. Counterexamples are replayed on `Q`.
    pub fn broker<Q: CheckedBroker>(self, name: &'static str) -> Check<Q> {
        Check {
            config: self.config,
            options: self.options,
            out: self.out,
            budget: self.budget,
            memory_bytes: self.memory_bytes,
            backend: Some(name.to_string()),
            registered: None,
            program: self.program,
            broker: PhantomData,
        }
    }

    /// The same check on a registered broker ([`checked_backend`]): the value a command line
    /// built with `leasehold::cli::main_with_checked` holds, explored and replayed as
    /// [`Check::broker`] does with its type.
    pub fn on(mut self, broker: &CheckedBackend) -> Check<B> {
        self.backend = Some(broker.name().to_string());
        self.registered = Some(broker.clone());
        self
    }

    /// How the printed command starts (default `leasehold`): a suite's own build of the
    /// command line, which knows its broker (`cargo run -q -p my-queue --`).
    pub fn reproduce_with(mut self, program: impl Into<String>) -> Check<B> {
        self.program = program.into();
        self
    }

    /// Search threads (the verdicts do not depend on it).
    pub fn threads(mut self, threads: usize) -> Check<B> {
        self.options.limits.threads = threads;
        self
    }

    /// Stop with "bounded" after about this many generated states.
    pub fn max_states(mut self, states: u64) -> Check<B> {
        self.options.limits.states_max = states;
        self.options.counterexample_states_max = states.min(COUNTEREXAMPLE_STATES_MAX);
        self
    }

    /// Stops the search after `budget` of wall-clock time, as at `max_states`: the report is
    /// then bounded (never holds), and what the search found by then stands.
    pub fn for_at_most(mut self, budget: Duration) -> Check<B> {
        self.budget = Some(budget);
        self
    }

    /// Stops the search when the process's resident memory passes `bytes`, as at
    /// `max_states` (`leasehold check --max-memory`): a search that would run out of memory
    /// reports what it found instead of being killed.
    pub fn memory_at_most(mut self, bytes: u64) -> Check<B> {
        self.memory_bytes = Some(bytes);
        self
    }

    /// The search that explores the model (default [`Engine::Leasehold`]):
    /// [`Engine::Stateright`] runs the same model through stateright's checker, a cross-check
    /// of the state counts and verdicts. It cannot be stopped by [`Check::for_at_most`] or
    /// [`Check::memory_at_most`] (refused beside it), only by [`Check::max_states`].
    pub fn engine(mut self, engine: Engine) -> Check<B> {
        self.options.engine = engine;
        self
    }

    /// Search past the first violation, for every invariant the configuration can break.
    pub fn all_violations(mut self) -> Check<B> {
        self.options.beyond_first_violation = true;
        self
    }

    /// Stop at the first state that breaks an invariant (leasehold's engine, finite budgets):
    /// its shortest counterexample in the time the search takes to reach it; the invariants
    /// not found broken are not proven (the outcome is `violated`, or `holds` when the search
    /// ran to its end without finding one).
    pub fn first_violation(mut self) -> Check<B> {
        self.options.limits.first_violation = true;
        self
    }

    /// Where counterexample scenarios go (default [`OUT_DEFAULT`]).
    pub fn out(mut self, dir: impl AsRef<Path>) -> Check<B> {
        self.out = dir.as_ref().to_path_buf();
        self
    }

    /// Runs the check; writes a scenario per counterexample. A configuration the checker
    /// refuses, or a file that cannot be written, is an [`Error`].
    pub fn run(self) -> Result<Checked, Error> {
        self.config.validate().map_err(Error)?;
        let threads = self.options.limits.threads;
        if threads == 0 || threads > 64 {
            return Err(Error(format!(
                "threads {threads}: must be between 1 and 64"
            )));
        }
        if let Some(why) = self.options.unsupported(&self.config) {
            return Err(Error(why));
        }
        let time_refused = match &self.registered {
            Some(broker) => broker.unsupported(&self.config),
            None => leasehold_model::check::time_unsupported::<B>(&self.config),
        };
        if let Some(why) = time_refused {
            return Err(Error(format!(
                "{why} (implement it, or check untimed: `time: Time::Untimed`)"
            )));
        }
        if self.options.engine == Engine::Stateright
            && (self.budget.is_some() || self.memory_bytes.is_some())
        {
            return Err(Error(
                "the stateright engine cannot be stopped by a time or memory budget".to_string(),
            ));
        }
        let mut command = crate::check_report::command(
            &self.program,
            &self.config,
            self.backend.as_deref(),
            &self.options,
            self.options.beyond_first_violation,
        );
        if self.options.limits.states_max != STATES_MAX {
            command.push_str(&format!(" --max-states {}", self.options.limits.states_max));
        }
        if let Some(budget) = self.budget {
            command.push_str(&format!(" --for {}", humantime::format_duration(budget)));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut options = self.options.clone();
        if let Some(bytes) = self.memory_bytes {
            command.push_str(&format!(" --max-memory {bytes}"));
        }
        if self.budget.is_some() || self.memory_bytes.is_some() {
            options.limits.interrupt = Interrupt::on(Arc::clone(&stop));
        }
        let (report, spent) =
            crate::budget::within_limits(self.budget, self.memory_bytes, &stop, || {
                match &self.registered {
                    Some(broker) => broker.run(&self.config, &options, None),
                    None => leasehold_model::check::run_on::<B>(&self.config, &options, None),
                }
            });
        let budget_spent = spent.is_some() && report.interrupted;
        let model = LeaseModel::<B>::for_broker(self.config.clone());
        let prefix = self
            .backend
            .as_ref()
            .map(|b| format!("{b}-"))
            .unwrap_or_default();
        let counterexamples = report
            .counterexamples
            .iter()
            .map(|cx| {
                let replayed = match &self.registered {
                    Some(broker) => broker.replay(&self.config, cx),
                    None => counterexample::replay(&model, cx),
                };
                let (body, replay) = replayed
                    .map_err(|e| Error(format!("the counterexample for {}: {e}", cx.invariant)))?;
                let name = format!(
                    "{prefix}{}-check-{}.toml",
                    self.config.variant,
                    cx.invariant.id()
                );
                let scenario = self.out.join(name);
                files::write_atomic(&scenario, body.as_bytes())?;
                Ok(Found {
                    invariant: cx.invariant,
                    steps: cx.len(),
                    replays: replay.matched && replay.violated(cx.invariant),
                    timeline: replay.timeline.iter().map(|l| format!("{l}\n")).collect(),
                    violations: replay.violations.iter().map(|v| v.to_string()).collect(),
                    scenario,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Checked {
            backend: self.backend.clone(),
            report,
            command,
            counterexamples,
            budget_spent,
        })
    }
}

impl Checked {
    /// Whether every invariant holds (and every applicable sometimes property is reached).
    pub fn holds(&self) -> bool {
        self.report.outcome == Outcome::Holds
    }

    /// What was checked: the variant, and the user's broker if one was.
    fn subject(&self) -> String {
        match &self.backend {
            None => self.report.config.variant.to_string(),
            Some(backend) => format!("{} on {backend}", self.report.config.variant),
        }
    }

    /// The failure to print for `found`: its command reruns the check.
    pub fn failure(&self, found: &Found) -> Failure {
        Failure {
            verdict: format!(
                "check of {}: VIOLATED {} {} ({} model steps)",
                self.subject(),
                found.invariant.id(),
                found.invariant.name(),
                found.steps
            ),
            violations: found.violations.clone(),
            timeline: found.timeline.clone(),
            file: Some(found.scenario.display().to_string()),
            command: self.command.clone(),
        }
    }

    /// Panics unless every invariant holds: with the first counterexample's verdict,
    /// timeline, scenario file and the command that reproduces it.
    pub fn assert_holds(&self) -> &Checked {
        if let Some(found) = self.counterexamples.first() {
            self.failure(found).panic();
        }
        if !self.holds() {
            Failure {
                verdict: if self.budget_spent {
                    format!(
                        "check of {}: {:?}, not proven: its time or memory budget stopped the search after {} generated states",
                        self.subject(), self.report.outcome, self.report.counts.generated
                    )
                } else {
                    format!("check of {}: {:?}, not proven", self.subject(), self.report.outcome)
                },
                violations: Vec::new(),
                timeline: String::new(),
                file: None,
                command: self.command.clone(),
            }
            .panic();
        }
        self
    }

    /// The counterexample of `invariant`; panics (with the command) if the check did not
    /// find one.
    pub fn assert_violates(&self, invariant: Invariant) -> &Found {
        match self
            .counterexamples
            .iter()
            .find(|f| f.invariant == invariant)
        {
            Some(found) => found,
            None => Failure {
                verdict: format!(
                    "check of {}: {} {} was expected to be violated, and was not ({:?})",
                    self.subject(),
                    invariant.id(),
                    invariant.name(),
                    self.report.outcome
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
