//! A found seed converted to a scripted scenario replays to the same first violated invariant,
//! and delta debugging shrinks it without losing that violation, deterministically.

use leasehold_model::Invariant;
use leasehold_sim::seeded::ddmin::{self, minimize};
use leasehold_sim::seeded::seeded_file::to_toml;
use leasehold_sim::seeded::seeded_file::{load_seeded, run_setup};
use leasehold_sim::seeded::to_script::script_of;
use leasehold_sim::seeded::BackendKind;
use std::path::PathBuf;

fn found_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/found");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/found exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && !is_story(p))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no seeded findings under {}",
        dir.display()
    );
    files
}

/// A scripted story written by `shrink` next to a seeded finding.
fn is_story(path: &std::path::Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains("[[step]]"))
}

/// The converted script of a found file and the invariant its seeded run broke first.
fn converted(path: &PathBuf) -> (leasehold_sim::scenario::Scenario, Invariant) {
    let text = std::fs::read_to_string(path).expect("readable");
    let setup = load_seeded(&text, &path.display().to_string()).expect("a seeded finding");
    let outcome = run_setup(&setup, &BackendKind::Pure, true);
    let first = outcome
        .violations
        .first()
        .expect("a finding breaks an invariant");
    let recorded = outcome.recorded.as_ref().expect("recorded");
    let script = script_of(&setup, recorded, first.invariant, "test".to_string());
    (script, first.invariant)
}

#[test]
fn every_found_seed_converts_to_a_script_that_breaks_the_same_invariant_first() {
    let mut failures = Vec::new();
    for path in found_files() {
        let (script, target) = converted(&path);
        match ddmin::replay(&script, "converted.toml", &BackendKind::Pure) {
            Ok(replay) => {
                let first = replay.violations.first().map(|v| v.id);
                if first != Some(target.id()) {
                    failures.push(format!(
                        "{}: the seeded run broke {target} first, its script ({} steps) {:?}",
                        path.display(),
                        script.steps.len(),
                        replay.violations.iter().map(|v| v.id).collect::<Vec<_>>()
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "slow: every committed finding shrunk (5,000 replays each at most); .ci/run runs it (--include-ignored)"]
fn the_shrunk_script_is_never_longer_breaks_the_same_invariant_and_replays_as_written() {
    let mut failures = Vec::new();
    for path in found_files() {
        let (script, target) = converted(&path);
        let shrunk = minimize(&script, &BackendKind::Pure, target, 5_000);
        let steps = shrunk.scenario.steps.len();
        if steps > script.steps.len() {
            failures.push(format!(
                "{}: {steps} > {}",
                path.display(),
                script.steps.len()
            ));
        }
        let replay =
            ddmin::replay(&shrunk.scenario, "shrunk.toml", &BackendKind::Pure).expect("valid");
        if !replay.violated(target) || !replay.matched {
            failures.push(format!(
                "{}: shrunk to {steps} steps, breaks {target}: {}, matched: {} {:?}",
                path.display(),
                replay.violated(target),
                replay.matched,
                replay.mismatches
            ));
        }
        eprintln!(
            "{}: {} → {steps} steps ({} runs)",
            path.file_name().unwrap().to_string_lossy(),
            script.steps.len(),
            shrunk.runs
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The saved renew-revives finding, written as a script, and the invariant it breaks.
fn renew_revives() -> (leasehold_sim::scenario::Scenario, Invariant) {
    let path = found_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("renew-revives"))
        .expect("the renew-revives finding");
    converted(&path)
}

#[test]
fn shrinking_is_deterministic() {
    let (script, target) = renew_revives();
    let once = to_toml(&minimize(&script, &BackendKind::Pure, target, 5_000).scenario);
    let again = to_toml(&minimize(&script, &BackendKind::Pure, target, 5_000).scenario);
    assert_eq!(once, again);
    assert!(once.contains("[[step]]"));
}

#[test]
fn the_committed_renew_revives_story_replays_and_reads_in_under_a_dozen_lines() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reports/renew-revives-story.toml");
    let text = std::fs::read_to_string(&path).expect("reports/renew-revives-story.toml");
    let scenario: leasehold_sim::scenario::Scenario = toml::from_str(&text).expect("a scenario");
    let replay =
        ddmin::replay(&scenario, "renew-revives-story.toml", &BackendKind::Pure).expect("valid");
    assert!(replay.matched, "{:?}", replay.mismatches);
    assert!(replay.violated(Invariant::I2));
    assert!(replay.timeline.len() < 12, "{:#?}", replay.timeline);
    let told = std::fs::read_to_string(path.with_extension("txt")).expect("its timeline");
    for line in &replay.timeline {
        assert!(
            told.contains(line.as_str()),
            "{line} not in the committed timeline"
        );
    }
}

/// A search stopped before it starts (or with no replay left in its budget) tries no
/// candidate: it returns the script it was given, still breaking the target, and says it
/// stopped.
#[test]
fn a_stopped_or_spent_search_tries_nothing_and_keeps_the_script() {
    let (script, target) = renew_revives();
    let raised = std::sync::atomic::AtomicBool::new(true);
    let stopped = ddmin::minimize_until(&script, &BackendKind::Pure, target, 5_000, &raised);
    assert!(stopped.stopped);
    assert_eq!(stopped.runs, 0);
    assert_eq!(stopped.scenario.steps.len(), script.steps.len());
    let spent = minimize(&script, &BackendKind::Pure, target, 0);
    assert!(!spent.stopped);
    assert_eq!(spent.runs, 0);
    assert_eq!(spent.scenario.steps.len(), script.steps.len());
    let replay =
        ddmin::replay(&stopped.scenario, "stopped.toml", &BackendKind::Pure).expect("valid");
    assert!(replay.violated(target));
}
