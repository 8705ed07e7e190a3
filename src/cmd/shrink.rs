//! `leasehold shrink FILE`: minimises a failing scenario while it still breaks the same
//! invariant — a seeded one first in its size and faults, then as the run written as a
//! scripted scenario, step by step (delta debugging); a scripted one step by step at once —
//! writes the scripted result beside the input (never overwriting) and prints what shrank.

use crate::cli::{CmdResult, Status, UserError};
use crate::cmd::sim::progress::{catch_interrupts, stop_reason, within_budget, INTERRUPTED};
use crate::cmd::sim::{load_scenario, load_seeded_file};
use crate::files;
use leasehold_model::Invariant;
use leasehold_sim::scenario::{Expect, Scenario};
use leasehold_sim::seeded::ddmin;
use leasehold_sim::seeded::seeded_file::{run_setup, to_toml, BackendKind};
use leasehold_sim::seeded::shrink::{self, size, Shrunk};
use leasehold_sim::seeded::to_script::script_of;
use leasehold_sim::seeded::Setup;
use std::path::PathBuf;

/// Arguments of `leasehold shrink`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The failing scenario: seeded (as `leasehold sim` writes them) or scripted.
    pub file: PathBuf,
    /// Bound on the runs tried.
    #[arg(long, default_value_t = 500)]
    pub runs_max: u64,
    /// The broker: `pure`, `embedded` or `redis`.
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The Redis server (with `--backend redis`).
    #[command(flatten)]
    pub redis: crate::cmd::redis::RedisArgs,
    /// Where to write the result: a folder, or a file when it ends in `.toml` (default:
    /// `<input>-shrunk.toml` beside the input). An existing file is never replaced: the result
    /// then takes the next free name (`-2`, `-3`, …).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print one JSON object at the end (what shrank, the file written) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Stop trying smaller variations after this long (`90s`, `10m`), and write the smallest
    /// failing scenario found by then. Ctrl-C or SIGTERM stops it the same way; a second
    /// Ctrl-C quits at once.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_: Option<String>,
    /// `--for`, parsed.
    #[arg(skip)]
    pub budget: Option<std::time::Duration>,
}

