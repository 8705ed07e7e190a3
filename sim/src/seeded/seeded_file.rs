//! Seeded scenario files: a [`Setup`] from a scenario's `seed`, `[config]`, `[workload]` and
//! `[faults]`, and back, so a failing seed is saved as a file that replays byte for byte.

use super::prng::Draws;
use super::run::{RunOptions, RunOutcome};
use super::setup::{Setup, SetupError};
use crate::engine::Expiry;
use crate::recorder::TimelineSink;
use crate::scenario::{parse_trace_hash, Config, Expect, Scenario};
use crate::trace::Found;
use leasehold_model::{AckPolicy, Variant};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

pub use super::backend_kind::BackendKind;

/// Runs `setup` on a fresh broker of `kind`; records the run (its timeline text and event log)
/// when `record`.
///
/// # Panics
/// When `kind` cannot run `setup`: callers check [`BackendKind::check`] first.
pub fn run_setup(setup: &Setup, kind: &BackendKind, record: bool) -> RunOutcome {
    let options = RunOptions {
        record,
        ..RunOptions::default()
    };
    kind.run(setup, &options)
}

/// Runs `setup` on a fresh broker of `kind` with `options` ([`BackendKind::run`]).
///
/// # Panics
/// When `kind` cannot run `setup`: callers check [`BackendKind::check`] first.
pub fn run_setup_with(setup: &Setup, kind: &BackendKind, options: &RunOptions) -> RunOutcome {
    kind.run(setup, options)
}

/// The end of a failing seed's timeline, up to its first violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstViolationStory {
    /// The first violation, where it was found.
    pub found: Found,
    /// The `tN` of the line it shows at.
    pub t: Option<usize>,
    /// Its detail, each cause it names by the `tN` of its line.
    pub told: String,
    /// The timeline lines up to that one (at most the `context` asked for), in order.
    pub lines: Vec<String>,
    /// The `tN` of the first of `lines` (0 when they start the run).
    pub first_t: usize,
    /// Every violation the run found by the step that found the first (a step may break
    /// several invariants).
    pub violations: Vec<leasehold_model::Violation>,
}

/// Runs `setup` on `kind` up to the step that finds its first violation, streaming its
/// timeline and keeping only its last lines: the `context` lines that end at the violation's
/// `tN`. Its memory follows the run's live set, wherever the violation is. `None` when the run
/// finds no violation.
///
/// # Panics
/// When `kind` cannot run `setup`: callers check [`BackendKind::check`] first.
pub fn first_violation_story(
    setup: &Setup,
    kind: &BackendKind,
    context: usize,
) -> Option<FirstViolationStory> {
    // A violation found after a restart that folds into a later line shows a few lines back.
    let keep = context.saturating_add(64);
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(keep)));
    let sink_tail = Arc::clone(&tail);
    let sink = TimelineSink(Arc::new(move |line: &str| {
        let mut tail = sink_tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == keep {
            tail.pop_front();
        }
        tail.push_back(line.to_string());
    }));
    let options = RunOptions {
        timeline: Some(sink),
        stop_at_first_violation: true,
        ..RunOptions::default()
    };
    let outcome = run_setup_with(setup, kind, &options);
    let streamed = outcome.streamed?;
    let found = outcome.recorded?.trace.violations.first()?.clone();
    let t = streamed.violation_t.first().copied().flatten();
    let told = streamed.violation_told.first().cloned().unwrap_or_default();
    let tail = std::mem::take(&mut *tail.lock().unwrap_or_else(|e| e.into_inner()));
    let first_kept = streamed.lines - tail.len();
    let last = t.unwrap_or(0);
    let lines: Vec<String> = ((last + 1).saturating_sub(context)..=last)
        .filter_map(|k| tail.get(k.checked_sub(first_kept)?).cloned())
        .collect();
    // The lines kept end at the violation's line.
    let first_t = (last + 1).saturating_sub(lines.len());
    Some(FirstViolationStory {
        found,
        t,
        told,
        lines,
        first_t,
        violations: outcome.violations,
    })
}

