//! `leasehold::shrink`: a failing scenario minimised while it still breaks the same invariant,
//! on the backend it failed on — a seeded one first in its size and faults, then as the run
//! written as a scripted scenario, step by step (delta debugging); a scripted one step by step
//! at once. The scripted result is written beside the input (never over an existing file).
//!
//! Both phases run on the backend given ([`Shrink::backend`]): a bug that only a user's queue
//! has stays in the result, which replays to the same invariant on that queue.
//!
//! ```
//! use leasehold_front as leasehold;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("stale-ack.toml");
//! std::fs::copy("../scenarios/mutant-unfenced-settle.toml", &file).unwrap();
//! let shrunk = leasehold::shrink(&file).run()?;
//! assert!(shrunk.written.is_some());
//! # Ok::<(), leasehold_front::Error>(())
//! ```

use crate::failure::PROGRAM;
use crate::{files, Error};
use leasehold_model::Invariant;
use leasehold_sim::parse::scenario_of_toml;
use leasehold_sim::scenario::{Expect, Scenario};
use leasehold_sim::seeded::ddmin;
use leasehold_sim::seeded::seeded_file::{load_seeded, run_setup, to_toml};
use leasehold_sim::seeded::shrink::{self as seeded, size, Shrunk};
use leasehold_sim::seeded::to_script::script_of;
use leasehold_sim::seeded::{BackendKind, Setup};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default bound on the seeded runs a shrink tries (`leasehold shrink --runs-max`); the
/// scripted phase may replay ten times as many.
pub const RUNS_MAX: u64 = 500;

/// What a shrink reports as it goes: the seeded phase's state after each run tried.
pub type ShrinkProgress = Box<dyn Fn(&Shrunk) + Send + Sync>;

/// A shrink to run, built by [`shrink()`].
pub struct Shrink {
    file: PathBuf,
    backend: BackendKind,
    runs_max: u64,
    out: Option<PathBuf>,
    budget: Option<Duration>,
    stop: Arc<AtomicBool>,
    progress: Option<ShrinkProgress>,
    program: String,
    /// When [`Shrink::run`] started: a stop after `budget` from it was the budget's.
    started: Option<Instant>,
}

/// A shrink of the failing scenario at `path` on the reference broker, at most [`RUNS_MAX`]
/// seeded runs, its result written beside the input.
pub fn shrink(path: impl AsRef<Path>) -> Shrink {
    Shrink {
        file: path.as_ref().to_path_buf(),
        backend: BackendKind::Pure,
        runs_max: RUNS_MAX,
        out: None,
        budget: None,
        stop: Arc::default(),
        progress: None,
        program: PROGRAM.to_string(),
        started: None,
    }
}

/// What a shrink did.
#[derive(Clone, Debug, Default)]
pub struct Shrinking {
    /// The input file, as given.
    pub file: String,
    /// The backend it shrank on.
    pub backend: String,
    /// The invariant it shrank for (`None`: the scenario breaks none).
    pub invariant: Option<Invariant>,
    /// A seeded input's seed.
    pub seed: Option<u64>,
    /// What the seeded phase switched off or made smaller, in order.
    pub changes: Vec<String>,
    /// A seeded input's size before and after the seeded phase.
    pub size: Option<(u64, u64)>,
    /// The script's steps before and after delta debugging.
    pub steps: Option<(usize, usize)>,
    /// The replays delta debugging tried.
    pub replays: Option<u64>,
    /// Why the search stopped early (`interrupted`, `time budget 90s spent`), if it did.
    pub stopped: Option<String>,
    /// What it says, one line each, in order (what `leasehold shrink` prints).
    pub lines: Vec<String>,
    /// The shrunk scripted scenario, when one replays to the invariant.
    pub scenario: Option<Scenario>,
    /// The file it was written to.
    pub written: Option<PathBuf>,
    /// The command that replays the written file on the same backend.
    pub command: Option<String>,
}

impl Shrinking {
    fn say(&mut self, line: String) {
        self.lines.push(line);
    }

