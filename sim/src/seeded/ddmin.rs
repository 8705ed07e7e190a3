//! Shrinking a scripted scenario by delta debugging: remove steps — chunks first, then single
//! steps — while the replay still breaks the same invariant; then drop the workers, groups,
//! events and faults the story does not need, name the leases `L1`, `L2`, … in the order they
//! are fetched, and write each step's `expect` from the replay. Every candidate is replayed on
//! the backend the finding was made on (the reference broker, or a registered one); the search
//! is deterministic (same input, same result) when that backend is.

use super::backend_kind::BackendKind;
use crate::parse;
use crate::scenario::Scenario;
use crate::script::Replay;
use leasehold_model::Invariant;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// A minimised script and what it took.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The smallest script found that still breaks the target.
    pub scenario: Scenario,
    /// Steps before minimising.
    pub steps_before: usize,
    /// Replays tried.
    pub runs: u64,
    /// Whether a raised stop ended the search before it was done ([`minimize_until`]).
    pub stopped: bool,
}

/// Replays `scenario` on `kind` (written as TOML and parsed back, as a file would be). An
/// error is the parse error of a scenario the search made invalid, or why `kind` cannot run it.
pub fn replay(scenario: &Scenario, file: &str, kind: &BackendKind) -> Result<Replay, String> {
    let text = toml::to_string(scenario).map_err(|e| format!("{file}: {e}"))?;
    let script = parse::parse(&text, file).map_err(|e| e.to_string())?;
    kind.run_script(&script).map_err(|e| format!("{file}: {e}"))
}

/// Whether `scenario` is valid and its replay on `kind` breaks `target`.
pub fn breaks(scenario: &Scenario, kind: &BackendKind, target: Invariant) -> bool {
    replay(scenario, "candidate.toml", kind).is_ok_and(|r| r.violated(target))
}

/// The search: a target, a budget of replays and the replays spent.
struct Search<'a> {
    kind: &'a BackendKind,
    target: Invariant,
    runs_max: u64,
    runs: u64,
    stop: &'a AtomicBool,
    stopped: bool,
}

impl Search<'_> {
    /// Whether `candidate` still breaks the target (false once the budget is spent or the
    /// search stopped).
    fn keeps(&mut self, candidate: &Scenario) -> bool {
        if self.spent() {
            return false;
        }
        self.runs += 1;
        breaks(candidate, self.kind, self.target)
    }

    /// Whether no replay may start: the budget is spent or the search stopped. The loops ask
    /// before they build a candidate, so a stopped search ends at once instead of building
    /// (and cloning a long script for) every candidate it would have tried.
    fn spent(&mut self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            self.stopped = true;
        }
        self.stopped || self.runs >= self.runs_max
    }

    /// Delta debugging over the steps: removes each chunk in turn (halves, quarters, … single
    /// steps), keeping every removal that still breaks the target, until no single step can go.
    fn steps(&mut self, scenario: &mut Scenario) {
        let mut chunks = 2usize;
        while scenario.steps.len() >= 2 {
            let len = scenario.steps.len();
            let size = len.div_ceil(chunks);
            let mut removed = false;
            let mut start = 0;
            while start < scenario.steps.len() {
                if self.spent() {
                    return;
                }
                let end = (start + size).min(scenario.steps.len());
                let mut candidate = scenario.clone();
                candidate.steps.drain(start..end);
                if self.keeps(&candidate) {
                    *scenario = candidate;
                    removed = true;
                } else {
                    start = end;
                }
            }
            if removed {
                chunks = (chunks - 1).max(2);
            } else if size == 1 {
                return;
            } else {
                chunks = (chunks * 2).min(scenario.steps.len());
            }
        }
    }

    /// Keeps `candidate` in place of `scenario` when it still breaks the target.
    fn try_replace(&mut self, scenario: &mut Scenario, candidate: Scenario) -> bool {
        let kept = self.keeps(&candidate);
        if kept {
            *scenario = candidate;
        }
        kept
    }

    /// Removes each step's fault where the story does not need it.
    fn plainer_steps(&mut self, scenario: &mut Scenario) {
        for index in 0..scenario.steps.len() {
            if self.spent() {
                return;
            }
            if scenario.steps[index].fault.is_some() {
                let mut candidate = scenario.clone();
                candidate.steps[index].fault = None;
                self.try_replace(scenario, candidate);
            }
        }
    }

    /// Drops workers no step names, then each group and event the story does not need.
    fn smaller_config(&mut self, scenario: &mut Scenario) {
        let named: Vec<String> = scenario
            .steps
            .iter()
            .filter_map(|s| s.worker.clone())
            .collect();
        let mut candidate = scenario.clone();
        candidate.config.workers.retain(|w| named.contains(w));
        if candidate.config.workers.is_empty() {
            candidate.config.workers = scenario.config.workers[..1].to_vec();
        }
        let workers = candidate.config.workers.clone();
        candidate
            .config
            .clock_offset_ms
            .retain(|w, _| workers.contains(w));
        if candidate.config.workers != scenario.config.workers {
            self.try_replace(scenario, candidate);
        }
        self.one_group(scenario);
        while scenario.config.events > 1 {
            let mut candidate = scenario.clone();
            candidate.config.events -= 1;
            if !self.try_replace(scenario, candidate) {
                break;
            }
        }
    }

    /// When every fetch names the same group, tries that group alone.
    fn one_group(&mut self, scenario: &mut Scenario) {
        if scenario.config.groups.len() < 2 {
            return;
        }
        let mut used: Vec<String> = scenario
            .steps
            .iter()
            .filter(|s| s.op == "fetch")
            .filter_map(|s| s.group.clone())
            .collect();
        used.dedup();
        let group = match used.as_slice() {
            [only] => only.clone(),
            [] => scenario.config.groups[0].clone(),
            _ => return,
        };
        let mut candidate = scenario.clone();
        candidate.config.groups = vec![group];
        for step in &mut candidate.steps {
            step.group = None;
        }
        self.try_replace(scenario, candidate);
    }
}

