//! `matrix::report`: the verdict matrix written as report files, compared with a committed
//! report, with stand-in engines that exercise the matrix, not a protocol.

use leasehold_front::files;
use leasehold_front::matrix::report::{
    diff_summary, write_report, ReportFiles, VERDICTS_JSON, VERDICTS_MD,
};
use leasehold_front::matrix::{
    self, Cell, Depth, Engine, EngineResult, EngineRun, Evidence, MatrixConfig,
};
use leasehold_front::Error;
use leasehold_model::{Invariant, Variant};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A stand-in engine that finds exactly docs/variants.md's expected violations (and, for
/// `dlq-drop`, an extra one), with made-up but fixed evidence: it exercises the matrix, not
/// a protocol.
struct StandIn(Engine);

impl EngineRun for StandIn {
    fn engine(&self) -> Engine {
        self.0
    }

    fn run(&self, variant: Variant, _depth: Depth, out: &Path) -> Result<EngineResult, Error> {
        let mut cells = BTreeMap::new();
        for inv in Invariant::ALL {
            let breaks = variant.expected_violation() == Some(inv)
                || (variant == Variant::DlqDrop && inv == Invariant::I4);
            let cell = if self.0 == Engine::Check && inv == Invariant::I7 {
                Cell::NotChecked
            } else if breaks {
                let scenario = format!("scenarios/{variant}-{}-{}.toml", self.0, inv.id());
                files::write_atomic(&out.join(&scenario), b"name = \"x\"\n")?;
                Cell::Violated(match self.0 {
                    Engine::Check => Evidence::Check {
                        depth: 3,
                        scenario: Some(scenario),
                        replays: true,
                    },
                    Engine::Sim => Evidence::Sim {
                        seeds_to_first_failure: 2,
                        first_seed: 1,
                        median_seeds_to_failure: matrix::median_gap(0, &[1, 4, 5]),
                        failures_sampled: 3,
                        failures: 3,
                        seeds_run: 10,
                        scenario: Some(scenario),
                        replays: true,
                    },
                })
            } else {
                Cell::Holds
            };
            cells.insert(inv, cell);
        }
        Ok(EngineResult {
            command: format!("leasehold {} --variant {variant}", self.0),
            cells,
            seconds: 0.0,
            stats: serde_json::Value::Null,
        })
    }
}

