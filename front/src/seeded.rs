//! One seed of the simulator, as the command line reports it: a seeded scenario file loaded and
//! made ready on a backend, a run's summary (text and JSON), its file written, and the seeds
//! and budget a campaign's flags name.

use crate::files;
use crate::Error;
use leasehold_model::Invariant;
use leasehold_sim::parse::scenario_of_toml;
use leasehold_sim::scenario::Scenario;
use leasehold_sim::seeded::campaign::{recipe, Pinned};
use leasehold_sim::seeded::seeded_file::{load_seeded, parse_toml, scenario_of, to_toml};
use leasehold_sim::seeded::{BackendKind, RunOutcome, Setup};
use leasehold_sim::timeline;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// When `path` holds a seeded scenario (`seed = N`, no steps): the file, its validated setup
/// and the backend to run it on. `Ok(None)` for a scripted scenario.
pub fn seeded_setup(
    path: &Path,
    backend: &BackendKind,
) -> Result<Option<(Scenario, Setup, BackendKind)>, Error> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| Error(format!("{name}: cannot read: {e}")))?;
    let Ok(scenario) = parse_toml(&text) else {
        return Ok(None); // Not ours to report: the scripted parser locates the error.
    };
    if scenario.seed.is_none() {
        return Ok(None);
    }
    let kind = backend.clone();
    let setup = load_seeded(&text, &name).map_err(Error)?;
    kind.check(&setup)
        .map_err(|e| Error(format!("{name}: {e}")))?;
    Ok(Some((scenario, setup, kind)))
}

/// Reads a seeded scenario file and its validated setup; an error is one line with the file,
/// line and field.
pub fn load_seeded_file(path: &Path) -> Result<(Scenario, Setup), Error> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| Error(format!("{name}: cannot read: {e}")))?;
    let scenario = scenario_of_toml(&text, &name).map_err(|e| Error(e.to_string()))?;
    let setup = load_seeded(&text, &name).map_err(Error)?;
    Ok((scenario, setup))
}

/// A streamed run's violations as `violation_text` words them, each at its `tN`.
pub fn streamed_violations(outcome: &RunOutcome) -> Vec<String> {
    let (Some(recorded), Some(streamed)) = (&outcome.recorded, &outcome.streamed) else {
        return Vec::new();
    };
    recorded
        .trace
        .violations
        .iter()
        .zip(streamed.violation_t.iter().zip(&streamed.violation_told))
        .map(|(found, (&t, told))| timeline::violation_text_at(found, t, told))
        .collect()
}