/// Shrinks `scenario` (which must break `target` on `kind`) with at most `runs_max` replays.
pub fn minimize(
    scenario: &Scenario,
    kind: &BackendKind,
    target: Invariant,
    runs_max: u64,
) -> Minimized {
    minimize_until(scenario, kind, target, runs_max, &AtomicBool::new(false))
}

/// [`minimize`] until `stop` is raised: no replay starts after it, and the result is the
/// smallest script found by then (still breaking the target).
pub fn minimize_until(
    scenario: &Scenario,
    kind: &BackendKind,
    target: Invariant,
    runs_max: u64,
    stop: &AtomicBool,
) -> Minimized {
    let mut search = Search {
        kind,
        target,
        runs_max,
        runs: 0,
        stop,
        stopped: false,
    };
    let mut current = scenario.clone();
    search.steps(&mut current);
    search.smaller_config(&mut current);
    search.plainer_steps(&mut current);
    let renamed = rename_leases(&current);
    if search.keeps(&renamed) {
        current = renamed;
    }
    Minimized {
        scenario: with_expects(&current, kind).unwrap_or(current),
        steps_before: scenario.steps.len(),
        runs: search.runs,
        stopped: search.stopped,
    }
}

/// `scenario` with its leases named `L1`, `L2`, … in the order they are fetched (a fetch of
/// several leases binds `Ln`, `Ln-2`, …).
pub fn rename_leases(scenario: &Scenario) -> Scenario {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    let mut out = scenario.clone();
    let mut fetched = 0;
    for step in &mut out.steps {
        if let Some(bind) = &step.bind {
            fetched += 1;
            let new = format!("L{fetched}");
            let limit = step.limit.unwrap_or(1) as usize;
            for (old, new) in parse::bind_names(bind, limit)
                .into_iter()
                .zip(parse::bind_names(&new, limit))
            {
                map.insert(old, new);
            }
            step.bind = Some(new);
        }
        if let Some(lease) = &step.lease {
            if let Some(new) = map.get(lease) {
                step.lease = Some(new.clone());
            }
        }
    }
    out
}

/// `scenario` with each step's `expect` set to what its replay returned, so that the file
/// replays on `kind` as it is written. An error when it does not replay.
pub fn with_expects(scenario: &Scenario, kind: &BackendKind) -> Result<Scenario, String> {
    let replay = replay(scenario, "scenario.toml", kind)?;
    let mut out = scenario.clone();
    for result in &replay.steps {
        if let Some(step) = out.steps.get_mut(result.index) {
            step.expect = Some(result.actual.clone());
        }
    }
    Ok(out)
}