fn stand_ins() -> Vec<Box<dyn EngineRun>> {
    vec![
        Box::new(StandIn(Engine::Check)),
        Box::new(StandIn(Engine::Sim)),
    ]
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "leasehold-report-test-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A report into `out` of the whole matrix, or of `config`; whether every cell was as
/// expected (and, with `check_diff`, the committed report up to date).
fn run_stand_in(out: &Path, command: &str, config: &MatrixConfig, check_diff: bool) -> bool {
    let files = ReportFiles {
        command: command.to_string(),
        out: out.to_path_buf(),
        check_diff,
    };
    write_report(&files, config, &stand_ins(), &|_, _, _| {})
        .expect("runs")
        .ok()
}

fn two_variants() -> MatrixConfig {
    matrix::config(Depth::Full).variants(&[Variant::Fenced, Variant::DlqDrop])
}

#[test]
fn every_expected_cell_is_ok_and_renders_the_evidence() {
    let dir = temp("ok");
    let config = matrix::config(Depth::Full);
    assert!(run_stand_in(&dir, "leasehold report", &config, false));
    let md = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
    assert!(md.contains("**Result: every cell as expected** (27 variants"));
    // docs/variants.md: four protocols hold, twenty-three variants each break one invariant
    // (redis-streams, pg-visibility, jetstream, rabbitmq-channel, and nineteen mutants: twelve,
    // then one per blind spot, then four each invisible to the default proof).
    assert!(md.contains(
        "**Headline**: 4 of 4 variants expected to hold hold in every cell the engines \
         evaluate; 23 of 23 expected violations are caught by both engines (check 23, sim \
         23); 0 unexpected cells."
    ));
    // The expected violation is bold and linked to its scenario; the extra one is informational.
    assert!(md.contains("**[violated (depth 3)](scenarios/dlq-drop-check-I3.toml)**"));
    assert!(md.contains("[also violated (depth 3)](scenarios/dlq-drop-check-I4.toml)"));
    // Failures at seeds 1, 4, 5 from 0: gaps 2, 3, 1 → median 2.
    assert!(md.contains("[violated (2 seeds, median 2)](scenarios/dlq-drop-sim-I3.toml)"));
    assert!(!md.contains("⚠ "), "no cell is marked");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(VERDICTS_JSON)).expect("json"))
            .expect("valid json");
    assert_eq!(json["result"], "as_expected");
    assert_eq!(
        json["variants"][0]["engines"]["check"]["cells"]["I7"]["cell"]["verdict"],
        "not_checked"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_expectation_is_not_ok_and_marks_the_cell() {
    let dir = temp("bad");
    let (variant, violated) = matrix::parse_expect("dlq-drop=I2").expect("an expectation");
    let config = matrix::config(Depth::Full)
        .variants(&[Variant::DlqDrop, Variant::Fenced])
        .expect(variant, violated);
    let command = "leasehold report --variants dlq-drop,fenced --expect dlq-drop=I2";
    assert!(!run_stand_in(&dir, command, &config, false));
    let md = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
    assert!(md.contains("* ⚠ unexpected: dlq-drop × I2 × check: holds, expected violated"));
    assert!(md.contains("* ⚠ unexpected: dlq-drop × I2 × sim: holds, expected violated"));
    assert!(md.contains(
        "**Headline**: 1 of 1 variants expected to hold hold in every cell the engines \
         evaluate; 0 of 1 expected violations are caught by both engines (check 0, sim 0); \
         2 unexpected cells."
    ));
    assert!(md.contains(&format!("Generated by `{command}`")));
    // fenced stays first: rows keep the canonical order.
    assert!(
        md.find("| `fenced` |").expect("fenced row") < md.find("| `dlq-drop` |").expect("dlq row")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_diff_passes_on_a_fresh_report_and_fails_on_an_edited_one() {
    let dir = temp("diff");
    let command = "leasehold report --variants fenced,dlq-drop";
    let config = two_variants();
    assert!(run_stand_in(&dir, command, &config, false));
    let before = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
    assert!(run_stand_in(&dir, command, &config, true));
    // A comparison writes nothing under the report's folder.
    assert_eq!(
        std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("still there"),
        before
    );
    std::fs::write(dir.join(VERDICTS_MD), before.replace("depth 3", "depth 4")).expect("edit");
    assert!(!run_stand_in(&dir, command, &config, true));
    std::fs::write(dir.join(VERDICTS_MD), &before).expect("restore");
    std::fs::write(dir.join("scenarios/dlq-drop-sim-I3.toml"), "edited").expect("edit");
    assert!(!run_stand_in(&dir, command, &config, true));
    // Evidence a run no longer produces is a difference, and a regeneration removes it
    // (files of variants not run, and other files, are left alone).
    let stale = dir.join("scenarios/dlq-drop-check-I6.toml");
    let other = dir.join("scenarios/stuck-lease-check-I6.toml");
    std::fs::write(&stale, "old").expect("write");
    std::fs::write(&other, "kept").expect("write");
    assert!(run_stand_in(&dir, command, &config, false));
    assert!(!stale.exists());
    assert!(other.exists());
    std::fs::write(&stale, "old").expect("write");
    assert!(!run_stand_in(&dir, command, &config, true));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn diff_summary_names_the_changed_lines() {
    let summary = diff_summary("a\nb\nc\n", "a\nB\nc\n", 5);
    assert_eq!(summary, "  - line 2: b\n  + line 2: B\n");
}