    /// The JSON object `leasehold shrink --json` prints.
    pub fn json(&self) -> serde_json::Value {
        let mut fields = serde_json::Map::new();
        let mut set = |key: &str, value: serde_json::Value| {
            fields.insert(key.to_string(), value);
        };
        set("file", self.file.clone().into());
        set("backend", self.backend.clone().into());
        if let Some(invariant) = self.invariant {
            set("invariant", invariant.id().into());
        }
        if let Some(seed) = self.seed {
            set("seed", seed.into());
            set("changes", self.changes.clone().into());
        }
        if let Some((before, after)) = self.size {
            set("size_before", before.into());
            set("size_after", after.into());
        }
        if let Some((before, after)) = self.steps {
            set("steps_before", before.into());
            set("steps_after", after.into());
        }
        if let Some(replays) = self.replays {
            set("replays", replays.into());
        }
        if let Some(stopped) = &self.stopped {
            set("stopped", stopped.clone().into());
        }
        if let Some(written) = &self.written {
            set("written", written.display().to_string().into());
        }
        set("shrunk", self.written.is_some().into());
        set("lines", self.lines.clone().into());
        serde_json::Value::Object(fields)
    }
}

impl Shrink {
    /// The backend to shrink on (default: the reference broker): the one the finding was made
    /// on. Both phases run on it.
    pub fn backend(mut self, backend: BackendKind) -> Shrink {
        self.backend = backend;
        self
    }

    /// Bound on the seeded runs tried (default [`RUNS_MAX`]).
    pub fn runs_max(mut self, runs_max: u64) -> Shrink {
        self.runs_max = runs_max;
        self
    }

    /// Where to write the result: a folder, or a file when it ends in `.toml` (default:
    /// `<input>-shrunk.toml` beside the input). An existing file is never replaced: the result
    /// then takes the next free name (`-2`, `-3`, …).
    pub fn out(mut self, path: impl AsRef<Path>) -> Shrink {
        self.out = Some(path.as_ref().to_path_buf());
        self
    }

    /// Stops trying smaller variations after `budget` of wall-clock time; the smallest
    /// failing scenario found by then is written.
    pub fn for_at_most(mut self, budget: Duration) -> Shrink {
        self.budget = Some(budget);
        self
    }

    /// Stops trying smaller variations once `stop` is raised (e.g. by Ctrl-C), as at the
    /// time budget.
    pub fn stop_on(mut self, stop: Arc<AtomicBool>) -> Shrink {
        self.stop = stop;
        self
    }

    /// Called after each seeded run tried, with the smallest failing setup so far.
    pub fn progress(mut self, progress: impl Fn(&Shrunk) + Send + Sync + 'static) -> Shrink {
        self.progress = Some(Box::new(progress));
        self
    }

    /// How the printed replay command starts (default `leasehold`): a suite's own build of
    /// the command line, which knows its backend (`cargo run -q -p my-queue --`).
    pub fn reproduce_with(mut self, program: impl Into<String>) -> Shrink {
        self.program = program.into();
        self
    }

    /// Runs the shrink. An unreadable or malformed file, a backend that cannot run it, or a
    /// result that cannot be written, is an [`Error`]; a scenario that breaks nothing, or
    /// whose result does not replay, is a [`Shrinking`] with nothing written.
    pub fn run(mut self) -> Result<Shrinking, Error> {
        self.started = Some(Instant::now());
        let stop = Arc::clone(&self.stop);
        let (result, _) = crate::budget::within(self.budget, &stop, || self.shrink_file());
        let mut done = result?;
        if let Some(scenario) = &done.scenario {
            let path = self.write(scenario)?;
            done.say(format!("wrote {}", path.display()));
            done.command = Some(format!(
                "{} replay {}{}",
                self.program,
                path.display(),
                self.backend.flags()
            ));
            done.written = Some(path);
        }
        Ok(done)
    }

    fn shrink_file(&self) -> Result<Shrinking, Error> {
        let name = self.file.display().to_string();
        let text = std::fs::read_to_string(&self.file)
            .map_err(|e| Error(format!("{name}: cannot read: {e}")))?;
        let scenario = scenario_of_toml(&text, &name).map_err(|e| Error(e.to_string()))?;
        let mut done = Shrinking {
            file: name.clone(),
            backend: self.backend.name().to_string(),
            ..Shrinking::default()
        };
        if scenario.seed.is_none() {
            // Validated as `replay` reads it: a bad file is its one-line error.
            crate::replay::load(&self.file)?;
            self.shrink_script(&mut done, scenario)?;
            return Ok(done);
        }
        let setup = load_seeded(&text, &name).map_err(Error)?;
        self.backend
            .check(&setup)
            .map_err(|e| Error(format!("{name}: {e}")))?;
        let first_broken = || {
            let outcome = run_setup(&setup, &self.backend, false);
            Ok(outcome.violations.first().map(|v| v.invariant))
        };
        let Some(target) = target(&mut done, &scenario, first_broken)? else {
            return Ok(done);
        };
        done.seed = Some(setup.seed);
        if !seeded::breaks(&setup, &self.backend, target) {
            done.say(format!(
                "{name}: the run does not break {target}; nothing to shrink"
            ));
            return Ok(done);
        }
        let shrunk = self.shrink_seeded(&setup, target);
        done.say(format!(
            "shrinking {name} (seed {}) while it breaks {target}: {} runs",
            setup.seed, shrunk.runs
        ));
        if shrunk.stopped {
            self.stopped(&mut done, shrunk.runs);
        }
        for change in &shrunk.changes {
            done.say(format!("  {change}"));
        }
        let sizes = (size(&setup), size(&shrunk.setup));
        done.say(format!("size {} → {}", sizes.0, sizes.1));
        done.changes = shrunk.changes.clone();
        done.size = Some(sizes);
        done.scenario = self.story(&mut done, &shrunk, target)?;
        Ok(done)
    }

