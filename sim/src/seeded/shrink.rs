//! Shrinking a failing seeded scenario: fewer events, workers, groups and faults, a shorter
//! safety phase, a plainer workload — each change kept only if the run still breaks the same
//! invariant. The seed stays; the result is again a seeded scenario that replays exactly.

use super::ratio::Ratio;
use super::run::RunOptions;
use super::seeded_file::{run_setup_with, BackendKind};
use super::setup::Setup;
use leasehold_model::Invariant;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shrunk setup and what changed.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing setup found.
    pub setup: Setup,
    /// The accepted changes, in order (`events 40 → 3`, `fault drop off`): successive cuts of
    /// the same quantity read as one (`events 2000 → 500`, `events 500 → 499` is
    /// `events 2000 → 499`).
    pub changes: Vec<String>,
    /// Runs tried.
    pub runs: u64,
    /// Whether a raised stop ended the search before it was done ([`shrink_until`]).
    pub stopped: bool,
}

/// Whether `setup` breaks `target`. The run ends at the step that breaks it: a large seed that
/// breaks it early costs the steps up to there, not the whole run.
pub fn breaks(setup: &Setup, kind: &BackendKind, target: Invariant) -> bool {
    let options = RunOptions {
        stop_at_violation_of: Some(target),
        ..RunOptions::default()
    };
    run_setup_with(setup, kind, &options)
        .violations
        .iter()
        .any(|v| v.invariant == target)
}

/// A measure of a setup's size: smaller is simpler (used to show that shrinking shrank).
pub fn size(setup: &Setup) -> u64 {
    u64::from(setup.events) * 100
        + setup.worker_names.len() as u64 * 10
        + setup.group_names.len() as u64 * 10
        + setup.faults.enabled().len() as u64 * 5
        + setup.workload.safety_ms_max / 1_000
}

/// Shrinks `setup` (which must break `target`) with at most `runs_max` runs.
pub fn shrink(setup: &Setup, kind: &BackendKind, target: Invariant, runs_max: u64) -> Shrunk {
    shrink_with(setup, kind, target, runs_max, &|_| {})
}

/// [`shrink`], telling `progress` where it stands before each run it tries: the runs so far,
/// the smallest failing setup yet and the changes that made it.
pub fn shrink_with(
    setup: &Setup,
    kind: &BackendKind,
    target: Invariant,
    runs_max: u64,
    progress: &dyn Fn(&Shrunk),
) -> Shrunk {
    shrink_until(
        setup,
        kind,
        target,
        runs_max,
        progress,
        &AtomicBool::new(false),
    )
}

/// [`shrink_with`] until `stop` is raised: no run starts after it, and the result is the
/// smallest failing setup found by then ([`Shrunk::stopped`]).
pub fn shrink_until(
    setup: &Setup,
    kind: &BackendKind,
    target: Invariant,
    runs_max: u64,
    progress: &dyn Fn(&Shrunk),
    stop: &AtomicBool,
) -> Shrunk {
    let mut shrunk = Shrunk {
        setup: setup.clone(),
        changes: Vec::new(),
        runs: 0,
        stopped: false,
    };
    loop {
        let mut kept = false;
        for candidate in smaller(&shrunk.setup) {
            if shrunk.runs >= runs_max {
                return shrunk;
            }
            if stop.load(Ordering::Relaxed) {
                shrunk.stopped = true;
                return shrunk;
            }
            progress(&shrunk);
            shrunk.runs += 1;
            if breaks(&candidate.0, kind, target) {
                shrunk.setup = candidate.0;
                note_change(&mut shrunk.changes, candidate.1);
                kept = true;
                break;
            }
        }
        if !kept {
            return shrunk;
        }
    }
}

/// Adds an accepted change to `changes`: a cut of the quantity the last change cut continues
/// it (`events 500 → 125` then `events 125 → 124` read `events 500 → 124`).
// Reachable for the crate's tests in tests/it.
#[doc(hidden)]
pub fn note_change(changes: &mut Vec<String>, change: String) {
    /// `name from → to`, split.
    fn cut(change: &str) -> Option<(&str, &str, &str)> {
        let (head, to) = change.split_once(" → ")?;
        let (name, from) = head.rsplit_once(' ')?;
        Some((name, from, to))
    }
    if let Some(last) = changes.last_mut() {
        if let (Some((name, from, to)), Some((next, again, further))) = (cut(last), cut(&change)) {
            if name == next && to == again {
                *last = format!("{name} {from} → {further}");
                return;
            }
        }
    }
    changes.push(change);
}

/// The smaller variations of `setup` a shrink tries, the boldest first, each with its
/// description. A shrink that ends within its runs ends at a setup none of whose variations
/// breaks the target.
pub fn smaller(setup: &Setup) -> Vec<(Setup, String)> {
    let mut out = Vec::new();
    let events = setup.events;
    for fewer in [1, events / 4, events / 2, events - 1] {
        if fewer >= 1 && fewer < events {
            let mut s = setup.clone();
            s.events = fewer;
            out.push((s, format!("events {events} → {fewer}")));
        }
    }
    let workers = setup.worker_names.len();
    for fewer in [1, workers / 2, workers - 1] {
        if fewer >= 1 && fewer < workers {
            let mut s = setup.clone();
            s.worker_names.truncate(fewer);
            s.clock_offset_ms.truncate(fewer);
            out.push((s, format!("workers {workers} → {fewer}")));
        }
    }
    let groups = setup.group_names.len();
    if groups > 1 {
        let mut s = setup.clone();
        s.group_names.truncate(groups - 1);
        out.push((s, format!("groups {groups} → {}", groups - 1)));
    }
    for fault in setup.faults.enabled() {
        let mut s = setup.clone();
        *s.faults.ratio_mut(fault) = Ratio::ZERO;
        out.push((s, format!("fault {} off", fault.name())));
    }
    let safety = setup.workload.safety_ms_max;
    for shorter in [safety / 4, safety / 2] {
        if shorter > 0 && shorter < safety {
            let mut s = setup.clone();
            s.workload.safety_ms_max = shorter;
            out.push((s, format!("safety_ms_max {safety} → {shorter}")));
        }
    }
    let w = &setup.workload;
    type Plainer = fn(&mut Setup);
    let plain: [(&str, Ratio, Plainer); 5] = [
        ("poison", w.poison, |s| s.workload.poison = Ratio::ZERO),
        ("long_handler", w.long_handler, |s| {
            s.workload.long_handler = Ratio::ZERO
        }),
        ("outcome_ack", w.outcome_ack, |s| {
            s.workload.outcome_ack = Ratio::ZERO
        }),
        ("outcome_nack", w.outcome_nack, |s| {
            s.workload.outcome_nack = Ratio::ZERO
        }),
        ("outcome_reject", w.outcome_reject, |s| {
            s.workload.outcome_reject = Ratio::ZERO
        }),
    ];
    for (name, ratio, apply) in plain {
        if !ratio.is_zero() {
            let mut s = setup.clone();
            apply(&mut s);
            out.push((s, format!("workload {name} off")));
        }
    }
    out
}