/// Runs a seeded scenario (one with `seed = S`) on `kind`, recorded. Errors name the field that
/// is wrong.
pub fn run_seeded(scenario: &Scenario, kind: &BackendKind) -> Result<RunOutcome, String> {
    let setup = setup_from_scenario(scenario).map_err(|e| e.to_string())?;
    kind.check(&setup)?;
    Ok(run_setup(&setup, kind, true))
}

/// The run a seeded scenario's text describes, validated; an error is one line with the file,
/// the line and the field (`x.toml:7:12: field `config.lease_ms`: …`).
pub fn load_seeded(text: &str, file: &str) -> Result<Setup, String> {
    let scenario = crate::parse::scenario_of_toml(text, file).map_err(|e| e.to_string())?;
    setup_from_scenario(&scenario).map_err(|e| {
        crate::parse::error_at_key(text, file, &e.path(), e.message.clone()).to_string()
    })
}

/// The run a seeded scenario describes, validated ([`Setup::validate`]).
pub fn setup_from_scenario(scenario: &Scenario) -> Result<Setup, SetupError> {
    let seed = scenario.seed.ok_or_else(|| {
        SetupError::new(
            "",
            "seed",
            "a seeded scenario needs 'seed = <number>'".to_string(),
        )
    })?;
    if !scenario.steps.is_empty() {
        return Err(SetupError::new(
            "",
            "step",
            "a scenario has either 'seed' or '[[step]]', not both".to_string(),
        ));
    }
    let variant = Variant::from_name(&scenario.variant).ok_or_else(|| {
        SetupError::new(
            "",
            "variant",
            format!(
                "unknown '{}' (one of {})",
                scenario.variant,
                Variant::names()
            ),
        )
    })?;
    let draws = match scenario.draws.as_deref() {
        // The seeded files written before `draws` existed were drawn as `gen_range`.
        None => Draws::GenRange,
        Some(name) => Draws::from_name(name).ok_or_else(|| {
            SetupError::new(
                "",
                "draws",
                format!(
                    "unknown '{name}' (expected one of {})",
                    Draws::ALL.map(Draws::name).join(", ")
                ),
            )
        })?,
    };
    let c = &scenario.config;
    let (policy, expiry, clock_offset_ms) = config_of(c)?;
    let setup = Setup {
        seed,
        variant,
        group_names: c.groups.clone(),
        worker_names: c.workers.clone(),
        events: c.events,
        lease_ms: c.lease_ms,
        max_attempts: c.max_attempts,
        policy,
        clock_offset_ms,
        expiry,
        workload: scenario.workload.clone().unwrap_or_default(),
        faults: scenario.faults.clone().unwrap_or_default(),
        draws,
    };
    setup.validate()?;
    let pinned = scenario
        .expect
        .as_ref()
        .and_then(|e| e.trace_hash.as_deref());
    if let Some(text) = pinned.filter(|text| parse_trace_hash(text).is_none()) {
        return Err(SetupError::new(
            "expect",
            "trace_hash",
            format!("malformed expect: trace_hash = '{text}' (expected 16 hex digits, as replay prints it)"),
        ));
    }
    Ok(setup)
}

/// The `[config]` fields a seeded run needs beyond sizes: the ack policy, the expiry mode, each
/// worker's fixed clock offset.
fn config_of(c: &Config) -> Result<(AckPolicy, Expiry, Vec<Option<i64>>), SetupError> {
    let policy = AckPolicy::from_name(&c.ack_policy).ok_or_else(|| {
        SetupError::new(
            "config",
            "ack_policy",
            format!(
                "unknown '{}' (nack_on_error, ack_always, ack_first, manual)",
                c.ack_policy
            ),
        )
    })?;
    for name in c.clock_offset_ms.keys() {
        if !c.workers.contains(name) {
            return Err(SetupError::new(
                "config",
                &format!("clock_offset_ms.{name}"),
                format!("unknown worker '{name}'"),
            ));
        }
    }
    let expiry = match c.expiry.as_deref() {
        None => Expiry::default(),
        Some(name) => Expiry::from_name(name).ok_or_else(|| {
            SetupError::new(
                "config",
                "expiry",
                format!("unknown '{name}' (expected one of at_deadline, on_fetch)"),
            )
        })?,
    };
    let clock_offset_ms = c
        .workers
        .iter()
        .map(|w| c.clock_offset_ms.get(w).copied())
        .collect();
    Ok((policy, expiry, clock_offset_ms))
}