    fn shrink_seeded(&self, setup: &Setup, target: Invariant) -> Shrunk {
        let progress = |now: &Shrunk| {
            if let Some(progress) = &self.progress {
                progress(now);
            }
        };
        seeded::shrink_until(
            setup,
            &self.backend,
            target,
            self.runs_max,
            &progress,
            &self.stop,
        )
    }

    /// A scripted scenario that breaks an invariant, minimised by delta debugging on the
    /// backend (steps, then the workers, groups and events it does not need) while it breaks
    /// the same one: the invariant its `[expect]` names, else the first it breaks.
    fn shrink_script(&self, done: &mut Shrinking, scenario: Scenario) -> Result<(), Error> {
        let name = done.file.clone();
        // Replayed once as it is: a backend that cannot run it is the one-line error.
        let replay = ddmin::replay(&scenario, &name, &self.backend).map_err(Error)?;
        let first_broken = || {
            Ok(replay
                .violations
                .first()
                .and_then(|v| Invariant::parse(v.id)))
        };
        let Some(target) = target(done, &scenario, first_broken)? else {
            return Ok(());
        };
        if !ddmin::breaks(&scenario, &self.backend, target) {
            done.say(format!(
                "{name}: the run does not break {target}; nothing to shrink"
            ));
            return Ok(());
        }
        done.say(format!("shrinking {name} while it breaks {target}"));
        let runs_max = self.runs_max.saturating_mul(10);
        let minimized =
            ddmin::minimize_until(&scenario, &self.backend, target, runs_max, &self.stop);
        if minimized.stopped {
            self.stopped(done, minimized.runs);
        }
        let mut story = minimized.scenario;
        story.expect = Some(Expect {
            violated: Some(target.id().to_string()),
            ..Expect::default()
        });
        story.note = Some(format!(
            "shrunk from {name}: delta debugging kept {} of {} steps ({} replays){}",
            story.steps.len(),
            minimized.steps_before,
            minimized.runs,
            self.stopped_note(minimized.stopped)
        ));
        if self.replays_as_written(done, &story, minimized.steps_before, minimized.runs)? {
            done.scenario = Some(story);
        }
        Ok(())
    }

    /// The shrunk run as a scripted scenario: each broker-level step of the recorded run
    /// written out, then steps removed while the replay on the backend still breaks `target`.
    /// `None` (after saying why) when the script does not reproduce `target`.
    fn story(
        &self,
        done: &mut Shrinking,
        shrunk: &Shrunk,
        target: Invariant,
    ) -> Result<Option<Scenario>, Error> {
        let name = done.file.clone();
        let outcome = run_setup(&shrunk.setup, &self.backend, true);
        let recorded = outcome
            .recorded
            .as_ref()
            .ok_or_else(|| Error(format!("{name}: the run was not recorded")))?;
        let changes = if shrunk.changes.is_empty() {
            "nothing could be switched off".to_string()
        } else {
            shrunk.changes.join(", ")
        };
        let seed = shrunk.setup.seed;
        let script = script_of(&shrunk.setup, recorded, target, String::new());
        if !ddmin::breaks(&script, &self.backend, target) {
            done.say(format!(
                "{name}: the run written as a script ({} steps) does not break {target}; nothing written",
                script.steps.len()
            ));
            return Ok(None);
        }
        let runs_max = self.runs_max.saturating_mul(10);
        let minimized = ddmin::minimize_until(&script, &self.backend, target, runs_max, &self.stop);
        if minimized.stopped && !shrunk.stopped {
            self.stopped(done, shrunk.runs + minimized.runs);
        }
        let mut story = minimized.scenario;
        story.name = format!(
            "{} breaks {target} (shrunk from seed {seed})",
            story.variant
        );
        story.note = Some(format!(
            "shrunk from {name} (seed {seed}) on {}: {changes}; the run written as a script of {} steps, delta debugging kept {} ({} replays){}",
            self.backend,
            minimized.steps_before,
            story.steps.len(),
            minimized.runs,
            self.stopped_note(shrunk.stopped || minimized.stopped)
        ));
        if !self.replays_as_written(done, &story, minimized.steps_before, minimized.runs)? {
            return Ok(None);
        }
        Ok(Some(story))
    }