/// What `shrink` tells: its lines as it goes, or (`--json`) one object at the end with the
/// same lines and the figures.
struct Out {
    json: bool,
    lines: Vec<String>,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl Out {
    fn say(&mut self, line: String) {
        if !self.json {
            println!("{line}");
        }
        self.lines.push(line);
    }

    fn set(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.fields.insert(key.to_string(), value.into());
    }
}

/// Runs the command.
pub fn run(mut args: Args) -> CmdResult {
    args.budget = args
        .for_
        .as_deref()
        .map(crate::cmd::sim::parse_budget)
        .transpose()?;
    catch_interrupts(
        "no other run starts; the smallest failing scenario found is written",
        false,
    );
    let mut out = Out {
        json: args.json,
        lines: Vec::new(),
        fields: serde_json::Map::new(),
    };
    out.set("file", args.file.display().to_string());
    let status = within_budget(args.budget, || shrink_file(&args, &mut out))?;
    if args.json {
        out.set("shrunk", status == Status::Ok);
        out.set("lines", out.lines.clone());
        println!("{}", serde_json::Value::Object(out.fields));
    }
    Ok(status)
}

fn shrink_file(args: &Args, out: &mut Out) -> CmdResult {
    let name = args.file.display().to_string();
    let backend = crate::cmd::sim::backend_kind(&args.backend)?;
    crate::cmd::redis::configure(&args.backend, &args.redis)?;
    let scenario = load_scenario(&args.file)?;
    if scenario.seed.is_none() {
        return shrink_script(args, &name, scenario, out);
    }
    let (_, setup) = load_seeded_file(&args.file)?;
    backend
        .check(&setup)
        .map_err(|e| UserError(format!("{name}: {e}")))?;
    if args.backend == "redis" {
        crate::cmd::redis::refuse_restarts(crate::cmd::redis::plan_restarts(&setup.faults))
            .map_err(|e| UserError(format!("{name}: {e}")))?;
    }
    let first_broken = || {
        let outcome = run_setup(&setup, backend, false);
        Ok(outcome.violations.first().map(|v| v.invariant))
    };
    let Some(target) = target(&name, &scenario, out, first_broken)? else {
        return Ok(Status::Failed);
    };
    out.set("seed", setup.seed);
    if !shrink::breaks(&setup, backend, target) {
        out.say(format!(
            "{name}: the run does not break {target}; nothing to shrink"
        ));
        return Ok(Status::Failed);
    }
    let shrunk = shrink_shown(&setup, backend, target, args);
    out.say(format!(
        "shrinking {name} (seed {}) while it breaks {target}: {} runs",
        setup.seed, shrunk.runs
    ));
    if shrunk.stopped {
        stopped(out, args.budget, shrunk.runs);
    }
    for change in &shrunk.changes {
        out.say(format!("  {change}"));
    }
    out.say(format!("size {} → {}", size(&setup), size(&shrunk.setup)));
    out.set("changes", shrunk.changes.clone());
    out.set("size_before", size(&setup));
    out.set("size_after", size(&shrunk.setup));
    let Some(story) = story(
        &name,
        &shrunk,
        backend,
        target,
        (args.runs_max, args.budget),
        out,
    )?
    else {
        return Ok(Status::Failed);
    };
    let path = write_beside(args, &story)?;
    out.say(format!("wrote {}", path.display()));
    out.set("written", path.display().to_string());
    Ok(Status::Ok)
}

/// [`shrink::shrink`], with a spinner on a terminal: the runs tried, the size reached and the
/// last change kept (a large seed's runs can take seconds each).
fn shrink_shown(setup: &Setup, backend: BackendKind, target: Invariant, args: &Args) -> Shrunk {
    let runs_max = args.runs_max;
    if !crate::cmd::sim::progress::bars_wanted(false) {
        return shrink::shrink_until(setup, backend, target, runs_max, &|_| {}, &INTERRUPTED);
    }
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let progress = |now: &Shrunk| {
        let last = now.changes.last().map_or("none yet", String::as_str);
        spinner.set_message(format!(
            "shrinking: run {} of at most {runs_max} · size {} · last change kept: {last}",
            now.runs + 1,
            size(&now.setup)
        ));
    };
    let shrunk = shrink::shrink_until(setup, backend, target, runs_max, &progress, &INTERRUPTED);
    spinner.finish_and_clear();
    shrunk
}

/// The end of a written file's note when the search stopped early: `; stopped early
/// (interrupted): smaller may exist`.
fn stopped_note(stopped: bool, budget: Option<std::time::Duration>) -> String {
    if stopped {
        format!(
            "; stopped early ({}): smaller may exist",
            stop_reason(budget)
        )
    } else {
        String::new()
    }
}

/// Says (and sets in `--json`) that the search stopped early, after `runs` runs.
fn stopped(out: &mut Out, budget: Option<std::time::Duration>, runs: u64) {
    let reason = stop_reason(budget);
    out.say(format!(
        "stopped early ({reason}) after {runs} runs: the smallest failing scenario found by then follows"
    ));
    out.set("stopped", reason);
}

/// A scripted scenario that breaks an invariant, minimised by delta debugging on the pure
/// broker (steps, then the workers, groups and events it does not need) while it breaks the
/// same one: the invariant its `[expect]` names, else the first it breaks.
fn shrink_script(args: &Args, name: &str, scenario: Scenario, out: &mut Out) -> CmdResult {
    if args.backend != "pure" {
        return Err(UserError(format!(
            "{name}: a scripted scenario shrinks on the pure broker (--backend pure); replay the result on {} to compare",
            args.backend
        )));
    }
    // Validated as `replay` reads it: a bad file is its one-line error.
    crate::cmd::replay::load(&args.file)?;
    let first_broken = || {
        let replay = ddmin::replay(&scenario, name).map_err(UserError)?;
        Ok(replay
            .violations
            .first()
            .and_then(|v| Invariant::parse(v.id)))
    };
    let Some(target) = target(name, &scenario, out, first_broken)? else {
        return Ok(Status::Failed);
    };
    if !ddmin::breaks(&scenario, target) {
        out.say(format!(
            "{name}: the run does not break {target}; nothing to shrink"
        ));
        return Ok(Status::Failed);
    }
    out.say(format!("shrinking {name} while it breaks {target}"));
    let runs_max = args.runs_max.saturating_mul(10);
    let minimized = ddmin::minimize_until(&scenario, target, runs_max, &INTERRUPTED);
    if minimized.stopped {
        stopped(out, args.budget, minimized.runs);
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
        stopped_note(minimized.stopped, args.budget)
    ));
    if !replays_as_written(out, name, &story, minimized.steps_before, minimized.runs)? {
        return Ok(Status::Failed);
    }
    let path = write_beside(args, &story)?;
    out.say(format!("wrote {}", path.display()));
    out.set("written", path.display().to_string());
    Ok(Status::Ok)
}