/// The seeded scenario of `setup`, expecting `violated` (or that every invariant holds).
pub fn scenario_of(setup: &Setup, violated: Option<&str>, note: Option<String>) -> Scenario {
    let clock_offset_ms: BTreeMap<String, i64> = setup
        .worker_names
        .iter()
        .zip(&setup.clock_offset_ms)
        .filter_map(|(name, offset)| offset.map(|o| (name.clone(), o)))
        .collect();
    let expect = match violated {
        Some(id) => Expect {
            violated: Some(id.to_string()),
            ..Expect::default()
        },
        None => Expect {
            invariants: Some("hold".to_string()),
            ..Expect::default()
        },
    };
    Scenario {
        name: format!("sim {} seed {}", setup.variant, setup.seed),
        variant: setup.variant.name().to_string(),
        note,
        config: Config {
            groups: setup.group_names.clone(),
            events: setup.events,
            workers: setup.worker_names.clone(),
            lease_ms: setup.lease_ms,
            max_attempts: setup.max_attempts,
            ack_policy: setup.policy.name().to_string(),
            clock_offset_ms,
            expiry: (setup.expiry != Expiry::default()).then(|| setup.expiry.name().to_string()),
        },
        seed: Some(setup.seed),
        draws: Some(setup.draws.name().to_string()),
        workload: Some(setup.workload.clone()),
        faults: Some(setup.faults.clone()),
        steps: Vec::new(),
        expect: Some(expect),
    }
}

/// The TOML text of a scenario.
pub fn to_toml(scenario: &Scenario) -> String {
    toml::to_string(scenario).expect("a scenario always serialises")
}

/// Parses scenario text; an error is one line: `line:column: ` (and the field when known),
/// then what is wrong. [`crate::parse::scenario_of_toml`] names the file too.
pub fn parse_toml(text: &str) -> Result<Scenario, String> {
    crate::parse::scenario_of_toml(text, "").map_err(|e| {
        let field = e
            .field
            .map(|f| format!("field `{f}`: "))
            .unwrap_or_default();
        format!("{}:{}: {field}{}", e.line, e.column, e.message)
    })
}

/// Checks a seeded run against its scenario's `[expect]`; returns the mismatches (none: the
/// run matched). `violated = "I4"` matches when I4 is among the violations; `invariants =
/// "hold"` and a missing `[expect]` match only a run without violations. Fields that only a
/// scripted run can pin (`frontier`, `handler_runs`, …) are reported as not checked.
pub fn check_expect(scenario: &Scenario, outcome: &RunOutcome) -> Vec<String> {
    let mut mismatches = Vec::new();
    let expect = scenario.expect.clone().unwrap_or_default();
    let found: Vec<&str> = outcome
        .violations
        .iter()
        .map(|v| v.invariant.id())
        .collect();
    match &expect.violated {
        Some(id) => {
            let wanted = leasehold_model::Invariant::parse(id);
            if !outcome
                .violations
                .iter()
                .any(|v| Some(v.invariant) == wanted)
            {
                mismatches.push(format!(
                    "expected {id} to be violated; violated: {}",
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ));
            }
        }
        None => {
            if let Some(first) = outcome.violations.first() {
                mismatches.push(format!("expected every invariant to hold; {first}"));
            }
        }
    }
    let unchecked = [
        ("frontier", expect.frontier.is_some()),
        ("dead_letters", expect.dead_letters.is_some()),
        ("handler_calls", expect.handler_calls.is_some()),
        ("handler_runs", expect.handler_runs.is_some()),
        ("pending", expect.pending.is_some()),
        ("dead_letter_reasons", expect.dead_letter_reasons.is_some()),
    ];
    for (field, set) in unchecked {
        if set {
            mismatches.push(format!(
                "expect.{field} is not checked for a seeded scenario"
            ));
        }
    }
    let pinned = expect.trace_hash.as_deref().and_then(parse_trace_hash);
    mismatches.extend(crate::script::trace_hash_mismatch(
        pinned,
        outcome.trace_hash,
    ));
    mismatches
}