    /// Tells how far delta debugging shrank the script (`steps_before` steps, `runs` replays)
    /// and whether `story` replays on the backend as it is written (saying why not).
    fn replays_as_written(
        &self,
        done: &mut Shrinking,
        story: &Scenario,
        steps_before: usize,
        runs: u64,
    ) -> Result<bool, Error> {
        let steps = story.steps.len();
        done.say(format!(
            "script {steps_before} → {steps} steps ({runs} replays)"
        ));
        done.steps = Some((steps_before, steps));
        done.replays = Some(runs);
        let replay = ddmin::replay(story, &done.file, &self.backend).map_err(Error)?;
        if !replay.matched {
            done.say(format!(
                "{}: the shrunk script does not replay as written: {:?}",
                done.file, replay.mismatches
            ));
        }
        Ok(replay.matched)
    }

    /// Why the search stopped early: `time budget 90s spent` once the budget has passed since
    /// [`Shrink::run`] started, else `interrupted` (the stop flag was raised).
    fn stop_reason(&self) -> String {
        let spent = |budget: Duration| self.started.is_some_and(|s| s.elapsed() >= budget);
        let signalled = !self.budget.is_some_and(spent);
        crate::budget::stop_reason(self.budget, signalled)
    }

    /// The end of a written file's note when the search stopped early: `; stopped early
    /// (interrupted): smaller may exist`.
    fn stopped_note(&self, stopped: bool) -> String {
        if stopped {
            format!(
                "; stopped early ({}): smaller may exist",
                self.stop_reason()
            )
        } else {
            String::new()
        }
    }

    /// Says that the search stopped early, after `runs` runs.
    fn stopped(&self, done: &mut Shrinking, runs: u64) {
        let reason = self.stop_reason();
        done.say(format!(
            "stopped early ({reason}) after {runs} runs: the smallest failing scenario found by then follows"
        ));
        done.stopped = Some(reason);
    }

    /// Writes `story` as `<stem>-shrunk.toml` beside the input, under `out` when it is a
    /// folder, or as `out` when it names a `.toml` file; never over an existing file.
    fn write(&self, story: &Scenario) -> Result<PathBuf, Error> {
        let folder_of = |path: &Path| {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."))
        };
        let stem_of = |path: &Path| {
            let stem = path.file_stem().and_then(|s| s.to_str());
            stem.unwrap_or("scenario").to_string()
        };
        let (dir, stem) = match &self.out {
            Some(file) if file.extension().is_some_and(|e| e == "toml") => {
                (folder_of(file), stem_of(file))
            }
            Some(dir) => (dir.clone(), format!("{}-shrunk", stem_of(&self.file))),
            None => (
                folder_of(&self.file),
                format!("{}-shrunk", stem_of(&self.file)),
            ),
        };
        files::write_new(&dir, &stem, "toml", to_toml(story).as_bytes())
    }
}

/// The invariant to shrink for: the one the file's `[expect]` names, else the first the run
/// breaks (`first_broken`, run only then). `None`, said, when the run breaks none.
fn target(
    done: &mut Shrinking,
    scenario: &Scenario,
    first_broken: impl FnOnce() -> Result<Option<Invariant>, Error>,
) -> Result<Option<Invariant>, Error> {
    let wanted = scenario.expect.as_ref().and_then(|e| e.violated.as_deref());
    let target = match wanted {
        Some(id) => Some(
            Invariant::parse(id)
                .ok_or_else(|| Error(format!("{}: expect.violated: unknown '{id}'", done.file)))?,
        ),
        None => first_broken()?,
    };
    done.invariant = target;
    if target.is_none() {
        done.say(format!(
            "{}: every invariant holds; nothing to shrink",
            done.file
        ));
    }
    Ok(target)
}