/// The invariant to shrink for: the one the file's `[expect]` names, else the first the run
/// breaks (`first_broken`, run only then). `None`, said, when the run breaks none.
fn target(
    name: &str,
    scenario: &Scenario,
    out: &mut Out,
    first_broken: impl FnOnce() -> Result<Option<Invariant>, UserError>,
) -> Result<Option<Invariant>, UserError> {
    let wanted = scenario.expect.as_ref().and_then(|e| e.violated.as_deref());
    let target = match wanted {
        Some(id) => Some(
            Invariant::parse(id)
                .ok_or_else(|| UserError(format!("{name}: expect.violated: unknown '{id}'")))?,
        ),
        None => first_broken()?,
    };
    match target {
        Some(target) => out.set("invariant", target.id()),
        None => out.say(format!("{name}: every invariant holds; nothing to shrink")),
    }
    Ok(target)
}

/// Tells how far delta debugging shrank the script (`steps_before` steps, `runs` replays)
/// and whether `story` replays as it is written (saying why not).
fn replays_as_written(
    out: &mut Out,
    name: &str,
    story: &Scenario,
    steps_before: usize,
    runs: u64,
) -> Result<bool, UserError> {
    let steps = story.steps.len();
    out.say(format!(
        "script {steps_before} → {steps} steps ({runs} replays)"
    ));
    out.set("steps_before", steps_before);
    out.set("steps_after", steps);
    out.set("replays", runs);
    let replay = ddmin::replay(story, name).map_err(UserError)?;
    if !replay.matched {
        out.say(format!(
            "{name}: the shrunk script does not replay as written: {:?}",
            replay.mismatches
        ));
    }
    Ok(replay.matched)
}

/// Writes `story` as `<stem>-shrunk.toml` beside the input, under `--out` when it is a
/// folder, or as `--out` when it names a `.toml` file; never over an existing file.
fn write_beside(args: &Args, story: &Scenario) -> Result<PathBuf, UserError> {
    let folder_of = |path: &std::path::Path| {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let stem_of = |path: &std::path::Path| {
        let stem = path.file_stem().and_then(|s| s.to_str());
        stem.unwrap_or("scenario").to_string()
    };
    let (dir, stem) = match &args.out {
        Some(file) if file.extension().is_some_and(|e| e == "toml") => {
            (folder_of(file), stem_of(file))
        }
        Some(dir) => (dir.clone(), format!("{}-shrunk", stem_of(&args.file))),
        None => (
            folder_of(&args.file),
            format!("{}-shrunk", stem_of(&args.file)),
        ),
    };
    files::write_new(&dir, &stem, "toml", to_toml(story).as_bytes())
}

/// The shrunk run as a scripted scenario: each broker-level step of the recorded run written
/// out, then steps removed while the replay still breaks `target` (delta debugging on the
/// pure broker). `None` (after saying why) when the script does not reproduce `target`.
fn story(
    name: &str,
    shrunk: &Shrunk,
    backend: BackendKind,
    target: Invariant,
    (runs_max, budget): (u64, Option<std::time::Duration>),
    out: &mut Out,
) -> Result<Option<Scenario>, UserError> {
    let outcome = run_setup(&shrunk.setup, backend, true);
    let recorded = outcome
        .recorded
        .as_ref()
        .ok_or_else(|| UserError(format!("{name}: the run was not recorded")))?;
    let changes = if shrunk.changes.is_empty() {
        "nothing could be switched off".to_string()
    } else {
        shrunk.changes.join(", ")
    };
    let seed = shrunk.setup.seed;
    let script = script_of(&shrunk.setup, recorded, target, String::new());
    if !ddmin::breaks(&script, target) {
        out.say(format!(
            "{name}: the run written as a script ({} steps) does not break {target}; nothing written",
            script.steps.len()
        ));
        return Ok(None);
    }
    let minimized =
        ddmin::minimize_until(&script, target, runs_max.saturating_mul(10), &INTERRUPTED);
    if minimized.stopped && !shrunk.stopped {
        stopped(out, budget, shrunk.runs + minimized.runs);
    }
    let mut story = minimized.scenario;
    story.name = format!(
        "{} breaks {target} (shrunk from seed {seed})",
        story.variant
    );
    story.note = Some(format!(
        "shrunk from {name} (seed {seed}): {changes}; the run written as a script of {} steps, delta debugging kept {} ({} replays){}",
        minimized.steps_before,
        story.steps.len(),
        minimized.runs,
        stopped_note(shrunk.stopped || minimized.stopped, budget)
    ));
    if !replays_as_written(out, name, &story, minimized.steps_before, minimized.runs)? {
        return Ok(None);
    }
    Ok(Some(story))
}