/// Parses `A..B`, or `A..` (open: up to 2^64 − 1, excluded).
pub fn parse_seeds(text: &str) -> Result<std::ops::Range<u64>, Error> {
    let bad = || {
        Error(format!(
            "--seeds: '{text}' is not a range A..B with A < B, or A.."
        ))
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = match b.trim() {
        "" => u64::MAX,
        b => b.parse().map_err(|_| bad())?,
    };
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// A single seed's scenario file, written: what it expects, and where it is.
pub struct SavedSeed {
    /// `I2 single-holder`, or that it expects every invariant to hold.
    pub what: String,
    /// The file.
    pub path: PathBuf,
    /// The flags that replay it on the backend it ran on (none for the pure broker).
    pub backend_flags: String,
}

/// Writes a single seed's scenario file under `out`: one that expects the invariant it broke, or (`None`,
/// with `--save`) one that expects every invariant to hold.
pub fn save_seed(
    out: &Path,
    setup: &Setup,
    broken: Option<Invariant>,
    backend: &BackendKind,
) -> Result<SavedSeed, Error> {
    let note = format!(
        "found by: leasehold sim --seed {} {}{}",
        setup.seed,
        recipe(setup, false, Some(setup.expiry), Pinned::default()),
        backend.flags_named()
    );
    let scenario = scenario_of(setup, broken.map(Invariant::id), Some(note));
    let stem = format!("{}-seed{}", setup.variant, setup.seed);
    let path = files::write_new(out, &stem, "toml", to_toml(&scenario).as_bytes())?;
    let what = match broken {
        Some(invariant) => format!("{} {}", invariant.id(), invariant.name()),
        None => "saved (expects every invariant to hold)".to_string(),
    };
    Ok(SavedSeed {
        what,
        path,
        backend_flags: backend.flags(),
    })
}

/// One seed's printed summary: its end, bound, violations, duplicates, speed, hash and file.
pub fn seed_text(
    setup: &Setup,
    outcome: &RunOutcome,
    wall: Duration,
    saved: Option<&SavedSeed>,
) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let mut line = |line: String| {
        let _ = writeln!(text, "{line}");
    };
    line(format!(
        "seed {}: {} after {} steps, {} simulated ms, {} records",
        setup.seed, outcome.end, outcome.steps, outcome.sim_ms, outcome.records
    ));
    if let Some(bound) = outcome.inconclusive {
        line(format!("inconclusive: {bound} reached (a bound, not a verdict: no invariant is judged violated by it)"));
    }
    for violation in &outcome.violations {
        line(format!(
            "  {}",
            violation.named(&setup.group_names, |_| None)
        ));
    }
    line(format!(
        "duplicates: {} handler runs, {} world writes, {} ghost writes",
        outcome.duplicate_runs, outcome.duplicate_writes, outcome.ghost_writes
    ));
    if outcome.at_most_once_losses > 0 {
        line(format!(
            "at-most-once: {} events acked without a completed handler ({}'s documented guarantee, not a protocol failure)",
            outcome.at_most_once_losses, setup.policy
        ));
    }
    let secs = wall.as_secs_f64().max(1e-6);
    line(format!(
        "speed: {:.0} steps/s, simulated/wall {:.0}x",
        outcome.steps as f64 / secs,
        outcome.sim_ms as f64 / 1000.0 / secs
    ));
    line(format!("trace hash {:016x}", outcome.trace_hash));
    if let Some(saved) = saved {
        let path = saved.path.display();
        line(format!(
            "{}: replay with: leasehold replay {path}{}",
            saved.what, saved.backend_flags
        ));
    }
    text
}

/// One seed's `--json` object: `header` is its command, `saved` the file it was written to
/// (`null` when none was).
pub fn seed_json(
    header: &str,
    setup: &Setup,
    outcome: &RunOutcome,
    wall: Duration,
    saved: Option<&SavedSeed>,
) -> serde_json::Value {
    let coverage: serde_json::Map<String, serde_json::Value> = outcome
        .hits
        .iter()
        .map(|(probe, count)| (probe.name().to_string(), count.into()))
        .collect();
    serde_json::json!({
        "command": header,
        "variant": setup.variant.name(),
        "seed": setup.seed,
        "faults": setup.faults.summary(),
        "trace_hash": format!("{:016x}", outcome.trace_hash),
        "steps": outcome.steps,
        "records": outcome.records,
        "sim_ms": outcome.sim_ms,
        "end": outcome.end,
        "inconclusive": outcome.inconclusive.map(|b| b.name()),
        "violations": outcome.violations.iter().map(|v| serde_json::json!({
            "invariant": v.invariant.id(),
            "name": v.invariant.name(),
            "step": v.step,
            "detail": v.detail,
            "told": v.named(&setup.group_names, |_| None),
        })).collect::<Vec<_>>(),
        "duplicate_runs": outcome.duplicate_runs,
        "duplicate_writes": outcome.duplicate_writes,
        "ghost_writes": outcome.ghost_writes,
        "at_most_once_losses": outcome.at_most_once_losses,
        "coverage": coverage,
        "wall_ms": wall.as_millis() as u64,
        "saved": saved.map(|saved| saved.path.display().to_string()),
    })
}
